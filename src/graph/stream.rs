//! Events a run emits while it goes, for `stream` / `astream`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::error::GraphError;
use super::interrupt::InterruptInfo;
use super::state::StateView;
use super::value::Val;
use crate::message::Message;

/// The stream modes, as a bit set.
pub mod modes {
    pub const VALUES: u8 = 1;
    pub const UPDATES: u8 = 2;
    pub const CUSTOM: u8 = 4;
    pub const MESSAGES: u8 = 8;
    pub const DEBUG: u8 = 16;
    /// ironloop's own: each tool call's start, updates and end.
    pub const TOOLS: u8 = 32;
    /// The modes whose items come from inside a running task (what a node writes, the
    /// model's tokens, a tool call's lifecycle), not from the engine between tasks: a
    /// consumer that drives the run on its own thread would hold them back until the
    /// task returns.
    pub const FROM_TASKS: u8 = CUSTOM | MESSAGES | TOOLS;
}

/// One event of the `tools` stream mode: a tool call's lifecycle, as LangGraph's
/// `tools` mode reports it (`tool-started`, `tool-output-delta`, `tool-finished`,
/// `tool-error`), so that a consumer written for LangGraph reads ironloop's.
#[derive(Debug, Clone)]
pub enum ToolEvent {
    Started {
        id: String,
        name: String,
        /// The call's arguments.
        input: Val,
        /// The tool's human-readable label, if it has one (ironloop's own key).
        label: Option<String>,
    },
    /// A partial result (`ToolContext.update`, `ToolRuntime.emit_output_delta`);
    /// never given to the model.
    OutputDelta {
        id: String,
        delta: Val,
        /// The run the call started (a sub-agent's), once the tool said so.
        child_loop_id: Option<String>,
    },
    Finished {
        id: String,
        output: ToolReturn,
        /// How long the call took, when the engine ran it.
        seconds: Option<f64>,
        /// The run the call started (a sub-agent's), if it said so.
        child_loop_id: Option<String>,
    },
    Error {
        id: String,
        /// The error's text (for a tool node's call, the text the model reads).
        message: String,
        seconds: Option<f64>,
    },
}

/// What a finished tool call gave, in its `tool-finished` event: the tool message
/// the model reads next (a tool node's call, as LangGraph's `ToolNode` reports it),
/// or the tool's own return value (a LangChain tool a node called itself).
#[derive(Debug, Clone)]
pub enum ToolReturn {
    Message(Arc<Message>),
    Value(Val),
}

#[derive(Debug, Clone)]
pub enum StreamEvent {
    /// The whole state after a step; when the run pauses, once more with the
    /// interrupts (LangGraph's `{..., "__interrupt__": (...)}` chunk).
    Values {
        state: StateView,
        interrupts: Vec<InterruptInfo>,
    },
    /// What one node returned in a step (`update`), or, for a task restored from its
    /// pending writes, what it wrote (`writes`).
    Updates {
        node: String,
        update: Option<Val>,
        writes: Vec<(String, Val)>,
        /// Restored from a previous attempt of the step (LangGraph's
        /// `"__metadata__": {"cached": True}`).
        cached: bool,
    },
    /// Interrupts, in the `updates` stream as `{"__interrupt__": (...)}`; those of
    /// `interrupt_before` / `interrupt_after` show as an empty tuple.
    Interrupt(Vec<InterruptInfo>),
    /// Anything a node or tool sent with its stream writer.
    Custom(Val),
    /// A token chunk from a model, with the node that called it and what else the
    /// caller knows of the model run (`meta`: a mapping, e.g. a LangChain run's
    /// metadata and tags), shown in the chunk's metadata.
    Message {
        chunk: Val,
        node: String,
        meta: Option<Val>,
    },
    /// `tools`: a tool call started, reported a partial result, or ended.
    Tool(ToolEvent),
    /// An event of a subgraph run inside a task of this run; `ns` is
    /// `"<node>:<task id>"`.
    Nested { ns: String, ev: Box<StreamEvent> },
    /// `debug`: a task is about to run. Its input is the `Send` argument (or a
    /// functional API `@task` call's `(args, kwargs)`), or else the state it reads
    /// (`state`).
    DebugTask {
        step: i64,
        id: String,
        node: String,
        input: Option<Val>,
        state: Option<StateView>,
        /// LangGraph's task metadata (`None` when empty): the run's metadata without
        /// the keys that only say where the task runs. Stream consumers read which
        /// agent a task belongs to here (LangChain's `lc_agent_name`, by which its
        /// `run.subagents` tells a sub-agent from a plain subgraph).
        metadata: Option<Value>,
    },
    /// `debug`: a task finished (its writes), failed, or paused.
    DebugTaskResult {
        step: i64,
        id: String,
        node: String,
        writes: Vec<(String, Val)>,
        /// The failure whole: the host shows its own exception, as LangGraph's
        /// `error` is the exception the node raised, not its text.
        error: Option<GraphError>,
        /// Shown as LangGraph's `Interrupt`s (their `value`, `id`).
        interrupts: Vec<InterruptInfo>,
    },
    /// `debug`: a checkpoint was taken after a step.
    DebugCheckpoint {
        step: i64,
        /// The namespace of the run that took it (`""` for the root graph's).
        checkpoint_ns: String,
        checkpoint_id: Option<String>,
        /// The checkpoint before it in its namespace, when that one was saved.
        parent_id: Option<String>,
        state: StateView,
        next: Vec<String>,
        /// The ids of the `next` tasks, in the same order.
        next_ids: Vec<String>,
        /// The questions each of the `next` tasks asked, in the same order: a
        /// checkpoint a run resumes shows its tasks' pending `interrupt()`s (others
        /// have none, or are empty).
        interrupts: Vec<Vec<InterruptInfo>>,
        metadata: Value,
    },
}

impl StreamEvent {
    /// The stream mode (a [`modes`] bit) the event belongs to; a nested event's is
    /// that of the event it wraps.
    pub fn mode(&self) -> u8 {
        match self {
            StreamEvent::Values { .. } => modes::VALUES,
            StreamEvent::Updates { .. } | StreamEvent::Interrupt(_) => modes::UPDATES,
            StreamEvent::Custom(_) => modes::CUSTOM,
            StreamEvent::Message { .. } => modes::MESSAGES,
            StreamEvent::Tool(_) => modes::TOOLS,
            StreamEvent::Nested { ev, .. } => ev.mode(),
            StreamEvent::DebugTask { .. }
            | StreamEvent::DebugTaskResult { .. }
            | StreamEvent::DebugCheckpoint { .. } => modes::DEBUG,
        }
    }
}

/// Receives events; the run never blocks on it.
#[derive(Clone)]
pub struct StreamSink {
    pub modes: u8,
    /// Subgraphs (and sub-agents) run inside this run stream their events here too,
    /// tagged with where they come from.
    pub subgraphs: bool,
    pub send: Arc<dyn Fn(StreamEvent) + Send + Sync>,
    /// Ids of the messages the `messages` mode has shown in this run (subgraphs
    /// included): a message a node returns is shown unless its chunks already were.
    pub seen: Arc<Mutex<HashSet<String>>>,
}

impl StreamSink {
    /// The sink a subgraph run inside task `ns` streams into: this one, when it
    /// wants subgraph events.
    pub fn nested(&self, ns: String) -> Option<StreamSink> {
        if !self.subgraphs {
            return None;
        }
        let send = self.send.clone();
        Some(StreamSink {
            modes: self.modes,
            subgraphs: true,
            seen: self.seen.clone(),
            send: Arc::new(move |ev| {
                send(StreamEvent::Nested {
                    ns: ns.clone(),
                    ev: Box::new(ev),
                })
            }),
        })
    }

    /// A sink that sends each event to `self` and to `other`, each taking the modes
    /// it wants (and subgraph events only if it asked for them). A graph streamed
    /// inside a running task streams to its own caller and, as LangGraph's, to the
    /// stream of the run around it (`other`, that task's nested sink).
    pub fn tee(self, other: StreamSink) -> StreamSink {
        let (a, b) = (self, other);
        StreamSink {
            modes: a.modes | b.modes,
            subgraphs: a.subgraphs || b.subgraphs,
            seen: a.seen.clone(),
            send: Arc::new(move |ev: StreamEvent| {
                let mode = ev.mode();
                let a_takes =
                    a.wants(mode) && (a.subgraphs || !matches!(ev, StreamEvent::Nested { .. }));
                if b.wants(mode) && (b.subgraphs || !matches!(ev, StreamEvent::Nested { .. })) {
                    if a_takes {
                        (a.send)(ev.clone());
                    }
                    (b.send)(ev);
                } else if a_takes {
                    (a.send)(ev);
                }
            }),
        }
    }

    /// This sink restricted to the modes `mask` (none left: `None`).
    pub fn only(self, mask: u8) -> Option<StreamSink> {
        let modes = self.modes & mask;
        (modes != 0).then_some(StreamSink { modes, ..self })
    }

    pub fn wants(&self, mode: u8) -> bool {
        self.modes & mode != 0
    }

    /// Whether a message id was shown already (without marking it).
    pub fn shown(&self, id: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id)
    }

    /// Marks a message id as shown; false when it already was.
    pub fn first_sight(&self, id: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string())
    }

    pub fn emit(&self, mode: u8, ev: impl FnOnce() -> StreamEvent) {
        if self.wants(mode) {
            (self.send)(ev());
        }
    }
}
