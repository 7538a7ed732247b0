//! Node guards in the step loop, without Python: an error handler runs in a failed
//! node's place, a timeout stops a Rust node, a drain stops the run between steps.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ironloop::graph::{
    ChannelKind, Drain, Goto, Graph, GraphError, GraphSpec, JsonCodec, NodeFailure, NodeGuard,
    NodeOutput, NodeRunner, RunInput, RunOptions, StateView, TaskContext, TimeoutPolicy, Val, END,
    START,
};
use serde_json::{json, Value};

/// Writes `value` to `out`, after `delay`, heartbeating every `beat` if given; fails
/// instead when `fail`.
struct Step {
    value: &'static str,
    delay: Duration,
    beat: Option<Duration>,
    fail: bool,
    goto: Option<&'static str>,
}

fn step(value: &'static str) -> Step {
    Step {
        value,
        delay: Duration::ZERO,
        beat: None,
        fail: false,
        goto: None,
    }
}

#[async_trait]
impl NodeRunner for Step {
    async fn run(
        &self,
        _s: StateView,
        _arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let mut waited = Duration::ZERO;
        while waited < self.delay {
            let pause = self.beat.unwrap_or(self.delay);
            tokio::time::sleep(pause).await;
            waited += pause;
            if let Some(p) = &ctx.progress {
                p.heartbeat();
            }
        }
        if self.fail {
            return Err(NodeFailure::Error(ctx.node_error("boom", None)));
        }
        // A handler says what it handles.
        let value = match &ctx.failed {
            Some(f) => format!("{}:{}", self.value, f.node),
            None => self.value.to_owned(),
        };
        Ok(NodeOutput {
            writes: vec![("out".into(), Val::Json(json!([value])))],
            goto: self.goto.map(Goto::to).into_iter().collect(),
            ..Default::default()
        })
    }
}

fn graph(spec: GraphSpec) -> Graph {
    Graph::compile(spec, None, Arc::new(JsonCodec), vec![], vec![]).unwrap()
}

fn guarded(mut spec: GraphSpec, node: &str, guard: NodeGuard) -> GraphSpec {
    let n = spec.nodes.iter_mut().find(|n| n.name == node).unwrap();
    n.guard = guard;
    spec
}

fn out(r: &ironloop::graph::RunResult) -> Value {
    r.state
        .get("out")
        .and_then(|v| v.as_json())
        .cloned()
        .unwrap_or(Value::Null)
}

fn start() -> RunInput {
    RunInput::Values(vec![("out".into(), Val::Json(json!([])))])
}

fn base() -> GraphSpec {
    GraphSpec::default().channel("out", ChannelKind::LastValue)
}

#[tokio::test]
async fn the_handler_runs_in_the_failed_nodes_place_and_routes_on() {
    let spec = base()
        .node(
            "fails",
            Arc::new(Step {
                fail: true,
                ..step("x")
            }),
        )
        .node("edge_target", Arc::new(step("edge_target")))
        .node(
            "handler",
            Arc::new(Step {
                goto: Some("after"),
                ..step("handled")
            }),
        )
        .node("after", Arc::new(step("after")))
        .edge(START, "fails")
        .edge("fails", "edge_target");
    let guard = NodeGuard {
        error_handler: Some("handler".into()),
        ..Default::default()
    };
    let r = graph(guarded(spec, "fails", guard))
        .run(start(), RunOptions::default())
        .await;
    // The failed node's edge does not fire; the handler's goto does.
    assert_eq!(out(&r.unwrap()), json!(["after"]));
}

#[tokio::test]
async fn a_handler_of_a_missing_node_is_refused_at_compile() {
    let spec = base().node("n", Arc::new(step("n"))).edge(START, "n");
    let guard = NodeGuard {
        error_handler: Some("nope".into()),
        ..Default::default()
    };
    let err = Graph::compile(
        guarded(spec, "n", guard),
        None,
        Arc::new(JsonCodec),
        vec![],
        vec![],
    )
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("`nope`, which is not a node"),
        "{err}"
    );
}

#[tokio::test]
async fn run_and_idle_timeouts_stop_a_rust_node() {
    let slow = || {
        Arc::new(Step {
            delay: Duration::from_secs(5),
            ..step("slow")
        })
    };
    let run = TimeoutPolicy {
        run: Some(Duration::from_millis(50)),
        ..Default::default()
    };
    let spec = base()
        .node("slow", slow())
        .edge(START, "slow")
        .edge("slow", END);
    let g = graph(guarded(
        spec,
        "slow",
        NodeGuard {
            timeout: Some(run),
            ..Default::default()
        },
    ));
    match g.run(start(), RunOptions::default()).await {
        Err(GraphError::Timeout {
            node,
            kind,
            run_timeout,
            ..
        }) => {
            assert_eq!(
                (node.as_str(), kind, run_timeout),
                ("slow", "run", Some(0.05))
            );
        }
        other => panic!("expected a timeout, got {:?}", other.map(|r| out(&r))),
    }
    // Heartbeats every 20 ms keep a 60 ms idle timeout from firing.
    let beating = Step {
        delay: Duration::from_millis(200),
        beat: Some(Duration::from_millis(20)),
        ..step("beat")
    };
    let idle = TimeoutPolicy {
        idle: Some(Duration::from_millis(60)),
        ..Default::default()
    };
    let spec = base().node("beat", Arc::new(beating)).edge(START, "beat");
    let g = graph(guarded(
        spec,
        "beat",
        NodeGuard {
            timeout: Some(idle),
            ..Default::default()
        },
    ));
    assert_eq!(
        out(&g.run(start(), RunOptions::default()).await.unwrap()),
        json!(["beat"])
    );
}

#[tokio::test]
async fn a_timeout_is_handled_by_the_error_handler() {
    let run = TimeoutPolicy {
        idle: Some(Duration::from_millis(30)),
        ..Default::default()
    };
    let spec = base()
        .node(
            "slow",
            Arc::new(Step {
                delay: Duration::from_secs(5),
                ..step("slow")
            }),
        )
        .node("handler", Arc::new(step("handled")))
        .edge(START, "slow");
    let guard = NodeGuard {
        timeout: Some(run),
        error_handler: Some("handler".into()),
    };
    let r = graph(guarded(spec, "slow", guard))
        .run(start(), RunOptions::default())
        .await;
    assert_eq!(out(&r.unwrap()), json!(["handled:slow"]));
}

#[tokio::test]
async fn a_drained_run_stops_before_its_next_step() {
    let drain = Arc::new(Drain::default());
    let spec = base()
        .node("first", Arc::new(step("first")))
        .node("second", Arc::new(step("second")))
        .edge(START, "first")
        .edge("first", "second");
    let g = graph(spec);
    let opts = || RunOptions {
        drain: Some(drain.clone()),
        ..Default::default()
    };
    assert_eq!(
        out(&g.run(start(), opts()).await.unwrap()),
        json!(["second"])
    );
    drain.request("deploy".into());
    match g.run(start(), opts()).await {
        Err(GraphError::Drained(reason)) => assert_eq!(reason, "deploy"),
        other => panic!("expected a drain, got {:?}", other.map(|r| out(&r))),
    }
}
