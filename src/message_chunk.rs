//! Streamed pieces of an AI message, as langchain-core's `AIMessageChunk`: the text,
//! reasoning blocks and tool-call fragments of a response as they arrive, and the
//! join (`chunk + chunk`) that puts them back together. A chunk's tool calls are
//! parsed from its fragments (partial JSON completed first), so a consumer sees a
//! call's arguments grow, and the joined chunk's calls are the response's.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Content, ContentPart, InvalidToolCall, Message, MessageKind};
use crate::tool::ToolCall;

/// A fragment of a tool call as it streams (langchain-core's `ToolCallChunk`): the
/// first fragment of a call carries its `id` and `name`, later ones pieces of its
/// JSON `args`; fragments with one `index` belong to one call and are joined.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallChunk {
    pub name: Option<String>,
    pub args: Option<String>,
    pub id: Option<String>,
    pub index: Option<i64>,
}

/// Why two chunks cannot be joined (langchain-core raises the same cases).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot join message chunks: {0}")]
pub struct JoinError(String);

/// An AI message chunk: the message so far, whose tool calls (and invalid calls) are
/// those its fragments parse to, and the fragments themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct AiChunk {
    pub message: Message,
    pub tool_call_chunks: Vec<ToolCallChunk>,
}

impl AiChunk {
    /// A chunk of the AI message `message` with the fragments `tool_call_chunks`, as
    /// langchain-core builds one: with fragments, the message's tool calls become what
    /// the fragments parse to (a fragment whose arguments are not a JSON object even
    /// once completed is an invalid call); without, the fragments are made from the
    /// message's tool calls and invalid calls (arguments as JSON text, no index).
    pub fn new(mut message: Message, tool_call_chunks: Vec<ToolCallChunk>) -> AiChunk {
        let MessageKind::Ai {
            tool_calls,
            invalid_tool_calls,
            ..
        } = &mut message.kind
        else {
            return AiChunk {
                message,
                tool_call_chunks,
            };
        };
        if tool_call_chunks.is_empty() {
            let chunks = chunks_of(tool_calls, invalid_tool_calls);
            return AiChunk {
                message,
                tool_call_chunks: chunks,
            };
        }
        let (calls, invalid) = calls_of(&tool_call_chunks);
        *tool_calls = calls;
        *invalid_tool_calls = invalid;
        AiChunk {
            message,
            tool_call_chunks,
        }
    }

    /// `self + other`, as langchain-core adds two `AIMessageChunk`s: contents joined
    /// (text appended; list parts with the same integer `index` merged),
    /// `additional_kwargs` and `response_metadata` merged, fragments with the same
    /// `index` joined, usage added, the first id and name kept.
    pub fn join(&self, other: &AiChunk) -> Result<AiChunk, JoinError> {
        let (a, b) = (&self.message, &other.message);
        let mut m = a.clone();
        m.content = join_content(&a.content, &b.content)?;
        merge_maps(&mut m.additional_kwargs, &b.additional_kwargs)?;
        merge_maps(&mut m.response_metadata, &b.response_metadata)?;
        if m.id.is_empty() {
            m.id.clone_from(&b.id);
        }
        if m.name.is_none() {
            m.name.clone_from(&b.name);
        }
        if let (
            MessageKind::Ai { usage, .. },
            MessageKind::Ai {
                usage: Some(theirs),
                ..
            },
        ) = (&mut m.kind, &b.kind)
        {
            *usage = Some(match *usage {
                Some(mut u) => {
                    u.add(theirs);
                    u
                }
                None => *theirs,
            });
        }
        let mut chunks: Vec<Value> = self.tool_call_chunks.iter().map(fragment_value).collect();
        let theirs: Vec<Value> = other.tool_call_chunks.iter().map(fragment_value).collect();
        merge_lists(&mut chunks, &theirs)?;
        let chunks = chunks
            .into_iter()
            .map(|v| {
                serde_json::from_value(v)
                    .map_err(|e| JoinError(format!("a joined tool call chunk: {e}")))
            })
            .collect::<Result<Vec<ToolCallChunk>, _>>()?;
        Ok(AiChunk::new(m, chunks))
    }
}

/// A fragment as langchain-core's dict, for the merge rules of [`merge_lists`].
fn fragment_value(c: &ToolCallChunk) -> Value {
    serde_json::to_value(c).unwrap_or_default()
}

/// The fragments that stand for whole calls: arguments as JSON text, no index.
fn chunks_of(calls: &[ToolCall], invalid: &[InvalidToolCall]) -> Vec<ToolCallChunk> {
    let whole = calls.iter().map(|c| ToolCallChunk {
        name: Some(c.name.clone()),
        args: Some(match &c.arguments {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }),
        id: Some(c.id.clone()),
        index: None,
    });
    let bad = invalid.iter().map(|c| ToolCallChunk {
        name: c.name.clone(),
        args: c.args.clone(),
        id: c.id.clone(),
        index: None,
    });
    whole.chain(bad).collect()
}

/// The calls fragments parse to: an empty argument text is `{}`, a partial one is
/// completed; arguments that are no JSON object make an invalid call.
pub fn calls_of(chunks: &[ToolCallChunk]) -> (Vec<ToolCall>, Vec<InvalidToolCall>) {
    let mut calls = Vec::new();
    let mut invalid = Vec::new();
    for c in chunks {
        let args = match c.args.as_deref() {
            None | Some("") => Some(Value::Object(Map::new())),
            Some(text) => parse_partial_json(text),
        };
        match args {
            Some(args @ Value::Object(_)) => calls.push(ToolCall {
                id: c.id.clone().unwrap_or_default(),
                name: c.name.clone().unwrap_or_default(),
                arguments: args,
            }),
            _ => invalid.push(InvalidToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                args: c.args.clone(),
                error: None,
            }),
        }
    }
    (calls, invalid)
}

/// JSON text that may stop anywhere (a streamed tool call's arguments so far), read
/// as the value it begins: open strings, arrays and objects are closed, an
/// incomplete key or number is left out. `None` when the text is not the start of
/// a JSON value. Parsed by `jiter` (pydantic's parser) in its partial mode.
pub fn parse_partial_json(text: &str) -> Option<Value> {
    let v = jiter::JsonValue::parse_with_config(
        text.as_bytes(),
        false,
        jiter::PartialMode::TrailingStrings,
    )
    .ok()?;
    Some(from_jiter(&v))
}

fn from_jiter(v: &jiter::JsonValue<'_>) -> Value {
    use jiter::JsonValue as J;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Int(i) => Value::from(*i),
        J::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        J::Str(s) => Value::String(s.to_string()),
        J::Array(items) => Value::Array(items.iter().map(from_jiter).collect()),
        J::Object(pairs) => Value::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), from_jiter(v)))
                .collect(),
        ),
    }
}

/// langchain-core's `merge_content`: text + text appends; text + parts puts the text
/// first (an empty text is dropped); parts + parts merges by `index`; parts + text
/// appends to a trailing text part, or adds a part.
fn join_content(a: &Content, b: &Content) -> Result<Content, JoinError> {
    Ok(match (a, b) {
        (Content::Text(x), Content::Text(y)) => Content::Text(format!("{x}{y}")),
        (Content::Text(x), Content::Parts(ps)) if x.is_empty() => Content::Parts(ps.clone()),
        (Content::Text(x), Content::Parts(ps)) => {
            let mut out = vec![ContentPart::Json {
                value: Value::String(x.clone()),
            }];
            out.extend(ps.iter().cloned());
            Content::Parts(out)
        }
        (Content::Parts(ps), Content::Parts(qs)) => {
            let mut left: Vec<Value> = ps.iter().map(ContentPart::to_value).collect();
            let right: Vec<Value> = qs.iter().map(ContentPart::to_value).collect();
            merge_lists(&mut left, &right)?;
            Content::Parts(left.into_iter().map(ContentPart::from_value).collect())
        }
        (Content::Parts(ps), Content::Text(y)) => {
            let mut out = ps.clone();
            match out.last_mut() {
                Some(ContentPart::Json {
                    value: Value::String(s),
                }) => s.push_str(y),
                _ if y.is_empty() => {}
                _ => out.push(ContentPart::Json {
                    value: Value::String(y.clone()),
                }),
            }
            Content::Parts(out)
        }
    })
}

/// langchain-core's `merge_dicts`: a key only on the right is added (and fills a
/// null); strings are appended (equal `id`s kept once); objects and lists merge;
/// equal values stay; integers add (`index`, `created` and `timestamp` take the
/// right's); anything else differing is an error.
pub fn merge_maps(
    left: &mut Map<String, Value>,
    right: &Map<String, Value>,
) -> Result<(), JoinError> {
    for (k, r) in right {
        let Some(l) = left.get_mut(k) else {
            left.insert(k.clone(), r.clone());
            continue;
        };
        match (l, r) {
            (l @ Value::Null, r) => *l = r.clone(),
            (_, Value::Null) => {}
            (Value::String(l), Value::String(r)) => {
                if !(k == "id" && l == r) {
                    l.push_str(r);
                }
            }
            (Value::Object(l), Value::Object(r)) => merge_maps(l, r)?,
            (Value::Array(l), Value::Array(r)) => merge_lists(l, r)?,
            (l, r) if l == r => {}
            (Value::Number(l), Value::Number(r)) if l.is_i64() && r.is_i64() => {
                *l = if matches!(k.as_str(), "index" | "created" | "timestamp") {
                    r.clone()
                } else {
                    (l.as_i64().unwrap_or(0) + r.as_i64().unwrap_or(0)).into()
                };
            }
            (l, r) => {
                return Err(JoinError(format!(
                    "key {k:?} is {l} on the left and {r} on the right, which do not merge"
                )))
            }
        }
    }
    Ok(())
}

/// langchain-core's `merge_lists`: an object with an integer `index` merges into the
/// left's object with the same `index` and no other `id` (its `type` left out);
/// anything else is added.
fn merge_lists(left: &mut Vec<Value>, right: &[Value]) -> Result<(), JoinError> {
    let no_id = |v: &Value| matches!(v.get("id"), None | Some(Value::Null)) || v["id"] == "";
    for e in right {
        let index = e.get("index").filter(|i| i.is_i64());
        let same = index.and_then(|i| {
            left.iter().position(|l| {
                l.get("index") == Some(i) && (no_id(l) || no_id(e) || l.get("id") == e.get("id"))
            })
        });
        match (same, e) {
            (Some(pos), Value::Object(o)) => {
                let mut o = o.clone();
                o.remove("type");
                if let Value::Object(l) = &mut left[pos] {
                    merge_maps(l, &o)?;
                }
            }
            _ => left.push(e.clone()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;
    use serde_json::json;

    fn frag(index: i64, id: Option<&str>, name: Option<&str>, args: &str) -> AiChunk {
        AiChunk::new(
            Message::ai("", Vec::new()),
            vec![ToolCallChunk {
                name: name.map(str::to_owned),
                args: Some(args.to_owned()),
                id: id.map(str::to_owned),
                index: Some(index),
            }],
        )
    }

    #[test]
    fn fragments_join_into_calls_and_partial_arguments_parse() {
        let a = frag(0, Some("c1"), Some("add"), "{\"a\": 2, \"b\"");
        assert_eq!(a.message.tool_calls()[0].arguments, json!({"a": 2}));
        let b = frag(0, None, None, ": 3}");
        let c = frag(1, Some("c2"), Some("now"), "");
        let whole = a.join(&b).unwrap().join(&c).unwrap();
        let calls = whole.message.tool_calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("c1", "add")
        );
        assert_eq!(calls[0].arguments, json!({"a": 2, "b": 3}));
        assert_eq!(calls[1].arguments, json!({}));
        assert_eq!(
            whole.tool_call_chunks[0].args.as_deref(),
            Some("{\"a\": 2, \"b\": 3}")
        );
    }

    #[test]
    fn arguments_that_are_no_object_are_an_invalid_call() {
        let c = frag(0, Some("c1"), Some("add"), "[1, 2]");
        assert!(c.message.tool_calls().is_empty());
        let MessageKind::Ai {
            invalid_tool_calls, ..
        } = &c.message.kind
        else {
            unreachable!()
        };
        assert_eq!(invalid_tool_calls[0].args.as_deref(), Some("[1, 2]"));
    }

    #[test]
    fn text_metadata_usage_and_indexed_parts_join() {
        let mut a = Message::ai("Hel", Vec::new());
        a.response_metadata.insert("model".into(), json!("m"));
        let mut b = Message::ai("lo", Vec::new());
        b.response_metadata
            .insert("finish_reason".into(), json!("stop"));
        if let MessageKind::Ai { usage, .. } = &mut b.kind {
            *usage = Some(Usage::new(3, 4));
        }
        let j = AiChunk::new(a, vec![])
            .join(&AiChunk::new(b, vec![]))
            .unwrap();
        assert_eq!(j.message.content, Content::Text("Hello".into()));
        assert_eq!(
            Value::Object(j.message.response_metadata.clone()),
            json!({"model": "m", "finish_reason": "stop"})
        );
        let think = |t: &str| {
            AiChunk::new(
                Message::ai(
                    Content::Parts(vec![ContentPart::Json {
                        value: json!({"type": "thinking", "thinking": t, "index": 0}),
                    }]),
                    Vec::new(),
                ),
                vec![],
            )
        };
        let j = think("Two ").join(&think("plus")).unwrap();
        assert_eq!(
            j.message.content,
            Content::Parts(vec![ContentPart::Json {
                value: json!({"type": "thinking", "thinking": "Two plus", "index": 0})
            }])
        );
    }

    #[test]
    fn a_whole_call_becomes_a_fragment_without_index() {
        let m = Message::ai("", vec![ToolCall::new("c1", "add", json!({"a": 1}))]);
        let c = AiChunk::new(m, vec![]);
        assert_eq!(c.tool_call_chunks[0].args.as_deref(), Some("{\"a\":1}"));
        assert_eq!(c.tool_call_chunks[0].index, None);
    }

    #[test]
    fn values_that_do_not_merge_are_an_error() {
        let mut l = Map::new();
        l.insert("k".into(), json!(1.5));
        let mut r = Map::new();
        r.insert("k".into(), json!("x"));
        assert!(merge_maps(&mut l, &r).is_err());
    }
}
