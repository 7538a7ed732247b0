//! The body of a Chat Completions request, serialised straight from the request (a
//! JSON tree built first cloned every message of the history for every request):
//! the history, the tools, content parts and tool calls in the shape OpenAI reads.

use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use super::OpenAIChat;
use crate::message::{Content, ContentPart, Message, MessageKind};
use crate::model::BodyFields;
use crate::model::ChatRequest;
use crate::tool::{ToolCall, ToolDefinition};

pub(super) struct Body<'a> {
    pub(super) chat: &'a OpenAIChat,
    pub(super) req: &'a ChatRequest,
    pub(super) stream: bool,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (chat, req) = (self.chat, self.req);
        let mut m = BodyFields::new(s, &req.extra)?;
        m.field("model", &chat.model)?;
        m.field("messages", &Messages(&req.messages))?;
        if !req.tools.is_empty() {
            m.field("tools", &Tools(&req.tools))?;
            if let Some(c) = &req.tool_choice {
                m.field("tool_choice", &c.to_openai())?;
            }
            if let Some(p) = req
                .parallel_tool_calls
                .or(chat.settings.parallel_tool_calls)
            {
                m.field("parallel_tool_calls", &p)?;
            }
        }
        if let Some(f) = &req.response_format {
            m.field(
                "response_format",
                &json!({
                    "type": "json_schema",
                    "json_schema": {"name": f.name, "schema": f.schema, "strict": f.strict},
                }),
            )?;
        }
        if let Some(t) = req.temperature.or(chat.settings.temperature) {
            m.field("temperature", &t)?;
        }
        if let Some(n) = req.max_tokens.or(chat.settings.max_tokens) {
            // OpenAI itself deprecated `max_tokens` (reasoning models reject it);
            // compatible servers know `max_tokens`.
            let key = if chat.official {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            m.field(key, &n)?;
        }
        if !req.stop.is_empty() {
            m.field("stop", &req.stop)?;
        }
        if self.stream {
            m.field("stream", &true)?;
            m.field("stream_options", &json!({"include_usage": true}))?;
        }
        m.end()
    }
}

/// The history in the Chat Completions shape (remove markers left out).
struct Messages<'a>(&'a [Arc<Message>]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().filter_map(|m| OpenAIMessage::of(m)))
    }
}

/// The `tools` list.
struct Tools<'a>(&'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ToolDefinition::openai))
    }
}

fn name_ok(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A content part in the Chat Completions shape.
struct Part<'a>(&'a ContentPart);

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = |s: S, text: &str| {
            let mut m = s.serialize_map(Some(2))?;
            m.serialize_entry("type", "text")?;
            m.serialize_entry("text", text)?;
            m.end()
        };
        let image = |s: S, url: &str| {
            let mut m = s.serialize_map(Some(2))?;
            m.serialize_entry("type", "image_url")?;
            m.serialize_entry("image_url", &Url(url))?;
            m.end()
        };
        match self.0 {
            ContentPart::Text { text: t } => text(s, t),
            ContentPart::Image { url } => image(s, url),
            ContentPart::Json {
                value: Value::String(t),
            } => text(s, t),
            ContentPart::Json { value } => match crate::model::images::standard_image_url(value) {
                Some(url) => image(s, &url),
                None => value.serialize(s),
            },
        }
    }
}

/// `{"url": ...}`.
struct Url<'a>(&'a str);

impl Serialize for Url<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("url", self.0)?;
        m.end()
    }
}

/// Content in the Chat Completions shape: a string, or parts.
struct ContentOut<'a>(&'a Content);

impl Serialize for ContentOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Content::Text(t) => s.serialize_str(t),
            Content::Parts(parts) => s.collect_seq(parts.iter().map(Part)),
        }
    }
}

/// A tool call as an assistant message carries it; its arguments as the JSON text
/// OpenAI wants (text kept as it is).
struct CallOut<'a>(&'a ToolCall);

impl Serialize for CallOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Function<'a>(&'a ToolCall);
        impl Serialize for Function<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("name", &self.0.name)?;
                match &self.0.arguments {
                    Value::String(t) => m.serialize_entry("arguments", t)?,
                    other => m.serialize_entry("arguments", &Displayed(other))?,
                }
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", &self.0.id)?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry("function", &Function(self.0))?;
        m.end()
    }
}

/// A value as the string of its compact JSON text.
struct Displayed<'a>(&'a Value);

impl Serialize for Displayed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self.0)
    }
}

/// A message in the Chat Completions shape.
pub(super) struct OpenAIMessage<'a>(&'a Message);

impl<'a> OpenAIMessage<'a> {
    /// `None` for a remove marker (it is not sent).
    pub(super) fn of(m: &'a Message) -> Option<Self> {
        (!matches!(m.kind, MessageKind::Remove)).then_some(OpenAIMessage(m))
    }
}

impl Serialize for OpenAIMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut out = s.serialize_map(None)?;
        match &m.kind {
            MessageKind::System => {
                out.serialize_entry("role", "system")?;
                out.serialize_entry("content", &ContentOut(&m.content))?;
            }
            MessageKind::Human => {
                out.serialize_entry("role", "user")?;
                out.serialize_entry("content", &ContentOut(&m.content))?;
            }
            MessageKind::Ai { tool_calls, .. } => {
                out.serialize_entry("role", "assistant")?;
                let text = m.content.as_text();
                if text.is_empty() && !tool_calls.is_empty() {
                    out.serialize_entry("content", &())?;
                } else {
                    out.serialize_entry("content", &*text)?;
                }
                // Invalid tool calls are not sent: no tool result answers them, and a
                // call without a result makes the provider reject the conversation.
                if !tool_calls.is_empty() {
                    out.serialize_key("tool_calls")?;
                    out.serialize_value(&Calls(tool_calls))?;
                }
            }
            MessageKind::Tool { tool_call_id, .. } => {
                out.serialize_entry("role", "tool")?;
                out.serialize_entry("tool_call_id", tool_call_id)?;
                // A result with images goes as content parts (text and `image_url`),
                // as langchain-openai sends it: OpenAI-compatible servers that take
                // images there get them, and OpenAI's own endpoint, which takes text
                // parts only, answers with an error naming the part instead of the
                // model never seeing the image. Text-only results stay one string.
                let has_image = matches!(&m.content, Content::Parts(parts)
                if parts.iter().any(|p| match p {
                    ContentPart::Image { .. } => true,
                    ContentPart::Json { value } => crate::model::images::standard_image_url(value).is_some(),
                    ContentPart::Text { .. } => false,
                }));
                if has_image {
                    out.serialize_entry("content", &ContentOut(&m.content))?;
                } else {
                    out.serialize_entry("content", &*m.content.as_text())?;
                }
                return out.end();
            }
            // Left out by `of`; a marker has no shape to send.
            MessageKind::Remove => {}
        }
        if let Some(n) = m.name.as_deref().filter(|n| name_ok(n)) {
            out.serialize_entry("name", n)?;
        }
        out.end()
    }
}

/// An assistant message's tool calls.
struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(CallOut))
    }
}
