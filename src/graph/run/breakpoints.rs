//! Pauses as LangGraph's: a `Command` given to a thread paused before its tasks
//! continues them, a graph nested in a task that stops at one of its static
//! breakpoints pauses that task, and a paused step shows what its finished tasks
//! wrote.

use super::Run;
use crate::graph::engine::Task;
use crate::graph::error::GraphError;
use crate::graph::interrupt::InterruptInfo;
use crate::graph::pending::Pending;
use crate::graph::spec::{Goto, NodeOutput, END};

impl Run<'_> {
    /// Whether a `Command(update=..., goto=...)` given as input continues the thread
    /// (its latest checkpoint has tasks left: paused at a static breakpoint, on an
    /// `interrupt()`, or crashed) instead of starting it again from `START`. LangGraph
    /// takes any `Command` to a thread with a checkpoint as a resume: the tasks it was
    /// paused before run (no `interrupt_before` stops them again), with the update
    /// applied and the gotos added.
    pub(super) fn command_continues(&self, travels: bool) -> bool {
        !travels
            && self.opts.lent.is_none()
            && self.parent.as_ref().is_some_and(|p| !p.next.is_empty())
    }

    /// Continues the thread's paused step with `Command(update=..., goto=...)`
    /// (`out`, as `START`'s output): the update and the gotos are saved with the step
    /// (once, as a resume's update is), the update applied before its tasks run; each
    /// goto is one more task of the step, also when the step pauses again and is
    /// continued later (see [`Run::add_saved_gotos`]).
    pub(super) async fn continue_with_command(
        &mut self,
        out: NodeOutput,
    ) -> Result<(), GraphError> {
        for g in &out.goto {
            match g {
                Goto::Node(node) | Goto::Send(node, ..)
                    if node != END && !self.graph.node_index.contains_key(node) =>
                {
                    return Err(GraphError::InvalidUpdate(format!(
                        "Command(goto={node:?}) names no node of this graph; goto one of \
                         its nodes (or END)"
                    )));
                }
                _ => {}
            }
        }
        if let (Some(cp), Some(parent)) = (&self.cp, &self.parent) {
            let mut pending =
                Pending::load(self.graph, cp.as_ref(), &self.thread, &parent.id).await?;
            pending
                .save_update(cp.as_ref(), &self.thread, &parent.id, out.writes)
                .await?;
            pending
                .save_gotos(cp.as_ref(), &self.thread, &parent.id, &out.goto)
                .await?;
        }
        self.continue_from_checkpoint(None).await
    }

    /// Adds the tasks of the gotos saved with the continued step (see
    /// [`Run::continue_with_command`]) to its tasks, in the order they were given (a
    /// node the step runs already is not run twice): their ids are the same each time
    /// the step is continued, so one that finished before is not run again.
    pub(super) fn add_saved_gotos(&mut self) -> Result<(), GraphError> {
        let step_id = match &self.parent {
            Some(p) => p.id.clone(),
            None => return Ok(()),
        };
        for g in self.pending.gotos(self.graph)? {
            let (node, arg, timeout) = match g {
                Goto::Node(n) if n != END => (n, None, None),
                Goto::Send(n, a, timeout) => (n, Some(a), timeout),
                Goto::Node(_) | Goto::End => continue,
            };
            if arg.is_none() && self.next.iter().any(|t| t.arg.is_none() && t.node == node) {
                continue;
            }
            let i = self.next.len();
            self.next.push(Task {
                id: format!("{step_id}:{i}:{node}"),
                node,
                arg,
                timeout,
            });
        }
        Ok(())
    }

    /// Task `i` ran a graph that stopped at one of its static breakpoints: the task
    /// pauses with nothing to answer (LangGraph's bare `GraphInterrupt`), shown as a
    /// pause before it. Resuming runs it again, and the nested graph continues from
    /// its own checkpoint.
    pub(super) fn task_paused(&mut self, i: usize) {
        let t = &self.next[i];
        self.emit_task_result(t, Vec::new, None, Vec::new());
        let info = InterruptInfo::before(&t.id, &t.node);
        self.emit_breakpoint(&info);
        self.interrupts.push(info);
    }

    /// Streams a pause with nothing to answer (LangGraph's `{"__interrupt__": ()}`),
    /// unless the run is nested: as LangGraph's, only the root run shows it, once,
    /// however deep the graph that stopped.
    pub(super) fn emit_breakpoint(&self, info: &InterruptInfo) {
        if self.opts.lent.is_none() {
            self.emit_interrupt(info);
        }
    }

    /// The step paused with some of its tasks finished: as LangGraph, one last
    /// `values` event shows the state with their writes applied, and the run returns
    /// it. The checkpoint keeps them as pending writes only (the step did not
    /// commit), so nothing is applied to the run's own channels.
    pub(super) fn show_finished_at_pause(&mut self, outputs: &[Option<NodeOutput>]) {
        let mut writes = Vec::new();
        for i in self.write_order() {
            if let Some(out) = &outputs[i] {
                writes.extend(out.writes.iter().cloned());
            }
        }
        // A nested run's pause is its parent task's: as LangGraph's, it shows nothing.
        if self.opts.lent.is_some()
            || !self
                .graph
                .writes_output(writes.iter().map(|(c, _)| c.as_str()))
        {
            return;
        }
        let mut chans = self.chans.clone();
        // Writes the channels refuse (two to one without a reducer) fail the step when
        // it commits on resume, as they would have had it not paused: nothing to show.
        if self.graph.apply(&mut chans, writes).is_err() {
            return;
        }
        let view = self.graph.view(&chans);
        self.emit_values(&view);
        self.has_output = true;
        self.shown_at_pause = Some(view);
    }
}
