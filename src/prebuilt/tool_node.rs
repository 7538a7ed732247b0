//! The tool node: runs the tool calls of the last AI message through the executor and
//! turns each result into the tool message the model reads next.

use std::sync::Arc;

use async_trait::async_trait;

use serde_json::Value;

use crate::executor::{error_text, Executor, RunContext, ToolResult};
use crate::graph::{modes, GraphError, StreamEvent, StreamSink, ToolEvent, ToolReturn};
use crate::graph::{MessageList, NodeFailure, NodeOutput, NodeRunner, StateView, TaskContext, Val};
use crate::message::{Message, MessageKind};
use crate::tool::{CallEvent, CallEvents, ToolCall, ToolError};

/// The `tools` stream of a tool node's calls, when the run's stream wants it: each
/// call's start, partial results (a payload that is a graph value or JSON) and end,
/// which carries the tool message the model reads next (as LangGraph's `ToolNode`
/// reports it) or, for a failed call, the error text the model reads.
pub fn tool_events(sink: Option<&StreamSink>) -> Option<CallEvents> {
    tool_events_with(sink, |_| false)
}

/// [`tool_events`] for a host whose tools can pause the run: a call that failed with
/// an error `paused` recognises (the host's interrupt) has no end event, as in
/// LangGraph, since it runs again, from its start, when the run resumes.
pub fn tool_events_with(
    sink: Option<&StreamSink>,
    paused: fn(&ToolError) -> bool,
) -> Option<CallEvents> {
    let sink = sink.filter(|s| s.wants(modes::TOOLS))?.clone();
    Some(Arc::new(move |ev: CallEvent<'_>| {
        let event = match ev {
            CallEvent::Start { call, args, label } => ToolEvent::Started {
                id: call.id.clone(),
                name: call.name.clone(),
                input: Val::Json(args.clone()),
                label: label.map(str::to_owned),
            },
            CallEvent::Update {
                tool_call_id,
                payload,
                child_run,
                ..
            } => {
                let delta = if let Some(v) = payload.downcast_ref::<Val>() {
                    v.clone()
                } else if let Some(v) = payload.downcast_ref::<Value>() {
                    Val::Json(v.clone())
                } else {
                    return;
                };
                ToolEvent::OutputDelta {
                    id: tool_call_id.to_owned(),
                    delta,
                    child_loop_id: child_run.map(str::to_owned),
                }
            }
            CallEvent::End {
                call,
                outcome,
                duration,
            } => match outcome {
                Ok(out) => ToolEvent::Finished {
                    id: call.id.clone(),
                    output: ToolReturn::Message(result_message(ToolResult {
                        tool_call_id: call.id.clone(),
                        name: call.name.clone(),
                        outcome: Ok(out.clone()),
                        reasoning: None,
                    })),
                    seconds: Some(duration.as_secs_f64()),
                    child_loop_id: out.child_run.clone(),
                },
                Err(e) if paused(e) => return,
                Err(e) => ToolEvent::Error {
                    id: call.id.clone(),
                    message: error_text(e),
                    seconds: Some(duration.as_secs_f64()),
                },
            },
        };
        sink.emit(modes::TOOLS, || StreamEvent::Tool(event));
    }))
}

/// Why a tool node could not find calls to run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolNodeError {
    #[error(
        "ToolNode found no AIMessage in its input: the last AI message's tool calls are \
         what it runs"
    )]
    NoAiMessage,
}

/// The last AI message (newest first search), or `None` when there is none; its
/// `tool_calls()` are what a tool node runs.
pub fn last_ai_message<'a>(
    messages: impl DoubleEndedIterator<Item = &'a Arc<Message>>,
) -> Option<&'a Arc<Message>> {
    messages
        .rev()
        .find(|m| matches!(m.kind, MessageKind::Ai { .. }))
}

/// The tool calls of the last AI message (newest first search), or `None` when there
/// is no AI message at all.
pub fn last_ai_tool_calls<'a>(
    messages: impl DoubleEndedIterator<Item = &'a Arc<Message>>,
) -> Option<Vec<ToolCall>> {
    last_ai_message(messages).map(|m| m.tool_calls().to_vec())
}

/// The tool message of a result: a message the tool returned itself (named after the
/// tool when it has no name), or the result made into one. (A host that lets tools
/// return other values, such as a Python `Command`, picks those out first.) Takes the
/// result: its id, name and content move into the message.
pub fn result_message(r: ToolResult) -> Arc<Message> {
    let own = r
        .outcome
        .as_ref()
        .ok()
        .and_then(|o| o.payload.as_ref())
        .and_then(|p| p.downcast_ref::<Arc<Message>>());
    match own {
        Some(m) => {
            let mut m = m.clone();
            if m.name.is_none() {
                Arc::make_mut(&mut m).name = Some(r.name.clone());
            }
            if r.reasoning.is_some() {
                r.keep_reasoning(Arc::make_mut(&mut m));
            }
            m
        }
        None => Arc::new(r.into_message()),
    }
}

/// A tool node over an executor. As a graph node it reads `channel` (see
/// [`super::messages_channel`]) and writes one tool message per call back to it; a
/// `Send(node, tool_call)` runs that one call.
#[derive(Clone)]
pub struct ToolNode {
    executor: Executor,
    channel: String,
}

impl ToolNode {
    pub fn new(executor: Executor, channel: impl Into<String>) -> Self {
        ToolNode {
            executor,
            channel: channel.into(),
        }
    }

    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The calls of a task: the `Send` argument's one call, else those of the last AI
    /// message in the messages channel (none when there is no AI message).
    pub fn calls(&self, state: &StateView, send: Option<ToolCall>) -> Vec<ToolCall> {
        if let Some(call) = send {
            return vec![call];
        }
        match state.get(&self.channel) {
            Some(Val::Messages(l)) => last_ai_tool_calls(l.iter()).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Runs `calls`; results come back in call order, failures as error results.
    pub async fn run(&self, calls: &[ToolCall], run: &RunContext) -> Vec<ToolResult> {
        self.executor.execute(calls, run).await
    }

    /// The node's output for `messages`: one write of the tool messages to the channel.
    pub fn output(&self, messages: Vec<Arc<Message>>) -> NodeOutput {
        let mut out = NodeOutput::default();
        if !messages.is_empty() {
            out.writes.push((
                self.channel.clone(),
                Val::Messages(MessageList::from_messages(messages)),
            ));
        }
        out
    }
}

#[async_trait]
impl NodeRunner for ToolNode {
    async fn run(
        &self,
        state: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let send = match arg {
            Some(Val::Json(v)) => Some(
                serde_json::from_value::<ToolCall>(v)
                    .map_err(|e| NodeFailure::Error(ctx.node_error(e.to_string(), None)))?,
            ),
            _ => None,
        };
        let calls = self.calls(&state, send);
        let run = RunContext {
            cancel: ctx.cancel.clone(),
            inline: ctx.inline,
            steer: ctx.steer.clone(),
            events: tool_events(ctx.stream.as_ref()),
            ..Default::default()
        };
        let results = ToolNode::run(self, &calls, &run).await;
        // A cancelled task has no output (its calls' results would say "cancelled").
        if ctx.cancel.is_cancelled() {
            return Err(NodeFailure::Error(GraphError::Cancelled));
        }
        Ok(self.output(results.into_iter().map(result_message).collect()))
    }

    fn answers_when_steered(&self) -> bool {
        true
    }
}
