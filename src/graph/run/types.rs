//! What a run takes and returns.

use std::sync::Arc;

use serde_json::Value;

use crate::graph::interrupt::InterruptInfo;
use crate::graph::spec::NodeOutput;
use crate::graph::state::StateView;
use crate::graph::stream::StreamSink;
use crate::graph::value::Val;

/// What a run starts from.
pub enum RunInput {
    /// New input, written to the state as if by `START`.
    Values(Vec<(String, Val)>),
    /// New input given as a `Command(update=..., goto=...)`: `START` writes the update
    /// and also routes to the gotos.
    Command(NodeOutput),
    /// `Command(resume=..., update=...)`: one value for the single interrupted task, or
    /// values by interrupt id; and the update's writes, applied (once) before the
    /// resumed tasks run, as LangGraph.
    Resume(Resume, Vec<(String, Val)>),
    /// `None`: continue from the checkpoint (after a crash or an `interrupt_before`).
    Continue,
}

/// See [`RunOptions::lent`].
#[derive(Clone)]
pub struct Lent {
    pub saver: Arc<dyn crate::checkpoint::Checkpointer>,
    pub resume: Vec<Val>,
    /// The parent task's answers by id to this run's questions (see
    /// [`crate::graph::Nest::answers`]): when given, the run resumes with them
    /// instead of the last of `resume`.
    pub answers: Vec<(String, Val)>,
}

pub enum Resume {
    /// One value, for the one pending interrupt.
    One(Val),
    /// Values by interrupt id (LangGraph's, see [`crate::graph::interrupt_id`]).
    ById(Vec<(String, Val)>),
    /// A nested run's: the parent task's answer for this run's task with this id,
    /// paused on a question (see `Run::nested_input`).
    Task(String, Val),
}

/// Watches a run's super-steps: told when each starts (with its tasks' nodes) and
/// ends. Tracing hooks in here; a run without one (the usual case) pays one `Option`
/// check per step. Called on the run's task between steps: keep it quick.
pub trait StepObserver: Send + Sync {
    fn step_started(&self, step: i64, nodes: &[&str]);
    fn step_ended(&self, step: i64, error: Option<&super::GraphError>);
}

#[derive(Clone)]
pub struct RunOptions {
    pub thread_id: Option<String>,
    /// The run's namespace in the thread: `""` for a root run, a subgraph's
    /// `node:task_id` path below (see [`crate::checkpoint::thread_key`]).
    pub checkpoint_ns: String,
    /// A checkpointer lent by the run of a parent graph (see [`crate::graph::Nest`]),
    /// used instead of the graph's own. A run with one continues its namespace when
    /// the namespace's latest checkpoint has tasks left (the parent's task was paused
    /// or crashed in it), answering a pending `interrupt()` with the last of `resume`,
    /// the parent task's resume values.
    pub lent: Option<Lent>,
    /// When checkpoints reach the store (see [`super::Durability`]).
    pub durability: super::Durability,
    /// The run's own breakpoints (LangGraph's `invoke(interrupt_before=...)`), used
    /// instead of the compiled graph's when given (see [`crate::graph::Graph::breakpoints`]).
    pub interrupt_before: Option<crate::graph::NameSet>,
    pub interrupt_after: Option<crate::graph::NameSet>,
    pub checkpoint_id: Option<String>,
    pub recursion_limit: usize,
    /// At most this many of a step's tasks run at once (LangGraph's config
    /// `max_concurrency`); `None`: all of them.
    pub max_concurrency: Option<usize>,
    /// LangGraph's `step_timeout`: how long a step's tasks may take together. When it
    /// passes, the tasks still running are stopped (dropped, as a node timeout's) and
    /// the run fails with [`GraphError::StepTimeout`]; the writes of those that
    /// finished were saved as each finished.
    pub step_timeout: Option<std::time::Duration>,
    pub cancel: tokio_util::sync::CancellationToken,
    /// What the run does when its thread has a run in progress (a root run with a
    /// checkpointer; see [`super::Multitask`]).
    pub multitask: super::Multitask,
    /// Set by the run registry: the run starts nothing new and ends at the end of its
    /// step (see [`super::Multitask::Interrupt`]).
    pub steer: Option<crate::executor::Steer>,
    pub stream: Option<StreamSink>,
    pub host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The caller drives the run on its own thread and runs a step's task there
    /// when it is the step's only one (see `Run::run_tasks`).
    pub inline: bool,
    /// With `inline`: the caller takes the run's events while it drives it (a sync
    /// stream). The run yields after each step, so the caller has the step's events
    /// before the next step runs.
    pub live: bool,
    pub metadata: Value,
    /// Sees every step start and end (see [`StepObserver`]).
    pub observer: Option<Arc<dyn StepObserver>>,
    /// LangGraph's `RunControl`: a drain requested stops the run before its next step.
    pub drain: Option<Arc<crate::graph::Drain>>,
    /// Set when the run travels back in time (see [`crate::graph::Replay`]): where the graph
    /// runs inside its tasks start. Passed down to them.
    pub replay: Option<Arc<crate::graph::Replay>>,
    /// A nested run of a replay starts from its latest checkpoint older than this id
    /// (none: fresh), with its input, instead of continuing its latest.
    pub start_before: Option<String>,
    /// The checkpoint ids of the enclosing runs by namespace (`""`: the root's), as
    /// its checkpoints record them in their metadata's `parents` (LangGraph's), from
    /// which a subgraph checkpoint's config gets its `checkpoint_map`.
    pub parents: std::collections::BTreeMap<String, String>,
    /// LangGraph's strict resume (its config key `__pregel_strict_resume`): a resume
    /// naming an interrupt that is not pending, or one value for several, is refused
    /// before anything is written. ironloop's default; without it, as LangGraph's
    /// default, unknown ids are ignored and one value for several is a `RuntimeError`.
    pub strict_resume: bool,
    /// The run is inside a task of another run (a subgraph, a graph a node invokes),
    /// whose `messages` stream it shares (see `Run::note_start_messages`).
    pub in_task: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            thread_id: None,
            checkpoint_ns: String::new(),
            lent: None,
            durability: Default::default(),
            interrupt_before: None,
            interrupt_after: None,
            checkpoint_id: None,
            // LangGraph 1.2's default.
            recursion_limit: 10_007,
            max_concurrency: None,
            step_timeout: None,
            cancel: Default::default(),
            multitask: Default::default(),
            steer: None,
            stream: None,
            host: None,
            inline: false,
            live: false,
            metadata: Value::Null,
            observer: None,
            drain: None,
            replay: None,
            start_before: None,
            parents: Default::default(),
            strict_resume: true,
            in_task: false,
        }
    }
}

pub struct RunResult {
    /// The whole state where the run stopped.
    pub state: StateView,
    /// What the run returns: the output channels of `state`; `None` when the run
    /// started from new input and neither it nor any step wrote one of them.
    pub output: Option<StateView>,
    pub interrupts: Vec<InterruptInfo>,
    pub checkpoint_id: Option<String>,
    pub next: Vec<String>,
}
