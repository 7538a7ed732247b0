//! OpenAIChat against a loopback server speaking the Chat Completions wire format
//! (responses shaped after the API reference: JSON bodies, SSE chunks, `[DONE]`).
#![cfg(feature = "models")]

mod model_support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use ironloop::model::{
    ChatChunk, ChatModel, ChatRequest, HttpSettings, ModelError, OpenAIChat, ResponseFormat,
    RetryPolicy,
};
use ironloop::{Message, ToolCall, ToolChoice, ToolStatus};
use model_support::{
    ai_usage, ask, data, history, invalid_calls, read_stream, tools, Reply, Server,
};
use serde_json::{json, Value};

const KEY: &str = "sk-test-0123456789abcdef";

fn settings(server: &Server) -> HttpSettings {
    model_support::settings(format!("{}/v1", server.url()), KEY)
}

fn model(server: &Server) -> OpenAIChat {
    OpenAIChat::new("gpt-4o-mini", settings(server)).unwrap()
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        },
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306"
    })
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    data(&json!({
        "id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
        "model": "gpt-4o-mini", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        "usage": null
    }))
}

fn usage_chunk() -> String {
    data(&json!({
        "id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
        "model": "gpt-4o-mini", "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}
    }))
}

fn done() -> String {
    "data: [DONE]\n\n".into()
}

#[tokio::test]
async fn text_answer_and_request_shape() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            json!({"role": "assistant", "content": "Sunny.", "refusal": null, "annotations": []}),
            "stop",
        ),
    )])
    .await;
    let req = ChatRequest::new(history())
        .with_tools(tools())
        .with_tool_choice(ToolChoice::Specific("get_weather".into()))
        .with_parallel_tool_calls(false);
    let m = model(&server).invoke(req).await.unwrap();
    assert_eq!(m.content.text(), "Sunny.");
    let usage = ai_usage(&m);
    assert_eq!(usage.unwrap().input_tokens, 82);
    assert_eq!(usage.unwrap().total_tokens, 99);

    let r = &server.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.body["model"], "gpt-4o-mini");
    assert_eq!(
        r.body["messages"],
        json!([{"role": "system", "content": "Be brief."},
               {"role": "user", "content": "Weather in Paris?"}])
    );
    assert_eq!(r.body["tools"][0]["type"], "function");
    assert_eq!(r.body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        r.body["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(r.body["parallel_tool_calls"], false);
    assert!(r.body.get("stream").is_none());
}

#[tokio::test]
async fn parallel_tool_calls_and_the_round_trip_history() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                {"id": "call_abc", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                {"id": "call_def", "type": "function",
                 "function": {"name": "now", "arguments": "{}"}}
            ]}),
            "tool_calls",
        ),
    )])
    .await;
    let mut msgs = history();
    msgs.push(Message::ai(
        "",
        vec![ToolCall::new("call_0", "now", json!({}))],
    ));
    msgs.push(Message::tool("12:00", "call_0", "now", ToolStatus::Success));
    let m = model(&server)
        .invoke(ChatRequest::new(msgs).with_tools(tools()))
        .await
        .unwrap();
    let calls = m.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_abc");
    assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(calls[1].name, "now");
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "now", "arguments": "{}"}}]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_0", "content": "12:00"})
    );
}

#[tokio::test]
async fn stream_text_then_tool_call_deltas_split_across_chunks() {
    let events = vec![
        chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        ),
        chunk(json!({"content": "Let me "}), None),
        chunk(json!({"content": "check."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Par"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "is\"}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_2", "type": "function",
                                   "function": {"name": "now", "arguments": ""}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
        done(),
    ];
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let s = model(&server)
        .stream(ChatRequest::new(history()).with_tools(tools()))
        .await
        .unwrap();
    let id = s.id().to_owned();
    let got = read_stream(s).await;
    assert_eq!(got.texts, ["Let me ", "check."]);
    assert_eq!(got.deltas, 5);
    let m = got.done.expect("a final message");
    assert_eq!(m.id, id);
    assert_eq!(m.content.text(), "Let me check.");
    let calls = m.tool_calls();
    assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(calls[1].arguments, json!({}));
    let usage = ai_usage(&m);
    assert_eq!(usage.unwrap().total_tokens, 32);
    let body = &server.requests()[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn retry_after_is_honoured_on_429() {
    let rate_limited = json!({"error": {"message": "Rate limit reached for gpt-4o-mini",
        "type": "requests", "param": null, "code": "rate_limit_exceeded"}});
    let server = Server::start(vec![
        Reply::json(429, &rate_limited).header("retry-after", "1"),
        Reply::json(
            200,
            &completion(json!({"role": "assistant", "content": "ok"}), "stop"),
        ),
    ])
    .await;
    let t = Instant::now();
    let m = ask(&model(&server)).await.unwrap();
    assert_eq!(m.content.text(), "ok");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].at - reqs[0].at >= Duration::from_secs(1));
    assert!(t.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let server = Server::start(vec![
        Reply::json(
            500,
            &json!({"error": {"message": "The server had an error"}}),
        ),
        Reply::json(503, &json!({"error": {"message": "overloaded"}})),
        Reply::json(
            200,
            &completion(json!({"role": "assistant", "content": "ok"}), "stop"),
        ),
    ])
    .await;
    let m = ask(&model(&server)).await.unwrap();
    assert_eq!(m.content.text(), "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_run_out() {
    let server = Server::start(vec![
        Reply::json(502, &json!({"error": {"message": "bad gateway"}})),
        Reply::json(502, &json!({"error": {"message": "bad gateway"}})),
        Reply::json(502, &json!({"error": {"message": "bad gateway"}})),
    ])
    .await;
    let e = ask(&model(&server)).await.unwrap_err();
    assert_eq!(e.status(), Some(502));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = Server::start(vec![Reply::json(
        400,
        &json!({"error": {"message": "Invalid 'messages[1].content': string too long.",
            "type": "invalid_request_error", "param": "messages[1].content",
            "code": "string_above_max_length"}}),
    )])
    .await;
    let e = ask(&model(&server)).await.unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.provider(), Some("openai"));
    let text = e.to_string();
    assert!(text.contains("HTTP 400"), "{text}");
    assert!(text.contains("string too long"), "{text}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_key_never_appears_in_errors() {
    let server = Server::start(vec![Reply::json(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {KEY}."),
            "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )])
    .await;
    let e = ask(&model(&server)).await.unwrap_err();
    assert!(!e.to_string().contains(KEY), "{e}");
    assert!(!format!("{e:?}").contains(KEY), "{e:?}");
    assert!(!format!("{:?}", model(&server)).contains(KEY));
    assert!(!format!("{:?}", settings(&server)).contains(KEY));
    // A secret in the base URL's query is scrubbed from the client's Debug too.
    let in_url = model_support::settings(format!("{}/v1?key=url-secret-7", server.url()), KEY);
    let shown = format!("{:?}", OpenAIChat::new("gpt-4o-mini", in_url).unwrap());
    assert!(!shown.contains("url-secret-7"), "{shown}");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(json!({"role": "assistant", "content": "late"}), "stop"),
    )
    .delayed(Duration::from_secs(3))])
    .await;
    let mut s = settings(&server);
    s.timeout = Duration::from_millis(300);
    s.retry = RetryPolicy::none();
    let t = Instant::now();
    let e = ask(&OpenAIChat::new("m", s).unwrap()).await.unwrap_err();
    assert!(matches!(e, ModelError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn malformed_arguments_become_invalid_tool_calls() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_ok", "type": "function",
                 "function": {"name": "now", "arguments": ""}},
                {"id": "call_bad", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Par"}}
            ]}),
            "tool_calls",
        ),
    )])
    .await;
    let m = model(&server)
        .invoke(ChatRequest::new(history()).with_tools(tools()))
        .await
        .unwrap();
    let tool_calls = m.tool_calls();
    let invalid_tool_calls = invalid_calls(&m);
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].arguments, json!({}));
    assert_eq!(invalid_tool_calls.len(), 1);
    assert_eq!(invalid_tool_calls[0].id.as_deref(), Some("call_bad"));
    assert_eq!(
        invalid_tool_calls[0].args.as_deref(),
        Some("{\"city\": \"Par")
    );
}

#[tokio::test]
async fn a_truncated_stream_is_an_error() {
    let events = vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Half an ans"}), None),
    ];
    let server = Server::start(vec![Reply::sse(&events)]).await;
    let mut s = model(&server)
        .stream(ChatRequest::new(history()))
        .await
        .unwrap();
    let mut items = Vec::new();
    while let Some(c) = s.next().await {
        items.push(c);
    }
    assert!(matches!(&items[0], Ok(ChatChunk::Text(t)) if t == "Half an ans"));
    let e = items.last().unwrap().as_ref().unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[tokio::test]
async fn an_unknown_finish_reason_on_an_empty_answer_is_an_error() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(json!({"role": "assistant", "content": ""}), "mystery"),
    )])
    .await;
    let e = ask(&model(&server)).await.unwrap_err();
    assert!(e.to_string().contains("mystery"), "{e}");
}

#[tokio::test]
async fn structured_output_uses_json_schema() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            json!({"role": "assistant", "content": "{\"city\": \"Paris\", \"celsius\": 21}"}),
            "stop",
        ),
    )])
    .await;
    let schema = json!({"title": "Weather", "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}}});
    let m = model(&server)
        .invoke(
            ChatRequest::new(history()).with_response_format(ResponseFormat::new(schema.clone())),
        )
        .await
        .unwrap();
    assert_eq!(m.content.text(), "{\"city\": \"Paris\", \"celsius\": 21}");
    assert_eq!(
        server.requests()[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "Weather", "schema": schema, "strict": false}})
    );
}

#[tokio::test]
async fn no_key_is_fine_for_a_local_server_and_sends_no_authorization() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(json!({"role": "assistant", "content": "hi"}), "stop"),
    )])
    .await;
    let mut s = settings(&server);
    s.api_key = Some(String::new());
    // An empty key counts as none: with OPENAI_API_KEY unset in this process, no header.
    if std::env::var("OPENAI_API_KEY").is_err() {
        let m = OpenAIChat::new("llama3", s).unwrap();
        ask(&m).await.unwrap();
        assert!(!server.requests()[0].headers.contains_key("authorization"));
    }
}

#[tokio::test]
async fn connection_refused_is_a_connection_error() {
    // Bind then drop: the port is (very likely) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = HttpSettings {
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        api_key: Some(KEY.into()),
        retry: RetryPolicy {
            max_retries: 1,
            initial_backoff: Duration::from_millis(10),
            ..Default::default()
        },
        ..Default::default()
    };
    let e = ask(&OpenAIChat::new("m", s).unwrap()).await.unwrap_err();
    assert!(matches!(e, ModelError::Connection { .. }), "{e}");
    assert!(e.is_retryable());
}

/// The core model node (`ironloop::prebuilt::ModelNode`) in Rust graphs.
mod model_node {
    use super::*;
    use ironloop::graph::{
        BranchSpec, ChannelKind, Graph, GraphError, GraphSpec, JsonCodec, MessageList, RunInput,
        RunOptions, RunResult, Val, END, START,
    };
    use ironloop::prebuilt::{AfterModel, ModelCall, ModelNode, ToolNode};
    use ironloop::{Executor, Tool, ToolOutput, ToolRegistry};
    use std::sync::Arc;

    /// A graph of one messages channel and the model node `"agent"` making `call`.
    fn with_model_node(call: ModelCall) -> GraphSpec {
        GraphSpec {
            channels: vec![("messages".to_owned(), ChannelKind::Messages)],
            ..Default::default()
        }
        .node(
            "agent",
            Arc::new(ModelNode {
                channel: "messages".into(),
                call: Arc::new(call),
            }),
        )
    }

    /// Runs `spec` on one human message `ask`.
    async fn run_on(spec: GraphSpec, ask: &str) -> Result<RunResult, GraphError> {
        let g = Graph::compile(spec, None, Arc::new(JsonCodec), vec![], vec![]).unwrap();
        let input = RunInput::Values(vec![(
            "messages".into(),
            Val::Messages(MessageList::from_messages([Arc::new(Message::human(ask))])),
        )]);
        g.run(input, RunOptions::default()).await
    }

    /// The core model node and tool node as an agent (create_react_agent's "v2"
    /// shape): the node sends the agent's system message, the history and the tools,
    /// and writes the answer, named after the agent, to the messages channel.
    #[tokio::test]
    async fn a_model_node_runs_an_agent_over_http_with_the_tool_node() {
        let server = Server::start(vec![
            Reply::json(
                200,
                &completion(
                    json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
                    "tool_calls",
                ),
            ),
            Reply::json(
                200,
                &completion(json!({"role": "assistant", "content": "Sunny."}), "stop"),
            ),
        ])
        .await;
        let registry = Arc::new(ToolRegistry::new());
        registry
            .register(Arc::new(
                <dyn Tool>::builder("get_weather", "Weather in a city.")
                    .param("city", json!({"type": "string"}), "")
                    .call(|args, _| async move {
                        Ok(ToolOutput::text(format!(
                            "sun in {}",
                            args["city"].as_str().unwrap()
                        )))
                    }),
            ))
            .unwrap();
        let mut spec = with_model_node(ModelCall {
            model: Arc::new(model(&server)),
            tools: tools().into(),
            system: Some(Arc::new(Message::system("Be brief."))),
            name: Some("forecaster".into()),
        })
        .node(
            "tools",
            Arc::new(ToolNode::new(Executor::new(registry), "messages")),
        )
        .edge(START, "agent")
        .edge("tools", "agent");
        spec.branches.push(BranchSpec {
            source: "agent".into(),
            router: Arc::new(AfterModel {
                channel: "messages".into(),
                tools: "tools".into(),
                per_call: true,
                back: "agent".into(),
                done: END.into(),
            }),
            ends: Some(vec!["tools".into(), END.into()]),
            reads: None,
        });
        let r = run_on(spec, "Weather in Paris?").await.unwrap();
        let Some(Val::Messages(l)) = r.state.get("messages") else {
            panic!("no messages")
        };
        let texts: Vec<String> = l.iter().map(|m| m.content.text()).collect();
        assert_eq!(texts, ["Weather in Paris?", "", "sun in Paris", "Sunny."]);
        let names: Vec<Option<&str>> = l.iter().map(|m| m.name.as_deref()).collect();
        assert_eq!(names[1], Some("forecaster"));
        assert_eq!(names[3], Some("forecaster"));

        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            reqs[0].body["messages"],
            json!([{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "Weather in Paris?"}])
        );
        assert_eq!(reqs[0].body["tools"][0]["function"]["name"], "get_weather");
        // The second request carries the call and its result (the system message
        // stays out of the state).
        let second = &reqs[1].body["messages"];
        assert_eq!(second.as_array().unwrap().len(), 4);
        assert_eq!(second[2]["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            second[3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "sun in Paris"})
        );
    }

    /// A model error fails the node with the provider's status and message.
    #[tokio::test]
    async fn a_model_nodes_error_fails_the_run_with_the_providers_message() {
        let server = Server::start(vec![Reply::json(
            400,
            &json!({"error": {"message": "Invalid model name.", "type": "invalid_request_error"}}),
        )])
        .await;
        let spec = with_model_node(ModelCall {
            model: Arc::new(model(&server)),
            tools: Arc::new([]),
            system: None,
            name: None,
        })
        .edge(START, "agent")
        .edge("agent", END);
        match run_on(spec, "hi").await {
            Err(GraphError::Node { node, message, .. }) => {
                assert_eq!(node, "agent");
                assert!(message.contains("400"), "{message}");
                assert!(message.contains("Invalid model name."), "{message}");
            }
            other => panic!(
                "expected the node's failure, got {:?}",
                other.map(|r| r.state)
            ),
        }
    }
}
