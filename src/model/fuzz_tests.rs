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

proptest! {
    #![proptest_config(config())]

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
    fn shaped_anthropic_bodies_decode_or_fail(v in anthropic_shaped()) {
        let _ = anthropic::parse_response("r".into(), &v, None);
    }
}
