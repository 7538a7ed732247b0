//! The prebuilt pieces of an agent graph — the model node, the tool node and the
//! routers after the model (`tools_condition`, the agents' [`AfterModel`]) — as
//! core types, so that a Rust graph uses them without Python and the Python
//! `ToolNode` / `tools_condition` are thin conversions over the same rules.

mod after_model;
#[cfg(feature = "models")]
mod model_node;
mod tool_node;
mod tools_condition;

pub use after_model::{after_model, pending_calls, tool_call_arg, AfterModel, AfterModelRoute};
#[cfg(feature = "models")]
pub use model_node::{answer_output, ModelCall, ModelNode};
pub use tool_node::{
    last_ai_message, last_ai_tool_calls, result_message, tool_events, tool_events_with, ToolNode,
    ToolNodeError,
};
pub use tools_condition::{tools_condition, NoMessages, ToolsCondition, TOOLS};

use std::sync::Arc;

use crate::graph::{ChannelKind, StateView, Val};
use crate::message::Message;

/// The last message of messages channel `channel` in `view`, if it has any: what the
/// routers after the model look at.
fn last_message<'a>(view: &'a StateView, channel: &str) -> Option<&'a Arc<Message>> {
    match view.get(channel) {
        Some(Val::Messages(l)) => l.last(),
        _ => None,
    }
}

/// The messages channel of a state: the one named `messages` when it is a messages
/// channel, else the first messages channel declared. The tool node and
/// `tools_condition` both read the channel this picks, so they always agree.
pub fn messages_channel(channels: &[(String, ChannelKind)]) -> Option<&str> {
    let messages = || {
        channels
            .iter()
            .filter(|(_, k)| matches!(k, ChannelKind::Messages))
    };
    messages()
        .find(|(n, _)| n == "messages")
        .or_else(|| messages().next())
        .map(|(n, _)| n.as_str())
}
