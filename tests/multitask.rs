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
                    // Cancellation first: a test that cancels a waiting run and then
                    // opens the gate for the next one must not see the cancelled run
                    // take the permit (select! picks among ready branches at random).
                    tokio::select! {
                        biased;
                        _ = ctx.cancel.cancelled() => {
                            return Err(NodeFailure::Error(GraphError::Cancelled))
                        }
                        p = gate.acquire() => p.expect("gate open").forget(),
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
    fixture_on(Arc::new(MemorySaver::new()))
}

/// The graph of [`fixture`] on `cp`.
fn fixture_on(cp: Arc<dyn Checkpointer>) -> Fixture {
    let gate = Arc::new(Semaphore::new(0));
    let started = Arc::new(Notify::new());
    Fixture {
        graph: Arc::new(compile(&gate, &started, cp)),
        gate,
        started,
    }
}

fn compile(gate: &Arc<Semaphore>, started: &Arc<Notify>, cp: Arc<dyn Checkpointer>) -> Graph {
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
    Graph::compile(spec, Some(cp), Arc::new(JsonCodec), vec![], vec![]).unwrap()
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

/// A run whose caller cancelled it (an `ainvoke` task cancelled) is on its way out:
/// a `Reject` run right after it waits for it to end instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_waits_for_a_cancelled_run_to_end() {
    let f = fixture();
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut first_opts = opts(Multitask::Reject);
    first_opts.cancel = cancel.clone();
    let g = f.graph.clone();
    let first = tokio::spawn(async move { g.run(said("one"), first_opts).await });
    tokio::time::timeout(Duration::from_secs(10), f.started.notified())
        .await
        .expect("work started");
    cancel.cancel();
    f.gate.add_permits(1);
    let r = f
        .graph
        .run(said("two"), opts(Multitask::Reject))
        .await
        .expect("the cancelled run's thread is free once it ended");
    assert_eq!(
        log(&r.state).as_array().unwrap().last(),
        Some(&json!("after"))
    );
    assert!(matches!(first.await.unwrap(), Err(GraphError::Cancelled)));
}

/// ... but not for ever: a cancelled run that nobody drives to its end (a sync
/// caller's abandoned stream still referenced) keeps the thread, and `Reject` fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_fails_when_a_cancelled_run_does_not_end() {
    let f = fixture();
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut first_opts = opts(Multitask::Reject);
    first_opts.cancel = cancel.clone();
    let mut stuck = Box::pin(f.graph.run(said("one"), first_opts));
    // Polled until its node waits at the gate, then left unpolled.
    tokio::select! {
        _ = &mut stuck => panic!("the run should wait at the gate"),
        _ = f.started.notified() => {}
    }
    cancel.cancel();
    let err = f
        .graph
        .run(said("two"), opts(Multitask::Reject))
        .await
        .err()
        .unwrap();
    assert!(matches!(&err, GraphError::Busy(t) if t == "t"), "{err}");
    drop(stuck);
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

/// Runs of two saver objects on one SQLite file see each other only through the
/// thread's run lease in the store, as runs of two processes do (the tests with real
/// processes are `tests/python/test_multitask_processes.py`).
#[cfg(feature = "sqlite")]
mod across_savers {
    use super::*;
    use ironloop::checkpoint::{SqliteSaver, StopAsk};

    /// A file in a directory removed when dropped.
    struct Dir(std::path::PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let p = std::env::temp_dir().join(format!(
                "ironloop-lease-{name}-{}-{nanos}",
                std::process::id()
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }

        fn db(&self) -> std::path::PathBuf {
            self.0.join("runs.db")
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The fixture's graph on one saver of `dir`'s file, and the same graph (its gate
    /// shared) on a second saver of that file.
    fn two(dir: &Dir) -> (Fixture, Arc<Graph>) {
        let f = fixture_on(Arc::new(SqliteSaver::open(dir.db()).unwrap()));
        let other = compile(
            &f.gate,
            &f.started,
            Arc::new(SqliteSaver::open(dir.db()).unwrap()),
        );
        (f, Arc::new(other))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_is_one_savers_at_a_time_and_asks_reach_its_holder() {
        let dir = Dir::new("lease");
        let (a, b) = (
            SqliteSaver::open(dir.db()).unwrap(),
            SqliteSaver::open(dir.db()).unwrap(),
        );
        let held = a.try_lease("t").await.unwrap().expect("free");
        assert!(!held.is_local());
        assert!(b.try_lease("t").await.unwrap().is_none(), "held by a");
        assert!(b.try_lease("u").await.unwrap().is_some(), "another thread");
        assert_eq!(held.asked(), None);
        let ask = b
            .ask_stop("t", StopAsk::Rollback)
            .await
            .unwrap()
            .expect("first ask");
        assert_eq!(held.asked(), Some(StopAsk::Rollback));
        drop(ask);
        assert_eq!(held.asked(), None, "a withdrawn ask is gone");
        let ask = b.ask_stop("t", StopAsk::Interrupt).await.unwrap();
        assert_eq!(held.asked(), Some(StopAsk::Interrupt));
        drop(ask);
        held.release().await;
        assert!(b.try_lease("t").await.unwrap().is_some(), "released");
        // A private in-memory database: no other process can open it.
        let mem = SqliteSaver::open(":memory:").unwrap();
        assert!(mem.try_lease("t").await.unwrap().unwrap().is_local());
    }

    /// A holder waiting for asks (`Asks::wait`, what a run's watching task awaits)
    /// gets an ask that stood before it waited at once, and one made while it waits
    /// through the lease file's bell; holders of other threads keep waiting.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_holder_waiting_for_asks_gets_them_through_the_bell() {
        let dir = Dir::new("bell");
        let (a, b) = (
            SqliteSaver::open(dir.db()).unwrap(),
            SqliteSaver::open(dir.db()).unwrap(),
        );
        let held = a.try_lease("t").await.unwrap().expect("free");
        let asks = held.asks().expect("a lease of a file");
        let standing = b.ask_stop("t", StopAsk::Interrupt).await.unwrap();
        let got = tokio::time::timeout(Duration::from_millis(20), asks.wait()).await;
        assert_eq!(
            got.ok(),
            Some(StopAsk::Interrupt),
            "a standing ask, at once"
        );
        drop(standing);
        // Many holders wait; an ask to one of them wakes it, not the others.
        let mut leases = Vec::new();
        let mut waits = Vec::new();
        for i in 0..50 {
            let l = a.try_lease(&format!("w{i}")).await.unwrap().expect("free");
            let asks = l.asks().unwrap();
            waits.push(tokio::spawn(async move { asks.wait().await }));
            leases.push(l);
        }
        let waiting = {
            let asks = asks.clone();
            tokio::spawn(async move { asks.wait().await })
        };
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(!waiting.is_finished(), "no ask stands");
        let _ask = b.ask_stop("t", StopAsk::Rollback).await.unwrap().unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert_eq!(got.unwrap().unwrap(), StopAsk::Rollback);
        let _other = b.ask_stop("w7", StopAsk::Interrupt).await.unwrap().unwrap();
        let w7 = waits.remove(7);
        let got = tokio::time::timeout(Duration::from_secs(5), w7).await;
        assert_eq!(got.unwrap().unwrap(), StopAsk::Interrupt);
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(
            waits.iter().all(|w| !w.is_finished()),
            "an ask woke another"
        );
        for w in &waits {
            w.abort();
        }
        drop(leases);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reject_refuses_a_run_of_another_saver() {
        let dir = Dir::new("reject");
        let (f, other) = two(&dir);
        let first = first_run(&f, "one").await;
        let err = other
            .run(said("two"), opts(Multitask::Reject))
            .await
            .err()
            .unwrap();
        assert!(
            matches!(&err, GraphError::BusyElsewhere(t) if t == "t"),
            "{err}"
        );
        assert!(err.to_string().contains("in another process"), "{err}");
        f.gate.add_permits(1);
        assert_eq!(
            log(&first.await.unwrap().unwrap()),
            json!(["one", "work", "after"])
        );
        // Once the run ended, the thread is free at once.
        f.gate.add_permits(1);
        let r = other
            .run(said("two"), opts(Multitask::Reject))
            .await
            .unwrap();
        assert_eq!(
            log(&r.state),
            json!(["one", "work", "after", "two", "work", "after"])
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn enqueue_waits_for_a_run_of_another_saver() {
        let dir = Dir::new("enqueue");
        let (f, other) = two(&dir);
        let first = first_run(&f, "one").await;
        let second =
            tokio::spawn(async move { other.run(said("two"), opts(Multitask::Enqueue)).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
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
    async fn interrupt_stops_a_run_of_another_saver_at_the_end_of_its_step() {
        let dir = Dir::new("interrupt");
        let (f, other) = two(&dir);
        let first = first_run(&f, "one").await;
        let second =
            tokio::spawn(async move { other.run(said("two"), opts(Multitask::Interrupt)).await });
        // The first run sees the ask while its step still waits; the step ends when
        // the gate opens, and the run stops there.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !second.is_finished(),
            "the new run waits for the safe point"
        );
        f.gate.add_permits(2);
        assert_eq!(log(&first.await.unwrap().unwrap()), json!(["one", "work"]));
        let r = second.await.unwrap().unwrap();
        assert_eq!(
            log(&r.state),
            json!(["one", "work", "two", "work", "after"])
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rollback_stops_a_run_of_another_saver_and_discards_its_progress() {
        let dir = Dir::new("rollback");
        let (f, other) = two(&dir);
        f.gate.add_permits(1);
        f.graph
            .run(said("zero"), opts(Multitask::Reject))
            .await
            .unwrap();
        let first = first_run(&f, "one").await;
        let o = other.clone();
        let second =
            tokio::spawn(async move { o.run(said("two"), opts(Multitask::Rollback)).await });
        // The first run is stopped while its `work` still waits at the gate.
        let err = first.await.unwrap().err().unwrap();
        assert!(
            matches!(&err, GraphError::RolledBack(t) if t == "t"),
            "{err}"
        );
        f.gate.add_permits(1);
        let r = second.await.unwrap().unwrap();
        assert_eq!(
            log(&r.state),
            json!(["zero", "work", "after", "two", "work", "after"])
        );
        // The stopped run deleted its own checkpoints: one linear chain, none of "one".
        let cp = other.checkpointer().unwrap();
        let records = cp.list("t", None, None).await.unwrap();
        let chain = cp.chain("t", &records[0].id).await.unwrap();
        assert_eq!(records.len(), chain.len(), "an abandoned branch is left");
        for r in &records {
            let state = other.load("t", Some(&r.id)).await.unwrap().unwrap();
            let words = log(&state.state).to_string();
            assert!(!words.contains("one"), "{words}");
        }
    }
}
