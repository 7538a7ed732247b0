//! The prebuilt agent pieces in a Rust graph, without Python: a model node that asks
//! for tools, the core `ToolNode` that runs them, and `ToolsCondition` routing.

use std::sync::Arc;

use async_trait::async_trait;
use ironloop::graph::{
    BranchSpec, ChannelKind, Graph, GraphSpec, JsonCodec, MessageList, NodeFailure, NodeOutput,
    NodeRunner, RunInput, RunOptions, StateView, TaskContext, Val, END, START,
};
use ironloop::message::{Message, MessageKind};
use ironloop::prebuilt::{
    messages_channel, tools_condition, AfterModel, ToolNode, ToolsCondition, TOOLS,
};
use ironloop::{Executor, Tool, ToolCall, ToolOutput, ToolRegistry};
use serde_json::json;

/// Asks for `add(2, 3)` once, then answers with the tool's result.
struct Model;

#[async_trait]
impl NodeRunner for Model {
    async fn run(
        &self,
        s: StateView,
        _: Option<Val>,
        _: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let Some(Val::Messages(l)) = s.get("chat") else {
            panic!("no messages")
        };
        let reply = match l.last().map(|m| &m.kind) {
            Some(MessageKind::Tool { .. }) => Message::ai(
                format!("it is {}", l.last().unwrap().content.text()),
                vec![],
            ),
            _ => Message::ai(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "add".into(),
                    arguments: json!({"a": 2, "b": 3}),
                }],
            ),
        };
        Ok(NodeOutput {
            writes: vec![(
                "chat".into(),
                Val::Messages(MessageList::from_messages([Arc::new(reply)])),
            )],
            ..Default::default()
        })
    }
}

fn add_tool() -> Arc<dyn Tool> {
    Arc::new(
        <dyn Tool>::builder("add", "Adds two integers.")
            .param("a", json!({"type": "integer"}), "")
            .param("b", json!({"type": "integer"}), "")
            .call(|args, _| async move {
                let sum = args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap();
                Ok(ToolOutput::text(sum.to_string()))
            }),
    )
}

/// Runs `spec` on one human message `ask` in `channel`: the messages at the end.
async fn run_chat(spec: GraphSpec, channel: &str, ask: &str) -> MessageList {
    let g = Graph::compile(spec, None, Arc::new(JsonCodec), vec![], vec![]).unwrap();
    let human = Arc::new(Message::human(ask));
    let input = RunInput::Values(vec![(
        channel.into(),
        Val::Messages(MessageList::from_messages([human])),
    )]);
    let r = g.run(input, RunOptions::default()).await.unwrap();
    match r.state.get(channel) {
        Some(Val::Messages(l)) => l.clone(),
        other => panic!("no messages: {other:?}"),
    }
}

fn texts(l: &MessageList) -> Vec<String> {
    l.iter().map(|m| m.content.text()).collect()
}

#[tokio::test]
async fn a_rust_agent_loop_runs_tools_and_routes_with_tools_condition() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(add_tool()).unwrap();
    let channels = vec![
        ("log".to_owned(), ChannelKind::LastValue),
        ("chat".to_owned(), ChannelKind::Messages),
    ];
    // The messages channel need not be called `messages`: one rule finds it.
    let channel = messages_channel(&channels).unwrap().to_owned();
    assert_eq!(channel, "chat");
    let spec = GraphSpec {
        channels,
        ..Default::default()
    }
    .node("agent", Arc::new(Model))
    .node(
        "tools",
        Arc::new(ToolNode::new(Executor::new(registry), &channel)),
    )
    .edge(START, "agent")
    .edge("tools", "agent");
    let mut spec = spec;
    spec.branches.push(ironloop::graph::BranchSpec {
        source: "agent".into(),
        router: Arc::new(ToolsCondition {
            channel: channel.clone(),
            path_map: None,
        }),
        ends: Some(vec![TOOLS.into(), ironloop::graph::END.into()]),
        reads: None,
    });
    let l = run_chat(spec, "chat", "2+3?").await;
    assert_eq!(texts(&l), ["2+3?", "", "5", "it is 5"]);
    assert!(matches!(l.get(2).unwrap().kind, MessageKind::Tool { .. }));
}

#[test]
fn tools_condition_needs_a_message_and_routes_on_tool_calls() {
    assert!(tools_condition(None).is_err());
    assert_eq!(
        tools_condition(Some(&Message::ai("done", vec![]))).unwrap(),
        ironloop::graph::END
    );
    let call = ToolCall {
        id: "1".into(),
        name: "x".into(),
        arguments: json!({}),
    };
    assert_eq!(
        tools_condition(Some(&Message::ai("", vec![call]))).unwrap(),
        TOOLS
    );
}

/// Asks for `add(2, 3)` and `add(1, 1)` at once, then answers with the results.
struct TwoCalls;

#[async_trait]
impl NodeRunner for TwoCalls {
    async fn run(
        &self,
        s: StateView,
        _: Option<Val>,
        _: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let Some(Val::Messages(l)) = s.get("messages") else {
            panic!("no messages")
        };
        let call = |id: &str, a: i64, b: i64| ToolCall {
            id: id.into(),
            name: "add".into(),
            arguments: json!({"a": a, "b": b}),
        };
        let reply = match l.last().map(|m| &m.kind) {
            Some(MessageKind::Tool { .. }) => {
                let results: Vec<String> = l.iter().skip(2).map(|m| m.content.text()).collect();
                Message::ai(results.join(" and "), vec![])
            }
            _ => Message::ai("", vec![call("c1", 2, 3), call("c2", 1, 1)]),
        };
        Ok(NodeOutput {
            writes: vec![(
                "messages".into(),
                Val::Messages(MessageList::from_messages([Arc::new(reply)])),
            )],
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn tool_call_sends_runs_each_call_as_a_task_of_its_own() {
    // create_react_agent's version "v2" routing, in Rust: one Send to the tools node
    // per call (the call as LangGraph's ToolCall dict), then on to `otherwise`.
    let registry = Arc::new(ToolRegistry::new());
    registry.register(add_tool()).unwrap();
    let tools = Arc::new(NotesArgs {
        inner: ToolNode::new(Executor::new(registry), "messages"),
        args: Default::default(),
    });
    let mut spec = GraphSpec {
        channels: vec![("messages".to_owned(), ChannelKind::Messages)],
        ..Default::default()
    }
    .node("agent", Arc::new(TwoCalls))
    .node("tools", tools.clone())
    .edge(START, "agent")
    .edge("tools", "agent");
    let sends = AfterModel {
        channel: "messages".into(),
        tools: "tools".into(),
        per_call: true,
        back: "agent".into(),
        done: END.into(),
    };
    spec.branches.push(BranchSpec {
        source: "agent".into(),
        router: Arc::new(sends),
        ends: Some(vec!["tools".into(), END.into()]),
        reads: None,
    });
    let l = run_chat(spec, "messages", "sums?").await;
    assert_eq!(texts(&l), ["sums?", "", "5", "2", "5 and 2"]);
    let mut args = tools.args.lock().unwrap().clone();
    args.sort_by_key(|a| a["id"].as_str().map(str::to_owned));
    assert_eq!(
        args,
        [
            json!({"name": "add", "args": {"a": 2, "b": 3}, "id": "c1", "type": "tool_call"}),
            json!({"name": "add", "args": {"a": 1, "b": 1}, "id": "c2", "type": "tool_call"}),
        ],
        "one task per call, each given LangGraph's ToolCall dict"
    );
}

/// The core tool node, noting the argument each task was sent.
struct NotesArgs {
    inner: ToolNode,
    args: std::sync::Mutex<Vec<serde_json::Value>>,
}

#[async_trait]
impl NodeRunner for NotesArgs {
    async fn run(
        &self,
        s: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        match &arg {
            Some(Val::Json(v)) => self.args.lock().unwrap().push(v.clone()),
            other => panic!("each call is sent as JSON, got {other:?}"),
        }
        NodeRunner::run(&self.inner, s, arg, ctx).await
    }
}
