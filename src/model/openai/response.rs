//! A non-streamed Chat Completions response read into an AI message: typed when it
//! has the usual shape, from its JSON tree otherwise; and the pieces of a response the
//! stream reads too (usage, finish reason, an error reported inside).

use serde_json::{json, Value};

use super::PROVIDER;
use crate::message::{InvalidToolCall, Message, Usage};
use crate::model::{
    ai_message, check_finish, finish_tool_call, with_reasoning, Finish, ModelError,
};
use crate::tool::ToolCall;

pub(super) fn finish_kind(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("stop") | Some("tool_calls") | Some("function_call") => Finish::Normal,
        Some("length") => Finish::Length,
        Some("content_filter") => Finish::Filtered,
        Some(_) => Finish::Unknown,
    }
}

/// The `usage` object of a response or a stream's chunk, read leniently (a count of
/// another type is absent).
pub(super) fn completion_usage(v: &Value) -> Option<CompletionUsage> {
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

pub(super) fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

pub(super) fn shape_error(message: impl Into<String>) -> ModelError {
    ModelError::Response {
        provider: PROVIDER,
        message: message.into(),
    }
}

/// An error object inside a 200 response or a stream (some servers report failures
/// that way).
pub(super) fn embedded_error(v: &Value) -> Option<ModelError> {
    let e = v.get("error").filter(|e| !e.is_null())?;
    let (kind, message) = crate::model::error_detail(&json!({ "error": e }).to_string());
    Some(shape_error(format!(
        "the provider reported an error{}: {message}",
        kind.map(|k| format!(" ({k})")).unwrap_or_default()
    )))
}

/// A non-streamed response: read into the shape OpenAI sends (no JSON tree, no map
/// per object), or, when it has another shape (an error inside, no choice, a field of
/// another type, a content list), as a tree that [`parse_response`] reads leniently.
/// Both give the same message for a response of the usual shape.
pub(super) enum Response {
    Typed(Completion),
    Tree(Value),
}

impl Response {
    pub(super) fn parse(bytes: &[u8]) -> serde_json::Result<Response> {
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
pub(super) struct Completion {
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
pub(super) struct CompletionFunction {
    pub(super) name: Option<String>,
    pub(super) arguments: Option<String>,
}

#[derive(serde::Deserialize)]
pub(super) struct CompletionUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
    prompt_tokens_details: Option<TokenDetails>,
    completion_tokens_details: Option<TokenDetails>,
}

impl CompletionUsage {
    /// The usage as ironloop keeps it (a total left out is the sum of the two counts).
    pub(super) fn usage(self) -> Usage {
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
    pub(super) fn message(self, id: String) -> Result<Message, ModelError> {
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
