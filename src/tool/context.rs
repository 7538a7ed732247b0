use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Receives `(tool_call_id, payload)` progress reports while tools run.
pub type ProgressFn = Arc<dyn Fn(&str, Value) + Send + Sync>;

/// Where a call records the id of the run it started (a sub-agent's: yoagent's
/// `child_loop_id`), set once. Shared between the call's context (the tool sets it)
/// and the executor (which puts it on the call's result and end event), so a UI can
/// nest the child run's stream under the call that started it.
pub type ChildRun = Arc<OnceLock<String>>;

/// The system half of a call, the same shape for every tool.
#[derive(Clone)]
pub struct ToolContext {
    pub tool_call_id: String,
    pub tool_name: String,
    /// Cancelled when the run is cancelled or the call times out; long-running tools
    /// should watch it.
    pub cancel: CancellationToken,
    pub progress: Option<ProgressFn>,
    /// A snapshot of the graph state, when the call runs inside a graph.
    pub state: Option<Arc<Value>>,
    /// The host language's per-run environment (for Python: the event loop, the
    /// `contextvars` context, the state and store objects). Opaque to the core.
    pub host: Option<Arc<dyn Any + Send + Sync>>,
    /// The call may run on the thread that drives the run (the caller waits on that
    /// thread for the run): a host can skip handing it to a worker thread. Never set
    /// for a call of a message in which any call has a time limit (a call on the
    /// driving thread cannot be timed out, nor can its siblings while it runs). With
    /// siblings (`alone` false) running it there delays the siblings not started
    /// yet: a host does so only for calls it expects to finish at once.
    pub inline: bool,
    /// No other call of the run waits behind this one (it is the only call, or the
    /// calls run one after another).
    pub alone: bool,
    /// Watches the run's calls (`update` reports partial results to it).
    pub events: Option<super::CallEvents>,
    /// This call's span when the run is traced (see [`super::CallTracer`]).
    pub span: Option<super::CallSpan>,
    /// The tool's human-readable label ([`super::Tool::label`]), if it has one.
    pub label: Option<Arc<str>>,
    /// The run this call started, once the tool says so ([`Self::set_child_run`]).
    pub child_run: ChildRun,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("tool_name", &self.tool_name)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for a call outside any run (tests, direct calls).
    pub fn new(tool_call_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        ToolContext {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            cancel: CancellationToken::new(),
            progress: None,
            state: None,
            host: None,
            inline: false,
            alone: true,
            events: None,
            span: None,
            label: None,
            child_run: ChildRun::default(),
        }
    }

    /// Records that this call started the run `run_id` (a sub-agent): the call's
    /// later `update` events, its end event and its result carry it. The first id
    /// set stays; returns whether this one was kept.
    pub fn set_child_run(&self, run_id: impl Into<String>) -> bool {
        self.child_run.set(run_id.into()).is_ok()
    }

    /// Reports a partial result (yoagent's `on_update`): streamed to whoever watches
    /// the run's calls, never given to the model; a no-op when nobody watches.
    pub fn update(&self, payload: std::sync::Arc<dyn std::any::Any + Send + Sync>) {
        if let Some(ev) = &self.events {
            ev(super::CallEvent::Update {
                tool_call_id: &self.tool_call_id,
                tool_name: &self.tool_name,
                payload,
                child_run: self.child_run.get().map(String::as_str),
            });
        }
    }

    /// Reports progress; a no-op when nobody listens.
    pub fn progress(&self, payload: Value) {
        if let Some(p) = &self.progress {
            p(&self.tool_call_id, payload);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}
