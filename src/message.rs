//! Chat messages: immutable values shared by reference (`Arc<Message>`), so a long
//! history costs nothing to hand from step to step or across the Python boundary.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::host_slot::HostSlot;
use crate::tool::ToolCall;

/// A fresh message id. Every message gets one at construction so that reducers can
/// replace or remove messages by id without a separate assignment pass.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// One part of a multi-part content list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// An image by URL (`https://…` or a `data:` URL).
    Image {
        url: String,
    },
    /// Any other provider-specific part, kept verbatim.
    Json {
        value: Value,
    },
}

impl ContentPart {
    /// A part from its JSON form: `{"type": "text", "text"}`, `{"type": "image_url",
    /// "image_url": {"url"}}`; anything else (a bare string included) is kept verbatim.
    pub fn from_value(v: Value) -> ContentPart {
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => match v.get("text").and_then(Value::as_str) {
                Some(t) => ContentPart::Text { text: t.to_owned() },
                None => ContentPart::Json { value: v },
            },
            "image_url" => {
                let url = match v.get("image_url") {
                    Some(Value::String(u)) => Some(u.clone()),
                    Some(o) => o.get("url").and_then(Value::as_str).map(str::to_owned),
                    None => None,
                };
                match url {
                    Some(url) => ContentPart::Image { url },
                    None => ContentPart::Json { value: v },
                }
            }
            _ => ContentPart::Json { value: v },
        }
    }

    /// The part's JSON form, the inverse of [`ContentPart::from_value`].
    pub fn to_value(&self) -> Value {
        match self {
            ContentPart::Text { text } => serde_json::json!({"type": "text", "text": text}),
            ContentPart::Image { url } => {
                serde_json::json!({"type": "image_url", "image_url": {"url": url}})
            }
            ContentPart::Json { value } => value.clone(),
        }
    }
}

/// The content-block types a tool result may be a list of and stay a list
/// (langchain-core's `TOOL_MESSAGE_BLOCK_TYPES`).
pub const TOOL_RESULT_BLOCK_TYPES: &[&str] = &[
    "text",
    "image_url",
    "image",
    "json",
    "search_result",
    "custom_tool_call_output",
    "document",
    "file",
];

impl Content {
    /// A tool's list result as content, when it is a list of content blocks (strings,
    /// or objects whose `type` is one of [`TOOL_RESULT_BLOCK_TYPES`]), as LangChain
    /// keeps such a list as the `ToolMessage`'s content; `None` for any other value.
    pub fn from_blocks(v: &Value) -> Option<Content> {
        let items = v.as_array()?;
        let is_block = |b: &Value| match b {
            Value::String(_) => true,
            Value::Object(o) => o
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| TOOL_RESULT_BLOCK_TYPES.contains(&t)),
            _ => false,
        };
        items.iter().all(is_block).then(|| {
            Content::Parts(
                items
                    .iter()
                    .map(|b| match b {
                        Value::String(_) => ContentPart::Json { value: b.clone() },
                        _ => ContentPart::from_value(b.clone()),
                    })
                    .collect(),
            )
        })
    }
}

/// Message content: plain text, or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl Content {
    /// The text of the content: the string itself, or the text parts joined.
    pub fn text(&self) -> String {
        self.as_text().into_owned()
    }

    /// [`Content::text`], borrowed when the content is one string.
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Content::Text(s) => std::borrow::Cow::Borrowed(s),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::Json {
                        value: Value::String(s),
                    } => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("")
                .into(),
        }
    }
}

/// Whether a tool result is a success or an error the model should read and correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    #[default]
    Success,
    Error,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Success => "success",
            ToolStatus::Error => "error",
        }
    }
}

/// A tool call the model produced but that could not be parsed (e.g. its arguments
/// are not JSON). Kept so that the model can be told, never silently dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvalidToolCall {
    pub id: Option<String>,
    pub name: Option<String>,
    pub args: Option<String>,
    pub error: Option<String>,
}

/// Token accounting reported by a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Input tokens read from the provider's prompt cache (counted in `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Input tokens written to the provider's prompt cache (counted in `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<u64>,
    /// Output tokens spent on reasoning (counted in `output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

impl Usage {
    /// Counts without details; the total is their sum.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens + output_tokens,
            ..Default::default()
        }
    }

    /// langchain-core's `UsageMetadata` shape: the three counts, plus
    /// `input_token_details` (`cache_read`, `cache_creation`) and
    /// `output_token_details` (`reasoning`) when the provider reported them.
    pub fn to_langchain(&self) -> Value {
        let mut v = serde_json::json!({
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        });
        let mut input = serde_json::Map::new();
        if let Some(n) = self.cache_read {
            input.insert("cache_read".into(), n.into());
        }
        if let Some(n) = self.cache_creation {
            input.insert("cache_creation".into(), n.into());
        }
        if !input.is_empty() {
            v["input_token_details"] = Value::Object(input);
        }
        if let Some(n) = self.reasoning {
            v["output_token_details"] = serde_json::json!({ "reasoning": n });
        }
        v
    }

    /// The inverse of [`Usage::to_langchain`]; a missing total is the sum.
    pub fn from_langchain(v: &Value) -> Usage {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let detail =
            |group: &str, k: &str| v.get(group).and_then(|d| d.get(k)).and_then(Value::as_u64);
        let (i, o) = (n("input_tokens"), n("output_tokens"));
        Usage {
            input_tokens: i,
            output_tokens: o,
            total_tokens: v
                .get("total_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(i + o),
            cache_read: detail("input_token_details", "cache_read"),
            cache_creation: detail("input_token_details", "cache_creation"),
            reasoning: detail("output_token_details", "reasoning"),
        }
    }

    /// Adds `other` to these counts (a run's total over its model calls).
    pub fn add(&mut self, other: &Usage) {
        fn plus(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            }
        }
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
        self.cache_read = plus(self.cache_read, other.cache_read);
        self.cache_creation = plus(self.cache_creation, other.cache_creation);
        self.reasoning = plus(self.reasoning, other.reasoning);
    }
}

/// What kind of message this is, with the fields only that kind has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageKind {
    System,
    Human,
    Ai {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        invalid_tool_calls: Vec<InvalidToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    Tool {
        tool_call_id: String,
        #[serde(default)]
        status: ToolStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        artifact: Option<Value>,
    },
    /// A marker for the `add_messages` reducer: remove the message with this id.
    Remove,
}

/// A chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub content: Content,
    /// langchain-core's `additional_kwargs`: provider payload fields a caller or an
    /// integration keeps with the message. Kept and round-tripped, never read by the
    /// engine; not written at all while empty (records stay as small as before).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub additional_kwargs: Map<String, Value>,
    /// langchain-core's `response_metadata`: what the provider said about the response
    /// (model name, finish reason…), and on a `ToolMessage` ironloop's
    /// `_reasoningForCall`. Like `additional_kwargs`: kept, not written while empty.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub response_metadata: Map<String, Value>,
    #[serde(flatten)]
    pub kind: MessageKind,
    /// The host's object for this message (the Python glue's message object), made
    /// once and handed out again; not part of the value (see [`HostSlot`]).
    #[serde(skip)]
    pub host: HostSlot,
}

impl Message {
    fn with(kind: MessageKind, content: Content) -> Self {
        Message {
            id: new_id(),
            name: None,
            content,
            additional_kwargs: Map::new(),
            response_metadata: Map::new(),
            kind,
            host: HostSlot::default(),
        }
    }

    pub fn system(content: impl Into<Content>) -> Self {
        Self::with(MessageKind::System, content.into())
    }

    pub fn human(content: impl Into<Content>) -> Self {
        Self::with(MessageKind::Human, content.into())
    }

    pub fn ai(content: impl Into<Content>, tool_calls: Vec<ToolCall>) -> Self {
        Self::with(
            MessageKind::Ai {
                tool_calls,
                invalid_tool_calls: Vec::new(),
                usage: None,
            },
            content.into(),
        )
    }

    pub fn tool(
        content: impl Into<Content>,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        status: ToolStatus,
    ) -> Self {
        let mut m = Self::with(
            MessageKind::Tool {
                tool_call_id: tool_call_id.into(),
                status,
                artifact: None,
            },
            content.into(),
        );
        m.name = Some(name.into());
        m
    }

    pub fn remove(id: impl Into<String>) -> Self {
        let mut m = Self::with(MessageKind::Remove, Content::default());
        m.id = id.into();
        m
    }

    /// The langchain type tag and class of the message's kind, in one table.
    fn names(&self) -> (&'static str, &'static str) {
        match self.kind {
            MessageKind::System => ("system", "SystemMessage"),
            MessageKind::Human => ("human", "HumanMessage"),
            MessageKind::Ai { .. } => ("ai", "AIMessage"),
            MessageKind::Tool { .. } => ("tool", "ToolMessage"),
            MessageKind::Remove => ("remove", "RemoveMessage"),
        }
    }

    /// The langchain type tag: `system`, `human`, `ai`, `tool` or `remove`.
    pub fn type_name(&self) -> &'static str {
        self.names().0
    }

    /// The name of langchain-core's class for the message (`AIMessage`...).
    pub fn class_name(&self) -> &'static str {
        self.names().1
    }

    /// The tool calls of an AI message; empty for every other kind.
    pub fn tool_calls(&self) -> &[ToolCall] {
        match &self.kind {
            MessageKind::Ai { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_round_trip_through_json() {
        let call = ToolCall::new("c1", "add", json!({"a": 1}));
        let msgs = vec![
            Message::system("be brief"),
            Message::human("hi"),
            Message::ai("", vec![call]),
            Message::tool("3", "c1", "add", ToolStatus::Error),
        ];
        for m in msgs {
            let text = serde_json::to_string(&m).unwrap();
            let back: Message = serde_json::from_str(&text).unwrap();
            assert_eq!(back, m, "{text}");
        }
    }

    #[test]
    fn metadata_round_trips_and_is_not_written_while_empty() {
        let plain = Message::human("hi");
        let text = serde_json::to_string(&plain).unwrap();
        assert!(!text.contains("additional_kwargs") && !text.contains("response_metadata"));
        let mut m = Message::tool("3", "c1", "add", ToolStatus::Success);
        m.response_metadata
            .insert("_reasoningForCall".into(), json!("to add"));
        m.additional_kwargs.insert("refusal".into(), Value::Null);
        let text = serde_json::to_string(&m).unwrap();
        let back: Message = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m, "{text}");
        assert_ne!(
            back,
            Message {
                id: m.id.clone(),
                ..Message::tool("3", "c1", "add", ToolStatus::Success)
            }
        );
    }

    #[test]
    fn every_message_gets_a_distinct_id() {
        assert_ne!(Message::human("a").id, Message::human("a").id);
    }

    #[test]
    fn content_text_joins_text_parts() {
        let c = Content::Parts(vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::Image { url: "x".into() },
            ContentPart::Text { text: "b".into() },
        ]);
        assert_eq!(c.text(), "ab");
    }
}
