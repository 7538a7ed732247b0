//! The model step of an agent as a core node: the history in the messages channel,
//! behind the agent's system message, goes to a [`ChatModel`] with the agent's tools,
//! and the answer, named after the agent, is written back to the channel.
//!
//! An agent whose model is one of ironloop's HTTP models needs no host code for this
//! step: the request is built from the channel's messages as they are, and waiting
//! for the answer holds nothing (no interpreter lock, no thread).

use std::sync::Arc;

use async_trait::async_trait;

use crate::graph::{MessageList, NodeFailure, NodeOutput, NodeRunner, StateView, TaskContext, Val};
use crate::message::Message;
use crate::model::{ChatModel, ChatRequest, ModelError};
use crate::tool::ToolDefinition;

/// One agent's model call: its model, the tools offered to it, the system message put
/// before the history, and the name its answers carry.
pub struct ModelCall {
    pub model: Arc<dyn ChatModel>,
    /// Shared by every agent of one shape, and by each request.
    pub tools: Arc<[ToolDefinition]>,
    pub system: Option<Arc<Message>>,
    /// Set on every answer (`None` clears the provider's, as LangGraph's agent does).
    pub name: Option<String>,
}

impl ModelCall {
    /// The request for `history`: the system message, the history, the tools.
    pub fn request(&self, history: &MessageList) -> ChatRequest {
        let mut messages = Vec::with_capacity(history.len() + 1);
        messages.extend(self.system.iter().cloned());
        messages.extend(history.iter().cloned());
        ChatRequest {
            messages,
            tools: self.tools.clone(),
            ..Default::default()
        }
    }

    /// `answer` as the agent's: named after it.
    pub fn named(&self, mut answer: Message) -> Message {
        answer.name.clone_from(&self.name);
        answer
    }

    /// The model's answer to `history`.
    pub async fn answer(&self, history: &MessageList) -> Result<Message, ModelError> {
        let answer = self.model.invoke(self.request(history)).await?;
        Ok(self.named(answer))
    }
}

/// A node's output of one answer: its write to messages channel `channel`.
pub fn answer_output(channel: &str, answer: Message) -> NodeOutput {
    NodeOutput {
        writes: vec![(
            channel.to_owned(),
            Val::Messages(MessageList::from_messages([Arc::new(answer)])),
        )],
        ..Default::default()
    }
}

/// The agent's model step: reads messages channel `channel` (empty when it has no
/// value yet) and writes the model's answer to it. A model error fails the node with
/// the error's message.
pub struct ModelNode {
    pub channel: String,
    pub call: Arc<ModelCall>,
}

#[async_trait]
impl NodeRunner for ModelNode {
    async fn run(
        &self,
        state: StateView,
        _arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let empty = MessageList::new();
        let history = match state.get(&self.channel) {
            Some(Val::Messages(l)) => l,
            _ => &empty,
        };
        match self.call.answer(history).await {
            Ok(answer) => Ok(answer_output(&self.channel, answer)),
            Err(e) => Err(NodeFailure::Error(ctx.node_error(e.to_string(), None))),
        }
    }
}
