//! Running a step's tasks: concurrently, on the state as the step starts, reusing
//! what tasks finished before a crash, pausing on interrupts, failing on the first
//! error (part of [`super::Run`], moved out of `run.rs` as it was).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::super::engine::Graph;
use super::super::error::GraphError;
use super::super::interrupt::InterruptInfo;
use super::super::nested;
use super::super::pending::{self, Saved};
use super::super::reserved::{is_hidden, join_channel};
use super::super::spec::{NodeFailure, NodeOutput, START};
use super::super::value::Val;
use super::{guarded, Run};

/// Run tasks: the step's tasks, concurrently.
impl Run<'_> {
    /// Runs the step's tasks on the state as the step starts, reusing the output of
    /// tasks that finished before a crash. Returns their outputs in task order, or
    /// `None` when the step paused on interrupts (in `self.interrupts`). The first
    /// task to fail (in completion order) fails the run at once; the others are
    /// cancelled, and those that finished before it are saved (pending writes).
    pub(super) async fn run_tasks(&mut self) -> Result<Option<Vec<NodeOutput>>, GraphError> {
        let view = self.graph.view(&self.chans);
        let mut outputs: Vec<Option<NodeOutput>> = vec![None; self.next.len()];
        self.start_output(&mut outputs).await?;
        let to_run = self.restore_saved(&mut outputs)?;
        // Interrupts still unanswered are streamed after the step's tasks, as LangGraph.
        let still_paused = self.interrupts.len();
        let handed = self.handed_over(&to_run);
        self.emit_task_starts(&to_run);
        // A sync caller's thread runs a step's only task itself: no hand-over to the
        // pool and back. Never one task of several: while a task runs on this thread
        // nothing polls its siblings, so the writes of one that finishes would wait
        // for it to be saved (a crash meanwhile runs the finished task again), and a
        // sibling's failure could not cancel it.
        // Nor a task under a `step_timeout`, which could not be timed there.
        let inline = self.opts.inline && to_run.len() == 1 && self.opts.step_timeout.is_none();
        // Cancelled when a task fails: its siblings stop where they can (a step of one
        // task has none, and keeps the run's token).
        let shared = guarded::StepShared {
            view,
            returns: self.pending.returns(),
            cancel: (to_run.len() > 1).then(|| self.opts.cancel.child_token()),
            inline,
            // `max_concurrency`: a task starts once it holds a permit.
            permits: self
                .opts
                .max_concurrency
                .filter(|&n| n < to_run.len())
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n))),
        };
        let mut running: guarded::Running<'_> = to_run
            .iter()
            .zip(handed)
            .map(|(&i, failed)| self.start_task(i, &shared, failed))
            .collect();
        let mut failure = None;
        let deadline = self
            .opts
            .step_timeout
            .map(|d| (tokio::time::Instant::now() + d, d));
        // Past the step's deadline the tasks still running are dropped (stopped where
        // they can stop, as a node timeout stops its task); the finished ones' writes
        // were saved as they finished.
        let mut timed_out = None;
        loop {
            let (i, r) = match guarded::next_within(&mut running, deadline).await {
                Ok(Some(next)) => next,
                Ok(None) => break,
                Err(e) => {
                    timed_out = Some(e);
                    break;
                }
            };
            // The last task to finish in a step that completes: the step's checkpoint,
            // saved next, holds its writes, so they are not saved on their own.
            let completes = running.is_empty() && failure.is_none() && self.interrupts.is_empty();
            match r {
                Ok(out) => outputs[i] = Some(self.task_finished(i, out, !completes).await?),
                Err(NodeFailure::Interrupt(value)) => self.task_interrupted(i, value).await?,
                Err(NodeFailure::Nested(qs)) => self.task_interrupted_nested(i, qs).await?,
                Err(NodeFailure::Paused) => self.task_paused(i),
                // A sibling cancelled after the failure: the failure is what counts.
                Err(NodeFailure::Error(GraphError::Cancelled)) if failure.is_some() => {}
                Err(NodeFailure::Error(e)) => {
                    let t = &self.next[i];
                    self.emit_task_result(t, Vec::new, Some(e.clone()), Vec::new());
                    // As LangGraph, the others are cancelled; those that cannot stop
                    // (sync Python nodes) finish, and their output is saved. Not for a
                    // resume value an `interrupt()` refused: they finish first.
                    let cancel = || {
                        if let (Some(c), false) = (&shared.cancel, e.is_refused_resume()) {
                            c.cancel();
                        }
                    };
                    if failure.is_some() {
                        cancel();
                        continue;
                    }
                    // The node's error handler runs in its place, in this step.
                    if let Some(failed) = self.hand_over(i, &e).await? {
                        self.emit_task_starts(&[i]);
                        running.push(self.start_task(i, &shared, Some(failed)));
                        continue;
                    }
                    cancel();
                    failure = Some((i, e));
                }
            }
        }
        drop(running);
        let stopped = failure.is_some() || timed_out.is_some();
        if self.exit.is_some() && (stopped || !self.interrupts.is_empty()) {
            self.keep_finished_at_exit(&outputs).await?;
        }
        if let Some((i, e)) = failure {
            self.task_failed(i, &e).await?;
            return Err(e);
        }
        if let Some(e) = timed_out {
            return Err(e);
        }
        for i in &self.interrupts[..still_paused] {
            self.emit_interrupt(i);
        }
        if !self.interrupts.is_empty() {
            self.sort_interrupts();
            self.emit_paused_values();
            self.show_finished_at_pause(&outputs);
            return Ok(None);
        }
        Ok(Some(
            outputs
                .into_iter()
                .map(|o| o.expect("every task has output here"))
                .collect(),
        ))
    }

    /// The output of a `START` task: the run's input; continuing from an input
    /// checkpoint, its pending writes, or (once a later step dropped those) the writes
    /// `START` made in the checkpoint that followed it.
    async fn start_output(&mut self, outputs: &mut [Option<NodeOutput>]) -> Result<(), GraphError> {
        let Some(i) = self.next.iter().position(|t| t.node == START) else {
            return Ok(());
        };
        if let Some(out) = self.input.take() {
            outputs[i] = Some(out);
            return Ok(());
        }
        if let Saved::Finished(ws) = self.pending.saved(&self.next[i].id) {
            outputs[i] = Some(pending::restore_output(self.graph, ws)?);
            return Ok(());
        }
        let mut out = NodeOutput::default();
        if let (Some(cp), Some(p)) = (&self.cp, &self.parent) {
            let child = cp
                .list(&self.thread, None, None)
                .await
                .map_err(Graph::cp_err)?
                .into_iter()
                .find(|r| r.parent_id.as_deref() == Some(p.id.as_str()));
            for w in child.into_iter().flat_map(|r| r.writes) {
                if w.node == START {
                    let v = self
                        .graph
                        .decode(&w.channel, Arc::unwrap_or_clone(w.value))?;
                    out.writes.push((w.channel, v));
                }
            }
        }
        outputs[i] = Some(out);
        Ok(())
    }

    /// Takes the output of each task the pending writes show finished. Returns the
    /// tasks left to run: the others, paused ones included (see [`Saved::Nothing`]).
    fn restore_saved(
        &mut self,
        outputs: &mut [Option<NodeOutput>],
    ) -> Result<Vec<usize>, GraphError> {
        let mut to_run = Vec::new();
        for (i, t) in self.next.iter().enumerate() {
            if t.node == START {
                continue;
            }
            match self.pending.saved(&t.id) {
                Saved::Finished(ws) => {
                    let out = pending::restore_output(self.graph, ws)?;
                    self.emit_update(t, &out, true);
                    outputs[i] = Some(out);
                }
                Saved::Nothing => to_run.push(i),
            }
        }
        Ok(to_run)
    }

    /// A task finished: its join markers join its writes, and in a step of several
    /// tasks its output is saved at once (when `save`: the step may not complete
    /// without it), so that it need not run again if the step does not complete.
    async fn task_finished(
        &self,
        i: usize,
        mut out: NodeOutput,
        save: bool,
    ) -> Result<NodeOutput, GraphError> {
        let t = &self.next[i];
        for &j in self.graph.joins_from.get(&t.node).into_iter().flatten() {
            out.writes
                .push((join_channel(j), Val::Json(Value::String(t.node.clone()))));
        }
        // Under durability "exit", kept only if the step does not complete (`run_tasks`).
        if let (Some(saves), true, Some(p)) = (
            &self.saves,
            save && self.next.len() > 1 && self.exit.is_none(),
            &self.parent,
        ) {
            let ws = pending::finished_writes(t, &out)?;
            saves.writes(&p.id, ws, true).await?;
        }
        self.emit_update(t, &out, out.cached);
        self.emit_task_result(
            t,
            || {
                out.writes
                    .iter()
                    .filter(|(c, _)| !is_hidden(c))
                    .cloned()
                    .collect()
            },
            None,
            Vec::new(),
        );
        Ok(out)
    }

    /// A task paused on `interrupt(value)`: saved, so that resuming finds it.
    async fn task_interrupted(&mut self, i: usize, value: Val) -> Result<(), GraphError> {
        let t = &self.next[i];
        let k = self.pending.resume_values(&t.id).len();
        if let (Some(saves), Some(p)) = (&self.saves, &self.parent) {
            let w = pending::interrupt_write(t, k, &value)?;
            saves.writes(&p.id, vec![w], false).await?;
        }
        let info = InterruptInfo::node(&self.opts.checkpoint_ns, &t.id, &t.node, k, value);
        self.emit_task_result(t, Vec::new, None, vec![info.clone()]);
        self.emit_interrupt(&info);
        self.interrupts.push(info);
        Ok(())
    }

    /// A task paused by the `interrupt()`s of a graph nested in it, `qs` (id, value):
    /// saved as one question write that keeps them all, and each surfaced with its own
    /// id, in one `updates` chunk (see `graph::nested`).
    async fn task_interrupted_nested(
        &mut self,
        i: usize,
        qs: Vec<(String, Val)>,
    ) -> Result<(), GraphError> {
        let t = &self.next[i];
        let infos: Vec<InterruptInfo> = qs
            .iter()
            .map(|(id, value)| InterruptInfo {
                id: id.clone(),
                value: value.clone(),
                node: t.node.clone(),
                task_id: t.id.clone(),
            })
            .collect();
        self.emit_task_result(t, Vec::new, None, infos.clone());
        let k = self.pending.resume_values(&t.id).len();
        if let (Some(saves), Some(cp), Some(p)) = (&self.saves, &self.cp, &self.parent) {
            let at = (cp.as_ref(), self.thread.as_str(), p.id.as_str());
            let w = nested::interrupt_write(at, t, k, &qs).await?;
            saves.writes(&p.id, vec![w], false).await?;
        }
        self.emit_interrupts(&infos);
        self.interrupts.extend(infos);
        Ok(())
    }

    /// A task failed the run with `e`: its error is saved as the step's record of it
    /// (see [`pending::error_write`]), before the run fails.
    async fn task_failed(&self, i: usize, e: &GraphError) -> Result<(), GraphError> {
        if let (Some(saves), Some(p)) = (&self.saves, &self.parent) {
            let w = pending::error_write(&self.next[i], e.shown());
            saves.writes(&p.id, vec![w], false).await?;
        }
        Ok(())
    }

    /// Puts the step's interrupts in task order, for a stable result.
    fn sort_interrupts(&mut self) {
        let order: HashMap<&str, usize> = self
            .next
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        self.interrupts
            .sort_by_key(|x| order.get(x.task_id.as_str()).copied().unwrap_or(0));
    }
}
