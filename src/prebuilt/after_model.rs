//! Where an agent's loop goes once the model (and its after-hooks) answered — the one
//! rule `create_react_agent` and `create_agent` route by, whatever their options:
//! the calls of the last AI message that no tool message answers yet go to the tools
//! node; when every call is answered already (a reviewer rejected them, a hook
//! answered them) the loop goes `back` to the model; else it is `done`.
//!
//! Routing in Rust spares every model step a call into Python (the GIL, the state as
//! Python objects, the `Send`s back) for what only reads the messages.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::graph::{Goto, GraphError, Router, StateView, TaskContext, Val};
use crate::message::{Message, MessageKind};
use crate::tool::ToolCall;

/// Where the rule sends the run.
#[derive(Debug, PartialEq)]
pub enum AfterModelRoute<'a> {
    /// The pending calls, to the tools node.
    Tools(Vec<&'a ToolCall>),
    /// Every call of the last AI message is answered: back to the model.
    Back,
    /// No call: the loop ends.
    Done,
}

/// The calls of the last AI message that have no tool message yet. Their answers come
/// after it, so only the messages from the last AI message on are read: the cost does
/// not grow with the conversation.
pub fn pending_calls<'a>(
    messages: impl DoubleEndedIterator<Item = &'a Arc<Message>>,
) -> Vec<&'a ToolCall> {
    pending_newest_first(messages.rev())
}

/// [`pending_calls`] over the messages newest first.
fn pending_newest_first<'a>(messages: impl Iterator<Item = &'a Arc<Message>>) -> Vec<&'a ToolCall> {
    let mut answered = HashSet::new();
    for m in messages {
        match &m.kind {
            MessageKind::Ai { tool_calls, .. } => {
                return tool_calls
                    .iter()
                    .filter(|c| !answered.contains(c.id.as_str()))
                    .collect();
            }
            MessageKind::Tool { tool_call_id, .. } => {
                answered.insert(tool_call_id.as_str());
            }
            _ => {}
        }
    }
    Vec::new()
}

/// The rule over a conversation (see the module's doc), in one pass from its end.
pub fn after_model<'a>(
    messages: impl DoubleEndedIterator<Item = &'a Arc<Message>>,
) -> AfterModelRoute<'a> {
    let mut newest_first = messages.rev().peekable();
    let last_is_tool = matches!(
        newest_first.peek().map(|m| &m.kind),
        Some(MessageKind::Tool { .. })
    );
    let pending = pending_newest_first(newest_first);
    if !pending.is_empty() {
        AfterModelRoute::Tools(pending)
    } else if last_is_tool {
        AfterModelRoute::Back
    } else {
        AfterModelRoute::Done
    }
}

/// [`after_model`] as a graph router over the state's messages channel.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterModel {
    /// The messages channel it reads: the graph's (see [`super::messages_channel`]).
    pub channel: String,
    /// The tools node.
    pub tools: String,
    /// One `Send` per pending call (each call a task of its own; LangGraph's
    /// `create_react_agent` version "v2"), or one visit of the tools node for all.
    pub per_call: bool,
    /// Where the loop goes when every call is answered.
    pub back: String,
    /// Where the run goes when the model made no call.
    pub done: String,
}

/// A tool call as the argument of its `Send`: LangGraph's `ToolCall` dict.
pub fn tool_call_arg(c: &ToolCall) -> Value {
    json!({"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"})
}

impl Router for AfterModel {
    fn name(&self) -> &str {
        "should_continue"
    }

    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        let Some(Val::Messages(list)) = view.get(&self.channel) else {
            return Err(ctx.node_error(
                format!(
                    "routing after {:?} failed: the state has no messages in {:?}",
                    ctx.node, self.channel
                ),
                None,
            ));
        };
        Ok(match after_model(list.iter()) {
            AfterModelRoute::Tools(calls) if self.per_call => calls
                .into_iter()
                .map(|c| Goto::Send(self.tools.clone(), Val::Json(tool_call_arg(c)), None))
                .collect(),
            AfterModelRoute::Tools(_) => vec![Goto::to(self.tools.as_str())],
            AfterModelRoute::Back => vec![Goto::to(self.back.as_str())],
            AfterModelRoute::Done => vec![Goto::to(self.done.as_str())],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolStatus;

    fn ai(calls: &[&str]) -> Arc<Message> {
        let calls = calls
            .iter()
            .map(|id| ToolCall::new(*id, "add", json!({})))
            .collect();
        Arc::new(Message::ai("", calls))
    }

    fn answer(id: &str) -> Arc<Message> {
        Arc::new(Message::tool("3", id, "add", ToolStatus::Success))
    }

    fn ids(route: AfterModelRoute<'_>) -> Vec<String> {
        match route {
            AfterModelRoute::Tools(calls) => calls.iter().map(|c| c.id.clone()).collect(),
            other => panic!("expected calls, got {other:?}"),
        }
    }

    #[test]
    fn pending_calls_go_to_the_tools_answered_ones_do_not() {
        let human = Arc::new(Message::human("2+3?"));
        let turn = [human.clone(), ai(&["a", "b"])];
        assert_eq!(ids(after_model(turn.iter())), ["a", "b"]);
        let half = [human.clone(), ai(&["a", "b"]), answer("a")];
        assert_eq!(ids(after_model(half.iter())), ["b"]);
        let answered = [human.clone(), ai(&["a"]), answer("a")];
        assert_eq!(after_model(answered.iter()), AfterModelRoute::Back);
        let plain = [human.clone(), ai(&[])];
        assert_eq!(after_model(plain.iter()), AfterModelRoute::Done);
        assert_eq!(after_model([].iter()), AfterModelRoute::Done);
        // An older AI message's calls are not looked at.
        let older = [ai(&["x"]), answer("x"), ai(&[]), human];
        assert_eq!(after_model(older.iter()), AfterModelRoute::Done);
    }
}
