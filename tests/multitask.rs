//! A second run on a thread that is running (same checkpointer, same process)
//! follows its multitask strategy: reject, enqueue, interrupt (stop at the end of the
//! step under way) or rollback (stop now, continue from where the run started).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ironloop::checkpoint::{Checkpointer, MemorySaver};
use ironloop::graph::{
    ChannelKind, Graph, GraphError, GraphSpec, JsonCodec, Multitask, NodeFailure, NodeOutput,
    NodeRunner, Reducer, RunInput, RunOptions, StateView, TaskContext, Val, END, START,
};
use serde_json::{json, Value};
use tokio::sync::{Notify, Semaphore};

struct Append;
impl Reducer for Append {
    fn reduce(&self, _: &str, cur: Option<Val>, upd: Val) -> Result<Val, GraphError> {
        let mut a = match cur {
            Some(Val::Json(Value::Array(a))) => a,
            _ => vec![],
        };
        if let Val::Json(Value::Array(b)) = upd {
            a.extend(b);
        }
        Ok(Val::Json(Value::Array(a)))
    }
}

/// Appends its name to `log`; while `gate` has no permit for it, it says it started
/// (`started`) and waits.
struct Step {
    name: &'static str,
    gate: Option<(Arc<Semaphore>, Arc<Notify>)>,
}

#[async_trait]
impl NodeRunner for Step {
    async fn run(
        &self,
        _: StateView,
        _: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        // A node that has to wait says so (one notification per wait).
        if let Some((gate, started)) = &self.gate {
            match gate.try_acquire() {
                Ok(p) => p.forget(),
                Err(_) => {
                    started.notify_one();
                    tokio::select! {
                        p = gate.acquire() => p.expect("gate open").forget(),
                        _ = ctx.cancel.cancelled() => {
                            return Err(NodeFailure::Error(GraphError::Cancelled))
                        }
                    }
                }
            }
        }
        Ok(NodeOutput {
            writes: vec![("log".into(), Val::Json(json!([self.name])))],
            ..Default::default()
        })
    }
}

struct Fixture {
    graph: Arc<Graph>,
    gate: Arc<Semaphore>,
    started: Arc<Notify>,
}

/// `START -> work (gated) -> after -> END`, on a MemorySaver.
fn fixture() -> Fixture {
    let gate = Arc::new(Semaphore::new(0));
    let started = Arc::new(Notify::new());
    let spec = GraphSpec::default()
        .channel("log", ChannelKind::Reducer(Arc::new(Append)))
        .node(
            "work",
            Arc::new(Step {
                name: "work",
                gate: Some((gate.clone(), started.clone())),
            }),
        )
        .node(
            "after",
            Arc::new(Step {
                name: "after",
                gate: None,
            }),
        )
        .edge(START, "work")
        .edge("work", "after")
        .edge("after", END);
    let cp: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let graph = Graph::compile(spec, Some(cp), Arc::new(JsonCodec), vec![], vec![]).unwrap();
    Fixture {
        graph: Arc::new(graph),
        gate,
        started,
    }
}

fn opts(strategy: Multitask) -> RunOptions {
    RunOptions {
        thread_id: Some("t".into()),
        multitask: strategy,
        ..Default::default()
    }
}

fn said(word: &str) -> RunInput {
    RunInput::Values(vec![("log".into(), Val::Json(json!([word])))])
}

fn log(state: &StateView) -> Value {
    state
        .get("log")
        .and_then(|v| v.as_json())
        .cloned()
        .unwrap_or(Value::Null)
}

/// Starts a run saying `word` and waits until its `work` node is waiting at the gate.
async fn first_run(
    f: &Fixture,
    word: &'static str,
) -> tokio::task::JoinHandle<Result<StateView, GraphError>> {
    let g = f.graph.clone();
    let h = tokio::spawn(async move {
        g.run(said(word), opts(Multitask::Reject))
            .await
            .map(|r| r.state)
    });
    tokio::time::timeout(Duration::from_secs(10), f.started.notified())
        .await
        .expect("work started");
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_fails_at_once_naming_the_thread() {
    let f = fixture();
    let first = first_run(&f, "one").await;
    let err = f
        .graph
        .run(said("two"), opts(Multitask::Reject))
        .await
        .err()
        .unwrap();
    assert!(matches!(&err, GraphError::Busy(t) if t == "t"), "{err}");
    assert!(err.to_string().contains("\"enqueue\" to run after it"));
    f.gate.add_permits(1);
    assert_eq!(
        log(&first.await.unwrap().unwrap()),
        json!(["one", "work", "after"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_runs_when_the_current_run_ends() {
    let f = fixture();
    let first = first_run(&f, "one").await;
    let g = f.graph.clone();
    let second = tokio::spawn(async move { g.run(said("two"), opts(Multitask::Enqueue)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!second.is_finished());
    f.gate.add_permits(2);
    first.await.unwrap().unwrap();
    let r = second.await.unwrap().unwrap();
    assert_eq!(
        log(&r.state),
        json!(["one", "work", "after", "two", "work", "after"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_stops_the_current_run_at_the_end_of_its_step() {
    let f = fixture();
    let first = first_run(&f, "one").await;
    let g = f.graph.clone();
    let second = tokio::spawn(async move { g.run(said("two"), opts(Multitask::Interrupt)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !second.is_finished(),
        "the new run waits for the safe point"
    );
    f.gate.add_permits(2);
    // The first run finished its step (`work`) and stopped before `after`.
    assert_eq!(log(&first.await.unwrap().unwrap()), json!(["one", "work"]));
    let r = second.await.unwrap().unwrap();
    assert_eq!(
        log(&r.state),
        json!(["one", "work", "two", "work", "after"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_stops_the_current_run_and_continues_from_where_it_started() {
    let f = fixture();
    f.gate.add_permits(1);
    f.graph
        .run(said("zero"), opts(Multitask::Reject))
        .await
        .unwrap();
    let first = first_run(&f, "one").await;
    let g = f.graph.clone();
    let second = tokio::spawn(async move { g.run(said("two"), opts(Multitask::Rollback)).await });
    // The first run is stopped while its `work` still waits at the gate.
    let err = first.await.unwrap().err().unwrap();
    f.gate.add_permits(1);
    let r = second.await.unwrap().unwrap();
    assert!(
        matches!(&err, GraphError::RolledBack(t) if t == "t"),
        "{err}"
    );
    assert_eq!(
        log(&r.state),
        json!(["zero", "work", "after", "two", "work", "after"])
    );
    let latest = f.graph.load("t", None).await.unwrap().unwrap();
    assert_eq!(log(&latest.state), log(&r.state));
    // The stopped run's checkpoints left the history (as LangGraph's server deletes
    // the run): every record is the first run's or the second's, one linear chain.
    let cp = f.graph.checkpointer().unwrap();
    let records = cp.list("t", None, None).await.unwrap();
    let chain = cp.chain("t", &records[0].id).await.unwrap();
    assert_eq!(records.len(), chain.len(), "an abandoned branch is left");
    for r in &records {
        let state = f.graph.load("t", Some(&r.id)).await.unwrap().unwrap();
        let words = log(&state.state).to_string();
        assert!(!words.contains("one"), "{words}");
    }
}
