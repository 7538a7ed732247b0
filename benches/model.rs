//! The bytes of one model request (the Rust half of W7's model step).
//!
//! - `model/openai_request/{w7,long}`: `OpenAIChat`'s request body for a history,
//!   serialised to the bytes the transport sends: `w7` is the last request of a W7
//!   conversation (a system prompt, the user's message, three rounds of an assistant
//!   message with two tool calls and their two results: 11 messages) with W7's one
//!   tool; `long` is 200 such rounds (602 messages) of 200-byte results with 8 tools.
//!   `time` is one request body.
//! - `model/anthropic_request/{w7,long}`: the same for `AnthropicChat`'s Messages API
//!   body (prompt caching on, as by default).
//!
//! No HTTP and no Python: what the model step spends before the request leaves.
//!
//! Run: `cargo bench --bench model`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ironloop::message::{Message, ToolStatus};
use ironloop::model::{AnthropicChat, ChatBody, ChatRequest, HttpSettings, OpenAIChat};
use ironloop::tool::{ToolCall, ToolDefinition};
use serde_json::json;

/// A history of `rounds` tool rounds of two parallel calls, results of `result` bytes.
fn history(rounds: usize, result: usize) -> Vec<Message> {
    let mut out = vec![
        Message::system("You are a helpful assistant. Use the tools."),
        Message::human("conversation 17: look these up"),
    ];
    for r in 0..rounds {
        let calls: Vec<ToolCall> = (0..2)
            .map(|c| {
                ToolCall::new(
                    format!("call_{r}_{c}"),
                    "lookup",
                    json!({"query": format!("{r}.{c}")}),
                )
            })
            .collect();
        out.push(Message::ai("", calls));
        for c in 0..2 {
            out.push(Message::tool(
                format!("result {r}.{c} {}", "x".repeat(result.saturating_sub(12))),
                format!("call_{r}_{c}"),
                "lookup",
                ToolStatus::Success,
            ));
        }
    }
    out
}

fn tools(n: usize) -> Vec<ToolDefinition> {
    (0..n)
        .map(|i| {
            ToolDefinition::new(
                if i == 0 { "lookup".to_owned() } else { format!("tool_{i}") },
                "Look something up.",
                json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            )
        })
        .collect()
}

fn loopback(path: &str) -> HttpSettings {
    HttpSettings {
        base_url: Some(format!("http://127.0.0.1:9{path}")),
        api_key: Some("x".into()),
        ..Default::default()
    }
}

fn openai_request(c: &mut Criterion) {
    let chat = OpenAIChat::new("loopback", loopback("/v1")).expect("a model for a loopback URL");
    requests(c, "model/openai_request", |req| {
        serde_json::to_vec(&chat.body(req, false)).expect("a request body serialises")
    });
}

fn anthropic_request(c: &mut Criterion) {
    let chat = AnthropicChat::new("loopback", loopback("")).expect("a model for a loopback URL");
    requests(c, "model/anthropic_request", |req| {
        serde_json::to_vec(&chat.body(req, false)).expect("a request body serialises")
    });
}

/// Benchmarks `request_bytes` (the bytes the transport sends) on W7's last history
/// and on a long one.
fn requests(c: &mut Criterion, group: &str, request_bytes: impl Fn(&ChatRequest) -> Vec<u8>) {
    let mut g = c.benchmark_group(group);
    for (name, rounds, result, n_tools) in [("w7", 3, 20, 1), ("long", 200, 200, 8)] {
        let req = ChatRequest::new(history(rounds, result)).with_tools(tools(n_tools));
        let bytes = request_bytes(&req);
        assert!(bytes.len() > 100 * rounds, "{}", bytes.len());
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| black_box(request_bytes(black_box(&req))))
        });
    }
    g.finish();
}

criterion_group!(benches, openai_request, anthropic_request);
criterion_main!(benches);
