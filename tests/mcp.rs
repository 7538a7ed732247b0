//! MCP tool sources against a real server the project did not write: the official
//! MCP Python SDK running `tests/python/mcp_server.py`, over stdio and streamable
//! HTTP. The tests need `python` (or `$IRONLOOP_PYTHON`) with `mcp` importable —
//! `scripts/test.sh` installs it — and fail, saying so, when it is missing.
#![cfg(all(feature = "mcp", unix))]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ironloop::sources::mcp::{HttpServer, McpToolset, McpToolsetOptions, StdioServer};
use ironloop::{Executor, RunContext, Strategy, ToolCall, ToolError, ToolRegistry};
use serde_json::json;

fn server_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python/mcp_server.py")
        .to_string_lossy()
        .into_owned()
}

/// The Python that runs the server: `$IRONLOOP_PYTHON`, else `python` on the PATH
/// (the test script's venv), else `python3`. Panics when none can import `mcp`.
fn python() -> String {
    let candidates: Vec<String> = match std::env::var("IRONLOOP_PYTHON") {
        Ok(p) => vec![p],
        Err(_) => vec!["python".into(), "python3".into()],
    };
    for p in &candidates {
        let ok = Command::new(p)
            .args(["-c", "import mcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return p.clone();
        }
    }
    panic!(
        "tests/mcp.rs needs a Python with the MCP SDK: none of {candidates:?} can \
         `import mcp`. Install it (`pip install -r requirements-dev.txt`, which \
         scripts/test.sh does) or point IRONLOOP_PYTHON at such a Python."
    );
}

fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn executor(set: &McpToolset) -> Executor {
    let registry = Arc::new(ToolRegistry::new());
    for t in set.tools() {
        registry.register(t.clone()).unwrap();
    }
    Executor::new(registry).with_strategy(Strategy::Parallel {
        max_concurrency: None,
    })
}

fn call(i: usize, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(format!("c{i}"), name, args)
}

async fn open_stdio(prefix: Option<&str>, timeout: Option<Duration>) -> McpToolset {
    let server = StdioServer::new(python())
        .arg(server_script())
        .env("MCP_TEST_VAR", "from-rust");
    McpToolset::stdio(
        server,
        McpToolsetOptions {
            prefix: prefix.map(Into::into),
            timeout,
            ..Default::default()
        },
    )
    .await
    .expect("the test server starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_tools_run_through_the_executor() {
    let set = open_stdio(Some("py"), Some(Duration::from_millis(500))).await;
    let names: Vec<_> = set
        .tools()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    for n in [
        "py__add",
        "py__slow",
        "py__fail",
        "py__echo_env",
        "py__whoami",
    ] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    let add = set
        .tools()
        .into_iter()
        .find(|t| t.definition().name == "py__add")
        .unwrap();
    assert_eq!(add.definition().description, "Adds two integers.");
    assert_eq!(
        add.definition().parameters["required"],
        json!(["a", "b"]),
        "{}",
        add.definition().parameters
    );
    let pid = set.session().pid().expect("a stdio server has a pid");
    assert!(alive(pid));

    let exec = executor(&set);
    let run = RunContext::default();
    // Four 0.3 s calls at once, an error result, a bad argument, a timeout, the env.
    let calls = vec![
        call(0, "py__slow", json!({"seconds": 0.3})),
        call(1, "py__slow", json!({"seconds": 0.3})),
        call(2, "py__slow", json!({"seconds": 0.3})),
        call(3, "py__slow", json!({"seconds": 0.3})),
        call(4, "py__add", json!({"a": 2, "b": 3})),
        call(5, "py__fail", json!({"reason": "nope"})),
        call(6, "py__add", json!({"a": "x", "b": 3})),
        call(7, "py__slow", json!({"seconds": 5})),
        call(8, "py__echo_env", json!({})),
        call(9, "py__whoami", json!({})),
        call(10, "py__crash", json!({})),
        call(11, "py__protocol_error", json!({})),
    ];
    let t0 = Instant::now();
    let out = exec.execute(&calls, &run).await;
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(1100), "took {took:?}");
    let text = |i: usize| out[i].outcome.as_ref().unwrap().content.text();
    for i in 0..4 {
        assert_eq!(text(i), "slept 0.3");
    }
    assert_eq!(text(4), "5");
    assert_eq!(
        out[4].outcome.as_ref().unwrap().artifact,
        Some(json!({"result": 5}))
    );
    match &out[5].outcome {
        Err(ToolError::Failed { tool, message, .. }) => {
            assert_eq!(tool, "py__fail");
            assert!(message.contains("fail: nope"), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(
        matches!(&out[6].outcome, Err(ToolError::InvalidArgs { .. })),
        "{:?}",
        out[6].outcome
    );
    assert!(
        matches!(&out[7].outcome, Err(ToolError::Timeout { .. })),
        "{:?}",
        out[7].outcome
    );
    assert!(text(8).starts_with("from-rust in "), "{}", text(8));
    // One process served every call.
    assert_eq!(text(9), pid.to_string());
    match &out[10].outcome {
        Err(ToolError::Failed { message, .. }) => {
            assert!(message.contains("Error executing tool crash"), "{message}")
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    match &out[11].outcome {
        Err(ToolError::Failed { message, .. }) => assert!(
            message.contains("ironloop-test")
                && message.contains("protocol_error")
                && message.contains("the backend is down"),
            "{message}"
        ),
        other => panic!("expected a failure, got {other:?}"),
    }

    // The session outlives the timeout; cancelling the run cancels a call.
    let run = RunContext::default();
    let cancel = run.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = exec
        .execute(
            &[
                call(0, "py__slow", json!({"seconds": 0.4})),
                call(1, "py__add", json!({"a": 1, "b": 1})),
            ],
            &run,
        )
        .await;
    assert!(
        matches!(&out[0].outcome, Err(ToolError::Cancelled { .. })),
        "{:?}",
        out[0].outcome
    );
    assert_eq!(out[1].outcome.as_ref().unwrap().content.text(), "2");

    let t0 = Instant::now();
    set.close().await.unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "close took {:?}",
        t0.elapsed()
    );
    assert!(!alive(pid), "the server process {pid} outlived close()");
    let out = exec
        .execute(
            &[call(0, "py__add", json!({"a": 1, "b": 1}))],
            &RunContext::default(),
        )
        .await;
    match &out[0].outcome {
        Err(ToolError::Failed { message, .. }) => {
            assert!(message.contains("ironloop-test"), "{message}")
        }
        other => panic!("expected a failure after close, got {other:?}"),
    }
    set.close().await.unwrap(); // idempotent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_toolset_kills_the_server() {
    let set = open_stdio(None, None).await;
    let pid = set.session().pid().unwrap();
    assert_eq!(set.tools()[0].definition().name, "add");
    drop(set);
    let t0 = Instant::now();
    while alive(pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "server {pid} still alive"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_is_a_connect_error() {
    let e = McpToolset::stdio(
        StdioServer::new("/nonexistent/mcp-server"),
        McpToolsetOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
}

/// Kills the HTTP server when the test ends, however it ends.
struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_http_server() -> (Server, String) {
    let mut child = Command::new(python())
        .args([server_script(), "--http".into()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the HTTP server");
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the server's READY line");
    let url = line
        .strip_prefix("READY ")
        .unwrap_or_else(|| panic!("unexpected first line from the server: {line:?}"))
        .trim()
        .to_string();
    (server, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_tools_run_through_the_executor() {
    let (_server, url) = start_http_server();
    let set = McpToolset::http(
        HttpServer::new(&url).header("X-Test", "1"),
        McpToolsetOptions {
            prefix: None,
            timeout: Some(Duration::from_secs(2)),
            ..Default::default()
        },
    )
    .await
    .expect("connect over HTTP");
    assert!(set.session().pid().is_none());
    let exec = executor(&set);
    let calls = vec![
        call(0, "slow", json!({"seconds": 1.0})),
        call(1, "slow", json!({"seconds": 1.0})),
        call(2, "slow", json!({"seconds": 1.0})),
        call(3, "add", json!({"a": 20, "b": 22})),
        call(4, "fail", json!({})),
        call(5, "slow", json!({"seconds": 30})),
    ];
    // In parallel, the calls take the 2 s timeout of the slowest; one after another the
    // three 1 s sleeps alone would take 3 s. The margins are a second each way, so a
    // loaded machine does not turn a 1 s sleep into a timeout.
    let t0 = Instant::now();
    let out = exec.execute(&calls, &RunContext::default()).await;
    assert!(
        t0.elapsed() < Duration::from_millis(2900),
        "{:?}",
        t0.elapsed()
    );
    for r in &out[..3] {
        assert_eq!(r.outcome.as_ref().unwrap().content.text(), "slept 1.0");
    }
    assert_eq!(out[3].outcome.as_ref().unwrap().content.text(), "42");
    assert!(
        matches!(&out[4].outcome, Err(ToolError::Failed { message, .. }) if message.contains("fail: boom"))
    );
    assert!(matches!(&out[5].outcome, Err(ToolError::Timeout { .. })));
    // Still usable after the timeout.
    let out = exec
        .execute(
            &[call(0, "add", json!({"a": 1, "b": 2}))],
            &RunContext::default(),
        )
        .await;
    assert_eq!(out[0].outcome.as_ref().unwrap().content.text(), "3");
    set.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_url_is_a_connect_error() {
    let e = McpToolset::http(
        HttpServer::new("http://127.0.0.1:9/mcp"),
        McpToolsetOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

/// A result over `max_message_bytes` fails its own call with an error naming the
/// limit, while calls beside it and after it succeed; over stdio a notification over
/// it is dropped. Over stdio and over streamable HTTP (SSE responses, the SDK's
/// default).
/// A wait for the 60 s time limit would end in `ToolError::Timeout` instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_the_size_limit_fail_their_call_naming_the_limit() {
    let limit = 100_000;
    let options = || McpToolsetOptions {
        timeout: Some(Duration::from_secs(60)),
        max_message_bytes: Some(limit),
        ..Default::default()
    };
    let stdio = McpToolset::stdio(StdioServer::new(python()).arg(server_script()), options())
        .await
        .expect("the test server starts");
    let (_server, url) = start_http_server();
    let http = McpToolset::http(HttpServer::new(&url), options())
        .await
        .expect("connect over HTTP");
    for (kind, set) in [("stdio", &stdio), ("http", &http)] {
        let exec = executor(set);
        let calls = vec![
            call(0, "big", json!({"size": 300_000})),
            call(1, "big", json!({"size": 1_000})),
            call(2, "shout", json!({"size": 300_000})),
            // The text comes twice (content and structuredContent): 90 KB in all.
            call(3, "big", json!({"size": 45_000})),
        ];
        let t0 = Instant::now();
        let out = exec.execute(&calls, &RunContext::default()).await;
        eprintln!("{kind}: {:?}", t0.elapsed());
        match &out[0].outcome {
            Err(ToolError::Failed { message, .. }) => assert!(
                message.contains("over the limit of 100000 bytes")
                    && message.contains("max_message_bytes")
                    && message.contains("ironloop-test"),
                "{kind}: {message}"
            ),
            other => panic!("{kind}: expected the size error, got {other:?}"),
        }
        if kind == "stdio" {
            // Over stdio the message's size is counted as it is skipped.
            let message = out[0].outcome.as_ref().unwrap_err().to_string();
            assert!(message.contains("sent a message of 600"), "{message}");
        }
        let text = |i: usize| out[i].outcome.as_ref().unwrap().content.text();
        assert_eq!(text(1).len(), 1_000, "{kind}");
        if kind == "stdio" {
            assert_eq!(text(2), "shouted");
        } else {
            // Over HTTP the notification comes on the call's own response stream,
            // and an event over the limit ends that stream: the call fails the same way.
            let e = out[2].outcome.as_ref().unwrap_err().to_string();
            assert!(e.contains("over the limit of 100000 bytes"), "{e}");
        }
        assert_eq!(text(3).len(), 45_000, "{kind}");
        let again = exec
            .execute(
                &[call(0, "add", json!({"a": 1, "b": 2}))],
                &RunContext::default(),
            )
            .await;
        assert_eq!(
            again[0].outcome.as_ref().unwrap().content.text(),
            "3",
            "{kind}"
        );
    }
    stdio.close().await.unwrap();
    http.close().await.unwrap();
}

/// A stdio "server" that is `sh -c script`.
fn shell(script: &str) -> StdioServer {
    StdioServer::new("sh").args(["-c", script])
}

#[tokio::test]
async fn a_server_that_never_completes_the_handshake_fails_within_connect_timeout() {
    let cases = [
        ("sleep 60", "it printed nothing on its stdout"),
        (
            "while :; do echo 'Listening on stdio'; sleep 0.05; done",
            "not JSON-RPC (the first: \"Listening on stdio\")",
        ),
        (
            // One 200 MB line (over the 16 MiB default), then silence.
            "head -c 200000000 /dev/zero | tr '\\0' x; echo; sleep 60",
            "",
        ),
    ];
    for (script, says) in cases {
        let started = Instant::now();
        let e = McpToolset::stdio(
            shell(script),
            McpToolsetOptions {
                connect_timeout: Some(Duration::from_secs(2)),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(8), "{script}: {took:?}");
        let text = e.to_string();
        assert!(
            matches!(e, ironloop::sources::mcp::McpError::Connect { .. }),
            "{text}"
        );
        assert!(text.contains("handshake within 2 s"), "{text}");
        assert!(text.contains(says), "{text}");
        assert!(text.contains("connect_timeout"), "{text}");
    }
}

#[tokio::test]
async fn the_first_listing_obeys_the_request_timeout() {
    let bad = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_bad_server.py");
    let started = Instant::now();
    let e = McpToolset::stdio(
        StdioServer::new(python())
            .arg(bad.to_string_lossy())
            .arg("mute"),
        McpToolsetOptions {
            timeout: Some(Duration::from_secs(1)),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    // The mute server never answers `tools/list`: without the 1 s timeout this would
    // never return. The bound is loose because starting the Python server and its
    // handshake take seconds of their own on a loaded machine.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert!(
        matches!(&e, ironloop::sources::mcp::McpError::Timeout { request, .. } if request == "tools/list"),
        "{e}"
    );
}
