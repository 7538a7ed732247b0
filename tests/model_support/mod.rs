//! Shared by the model tests: a loopback HTTP/1.1 server that records each request
//! and answers with the next canned reply (JSON, or SSE written in pieces), one
//! request per connection; and the settings, tools, history and stream reading that
//! the OpenAI and Anthropic tests have in common.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use ironloop::message::{InvalidToolCall, MessageKind, Usage};
use ironloop::model::{
    ChatChunk, ChatModel, ChatRequest, ChatStream, HttpSettings, ModelError, RetryPolicy,
};
use ironloop::{Message, ToolDefinition};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[path = "../support/http.rs"]
mod http;
use http::read_request;

/// Settings for a model talking to a loopback server at `base_url`: a 5 s timeout and
/// two quick retries (a `retry-after` of up to 10 s is honoured).
pub fn settings(base_url: String, api_key: &str) -> HttpSettings {
    HttpSettings {
        base_url: Some(base_url),
        api_key: Some(api_key.into()),
        timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(10),
        },
        ..Default::default()
    }
}

/// Two tools: `get_weather(city)` and `now()`.
pub fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "get_weather",
            "Weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolDefinition::new(
            "now",
            "The time.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

/// A system prompt and one question.
pub fn history() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::human("Weather in Paris?"),
    ]
}

/// `model.invoke` with the plain [`history`] (no tools, no options).
pub async fn ask(model: &impl ChatModel) -> Result<Message, ModelError> {
    model.invoke(ChatRequest::new(history())).await
}

/// The token usage of an AI message (panics on another kind of message).
pub fn ai_usage(m: &Message) -> Option<Usage> {
    let MessageKind::Ai { usage, .. } = &m.kind else {
        panic!("not an AI message: {m:?}")
    };
    *usage
}

/// The tool calls of an AI message that could not be parsed (panics on another kind).
pub fn invalid_calls(m: &Message) -> &[InvalidToolCall] {
    let MessageKind::Ai {
        invalid_tool_calls, ..
    } = &m.kind
    else {
        panic!("not an AI message: {m:?}")
    };
    invalid_tool_calls
}

/// What a stream yielded, read to its end (an error item panics).
pub struct Streamed {
    /// The text chunks, in order.
    pub texts: Vec<String>,
    /// How many tool-call deltas came.
    pub deltas: usize,
    /// The reasoning blocks' pieces, in order.
    pub reasoning: Vec<serde_json::Value>,
    /// The final message.
    pub done: Option<Message>,
}

pub async fn read_stream(mut s: ChatStream) -> Streamed {
    let mut out = Streamed {
        texts: Vec::new(),
        deltas: 0,
        reasoning: Vec::new(),
        done: None,
    };
    while let Some(c) = s.next().await {
        match c.unwrap() {
            ChatChunk::Text(t) => out.texts.push(t),
            ChatChunk::ToolCallDelta { .. } => out.deltas += 1,
            ChatChunk::Reasoning(b) => out.reasoning.push(b),
            ChatChunk::Done(m) => out.done = Some(*m),
        }
    }
    out
}

pub enum Body {
    Json(String),
    /// Written piece by piece with a pause between pieces, then the connection closes.
    Sse {
        pieces: Vec<String>,
        gap: Duration,
    },
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// A pause before the status line (to trip the client's timeout).
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Body::Json(body.to_string()),
            delay: Duration::ZERO,
        }
    }

    /// An SSE body from complete events (each gets its blank line), in pieces.
    pub fn sse(events: &[String]) -> Reply {
        Reply {
            status: 200,
            headers: Vec::new(),
            body: Body::Sse {
                pieces: events.to_vec(),
                gap: Duration::from_millis(5),
            },
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }

    /// Pieces written `gap` apart (a long gap stalls the stream).
    pub fn gap(mut self, d: Duration) -> Reply {
        if let Body::Sse { gap, .. } = &mut self.body {
            *gap = d;
        }
        self
    }

    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

/// `data: <json>\n\n` (OpenAI style).
pub fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// `event: <name>\ndata: <json>\n\n` (Anthropic style).
pub fn event(name: &str, v: &Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub at: Instant,
}

pub struct Server {
    pub addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (recorded, replies) = (recorded.clone(), replies.clone());
                tokio::spawn(async move {
                    let _ = serve(sock, recorded, replies).await;
                });
            }
        });
        Server {
            addr,
            requests,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut sock: TcpStream,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
) -> std::io::Result<()> {
    let Some(req) = read_request(&mut sock).await? else {
        return Ok(());
    };
    let (method, path, headers) = (req.method, req.target, req.headers);
    let body = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    recorded.lock().unwrap().push(Recorded {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
    });
    let reply = replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        let msg = r#"{"error": {"message": "the test server has no more replies"}}"#;
        let resp = format!(
            "HTTP/1.1 599 No Reply\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}",
            msg.len()
        );
        return sock.write_all(resp.as_bytes()).await;
    };
    tokio::time::sleep(reply.delay).await;
    let extra: String = reply
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    match reply.body {
        Body::Json(text) => {
            let resp = format!(
                "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n{extra}\r\n{text}",
                reply.status,
                text.len()
            );
            sock.write_all(resp.as_bytes()).await?;
        }
        Body::Sse { pieces, gap } => {
            let head = format!(
                "HTTP/1.1 {} OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                 Connection: close\r\n{extra}\r\n",
                reply.status
            );
            sock.write_all(head.as_bytes()).await?;
            for p in pieces {
                sock.write_all(p.as_bytes()).await?;
                sock.flush().await?;
                tokio::time::sleep(gap).await;
            }
        }
    }
    sock.shutdown().await
}
