//! Writing a thread's state outside a run, as LangGraph's `update_state` and
//! `bulk_update_state` do: each superstep of updates becomes one checkpoint, as if the
//! nodes named had run in one step. Two names are not nodes: `__input__` saves new
//! input (a checkpoint whose next task is `START`, as a run's first checkpoint), and
//! `__copy__` saves a copy of a checkpoint beside it (a fork to run again from).

use std::sync::Arc;

use super::codec::encode;
use super::engine::{meta, new_id, Graph, Task};
use super::error::GraphError;
use super::pending;
use super::reserved::Source;
use super::run::RunOptions;
use super::spec::{Goto, NodeOutput, END, START};
use super::value::Val;
use crate::checkpoint::{now_secs, CheckpointError, CheckpointRecord, Checkpointer, Put, Write};

/// `as_node` of an update that is new input rather than a node's output.
pub const INPUT: &str = "__input__";
/// `as_node` of an update that copies the checkpoint (LangGraph's fork).
pub const COPY: &str = "__copy__";

/// One update of a superstep: `writes` (and `goto`, a `Command`'s routing) as if
/// `as_node` had made them (`None`: the node that wrote last, as LangGraph picks it).
#[derive(Debug, Clone, Default)]
pub struct StateUpdate {
    pub writes: Vec<(String, Val)>,
    pub goto: Vec<Goto>,
    pub as_node: Option<String>,
}

/// Where a superstep is saved: after which checkpoint, and whether that one must still
/// be the thread's latest (an update of the latest state, not a branch of history).
struct Base {
    record: Option<CheckpointRecord>,
    latest: bool,
}

impl Graph {
    /// `update_state`: one superstep of one update; returns the new checkpoint's id.
    pub async fn update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        writes: Vec<(String, Val)>,
        as_node: Option<String>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        let update = StateUpdate {
            writes,
            goto: Vec::new(),
            as_node,
        };
        self.bulk_update_state(thread_id, checkpoint_id, vec![vec![update]], host)
            .await
    }

    /// `bulk_update_state`: each superstep saved as one checkpoint after the one
    /// before; returns the last one's id. A superstep with several updates applies
    /// them together, through the reducers, as the writes of one step.
    pub async fn bulk_update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        supersteps: Vec<Vec<StateUpdate>>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        let cp = self.checkpointer.clone().ok_or_else(|| {
            GraphError::Config(
                "update_state needs a checkpointer: compile the graph with \
                 checkpointer=MemorySaver() (or SqliteSaver)"
                    .into(),
            )
        })?;
        self.bulk_update_state_in(cp, thread_id, checkpoint_id, supersteps, host)
            .await
    }

    /// [`Graph::bulk_update_state`] in `cp` (a subgraph's state, kept in its parent's
    /// saver under storage key `thread_id`, see [`crate::checkpoint::thread_key`]).
    pub async fn bulk_update_state_in(
        &self,
        cp: Arc<dyn Checkpointer>,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        supersteps: Vec<Vec<StateUpdate>>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        if supersteps.is_empty() {
            return Err(GraphError::Config("No supersteps provided".into()));
        }
        if supersteps.iter().any(Vec::is_empty) {
            return Err(GraphError::Config("No updates provided".into()));
        }
        let mut at = checkpoint_id.map(str::to_owned);
        let latest = checkpoint_id.is_none();
        for updates in supersteps {
            let record = cp
                .get(thread_id, at.as_deref())
                .await
                .map_err(Graph::cp_err)?;
            if record.is_none() {
                if let Some(id) = &at {
                    return Err(GraphError::Checkpoint(CheckpointError::not_found(
                        thread_id, id,
                    )));
                }
            }
            let base = Base { record, latest };
            let id = self
                .superstep(cp.as_ref(), thread_id, base, updates, host.clone())
                .await?;
            at = Some(id);
        }
        Ok(at.unwrap_or_default())
    }

    /// Saves one superstep of `updates` after `base`.
    async fn superstep(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        base: Base,
        updates: Vec<StateUpdate>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        let last_writer = base
            .record
            .as_ref()
            .and_then(|p| p.writes.last().map(|w| w.node.clone()))
            .filter(|n| self.node_index.contains_key(n))
            .unwrap_or_else(|| START.to_owned());
        if updates.len() > 1 && updates.iter().any(|u| u.as_node.is_none()) {
            return Err(GraphError::InvalidUpdate(
                "update_state: a superstep of several updates needs as_node on each of \
                 them (which node made it)"
                    .into(),
            ));
        }
        let updates: Vec<(String, StateUpdate)> = updates
            .into_iter()
            .map(|u| (u.as_node.clone().unwrap_or_else(|| last_writer.clone()), u))
            .collect();
        for special in [INPUT, COPY] {
            if updates.len() > 1 && updates.iter().any(|(n, _)| n == special) {
                return Err(GraphError::InvalidUpdate(format!(
                    "update_state: {special:?} must be the only update of its superstep; \
                     put the other updates in supersteps of their own"
                )));
            }
        }
        match updates[0].0.as_str() {
            INPUT => {
                let (_, update) = updates.into_iter().next().unwrap_or_default();
                self.save_input(cp, thread_id, base, update.writes).await
            }
            COPY => self.save_copy(cp, thread_id, base).await,
            _ => self.save_update(cp, thread_id, base, updates, host).await,
        }
    }

    /// Writes as the nodes named would have made them; the next tasks are what
    /// follows those nodes.
    async fn save_update(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        base: Base,
        updates: Vec<(String, StateUpdate)>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        let (mut chans, since) = match &base.record {
            Some(p) => {
                let loaded = self.state_at(cp, thread_id, p, false).await?;
                (loaded.chans, loaded.since_snapshot)
            }
            None => (self.fresh_channels(), 0),
        };
        let mut encoded = Vec::new();
        let mut all = Vec::new();
        for (as_node, StateUpdate { writes, .. }) in &updates {
            if as_node != START && as_node != END && !self.node_index.contains_key(as_node) {
                return Err(GraphError::InvalidUpdate(format!(
                    "update_state: as_node {as_node:?} is not a node of this graph"
                )));
            }
            // Each update stands for a task of its node (see `pending::step_results`).
            let mut new_task = encoded.last().is_some_and(|w: &Write| &w.node == as_node);
            for (c, v) in writes {
                encoded.push(Write {
                    node: as_node.clone(),
                    channel: c.clone(),
                    value: encode(c, v)?,
                    new_task,
                });
                new_task = false;
                all.push((c.clone(), v.clone()));
            }
        }
        self.apply(&mut chans, all)?;
        let view = self.view(&chans);
        let id = new_id();
        let mut triggers = Vec::new();
        let opts = RunOptions {
            host,
            ..Default::default()
        };
        for (as_node, update) in updates.iter().filter(|(n, _)| n != END) {
            let t = Task {
                id: id.clone(),
                node: as_node.clone(),
                arg: None,
                timeout: None,
            };
            let ctx = || self.ctx_for(&t, 0, &opts, Vec::new());
            self.successors(as_node, &update.goto, &view, ctx, &mut triggers)
                .await?;
        }
        let next = self.make_tasks(&id, triggers);
        let (snapshot, _) = self.snapshot_for_next(since, &chans)?;
        // On a thread without a checkpoint, the update is step 0 (LangGraph's: its
        // "step before" is the input's -1), not an input.
        let step = base.record.as_ref().map(|p| p.step + 1).unwrap_or(0);
        let record = self.record(&base, id, step, Source::Update, encoded, &next);
        let record = CheckpointRecord {
            snapshot,
            ..record?
        };
        self.save(cp, thread_id, &base, record, Vec::new()).await
    }

    /// New input, saved as a run saves its own: the state before it, and one next
    /// task, `START`, whose pending writes are the input (the next run goes on from
    /// there, as LangGraph's `update_state(..., as_node="__input__")`).
    async fn save_input(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        base: Base,
        writes: Vec<(String, Val)>,
    ) -> Result<String, GraphError> {
        // No writes is an input too (`{}`, as LangGraph takes it): `START` then runs
        // on the state as it is.
        let writes = self.input_writes(writes);
        let id = new_id();
        let next = self.make_tasks(&id, vec![(START.to_owned(), None, None)]);
        let out = NodeOutput {
            writes,
            ..Default::default()
        };
        let input = pending::finished_writes(&next[0], &out)?;
        let step = base.record.as_ref().map(|p| p.step + 1).unwrap_or(-1);
        let mut record = self.record(&base, id, step, Source::Input, Vec::new(), &next)?;
        // The state does not change: the record carries its parent's snapshot state.
        record.snapshot = None;
        self.save(cp, thread_id, &base, record, input).await
    }

    /// A copy of the base checkpoint saved beside it (same parent, same state, its
    /// next tasks anew): running from it runs those tasks again, `interrupt()`s
    /// included, as LangGraph's `__copy__`.
    async fn save_copy(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        base: Base,
    ) -> Result<String, GraphError> {
        let Some(original) = &base.record else {
            return Err(GraphError::InvalidUpdate(
                "update_state as \"__copy__\" needs a checkpoint to copy: this thread has \
                 none yet"
                    .into(),
            ));
        };
        let id = new_id();
        let next = self.renumbered(&id, &original.next)?;
        let step = original.step + 1;
        let record = CheckpointRecord {
            snapshot: original.snapshot.clone(),
            id: id.clone(),
            parent_id: original.parent_id.clone(),
            step,
            source: Source::Fork.as_str().into(),
            writes: original.writes.clone(),
            next: Graph::records(&next)?,
            created_at: now_secs(),
            metadata: meta(&serde_json::Value::Null, Source::Fork, step),
        };
        cp.put(thread_id, record).await.map_err(Graph::cp_err)?;
        Ok(id)
    }

    /// A checkpoint record after `base` (without a snapshot).
    fn record(
        &self,
        base: &Base,
        id: String,
        step: i64,
        source: Source,
        writes: Vec<Write>,
        next: &[Task],
    ) -> Result<CheckpointRecord, GraphError> {
        Ok(CheckpointRecord {
            snapshot: None,
            id,
            parent_id: base.record.as_ref().map(|p| p.id.clone()),
            step,
            source: source.as_str().into(),
            writes,
            next: Graph::records(next)?,
            created_at: now_secs(),
            // As a step's checkpoint: `source`, `step` and `parents` (LangGraph's).
            metadata: meta(&serde_json::Value::Null, source, step),
        })
    }

    /// Saves `record` (and pending writes under it) after `base`: at the latest, as
    /// the thread's next; at an older checkpoint, as a branch of its history.
    async fn save(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        base: &Base,
        record: CheckpointRecord,
        writes: Vec<crate::checkpoint::PendingWrite>,
    ) -> Result<String, GraphError> {
        let id = record.id.clone();
        let mut puts = vec![Put::Record {
            record: Box::new(record),
            next: base.latest,
        }];
        if !writes.is_empty() {
            puts.push(Put::Writes {
                checkpoint_id: id.clone(),
                writes,
            });
        }
        cp.put_many(thread_id, puts).await.map_err(Graph::cp_err)?;
        Ok(id)
    }
}
