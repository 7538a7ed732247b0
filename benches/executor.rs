//! R1 (BENCHMARKS.md): a trivial Rust tool executed by the `Executor`.
//!
//! Time per call for 1 / 100 / 10,000 calls of one message, per strategy, on a
//! multi-thread tokio runtime. Criterion prints the per-element time (`thrpt` is
//! calls per second; `time` is per `execute`, so divide by the call count, or read
//! the element throughput).
//!
//! Targets: ≤ 1 µs/call sequential; 10,000 parallel calls ≤ 5 ms in total.
//!
//! Run: `cargo bench --bench executor`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
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
        let run = RunContext::default();
        for n in SIZES {
            let calls = calls(n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(label, n), &calls, |b, calls| {
                b.to_async(&rt).iter(|| async {
                    let results = exec.execute(black_box(calls), &run).await;
                    debug_assert!(results.iter().all(|r| r.outcome.is_ok()));
                    black_box(results)
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_executor);
criterion_main!(benches);
