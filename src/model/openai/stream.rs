//! A streamed Chat Completions response: `chat.completion.chunk` events assembled
//! into chunks as they come and into the AI message at the end.

use eventsource_stream::Event;
use serde_json::{json, Value};

use super::response::{
    completion_usage, embedded_error, finish_kind, shape_error, text_of, CompletionFunction,
    CompletionUsage,
};
use super::PROVIDER;
use crate::message::{Message, Usage};
use crate::model::sse::{event_json, SseParser};
use crate::model::{
    ai_message, check_finish, finish_tool_call, with_reasoning, ChatChunk, ModelError,
};

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
        let event = crate::model::sse::data_event(d);
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
