//! What the core does with a graph's schemas, without Python: reducer channels'
//! starting values, what each node and router sees, the input's and the result's
//! channels, and the root channel.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ironloop::checkpoint::MemorySaver;
use ironloop::graph::{
    ChannelKind, Goto, Graph, GraphError, GraphSpec, JsonCodec, NodeFailure, NodeOutput,
    NodeRunner, Reducer, Router, RunInput, RunOptions, StateView, TaskContext, Val, END, ROOT,
    START,
};
use serde_json::{json, Value};

type Seen = Arc<Mutex<Vec<Vec<(String, Value)>>>>;

/// A node that records what it sees and writes `out`.
struct Record {
    seen: Seen,
    out: Vec<(&'static str, Value)>,
}

fn shown(s: &StateView) -> Vec<(String, Value)> {
    s.iter()
        .map(|(k, v)| (k.to_owned(), v.to_json().unwrap()))
        .collect()
}

#[async_trait]
impl NodeRunner for Record {
    async fn run(
        &self,
        s: StateView,
        _: Option<Val>,
        _: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        self.seen.lock().unwrap().push(shown(&s));
        Ok(NodeOutput {
            writes: self
                .out
                .iter()
                .map(|(c, v)| (c.to_string(), Val::Json(v.clone())))
                .collect(),
            ..Default::default()
        })
    }
}

fn record(seen: &Seen, out: &[(&'static str, Value)]) -> Arc<dyn NodeRunner> {
    Arc::new(Record {
        seen: seen.clone(),
        out: out.to_vec(),
    })
}

struct RecordRoute(Seen);
impl Router for RecordRoute {
    fn route(&self, s: &StateView, _: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        self.0.lock().unwrap().push(shown(s));
        Ok(vec![Goto::End])
    }
}

/// Integer sum starting at 0 (LangGraph's `Annotated[int, operator.add]`).
struct Sum;
impl Reducer for Sum {
    fn reduce(&self, _: &str, cur: Option<Val>, upd: Val) -> Result<Val, GraphError> {
        let a = cur
            .and_then(|v| v.as_json().and_then(Value::as_i64))
            .unwrap_or(0);
        let b = upd.as_json().and_then(Value::as_i64).unwrap_or(0);
        Ok(Val::Json(json!(a + b)))
    }
    fn initial(&self) -> Option<Val> {
        Some(Val::Json(json!(0)))
    }
}

/// A reducer with no starting value: its first write is taken as it is.
struct Concat;
impl Reducer for Concat {
    fn reduce(&self, _: &str, cur: Option<Val>, upd: Val) -> Result<Val, GraphError> {
        let a = cur
            .and_then(|v| v.as_json().and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        Ok(Val::Json(json!(
            a + upd.as_json().and_then(Value::as_str).unwrap_or("")
        )))
    }
}

fn compile(spec: GraphSpec) -> Graph {
    Graph::compile(spec, None, Arc::new(JsonCodec), vec![], vec![]).unwrap()
}

fn values(ws: &[(&str, Value)]) -> RunInput {
    RunInput::Values(
        ws.iter()
            .map(|(c, v)| (c.to_string(), Val::Json(v.clone())))
            .collect(),
    )
}

fn pairs(ws: &[(&str, Value)]) -> Vec<(String, Value)> {
    ws.iter().map(|(c, v)| (c.to_string(), v.clone())).collect()
}

#[tokio::test]
async fn reducer_channels_start_at_their_initial_value_last_value_ones_empty() {
    let seen = Seen::default();
    let spec = GraphSpec::default()
        .channel("x", ChannelKind::LastValue)
        .channel("total", ChannelKind::Reducer(Arc::new(Sum)))
        .channel("text", ChannelKind::Reducer(Arc::new(Concat)))
        .channel("messages", ChannelKind::Messages)
        .node("n", record(&seen, &[("total", json!(2))]))
        .edge(START, "n")
        .edge("n", END);
    let r = compile(spec)
        .run(values(&[]), RunOptions::default())
        .await
        .unwrap();
    // Before any write: the sum reads 0 and the messages [], `x` and `text` nothing.
    assert_eq!(
        seen.lock().unwrap()[0],
        pairs(&[("total", json!(0)), ("messages", json!([]))])
    );
    assert_eq!(
        shown(&r.state),
        pairs(&[("total", json!(2)), ("messages", json!([]))])
    );
}

#[tokio::test]
async fn a_node_sees_only_what_it_reads_in_that_order_and_may_write_a_private_channel() {
    let seen = Seen::default();
    let mut spec = GraphSpec::default()
        .channel("question", ChannelKind::LastValue)
        .channel("answer", ChannelKind::LastValue)
        .channel("scratch", ChannelKind::LastValue)
        .node("a", record(&seen, &[("scratch", json!("s"))]))
        .node("b", record(&seen, &[("answer", json!("done"))]))
        .node("c", record(&seen, &[]))
        .edge(START, "a")
        .edge("a", "b")
        .edge("b", "c");
    spec.nodes[0].reads = Some(vec!["question".into()]);
    spec.nodes[1].reads = Some(vec!["scratch".into(), "question".into()]);
    let r = compile(spec)
        .run(values(&[("question", json!("q"))]), RunOptions::default())
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], pairs(&[("question", json!("q"))]));
    assert_eq!(
        seen[1],
        pairs(&[("scratch", json!("s")), ("question", json!("q"))])
    );
    // A node that names nothing sees every channel.
    assert_eq!(
        seen[2],
        pairs(&[
            ("question", json!("q")),
            ("answer", json!("done")),
            ("scratch", json!("s"))
        ])
    );
    assert_eq!(shown(&r.output.unwrap()), seen[2]);
}

#[tokio::test]
async fn a_router_sees_what_its_source_node_sees_unless_it_names_its_own() {
    let (nodes, routes) = (Seen::default(), Seen::default());
    let mut spec = GraphSpec::default()
        .channel("a", ChannelKind::LastValue)
        .channel("b", ChannelKind::LastValue)
        .node("n", record(&nodes, &[]))
        .edge(START, "n")
        .branch("n", Arc::new(RecordRoute(routes.clone())), None)
        .branch("n", Arc::new(RecordRoute(routes.clone())), None);
    spec.nodes[0].reads = Some(vec!["b".into()]);
    spec.branches[1].reads = Some(vec!["a".into(), "b".into()]);
    compile(spec)
        .run(
            values(&[("a", json!(1)), ("b", json!(2))]),
            RunOptions::default(),
        )
        .await
        .unwrap();
    let routes = routes.lock().unwrap();
    assert_eq!(routes[0], pairs(&[("b", json!(2))]));
    assert_eq!(routes[1], pairs(&[("a", json!(1)), ("b", json!(2))]));
}

#[tokio::test]
async fn input_outside_the_input_channels_is_dropped() {
    let seen = Seen::default();
    let mut spec = GraphSpec::default()
        .channel("question", ChannelKind::LastValue)
        .channel("notes", ChannelKind::LastValue)
        .node("n", record(&seen, &[]))
        .edge(START, "n");
    spec.input = Some(vec!["question".into()]);
    let g = compile(spec);
    // `notes` is a channel but not an input key; `extra` is no channel at all.
    let input = values(&[
        ("question", json!("q")),
        ("notes", json!("n")),
        ("extra", json!(1)),
    ]);
    g.run(input, RunOptions::default()).await.unwrap();
    assert_eq!(seen.lock().unwrap()[0], pairs(&[("question", json!("q"))]));
    // Without input keys, every channel may be written; unknown keys are still dropped.
    let seen = Seen::default();
    let spec = GraphSpec::default()
        .channel("question", ChannelKind::LastValue)
        .node("n", record(&seen, &[]))
        .edge(START, "n");
    let input = values(&[("question", json!("q")), ("extra", json!(1))]);
    compile(spec)
        .run(input, RunOptions::default())
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap()[0], pairs(&[("question", json!("q"))]));
}

#[tokio::test]
async fn the_result_shows_the_output_channels_and_none_when_the_run_wrote_none() {
    let seen = Seen::default();
    let build = |writes: &[(&'static str, Value)]| {
        let mut spec = GraphSpec::default()
            .channel("question", ChannelKind::LastValue)
            .channel("notes", ChannelKind::LastValue)
            .channel("answer", ChannelKind::LastValue)
            .node("n", record(&seen, writes))
            .edge(START, "n");
        spec.output = Some(vec!["answer".into(), "question".into()]);
        compile(spec)
    };
    let q = || values(&[("question", json!("q"))]);
    let r = build(&[("answer", json!("a")), ("notes", json!("n"))])
        .run(q(), RunOptions::default())
        .await
        .unwrap();
    // In the output schema's order; the whole state is still there.
    assert_eq!(
        shown(&r.output.unwrap()),
        pairs(&[("answer", json!("a")), ("question", json!("q"))])
    );
    assert_eq!(shown(&r.state).len(), 3);
    // The input wrote `question`: there is output even if the node writes nothing else.
    let r = build(&[("notes", json!("n"))])
        .run(q(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(
        shown(&r.output.unwrap()),
        pairs(&[("question", json!("q"))])
    );
    // Neither the input nor a node wrote an output channel: nothing to return.
    let r = build(&[("notes", json!("n"))])
        .run(values(&[("notes", json!("x"))]), RunOptions::default())
        .await
        .unwrap();
    assert!(r.output.is_none());
}

#[tokio::test]
async fn continuing_a_thread_always_returns_its_output() {
    let seen = Seen::default();
    let mut spec = GraphSpec::default()
        .channel("answer", ChannelKind::LastValue)
        .channel("notes", ChannelKind::LastValue)
        .node("n", record(&seen, &[("notes", json!("n"))]))
        .edge(START, "n");
    spec.output = Some(vec!["answer".into()]);
    let cp = Arc::new(MemorySaver::new());
    let g = Graph::compile(
        spec,
        Some(cp),
        Arc::new(JsonCodec),
        vec!["n".into()],
        vec![],
    )
    .unwrap();
    let opts = || RunOptions {
        thread_id: Some("t".into()),
        ..Default::default()
    };
    let r = g
        .run(values(&[("notes", json!("x"))]), opts())
        .await
        .unwrap();
    assert!(r.output.is_none() && !r.interrupts.is_empty());
    // LangGraph shows the output channels when a run continues, even empty ones.
    let r = g.run(RunInput::Continue, opts()).await.unwrap();
    assert_eq!(shown(&r.output.unwrap()), pairs(&[]));
}

#[tokio::test]
async fn compile_rejects_schemas_naming_undeclared_channels() {
    let seen = Seen::default();
    let base = || {
        GraphSpec::default()
            .channel("a", ChannelKind::LastValue)
            .node("n", record(&seen, &[]))
            .edge(START, "n")
    };
    let err = |spec: GraphSpec| {
        Graph::compile(spec, None, Arc::new(JsonCodec), vec![], vec![])
            .err()
            .unwrap()
            .to_string()
    };
    let mut s = base();
    s.input = Some(vec!["nope".into()]);
    assert!(err(s).contains("the input schema names channel \"nope\""));
    let mut s = base();
    s.output = Some(vec!["a".into(), "zz".into()]);
    assert!(err(s).contains("the output schema names channel \"zz\""));
    let mut s = base();
    s.nodes[0].reads = Some(vec!["q".into()]);
    assert!(err(s).contains("node \"n\" names channel \"q\""));
}

#[tokio::test]
async fn the_root_channel_is_the_whole_state_and_not_hidden() {
    let seen = Seen::default();
    let spec = GraphSpec::default()
        .channel(ROOT, ChannelKind::Reducer(Arc::new(Sum)))
        .node("n", record(&seen, &[(ROOT, json!(2))]))
        .edge(START, "n");
    let r = compile(spec)
        .run(values(&[(ROOT, json!(1))]), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap()[0], pairs(&[(ROOT, json!(1))]));
    let out = r.output.unwrap();
    assert_eq!(out.root().unwrap().unwrap().as_json(), Some(&json!(3)));
    // A state of several channels has no root value.
    let spec = GraphSpec::default()
        .channel(ROOT, ChannelKind::LastValue)
        .channel("b", ChannelKind::LastValue)
        .node("n", record(&seen, &[]))
        .edge(START, "n");
    let r = compile(spec)
        .run(values(&[(ROOT, json!(1))]), RunOptions::default())
        .await
        .unwrap();
    assert!(r.state.root().is_none());
}
