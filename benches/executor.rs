//! R1 (BENCHMARKS.md): a trivial Rust tool executed by the `Executor`.
//!
//! Time per call for 1 / 100 / 10,000 calls of one message, per strategy, on a
//! multi-thread tokio runtime (one worker per core), `execute` driven from a task on
//! that runtime. `time` is per `execute` (all n calls); `thrpt` is calls per second,
//! so 1 / thrpt is the time per call.
//!
//! Targets: ≤ 1 µs/call sequential; 10,000 parallel calls ≤ 5 ms in total.
//!
//! Run: `cargo bench --bench executor` (`BENCH_WORKERS=n` sets the runtime's worker
//! count; the default is one per core).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ironloop::tool::{Tool, ToolOutput};
use ironloop::{Executor, RunContext, Strategy, ToolCall, ToolRegistry};
use serde_json::json;

const SIZES: [usize; 3] = [1, 100, 10_000];

fn executor(strategy: Strategy) -> Executor {
    let registry = Arc::new(ToolRegistry::new());
    let tool = <dyn Tool>::builder("echo", "Returns a constant.")
        .param("a", json!({"type": "integer"}), "a number")
        .param_opt("b", json!({"type": "string"}), "a label")
        .call(|_args, _ctx| async { Ok(ToolOutput::text("ok")) });
    registry.register(Arc::new(tool)).expect("valid schema");
    Executor::new(registry).with_strategy(strategy)
}

fn calls(n: usize) -> Vec<ToolCall> {
    (0..n)
        .map(|i| ToolCall::new(format!("call_{i}"), "echo", json!({"a": i, "b": "x"})))
        .collect()
}

fn bench_executor(c: &mut Criterion) {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = std::env::var("BENCH_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder.worker_threads(n);
    }
    let rt = builder.enable_all().build().expect("tokio runtime");
    let strategies = [
        ("sequential", Strategy::Sequential),
        (
            "parallel",
            Strategy::Parallel {
                max_concurrency: None,
            },
        ),
        ("batched64", Strategy::Batched { size: 64 }),
    ];

    let mut group = c.benchmark_group("executor");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (label, strategy) in strategies {
        let exec = executor(strategy);
        for n in SIZES {
            let calls = Arc::new(calls(n));
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(label, n), &calls, |b, calls| {
                // The loop runs on a runtime worker, as `execute` does when a graph
                // step or the Python `ToolNode` drives it (they spawn their run onto
                // the runtime): spawned calls go to the worker's own queue, and no
                // iteration pays a wake-up of the bench's thread.
                b.iter_custom(|iters| {
                    let (exec, calls) = (exec.clone(), calls.clone());
                    rt.block_on(rt.spawn(async move {
                        let run = RunContext::default();
                        let start = Instant::now();
                        for _ in 0..iters {
                            let results = exec.execute(black_box(&calls), &run).await;
                            debug_assert!(results.iter().all(|r| r.outcome.is_ok()));
                            black_box(results);
                        }
                        start.elapsed()
                    }))
                    .expect("bench task")
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_executor);
criterion_main!(benches);
