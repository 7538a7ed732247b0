//! Emit: the stream events of a run's phases.

use super::Run;
use crate::graph::engine::{meta, Task};
use crate::graph::reserved::Source;
use crate::graph::spec::NodeOutput;
use crate::graph::state::StateView;
use crate::graph::stream::{modes, StreamEvent, StreamSink};
use crate::graph::value::Val;

/// Emit: stream events. Each is built only if the sink wants its mode.
impl Run<'_> {
    pub(super) fn emit(&self, mode: u8, ev: impl FnOnce() -> StreamEvent) {
        if let Some(s) = &self.opts.stream {
            s.emit(mode, ev);
        }
    }

    fn sink(&self) -> Option<&StreamSink> {
        self.opts.stream.as_ref()
    }

    /// `debug`: the tasks about to run.
    pub(super) fn emit_task_starts(&self, to_run: &[usize]) {
        let Some(s) = self.sink() else { return };
        for &i in to_run {
            let t = &self.next[i];
            s.emit(modes::DEBUG, || StreamEvent::DebugTask {
                step: self.step,
                id: t.id.clone(),
                node: t.node.clone(),
                input: t.arg.clone(),
            });
        }
    }

    /// `debug`: a task finished (`writes`), failed (`error`) or paused (`interrupts`).
    pub(super) fn emit_task_result(
        &self,
        t: &Task,
        writes: impl FnOnce() -> Vec<(String, Val)>,
        error: Option<String>,
        interrupts: Vec<Val>,
    ) {
        self.emit(modes::DEBUG, || StreamEvent::DebugTaskResult {
            step: self.step,
            id: t.id.clone(),
            node: t.node.clone(),
            writes: writes(),
            error,
            interrupts,
        });
    }

    /// `updates`: the step's interrupts.
    pub(super) fn emit_interrupts(&self) {
        self.emit(modes::UPDATES, || {
            StreamEvent::Interrupt(self.interrupts.clone())
        });
    }

    /// `updates`: what each task wrote, in task order; `values`: the state after.
    pub(super) fn emit_step(&self, outputs: &[NodeOutput], view: &StateView) {
        let Some(s) = self.sink() else { return };
        for (t, out) in self.next.iter().zip(outputs) {
            s.emit(modes::UPDATES, || StreamEvent::Updates {
                node: t.node.clone(),
                update: out.update.clone(),
            });
        }
        s.emit(modes::VALUES, || StreamEvent::Values(view.clone()));
    }

    /// `debug`: the step's checkpoint (the state after it, and the next tasks).
    pub(super) fn emit_checkpoint(&self) {
        self.emit(modes::DEBUG, || StreamEvent::DebugCheckpoint {
            step: self.step,
            checkpoint_id: self.parent.as_ref().map(|p| p.id.clone()),
            parent_id: self.parent.as_ref().and_then(|p| p.parent_id.clone()),
            state: self.graph.view(&self.chans),
            next: self.next.iter().map(|t| t.node.clone()).collect(),
            metadata: meta(&self.opts.metadata, Source::Loop, self.step),
        });
    }
}
