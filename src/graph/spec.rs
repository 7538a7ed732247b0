//! A graph's wiring, checked once at compile time.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::channel::ChannelKind;
use super::error::GraphError;
use super::state::StateView;
use super::stream::StreamSink;
use super::value::Val;
use crate::error::HostError;

pub const START: &str = "__start__";
pub const END: &str = "__end__";

/// Where control goes after a node.
#[derive(Debug, Clone)]
pub enum Goto {
    Node(String),
    /// Runs `node` in the next step with `arg` as its input (map-reduce fan-out).
    Send(String, Val),
    End,
}

/// What a node produced.
#[derive(Debug, Clone, Default)]
pub struct NodeOutput {
    /// Channel writes, applied through the reducers at the end of the step.
    pub writes: Vec<(String, Val)>,
    /// Explicit routing (`Command(goto=...)`), on top of the node's edges.
    pub goto: Vec<Goto>,
    /// The update as the host returned it, for the `updates` stream.
    pub update: Option<Val>,
}

/// Why a node did not produce output.
#[derive(Debug, Clone)]
pub enum NodeFailure {
    /// `interrupt(value)`: the run pauses; resuming re-runs the node.
    Interrupt(Val),
    Error(GraphError),
}

/// What a task gets besides its input.
#[derive(Clone)]
pub struct TaskContext {
    pub task_id: String,
    pub node: String,
    pub step: i64,
    /// Resume values for this task's `interrupt()` calls, in order.
    pub resume: Vec<Val>,
    pub cancel: CancellationToken,
    /// True when the node may run on the calling thread (a sync caller, one task).
    pub inline: bool,
    pub stream: Option<StreamSink>,
    pub host: Option<Arc<dyn Any + Send + Sync>>,
}

impl TaskContext {
    /// The failure of this task: `message` for the engine's own reports, `host` the
    /// host's original error (kept for re-raising).
    pub fn node_error(&self, message: impl Into<String>, host: Option<HostError>) -> GraphError {
        GraphError::Node {
            node: self.node.clone(),
            task_id: self.task_id.clone(),
            message: message.into(),
            host,
        }
    }
}

/// Runs a node. Implemented by Rust closures and by the host language's functions.
#[async_trait]
pub trait NodeRunner: Send + Sync {
    async fn run(
        &self,
        state: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure>;
}

/// Decides where to go from a node, reading the state after the node's step.
pub trait Router: Send + Sync {
    fn route(&self, state: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError>;
}

pub struct NodeSpec {
    pub name: String,
    pub runner: Arc<dyn NodeRunner>,
    /// The channels the node sees, in this order (its input schema's keys); `None`:
    /// every channel.
    pub reads: Option<Vec<String>>,
}

pub struct BranchSpec {
    pub source: String,
    pub router: Arc<dyn Router>,
    /// The nodes it may go to, when known (for validation and drawing).
    pub ends: Option<Vec<String>>,
    /// The channels the router sees, as [`NodeSpec::reads`]; `None`: those its source
    /// node sees.
    pub reads: Option<Vec<String>>,
}

/// A graph's definition.
#[derive(Default)]
pub struct GraphSpec {
    pub channels: Vec<(String, ChannelKind)>,
    pub nodes: Vec<NodeSpec>,
    /// `(source, target)`; the source may be `START`, the target `END`.
    pub edges: Vec<(String, String)>,
    /// `(sources, target)`: the target runs once every source has run.
    pub joins: Vec<(Vec<String>, String)>,
    pub branches: Vec<BranchSpec>,
    /// The channels a run's input may write (the input schema's keys); input for any
    /// other key is dropped. `None`: every channel.
    pub input: Option<Vec<String>>,
    /// The channels a run's result shows (the output schema's keys), in this order.
    /// `None`: every channel.
    pub output: Option<Vec<String>>,
}

impl GraphSpec {
    pub fn channel(mut self, name: &str, kind: ChannelKind) -> Self {
        self.channels.push((name.to_owned(), kind));
        self
    }

    pub fn node(mut self, name: &str, runner: Arc<dyn NodeRunner>) -> Self {
        self.nodes.push(NodeSpec {
            name: name.to_owned(),
            runner,
            reads: None,
        });
        self
    }

    pub fn edge(mut self, from: &str, to: &str) -> Self {
        self.edges.push((from.to_owned(), to.to_owned()));
        self
    }

    pub fn branch(
        mut self,
        from: &str,
        router: Arc<dyn Router>,
        ends: Option<Vec<String>>,
    ) -> Self {
        self.branches.push(BranchSpec {
            source: from.to_owned(),
            router,
            ends,
            reads: None,
        });
        self
    }

    /// Rejects bad wiring with an error that names the node or edge.
    pub fn validate(&self, interrupts: &[String]) -> Result<(), GraphError> {
        let mut names = HashSet::new();
        for n in &self.nodes {
            if n.name == START || n.name == END {
                return Err(GraphError::Build(format!(
                    "node name {:?} is reserved; choose another name",
                    n.name
                )));
            }
            if !names.insert(n.name.as_str()) {
                return Err(GraphError::Build(format!(
                    "node {:?} is already present",
                    n.name
                )));
            }
        }
        let mut chans = HashSet::new();
        for (c, _) in &self.channels {
            if !chans.insert(c.as_str()) {
                return Err(GraphError::Build(format!(
                    "channel {c:?} is declared twice"
                )));
            }
        }
        let lists = [
            ("the input schema", &self.input),
            ("the output schema", &self.output),
        ]
        .into_iter()
        .map(|(what, l)| (what.to_owned(), l))
        .chain(
            self.nodes
                .iter()
                .map(|n| (format!("node {:?}", n.name), &n.reads)),
        )
        .chain(self.branches.iter().map(|b| {
            (
                format!("the conditional edge from {:?}", b.source),
                &b.reads,
            )
        }));
        for (what, list) in lists {
            if let Some(c) = list.iter().flatten().find(|c| !chans.contains(c.as_str())) {
                return Err(GraphError::Build(format!(
                    "{what} names channel {c:?}, which the graph does not declare"
                )));
            }
        }
        let known_src = |s: &str| s == START || names.contains(s);
        let known_dst = |s: &str| s == END || names.contains(s);
        for (a, b) in &self.edges {
            if !known_src(a) {
                return Err(GraphError::Build(format!(
                    "edge {a:?} -> {b:?} starts at unknown node {a:?}{}",
                    if a == END {
                        " (END cannot have outgoing edges)"
                    } else {
                        ""
                    }
                )));
            }
            if !known_dst(b) {
                return Err(GraphError::Build(format!(
                    "edge {a:?} -> {b:?} ends at unknown node {b:?}{}",
                    if b == START {
                        " (START cannot be a destination)"
                    } else {
                        ""
                    }
                )));
            }
        }
        for (srcs, b) in &self.joins {
            for a in srcs {
                if !names.contains(a.as_str()) {
                    return Err(GraphError::Build(format!(
                        "edge {srcs:?} -> {b:?} starts at unknown node {a:?}"
                    )));
                }
            }
            if !known_dst(b) {
                return Err(GraphError::Build(format!(
                    "edge {srcs:?} -> {b:?} ends at unknown node {b:?}"
                )));
            }
        }
        for br in &self.branches {
            if !known_src(&br.source) {
                return Err(GraphError::Build(format!(
                    "conditional edge from unknown node {:?}",
                    br.source
                )));
            }
            for e in br.ends.iter().flatten() {
                if !known_dst(e) {
                    return Err(GraphError::Build(format!(
                        "conditional edge from {:?} leads to unknown node {e:?}",
                        br.source
                    )));
                }
            }
        }
        let has_entry = self.edges.iter().any(|(a, _)| a == START)
            || self.branches.iter().any(|b| b.source == START);
        if !has_entry {
            return Err(GraphError::Build(
                "graph has no entry point: add an edge from START (add_edge(START, \"node\") or \
                 set_entry_point(\"node\"))"
                    .into(),
            ));
        }
        for i in interrupts {
            if i != "*" && !names.contains(i.as_str()) {
                return Err(GraphError::Build(format!(
                    "interrupt_before/interrupt_after names unknown node {i:?}"
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn node_index(&self) -> HashMap<String, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect()
    }
}
