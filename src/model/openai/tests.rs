//! The Chat Completions mapping, both ways: a history sent, responses and streams read.

use std::sync::Arc;

use serde_json::{json, Value};

use super::request::OpenAIMessage;
use super::response::{parse_response, read_typed, Response};
use super::stream::{read_stream, StreamParser};
use super::*;
use crate::message::{Message, MessageKind};
use crate::model::sse::SseParser;
use crate::model::ChatChunk;
use crate::tool::ToolCall;

/// A message in the Chat Completions shape, as a JSON tree; `None` for a remove
/// marker.
fn message_to_openai(m: &Message) -> Option<Value> {
    OpenAIMessage::of(m).map(|m| serde_json::to_value(m).unwrap())
}

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

use crate::model::sse::data_event as ev;

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
