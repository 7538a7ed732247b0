//! The Anthropic Messages API (`POST {base_url}/v1/messages`).

use std::collections::BTreeMap;

use async_trait::async_trait;
use eventsource_stream::Event;
use serde::Serialize;
use serde_json::{json, Value};

mod request;

use request::Body;

use super::http::{endpoint, ChatBody, OverHttp, Transport};
use super::sse::{chat_stream, event_json, SseParser};
use super::{
    ai_message, check_finish, finish_tool_call, resolve_key, with_reasoning, ChatChunk, ChatModel,
    ChatRequest, ChatStream, Finish, HttpSettings, ModelError,
};
use crate::message::{Message, Usage};

pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
const PROVIDER: &str = "anthropic";
/// `max_tokens` is required by the Messages API; this is sent when none is set.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A chat model behind the Anthropic Messages API.
///
/// The key comes from [`HttpSettings::api_key`] or `ANTHROPIC_API_KEY`, the API root
/// from [`HttpSettings::base_url`], `ANTHROPIC_BASE_URL` or
/// `https://api.anthropic.com`. System messages become the `system` field, tool
/// results `tool_result` blocks in a user turn (consecutive turns of one role are
/// merged, as the API requires). Structured output is a forced call of a tool whose
/// input schema is the schema; its input comes back as the message's JSON text.
pub struct AnthropicChat {
    model: String,
    settings: HttpSettings,
    transport: Transport,
    /// Extended thinking, sent as the request's `thinking` field unless a call sets
    /// its own (`{"type": "enabled", "budget_tokens": N}`).
    thinking: Option<Value>,
    /// Prompt-caching breakpoints on the system prompt, the tools and the latest
    /// turn (on by default).
    prompt_caching: bool,
    /// Made for Anthropic's API with no key: every call fails with this error, sent
    /// nowhere. Not at construction, as LangChain's `ChatAnthropic`: a program (or a
    /// middleware's default model) may make a model it never calls.
    missing_key: Option<ModelError>,
}

impl std::fmt::Debug for AnthropicChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.debug_client(f, "AnthropicChat", &self.model)
    }
}

/// How a structured answer travels: the forced tool's name, and whether the schema
/// was wrapped in `{"value": ...}` (the input of a tool must be an object).
#[derive(Debug, Clone)]
pub(super) struct Structured {
    name: String,
    wrapped: bool,
}

impl AnthropicChat {
    pub fn new(model: impl Into<String>, settings: HttpSettings) -> Result<Self, ModelError> {
        let model = model.into();
        let base = settings.api_root("ANTHROPIC_BASE_URL", ANTHROPIC_DEFAULT_BASE_URL);
        let official = base.starts_with("https://api.anthropic.com");
        let key = resolve_key(settings.api_key.as_deref(), "ANTHROPIC_API_KEY");
        let missing_key = (key.is_none() && official).then(|| {
            ModelError::Config(format!(
                "AnthropicChat({model:?}) was made without an API key and cannot call \
                 Anthropic's API: pass api_key=... or set ANTHROPIC_API_KEY before making it"
            ))
        });
        let root = base
            .split('?')
            .next()
            .unwrap_or_default()
            .trim_end_matches('/');
        let url = endpoint(
            &base,
            if root.ends_with("/v1") {
                "/messages"
            } else {
                "/v1/messages"
            },
        );
        let mut headers = vec![("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned())];
        headers.extend(settings.headers.iter().cloned());
        if let Some(k) = &key {
            headers.push(("x-api-key".into(), k.clone()));
        }
        let transport = Transport::for_model(PROVIDER, url, headers, key.as_deref(), &settings)?;
        Ok(AnthropicChat {
            model,
            settings,
            transport,
            thinking: None,
            prompt_caching: true,
            missing_key,
        })
    }

    /// The error every call of a model made without a key fails with.
    fn keyed(&self) -> Result<(), ModelError> {
        match &self.missing_key {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Turns extended thinking on for every request (`{"type": "enabled",
    /// "budget_tokens": N}`), or off with `None`.
    pub fn with_thinking(mut self, thinking: Option<Value>) -> Self {
        self.thinking = thinking;
        self
    }

    /// Whether requests carry `cache_control` breakpoints (system prompt, last tool,
    /// latest turn). On by default: a prompt below the model's cacheable minimum is
    /// simply not cached, and a cache read costs a tenth of the input price.
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }
}

impl OverHttp for AnthropicChat {
    fn transport(&self) -> &Transport {
        &self.transport
    }
}

impl ChatBody for AnthropicChat {
    fn body<'a>(&'a self, req: &'a ChatRequest, stream: bool) -> impl Serialize + 'a {
        Body::new(self, req, stream).0
    }
}

#[async_trait]
impl ChatModel for AnthropicChat {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.model
    }

    async fn invoke(&self, req: ChatRequest) -> Result<Message, ModelError> {
        self.keyed()?;
        let (body, structured) = Body::new(self, &req, false);
        let v = self.transport.post_json(&body).await?;
        parse_response(crate::message::new_id(), &v, structured.as_ref())
            .map_err(|e| self.transport.redact(e))
    }

    async fn stream(&self, req: ChatRequest) -> Result<ChatStream, ModelError> {
        self.keyed()?;
        let (body, structured) = Body::new(self, &req, true);
        let resp = self.transport.post_stream(&body).await?;
        let id = crate::message::new_id();
        Ok(chat_stream(
            PROVIDER,
            id.clone(),
            resp,
            StreamParser::new(id, structured),
            self.transport.timeout,
            self.transport.secrets(),
        ))
    }
}

fn finish_kind(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("end_turn") | Some("tool_use") | Some("stop_sequence") | Some("pause_turn") => {
            Finish::Normal
        }
        Some("max_tokens") | Some("model_context_window_exceeded") => Finish::Length,
        Some("refusal") => Finish::Filtered,
        Some(_) => Finish::Unknown,
    }
}

fn usage_from(u: &Value) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let (read, created) = (
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    let input = n("input_tokens").unwrap_or(0) + read.unwrap_or(0) + created.unwrap_or(0);
    Some(Usage {
        cache_read: read,
        cache_creation: created,
        ..Usage::new(input, n("output_tokens").unwrap_or(0))
    })
}

fn shape_error(message: impl Into<String>) -> ModelError {
    ModelError::Response {
        provider: PROVIDER,
        message: message.into(),
    }
}

fn error_event(v: &Value) -> ModelError {
    let (kind, message) = super::error_detail(&v.to_string());
    shape_error(format!(
        "the provider reported an error{}: {message}",
        kind.map(|k| format!(" ({k})")).unwrap_or_default()
    ))
}

/// The JSON text of a structured answer (unwrapped when it was wrapped).
fn structured_text(s: &Structured, input: &str) -> String {
    let input = if input.trim().is_empty() { "{}" } else { input };
    if !s.wrapped {
        return input.to_owned();
    }
    match serde_json::from_str::<Value>(input) {
        Ok(v) => v
            .get("value")
            .map(|x| x.to_string())
            .unwrap_or_else(|| input.to_owned()),
        Err(_) => input.to_owned(),
    }
}

/// The AI message of a non-streamed response.
pub(super) fn parse_response(
    id: String,
    v: &Value,
    structured: Option<&Structured>,
) -> Result<Message, ModelError> {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_event(v));
    }
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| shape_error("the response has no content list"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut invalid = Vec::new();
    let mut reasoning = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("thinking" | "redacted_thinking") => reasoning.push(b.clone()),
            Some("text") if structured.is_none() => {
                text.push_str(b.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("tool_use") => {
                let name = b.get("name").and_then(Value::as_str).map(str::to_owned);
                let raw = match b.get("input") {
                    Some(Value::Null) | None => String::new(),
                    Some(i) => i.to_string(),
                };
                if let Some(s) = structured.filter(|s| name.as_deref() == Some(&s.name)) {
                    text = structured_text(s, &raw);
                    continue;
                }
                let id = b.get("id").and_then(Value::as_str).map(str::to_owned);
                match finish_tool_call(id, name, &raw) {
                    Ok(c) => calls.push(c),
                    Err(i) => invalid.push(i),
                }
            }
            // Server-tool and other blocks are not kept.
            _ => {}
        }
    }
    let reason = v.get("stop_reason").and_then(Value::as_str);
    let usage = v.get("usage").and_then(usage_from);
    let m = ai_message(id, text, calls, invalid, usage);
    check_finish(PROVIDER, finish_kind(reason), reason, &m)?;
    Ok(with_reasoning(m, reasoning))
}

enum Block {
    Text,
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Kept verbatim: its `data` is encrypted and must go back unchanged.
    Redacted(Value),
    Tool {
        id: Option<String>,
        name: Option<String>,
        json: String,
        structured: bool,
    },
    Other,
}

/// Assembles the Messages streaming events.
pub(super) struct StreamParser {
    id: String,
    structured: Option<Structured>,
    text: String,
    blocks: BTreeMap<usize, Block>,
    stop_reason: Option<String>,
    input_usage: Option<Value>,
    output_tokens: Option<u64>,
    started: bool,
}

impl StreamParser {
    pub(super) fn new(id: String, structured: Option<Structured>) -> Self {
        StreamParser {
            id,
            structured,
            text: String::new(),
            blocks: BTreeMap::new(),
            stop_reason: None,
            input_usage: None,
            output_tokens: None,
            started: false,
        }
    }

    /// Whether structured JSON is streamed as text (an unwrapped schema).
    fn streams_structured_text(&self) -> bool {
        self.structured.as_ref().is_some_and(|s| !s.wrapped)
    }

    /// A `content_block_start`: the block is kept under its index; its first text,
    /// thinking or tool call goes out as a chunk.
    fn block_start(&mut self, v: &Value, index: Option<usize>, out: &mut Vec<ChatChunk>) {
        let b = v.get("content_block").cloned().unwrap_or(Value::Null);
        let index = index.unwrap_or(self.blocks.len());
        let block = match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                if !t.is_empty() && self.structured.is_none() {
                    self.text.push_str(t);
                    out.push(ChatChunk::Text(t.to_owned()));
                }
                Block::Text
            }
            Some("thinking") => {
                let t = b.get("thinking").and_then(Value::as_str).unwrap_or("");
                if !t.is_empty() {
                    out.push(ChatChunk::Reasoning(
                        json!({"type": "thinking", "thinking": t, "index": index}),
                    ));
                }
                Block::Thinking {
                    thinking: t.to_owned(),
                    signature: b
                        .get("signature")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                }
            }
            Some("redacted_thinking") => Block::Redacted(b.clone()),
            Some("tool_use") => {
                let id = b.get("id").and_then(Value::as_str).map(str::to_owned);
                let name = b.get("name").and_then(Value::as_str).map(str::to_owned);
                let structured = self
                    .structured
                    .as_ref()
                    .is_some_and(|s| name.as_deref() == Some(&s.name));
                if !structured {
                    out.push(ChatChunk::ToolCallDelta {
                        index,
                        id: id.clone(),
                        name: name.clone(),
                        arguments: String::new(),
                    });
                }
                Block::Tool {
                    id,
                    name,
                    json: String::new(),
                    structured,
                }
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, block);
    }

    /// A `content_block_delta`: appended to its block and sent as a chunk; a delta
    /// for a block that never started is an error.
    fn block_delta(
        &mut self,
        v: &Value,
        index: Option<usize>,
        out: &mut Vec<ChatChunk>,
    ) -> Result<(), ModelError> {
        let d = v.get("delta").cloned().unwrap_or(Value::Null);
        let streams_text = self.streams_structured_text();
        let block = index.and_then(|i| self.blocks.get_mut(&i));
        match (d.get("type").and_then(Value::as_str), block) {
            (Some("text_delta"), Some(Block::Text)) => {
                let t = d.get("text").and_then(Value::as_str).unwrap_or("");
                if !t.is_empty() && self.structured.is_none() {
                    self.text.push_str(t);
                    out.push(ChatChunk::Text(t.to_owned()));
                }
            }
            (
                Some("input_json_delta"),
                Some(Block::Tool {
                    json, structured, ..
                }),
            ) => {
                let p = d.get("partial_json").and_then(Value::as_str).unwrap_or("");
                json.push_str(p);
                if *structured {
                    if streams_text && !p.is_empty() {
                        out.push(ChatChunk::Text(p.to_owned()));
                    }
                } else {
                    out.push(ChatChunk::ToolCallDelta {
                        index: index.unwrap_or(0),
                        id: None,
                        name: None,
                        arguments: p.to_owned(),
                    });
                }
            }
            (Some("thinking_delta"), Some(Block::Thinking { thinking, .. })) => {
                let t = d.get("thinking").and_then(Value::as_str).unwrap_or("");
                if !t.is_empty() {
                    thinking.push_str(t);
                    out.push(ChatChunk::Reasoning(json!({
                        "type": "thinking", "thinking": t, "index": index.unwrap_or(0)
                    })));
                }
            }
            (Some("signature_delta"), Some(Block::Thinking { signature, .. })) => {
                signature.push_str(d.get("signature").and_then(Value::as_str).unwrap_or(""));
            }
            (Some("text_delta" | "input_json_delta" | "thinking_delta"), None) => {
                return Err(shape_error(format!(
                    "a content_block_delta for block {index:?}, which never started"
                )));
            }
            // Citations and deltas of later block types are not kept.
            _ => {}
        }
        Ok(())
    }
}

impl SseParser for StreamParser {
    fn on_event(&mut self, event: &Event, out: &mut Vec<ChatChunk>) -> Result<bool, ModelError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let v = event_json(PROVIDER, event)?;
        let index = v.get("index").and_then(Value::as_u64).map(|i| i as usize);
        match v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event)
        {
            "message_start" => {
                self.started = true;
                if let Some(u) = v.pointer("/message/usage") {
                    self.input_usage = Some(u.clone());
                    self.output_tokens = u.get("output_tokens").and_then(Value::as_u64);
                }
            }
            "content_block_start" => self.block_start(&v, index, out),
            "content_block_delta" => self.block_delta(&v, index, out)?,
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_owned());
                }
                if let Some(u) = v.get("usage") {
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        self.output_tokens = Some(o);
                    }
                    // Newer API versions repeat the (cumulative) input counts here.
                    if u.get("input_tokens").and_then(Value::as_u64).is_some() {
                        self.input_usage = Some(u.clone());
                    }
                }
            }
            "message_stop" => return Ok(true),
            "error" => return Err(error_event(&v)),
            // ping, content_block_stop, and event types added later.
            _ => {}
        }
        Ok(false)
    }

    fn finish(&mut self, complete: bool) -> Result<Message, ModelError> {
        if !complete {
            return Err(shape_error(format!(
                "the stream ended before message_stop{} after {} characters of text: the \
                 response is truncated",
                if self.started {
                    ""
                } else {
                    " (and before message_start)"
                },
                self.text.chars().count()
            )));
        }
        let mut text = std::mem::take(&mut self.text);
        let mut calls = Vec::new();
        let mut invalid = Vec::new();
        let mut reasoning = Vec::new();
        for (_, b) in std::mem::take(&mut self.blocks) {
            match b {
                Block::Thinking {
                    thinking,
                    signature,
                } => reasoning.push(
                    json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                ),
                Block::Redacted(v) => reasoning.push(v),
                Block::Tool {
                    id,
                    name,
                    json,
                    structured,
                } => {
                    if structured {
                        if let Some(s) = &self.structured {
                            text = structured_text(s, &json);
                        }
                        continue;
                    }
                    match finish_tool_call(id, name, &json) {
                        Ok(c) => calls.push(c),
                        Err(i) => invalid.push(i),
                    }
                }
                Block::Text | Block::Other => {}
            }
        }
        let usage = match (&self.input_usage, self.output_tokens) {
            (None, None) => None,
            (u, o) => {
                let mut u = u.clone().unwrap_or_else(|| json!({}));
                if let Some(o) = o {
                    u["output_tokens"] = json!(o);
                }
                usage_from(&u)
            }
        };
        let m = ai_message(self.id.clone(), text, calls, invalid, usage);
        let reason = self.stop_reason.as_deref();
        check_finish(PROVIDER, finish_kind(reason), reason, &m)?;
        Ok(with_reasoning(m, reasoning))
    }
}

#[cfg(test)]
mod tests {
    use super::request::structured_tool;
    use super::*;
    use crate::message::{Content, ContentPart, MessageKind, ToolStatus};
    use crate::model::ResponseFormat;
    use crate::tool::ToolCall;
    use crate::tool::ToolDefinition;
    use std::sync::Arc;

    use crate::model::sse::data_event as ev;

    #[test]
    fn history_maps_to_messages_api() {
        let msgs: Vec<Arc<Message>> = vec![
            Arc::new(Message::system("be brief")),
            Arc::new(Message::human("hi")),
            Arc::new(Message::ai(
                "",
                vec![
                    ToolCall::new("t1", "add", json!({"a": 1})),
                    ToolCall::new("t2", "now", json!("")),
                ],
            )),
            Arc::new(Message::tool("2", "t1", "add", ToolStatus::Success)),
            Arc::new(Message::tool("boom", "t2", "now", ToolStatus::Error)),
            Arc::new(Message::human("thanks")),
        ];
        let (system, m) = request::turns(&msgs);
        let m = serde_json::to_value(&m).unwrap();
        assert_eq!(system.as_deref(), Some("be brief"));
        assert_eq!(m.as_array().unwrap().len(), 3);
        assert_eq!(m[1]["content"][1]["input"], json!({}));
        assert_eq!(
            m[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "2"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": true},
                {"type": "text", "text": "thanks"},
            ])
        );
    }

    fn chat() -> AnthropicChat {
        let settings = HttpSettings {
            base_url: Some("http://127.0.0.1:9".into()),
            api_key: Some("k".into()),
            ..Default::default()
        };
        AnthropicChat::new("claude", settings).unwrap()
    }

    #[test]
    fn breakpoints_on_the_last_block_that_may_carry_one_and_the_last_tool() {
        let thinking = json!({"type": "thinking", "thinking": "hm", "signature": "s"});
        let req = ChatRequest::new([
            Message::human("hi"),
            Message::ai(
                Content::Parts(vec![
                    ContentPart::Text { text: "ok".into() },
                    ContentPart::Json {
                        value: thinking.clone(),
                    },
                ]),
                vec![],
            ),
        ])
        .with_tools([ToolDefinition::new(
            "add",
            "Adds.",
            json!({"type": "object"}),
        )])
        .with_response_format(ResponseFormat::new(json!({"type": "object"})));
        let body = chat().request_body(&req, false);
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "text", "text": "ok", "cache_control": ephemeral}, thinking])
        );
        assert!(body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none());
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["name"], "response");
        assert_eq!(body["tools"][1]["cache_control"], ephemeral);
        let body = chat().with_prompt_caching(false).request_body(&req, false);
        assert!(!body.to_string().contains("cache_control"));
    }

    #[test]
    fn a_block_that_is_no_object_is_sent_as_it_is() {
        // It used to panic where the breakpoint was added; the API says what is wrong.
        let req = ChatRequest::new([Message::human(Content::Parts(vec![ContentPart::Json {
            value: json!(5),
        }]))]);
        let body = chat().request_body(&req, false);
        assert_eq!(body["messages"][0]["content"], json!([5]));
    }

    #[test]
    fn extra_fields_override_and_come_last() {
        let mut req = ChatRequest::new([Message::human("hi")]);
        req.extra.insert("model".into(), json!("other"));
        req.extra.insert("top_p".into(), json!(0.5));
        let text = serde_json::to_string(&chat().body(&req, true)).unwrap();
        assert_eq!(text.matches("\"model\"").count(), 1, "{text}");
        assert!(
            text.ends_with(r#""stream":true,"model":"other","top_p":0.5}"#),
            "{text}"
        );
    }

    #[test]
    fn stream_with_empty_tool_input() {
        let mut p = StreamParser::new("m".into(), None);
        let mut out = Vec::new();
        for d in [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}"#,
        ] {
            assert!(!p.on_event(&ev(d), &mut out).unwrap());
        }
        assert!(p
            .on_event(&ev(r#"{"type":"message_stop"}"#), &mut out)
            .unwrap());
        let m = p.finish(true).unwrap();
        assert_eq!(m.tool_calls()[0].arguments, json!({}));
        let MessageKind::Ai { usage, .. } = &m.kind else {
            panic!()
        };
        assert_eq!(usage.unwrap().total_tokens, 15);
    }

    #[test]
    fn structured_answer_is_the_tool_input_as_text() {
        let f = ResponseFormat::new(json!({"type": "array", "items": {"type": "integer"}}));
        let (tool, s) = structured_tool(&f);
        assert_eq!(tool["input_schema"]["required"], json!(["value"]));
        let v = json!({"content": [{"type": "tool_use", "id": "t", "name": "response",
                                     "input": {"value": [1, 2]}}],
                       "stop_reason": "tool_use"});
        let m = parse_response("m".into(), &v, Some(&s)).unwrap();
        assert_eq!(m.content.text(), "[1,2]");
        assert!(m.tool_calls().is_empty());
    }
}
