//! Property tests of the providers' response decoders and stream parsers: whatever a
//! server sends — a JSON body, a sequence of SSE events — decoding ends in a message
//! or a `ModelError`, never a panic. (Here rather than in `tests/` because the
//! decoders are the crate's own; the strategies are shared with `tests/fuzz.rs`.)

use eventsource_stream::Event;
use proptest::prelude::*;
use serde_json::Value;

#[path = "../../tests/support/fuzz.rs"]
#[allow(dead_code)]
mod fuzz;

use super::sse::SseParser;
use super::{anthropic, openai};
use fuzz::{config, json_object, json_value, messy_text, word};

/// An event's data: a JSON value (mostly an object, as providers send) or any text.
fn event_data() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => json_object().prop_map(|v| v.to_string()),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => messy_text(),
        1 => Just("[DONE]".to_owned()),
    ]
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec(
        (word(), event_data()).prop_map(|(event, data)| Event {
            event,
            data,
            id: String::new(),
            retry: None,
        }),
        0..8,
    )
}

/// Feeds every event (stopping at the end marker or an error), then finishes.
fn drive(mut p: impl SseParser, events: &[Event]) {
    let mut out = Vec::new();
    let mut complete = false;
    for e in events {
        match p.on_event(e, &mut out) {
            Ok(true) => {
                complete = true;
                break;
            }
            Ok(false) => {}
            Err(_) => return,
        }
    }
    let _ = p.finish(complete);
}

/// Bodies shaped as the providers send them, with the values inside replaced: deeper
/// into the decoders than a random object gets.
fn openai_shaped() -> impl Strategy<Value = Value> {
    (json_value(), json_value(), word(), json_value()).prop_map(|(content, args, name, fin)| {
        serde_json::json!({
            "choices": [{"index": 0, "finish_reason": fin, "message": {
                "role": "assistant", "content": content,
                "tool_calls": [{"id": "c", "type": "function",
                                "function": {"name": name, "arguments": args}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2}
        })
    })
}

/// OpenAI bodies of the usual shape with every field the decoder reads replaced (most
/// by values of the type OpenAI sends, some by anything).
fn openai_usual() -> impl Strategy<Value = Value> {
    let text = || {
        prop_oneof![
            Just(Value::Null),
            word().prop_map(Value::from),
            json_value()
        ]
    };
    let count = || {
        prop_oneof![
            Just(Value::Null),
            (0u64..1000).prop_map(Value::from),
            json_value()
        ]
    };
    (
        (text(), text(), text(), text(), text()),
        (text(), text(), count(), count(), count()),
        (prop::bool::ANY, prop::bool::ANY),
    )
        .prop_map(
            |(
                (content, refusal, reasoning, args, fin),
                (name, legacy, cached, total, think),
                (calls, usage),
            )| {
                let mut message = serde_json::json!({
                    "role": "assistant", "content": content, "refusal": refusal,
                    "reasoning_content": reasoning, "reasoning": "r",
                });
                if calls {
                    message["tool_calls"] = serde_json::json!([{"id": "c", "type": "function",
                        "function": {"name": name, "arguments": args}}]);
                } else {
                    message["function_call"] =
                        serde_json::json!({"name": legacy, "arguments": "{}"});
                }
                let mut body = serde_json::json!({
                    "id": "x", "object": "chat.completion",
                    "choices": [{"index": 0, "finish_reason": fin, "message": message,
                                 "logprobs": null}],
                });
                if usage {
                    body["usage"] = serde_json::json!({
                        "prompt_tokens": 1, "completion_tokens": 2, "total_tokens": total,
                        "prompt_tokens_details": {"cached_tokens": cached},
                        "completion_tokens_details": {"reasoning_tokens": think},
                    });
                }
                body
            },
        )
}

/// OpenAI stream chunks of the usual shape with every field the parser reads
/// replaced (most by values of the type OpenAI sends, some by anything), a few with
/// a second choice, usage or a null error.
fn openai_usual_chunk() -> impl Strategy<Value = Value> {
    let text = || {
        prop_oneof![
            2 => Just(Value::Null),
            4 => word().prop_map(Value::from),
            1 => json_value()
        ]
    };
    let index = || {
        prop_oneof![
            2 => Just(Value::Null),
            4 => (0u64..3).prop_map(Value::from),
            1 => json_value()
        ]
    };
    (
        (text(), text(), text(), text(), text()),
        (index(), text(), text(), text(), index()),
        (0u8..4, prop::bool::ANY, prop::bool::ANY),
    )
        .prop_map(
            |(
                (content, refusal, reasoning, thinking, fin),
                (at, id, name, args, choice),
                (calls, usage, error),
            )| {
                let mut delta = serde_json::json!({
                    "role": "assistant", "content": content, "refusal": refusal,
                    "reasoning_content": reasoning, "reasoning": thinking,
                });
                if calls > 0 {
                    let call = serde_json::json!({"index": at, "id": id, "type": "function",
                        "function": {"name": name, "arguments": args}});
                    delta["tool_calls"] = Value::Array(vec![call; calls as usize]);
                }
                let mut chunk = serde_json::json!({
                    "id": "x", "object": "chat.completion.chunk",
                    "choices": [{"index": choice, "delta": delta, "finish_reason": fin,
                                 "logprobs": null}],
                });
                if usage {
                    chunk["usage"] = serde_json::json!({
                        "prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3,
                        "prompt_tokens_details": {"cached_tokens": 0},
                    });
                }
                if error {
                    chunk["error"] = Value::Null;
                }
                chunk
            },
        )
}

/// `r`'s debug text with every generated call id (`call_` and 32 hex digits) the same.
fn unnumbered(r: &impl std::fmt::Debug) -> String {
    let text = format!("{r:?}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("call_") {
        let (head, tail) = rest.split_at(at + 5);
        out.push_str(head);
        let hex = tail.chars().take_while(char::is_ascii_hexdigit).count();
        if hex == 32 {
            out.push_str("<generated>");
            rest = &tail[32..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

fn anthropic_shaped() -> impl Strategy<Value = Value> {
    (json_value(), json_value(), word(), json_value()).prop_map(|(text, input, name, stop)| {
        serde_json::json!({
            "type": "message", "role": "assistant", "stop_reason": stop,
            "content": [{"type": "text", "text": text},
                        {"type": "tool_use", "id": "t", "name": name, "input": input}],
            "usage": {"input_tokens": 1, "output_tokens": 2}
        })
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn shaped_openai_bodies_decode_or_fail(v in openai_shaped()) {
        let _ = openai::parse_response("r".into(), &v);
    }

    #[test]
    fn openai_bodies_read_without_a_tree_give_the_same_message(v in openai_usual()) {
        let bytes = serde_json::to_vec(&v).unwrap();
        if let Some(typed) = openai::read_typed("r".into(), &bytes) {
            let tree = openai::parse_response("r".into(), &v);
            // A call without an id (the legacy `function_call`) gets a new one each time.
            prop_assert_eq!(unnumbered(&typed), unnumbered(&tree));
        }
    }

    #[test]
    fn openai_chunks_read_without_a_tree_give_the_same_stream(
        chunks in prop::collection::vec(openai_usual_chunk(), 1..6)
    ) {
        let data: Vec<String> = chunks.iter().map(Value::to_string).collect();
        let (typed_out, typed_msg) = openai::read_stream(&data, false);
        let (tree_out, tree_msg) = openai::read_stream(&data, true);
        prop_assert_eq!(typed_out, tree_out);
        // A call without an id gets a new one each time.
        prop_assert_eq!(unnumbered(&typed_msg), unnumbered(&tree_msg));
    }

    #[test]
    fn shaped_anthropic_bodies_decode_or_fail(v in anthropic_shaped()) {
        let _ = anthropic::parse_response("r".into(), &v, None);
    }

    #[test]
    fn openai_response_bodies_decode_or_fail(v in json_object()) {
        let _ = openai::parse_response("r".into(), &v);
    }

    #[test]
    fn anthropic_response_bodies_decode_or_fail(v in json_object()) {
        let _ = anthropic::parse_response("r".into(), &v, None);
    }

    #[test]
    fn openai_event_streams_parse_or_fail(evs in events()) {
        drive(openai::StreamParser::new("r".into()), &evs);
    }

    #[test]
    fn anthropic_event_streams_parse_or_fail(evs in events()) {
        drive(anthropic::StreamParser::new("r".into(), None), &evs);
    }
}
