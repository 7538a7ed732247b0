//! A run that travels back in time starts a branch of the thread's history at once.

use super::{Run, RunInput};
use crate::checkpoint::{now_secs, CheckpointRecord};
use crate::graph::engine::{meta, new_id, Graph};
use crate::graph::error::GraphError;
use crate::graph::replay;
use crate::graph::reserved::Source;
use crate::graph::spec::START;

impl Run<'_> {
    /// Whether the run travels back in time (see `replay`): a root run addressed at a
    /// checkpoint that answers no interrupt, or a subgraph's run that the replay's
    /// `checkpoint_map` sent to a checkpoint of its own.
    pub(super) fn travels(&mut self, input: &RunInput) -> bool {
        match self.opts.lent {
            None => {
                let resuming = matches!(input, RunInput::Resume(..));
                replay::note_replay(&mut self.opts, resuming, self.parent.as_ref())
            }
            Some(_) => self.opts.checkpoint_id.is_some() && self.opts.start_before.is_none(),
        }
    }

    /// Before it runs the tasks of the old checkpoint it continues, a replay (a run
    /// from an older `checkpoint_id` than its thread's latest, or a subgraph's run
    /// sent back to one) saves a copy of it as the thread's newest checkpoint
    /// (source `fork`, one step on, its tasks anew), as LangGraph does: a pause in
    /// those tasks then leaves the branch, not the old latest, as the thread's state,
    /// so a `Command(resume=...)` without a `checkpoint_id` answers the question the
    /// replay asked again. The copy's new id gives its tasks new ids, so the answers,
    /// interrupts and finished tasks' outputs saved on the old checkpoint stay behind
    /// with it (its tasks all run again, as LangGraph's replay reruns them).
    pub(super) async fn start_branch(&mut self) -> Result<(), GraphError> {
        self.replaying = true;
        let (Some(cp), Some(old)) = (&self.cp, &self.parent) else {
            return Ok(());
        };
        // An input checkpoint (its task is `START`) replays in place, as before: the
        // input it runs is not among the pending writes a copy could take along.
        if !self.fork || old.next.iter().any(|t| t.node == START) {
            return Ok(());
        }
        let id = new_id();
        let tasks = self.graph.decode_tasks(&old.next)?;
        let next = self
            .graph
            .make_tasks(&id, tasks.into_iter().map(|t| (t.node, t.arg)).collect());
        let step = old.step + 1;
        let record = CheckpointRecord {
            snapshot: None,
            id,
            parent_id: Some(old.id.clone()),
            step,
            source: Source::Fork.as_str().into(),
            writes: Vec::new(),
            next: Graph::records(&next)?,
            created_at: now_secs(),
            metadata: meta(&self.opts.metadata, Source::Fork, step),
        };
        cp.put(&self.thread, record.clone())
            .await
            .map_err(Graph::cp_err)?;
        self.parent = Some(record);
        self.step = step;
        self.since_snapshot += 1;
        self.fork = false;
        Ok(())
    }
}
