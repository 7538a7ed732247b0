//! A graph's wiring, checked once at compile time.

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::channel::ChannelKind;
use super::error::GraphError;
use super::reserved::RESERVED_CHARS;
use super::state::StateView;
use super::stream::StreamSink;
use super::value::Val;
use super::NameMap;
use crate::checkpoint::Checkpointer;
use crate::error::HostError;

pub const START: &str = "__start__";
pub const END: &str = "__end__";

/// Where control goes after a node.
#[derive(Debug, Clone)]
pub enum Goto {
    Node(String),
    /// Runs `node` in the next step with `arg` as its input (map-reduce fan-out), timed
    /// by its own timeout when given (LangGraph's `Send(timeout=)`) instead of the
    /// node's.
    Send(String, Val, Option<super::guard::TimeoutPolicy>),
    End,
}

impl Goto {
    /// To the node named `name`, or the end when it is [`END`].
    pub fn to(name: impl Into<String>) -> Goto {
        let name = name.into();
        if name == END {
            Goto::End
        } else {
            Goto::Node(name)
        }
    }
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
    /// The output came from a cache (`CachePolicy`), not from running the node: the
    /// `updates` stream marks it as LangGraph does (`"__metadata__": {"cached": True}`).
    pub cached: bool,
}

/// Why a node did not produce output.
#[derive(Debug, Clone)]
pub enum NodeFailure {
    /// `interrupt(value)`: the run pauses; resuming re-runs the node.
    Interrupt(Val),
    /// A graph nested in the task paused on `interrupt()`s (one per task of it that
    /// asked): their ids, made in the nested graph (LangGraph's), and values. The run
    /// pauses on each of them, answered by its own id (see `graph::nested`).
    Nested(Vec<(String, Val)>),
    /// A graph nested in the task stopped at one of its static breakpoints: the run
    /// pauses with nothing to answer; resuming re-runs the node, whose nested graph
    /// continues from its checkpoint.
    Paused,
    Error(GraphError),
}

/// What a task gets besides its input.
#[derive(Clone)]
pub struct TaskContext {
    pub task_id: String,
    pub node: String,
    pub step: i64,
    /// The task was made by a `Send` (LangGraph's push task), not by an edge.
    pub push: bool,
    /// Resume values for this task's `interrupt()` calls, in order.
    pub resume: Vec<Val>,
    pub cancel: CancellationToken,
    /// Set when a newer run steers this one: a node that runs tool calls starts no
    /// new one (see [`NodeRunner::answers_when_steered`]).
    pub steer: Option<crate::executor::Steer>,
    /// True when the node may run on the calling thread (a sync caller's run, the
    /// step's only task).
    pub inline: bool,
    pub stream: Option<StreamSink>,
    pub host: Option<Arc<dyn Any + Send + Sync>>,
    /// Where a graph run inside this task keeps its checkpoints; `None` when the run
    /// has no checkpointer.
    pub nest: Option<Nest>,
    /// Where calls the task makes (`@task`s called from an `@entrypoint`) find the
    /// results an earlier attempt of the step saved, and save theirs.
    pub calls: super::Calls,
    /// How many steps the run may still take, this one included, before its
    /// `recursion_limit` stops it (LangGraph's `RemainingSteps` managed value).
    pub remaining_steps: i64,
    /// Under an idle timeout: what the task touches when it makes progress.
    pub progress: Option<Arc<super::guard::Progress>>,
    /// For an error handler's task: the failure it handles.
    pub failed: Option<Arc<super::guard::Failed>>,
}

/// A run's checkpointer lent to a graph run inside one of its tasks (a subgraph,
/// LangGraph's `checkpointer=None` / `True`): the subgraph keeps its own checkpoints
/// in the parent's store, under the parent's thread and the task's namespace, so a
/// resumed task continues the subgraph where it paused instead of starting it again.
#[derive(Clone)]
pub struct Nest {
    pub saver: Arc<dyn Checkpointer>,
    pub thread_id: String,
    /// The task's namespace (`node:task_id`, below the parent's own).
    pub checkpoint_ns: String,
    /// The task's last resume value is not taken yet (it was answered after its last
    /// pause): a graph nested in it answers its own pending `interrupt()` with that
    /// value. A paused task run again without a new answer lends none, so an answer
    /// the nested graph already took is never given to its next question.
    pub answer_waiting: bool,
    /// The answers by id to the nested graph's questions the task paused on (see
    /// [`NodeFailure::Nested`]) that came with the waiting answer: the nested graph
    /// resumes with them as with `Command(resume={id: value, ...})`.
    pub answers: Vec<(String, Val)>,
    /// The parent run's time travel, if it replays (see [`super::Replay`]).
    pub replay: Option<Arc<super::Replay>>,
    /// The checkpoint ids of the enclosing runs by namespace, the parent's own
    /// included (see `RunOptions::parents`).
    pub parents: std::collections::BTreeMap<String, String>,
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

    /// True for a node that, run with `ctx.steer` set, answers its work without doing
    /// it (a tool node: every call gets a "skipped" error result). A steered run runs
    /// such a step before it stops, so that no tool call is left unanswered.
    fn answers_when_steered(&self) -> bool {
        false
    }
}

/// Decides where to go from a node, reading the state after the node's step.
pub trait Router: Send + Sync {
    fn route(&self, state: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError>;

    /// The decision of a router that must be awaited (a host's async routing function
    /// in an async run), which the engine awaits instead of calling
    /// [`route`](Self::route). `None`, every other router's answer (the default),
    /// costs nothing: `route` decides at once.
    fn route_later(&self, _state: &StateView, _ctx: &TaskContext) -> Option<LaterRoute> {
        None
    }

    /// The branch's name in error messages (LangGraph names a branch after its
    /// function; an unnamed one is `"condition"`).
    fn name(&self) -> &str {
        "condition"
    }
}

/// A routing decision still to be awaited (see [`Router::route_later`]).
pub type LaterRoute = futures::future::BoxFuture<'static, Result<Vec<Goto>, GraphError>>;

pub struct NodeSpec {
    pub name: String,
    pub runner: Arc<dyn NodeRunner>,
    /// The channels the node sees, in this order (its input schema's keys); `None`:
    /// every channel.
    pub reads: Option<Vec<String>>,
    /// Its timeout and error handler.
    pub guard: super::guard::NodeGuard,
    /// `add_node(defer=True)`: triggered while other tasks are due, the node waits
    /// until a step has nothing else to run (LangGraph's deferred node).
    pub defer: bool,
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
    /// The input is applied as the run's input checkpoint is made, whose tasks are
    /// those `START` leads to: no step of its own for `START`. LangGraph runs a
    /// functional-API entrypoint so (its node reads the `START` channel itself), and
    /// its step numbers, streams and history show it (see `run::direct`).
    pub direct_input: bool,
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
            guard: Default::default(),
            defer: false,
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

    /// Rejects bad wiring with an error that names the node or edge, in LangGraph's
    /// words (`StateGraph.validate`), checked in its order: node names, edge sources,
    /// the entry point, conditional edges' targets, edge targets, interrupts.
    pub fn validate(&self, interrupts: &[String]) -> Result<(), GraphError> {
        let build = |m: String| Err(GraphError::Build(m));
        let mut names = HashSet::new();
        for n in &self.nodes {
            if n.name == START || n.name == END {
                return build(format!("Node `{}` is reserved.", n.name));
            }
            if let Some(c) = n.name.chars().find(|c| RESERVED_CHARS.contains(c)) {
                return build(format!(
                    "'{c}' is a reserved character and is not allowed in the node names."
                ));
            }
            if !names.insert(n.name.as_str()) {
                return build(format!("Node `{}` already present.", n.name));
            }
        }
        for n in &self.nodes {
            if let Some(h) = n
                .guard
                .error_handler
                .as_ref()
                .filter(|h| !names.contains(h.as_str()))
            {
                return build(format!(
                    "node `{}` has error handler `{h}`, which is not a node of the graph; \
                     add the handler as a node",
                    n.name
                ));
            }
        }
        let mut chans = HashSet::new();
        for (c, _) in &self.channels {
            if !chans.insert(c.as_str()) {
                return build(format!("channel {c:?} is declared twice"));
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
        let sources = self
            .edges
            .iter()
            .map(|(a, _)| a)
            .chain(self.joins.iter().flat_map(|(srcs, _)| srcs))
            .chain(self.branches.iter().map(|b| &b.source));
        let mut has_entry = false;
        for s in sources {
            has_entry |= s == START;
            if s != START && !names.contains(s.as_str()) {
                return build(format!("Found edge starting at unknown node '{s}'"));
            }
        }
        if !has_entry {
            return build(
                "Graph must have an entrypoint: add at least one edge from START to another node"
                    .into(),
            );
        }
        let known_dst = |s: &str| s == END || names.contains(s);
        for br in &self.branches {
            for e in br.ends.iter().flatten() {
                if !known_dst(e) {
                    return build(format!(
                        "At '{}' node, '{}' branch found unknown target '{e}'",
                        br.source,
                        br.router.name()
                    ));
                }
            }
        }
        let targets = self
            .edges
            .iter()
            .map(|(_, b)| b)
            .chain(self.joins.iter().map(|(_, b)| b));
        for t in targets {
            if !known_dst(t) {
                return build(format!("Found edge ending at unknown node `{t}`"));
            }
        }
        for i in interrupts {
            if i != "*" && !names.contains(i.as_str()) {
                return build(format!("Interrupt node `{i}` not found"));
            }
        }
        Ok(())
    }

    pub(crate) fn node_index(&self) -> NameMap<usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect()
    }
}
