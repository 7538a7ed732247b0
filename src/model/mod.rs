//! Chat models over HTTP: the [`ChatModel`] trait and two providers, the OpenAI
//! Chat Completions API ([`OpenAIChat`], which also speaks to every
//! OpenAI-compatible server: vLLM, Ollama, llama.cpp, LM Studio, OpenRouter…) and the
//! Anthropic Messages API ([`AnthropicChat`]).
//!
//! Both send the core [`Message`] / [`ToolDefinition`] / [`ToolChoice`] values, stream
//! over SSE, retry 408 / 409 / 429 / 5xx responses, connection errors and timeouts
//! with exponential backoff and jitter (honouring `Retry-After`), never retry other
//! 4xx errors, and turn a malformed response into an `invalid_tool_calls` entry or a
//! [`ModelError`] — never a panic. The API key is never logged and never appears in an
//! error.
//!
//! Decisions worth knowing:
//! - Every response gets a fresh ironloop message id (a UUID), not the provider's
//!   response id: some OpenAI-compatible servers repeat ids, and `add_messages`
//!   replaces messages by id.
//! - A stream's chunks ([`ChatChunk::Text`]) all belong to the message whose id is
//!   [`ChatStream::id`]; the last item is [`ChatChunk::Done`] with the whole message
//!   (text, assembled tool calls, invalid tool calls, usage).
//! - An unknown finish / stop reason is accepted when the response has content (a
//!   local server may say `"eos"`); an empty response with an unknown, `length` or
//!   content-filter reason is a [`ModelError`] naming the reason.
//! - Structured output ([`ResponseFormat`]): OpenAI gets its native
//!   `response_format: {"type": "json_schema", ...}`; Anthropic gets a forced call of a
//!   tool whose input schema is the schema, and the tool's input comes back as the
//!   message's text (JSON), so both providers answer with JSON text.

mod anthropic;
mod embeddings;
#[cfg(test)]
mod fuzz_tests;
pub(crate) mod http;
mod images;
pub mod limits;
mod openai;
mod retry;
mod sse;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::message::{Content, ContentPart, InvalidToolCall, Message, MessageKind, Usage};
use crate::tool::{ToolCall, ToolChoice, ToolDefinition};

pub use anthropic::{AnthropicChat, ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_VERSION};
pub use embeddings::OpenAIEmbeddings;
pub use http::ChatBody;
pub use openai::{OpenAIChat, OPENAI_DEFAULT_BASE_URL};
pub use retry::RetryPolicy;

/// Why a model call failed. The text never contains the API key.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ModelError {
    /// The provider answered with an error status.
    #[error("{provider} returned HTTP {status}{}: {message}", kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default())]
    Api {
        provider: &'static str,
        status: u16,
        /// The provider's error type (`invalid_request_error`, `rate_limit_error`…).
        kind: Option<String>,
        message: String,
        /// The wait the provider asked for (`Retry-After`, `retry-after-ms`).
        retry_after: Option<Duration>,
    },
    /// The request could not be sent or the connection broke.
    #[error("{provider}: connection failed: {message}")]
    Connection {
        provider: &'static str,
        message: String,
    },
    /// No response (or no next stream event) within the time limit.
    #[error("{provider}: no response within {:.3}s (timeout)", after.as_secs_f64())]
    Timeout {
        provider: &'static str,
        after: Duration,
    },
    /// The response is not what the API reference describes (bad JSON, a stream that
    /// ended early, an empty answer with an unknown finish reason, an error event).
    #[error("{provider}: {message}")]
    Response {
        provider: &'static str,
        message: String,
    },
    /// The model object is misconfigured (no API key, bad URL, bad request value).
    #[error("{0}")]
    Config(String),
}

impl ModelError {
    /// The HTTP status, for [`ModelError::Api`].
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The provider's name (`"openai"`, `"anthropic"`), when the error came from one.
    pub fn provider(&self) -> Option<&'static str> {
        match self {
            ModelError::Api { provider, .. }
            | ModelError::Connection { provider, .. }
            | ModelError::Timeout { provider, .. }
            | ModelError::Response { provider, .. } => Some(provider),
            ModelError::Config(_) => None,
        }
    }

    /// Whether trying again may help: 408, 409, 429 and 5xx statuses, connection
    /// errors and timeouts. Other 4xx are the caller's to fix.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Api { status, .. } => retry::retryable_status(*status),
            ModelError::Connection { .. } | ModelError::Timeout { .. } => true,
            ModelError::Response { .. } | ModelError::Config(_) => false,
        }
    }

    /// The wait the provider asked for before a retry.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short name of the variant: `api`, `connection`, `timeout`, `response`, `config`.
    pub fn kind(&self) -> &'static str {
        match self {
            ModelError::Api { .. } => "api",
            ModelError::Connection { .. } => "connection",
            ModelError::Timeout { .. } => "timeout",
            ModelError::Response { .. } => "response",
            ModelError::Config(_) => "config",
        }
    }

    /// The same error with every secret in its text replaced.
    pub(crate) fn redact(self, secrets: &crate::secrets::Secrets) -> Self {
        let r = |s: String| secrets.redact(&s);
        match self {
            ModelError::Api {
                provider,
                status,
                kind,
                message,
                retry_after,
            } => ModelError::Api {
                provider,
                status,
                kind: kind.map(r),
                message: r(message),
                retry_after,
            },
            ModelError::Connection { provider, message } => ModelError::Connection {
                provider,
                message: r(message),
            },
            ModelError::Response { provider, message } => ModelError::Response {
                provider,
                message: r(message),
            },
            ModelError::Config(m) => ModelError::Config(r(m)),
            e @ ModelError::Timeout { .. } => e,
        }
    }
}

/// Structured output: the final answer must be JSON matching `schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFormat {
    /// A name for the schema (`[a-zA-Z0-9_-]`, at most 64 characters).
    pub name: String,
    pub schema: Value,
    /// OpenAI's strict mode (the schema must then meet OpenAI's strict subset).
    pub strict: bool,
}

impl ResponseFormat {
    /// A format for `schema`, named after its `title` (or `response`).
    pub fn new(schema: Value) -> Self {
        let name = schema
            .get("title")
            .and_then(Value::as_str)
            .map(sanitize_name)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "response".to_owned());
        ResponseFormat {
            name,
            schema,
            strict: false,
        }
    }
}

fn sanitize_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// One request to a chat model. Fields left `None` take the model's defaults.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub messages: Vec<Arc<Message>>,
    /// Shared, not copied: an agent offers the same tools in every request.
    pub tools: Arc<[ToolDefinition]>,
    pub tool_choice: Option<ToolChoice>,
    pub parallel_tool_calls: Option<bool>,
    pub response_format: Option<ResponseFormat>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    /// Extra top-level fields of the request body (`top_p`, `seed`, `metadata`…),
    /// merged last: they override what ironloop would send.
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Self {
        ChatRequest {
            messages: messages.into_iter().map(Arc::new).collect(),
            ..Default::default()
        }
    }

    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    pub fn with_parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = Some(on);
        self
    }

    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }
}

/// An item of a response stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatChunk {
    /// Text as it arrives.
    Text(String),
    /// A piece of a tool call's arguments as it arrives (`id` and `name` on the first
    /// piece of each call). The complete calls come in [`ChatChunk::Done`].
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// A piece of reasoning as it arrives, as a content block:
    /// `{"type": "thinking", "thinking", "index"}` (Anthropic) or
    /// `{"type": "reasoning", "reasoning"}` (OpenAI-compatible `reasoning_content`).
    Reasoning(Value),
    /// The end: the whole message, with the text, the assembled tool calls, the calls
    /// whose arguments could not be parsed, and the usage.
    /// (Boxed: a message is far larger than the other items.)
    Done(Box<Message>),
}

type BoxChunkStream = Pin<Box<dyn Stream<Item = Result<ChatChunk, ModelError>> + Send>>;

/// A streamed response: [`ChatChunk`]s ending with [`ChatChunk::Done`], or an error.
pub struct ChatStream {
    provider: &'static str,
    id: String,
    inner: BoxChunkStream,
}

impl ChatStream {
    pub(crate) fn new(provider: &'static str, id: String, inner: BoxChunkStream) -> Self {
        ChatStream {
            provider,
            id,
            inner,
        }
    }

    /// The id of the message being streamed (the id of the final message too).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Reads the stream to its end and returns the whole message.
    pub async fn collect_message(mut self) -> Result<Message, ModelError> {
        use futures::StreamExt;
        while let Some(item) = self.next().await {
            if let ChatChunk::Done(m) = item? {
                return Ok(*m);
            }
        }
        Err(ModelError::Response {
            provider: self.provider,
            message: "the stream ended without a final message".into(),
        })
    }
}

impl Stream for ChatStream {
    type Item = Result<ChatChunk, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl std::fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream")
            .field("provider", &self.provider)
            .field("id", &self.id)
            .finish()
    }
}

/// A chat model: a request in, an AI message (or a stream of its chunks) out.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The provider's short name (`"openai"`, `"anthropic"`).
    fn provider(&self) -> &'static str;

    /// The model name sent to the provider.
    fn model_name(&self) -> &str;

    async fn invoke(&self, req: ChatRequest) -> Result<Message, ModelError>;

    /// Starts a streamed response. Retries happen before the first chunk only: once
    /// chunks have been handed out, an error ends the stream.
    async fn stream(&self, req: ChatRequest) -> Result<ChatStream, ModelError>;
}

/// Settings shared by the HTTP providers.
#[derive(Clone)]
pub struct HttpSettings {
    /// The API root, e.g. `https://api.openai.com/v1`; `None` for the provider's.
    pub base_url: Option<String>,
    /// The API key; `None` reads the provider's environment variable.
    pub api_key: Option<String>,
    /// The time limit of one attempt (for a stream: until the response starts, then
    /// between two events).
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Headers sent with every request (e.g. OpenRouter's `HTTP-Referer`).
    pub headers: Vec<(String, String)>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub parallel_tool_calls: Option<bool>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            base_url: None,
            api_key: None,
            timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            headers: Vec::new(),
            temperature: None,
            max_tokens: None,
            parallel_tool_calls: None,
        }
    }
}

impl HttpSettings {
    /// The API root requests go under: `base_url`, else the environment variable
    /// `env`, else the provider's `default`; trimmed, without a trailing `/`.
    pub(crate) fn api_root(&self, env: &str, default: &str) -> String {
        let base = self
            .base_url
            .clone()
            .or_else(|| std::env::var(env).ok())
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| default.to_owned());
        base.trim().trim_end_matches('/').to_owned()
    }
}

impl std::fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key, nor header values (they may carry credentials).
        f.debug_struct("HttpSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .finish()
    }
}

/// The key from the settings or the environment variable `var` (empty counts as
/// unset).
fn resolve_key(explicit: Option<&str>, var: &str) -> Option<String> {
    explicit
        .map(str::to_owned)
        .or_else(|| std::env::var(var).ok())
        .filter(|k| !k.trim().is_empty())
}

/// A tool call from its parts as the provider sent them. Arguments that are empty
/// are `{}`; arguments that are not a JSON object make an [`InvalidToolCall`].
pub(crate) fn finish_tool_call(
    id: Option<String>,
    name: Option<String>,
    raw_args: &str,
) -> Result<ToolCall, InvalidToolCall> {
    let id = id
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| format!("call_{}", crate::message::new_id().replace('-', "")));
    let invalid = |error: String| InvalidToolCall {
        id: Some(id.clone()),
        name: name.clone(),
        args: Some(raw_args.to_owned()),
        error: Some(error),
    };
    let Some(n) = name.clone().filter(|n| !n.is_empty()) else {
        return Err(invalid("the tool call has no function name".into()));
    };
    let trimmed = raw_args.trim();
    if trimmed.is_empty() {
        return Ok(ToolCall::new(id, n, Value::Object(Map::new())));
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => Ok(ToolCall::new(id, n, v)),
        Ok(other) => Err(invalid(format!(
            "the arguments must be a JSON object, got {}",
            crate::tool::json_kind(&other)
        ))),
        Err(e) => Err(invalid(format!("the arguments are not valid JSON: {e}"))),
    }
}

/// The AI message of a response.
pub(crate) fn ai_message(
    id: String,
    text: String,
    tool_calls: Vec<ToolCall>,
    invalid_tool_calls: Vec<InvalidToolCall>,
    usage: Option<Usage>,
) -> Message {
    Message {
        id,
        name: None,
        content: Content::Text(text),
        additional_kwargs: Default::default(),
        response_metadata: Default::default(),
        kind: MessageKind::Ai {
            tool_calls,
            invalid_tool_calls,
            usage,
        },
        host: Default::default(),
    }
}

/// `m` with its content led by the response's reasoning blocks: Anthropic's
/// `thinking` / `redacted_thinking` blocks (kept verbatim with their signatures,
/// which the API wants back unchanged during tool use) or `{"type": "reasoning"}`
/// from OpenAI-compatible servers' `reasoning_content`. As in langchain-anthropic,
/// such a message's content is then a list of blocks, its text the text blocks.
pub(crate) fn with_reasoning(mut m: Message, blocks: Vec<Value>) -> Message {
    if blocks.is_empty() {
        return m;
    }
    let text = m.content.text();
    let mut parts: Vec<ContentPart> = blocks
        .into_iter()
        .map(|value| ContentPart::Json { value })
        .collect();
    if !text.is_empty() {
        parts.push(ContentPart::Text { text });
    }
    m.content = Content::Parts(parts);
    m
}

/// Whether a content block is reasoning (never sent to a provider that did not
/// write it).
/// A request body's top-level object: the fields ironloop sends, then
/// [`ChatRequest::extra`], which overrides them (a field `extra` holds is left to it).
pub(crate) struct BodyFields<'e, M> {
    map: M,
    extra: &'e Map<String, Value>,
}

impl<'e, M: serde::ser::SerializeMap> BodyFields<'e, M> {
    pub(crate) fn new<S>(s: S, extra: &'e Map<String, Value>) -> Result<Self, S::Error>
    where
        S: serde::Serializer<SerializeMap = M, Error = M::Error>,
    {
        Ok(BodyFields {
            map: s.serialize_map(None)?,
            extra,
        })
    }

    pub(crate) fn field<V: serde::Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &V,
    ) -> Result<(), M::Error> {
        if self.extra.contains_key(key) {
            return Ok(());
        }
        self.map.serialize_entry(key, value)
    }

    pub(crate) fn end(mut self) -> Result<M::Ok, M::Error> {
        for (k, v) in self.extra {
            self.map.serialize_entry(k, v)?;
        }
        self.map.end()
    }
}

pub(crate) fn is_reasoning_block(v: &Value) -> bool {
    matches!(
        v.get("type").and_then(Value::as_str),
        Some("thinking" | "redacted_thinking" | "reasoning")
    )
}

/// How a response ended, as far as ironloop cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// A normal end (`stop`, `tool_calls`, `end_turn`, `tool_use`…).
    Normal,
    /// The token limit was reached.
    Length,
    /// The provider withheld the content (`content_filter`, `refusal`).
    Filtered,
    /// A reason this code does not know.
    Unknown,
}

/// Rejects an empty response that ended abnormally; accepts everything else.
pub(crate) fn check_finish(
    provider: &'static str,
    finish: Finish,
    reason: Option<&str>,
    msg: &Message,
) -> Result<(), ModelError> {
    let empty = msg.content.text().is_empty()
        && match &msg.kind {
            MessageKind::Ai {
                tool_calls,
                invalid_tool_calls,
                ..
            } => tool_calls.is_empty() && invalid_tool_calls.is_empty(),
            _ => true,
        };
    let reason = reason.unwrap_or("(none)");
    match finish {
        Finish::Normal => Ok(()),
        Finish::Unknown if !empty => {
            log::warn!("{provider}: unknown finish reason {reason:?}; keeping the response");
            Ok(())
        }
        _ if !empty => Ok(()),
        Finish::Length => Err(ModelError::Response {
            provider,
            message: format!(
                "the response hit the token limit (finish reason {reason:?}) before any \
                 output: raise max_tokens"
            ),
        }),
        Finish::Filtered => Err(ModelError::Response {
            provider,
            message: format!("the provider withheld the response (finish reason {reason:?})"),
        }),
        Finish::Unknown => Err(ModelError::Response {
            provider,
            message: format!("empty response with an unknown finish reason {reason:?}"),
        }),
    }
}

/// The text of a response body for an error message: the provider's message when the
/// body is one of the known error shapes, else the body itself, shortened.
pub(crate) fn error_detail(body: &str) -> (Option<String>, String) {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        // OpenAI: {"error": {"message", "type", "code"}}; Anthropic: {"type": "error",
        // "error": {"type", "message"}}; some servers: {"error": "text"} or {"message"}.
        let err = v.get("error").unwrap_or(&v);
        if let Some(s) = err.as_str() {
            return (None, s.to_owned());
        }
        let kind = err
            .get("type")
            .or_else(|| err.get("code"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(m) = err.get("message").and_then(Value::as_str) {
            return (kind, m.to_owned());
        }
        if let Some(m) = v.get("detail").and_then(Value::as_str) {
            return (kind, m.to_owned());
        }
    }
    let t = body.trim();
    if t.is_empty() {
        return (None, "(empty body)".into());
    }
    (None, shorten(t, 500))
}

pub(crate) fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_api_root_is_the_given_one_trimmed_else_the_providers() {
        let unset = "IRONLOOP_TEST_NEVER_SET_BASE_URL";
        let with = |base: Option<&str>| HttpSettings {
            base_url: base.map(Into::into),
            ..Default::default()
        };
        let root = with(Some(" http://h:1/v1/ ")).api_root(unset, "https://d/v1");
        assert_eq!(root, "http://h:1/v1");
        assert_eq!(with(None).api_root(unset, "https://d/v1"), "https://d/v1");
        assert_eq!(with(Some("  ")).api_root(unset, "https://d/"), "https://d");
    }

    #[test]
    fn tool_call_arguments_parse_or_become_invalid() {
        let ok = finish_tool_call(Some("c1".into()), Some("add".into()), r#"{"a": 1}"#).unwrap();
        assert_eq!(ok.arguments, json!({"a": 1}));
        let empty = finish_tool_call(Some("c2".into()), Some("now".into()), "").unwrap();
        assert_eq!(empty.arguments, json!({}));
        let bad = finish_tool_call(Some("c3".into()), Some("add".into()), "{\"a\": ").unwrap_err();
        assert_eq!(bad.id.as_deref(), Some("c3"));
        assert_eq!(bad.args.as_deref(), Some("{\"a\": "));
        assert!(bad.error.unwrap().contains("not valid JSON"));
        let arr = finish_tool_call(None, Some("add".into()), "[1]").unwrap_err();
        assert!(arr.error.unwrap().contains("an array"));
        assert!(arr.id.unwrap().starts_with("call_"));
        let noname = finish_tool_call(Some("c4".into()), None, "{}").unwrap_err();
        assert!(noname.error.unwrap().contains("no function name"));
    }

    #[test]
    fn errors_redact_the_key_and_classify() {
        let e = ModelError::Api {
            provider: "openai",
            status: 401,
            kind: Some("invalid_request_error".into()),
            message: "Incorrect API key provided: sk-secret-123".into(),
            retry_after: None,
        }
        .redact(&crate::secrets::Secrets::new(
            ["sk-secret-123".to_owned()],
            [],
        ));
        let text = e.to_string();
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert!(text.contains("HTTP 401 (invalid_request_error)"), "{text}");
        assert!(!e.is_retryable());
        assert_eq!(e.status(), Some(401));
        let busy = ModelError::Api {
            provider: "anthropic",
            status: 529,
            kind: None,
            message: "Overloaded".into(),
            retry_after: None,
        };
        assert!(busy.is_retryable());
    }

    #[test]
    fn error_details_from_both_providers() {
        let (k, m) = error_detail(
            r#"{"error": {"message": "bad tools", "type": "invalid_request_error", "param": null}}"#,
        );
        assert_eq!(
            (k.as_deref(), m.as_str()),
            (Some("invalid_request_error"), "bad tools")
        );
        let (k, m) = error_detail(
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        );
        assert_eq!(
            (k.as_deref(), m.as_str()),
            (Some("overloaded_error"), "Overloaded")
        );
        assert_eq!(
            error_detail("<html>bad gateway</html>").1,
            "<html>bad gateway</html>"
        );
    }

    #[test]
    fn response_format_names_come_from_titles() {
        let f = ResponseFormat::new(json!({"title": "Weather Report", "type": "object"}));
        assert_eq!(f.name, "Weather_Report");
        assert_eq!(
            ResponseFormat::new(json!({"type": "object"})).name,
            "response"
        );
    }
}
