//! A call's lifecycle, for whoever watches a run's tool calls (the graph's `tools`
//! stream mode): when it starts, what partial results its tool reports
//! (`ToolContext::update`), and how it ended; and for whoever traces them
//! ([`CallTracer`]).

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{ToolCall, ToolError, ToolOutput};

/// One event of one call. Borrowed: a watcher copies what it keeps.
pub enum CallEvent<'a> {
    /// The executor took the call (every call gets one, also a call refused before
    /// its tool runs, so that each start has its end).
    Start {
        call: &'a ToolCall,
        args: &'a Value,
        /// The tool's human-readable label ([`super::Tool::label`]).
        label: Option<&'a str>,
    },
    /// A partial result the tool reported while running. It never reaches the model.
    /// `payload` is the host's value (opaque to the core) or a `serde_json::Value`.
    Update {
        tool_call_id: &'a str,
        tool_name: &'a str,
        payload: Arc<dyn Any + Send + Sync>,
        /// The run the call started, once it has said so (`set_child_run`): a
        /// sub-agent's forwarded events nest under it.
        child_run: Option<&'a str>,
    },
    /// The call ended: its outcome and how long it took from its start.
    End {
        call: &'a ToolCall,
        outcome: &'a Result<ToolOutput, ToolError>,
        duration: Duration,
    },
}

/// Receives the events of every call of one `execute` (set on its `RunContext`).
pub type CallEvents = Arc<dyn Fn(CallEvent<'_>) + Send + Sync>;

/// One call's span, as a [`CallTracer`] made it: opaque to the core (for Python, an
/// OpenTelemetry span).
pub type CallSpan = Arc<dyn Any + Send + Sync>;

/// Traces a run's calls, whatever runs them (a Rust source's tool or a host's
/// function): the executor asks for a span when it takes a call, hands it to the tool
/// in [`super::ToolContext::span`] (a host tool makes it current while user code
/// runs, so what that code traces nests under the call), and gives it back with the
/// outcome when the call ends, also when it ends without one (cancelled, dropped).
/// Separate from [`CallEvents`] because a span lives from start to end: a tracer
/// keeps no map of calls in flight. A run without one pays one `Option` check per
/// call.
pub trait CallTracer: Send + Sync {
    /// The span of `call`, just taken; `None` when this call is not traced.
    fn started(&self, call: &ToolCall) -> Option<CallSpan>;
    /// `call` ended with `outcome`; the tracer closes `span`.
    fn ended(&self, span: CallSpan, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>);
}
