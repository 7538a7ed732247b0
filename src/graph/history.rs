//! Reading a thread's saved state outside a run: `get_state`, `get_state_history`
//! (writing it, `update_state`, is in `update.rs`).

use std::collections::HashMap;

use super::channel::Channel;
use super::engine::Graph;
use super::error::GraphError;
use super::pending;
use super::snapshot::Loaded;
use super::state::StateView;
use crate::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, PendingWrite};

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
        // Each checkpoint's oldest child (the list is newest first): saving it dropped
        // the checkpoint's pending writes, and its writes are what the step's tasks
        // wrote, which the step's record shows as their results.
        let mut records_by_parent: HashMap<String, CheckpointRecord> = HashMap::new();
        for r in &records {
            if let Some(p) = &r.parent_id {
                records_by_parent.insert(p.clone(), r.clone());
            }
        }
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
            let mut pending = cp
                .pending_writes(thread_id, &r.id)
                .await
                .map_err(Graph::cp_err)?;
            // The oldest child: the step that followed (a fork comes later).
            if let Some(child) = records_by_parent.get(r.id.as_str()) {
                let results = pending::step_results(&r, child, &pending);
                pending.extend(results);
            }
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
}
