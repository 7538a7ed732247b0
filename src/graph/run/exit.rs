//! `durability="exit"`: a run saves one checkpoint, when it ends, as LangGraph does.
//!
//! While the run goes, its steps are checkpoints in memory only: ids, step numbers and
//! next tasks (task ids start with their checkpoint's id), nothing encoded. When it
//! ends — finished, paused, or failed — the last of them is saved as one record: its
//! parent is the checkpoint the run started from, its snapshot the state there (all
//! channels but the messages channels), its writes the run's writes to the messages
//! channels (which snapshots never copy, see `graph::snapshot`), in the order they
//! were applied. The writes of the tasks of a step that did not complete (a finished
//! sibling of a failure, an `interrupt()`) are saved with it as its pending writes,
//! so resuming a paused run works as under the other durabilities. A record holding
//! a snapshot is read through its snapshot (`Graph::apply_record`), so it is the
//! right state however it is reached.
//!
//! So a run of many steps costs one encoding of its final state and one write, and
//! holds nothing per step but the messages it wrote (shared, not copied). A crash
//! loses the whole run, as in LangGraph; `get_state_history` shows one checkpoint per
//! run.

use super::super::engine::{meta, Graph};
use super::super::error::GraphError;
use super::super::pending;
use super::super::reserved::Source;
use super::super::spec::NodeOutput;
use super::super::value::Val;
use super::Run;
use crate::checkpoint::{now_secs, CheckpointRecord, PendingWrite, Write};

/// What the one save of an `"exit"` run needs, gathered as it goes.
pub(super) struct AtExit {
    /// The checkpoint the run started from: the saved record's parent.
    start: Option<String>,
    /// The source of the latest in-memory checkpoint.
    source: Source,
    /// The run's writes to messages channels, as applied: `(node, channel, value)`.
    messages: Vec<(String, String, Val)>,
    /// The writes of the tasks that had finished in the step the run continues,
    /// saved again with its one record: saving a checkpoint drops its parent's
    /// pending writes, which the record's own writes (the run's, not the step's)
    /// cannot stand for, so `get_state_history` shows that step's results as
    /// LangGraph's does (see `pending::step_results`).
    continued: Vec<PendingWrite>,
}

impl AtExit {
    pub fn new(start: Option<String>) -> AtExit {
        AtExit {
            start,
            source: Source::Loop,
            messages: Vec::new(),
            continued: Vec::new(),
        }
    }

    /// Notes `writes`, those of the finished tasks of the step the run continues.
    pub fn continues(&mut self, writes: Vec<PendingWrite>) {
        self.continued = writes;
    }

    /// Keeps `v`, written by `node` to `channel`, if `channel` is a messages channel.
    pub fn wrote(&mut self, graph: &Graph, node: &str, channel: &str, v: &Val) {
        if matches!(
            graph.channel_kind(channel),
            Some(super::super::channel::ChannelKind::Messages)
        ) {
            self.messages
                .push((node.to_owned(), channel.to_owned(), v.clone()));
        }
    }
}

impl Run<'_> {
    /// `Run::checkpoint` of an `"exit"` run: the step's checkpoint becomes the run's
    /// latest, in memory; `pending` (a run's input) is kept for the end.
    pub(super) async fn checkpoint_at_exit(
        &mut self,
        id: String,
        source: Source,
        pending: Vec<PendingWrite>,
    ) -> Result<(), GraphError> {
        let next = Graph::records(&self.next)?;
        if let (Some(saves), false) = (&self.saves, pending.is_empty()) {
            saves.writes(&id, pending, true).await?;
        }
        if let Some(x) = &mut self.exit {
            x.source = source;
        }
        self.parent = Some(CheckpointRecord {
            snapshot: None,
            id,
            parent_id: self.parent.as_ref().map(|p| p.id.clone()),
            step: self.step,
            source: source.as_str().into(),
            writes: Vec::new(),
            next,
            created_at: now_secs(),
            metadata: serde_json::Value::Null,
        });
        Ok(())
    }

    /// The writes of the tasks that finished in a step that does not complete
    /// (`outputs`, by task), kept for the end: the step runs again from its checkpoint
    /// on resume, and those tasks need not.
    pub(super) async fn keep_finished_at_exit(
        &self,
        outputs: &[Option<NodeOutput>],
    ) -> Result<(), GraphError> {
        let (Some(saves), Some(p)) = (&self.saves, &self.parent) else {
            return Ok(());
        };
        for (t, out) in self.next.iter().zip(outputs) {
            if let Some(out) = out {
                saves
                    .writes(&p.id, pending::finished_writes(t, out)?, true)
                    .await?;
            }
        }
        Ok(())
    }

    /// Hands the run's one record to its saves (which write it, with the pending
    /// writes kept for it, in `Saves::finish`); nothing when the run made no
    /// checkpoint. A subgraph's run saves only when there is something to resume: it
    /// paused or `failed`, or it is stateful (LangGraph's `checkpointer=True`, no task
    /// id in its namespace), whose history is its state. One that finished is in its
    /// parent's checkpoint, as in LangGraph.
    pub(super) fn save_at_exit(&mut self, failed: bool) -> Result<(), GraphError> {
        let (Some(x), Some(saves), Some(head)) = (&mut self.exit, &self.saves, &self.parent) else {
            return Ok(());
        };
        if x.start.as_deref() == Some(head.id.as_str()) {
            return Ok(());
        }
        let ns = &self.opts.checkpoint_ns;
        let per_task = ns.split('|').any(|part| part.contains(':'));
        if per_task && !failed && self.interrupts.is_empty() {
            saves.discard_at_exit();
            return Ok(());
        }
        let writes = std::mem::take(&mut x.messages)
            .into_iter()
            .map(|(node, channel, v)| {
                let value = super::super::codec::encode(&channel, &v)?;
                Ok(Write {
                    node,
                    channel,
                    value,
                    new_task: false,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        let record = CheckpointRecord {
            snapshot: Some(self.graph.snapshot_of(&self.chans)?),
            id: head.id.clone(),
            parent_id: x.start.clone(),
            step: head.step,
            source: head.source.clone(),
            writes,
            next: head.next.clone(),
            created_at: head.created_at,
            metadata: meta(&self.opts.metadata, x.source, head.step),
        };
        let continued = std::mem::take(&mut x.continued);
        saves.keep_at_exit(record, std::mem::take(&mut self.fork), continued);
        self.since_snapshot = 0;
        Ok(())
    }
}
