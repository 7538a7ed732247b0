//! The OpenAI Chat Completions API (`POST {base_url}/chat/completions`), as spoken by
//! OpenAI and the OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio,
//! OpenRouter…).

use async_trait::async_trait;
use eventsource_stream::Event;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use super::http::{endpoint, model_secrets, Transport};
use super::sse::{chat_stream, event_json, SseParser};
use super::{
    ai_message, check_finish, finish_tool_call, resolve_key, with_reasoning, BodyFields, ChatChunk,
    ChatModel, ChatRequest, ChatStream, Finish, HttpSettings, ModelError,
};
use crate::message::{Content, ContentPart, InvalidToolCall, Message, MessageKind, Usage};
use std::sync::Arc;

use crate::tool::{ToolCall, ToolDefinition};

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const PROVIDER: &str = "openai";

/// A chat model behind the OpenAI Chat Completions API.
///
/// The key comes from [`HttpSettings::api_key`] or `OPENAI_API_KEY`, the API root from
/// [`HttpSettings::base_url`], `OPENAI_BASE_URL` or `https://api.openai.com/v1`. A
/// key is required for OpenAI itself; a server at another `base_url` gets no
/// `Authorization` header when there is no key.
pub struct OpenAIChat {
    model: String,
    settings: HttpSettings,
    transport: Transport,
    official: bool,
}

impl std::fmt::Debug for OpenAIChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAIChat")
            .field("model", &self.model)
            .field("url", &self.transport.url())
            .finish()
    }
}

/// Where an OpenAI-compatible client sends its requests, and with what key: the API
/// root from `base_url`, `OPENAI_BASE_URL` or OpenAI's; the key from `api_key` or
/// `OPENAI_API_KEY` (required by OpenAI itself, `who` naming the client in the
/// error); the settings' headers plus the bearer header. Shared by the chat and
/// embeddings clients.
pub(crate) struct Access {
    pub base: String,
    pub key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub official: bool,
}

pub(crate) fn access(settings: &HttpSettings, who: &str) -> Result<Access, ModelError> {
    let base = settings
        .base_url
        .clone()
        .or_else(|| std::env::var("OPENAI_BASE_URL").ok())
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_owned());
    let base = base.trim().trim_end_matches('/').to_owned();
    let official = base.starts_with("https://api.openai.com");
    let key = resolve_key(settings.api_key.as_deref(), "OPENAI_API_KEY");
    if key.is_none() && official {
        return Err(ModelError::Config(format!(
            "{who} needs an API key: pass api_key=... or set OPENAI_API_KEY \
             (a local OpenAI-compatible server needs only base_url=...)"
        )));
    }
    let mut headers = settings.headers.clone();
    if let Some(k) = &key {
        headers.push(("authorization".into(), format!("Bearer {k}")));
    }
    Ok(Access {
        base,
        key,
        headers,
        official,
    })
}

impl OpenAIChat {
    pub fn new(model: impl Into<String>, settings: HttpSettings) -> Result<Self, ModelError> {
        let model = model.into();
        let Access {
            base,
            key,
            headers,
            official,
        } = access(&settings, "OpenAIChat")?;
        let url = endpoint(&base, "/chat/completions");
        let secrets = model_secrets(key.as_deref(), &settings.headers, &url);
        let transport = Transport::new(
            PROVIDER,
            url,
            headers,
            secrets,
            settings.timeout,
            settings.retry,
        )?;
        Ok(OpenAIChat {
            model,
            settings,
            transport,
            official,
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        self.transport.url()
    }

    /// The endpoint as it may be shown: secrets in it (a `?key=`) scrubbed.
    pub fn shown_url(&self) -> String {
        self.transport.shown_url()
    }

    /// The request body for `req`, as a JSON tree (for inspection and tests; requests
    /// send [`OpenAIChat::body`], which serialises to the same JSON).
    pub fn request_body(&self, req: &ChatRequest, stream: bool) -> Value {
        serde_json::to_value(self.body(req, stream)).unwrap_or_default()
    }

    /// The request body for `req`, serialised straight from the request: a JSON tree
    /// built first cloned every message of the history for every request.
    pub fn body<'a>(&'a self, req: &'a ChatRequest, stream: bool) -> impl Serialize + 'a {
        Body {
            chat: self,
            req,
            stream,
        }
    }
}

struct Body<'a> {
    chat: &'a OpenAIChat,
    req: &'a ChatRequest,
    stream: bool,
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

#[async_trait]
impl ChatModel for OpenAIChat {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.model
    }

    async fn invoke(&self, req: ChatRequest) -> Result<Message, ModelError> {
        let r = self
            .transport
            .post_parsed(&self.body(&req, false), Response::parse)
            .await?;
        let id = crate::message::new_id();
        match r {
            Response::Typed(r) => r.message(id),
            Response::Tree(v) => parse_response(id, &v),
        }
        .map_err(|e| self.transport.redact(e))
    }

    async fn stream(&self, req: ChatRequest) -> Result<ChatStream, ModelError> {
        let resp = self.transport.post_stream(&self.body(&req, true)).await?;
        let id = crate::message::new_id();
        Ok(chat_stream(
            PROVIDER,
            id.clone(),
            resp,
            StreamParser::new(id),
            self.transport.timeout,
            self.transport.secrets(),
        ))
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
            ContentPart::Json { value } => match super::images::standard_image_url(value) {
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
struct OpenAIMessage<'a>(&'a Message);

impl<'a> OpenAIMessage<'a> {
    /// `None` for a remove marker (it is not sent).
    fn of(m: &'a Message) -> Option<Self> {
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
                    ContentPart::Json { value } => super::images::standard_image_url(value).is_some(),
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

fn finish_kind(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("stop") | Some("tool_calls") | Some("function_call") => Finish::Normal,
        Some("length") => Finish::Length,
        Some("content_filter") => Finish::Filtered,
        Some(_) => Finish::Unknown,
    }
}

/// The `usage` object of a response or a stream's chunk, read leniently (a count of
/// another type is absent).
fn completion_usage(v: &Value) -> Option<CompletionUsage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let detail = |p: &str| u.pointer(p).and_then(Value::as_u64);
    let details = |cached_tokens, reasoning_tokens| {
        Some(TokenDetails {
            cached_tokens,
            reasoning_tokens,
        })
    };
    Some(CompletionUsage {
        prompt_tokens: n("prompt_tokens"),
        completion_tokens: n("completion_tokens"),
        total_tokens: n("total_tokens"),
        prompt_tokens_details: details(detail("/prompt_tokens_details/cached_tokens"), None),
        completion_tokens_details: details(
            None,
            detail("/completion_tokens_details/reasoning_tokens"),
        ),
    })
}

/// The reasoning text OpenAI-compatible servers add beside the content:
/// `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning` (OpenRouter, newer
/// vLLM). OpenAI's own API does not return it.
fn reasoning_of(msg: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|k| msg.get(*k).and_then(Value::as_str))
        .filter(|r| !r.is_empty())
}

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn shape_error(message: impl Into<String>) -> ModelError {
    ModelError::Response {
        provider: PROVIDER,
        message: message.into(),
    }
}

/// An error object inside a 200 response or a stream (some servers report failures
/// that way).
fn embedded_error(v: &Value) -> Option<ModelError> {
    let e = v.get("error").filter(|e| !e.is_null())?;
    let (kind, message) = super::error_detail(&json!({ "error": e }).to_string());
    Some(shape_error(format!(
        "the provider reported an error{}: {message}",
        kind.map(|k| format!(" ({k})")).unwrap_or_default()
    )))
}

/// A non-streamed response: read into the shape OpenAI sends (no JSON tree, no map
/// per object), or, when it has another shape (an error inside, no choice, a field of
/// another type, a content list), as a tree that [`parse_response`] reads leniently.
/// Both give the same message for a response of the usual shape.
enum Response {
    Typed(Completion),
    Tree(Value),
}

impl Response {
    fn parse(bytes: &[u8]) -> serde_json::Result<Response> {
        match serde_json::from_slice::<Completion>(bytes) {
            Ok(c) if c.error.is_none() && !c.choices.is_empty() => Ok(Response::Typed(c)),
            _ => serde_json::from_slice(bytes).map(Response::Tree),
        }
    }
}

/// The message of a response read without a JSON tree, `None` when it has not the
/// usual shape (for tests: the two ways must agree).
#[cfg(test)]
pub(crate) fn read_typed(id: String, bytes: &[u8]) -> Option<Result<Message, ModelError>> {
    match Response::parse(bytes).ok()? {
        Response::Typed(c) => Some(c.message(id)),
        Response::Tree(_) => None,
    }
}

/// A `chat.completion` of the usual shape (fields ironloop does not read are skipped).
#[derive(serde::Deserialize)]
struct Completion {
    /// Only whether it is there: a response with an error goes the lenient way.
    error: Option<serde::de::IgnoredAny>,
    choices: Vec<CompletionChoice>,
    usage: Option<CompletionUsage>,
}

#[derive(serde::Deserialize)]
struct CompletionChoice {
    message: CompletionMessage,
    finish_reason: Option<String>,
}

#[derive(serde::Deserialize)]
struct CompletionMessage {
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<CompletionCall>>,
    function_call: Option<CompletionFunction>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
}

#[derive(serde::Deserialize)]
struct CompletionCall {
    id: Option<String>,
    function: Option<CompletionFunction>,
}

#[derive(serde::Deserialize)]
struct CompletionFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(serde::Deserialize)]
struct CompletionUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
    prompt_tokens_details: Option<TokenDetails>,
    completion_tokens_details: Option<TokenDetails>,
}

impl CompletionUsage {
    /// The usage as ironloop keeps it (a total left out is the sum of the two counts).
    fn usage(self) -> Usage {
        let (i, o) = (
            self.prompt_tokens.unwrap_or(0),
            self.completion_tokens.unwrap_or(0),
        );
        Usage {
            total_tokens: self.total_tokens.unwrap_or(i + o),
            cache_read: self.prompt_tokens_details.and_then(|d| d.cached_tokens),
            reasoning: self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens),
            ..Usage::new(i, o)
        }
    }
}

#[derive(serde::Deserialize)]
struct TokenDetails {
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

impl Completion {
    /// What [`parse_response`] makes of the same response.
    fn message(self, id: String) -> Result<Message, ModelError> {
        let usage = self.usage.map(CompletionUsage::usage);
        let Some(choice) = self.choices.into_iter().next() else {
            return Err(shape_error("the response has no choices"));
        };
        let msg = choice.message;
        let text = match (msg.content, msg.refusal) {
            (Some(t), _) if !t.is_empty() => t,
            (_, Some(r)) => r,
            (t, None) => t.unwrap_or_default(),
        };
        let calls = match (msg.tool_calls, msg.function_call) {
            (Some(list), _) => list
                .into_iter()
                .map(|c| {
                    let (name, args) = c.function.map_or((None, None), |f| (f.name, f.arguments));
                    finish_tool_call(c.id, name, args.as_deref().unwrap_or(""))
                })
                .collect(),
            // The legacy single function call.
            (None, Some(f)) => vec![finish_tool_call(
                None,
                f.name,
                f.arguments.as_deref().unwrap_or(""),
            )],
            (None, None) => Vec::new(),
        };
        let reasoning = msg.reasoning_content.or(msg.reasoning);
        answer(
            id,
            text,
            calls,
            choice.finish_reason.as_deref(),
            usage,
            reasoning.as_deref().filter(|r| !r.is_empty()),
        )
    }
}

/// The AI message of a non-streamed response, read from its JSON tree (see
/// [`Response`]).
pub(crate) fn parse_response(id: String, v: &Value) -> Result<Message, ModelError> {
    if let Some(e) = embedded_error(v) {
        return Err(e);
    }
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| shape_error("the response has no choices"))?;
    let msg = choice
        .get("message")
        .ok_or_else(|| shape_error("the response's choice has no message"))?;
    let mut text = text_of(msg.get("content"));
    if text.is_empty() {
        if let Some(r) = msg.get("refusal").and_then(Value::as_str) {
            text = r.to_owned();
        }
    }
    let mut calls = Vec::new();
    if let Some(list) = msg.get("tool_calls").and_then(Value::as_array) {
        for c in list {
            let f = c.get("function");
            let name = f
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let id = c.get("id").and_then(Value::as_str).map(str::to_owned);
            calls.push(match f.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => finish_tool_call(id, name, s),
                // Some servers send the arguments as an object.
                Some(obj @ Value::Object(_)) => finish_tool_call(id, name, &obj.to_string()),
                Some(Value::Null) | None => finish_tool_call(id, name, ""),
                Some(other) => finish_tool_call(id, name, &other.to_string()),
            });
        }
    } else if let Some(f) = msg.get("function_call").filter(|f| f.is_object()) {
        // The legacy single function call.
        let name = f.get("name").and_then(Value::as_str).map(str::to_owned);
        let args = f.get("arguments").and_then(Value::as_str).unwrap_or("");
        calls.push(finish_tool_call(None, name, args));
    }
    let reason = choice.get("finish_reason").and_then(Value::as_str);
    answer(
        id,
        text,
        calls,
        reason,
        completion_usage(v).map(CompletionUsage::usage),
        reasoning_of(msg),
    )
}

/// The AI message of a response's first choice, from what it says.
fn answer(
    id: String,
    text: String,
    calls: Vec<Result<ToolCall, InvalidToolCall>>,
    reason: Option<&str>,
    usage: Option<Usage>,
    reasoning: Option<&str>,
) -> Result<Message, ModelError> {
    let (mut valid, mut invalid) = (Vec::new(), Vec::new());
    for c in calls {
        match c {
            Ok(c) => valid.push(c),
            Err(i) => invalid.push(i),
        }
    }
    let m = ai_message(id, text, valid, invalid, usage);
    check_finish(PROVIDER, finish_kind(reason), reason, &m)?;
    let reasoning = reasoning.map(|r| vec![json!({"type": "reasoning", "reasoning": r})]);
    Ok(with_reasoning(m, reasoning.unwrap_or_default()))
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    args: String,
}

/// Assembles `chat.completion.chunk` events.
pub(crate) struct StreamParser {
    id: String,
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl StreamParser {
    pub(crate) fn new(id: String) -> Self {
        StreamParser {
            id,
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            finish_reason: None,
            usage: None,
        }
    }

    fn call_delta(&mut self, d: ChunkCall, out: &mut Vec<ChatChunk>) {
        let index = match d.index {
            Some(i) => i as usize,
            // No index (some servers): a new id starts a new call, else the last one.
            None => match &d.id {
                Some(i) if !self.calls.iter().any(|c| c.id.as_ref() == Some(i)) => self.calls.len(),
                _ => self.calls.len().saturating_sub(1),
            },
        };
        // Guard against absurd indexes from a broken server.
        if index > self.calls.len() + 128 {
            return;
        }
        while self.calls.len() <= index {
            self.calls.push(PartialCall::default());
        }
        let (name, args) = d.function.map_or((None, None), |f| (f.name, f.arguments));
        let name = name.filter(|n| !n.is_empty());
        let args = args.unwrap_or_default();
        let call = &mut self.calls[index];
        if call.id.is_none() {
            call.id = d.id.clone();
        }
        if let Some(n) = &name {
            match &mut call.name {
                // A name sent in pieces (rare) is joined; a repeated name is ignored.
                Some(existing) if existing != n => existing.push_str(n),
                Some(_) => {}
                None => call.name = Some(n.clone()),
            }
        }
        call.args.push_str(&args);
        out.push(ChatChunk::ToolCallDelta {
            index,
            id: d.id,
            name,
            arguments: args,
        });
    }

    /// Takes in one chunk, however it was read.
    fn on_chunk(&mut self, chunk: Chunk, out: &mut Vec<ChatChunk>) {
        if let Some(u) = chunk.usage {
            self.usage = Some(u.usage());
        }
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                let reasoning = delta.reasoning_content.or(delta.reasoning);
                if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                    self.reasoning.push_str(&r);
                    out.push(ChatChunk::Reasoning(
                        json!({"type": "reasoning", "reasoning": r}),
                    ));
                }
                let piece = match (delta.content, delta.refusal) {
                    (Some(t), _) if !t.is_empty() => t,
                    (_, Some(r)) => r,
                    _ => String::new(),
                };
                if !piece.is_empty() {
                    self.text.push_str(&piece);
                    out.push(ChatChunk::Text(piece));
                }
                for d in delta.tool_calls.into_iter().flatten() {
                    self.call_delta(d, out);
                }
            }
            if let Some(r) = choice.finish_reason {
                self.finish_reason = Some(r);
            }
        }
    }
}

/// A `chat.completion.chunk` as ironloop reads it: deserialised straight from the
/// event when it has the usual shape (no JSON tree), else built from a tree read
/// leniently (a content list, arguments as an object, a field of another type). The
/// two ways give the same chunk for an event of the usual shape.
#[derive(serde::Deserialize)]
pub(crate) struct Chunk {
    /// Only whether it is there: an event with an error goes the lenient way.
    error: Option<serde::de::IgnoredAny>,
    choices: Option<Vec<ChunkChoice>>,
    usage: Option<CompletionUsage>,
}

#[derive(serde::Deserialize)]
struct ChunkChoice {
    index: Option<u64>,
    delta: Option<ChunkDelta>,
    finish_reason: Option<String>,
}

#[derive(serde::Deserialize)]
struct ChunkDelta {
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<ChunkCall>>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
}

#[derive(serde::Deserialize)]
struct ChunkCall {
    index: Option<u64>,
    id: Option<String>,
    function: Option<CompletionFunction>,
}

impl Chunk {
    /// The chunk in an event's data: typed when it has the usual shape, else from its
    /// tree; an error the event reports is the error.
    fn read(event: &Event) -> Result<Chunk, ModelError> {
        match serde_json::from_str::<Chunk>(&event.data) {
            Ok(c) if c.error.is_none() => Ok(c),
            _ => {
                let v = event_json(PROVIDER, event)?;
                match embedded_error(&v) {
                    Some(e) => Err(e),
                    None => Ok(Chunk::from_tree(&v)),
                }
            }
        }
    }

    /// The chunk a tree says, read leniently: a field of another type is absent, a
    /// content list is its text, arguments that are no string are their JSON text.
    pub(crate) fn from_tree(v: &Value) -> Chunk {
        let str_at = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let choices = v.get("choices").and_then(Value::as_array).map(|list| {
            list.iter()
                .map(|c| ChunkChoice {
                    index: c.get("index").and_then(Value::as_u64),
                    delta: c.get("delta").filter(|d| !d.is_null()).map(|d| ChunkDelta {
                        content: d
                            .get("content")
                            .filter(|c| !c.is_null())
                            .map(|c| text_of(Some(c))),
                        refusal: str_at(d, "refusal"),
                        tool_calls: d.get("tool_calls").and_then(Value::as_array).map(|calls| {
                            calls
                                .iter()
                                .map(|d| ChunkCall {
                                    index: d.get("index").and_then(Value::as_u64),
                                    id: str_at(d, "id"),
                                    function: d.get("function").map(|f| CompletionFunction {
                                        name: str_at(f, "name"),
                                        arguments: match f.get("arguments") {
                                            Some(Value::String(s)) => Some(s.clone()),
                                            Some(Value::Null) | None => None,
                                            Some(other) => Some(other.to_string()),
                                        },
                                    }),
                                })
                                .collect()
                        }),
                        reasoning_content: str_at(d, "reasoning_content"),
                        reasoning: str_at(d, "reasoning"),
                    }),
                    finish_reason: str_at(c, "finish_reason"),
                })
                .collect()
        });
        Chunk {
            error: None,
            choices,
            usage: completion_usage(v),
        }
    }
}

/// What a stream of events' data gives: the chunks and the message (or the first
/// error), each event read as [`StreamParser`] reads it or, with `tree`, from its JSON
/// tree (for tests: the two ways must agree).
#[cfg(test)]
pub(crate) fn read_stream(
    data: &[String],
    tree: bool,
) -> (Vec<ChatChunk>, Result<Message, ModelError>) {
    let mut p = StreamParser::new("r".into());
    let mut out = Vec::new();
    for d in data {
        let event = Event {
            data: d.clone(),
            ..Default::default()
        };
        let read = if tree {
            event_json(PROVIDER, &event).and_then(|v| match embedded_error(&v) {
                Some(e) => Err(e),
                None => {
                    p.on_chunk(Chunk::from_tree(&v), &mut out);
                    Ok(())
                }
            })
        } else {
            p.on_event(&event, &mut out).map(|_| ())
        };
        if let Err(e) = read {
            return (out, Err(e));
        }
    }
    let m = p.finish(true);
    (out, m)
}

impl SseParser for StreamParser {
    fn on_event(&mut self, event: &Event, out: &mut Vec<ChatChunk>) -> Result<bool, ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk = Chunk::read(event)?;
        self.on_chunk(chunk, out);
        Ok(false)
    }

    fn finish(&mut self, complete: bool) -> Result<Message, ModelError> {
        if !complete && self.finish_reason.is_none() {
            return Err(shape_error(format!(
                "the stream ended before its end marker (no finish_reason, no [DONE]) after \
                 {} characters of text and {} tool call(s): the response is truncated",
                self.text.chars().count(),
                self.calls.len()
            )));
        }
        let mut calls = Vec::new();
        let mut invalid = Vec::new();
        for c in std::mem::take(&mut self.calls) {
            match finish_tool_call(c.id, c.name, &c.args) {
                Ok(c) => calls.push(c),
                Err(i) => invalid.push(i),
            }
        }
        let m = ai_message(
            self.id.clone(),
            std::mem::take(&mut self.text),
            calls,
            invalid,
            self.usage,
        );
        let reason = self.finish_reason.as_deref();
        check_finish(PROVIDER, finish_kind(reason), reason, &m)?;
        let reasoning = std::mem::take(&mut self.reasoning);
        Ok(if reasoning.is_empty() {
            m
        } else {
            with_reasoning(
                m,
                vec![json!({"type": "reasoning", "reasoning": reasoning})],
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message in the Chat Completions shape, as a JSON tree; `None` for a remove
    /// marker.
    fn message_to_openai(m: &Message) -> Option<Value> {
        OpenAIMessage::of(m).map(|m| serde_json::to_value(m).unwrap())
    }
    use std::sync::Arc;

    #[test]
    fn a_usual_response_is_read_without_a_tree() {
        let v = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "refusal": null,
                    "tool_calls": [
                        {"id": "call_a", "type": "function",
                         "function": {"name": "lookup", "arguments": "{\"query\": \"0.0\"}"}},
                        {"id": "call_b", "type": "function",
                         "function": {"name": "lookup", "arguments": "{"}}]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30,
                      "prompt_tokens_details": {"cached_tokens": 5}},
        });
        let typed = read_typed("m".into(), &serde_json::to_vec(&v).unwrap())
            .expect("the usual shape is read without a tree")
            .unwrap();
        assert_eq!(typed, parse_response("m".into(), &v).unwrap());
        assert_eq!(typed.tool_calls()[0].arguments, json!({"query": "0.0"}));
        let MessageKind::Ai {
            invalid_tool_calls,
            usage,
            ..
        } = &typed.kind
        else {
            panic!("{typed:?}")
        };
        assert_eq!(invalid_tool_calls[0].id.as_deref(), Some("call_b"));
        assert_eq!(usage.unwrap().cache_read, Some(5));
    }

    #[test]
    fn other_shapes_are_read_from_a_tree() {
        let choice = |message: Value| json!({"choices": [{"message": message}]});
        for v in [
            choice(json!({"content": [{"type": "text", "text": "hi"}]})),
            choice(
                json!({"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}]}),
            ),
            json!({"error": {"message": "overloaded"}, "choices": [{"message": {"content": "x"}}]}),
            json!({"choices": []}),
            json!({"choices": [{"message": {"content": 5}}]}),
        ] {
            assert!(
                read_typed("m".into(), &serde_json::to_vec(&v).unwrap()).is_none(),
                "{v}"
            );
        }
        let r = Response::parse(br#"{"choices": [{"message": {"content": ["a"]}}]}"#).unwrap();
        assert!(matches!(r, Response::Tree(_)));
        assert!(Response::parse(b"not json").is_err());
    }

    fn ev(data: &str) -> Event {
        Event {
            data: data.into(),
            ..Default::default()
        }
    }

    #[test]
    fn history_maps_to_chat_completions() {
        let ai = Message::ai("", vec![ToolCall::new("c1", "add", json!({"a": 1}))]);
        let tool = Message::tool("2", "c1", "add", crate::message::ToolStatus::Success);
        let v: Vec<Value> = [Message::system("s"), Message::human("h"), ai, tool]
            .iter()
            .filter_map(message_to_openai)
            .collect();
        assert_eq!(v[0], json!({"role": "system", "content": "s"}));
        assert_eq!(v[1], json!({"role": "user", "content": "h"}));
        assert_eq!(v[2]["content"], Value::Null);
        assert_eq!(
            v[2]["tool_calls"][0]["function"]["arguments"],
            json!("{\"a\":1}")
        );
        assert_eq!(
            v[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "2"})
        );
    }

    #[test]
    fn a_tool_result_with_an_image_goes_as_content_parts() {
        let pixel = "data:image/png;base64,iVBORw0KGgo=";
        let tool = Message::tool(
            Content::Parts(vec![
                ContentPart::Text {
                    text: "the chart:".into(),
                },
                ContentPart::Image { url: pixel.into() },
            ]),
            "c1",
            "chart",
            crate::message::ToolStatus::Success,
        );
        assert_eq!(
            message_to_openai(&tool).unwrap(),
            json!({"role": "tool", "tool_call_id": "c1", "content": [
                {"type": "text", "text": "the chart:"},
                {"type": "image_url", "image_url": {"url": pixel}},
            ]})
        );
    }

    #[test]
    fn response_with_bad_arguments_keeps_the_good_calls() {
        let v = json!({
            "id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{oops"}}
                ]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
        });
        let m = parse_response("m1".into(), &v).unwrap();
        let MessageKind::Ai {
            tool_calls,
            invalid_tool_calls,
            usage,
        } = &m.kind
        else {
            panic!()
        };
        assert_eq!(tool_calls.len(), 1);
        assert_eq!(invalid_tool_calls[0].name.as_deref(), Some("g"));
        assert_eq!(usage.unwrap().total_tokens, 12);
    }

    #[test]
    fn stream_assembles_tool_call_deltas() {
        let mut p = StreamParser::new("m".into());
        let mut out = Vec::new();
        for d in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"add","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" 2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ] {
            assert!(!p.on_event(&ev(d), &mut out).unwrap());
        }
        assert!(p.on_event(&ev("[DONE]"), &mut out).unwrap());
        let m = p.finish(true).unwrap();
        assert_eq!(m.tool_calls()[0].arguments, json!({"a": 2}));
        assert_eq!(out[0], ChatChunk::Text("Hi".into()));
        let _ = Arc::new(m);
    }

    #[test]
    fn chunks_of_other_shapes_are_read_from_a_tree() {
        let data = [
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Hi"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"add","arguments":{"a":2}}}]}}]}"#,
            r#"{"choices":[{"index":"0","delta":{"content":"!"},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4.0}}"#,
        ]
        .map(String::from);
        let (out, m) = read_stream(&data, false);
        assert_eq!(out[0], ChatChunk::Text("Hi".into()));
        assert_eq!(out.last(), Some(&ChatChunk::Text("!".into())));
        let m = m.unwrap();
        assert_eq!(m.content.text(), "Hi!");
        assert_eq!(m.tool_calls()[0].arguments, json!({"a": 2}));
        let MessageKind::Ai { usage, .. } = &m.kind else {
            panic!("{m:?}")
        };
        assert_eq!(usage.unwrap().total_tokens, 3);

        let error = [r#"{"error":{"message":"overloaded"},"choices":[]}"#.to_owned()];
        let e = read_stream(&error, false).1.unwrap_err();
        assert!(e.to_string().contains("overloaded"), "{e}");
        let e = read_stream(&["{oops".to_owned()], false).1.unwrap_err();
        assert!(e.to_string().contains("not JSON"), "{e}");
    }

    #[test]
    fn truncated_stream_is_an_error() {
        let mut p = StreamParser::new("m".into());
        let mut out = Vec::new();
        p.on_event(
            &ev(r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#),
            &mut out,
        )
        .unwrap();
        let e = p.finish(false).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}
