//! The graph step loop alone (the Rust half of W4 in BENCHMARKS.md), and the savers.
//!
//! - `graph/step/{none,memory,sqlite}`: a `Graph` of two Rust `NodeRunner`s over a JSON
//!   `count` channel, `a` -> `b` -> `a` ..., each writing `count + 1`, a router on each
//!   node ending the run at 1,000 steps. `time` is one whole run (1,000 steps), so the
//!   time per step is `time / 1000`; `thrpt` is steps per second. Every run uses a
//!   fresh thread id; the SQLite file is a temp file (WAL mode), shared by the runs.
//! - `graph/put/{memory,sqlite}`: `Checkpointer::put` of a small record (one write of a
//!   number, one next task, the metadata a loop step saves), chained to the previous one
//!   as the step loop does. `time` is 1,000 puts in a row (so that SQLite's periodic WAL
//!   checkpoints, one every few hundred puts, fall into every sample alike); the time
//!   per put is `time / 1000`.
//!
//! - `record/{encode,decode,checksum}/{small,message,snapshot}`: a record's stored text
//!   (`checkpoint::record`, format 4) from the record and back, and the CRC-32 inside
//!   it alone over the same text, for three records: `small` (the `put` record above),
//!   `message` (one write of a 272-byte chat message, W4m's) and `snapshot` (that one
//!   plus a snapshot of 100 such messages). `checksum / encode` is what the checksum
//!   costs a save, `checksum / decode` a load.
//!
//! No Python is involved: the difference from the Python W4 figures is the cost of
//! calling Python nodes and routers and converting their values.
//!
//! Run: `cargo bench --bench graph` (add `-- step`, `-- put` or `-- record` to select).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ironloop::checkpoint::{
    CheckpointRecord, Checkpointer, MemorySaver, SqliteSaver, TaskRecord, Write,
};
use ironloop::graph::{
    ChannelKind, Goto, Graph, GraphError, GraphSpec, JsonCodec, NodeFailure, NodeOutput,
    NodeRunner, Router, RunInput, RunOptions, StateView, TaskContext, Val, START,
};
use serde_json::{json, Value};

const STEPS: u64 = 1_000;
const PUTS: u64 = 1_000;

fn count(s: &StateView) -> i64 {
    s.get("count")
        .and_then(Val::as_json)
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// `count += 1`.
struct Inc;

#[async_trait]
impl NodeRunner for Inc {
    async fn run(
        &self,
        state: StateView,
        _arg: Option<Val>,
        _ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        Ok(NodeOutput {
            writes: vec![("count".to_owned(), Val::Json(json!(count(&state) + 1)))],
            ..Default::default()
        })
    }
}

/// To `next`, or the end once `count` reaches `limit`.
struct Until {
    limit: i64,
    next: &'static str,
}

impl Router for Until {
    fn route(&self, s: &StateView, _ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        Ok(vec![if count(s) >= self.limit {
            Goto::End
        } else {
            Goto::Node(self.next.to_owned())
        }])
    }
}

fn counter_graph(cp: Option<Arc<dyn Checkpointer>>) -> Graph {
    let limit = STEPS as i64;
    let spec = GraphSpec::default()
        .channel("count", ChannelKind::LastValue)
        .node("a", Arc::new(Inc))
        .node("b", Arc::new(Inc))
        .edge(START, "a")
        .branch("a", Arc::new(Until { limit, next: "b" }), None)
        .branch("b", Arc::new(Until { limit, next: "a" }), None);
    Graph::compile(spec, cp, Arc::new(JsonCodec), vec![], vec![]).expect("valid graph")
}

/// A temp SQLite path, removed (with its WAL) on drop.
struct TempDb(PathBuf);

impl TempDb {
    fn new(label: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "ironloop-bench-{}-{label}-{}.sqlite",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        TempDb(std::env::temp_dir().join(name))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

fn saver(kind: &str, db: &TempDb) -> Option<Arc<dyn Checkpointer>> {
    match kind {
        "none" => None,
        "memory" => Some(Arc::new(MemorySaver::new())),
        "sqlite" => Some(Arc::new(SqliteSaver::open(&db.0).expect("open sqlite"))),
        _ => unreachable!(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn bench_steps(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("graph/step");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for kind in ["none", "memory", "sqlite"] {
        let db = TempDb::new(kind);
        let graph = Arc::new(counter_graph(saver(kind, &db)));
        let threads = Arc::new(AtomicU64::new(0));
        // One untimed run first (on a fresh SQLite file it creates the WAL).
        let t0 = Instant::now();
        let prime = RunOptions {
            thread_id: (kind != "none").then(|| "prime".to_owned()),
            recursion_limit: STEPS as usize + 10,
            ..Default::default()
        };
        let input = RunInput::Values(vec![("count".into(), json!(0).into())]);
        rt.block_on(graph.run(input, prime)).expect("run");
        eprintln!(
            "graph/step/{kind}: first run ({STEPS} steps) took {:?}",
            t0.elapsed()
        );
        group.throughput(Throughput::Elements(STEPS));
        group.bench_function(kind, |b| {
            b.iter_custom(|iters| {
                let (graph, threads) = (graph.clone(), threads.clone());
                let total = rt
                    .block_on(rt.spawn(async move {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let opts = RunOptions {
                                thread_id: (kind != "none").then(|| {
                                    format!("t{}", threads.fetch_add(1, Ordering::Relaxed))
                                }),
                                recursion_limit: STEPS as usize + 10,
                                ..Default::default()
                            };
                            let input = RunInput::Values(vec![("count".into(), json!(0).into())]);
                            let out = graph.run(input, opts).await.expect("run");
                            assert_eq!(count(&out.state), STEPS as i64, "wrong final count");
                            black_box(out);
                        }
                        start.elapsed()
                    }))
                    .expect("bench task");
                total
            });
        });
        drop(graph);
    }
    group.finish();
}

fn record(i: u64, parent: Option<String>) -> CheckpointRecord {
    let id = format!("00000000-0000-4000-8000-{i:012}");
    CheckpointRecord {
        snapshot: None,
        id: id.clone(),
        parent_id: parent,
        step: i as i64,
        source: "loop".into(),
        writes: vec![Write {
            node: if i.is_multiple_of(2) { "a" } else { "b" }.into(),
            channel: "count".into(),
            value: json!(i).into(),
            new_task: false,
        }],
        next: vec![TaskRecord {
            id: format!("{id}:0:a"),
            node: "a".into(),
            arg: None,
            timeout: None,
        }],
        created_at: 1.7e9 + i as f64,
        metadata: json!({"source": "loop", "step": i}),
    }
}

fn bench_puts(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("graph/put");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for kind in ["memory", "sqlite"] {
        let db = TempDb::new(&format!("put-{kind}"));
        let cp = saver(kind, &db).expect("a saver");
        // One untimed put first: on a fresh SQLite file it creates the WAL, which can take
        // far longer than a put (and would skew criterion's choice of iteration counts).
        let t0 = Instant::now();
        rt.block_on(cp.put("prime", record(u64::MAX / 2, None)))
            .expect("put");
        eprintln!(
            "graph/put/{kind}: first put on a fresh saver took {:?}",
            t0.elapsed()
        );
        let next = Arc::new(AtomicU64::new(0));
        group.throughput(Throughput::Elements(PUTS));
        group.bench_function(kind, |b| {
            b.iter_custom(|iters| {
                let (cp, next) = (cp.clone(), next.clone());
                rt.block_on(rt.spawn(async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        // Records are built outside the timed region.
                        let first = next.fetch_add(PUTS, Ordering::Relaxed);
                        let records: Vec<CheckpointRecord> = (first..first + PUTS)
                            .map(|i| record(i, i.checked_sub(1).map(|p| record(p, None).id)))
                            .collect();
                        let start = Instant::now();
                        for r in records {
                            cp.put("bench-thread", r).await.expect("put");
                        }
                        total += start.elapsed();
                    }
                    total
                }))
                .expect("bench task")
            });
        });
        drop(cp);
    }
    group.finish();
}

/// A chat message of 272 bytes as JSON, as W4m's records hold.
fn message(i: usize) -> Value {
    json!({
        "type": "ai",
        "id": format!("run-0000-{i:04}"),
        "content": "The weather in Paris is sunny, 21 degrees; tomorrow brings clouds and rain.",
        "tool_calls": [],
        "additional_kwargs": {},
        "response_metadata": {"model_name": "scripted", "finish_reason": "stop"},
    })
}

fn bench_record_codec(c: &mut Criterion) {
    use ironloop::checkpoint::record;
    let mut group = c.benchmark_group("record");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let small = record(7, Some(record(6, None).id));
    let mut with_message = small.clone();
    with_message.writes = vec![Write {
        node: "agent".into(),
        channel: "messages".into(),
        value: json!([message(0)]).into(),
        new_task: false,
    }];
    let mut snapshot = with_message.clone();
    snapshot.snapshot = Some(
        json!({
            "v": 1,
            "values": {"messages": (0..100).map(message).collect::<Vec<_>>()},
            "versions": {"messages": 100},
        })
        .into(),
    );
    for (name, r) in [
        ("small", small),
        ("message", with_message),
        ("snapshot", snapshot),
    ] {
        let text = record::encode(&r).expect("encode");
        let body = text.rsplit_once(',').expect("a checksum").0.to_owned();
        eprintln!("record/{name}: {} bytes", text.len());
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("encode/{name}"), |b| {
            b.iter(|| record::encode(black_box(&r)).expect("encode"))
        });
        group.bench_function(format!("decode/{name}"), |b| {
            b.iter(|| {
                record::decode(black_box(&text), &r.id, r.parent_id.as_deref()).expect("decode")
            })
        });
        group.bench_function(format!("checksum/{name}"), |b| {
            b.iter(|| record::checksum(&r.id, r.parent_id.as_deref(), black_box(&body)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_steps, bench_puts, bench_record_codec);
criterion_main!(benches);
