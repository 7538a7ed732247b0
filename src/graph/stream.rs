//! Events a run emits while it goes, for `stream` / `astream`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::interrupt::InterruptInfo;
use super::state::StateView;
use super::value::Val;

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

/// One event of the `tools` stream mode: a tool call's lifecycle.
#[derive(Debug, Clone)]
pub enum ToolEvent {
    Start {
        id: String,
        name: String,
        args: Value,
        /// The tool's human-readable label, if it has one.
        label: Option<String>,
    },
    /// A partial result (`ToolContext.update`); never given to the model.
    Update {
        id: String,
        name: String,
        data: Val,
        /// The run the call started (a sub-agent's), once the tool said so.
        child_loop_id: Option<String>,
    },
    End {
        id: String,
        name: String,
        /// The error text the model reads, for a call that failed.
        error: Option<String>,
        seconds: f64,
        /// The run the call started (a sub-agent's), if it said so.
        child_loop_id: Option<String>,
    },
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
    /// `debug`: a task is about to run. Its input is the `Send` argument, or else the
    /// state it reads (`state`).
    DebugTask {
        step: i64,
        id: String,
        node: String,
        input: Option<Val>,
        state: StateView,
    },
    /// `debug`: a task finished (its writes), failed, or paused.
    DebugTaskResult {
        step: i64,
        id: String,
        node: String,
        writes: Vec<(String, Val)>,
        error: Option<String>,
        interrupts: Vec<Val>,
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
        metadata: Value,
    },
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
