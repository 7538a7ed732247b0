//! Emit: the stream events of a run's phases.

use super::{Durability, Run};
use crate::graph::engine::{meta, Task};
use crate::graph::interrupt::{InterruptInfo, InterruptKind};
use crate::graph::nested::questions;
use crate::graph::reserved::is_hidden;
use crate::graph::reserved::Source;
use crate::graph::spec::{NodeOutput, START};
use crate::graph::state::StateView;
use crate::graph::stream::{modes, StreamEvent, StreamSink};
use crate::graph::value::Val;
use crate::graph::GraphError;

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

    /// `messages`: a run inside a task of another run (a subgraph) marks the
    /// messages its tasks start with as shown, as LangGraph's handler marks a task's
    /// input: when the parent's node that runs the subgraph returns them, they are
    /// not news. Called as the run starts (a resumed run's state) and after a new
    /// run's input step (its input, given ids by the subgraph's reducer). A root run
    /// needs none of this (its tasks' state holds them).
    pub(super) fn note_start_messages(&self) {
        let Some(sink) = self.sink().filter(|s| s.wants(modes::MESSAGES)) else {
            return;
        };
        if !self.opts.in_task {
            return;
        }
        for (_, v) in self.graph.view(&self.chans).iter() {
            if let Val::Messages(list) = v {
                for m in list.iter() {
                    sink.first_sight(&m.id);
                }
            }
        }
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
                state: Some(self.graph.view(&self.chans)),
                metadata: task_metadata(&self.opts.metadata),
            });
        }
    }

    /// `debug`: a task finished (`writes`), failed (`error`) or paused (`interrupts`).
    pub(super) fn emit_task_result(
        &self,
        t: &Task,
        writes: impl FnOnce() -> Vec<(String, Val)>,
        error: Option<GraphError>,
        interrupts: Vec<InterruptInfo>,
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

    /// `updates`: one interrupt, as soon as it happens (or is found still pending);
    /// for `interrupt_before` / `after`, LangGraph's empty `{"__interrupt__": ()}`.
    pub(super) fn emit_interrupt(&self, i: &InterruptInfo) {
        self.emit(modes::UPDATES, || StreamEvent::Interrupt(vec![i.clone()]));
    }

    /// `updates`: the questions of one task together (a graph nested in it asked
    /// them), as LangGraph shows a task's interrupts in one chunk.
    pub(super) fn emit_interrupts(&self, is: &[InterruptInfo]) {
        self.emit(modes::UPDATES, || StreamEvent::Interrupt(is.to_vec()));
    }

    /// `values`: the state the run paused in, with the interrupts of its tasks.
    pub(super) fn emit_paused_values(&self) {
        if self
            .interrupts
            .iter()
            .all(|i| i.kind() != InterruptKind::Node)
        {
            return;
        }
        self.emit(modes::VALUES, || StreamEvent::Values {
            state: self.graph.view(&self.chans),
            interrupts: self.interrupts.clone(),
        });
    }

    /// `updates`: what a task returned, as soon as it finished (or was restored from
    /// its pending writes, which keep its writes, not what it returned). The `START`
    /// task (the input) is not an update, as in LangGraph.
    pub(super) fn emit_update(&self, t: &Task, out: &NodeOutput, cached: bool) {
        if t.node == START {
            return;
        }
        self.emit(modes::UPDATES, || StreamEvent::Updates {
            node: t.node.clone(),
            cached,
            update: out.update.clone(),
            writes: if out.update.is_some() {
                Vec::new()
            } else {
                out.writes
                    .iter()
                    .filter(|(c, _)| !is_hidden(c))
                    .cloned()
                    .collect()
            },
        });
    }

    /// `values`: the state after a step.
    pub(super) fn emit_values(&self, view: &StateView) {
        self.emit(modes::VALUES, || StreamEvent::Values {
            state: view.clone(),
            interrupts: Vec::new(),
        });
    }

    /// `debug`: the step's checkpoint (the state after it, and the next tasks). As
    /// LangGraph, only a run that saves checkpoints reports them.
    pub(super) fn emit_checkpoint(&self, source: Source) {
        if self.cp.is_none() {
            return;
        }
        self.emit(modes::DEBUG, || StreamEvent::DebugCheckpoint {
            step: self.step,
            checkpoint_ns: self.opts.checkpoint_ns.clone(),
            checkpoint_id: self.parent.as_ref().map(|p| p.id.clone()),
            // Under `durability="exit"` the step before was never saved: no parent, as
            // LangGraph reports it (and the saved history then shows).
            parent_id: self
                .parent
                .as_ref()
                .and_then(|p| p.parent_id.clone())
                .filter(|_| self.opts.durability != Durability::Exit),
            state: self.graph.view(&self.chans),
            next: self.next.iter().map(|t| t.node.clone()).collect(),
            next_ids: self.next.iter().map(|t| t.id.clone()).collect(),
            interrupts: Vec::new(),
            metadata: meta(&self.opts.metadata, source, self.step),
        });
    }

    /// `debug`: the checkpoint a run resumes or continues, before its tasks run, as
    /// LangGraph streams it: its own step, metadata and parent, the state the run
    /// goes on from, and the questions its tasks asked (the run's answers are among
    /// its pending writes, not in place of them).
    pub(super) fn emit_resumed_checkpoint(&self) -> Result<(), GraphError> {
        let (Some(p), Some(_), Some(sink)) = (&self.parent, &self.cp, self.sink()) else {
            return Ok(());
        };
        if !sink.wants(modes::DEBUG) {
            return Ok(());
        }
        let codec = self.graph.codec.as_ref();
        let ns = &self.opts.checkpoint_ns;
        let mut interrupts = Vec::with_capacity(self.next.len());
        for t in &self.next {
            let asked = match self.pending.last_question_of(&t.id) {
                Some(w) => questions(codec, ns, &t.id, w)?,
                None => Vec::new(),
            };
            interrupts.push(
                asked
                    .into_iter()
                    .map(|(id, value)| InterruptInfo {
                        id,
                        value,
                        node: t.node.clone(),
                        task_id: t.id.clone(),
                    })
                    .collect(),
            );
        }
        let metadata = match &p.metadata {
            serde_json::Value::Object(_) => p.metadata.clone(),
            _ => resumed_meta(&self.opts.metadata, &p.source, p.step),
        };
        sink.emit(modes::DEBUG, || StreamEvent::DebugCheckpoint {
            step: p.step,
            checkpoint_ns: ns.clone(),
            checkpoint_id: Some(p.id.clone()),
            parent_id: p.parent_id.clone(),
            state: self.graph.view(&self.chans),
            next: self.next.iter().map(|t| t.node.clone()).collect(),
            next_ids: self.next.iter().map(|t| t.id.clone()).collect(),
            interrupts,
            metadata,
        });
        Ok(())
    }
}

/// The metadata of a stored checkpoint that kept none (a record some saver stored
/// without it): the run's, with the record's source and step.
fn resumed_meta(run: &serde_json::Value, source: &str, step: i64) -> serde_json::Value {
    let mut m = match run {
        serde_json::Value::Object(o) => o.clone(),
        _ => Default::default(),
    };
    m.insert("source".into(), source.into());
    m.insert("step".into(), step.into());
    m.entry("parents")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    serde_json::Value::Object(m)
}

/// The metadata keys LangGraph keeps out of a task event's metadata: where the task
/// runs, which its own fields and namespace say already.
const NOT_TASK_METADATA: [&str; 9] = [
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "checkpoint_map",
    "langgraph_step",
    "langgraph_node",
    "langgraph_triggers",
    "langgraph_path",
    "langgraph_checkpoint_ns",
];

/// A task event's metadata, as LangGraph's `tasks` / `debug` streams carry it: the
/// run's metadata (`config["metadata"]` and its `configurable` scalars) without
/// [`NOT_TASK_METADATA`]; `None` when nothing is left.
fn task_metadata(run: &serde_json::Value) -> Option<serde_json::Value> {
    let serde_json::Value::Object(m) = run else {
        return None;
    };
    let kept: serde_json::Map<String, serde_json::Value> = m
        .iter()
        .filter(|(k, _)| !NOT_TASK_METADATA.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!kept.is_empty()).then_some(serde_json::Value::Object(kept))
}
