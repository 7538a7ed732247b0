//! Reading and writing a thread's saved state outside a run: `get_state`,
//! `get_state_history`, `update_state`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::channel::Channel;
use super::codec::encode;
use super::engine::{meta, new_id, Graph, Task};
use super::error::GraphError;
use super::pending;
use super::reserved::Source;
use super::run::RunOptions;
use super::snapshot::Loaded;
use super::spec::{END, START};
use super::state::StateView;
use super::value::Val;
use crate::checkpoint::{
    now_secs, CheckpointError, CheckpointRecord, Checkpointer, PendingWrite, Write,
};

/// A saved state, as `get_state` shows it.
pub struct Snapshot {
    pub state: StateView,
    pub record: CheckpointRecord,
    pub parent: Option<CheckpointRecord>,
    pub pending: Vec<PendingWrite>,
    /// The thread's current status rather than the record of a step (as LangGraph's
    /// `get_state` without a `checkpoint_id`): `state` includes the output of the
    /// step's tasks that finished, which are no longer next, and only the questions
    /// still unanswered are pending.
    pub live: bool,
}

impl Graph {
    /// Loads a thread's state at `checkpoint_id` (or its latest).
    pub async fn load(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<Snapshot>, GraphError> {
        let Some(cp) = &self.checkpointer else {
            return Err(GraphError::Config(
                "this graph has no checkpointer: compile it with checkpointer=MemorySaver() \
                 (or SqliteSaver) to keep and read state"
                    .into(),
            ));
        };
        self.load_from(cp.as_ref(), thread_id, checkpoint_id).await
    }

    /// [`Graph::load`] from `cp` (a subgraph's state, kept in its parent's saver) at
    /// storage key `thread_id` (see [`crate::checkpoint::thread_key`]).
    pub async fn load_from(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<Snapshot>, GraphError> {
        let Some((record, pending)) = cp
            .get_with_writes(thread_id, checkpoint_id)
            .await
            .map_err(Graph::cp_err)?
        else {
            return match checkpoint_id {
                Some(id) => Err(GraphError::Checkpoint(CheckpointError::not_found(
                    thread_id, id,
                ))),
                None => Ok(None),
            };
        };
        let live = checkpoint_id.is_none();
        let mut loaded = self.state_at(cp, thread_id, &record, live).await?;
        if live && !pending.is_empty() {
            let done = pending::finished_so_far(self, &record.next, &pending)?;
            self.apply(&mut loaded.chans, done)?;
        }
        Ok(Some(Snapshot {
            state: self.view(&loaded.chans),
            record,
            parent: loaded.parent,
            pending,
            live,
        }))
    }

    /// The channels at `record`: from the state cache when it holds exactly that
    /// checkpoint, else loaded from the nearest snapshot (and cached when `keep`:
    /// `record` is the thread's latest).
    pub(super) async fn state_at(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        record: &CheckpointRecord,
        keep: bool,
    ) -> Result<Loaded, GraphError> {
        if let Some((chans, since_snapshot)) = self.cached_state(thread_id, &record.id)? {
            return Ok(Loaded {
                chans,
                since_snapshot,
                parent: None,
            });
        }
        let loaded = self.materialise(cp, thread_id, record).await?;
        if keep {
            self.cache_state(thread_id, &record.id, &loaded.chans, loaded.since_snapshot);
        }
        Ok(loaded)
    }

    /// Every checkpoint of a thread with its state, newest first.
    pub async fn history(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<Snapshot>, GraphError> {
        let Some(cp) = &self.checkpointer else {
            return Err(GraphError::Config("this graph has no checkpointer".into()));
        };
        self.history_from(cp.as_ref(), thread_id, limit, before)
            .await
    }

    /// [`Graph::history`] from `cp` at storage key `thread_id` (as [`Graph::load_from`]).
    pub async fn history_from(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<Snapshot>, GraphError> {
        let records = cp
            .list(thread_id, limit, before)
            .await
            .map_err(Graph::cp_err)?;
        let mut memo: HashMap<String, (Vec<Channel>, CheckpointRecord)> = HashMap::new();
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            // Replayed already as an ancestor of a newer one (the common case: newest
            // first along one chain), else replayed from the newest ancestor that was.
            let chans = match memo.get(&r.id) {
                Some((chans, _)) => chans.clone(),
                None => {
                    let chain = cp.chain(thread_id, &r.id).await.map_err(Graph::cp_err)?;
                    let start = chain.iter().rposition(|c| memo.contains_key(&c.id));
                    let mut chans = match start {
                        Some(i) => memo[&chain[i].id].0.clone(),
                        None => self.fresh_channels(),
                    };
                    for c in &chain[start.map(|i| i + 1).unwrap_or(0)..] {
                        self.apply_stored(thread_id, &mut chans, c)?;
                        memo.insert(c.id.clone(), (chans.clone(), c.clone()));
                    }
                    chans
                }
            };
            let pending = cp
                .pending_writes(thread_id, &r.id)
                .await
                .map_err(Graph::cp_err)?;
            let parent = r
                .parent_id
                .as_ref()
                .and_then(|p| memo.get(p).map(|m| m.1.clone()));
            out.push(Snapshot {
                state: self.view(&chans),
                record: r,
                parent,
                pending,
                live: false,
            });
        }
        Ok(out)
    }

    /// `update_state`: applies `writes` as if node `as_node` had made them, and saves a
    /// new checkpoint whose next tasks are what follows that node.
    pub async fn update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        writes: Vec<(String, Val)>,
        as_node: Option<String>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        let cp = self
            .checkpointer
            .clone()
            .ok_or_else(|| GraphError::Config("update_state needs a checkpointer".into()))?;
        let parent = cp
            .get(thread_id, checkpoint_id)
            .await
            .map_err(Graph::cp_err)?;
        let (mut chans, since) = match &parent {
            Some(p) => {
                let loaded = self.state_at(cp.as_ref(), thread_id, p, false).await?;
                (loaded.chans, loaded.since_snapshot)
            }
            None => match checkpoint_id {
                Some(id) => {
                    return Err(GraphError::Checkpoint(CheckpointError::not_found(
                        thread_id, id,
                    )))
                }
                None => (self.fresh_channels(), 0),
            },
        };
        let as_node = match as_node {
            Some(n) => n,
            None => parent
                .as_ref()
                .and_then(|p| p.writes.last().map(|w| w.node.clone()))
                .filter(|n| self.node_index.contains_key(n))
                .unwrap_or_else(|| START.to_owned()),
        };
        if as_node != START && as_node != END && !self.node_index.contains_key(&as_node) {
            return Err(GraphError::InvalidUpdate(format!(
                "update_state: as_node {as_node:?} is not a node of this graph"
            )));
        }
        let encoded = writes
            .iter()
            .map(|(c, v)| {
                Ok(Write {
                    node: as_node.clone(),
                    channel: c.clone(),
                    value: encode(c, v)?,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.apply(&mut chans, writes)?;
        let view = self.view(&chans);
        let id = new_id();
        let mut triggers = Vec::new();
        if as_node != END {
            let opts = RunOptions {
                host,
                ..Default::default()
            };
            let t = Task {
                id: id.clone(),
                node: as_node.clone(),
                arg: None,
            };
            let ctx = self.ctx_for(&t, 0, &opts, Vec::new());
            self.successors(&as_node, &[], &view, &ctx, &mut triggers)
                .await?;
        }
        let next = Graph::make_tasks(&id, triggers);
        let step = parent.as_ref().map(|p| p.step + 1).unwrap_or(-1);
        let (snapshot, _) = self.snapshot_for_next(since, &chans)?;
        let record = CheckpointRecord {
            snapshot,
            id: id.clone(),
            parent_id: parent.as_ref().map(|p| p.id.clone()),
            step,
            source: Source::Update.as_str().into(),
            writes: encoded,
            next: Graph::records(&next)?,
            created_at: now_secs(),
            // As a step's checkpoint: `source`, `step` and `parents` (LangGraph's).
            metadata: meta(&Value::Null, Source::Update, step),
        };
        // At a given checkpoint it branches off; at the latest it is the thread's next.
        if checkpoint_id.is_some() {
            cp.put(thread_id, record).await
        } else {
            cp.put_next(thread_id, record).await
        }
        .map_err(Graph::cp_err)?;
        Ok(id)
    }
}
