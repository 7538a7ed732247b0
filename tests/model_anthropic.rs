//! AnthropicChat against a loopback server speaking the Messages API wire format
//! (responses shaped after the API reference: JSON bodies and the SSE event sequence
//! message_start / content_block_* / message_delta / message_stop).
#![cfg(feature = "models")]

mod model_support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use ironloop::model::{
    AnthropicChat, ChatModel, ChatRequest, HttpSettings, ModelError, ResponseFormat,
    ANTHROPIC_VERSION,
};
use ironloop::{Message, ToolCall, ToolChoice, ToolStatus};
use model_support::{
    ai_usage, ask, event, history, invalid_calls, read_stream, tools, Reply, Server,
};
use serde_json::{json, Value};

const KEY: &str = "sk-ant-test-0123456789";

fn settings(server: &Server) -> HttpSettings {
    model_support::settings(server.url(), KEY)
}

fn model(server: &Server) -> AnthropicChat {
    AnthropicChat::new("claude-sonnet-4-5", settings(server)).unwrap()
}

fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": 472, "output_tokens": 89,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 8}
    })
}

fn start() -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-5-20250929",
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 25, "output_tokens": 1}}}),
    )
}

fn block_start(index: usize, block: Value) -> String {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: usize, d: Value) -> String {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": d}),
    )
}

fn block_stop(index: usize) -> String {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_end(stop: &str, output_tokens: u64) -> Vec<String> {
    vec![
        event(
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": {"output_tokens": output_tokens}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

#[tokio::test]
async fn tool_use_answer_and_request_shape() {
    let server = Server::start(vec![Reply::json(
        200,
        &message(
            json!([
                {"type": "text", "text": "I'll check both."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                 "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_01B", "name": "now", "input": {}}
            ]),
            "tool_use",
        ),
    )])
    .await;
    let mut msgs = history();
    msgs.push(Message::ai(
        "Checking.",
        vec![
            ToolCall::new("toolu_0", "now", json!({})),
            ToolCall::new("toolu_9", "get_weather", json!({"city": "Rome"})),
        ],
    ));
    msgs.push(Message::tool(
        "12:00",
        "toolu_0",
        "now",
        ToolStatus::Success,
    ));
    msgs.push(Message::tool(
        "unknown city",
        "toolu_9",
        "get_weather",
        ToolStatus::Error,
    ));
    let req = ChatRequest::new(msgs)
        .with_tools(tools())
        .with_tool_choice(ToolChoice::Required)
        .with_parallel_tool_calls(false);
    // The request's own shape, without prompt-caching breakpoints.
    let m = model(&server)
        .with_prompt_caching(false)
        .invoke(req)
        .await
        .unwrap();
    assert_eq!(m.content.text(), "I'll check both.");
    let calls = m.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(calls[1].arguments, json!({}));
    let usage = ai_usage(&m);
    assert_eq!(usage.unwrap().input_tokens, 480);
    assert_eq!(usage.unwrap().output_tokens, 89);

    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], KEY);
    assert_eq!(r.headers["anthropic-version"], ANTHROPIC_VERSION);
    assert!(!r.headers.contains_key("authorization"));
    assert_eq!(r.body["model"], "claude-sonnet-4-5");
    assert_eq!(r.body["max_tokens"], 4096);
    assert_eq!(r.body["system"], "Be brief.");
    assert_eq!(
        r.body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_0", "name": "now", "input": {}},
                {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Rome"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_0", "content": "12:00"},
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "unknown city",
                 "is_error": true}
            ]}
        ])
    );
    assert_eq!(
        r.body["tools"][0]["input_schema"]["required"],
        json!(["city"])
    );
    assert_eq!(
        r.body["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
}

#[tokio::test]
async fn stream_text_and_input_json_deltas_including_empty_arguments() {
    let mut events = vec![
        start(),
        block_start(0, json!({"type": "text", "text": ""})),
        event("ping", &json!({"type": "ping"})),
        delta(0, json!({"type": "text_delta", "text": "Okay, "})),
        delta(0, json!({"type": "text_delta", "text": "checking."})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                   "name": "get_weather", "input": {}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Pa"}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "ris\"}"}),
        ),
        block_stop(1),
        block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_02", "name": "now", "input": {}}),
        ),
        delta(2, json!({"type": "input_json_delta", "partial_json": ""})),
        block_stop(2),
    ];
    events.extend(message_end("tool_use", 89));
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let s = model(&server)
        .stream(ChatRequest::new(history()).with_tools(tools()))
        .await
        .unwrap();
    let got = read_stream(s).await;
    assert_eq!(got.texts, ["Okay, ", "checking."]);
    let m = got.done.unwrap();
    assert_eq!(m.content.text(), "Okay, checking.");
    let calls = m.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(calls[1].id, "toolu_02");
    assert_eq!(calls[1].arguments, json!({}));
    let usage = ai_usage(&m);
    assert_eq!(usage.unwrap().output_tokens, 89);
    assert_eq!(usage.unwrap().input_tokens, 25);
    assert_eq!(server.requests()[0].body["stream"], true);
}

#[tokio::test]
async fn overloaded_529_with_retry_after_then_success() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let server = Server::start(vec![
        Reply::json(529, &overloaded).header("retry-after", "1"),
        Reply::json(
            200,
            &message(json!([{"type": "text", "text": "hi"}]), "end_turn"),
        ),
    ])
    .await;
    let t = Instant::now();
    let m = ask(&model(&server)).await.unwrap();
    assert_eq!(m.content.text(), "hi");
    assert!(t.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_is_retried_before_it_starts() {
    let mut events = vec![
        start(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "hi"})),
        block_stop(0),
    ];
    events.extend(message_end("end_turn", 3));
    let server = Server::start(vec![
        Reply::json(500, &json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})),
        Reply::sse(&events),
    ])
    .await;
    let m = model(&server)
        .stream(ChatRequest::new(history()))
        .await
        .unwrap()
        .collect_message()
        .await
        .unwrap();
    assert_eq!(m.content.text(), "hi");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn invalid_request_is_not_retried_and_names_the_provider_message() {
    let server = Server::start(vec![Reply::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "messages: roles must alternate between \"user\" and \"assistant\""}}),
    )])
    .await;
    let e = ask(&model(&server)).await.unwrap_err();
    assert_eq!(e.status(), Some(400));
    let text = e.to_string();
    assert!(
        text.contains("anthropic returned HTTP 400 (invalid_request_error)"),
        "{text}"
    );
    assert!(text.contains("roles must alternate"), "{text}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_key_never_appears_in_errors() {
    let server = Server::start(vec![Reply::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error",
            "message": format!("invalid x-api-key {KEY}")}}),
    )])
    .await;
    let e = ask(&model(&server)).await.unwrap_err();
    assert!(!e.to_string().contains(KEY), "{e}");
    assert!(!format!("{e:?}").contains(KEY));
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_model_error() {
    let events = vec![
        start(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Hel"})),
        event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ];
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let items: Vec<_> = model(&server)
        .stream(ChatRequest::new(history()))
        .await
        .unwrap()
        .collect()
        .await;
    let e = items.last().unwrap().as_ref().unwrap_err();
    assert!(e.to_string().contains("overloaded_error"), "{e}");
}

#[tokio::test]
async fn a_truncated_stream_is_an_error() {
    let events = vec![
        start(),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"city\": "}),
        ),
    ];
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let e = model(&server)
        .stream(ChatRequest::new(history()))
        .await
        .unwrap()
        .collect_message()
        .await
        .unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[tokio::test]
async fn a_stalled_stream_times_out() {
    let server = Server::start(vec![Reply::sse(&[
        start(),
        block_start(0, json!({"type": "text", "text": ""})),
    ])
    .gap(Duration::from_secs(3))])
    .await;
    let mut s = settings(&server);
    s.timeout = Duration::from_millis(400);
    let t = Instant::now();
    let e = AnthropicChat::new("m", s)
        .unwrap()
        .stream(ChatRequest::new(history()))
        .await
        .unwrap()
        .collect_message()
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn malformed_tool_input_in_a_stream_is_an_invalid_tool_call() {
    let mut events = vec![
        start(),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"city\": Paris}"}),
        ),
        block_stop(0),
    ];
    events.extend(message_end("tool_use", 9));
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let m = model(&server)
        .stream(ChatRequest::new(history()).with_tools(tools()))
        .await
        .unwrap()
        .collect_message()
        .await
        .unwrap();
    let tool_calls = m.tool_calls();
    let invalid_tool_calls = invalid_calls(&m);
    assert!(tool_calls.is_empty());
    assert_eq!(invalid_tool_calls[0].id.as_deref(), Some("toolu_1"));
    assert_eq!(
        invalid_tool_calls[0].args.as_deref(),
        Some("{\"city\": Paris}")
    );
}

#[tokio::test]
async fn structured_output_is_a_forced_tool_call() {
    let mut events = vec![
        start(),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_s", "name": "Weather", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Paris\","}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": " \"celsius\": 21}"}),
        ),
        block_stop(0),
    ];
    events.extend(message_end("tool_use", 20));
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let schema = json!({"title": "Weather", "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}}});
    let s = model(&server)
        .stream(
            ChatRequest::new(history()).with_response_format(ResponseFormat::new(schema.clone())),
        )
        .await
        .unwrap();
    let got = read_stream(s).await;
    assert_eq!(got.deltas, 0, "the structured call is not a tool call");
    let text = got.texts.concat();
    let m = got.done.unwrap();
    let v: Value = serde_json::from_str(&m.content.text()).unwrap();
    assert_eq!(v, json!({"city": "Paris", "celsius": 21}));
    assert_eq!(text, m.content.text());
    assert!(m.tool_calls().is_empty());
    let body = &server.requests()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "Weather"})
    );
    assert_eq!(body["tools"][0]["input_schema"], schema);
}
