//! `tools_condition`: after the model's turn, go to the tools when it asked for any.

use std::collections::HashMap;

use crate::graph::{Goto, GraphError, Router, StateView, TaskContext, END};
use crate::message::Message;

/// The route `tools_condition` takes when the last message has tool calls.
pub const TOOLS: &str = "tools";

/// `tools_condition` found no messages to look at (LangGraph raises `ValueError`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("No messages found in input state to tool_edge")]
pub struct NoMessages;

/// [`TOOLS`] when the last message has tool calls, else [`END`].
pub fn tools_condition(last: Option<&Message>) -> Result<&'static str, NoMessages> {
    let last = last.ok_or(NoMessages)?;
    Ok(if last.tool_calls().is_empty() {
        END
    } else {
        TOOLS
    })
}

/// `tools_condition` as a graph router over a messages channel; `path_map` renames its
/// two routes (`"tools"`, `END`) to nodes, as `add_conditional_edges` allows.
pub struct ToolsCondition {
    pub channel: String,
    pub path_map: Option<HashMap<String, String>>,
}

impl Router for ToolsCondition {
    fn name(&self) -> &str {
        "tools_condition"
    }

    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        let last = super::last_message(view, &self.channel);
        let key = tools_condition(last.map(|m| m.as_ref())).map_err(|e| {
            ctx.node_error(format!("routing after {:?} failed: {e}", ctx.node), None)
        })?;
        let target = match &self.path_map {
            None => key.to_owned(),
            Some(map) => map.get(key).cloned().ok_or_else(|| {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                ctx.node_error(
                    format!(
                        "tools_condition returned {key:?}, which is not in its path_map \
                         (keys: {keys:?})"
                    ),
                    None,
                )
            })?,
        };
        Ok(vec![Goto::to(target)])
    }
}
