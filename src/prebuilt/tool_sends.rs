//! The router of a `create_react_agent` (version "v2"): one `Send` to the tools node
//! per tool call of the model's last message, so that each call is a task of its own.
//!
//! Routing in Rust spares every model step a call into Python (the GIL, the state as
//! Python objects, the `Send`s back) for what only reads the last message.

use serde_json::{json, Value};

use crate::graph::{Goto, GraphError, Router, StateView, TaskContext, Val};
use crate::tool::ToolCall;

/// After the model's turn: `Send(node, call)` for each tool call of the last message
/// (the call as LangGraph's `ToolCall` dict), else on to `otherwise`.
pub struct ToolCallSends {
    /// The messages channel it reads.
    pub channel: String,
    /// The node each call is sent to.
    pub node: String,
    /// Where the run goes when the last message has no tool calls.
    pub otherwise: String,
}

/// A tool call as the argument of its `Send`: LangGraph's `ToolCall` dict.
fn tool_call_arg(c: &ToolCall) -> Value {
    json!({"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"})
}

impl Router for ToolCallSends {
    fn name(&self) -> &str {
        "should_continue"
    }

    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        let Some(last) = super::last_message(view, &self.channel) else {
            return Err(ctx.node_error(
                format!(
                    "routing after {:?} failed: the state has no messages in {:?}",
                    ctx.node, self.channel
                ),
                None,
            ));
        };
        let calls = last.tool_calls();
        if calls.is_empty() {
            return Ok(vec![Goto::to(self.otherwise.as_str())]);
        }
        Ok(calls
            .iter()
            .map(|c| Goto::Send(self.node.clone(), Val::Json(tool_call_arg(c))))
            .collect())
    }
}
