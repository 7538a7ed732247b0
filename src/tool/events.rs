//! A call's lifecycle, for whoever watches a run's tool calls (the graph's `tools`
//! stream mode): when it starts, what partial results its tool reports
//! (`ToolContext::update`), and how it ended.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{ToolCall, ToolError, ToolOutput};

/// One event of one call. Borrowed: a watcher copies what it keeps.
pub enum CallEvent<'a> {
    /// The executor took the call (every call gets one, also a call refused before
    /// its tool runs, so that each start has its end).
    Start { call: &'a ToolCall, args: &'a Value },
    /// A partial result the tool reported while running. It never reaches the model.
    /// `payload` is the host's value (opaque to the core) or a `serde_json::Value`.
    Update {
        tool_call_id: &'a str,
        tool_name: &'a str,
        payload: Arc<dyn Any + Send + Sync>,
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
