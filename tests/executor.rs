//! Integration tests of the `Executor`: ordering, failure isolation, timeouts,
//! cancellation, concurrency bounds, hooks, wrappers and result messages, for every
//! strategy where the behaviour is meant to hold.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use ironloop::tool::{FnTool, HandleError, ReturnDirect};
use ironloop::{
    BeforeAction, Content, Executor, Hooks, MessageKind, RunContext, Strategy, Tool, ToolCall,
    ToolError, ToolOutput, ToolRegistry, ToolResult, ToolStatus,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------
// helpers

const STRATEGIES: [Strategy; 4] = [
    Strategy::Sequential,
    Strategy::Parallel {
        max_concurrency: None,
    },
    Strategy::Parallel {
        max_concurrency: Some(2),
    },
    Strategy::Batched { size: 3 },
];

/// A very long time: a call that waits this long is only ever ended by the executor.
const FOREVER: Duration = Duration::from_secs(10);

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

fn registry(tools: Vec<FnTool>) -> Arc<ToolRegistry> {
    let r = Arc::new(ToolRegistry::new());
    for t in tools {
        r.register(Arc::new(t)).expect("valid schema");
    }
    r
}

/// `sleep(ms)`: sleeps `ms` milliseconds, then returns `ms`; records the order in
/// which calls complete.
fn sleep_tool(done: Arc<Mutex<Vec<String>>>) -> FnTool {
    <dyn Tool>::builder("sleep", "Sleeps, then returns the number of ms.")
        .param(
            "ms",
            json!({"type": "integer", "minimum": 0}),
            "milliseconds",
        )
        .call(move |args, ctx| {
            let done = done.clone();
            async move {
                let ms = args["ms"].as_u64().unwrap();
                tokio::time::sleep(Duration::from_millis(ms)).await;
                done.lock().unwrap().push(ctx.tool_call_id.clone());
                Ok(ToolOutput::json(json!(ms)))
            }
        })
}

/// `ok()`: returns "ok" at once; takes an optional `x`.
fn ok_tool() -> FnTool {
    <dyn Tool>::builder("ok", "Returns ok.")
        .param_opt("x", json!({"type": "integer"}), "")
        .call(|_, _| async { Ok(ToolOutput::text("ok")) })
}

/// `add(a, b)`.
fn add_tool() -> FnTool {
    <dyn Tool>::builder("add", "Adds two integers.")
        .param("a", json!({"type": "integer"}), "first")
        .param("b", json!({"type": "integer"}), "second")
        .call(|args, _| async move {
            Ok(ToolOutput::json(json!(
                args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()
            )))
        })
}

/// `wait()`: records its context's cancellation token, then waits "forever".
fn wait_tool(name: &str, tokens: Arc<Mutex<Vec<CancellationToken>>>) -> FnTool {
    <dyn Tool>::builder(name, "Waits for a long time.").call(move |_, ctx| {
        let tokens = tokens.clone();
        async move {
            tokens.lock().unwrap().push(ctx.cancel.clone());
            tokio::time::sleep(FOREVER).await;
            Ok(ToolOutput::text("woke up"))
        }
    })
}

fn err(r: &ToolResult) -> &ToolError {
    match &r.outcome {
        Err(e) => e,
        Ok(out) => panic!("{}: expected an error, got {out:?}", r.tool_call_id),
    }
}

fn text(r: &ToolResult) -> String {
    match &r.outcome {
        Ok(out) => out.content.text(),
        Err(e) => panic!("{}: expected success, got {e:?}", r.tool_call_id),
    }
}

fn ids(results: &[ToolResult]) -> Vec<&str> {
    results.iter().map(|r| r.tool_call_id.as_str()).collect()
}

/// Tracks how many calls are in flight and the most there ever were.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

fn gauge_tool(gauge: Arc<Gauge>, ms: u64) -> FnTool {
    <dyn Tool>::builder("busy", "Sleeps a fixed time.").call(move |_, _| {
        let gauge = gauge.clone();
        async move {
            gauge.enter();
            tokio::time::sleep(Duration::from_millis(ms)).await;
            gauge.leave();
            Ok(ToolOutput::text("done"))
        }
    })
}

// ---------------------------------------------------------------------------------
// ordering

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_result_per_call_in_call_order_whatever_the_completion_order() {
    let sleeps = [40u64, 2, 25, 0, 12, 30, 6];
    let calls: Vec<ToolCall> = sleeps
        .iter()
        .enumerate()
        .map(|(i, ms)| call(&format!("c{i}"), "sleep", json!({ "ms": ms })))
        .collect();
    let expected: Vec<String> = (0..sleeps.len()).map(|i| format!("c{i}")).collect();

    // `local`: calls that wait stay on execute's task instead of being spawned.
    for (strategy, local) in STRATEGIES.into_iter().flat_map(|s| [(s, false), (s, true)]) {
        let done = Arc::new(Mutex::new(Vec::new()));
        let exec = Executor::new(registry(vec![sleep_tool(done.clone())])).with_strategy(strategy);
        let run = RunContext {
            local,
            ..Default::default()
        };
        let results = exec.execute(&calls, &run).await;

        assert_eq!(ids(&results), expected, "{strategy:?}");
        for (r, ms) in results.iter().zip(sleeps) {
            assert_eq!(r.name, "sleep");
            assert_eq!(text(r), ms.to_string(), "{strategy:?} {}", r.tool_call_id);
        }
        let done = done.lock().unwrap().clone();
        assert_eq!(
            done.len(),
            sleeps.len(),
            "{strategy:?}: every call ran once"
        );
        if strategy == Strategy::Sequential {
            assert_eq!(done, expected, "sequential completes in call order");
        } else {
            // The test only proves something if completion order really differed.
            assert_ne!(
                done, expected,
                "{strategy:?}: completion order should differ"
            );
        }
    }
}

#[tokio::test]
async fn a_calls_reasoning_reaches_its_tool_message_success_or_failure() {
    let why = "the user asked for a sum";
    for strategy in STRATEGIES {
        let exec = Executor::new(registry(vec![add_tool()])).with_strategy(strategy);
        let calls = [
            call(
                "c1",
                "add",
                json!({"a": 1, "b": 2, "_reasoningForCall": why}),
            ),
            call("c2", "add", json!({"a": 1, "b": 2})),
            call("c3", "nope", json!({"_reasoningForCall": why})),
        ];
        let results = exec.execute(&calls, &RunContext::default()).await;
        let shown: Vec<Option<Value>> = results
            .iter()
            .map(|r| {
                r.to_message()
                    .response_metadata
                    .get(ironloop::executor::REASONING_FOR_CALL)
                    .cloned()
            })
            .collect();
        assert_eq!(
            shown,
            vec![Some(json!(why)), None, Some(json!(why))],
            "{strategy:?}"
        );
        assert_eq!(text(&results[0]), "3");
        assert!(results[2].outcome.is_err());
    }
}

#[tokio::test]
async fn no_calls_no_results() {
    for strategy in STRATEGIES {
        let exec = Executor::new(registry(vec![ok_tool()])).with_strategy(strategy);
        assert!(exec.execute(&[], &RunContext::default()).await.is_empty());
    }
}

#[tokio::test]
async fn same_call_id_twice_still_gets_two_results() {
    let calls = [
        call("dup", "add", json!({"a": 1, "b": 2})),
        call("dup", "add", json!({"a": 3, "b": 4})),
    ];
    for strategy in STRATEGIES {
        let exec = Executor::new(registry(vec![add_tool()])).with_strategy(strategy);
        let results = exec.execute(&calls, &RunContext::default()).await;
        assert_eq!(
            results.iter().map(text).collect::<Vec<_>>(),
            ["3", "7"],
            "{strategy:?}"
        );
    }
}

// ---------------------------------------------------------------------------------
// failure isolation

fn failing_tools() -> Vec<FnTool> {
    vec![
        add_tool(),
        ok_tool(),
        <dyn Tool>::builder("boom", "Panics.").call(|_, _| async { panic!("kaboom in the tool") }),
        <dyn Tool>::builder("fail", "Fails.")
            .call(|_, _| async { Err(ToolError::failed("fail", "disk on fire")) }),
        // Its own limit (30 ms) is shorter than the executor's default.
        <dyn Tool>::builder("slow_own", "Sleeps forever; has its own timeout.")
            .timeout(Duration::from_millis(30))
            .call(|_, _| async {
                tokio::time::sleep(FOREVER).await;
                Ok(ToolOutput::text("late"))
            }),
        // No limit of its own: the executor's default (60 ms) applies.
        <dyn Tool>::builder("slow_default", "Sleeps forever.").call(|_, _| async {
            tokio::time::sleep(FOREVER).await;
            Ok(ToolOutput::text("late"))
        }),
        // Its own limit (400 ms) is longer than the default and takes precedence.
        <dyn Tool>::builder("patient", "Takes 100 ms; allowed 400 ms.")
            .timeout(Duration::from_millis(400))
            .call(|_, _| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(ToolOutput::text("worth the wait"))
            }),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_failure_yields_its_error_and_siblings_keep_their_results() {
    let calls = vec![
        call("ok1", "add", json!({"a": 1, "b": 2})),
        call("panic", "boom", json!({})),
        call("failed", "fail", json!({})),
        call("unknown", "nope", json!({})),
        call("missing", "add", json!({"a": 1})),
        call("wrong_type", "add", json!({"a": 1, "b": "two"})),
        call("not_json", "add", json!("{\"a\": 1, \"b\":")),
        call("array", "add", json!([1, 2])),
        call("array_text", "add", json!("[1, 2]")),
        call("empty", "ok", json!("")),
        call("blank", "ok", json!("  ")),
        call("null", "ok", Value::Null),
        call("json_text", "add", json!("{\"a\": 20, \"b\": 22}")),
        call("own_timeout", "slow_own", json!({})),
        call("default_timeout", "slow_default", json!({})),
        call("patient", "patient", json!({})),
        call("ok2", "add", json!({"a": 5, "b": 5})),
    ];
    for strategy in STRATEGIES {
        let exec = Executor::new(registry(failing_tools()))
            .with_strategy(strategy)
            .with_default_timeout(Duration::from_millis(60));
        let started = Instant::now();
        let results = exec.execute(&calls, &RunContext::default()).await;
        let elapsed = started.elapsed();
        let by_id: HashMap<&str, &ToolResult> = results
            .iter()
            .map(|r| (r.tool_call_id.as_str(), r))
            .collect();
        let ctx = format!("{strategy:?}");

        assert_eq!(ids(&results), ids_of(&calls), "{ctx}");
        assert_eq!(text(by_id["ok1"]), "3", "{ctx}");
        assert_eq!(text(by_id["ok2"]), "10", "{ctx}");
        assert_eq!(
            text(by_id["json_text"]),
            "42",
            "{ctx}: a JSON object in a string is parsed"
        );
        for id in ["empty", "blank", "null"] {
            assert_eq!(
                text(by_id[id]),
                "ok",
                "{ctx}: {id} arguments mean no arguments"
            );
        }
        assert_eq!(
            text(by_id["patient"]),
            "worth the wait",
            "{ctx}: the tool's own timeout wins"
        );

        match err(by_id["panic"]) {
            ToolError::Failed { tool, message, .. } => {
                assert_eq!(tool, "boom");
                assert!(
                    message.contains("panicked") && message.contains("kaboom in the tool"),
                    "{message}"
                );
            }
            e => panic!("{ctx}: {e:?}"),
        }
        assert_eq!(
            err(by_id["failed"]),
            &ToolError::failed("fail", "disk on fire"),
            "{ctx}"
        );
        match err(by_id["unknown"]) {
            ToolError::NotFound { tool, available } => {
                assert_eq!(tool, "nope");
                for name in [
                    "add",
                    "boom",
                    "fail",
                    "ok",
                    "patient",
                    "slow_default",
                    "slow_own",
                ] {
                    assert!(
                        available.contains(name),
                        "{ctx}: `{name}` missing from {available}"
                    );
                }
            }
            e => panic!("{ctx}: {e:?}"),
        }
        let invalid = |id: &str| match err(by_id[id]) {
            ToolError::InvalidArgs { tool, reason } => {
                assert_eq!(tool, "add", "{ctx}: {id}");
                reason.clone()
            }
            e => panic!("{ctx}: {id}: {e:?}"),
        };
        let reason = invalid("missing");
        assert!(
            reason.contains("\"b\"") && reason.contains("required"),
            "{reason}"
        );
        let reason = invalid("wrong_type");
        assert!(
            reason.contains("/b") && reason.contains("integer"),
            "{reason}"
        );
        let reason = invalid("not_json");
        assert!(reason.contains("not valid JSON"), "{reason}");
        for id in ["array", "array_text"] {
            let reason = invalid(id);
            assert!(
                reason.contains("must be a JSON object") && reason.contains("array"),
                "{reason}"
            );
        }
        match err(by_id["own_timeout"]) {
            ToolError::Timeout { tool, seconds } => {
                assert_eq!(tool, "slow_own");
                assert!((seconds - 0.030).abs() < 1e-9, "{ctx}: {seconds}");
            }
            e => panic!("{ctx}: {e:?}"),
        }
        match err(by_id["default_timeout"]) {
            ToolError::Timeout { tool, seconds } => {
                assert_eq!(tool, "slow_default");
                assert!((seconds - 0.060).abs() < 1e-9, "{ctx}: {seconds}");
            }
            e => panic!("{ctx}: {e:?}"),
        }
        // Sequential pays 30 + 60 + 100 ms; nothing waits for the 10 s sleeps.
        assert!(elapsed < Duration::from_secs(2), "{ctx}: took {elapsed:?}");
    }
}

fn ids_of(calls: &[ToolCall]) -> Vec<&str> {
    calls.iter().map(|c| c.id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_has_its_context_cancelled() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let tool = wait_tool("wait", tokens.clone());
    let exec = Executor::new(registry(vec![tool])).with_default_timeout(Duration::from_millis(20));
    let results = exec
        .execute(&[call("w", "wait", json!({}))], &RunContext::default())
        .await;
    assert_eq!(err(&results[0]).kind(), "timeout");
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), 1);
    assert!(
        tokens[0].is_cancelled(),
        "a tool still running on a thread must be told to stop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_kept_on_executes_task_time_out_too() {
    // `local`: the waiting calls are polled by execute's own task, not spawned; their
    // timers still fire and their tokens are still cancelled.
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let exec = Executor::new(registry(vec![ok_tool(), wait_tool("wait", tokens.clone())]))
        .with_default_timeout(Duration::from_millis(20));
    let run = RunContext {
        local: true,
        ..Default::default()
    };
    let calls = [
        call("w1", "wait", json!({})),
        call("q", "ok", json!({})),
        call("w2", "wait", json!({})),
    ];
    let results = exec.execute(&calls, &run).await;
    assert_eq!(ids(&results), ["w1", "q", "w2"]);
    assert_eq!(err(&results[0]).kind(), "timeout");
    assert_eq!(text(&results[1]), "ok");
    assert_eq!(err(&results[2]).kind(), "timeout");
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), 2);
    assert!(tokens.iter().all(|t| t.is_cancelled()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_run_timeout_bounds_all_calls_together() {
    // fast (5 ms), slow (forever), fast again. The run has 80 ms.
    let calls = [
        call("fast1", "sleep", json!({"ms": 5})),
        call("slow", "wait", json!({})),
        call("fast2", "sleep", json!({"ms": 5})),
    ];
    let futures = STRATEGIES.map(|strategy| {
        let calls = calls.clone();
        async move {
            let tokens = Arc::new(Mutex::new(Vec::new()));
            let done = Arc::new(Mutex::new(Vec::new()));
            let exec = Executor::new(registry(vec![
                sleep_tool(done),
                wait_tool("wait", tokens.clone()),
            ]))
            .with_strategy(strategy)
            .with_run_timeout(Duration::from_millis(80));
            let started = Instant::now();
            let results = exec.execute(&calls, &RunContext::default()).await;
            (strategy, results, started.elapsed(), tokens)
        }
    });
    for (strategy, results, elapsed, tokens) in join_all(futures).await {
        let ctx = format!("{strategy:?}");
        assert_eq!(ids(&results), ["fast1", "slow", "fast2"], "{ctx}");
        assert_eq!(text(&results[0]), "5", "{ctx}");
        match err(&results[1]) {
            ToolError::Timeout { tool, seconds } => {
                assert_eq!(tool, "wait");
                assert!(
                    (seconds - 0.080).abs() < 1e-9,
                    "{ctx}: reports the run's limit, got {seconds}"
                );
            }
            e => panic!("{ctx}: {e:?}"),
        }
        if strategy == Strategy::Sequential {
            // Its turn comes after the run's time is up: it never starts.
            assert_eq!(err(&results[2]).kind(), "timeout", "{ctx}");
        } else {
            assert_eq!(text(&results[2]), "5", "{ctx}");
        }
        assert!(
            tokens.lock().unwrap().iter().all(|t| t.is_cancelled()),
            "{ctx}"
        );
        assert!(elapsed >= Duration::from_millis(75), "{ctx}: {elapsed:?}");
        assert!(elapsed < Duration::from_millis(1000), "{ctx}: {elapsed:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_timeout_caps_a_longer_tool_timeout() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let exec = Executor::new(registry(vec![wait_tool("wait", tokens)]))
        .with_default_timeout(Duration::from_secs(5))
        .with_run_timeout(Duration::from_millis(40));
    let started = Instant::now();
    let results = exec
        .execute(&[call("w", "wait", json!({}))], &RunContext::default())
        .await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(
        matches!(err(&results[0]), ToolError::Timeout { seconds, .. } if (seconds - 0.040).abs() < 1e-9)
    );
}

// ---------------------------------------------------------------------------------
// cancellation

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_the_run_ends_in_flight_calls_promptly() {
    // quick, then four waiters. Which waiters are in flight when the run is
    // cancelled (at 60 ms) depends on the strategy.
    let calls = [
        call("quick", "ok", json!({})),
        call("w1", "wait", json!({})),
        call("w2", "wait", json!({})),
        call("w3", "wait", json!({})),
        call("w4", "wait", json!({})),
    ];
    let cases = [
        (Strategy::Sequential, 1),
        (
            Strategy::Parallel {
                max_concurrency: None,
            },
            4,
        ),
        (
            Strategy::Parallel {
                max_concurrency: Some(2),
            },
            2,
        ),
        (Strategy::Batched { size: 3 }, 2),
    ];
    let cases = cases
        .into_iter()
        .flat_map(|(s, n)| [(s, n, false), (s, n, true)]);
    let futures = cases.map(|(strategy, in_flight, local)| {
        let calls = calls.clone();
        async move {
            let tokens = Arc::new(Mutex::new(Vec::new()));
            let exec = Executor::new(registry(vec![ok_tool(), wait_tool("wait", tokens.clone())]))
                .with_strategy(strategy);
            let run = RunContext {
                local,
                ..Default::default()
            };
            let cancel = run.cancel.clone();
            let canceller = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(60)).await;
                cancel.cancel();
                Instant::now()
            });
            let results = exec.execute(&calls, &run).await;
            let lag = canceller.await.unwrap().elapsed();
            (strategy, in_flight, results, lag, tokens, local)
        }
    });
    for (strategy, in_flight, results, lag, tokens, local) in join_all(futures).await {
        let ctx = format!("{strategy:?} local={local}");
        assert_eq!(ids(&results), ["quick", "w1", "w2", "w3", "w4"], "{ctx}");
        assert_eq!(
            text(&results[0]),
            "ok",
            "{ctx}: a call done before the cancel keeps its result"
        );
        for r in &results[1..] {
            assert_eq!(err(r), &ToolError::cancelled("wait"), "{ctx}");
        }
        assert!(
            lag < Duration::from_millis(500),
            "{ctx}: execute returned {lag:?} after the cancel"
        );
        let tokens = tokens.lock().unwrap();
        assert_eq!(
            tokens.len(),
            in_flight,
            "{ctx}: calls queued behind the cancel never start"
        );
        assert!(
            tokens.iter().all(|t| t.is_cancelled()),
            "{ctx}: tools see ctx.cancel cancelled"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_stops_on_cancel_still_reports_cancelled() {
    // The tool notices the cancellation and returns normally; the result must still
    // say the call was cancelled, every time.
    let observed = Arc::new(AtomicUsize::new(0));
    let seen = observed.clone();
    let tool = <dyn Tool>::builder("watch", "Stops when cancelled.").call(move |_, ctx| {
        let seen = seen.clone();
        async move {
            tokio::select! {
                _ = ctx.cancel.cancelled() => {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Ok(ToolOutput::text("stopped early"))
                }
                _ = tokio::time::sleep(FOREVER) => Ok(ToolOutput::text("done")),
            }
        }
    });
    let exec = Executor::new(registry(vec![tool])).with_strategy(Strategy::Sequential);
    for round in 0..20 {
        let run = RunContext::default();
        let cancel = run.cancel.clone();
        let calls = [call("w", "watch", json!({}))];
        let (results, ()) = tokio::join!(exec.execute(&calls, &run), async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            cancel.cancel();
        });
        assert_eq!(err(&results[0]).kind(), "cancelled", "round {round}");
    }
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_runs_nothing() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    for strategy in STRATEGIES {
        let exec = Executor::new(registry(vec![wait_tool("wait", tokens.clone())]))
            .with_strategy(strategy);
        let run = RunContext::default();
        run.cancel.cancel();
        let calls = [call("a", "wait", json!({})), call("b", "wait", json!({}))];
        let results = exec.execute(&calls, &run).await;
        assert!(
            results.iter().all(|r| err(r).kind() == "cancelled"),
            "{strategy:?}"
        );
    }
    assert!(tokens.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_execute_aborts_in_flight_calls() {
    let cases = STRATEGIES.into_iter().flat_map(|s| [(s, false), (s, true)]);
    let futures = cases.map(|(strategy, local)| async move {
        let started = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let (s, f) = (started.clone(), finished.clone());
        let tool = <dyn Tool>::builder("late", "Counts after a sleep.").call(move |_, _| {
            let (s, f) = (s.clone(), f.clone());
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(60)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text("late"))
            }
        });
        let exec = Executor::new(registry(vec![tool])).with_strategy(strategy);
        let calls: Vec<ToolCall> = (0..4)
            .map(|i| call(&format!("c{i}"), "late", json!({})))
            .collect();
        let run = RunContext {
            local,
            ..Default::default()
        };
        let outcome =
            tokio::time::timeout(Duration::from_millis(20), exec.execute(&calls, &run)).await;
        assert!(
            outcome.is_err(),
            "{strategy:?} local={local}: execute should still be running"
        );
        // Well past the moment the tools would have counted.
        tokio::time::sleep(Duration::from_millis(150)).await;
        (
            strategy,
            started.load(Ordering::SeqCst),
            finished.load(Ordering::SeqCst),
        )
    });
    for (strategy, started, finished) in join_all(futures).await {
        assert!(started >= 1, "{strategy:?}: the calls had started");
        assert_eq!(finished, 0, "{strategy:?}: an aborted call must not run on");
    }
}

// ---------------------------------------------------------------------------------
// concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strategies_bound_and_overlap_calls_as_promised() {
    const N: usize = 8;
    const MS: u64 = 50;
    let calls: Vec<ToolCall> = (0..N)
        .map(|i| call(&format!("c{i}"), "busy", json!({})))
        .collect();
    // (strategy, expected peak, rounds of MS ms the calls need at least)
    let cases = [
        (Strategy::Sequential, 1, N),
        (
            Strategy::Parallel {
                max_concurrency: None,
            },
            N,
            1,
        ),
        (
            Strategy::Parallel {
                max_concurrency: Some(2),
            },
            2,
            N / 2,
        ),
        (Strategy::Batched { size: 3 }, 3, N.div_ceil(3)),
    ];
    let futures = cases.map(|(strategy, peak, rounds)| {
        let calls = calls.clone();
        async move {
            let gauge = Arc::new(Gauge::default());
            let exec = Executor::new(registry(vec![gauge_tool(gauge.clone(), MS)]))
                .with_strategy(strategy);
            let started = Instant::now();
            let results = exec.execute(&calls, &RunContext::default()).await;
            assert!(results.iter().all(|r| r.outcome.is_ok()));
            (
                strategy,
                peak,
                rounds,
                gauge.peak.load(Ordering::SeqCst),
                started.elapsed(),
            )
        }
    });
    for (strategy, want_peak, rounds, peak, elapsed) in join_all(futures).await {
        let ctx = format!("{strategy:?}");
        assert_eq!(peak, want_peak, "{ctx}: peak concurrency");
        let floor = Duration::from_millis(MS * rounds as u64);
        assert!(elapsed >= floor, "{ctx}: {elapsed:?} < {floor:?}");
        // Sequential: the floor (N rounds) and the peak of 1 prove it serialises.
        // The others overlap: close to their minimum number of rounds (the margin
        // absorbs timer lag on a loaded machine; a wrong group size or bound shows
        // in the peak), and well under the sequential N × MS.
        if strategy != Strategy::Sequential {
            assert!(
                elapsed < floor + Duration::from_millis(MS * 3 / 2),
                "{ctx}: {elapsed:?}"
            );
            assert!(
                elapsed < Duration::from_millis(MS * N as u64 * 2 / 3),
                "{ctx}: {elapsed:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrency_bounds_a_large_message() {
    let gauge = Arc::new(Gauge::default());
    let exec = Executor::new(registry(vec![gauge_tool(gauge.clone(), 1)])).with_strategy(
        Strategy::Parallel {
            max_concurrency: Some(5),
        },
    );
    let calls: Vec<ToolCall> = (0..100)
        .map(|i| call(&format!("c{i}"), "busy", json!({})))
        .collect();
    let results = exec.execute(&calls, &RunContext::default()).await;
    assert_eq!(results.len(), 100);
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 5);
}

// ---------------------------------------------------------------------------------
// hooks

#[derive(Default)]
struct Audit {
    before: Mutex<Vec<String>>,
    after: Mutex<Vec<(String, &'static str)>>,
}

impl Hooks for Audit {
    fn before(&self, call: &ToolCall) -> BeforeAction {
        self.before.lock().unwrap().push(call.id.clone());
        if call.name == "rm" || call.arguments.get("forbidden").is_some() {
            BeforeAction::Skip(format!("policy forbids {}", call.id))
        } else {
            BeforeAction::Proceed
        }
    }

    fn after(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) {
        let kind = match outcome {
            Ok(_) => "ok",
            Err(e) => e.kind(),
        };
        self.after.lock().unwrap().push((call.id.clone(), kind));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_hooks_skip_calls_and_after_hooks_see_every_outcome() {
    let ran = Arc::new(AtomicUsize::new(0));
    let calls = [
        call("a", "add", json!({"a": 1, "b": 1})),
        call("rm", "rm", json!({})),
        call(
            "forbidden",
            "add",
            json!({"a": 1, "b": 1, "forbidden": true}),
        ),
        call("unknown", "nope", json!({})),
        call("invalid", "add", json!({"a": "x"})),
        call("fail", "fail", json!({})),
        call("slow", "slow", json!({})),
    ];
    for strategy in STRATEGIES {
        let r = ran.clone();
        let rm = <dyn Tool>::builder("rm", "Deletes everything.").call(move |_, _| {
            r.fetch_add(1, Ordering::SeqCst);
            async { Ok(ToolOutput::text("deleted")) }
        });
        let fail = <dyn Tool>::builder("fail", "Fails.")
            .call(|_, _| async { Err(ToolError::failed("fail", "no")) });
        let slow = <dyn Tool>::builder("slow", "Too slow.")
            .timeout(Duration::from_millis(10))
            .call(|_, _| async {
                tokio::time::sleep(FOREVER).await;
                Ok(ToolOutput::text("late"))
            });
        let audit = Arc::new(Audit::default());
        let second = Arc::new(Audit::default());
        let exec = Executor::new(registry(vec![add_tool(), rm, fail, slow]))
            .with_strategy(strategy)
            .with_hook(audit.clone())
            .with_hook(second.clone());
        let results = exec.execute(&calls, &RunContext::default()).await;
        let ctx = format!("{strategy:?}");

        assert_eq!(text(&results[0]), "2", "{ctx}");
        for (r, id) in [(&results[1], "rm"), (&results[2], "forbidden")] {
            match err(r) {
                ToolError::Blocked { reason, .. } => {
                    assert!(
                        reason.contains(&format!("policy forbids {id}")),
                        "{ctx}: {reason}"
                    )
                }
                e => panic!("{ctx}: {e:?}"),
            }
        }
        let mut after = audit.after.lock().unwrap().clone();
        after.sort();
        let mut want = vec![
            ("a".to_owned(), "ok"),
            ("rm".to_owned(), "blocked"),
            ("forbidden".to_owned(), "blocked"),
            ("unknown".to_owned(), "not_found"),
            ("invalid".to_owned(), "invalid_args"),
            ("fail".to_owned(), "failed"),
            ("slow".to_owned(), "timeout"),
        ];
        want.sort();
        assert_eq!(
            after, want,
            "{ctx}: the after hook sees each outcome exactly once"
        );
        // The first hook's veto is final: the second hook's before never sees the
        // skipped calls, but its after does.
        assert_eq!(second.after.lock().unwrap().len(), calls.len(), "{ctx}");
        assert!(
            !second.before.lock().unwrap().contains(&"rm".to_owned()),
            "{ctx}"
        );
        assert_eq!(audit.before.lock().unwrap().len(), calls.len(), "{ctx}");
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a skipped call never runs");
}

// ---------------------------------------------------------------------------------
// wrappers

#[tokio::test]
async fn handle_error_turns_failures_into_text_results() {
    let fail: Arc<dyn Tool> = Arc::new(
        <dyn Tool>::builder("fail", "Fails.")
            .call(|_, _| async { Err(ToolError::failed("fail", "disk on fire")) }),
    );
    let cancelled: Arc<dyn Tool> = Arc::new(
        <dyn Tool>::builder("gives_up", "Reports cancellation.")
            .call(|_, _| async { Err(ToolError::cancelled("gives_up")) }),
    );
    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(HandleError::new(fail.clone())))
        .unwrap();
    // Same definition name `fail` would replace, so give the formatter variant its own.
    let custom = <dyn Tool>::builder("fail2", "Fails too.")
        .call(|_, _| async { Err(ToolError::failed("fail2", "x")) });
    reg.register(Arc::new(HandleError::with_formatter(
        Arc::new(custom),
        |e| format!("[{}] try again", e.kind()),
    )))
    .unwrap();
    reg.register(Arc::new(HandleError::new(cancelled))).unwrap();
    for strategy in STRATEGIES {
        let exec = Executor::new(reg.clone()).with_strategy(strategy);
        let results = exec
            .execute(
                &[
                    call("1", "fail", json!({})),
                    call("2", "fail2", json!({})),
                    call("3", "gives_up", json!({})),
                ],
                &RunContext::default(),
            )
            .await;
        assert_eq!(text(&results[0]), "Error: tool `fail` failed: disk on fire");
        assert_eq!(text(&results[1]), "[failed] try again");
        assert_eq!(
            results[0].to_message().kind_status(),
            Some(ToolStatus::Success)
        );
        // Cancellation is not a failure to hand to the model as an observation.
        assert_eq!(err(&results[2]).kind(), "cancelled");
    }
}

#[tokio::test]
async fn return_direct_marks_successes_only() {
    let ok: Arc<dyn Tool> = Arc::new(ok_tool());
    let fail: Arc<dyn Tool> = Arc::new(
        <dyn Tool>::builder("fail", "Fails.")
            .call(|_, _| async { Err(ToolError::failed("fail", "no")) }),
    );
    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(ReturnDirect::new(ok))).unwrap();
    reg.register(Arc::new(ReturnDirect::new(fail))).unwrap();
    reg.register(Arc::new(add_tool())).unwrap();
    for strategy in STRATEGIES {
        let results = Executor::new(reg.clone())
            .with_strategy(strategy)
            .execute(
                &[
                    call("1", "ok", json!({})),
                    call("2", "fail", json!({})),
                    call("3", "add", json!({"a": 1, "b": 2})),
                ],
                &RunContext::default(),
            )
            .await;
        assert!(results[0].outcome.as_ref().unwrap().return_direct);
        assert_eq!(err(&results[1]).kind(), "failed");
        assert!(!results[2].outcome.as_ref().unwrap().return_direct);
    }
}

#[tokio::test]
async fn wrappers_keep_the_inner_definition_and_timeout() {
    let inner: Arc<dyn Tool> = Arc::new(
        <dyn Tool>::builder("slow", "Slow.")
            .timeout(Duration::from_millis(15))
            .call(|_, _| async {
                tokio::time::sleep(FOREVER).await;
                Ok(ToolOutput::text("late"))
            }),
    );
    let handled = HandleError::new(inner.clone());
    let direct = ReturnDirect::new(inner.clone());
    assert_eq!(handled.definition(), inner.definition());
    assert_eq!(direct.definition(), inner.definition());
    assert_eq!(handled.timeout(), Some(Duration::from_millis(15)));
    assert_eq!(direct.timeout(), Some(Duration::from_millis(15)));
    // The executor enforces the inner tool's limit through the wrapper.
    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(direct)).unwrap();
    let results = Executor::new(reg)
        .execute(&[call("1", "slow", json!({}))], &RunContext::default())
        .await;
    assert_eq!(err(&results[0]).kind(), "timeout");
}

// ---------------------------------------------------------------------------------
// results as messages

trait KindStatus {
    fn kind_status(&self) -> Option<ToolStatus>;
}

impl KindStatus for ironloop::Message {
    fn kind_status(&self) -> Option<ToolStatus> {
        match &self.kind {
            MessageKind::Tool { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn tool_fields(m: &ironloop::Message) -> (String, ToolStatus, Option<Value>) {
    match &m.kind {
        MessageKind::Tool {
            tool_call_id,
            status,
            artifact,
        } => (tool_call_id.clone(), *status, artifact.clone()),
        k => panic!("not a tool message: {k:?}"),
    }
}

#[test]
fn to_message_carries_status_ids_name_and_artifact() {
    let obj = json!({"sum": 3, "terms": [1, 2]});
    let success = ToolResult {
        tool_call_id: "call_1".into(),
        name: "add".into(),
        outcome: Ok(ToolOutput::json(obj.clone())),
        reasoning: None,
    };
    let m = success.to_message();
    assert_eq!(m.type_name(), "tool");
    assert_eq!(m.name.as_deref(), Some("add"));
    assert_eq!(
        tool_fields(&m),
        ("call_1".into(), ToolStatus::Success, Some(obj.clone()))
    );
    assert_eq!(
        serde_json::from_str::<Value>(&m.content.text()).unwrap(),
        obj
    );

    let plain = ToolResult {
        tool_call_id: "call_2".into(),
        name: "echo".into(),
        outcome: Ok(ToolOutput::json(json!("hello"))),
        reasoning: None,
    };
    let m = plain.to_message();
    assert_eq!(m.content, Content::Text("hello".into()));
    assert_eq!(
        tool_fields(&m),
        ("call_2".into(), ToolStatus::Success, None)
    );

    let failure = ToolResult {
        tool_call_id: "call_3".into(),
        name: "add".into(),
        outcome: Err(ToolError::InvalidArgs {
            tool: "add".into(),
            reason: "\"b\" is a required property".into(),
        }),
        reasoning: None,
    };
    let m = failure.to_message();
    assert_eq!(m.name.as_deref(), Some("add"));
    assert_eq!(tool_fields(&m), ("call_3".into(), ToolStatus::Error, None));
    let t = m.content.text();
    assert!(
        t.starts_with("Error: invalid arguments for tool `add`"),
        "{t}"
    );
    assert!(
        t.contains("\"b\" is a required property") && t.contains("Please fix your mistakes"),
        "{t}"
    );

    // Every message gets its own id; the serialized form says `status`.
    assert_ne!(success.to_message().id, success.to_message().id);
    let v = serde_json::to_value(failure.to_message()).unwrap();
    assert_eq!(v["status"], "error");
    assert_eq!(v["tool_call_id"], "call_3");
    assert_eq!(v["type"], "tool");
}

#[tokio::test]
async fn executed_results_become_matching_messages() {
    let exec = Executor::new(registry(vec![add_tool()]));
    let calls = [
        call("x", "add", json!({"a": 2, "b": 2})),
        call("y", "add", json!({})),
    ];
    let msgs: Vec<_> = exec
        .execute(&calls, &RunContext::default())
        .await
        .iter()
        .map(ToolResult::to_message)
        .collect();
    assert_eq!(tool_fields(&msgs[0]).0, "x");
    assert_eq!(tool_fields(&msgs[0]).1, ToolStatus::Success);
    assert_eq!(msgs[0].content.text(), "4");
    assert_eq!(tool_fields(&msgs[1]).0, "y");
    assert_eq!(tool_fields(&msgs[1]).1, ToolStatus::Error);
}

// ---------------------------------------------------------------------------------
// panics outside the tool's future

/// A tool whose `call` panics before it even returns its future.
struct PanicsEagerly(ironloop::ToolDefinition);

impl Tool for PanicsEagerly {
    fn definition(&self) -> &ironloop::ToolDefinition {
        &self.0
    }

    fn call<'a, 'b>(
        &'a self,
        _args: Value,
        _ctx: ironloop::ToolContext,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'b>,
    >
    where
        'a: 'b,
        Self: 'b,
    {
        panic!("no future for you")
    }
}

struct PanickyHook;

impl Hooks for PanickyHook {
    fn before(&self, call: &ToolCall) -> BeforeAction {
        if call.id == "hook_panics" {
            panic!("hook bug");
        }
        BeforeAction::Proceed
    }
}

#[tokio::test]
async fn panics_in_call_or_in_a_hook_cost_only_their_call() {
    let reg = registry(vec![add_tool()]);
    reg.register(Arc::new(PanicsEagerly(ironloop::ToolDefinition::new(
        "eager",
        "",
        json!({"type": "object"}),
    ))))
    .unwrap();
    let calls = [
        call("a", "add", json!({"a": 1, "b": 1})),
        call("eager", "eager", json!({})),
        call("hook_panics", "add", json!({"a": 2, "b": 2})),
        call("b", "add", json!({"a": 3, "b": 3})),
    ];
    for strategy in STRATEGIES {
        let exec = Executor::new(reg.clone())
            .with_strategy(strategy)
            .with_hook(Arc::new(PanickyHook));
        let results = exec.execute(&calls, &RunContext::default()).await;
        let ctx = format!("{strategy:?}");
        assert_eq!(ids(&results), ["a", "eager", "hook_panics", "b"], "{ctx}");
        assert_eq!(text(&results[0]), "2", "{ctx}");
        assert_eq!(text(&results[3]), "6", "{ctx}");
        match err(&results[1]) {
            ToolError::Failed { message, .. } => {
                assert!(message.contains("no future for you"), "{ctx}: {message}")
            }
            e => panic!("{ctx}: {e:?}"),
        }
        match err(&results[2]) {
            ToolError::Failed { message, .. } => {
                assert!(message.contains("hook bug"), "{ctx}: {message}")
            }
            e => panic!("{ctx}: {e:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------
// tracing

/// Records each span it opens and closes: `(call id, outcome kind)` at the end, and
/// which span the tool saw in its context.
#[derive(Default)]
struct Tracer {
    started: Mutex<Vec<String>>,
    ended: Mutex<Vec<(String, &'static str)>>,
}

impl ironloop::tool::CallTracer for Tracer {
    fn started(&self, call: &ToolCall) -> Option<ironloop::tool::CallSpan> {
        self.started.lock().unwrap().push(call.id.clone());
        Some(Arc::new(call.id.clone()))
    }

    fn ended(
        &self,
        span: ironloop::tool::CallSpan,
        call: &ToolCall,
        outcome: &Result<ToolOutput, ToolError>,
    ) {
        // The span given back is the one this call was given.
        assert_eq!(span.downcast_ref::<String>(), Some(&call.id));
        let kind = match outcome {
            Ok(_) => "ok",
            Err(e) => e.kind(),
        };
        self.ended.lock().unwrap().push((call.id.clone(), kind));
    }
}

/// `span_id()`: returns the id its context's span carries.
fn span_tool() -> FnTool {
    <dyn Tool>::builder("span_id", "Returns its span.").call(|_, ctx| async move {
        let seen = ctx
            .span
            .as_ref()
            .and_then(|s| s.downcast_ref::<String>().cloned());
        Ok(ToolOutput::text(seen.unwrap_or_default()))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_gets_one_span_ended_with_its_outcome_for_every_strategy() {
    for strategy in STRATEGIES {
        let exec = Executor::new(registry(vec![span_tool(), add_tool()])).with_strategy(strategy);
        let tracer = Arc::new(Tracer::default());
        let run = RunContext {
            tracer: Some(tracer.clone()),
            ..Default::default()
        };
        let calls = [
            call("a", "span_id", json!({})),
            call("b", "add", json!({"a": 1, "b": 2})),
            call("c", "nope", json!({})),
            call("d", "add", json!({"a": "x"})),
        ];
        let out = exec.execute(&calls, &run).await;
        assert_eq!(
            text(&out[0]),
            "a",
            "{strategy:?}: the tool sees its call's span"
        );
        let mut ended = tracer.ended.lock().unwrap().clone();
        ended.sort();
        assert_eq!(
            ended,
            [
                ("a".into(), "ok"),
                ("b".into(), "ok"),
                ("c".into(), "not_found"),
                ("d".into(), "invalid_args")
            ],
            "{strategy:?}"
        );
        assert_eq!(tracer.started.lock().unwrap().len(), 4, "{strategy:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_execute_still_ends_its_calls_spans() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let exec = Executor::new(registry(vec![wait_tool("wait", tokens.clone())]));
    let tracer = Arc::new(Tracer::default());
    let run = RunContext {
        tracer: Some(tracer.clone()),
        ..Default::default()
    };
    let calls = [call("w1", "wait", json!({})), call("w2", "wait", json!({}))];
    let r = tokio::time::timeout(Duration::from_millis(100), exec.execute(&calls, &run)).await;
    assert!(r.is_err(), "the calls wait forever");
    // The spawned calls are aborted; their spans end as cancelled once they are dropped.
    let deadline = Instant::now() + Duration::from_secs(5);
    while tracer.ended.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "spans left open");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut ended = tracer.ended.lock().unwrap().clone();
    ended.sort();
    assert_eq!(
        ended,
        [("w1".into(), "cancelled"), ("w2".into(), "cancelled")]
    );
}

#[tokio::test]
async fn an_untraced_run_gives_tools_no_span() {
    let exec = Executor::new(registry(vec![span_tool()]));
    let out = exec
        .execute(&[call("a", "span_id", json!({}))], &RunContext::default())
        .await;
    assert_eq!(text(&out[0]), "");
}
