//! The graph step loop, without Python: JSON state, Rust nodes and routers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use ironloop::checkpoint::{Checkpointer, MemorySaver};
use ironloop::graph::modes;
use ironloop::graph::{
    ChannelKind, Goto, Graph, GraphError, GraphSpec, InterruptKind, JsonCodec, MessageList,
    NodeFailure, NodeOutput, NodeRunner, Reducer, Resume, Router, RunInput, RunOptions, StateView,
    StepObserver, StreamEvent, StreamSink, TaskContext, Val, END, START,
};
use ironloop::message::Message;
use serde_json::{json, Value};

type NodeFn =
    dyn Fn(&StateView, Option<Val>, &TaskContext) -> Result<NodeOutput, NodeFailure> + Send + Sync;

struct F(Box<NodeFn>);

#[async_trait]
impl NodeRunner for F {
    async fn run(
        &self,
        s: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        (self.0)(&s, arg, &ctx)
    }
}

fn node(
    f: impl Fn(&StateView, Option<Val>, &TaskContext) -> Result<NodeOutput, NodeFailure>
        + Send
        + Sync
        + 'static,
) -> Arc<dyn NodeRunner> {
    Arc::new(F(Box::new(f)))
}

fn writes(ws: &[(&str, Value)]) -> Result<NodeOutput, NodeFailure> {
    Ok(NodeOutput {
        writes: ws
            .iter()
            .map(|(c, v)| (c.to_string(), Val::Json(v.clone())))
            .collect(),
        ..Default::default()
    })
}

fn int(s: &StateView, c: &str) -> i64 {
    s.get(c)
        .and_then(|v| v.as_json())
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

type RouteFn = dyn Fn(&StateView) -> Vec<Goto> + Send + Sync;
struct Route(Box<RouteFn>);
impl Router for Route {
    fn route(&self, s: &StateView, _: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        Ok((self.0)(s))
    }
}

struct Add;
impl Reducer for Add {
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

fn compile(spec: GraphSpec, cp: Option<Arc<dyn Checkpointer>>) -> Graph {
    Graph::compile(spec, cp, Arc::new(JsonCodec), vec![], vec![]).unwrap()
}

fn counter_loop(limit: i64) -> GraphSpec {
    let inc = |s: &StateView, _: Option<Val>, _: &TaskContext| {
        writes(&[("count", json!(int(s, "count") + 1))])
    };
    GraphSpec::default()
        .channel("count", ChannelKind::LastValue)
        .node("a", node(inc))
        .node("b", node(inc))
        .edge(START, "a")
        .branch(
            "a",
            Arc::new(Route(Box::new(move |s| {
                vec![if int(s, "count") >= limit {
                    Goto::End
                } else {
                    Goto::Node("b".into())
                }]
            }))),
            None,
        )
        .edge("b", "a")
}

fn input(c: &str, v: Value) -> RunInput {
    RunInput::Values(vec![(c.into(), Val::Json(v))])
}

fn thread(t: &str) -> RunOptions {
    RunOptions {
        thread_id: Some(t.into()),
        recursion_limit: 10_000,
        ..Default::default()
    }
}

#[tokio::test]
async fn loop_runs_to_its_condition() {
    // `a` checks the condition after odd counts.
    let g = compile(counter_loop(11), None);
    let r = g
        .run(input("count", json!(0)), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(int(&r.state, "count"), 11);
    assert!(r.interrupts.is_empty());
}

/// A router whose decision is awaited (`route_later`): it answers after a sleep,
/// from the state after its node's step, and its error ends the run; `route` is
/// never called.
struct Later {
    fail: bool,
}

impl Router for Later {
    fn route(&self, _: &StateView, _: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        panic!("the engine calls route_later's future, not route");
    }

    fn route_later(&self, s: &StateView, _: &TaskContext) -> Option<ironloop::graph::LaterRoute> {
        let (count, fail) = (int(s, "count"), self.fail);
        Some(Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            if fail {
                return Err(GraphError::InvalidUpdate("no route".into()));
            }
            Ok(vec![if count >= 3 {
                Goto::End
            } else {
                Goto::Node("a".into())
            }])
        }))
    }
}

#[tokio::test]
async fn a_router_decision_can_be_awaited() {
    let inc = |s: &StateView, _: Option<Val>, _: &TaskContext| {
        writes(&[("count", json!(int(s, "count") + 1))])
    };
    let spec = |fail| {
        GraphSpec::default()
            .channel("count", ChannelKind::LastValue)
            .node("a", node(inc))
            .edge(START, "a")
            .branch("a", Arc::new(Later { fail }), None)
    };
    let g = compile(spec(false), None);
    let r = g
        .run(input("count", json!(0)), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(int(&r.state, "count"), 3);
    let e = compile(spec(true), None)
        .run(input("count", json!(0)), RunOptions::default())
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("no route"), "{e}");
}

/// Records what a step observer is told, as tracing sees it.
#[derive(Default)]
struct Steps(std::sync::Mutex<Vec<String>>);

impl StepObserver for Steps {
    fn step_started(&self, step: i64, nodes: &[&str]) {
        self.0
            .lock()
            .unwrap()
            .push(format!("start {step} {}", nodes.join(",")));
    }
    fn step_ended(&self, step: i64, error: Option<&GraphError>) {
        let how = match error {
            None => "ok".to_string(),
            Some(GraphError::Recursion(n)) => format!("recursion {n}"),
            Some(e) => format!("{e}"),
        };
        self.0.lock().unwrap().push(format!("end {step} {how}"));
    }
}

#[tokio::test]
async fn a_step_observer_sees_every_step_start_and_end_in_order() {
    let g = compile(counter_loop(3), None);
    let steps = Arc::new(Steps::default());
    let opts = RunOptions {
        observer: Some(steps.clone()),
        ..Default::default()
    };
    let r = g.run(input("count", json!(0)), opts).await.unwrap();
    assert_eq!(int(&r.state, "count"), 3);
    assert_eq!(
        *steps.0.lock().unwrap(),
        [
            "start 0 __start__",
            "end 0 ok",
            "start 1 a",
            "end 1 ok",
            "start 2 b",
            "end 2 ok",
            "start 3 a",
            "end 3 ok",
        ]
    );
}

#[tokio::test]
async fn a_step_observer_sees_the_failing_step_end_with_its_error() {
    let failing = GraphSpec::default()
        .channel("count", ChannelKind::LastValue)
        .node(
            "a",
            node(|_: &StateView, _: Option<Val>, _: &TaskContext| {
                Err(NodeFailure::Error(GraphError::Node {
                    node: "a".into(),
                    task_id: "t".into(),
                    message: "no".into(),
                    host: None,
                }))
            }),
        )
        .edge(START, "a")
        .edge("a", END);
    let steps = Arc::new(Steps::default());
    let opts = RunOptions {
        observer: Some(steps.clone()),
        ..Default::default()
    };
    let e = compile(failing, None)
        .run(input("count", json!(0)), opts)
        .await
        .err()
        .unwrap();
    let seen = steps.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "start 0 __start__".to_string(),
            "end 0 ok".into(),
            "start 1 a".into(),
            format!("end 1 {e}"),
        ]
    );
}

#[tokio::test]
async fn recursion_limit_stops_a_runaway_loop() {
    let g = compile(counter_loop(1_000), None);
    let opts = RunOptions {
        recursion_limit: 25,
        ..Default::default()
    };
    let e = g.run(input("count", json!(0)), opts).await.err().unwrap();
    assert!(matches!(e, GraphError::Recursion(25)), "{e}");
}

#[tokio::test]
async fn two_writes_without_a_reducer_are_rejected_but_a_reducer_combines_them() {
    let w = |v: i64| node(move |_, _, _| writes(&[("x", json!(v)), ("log", json!([v]))]));
    let spec = || {
        GraphSpec::default()
            .channel("x", ChannelKind::LastValue)
            .channel("log", ChannelKind::Reducer(Arc::new(Add)))
            .node("p", w(1))
            .node("q", w(2))
            .edge(START, "p")
            .edge(START, "q")
    };
    let e = compile(spec(), None)
        .run(input("log", json!([])), RunOptions::default())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(e, GraphError::InvalidUpdate(ref m) if m.contains("At key 'x'")),
        "{e}"
    );

    let mut s = spec();
    s.channels[0].1 = ChannelKind::Reducer(Arc::new(Add));
    let r = compile(s, None)
        .run(input("log", json!([])), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(
        r.state.get("log").unwrap().as_json().unwrap(),
        &json!([1, 2]),
        "task order"
    );
}

#[tokio::test]
async fn siblings_do_not_see_each_others_writes_within_a_step() {
    let spec = GraphSpec::default()
        .channel("x", ChannelKind::LastValue)
        .channel("seen", ChannelKind::Reducer(Arc::new(Add)))
        .node("w", node(|_, _, _| writes(&[("x", json!(5))])))
        .node(
            "r",
            node(|s, _, _| writes(&[("seen", json!([int(s, "x")]))])),
        )
        .edge(START, "w")
        .edge(START, "r");
    let r = compile(spec, None)
        .run(input("x", json!(1)), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.state.get("seen").unwrap().as_json().unwrap(), &json!([1]));
    assert_eq!(int(&r.state, "x"), 5);
}

#[tokio::test]
async fn send_fans_out_and_a_join_waits_for_all_sources() {
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = runs.clone();
    let spec = GraphSpec::default()
        .channel("items", ChannelKind::LastValue)
        .channel("out", ChannelKind::Reducer(Arc::new(Add)))
        .node(
            "fan",
            node(|s, _, _| {
                let items = s
                    .get("items")
                    .unwrap()
                    .as_json()
                    .unwrap()
                    .as_array()
                    .unwrap()
                    .clone();
                Ok(NodeOutput {
                    goto: items
                        .into_iter()
                        .map(|i| Goto::Send("sq".into(), Val::Json(i), None))
                        .collect(),
                    ..Default::default()
                })
            }),
        )
        .node(
            "sq",
            node(|_, arg, _| {
                let n = arg.unwrap().as_json().unwrap().as_i64().unwrap();
                writes(&[("out", json!([n * n]))])
            }),
        )
        .node("slow1", node(|_, _, _| writes(&[])))
        .node("slow2", node(|_, _, _| writes(&[])))
        .node(
            "joined",
            node(move |_, _, _| {
                r2.fetch_add(1, Ordering::SeqCst);
                writes(&[])
            }),
        )
        .edge(START, "fan")
        .edge(START, "slow1")
        .edge("slow1", "slow2");
    let mut spec = spec;
    spec.joins
        .push((vec!["sq".into(), "slow2".into()], "joined".into()));
    let r = compile(spec, None)
        .run(input("items", json!([1, 2, 3])), RunOptions::default())
        .await
        .unwrap();
    let mut out: Vec<i64> = r
        .state
        .get("out")
        .unwrap()
        .as_json()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    out.sort();
    assert_eq!(out, vec![1, 4, 9]);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the join target runs once, after both"
    );
}

#[tokio::test]
async fn interrupt_pauses_and_resume_delivers_the_value() {
    let cp: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let spec = GraphSpec::default()
        .channel("answer", ChannelKind::LastValue)
        .node(
            "ask",
            node(|_, _, ctx| match ctx.resume.first() {
                Some(v) => writes(&[("answer", v.as_json().unwrap().clone())]),
                None => Err(NodeFailure::Interrupt(Val::Json(json!("ok?")))),
            }),
        )
        .edge(START, "ask");
    let g = compile(spec, Some(cp));
    let r = g
        .run(input("answer", json!(null)), thread("t"))
        .await
        .unwrap();
    assert_eq!(r.interrupts.len(), 1);
    assert_eq!(r.interrupts[0].value.as_json().unwrap(), &json!("ok?"));
    let r = g
        .run(
            RunInput::Resume(Resume::One(Val::Json(json!("yes"))), Vec::new()),
            thread("t"),
        )
        .await
        .unwrap();
    assert!(r.interrupts.is_empty());
    assert_eq!(
        r.state.get("answer").unwrap().as_json().unwrap(),
        &json!("yes")
    );
}

#[tokio::test]
async fn a_failed_step_keeps_finished_siblings_and_does_not_rerun_them() {
    let cp: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let ok_runs = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (o, f) = (ok_runs.clone(), fail.clone());
    let spec = GraphSpec::default()
        .channel("log", ChannelKind::Reducer(Arc::new(Add)))
        .node(
            "ok",
            node(move |_, _, _| {
                o.fetch_add(1, Ordering::SeqCst);
                writes(&[("log", json!(["ok"]))])
            }),
        )
        .node(
            "flaky",
            node(move |_, _, _| {
                if f.load(Ordering::SeqCst) {
                    Err(NodeFailure::Error(GraphError::Node {
                        node: "flaky".into(),
                        task_id: String::new(),
                        message: "boom".into(),
                        host: None,
                    }))
                } else {
                    writes(&[("log", json!(["flaky"]))])
                }
            }),
        )
        .edge(START, "ok")
        .edge(START, "flaky");
    let g = compile(spec, Some(cp));
    assert!(g.run(input("log", json!([])), thread("t")).await.is_err());
    fail.store(false, Ordering::SeqCst);
    let r = g.run(RunInput::Continue, thread("t")).await.unwrap();
    assert_eq!(
        ok_runs.load(Ordering::SeqCst),
        1,
        "the finished sibling is not run again"
    );
    // A step's writes are applied by node name (LangGraph's order), not `add_node`'s.
    assert_eq!(
        r.state.get("log").unwrap().as_json().unwrap(),
        &json!(["flaky", "ok"])
    );
}

#[tokio::test]
async fn checkpoints_are_deltas_and_replay_to_the_same_state() {
    let saver = Arc::new(MemorySaver::new());
    let g = compile(counter_loop(199), Some(saver.clone()));
    g.run(input("count", json!(0)), thread("t")).await.unwrap();
    let history = g.history("t", None, None).await.unwrap();
    assert_eq!(
        history.len(),
        201,
        "input checkpoint, START's step, one per node step"
    );
    assert_eq!(int(&history[0].state, "count"), 199, "newest first");
    assert_eq!(
        int(&history[199].state, "count"),
        0,
        "START wrote the input"
    );
    assert!(
        history[200].state.get("count").is_none(),
        "the input checkpoint holds the state before the input"
    );
    for cp in saver.list("t", None, None).await.unwrap() {
        assert!(
            cp.writes.len() <= 1,
            "a record holds one step's writes, not the state"
        );
    }
    // Time travel: continue from an older checkpoint forks the thread.
    let older = history[150].record.id.clone();
    let opts = RunOptions {
        checkpoint_id: Some(older.clone()),
        ..thread("t")
    };
    let r = g.run(RunInput::Continue, opts).await.unwrap();
    assert_eq!(int(&r.state, "count"), 199);
    let latest = saver.get("t", None).await.unwrap().unwrap();
    let chain = saver.chain("t", &latest.id).await.unwrap();
    assert!(
        chain.iter().any(|c| c.id == older),
        "the fork descends from the older checkpoint"
    );
}

#[tokio::test]
async fn update_state_writes_as_a_node_and_routes_from_it() {
    let saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let g = compile(counter_loop(7), Some(saver));
    g.run(input("count", json!(0)), thread("t")).await.unwrap();
    g.update_state(
        "t",
        None,
        vec![("count".into(), Val::Json(json!(1)))],
        Some("b".into()),
        None,
    )
    .await
    .unwrap();
    let snap = g.load("t", None).await.unwrap().unwrap();
    assert_eq!(int(&snap.state, "count"), 1);
    assert_eq!(
        snap.record
            .next
            .iter()
            .map(|t| t.node.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    // From count 1 as `b`: a=2, b=3, a=4, b=5, a=6, b=7, a=8 >= 7.
    let r = g.run(RunInput::Continue, thread("t")).await.unwrap();
    assert_eq!(int(&r.state, "count"), 8);
}

#[tokio::test]
async fn messages_channel_merges_by_id_and_round_trips_through_checkpoints() {
    let saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let say = |text: &'static str| {
        node(move |_, _, _| {
            let m = Arc::new(Message::ai(text, vec![]));
            Ok(NodeOutput {
                writes: vec![(
                    "messages".into(),
                    Val::Messages(MessageList::from_messages([m])),
                )],
                ..Default::default()
            })
        })
    };
    let spec = GraphSpec::default()
        .channel("messages", ChannelKind::Messages)
        .node("a", say("one"))
        .node("b", say("two"))
        .edge(START, "a")
        .edge("a", "b")
        .edge("b", END);
    let g = compile(spec, Some(saver));
    let hi = Arc::new(Message::human("hi"));
    let start = RunInput::Values(vec![(
        "messages".into(),
        Val::Messages(MessageList::from_messages([hi])),
    )]);
    let r = g.run(start, thread("t")).await.unwrap();
    let texts = |s: &StateView| match s.get("messages") {
        Some(Val::Messages(l)) => l.iter().map(|m| m.content.text()).collect::<Vec<_>>(),
        _ => vec![],
    };
    assert_eq!(texts(&r.state), ["hi", "one", "two"]);
    let loaded = g.load("t", None).await.unwrap().unwrap();
    assert_eq!(
        texts(&loaded.state),
        ["hi", "one", "two"],
        "replayed from deltas"
    );
}

#[tokio::test]
async fn compile_rejects_bad_wiring_naming_the_culprit() {
    let n = || node(|_, _, _| writes(&[]));
    let cases: Vec<(GraphSpec, &str)> = vec![
        (
            GraphSpec::default()
                .node("a", n())
                .edge(START, "a")
                .edge("a", "zzz"),
            "zzz",
        ),
        (
            GraphSpec::default().node("a", n()),
            "must have an entrypoint",
        ),
        (
            GraphSpec::default()
                .node("a", n())
                .node("a", n())
                .edge(START, "a"),
            "already present",
        ),
        (
            GraphSpec::default().node(END, n()).edge(START, END),
            "reserved",
        ),
    ];
    for (spec, needle) in cases {
        let e = Graph::compile(spec, None, Arc::new(JsonCodec), vec![], vec![])
            .err()
            .unwrap();
        assert!(
            e.to_string().contains(needle),
            "{e} should mention {needle}"
        );
    }
    let e = Graph::compile(
        GraphSpec::default().node("a", n()).edge(START, "a"),
        None,
        Arc::new(JsonCodec),
        vec!["nope".into()],
        vec![],
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("nope"));
}

#[tokio::test]
async fn interrupt_before_and_after_pause_with_ids_naming_task_and_checkpoint() {
    let chain = || {
        GraphSpec::default()
            .channel("log", ChannelKind::Reducer(Arc::new(Add)))
            .node("a", node(|_, _, _| writes(&[("log", json!(["a"]))])))
            .node("b", node(|_, _, _| writes(&[("log", json!(["b"]))])))
            .edge(START, "a")
            .edge("a", "b")
            .edge("b", END)
    };
    let saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let compile_with = |before: &[&str], after: &[&str]| {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Graph::compile(
            chain(),
            Some(saver.clone()),
            Arc::new(JsonCodec),
            names(before),
            names(after),
        )
        .unwrap()
    };
    let log = |s: &StateView| s.get("log").unwrap().as_json().unwrap().clone();

    // Before `b`: the id is `before:` + b's task id; continuing runs b.
    let g = compile_with(&["b"], &[]);
    let r = g
        .run(input("log", json!([])), thread("before"))
        .await
        .unwrap();
    assert_eq!(r.interrupts.len(), 1);
    let i = &r.interrupts[0];
    assert_eq!(i.kind(), InterruptKind::Before);
    assert_eq!(
        (i.node.as_str(), r.next.as_slice()),
        ("b", &["b".to_string()][..])
    );
    assert_eq!(i.id, format!("before:{}", i.task_id));
    let snap = g.load("before", None).await.unwrap().unwrap();
    assert_eq!(snap.record.next[0].id, i.task_id, "the paused task's id");
    assert_eq!(log(&r.state), json!(["a"]));
    let r = g.run(RunInput::Continue, thread("before")).await.unwrap();
    assert!(r.interrupts.is_empty(), "the pause is not taken again");
    assert_eq!(log(&r.state), json!(["a", "b"]));

    // After `a`: the id is `after:` + the checkpoint of a's step.
    let g = compile_with(&[], &["a"]);
    let r = g
        .run(input("log", json!([])), thread("after"))
        .await
        .unwrap();
    assert_eq!(r.interrupts.len(), 1);
    let i = &r.interrupts[0];
    assert_eq!(i.kind(), InterruptKind::After);
    assert_eq!(i.node, "a");
    assert_eq!(Some(i.task_id.clone()), r.checkpoint_id);
    assert_eq!(i.id, format!("after:{}", i.task_id));
    assert_eq!(r.next, ["b"]);
    let r = g.run(RunInput::Continue, thread("after")).await.unwrap();
    assert!(r.interrupts.is_empty());
    assert_eq!(log(&r.state), json!(["a", "b"]));

    // After the last node there is nothing to pause before: the run just ends.
    let g = compile_with(&[], &["b"]);
    let r = g
        .run(input("log", json!([])), thread("last"))
        .await
        .unwrap();
    assert!(r.interrupts.is_empty());
    assert_eq!(log(&r.state), json!(["a", "b"]));
}

#[tokio::test]
async fn a_checkpoint_in_the_saved_format_continues_from_its_pending_writes() {
    // A thread written by hand in the on-disk format: a step with tasks `a` and `b`;
    // `a` finished (a write, a goto to `c`, the done marker), `b` did not.
    let saver = Arc::new(MemorySaver::new());
    let ran = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let logging = |name: &'static str| {
        let ran = ran.clone();
        node(move |_, _, _| {
            ran.lock().unwrap().push(name.into());
            writes(&[("log", json!([name]))])
        })
    };
    let spec = GraphSpec::default()
        .channel("log", ChannelKind::Reducer(Arc::new(Add)))
        .node("a", logging("a"))
        .node("b", logging("b"))
        .node("c", logging("c"))
        .edge(START, "a")
        .edge(START, "b");
    let g = compile(spec, Some(saver.clone()));
    let task = |id: &str, node: &str| ironloop::checkpoint::TaskRecord {
        id: id.into(),
        node: node.into(),
        arg: None,
        timeout: None,
    };
    let record = ironloop::checkpoint::CheckpointRecord {
        snapshot: None,
        id: "c1".into(),
        parent_id: None,
        step: -1,
        source: "input".into(),
        writes: vec![ironloop::checkpoint::Write {
            node: START.into(),
            channel: "log".into(),
            value: json!([]).into(),
            new_task: false,
        }],
        next: vec![task("c1:0:a", "a"), task("c1:1:b", "b")],
        created_at: 0.0,
        metadata: json!({"source": "input", "step": -1}),
    };
    saver.put("t", record).await.unwrap();
    let pw = |idx: i64, channel: &str, value: Value| ironloop::checkpoint::PendingWrite {
        task_id: "c1:0:a".into(),
        idx,
        node: "a".into(),
        channel: channel.into(),
        value: value.into(),
    };
    saver
        .put_writes(
            "t",
            "c1",
            vec![
                pw(0, "log", json!(["a (saved)"])),
                pw(1, "__goto__", json!({"node": "c"})),
                pw(2, "__done__", Value::Null),
            ],
        )
        .await
        .unwrap();
    let r = g.run(RunInput::Continue, thread("t")).await.unwrap();
    assert_eq!(
        *ran.lock().unwrap(),
        ["b", "c"],
        "a's saved output is reused"
    );
    assert_eq!(
        r.state.get("log").unwrap().as_json().unwrap(),
        &json!(["a (saved)", "b", "c"])
    );
    let steps = saver.list("t", None, None).await.unwrap();
    assert_eq!(
        steps.iter().map(|c| c.source.as_str()).collect::<Vec<_>>(),
        ["loop", "loop", "input"],
        "newest first"
    );
}

/// Waits, inside its step, until the step's other task has its writes in the store.
struct WaitsForSavedWrites(Arc<MemorySaver>);

#[async_trait]
impl NodeRunner for WaitsForSavedWrites {
    async fn run(
        &self,
        _s: StateView,
        _arg: Option<Val>,
        _ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let latest = self.0.get("t", None).await.unwrap().expect("a checkpoint");
            let saved = self.0.pending_writes("t", &latest.id).await.unwrap();
            if saved.iter().any(|w| w.node == "a") {
                return writes(&[("log", json!(["b"]))]);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "a finished but its writes never reached the store while b ran"
            );
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_task_is_saved_while_its_step_still_runs() {
    // Durability "sync" (the default): in a step of several tasks, a task that
    // finished is saved at once, in the background, so that a crash before the step
    // ends does not run it again; the step's checkpoint holds every task's writes, and
    // once it is saved no pending write of its parent is left.
    let saver = Arc::new(MemorySaver::new());
    let spec = GraphSpec::default()
        .channel("log", ChannelKind::Reducer(Arc::new(Add)))
        .node("a", node(|_, _, _| writes(&[("log", json!(["a"]))])))
        .node("b", Arc::new(WaitsForSavedWrites(saver.clone())))
        .edge(START, "a")
        .edge(START, "b");
    let g = compile(spec, Some(saver.clone()));
    let r = g.run(input("log", json!([])), thread("t")).await.unwrap();
    let log = r.state.get("log").and_then(|v| v.as_json()).cloned();
    assert!(
        log == Some(json!(["a", "b"])) || log == Some(json!(["b", "a"])),
        "{log:?}"
    );
    for c in saver.list("t", None, None).await.unwrap() {
        assert!(
            saver.pending_writes("t", &c.id).await.unwrap().is_empty()
                || c.id == r.checkpoint_id.clone().unwrap(),
            "the step's saved checkpoint leaves no pending write of its parent"
        );
    }
}

#[tokio::test]
async fn a_live_run_yields_after_each_step_for_its_driver_to_take_the_events() {
    // A driver that polls the run itself while it takes its events (a sync stream)
    // has control back after each step: that step's update sent, the next one not run.
    let ran: Arc<AtomicUsize> = Default::default();
    let inc = |ran: Arc<AtomicUsize>| {
        move |s: &StateView, _: Option<Val>, _: &TaskContext| {
            ran.fetch_add(1, Ordering::SeqCst);
            writes(&[("count", json!(int(s, "count") + 1))])
        }
    };
    let spec = GraphSpec::default()
        .channel("count", ChannelKind::LastValue)
        .node("a", node(inc(ran.clone())))
        .node("b", node(inc(ran.clone())))
        .edge(START, "a")
        .edge("a", "b")
        .edge("b", END);
    let g = compile(spec, None);
    let updated: Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let noted = updated.clone();
    let sink = StreamSink {
        modes: modes::UPDATES,
        subgraphs: false,
        send: Arc::new(move |ev| {
            if let StreamEvent::Updates { node, .. } = ev {
                noted.lock().unwrap().push(node);
            }
        }),
        seen: Default::default(),
    };
    let opts = RunOptions {
        inline: true,
        live: true,
        stream: Some(sink),
        ..thread("live")
    };
    let mut run = Box::pin(g.run(input("count", json!(0)), opts));
    let nodes = || -> Vec<String> { updated.lock().unwrap().clone() };
    // Polled until something is sent (the run may wait before its first step).
    let mut polls = 0;
    while nodes().is_empty() {
        assert!(futures::poll!(run.as_mut()).is_pending(), "ended unseen");
        polls += 1;
        assert!(polls < 100, "no update after {polls} polls");
    }
    assert_eq!((nodes(), ran.load(Ordering::SeqCst)), (vec!["a".into()], 1));
    assert!(futures::poll!(run.as_mut()).is_pending());
    assert_eq!(
        (nodes(), ran.load(Ordering::SeqCst)),
        (vec!["a".into(), "b".into()], 2)
    );
    let std::task::Poll::Ready(out) = futures::poll!(run.as_mut()) else {
        panic!("the run did not end after its last step and a yield");
    };
    let out = out.unwrap().output.unwrap();
    assert_eq!(out.get("count").and_then(|v| v.as_json()), Some(&json!(2)));
}
