use thiserror::Error;

use crate::checkpoint::CheckpointError;
use crate::error::HostError;

/// Why a graph could not be built or a run failed.
#[derive(Debug, Clone, Error)]
pub enum GraphError {
    /// Bad wiring, found by `compile`.
    #[error("{0}")]
    Build(String),
    /// Writes a channel cannot take (e.g. two writes to a channel without a reducer).
    #[error("{0}")]
    InvalidUpdate(String),
    #[error(
        "recursion limit of {0} steps reached without hitting a stop condition; raise it \
         with config={{\"recursion_limit\": N}} if the graph is meant to run longer"
    )]
    Recursion(usize),
    /// A node (or router, or reducer) failed. `host` is the host's own error (a
    /// Python exception), re-raised as it was when the run fails.
    #[error("node {node:?} failed: {message}")]
    Node {
        node: String,
        task_id: String,
        message: String,
        host: Option<HostError>,
    },
    /// A value could not be checkpointed.
    #[error(
        "cannot checkpoint channel {channel:?}: a value of type {type_name} is not \
         serialisable ({reason}); keep state JSON-serialisable (or messages) when using \
         a checkpointer"
    )]
    Serialize {
        channel: String,
        type_name: String,
        reason: String,
    },
    /// The checkpointer failed.
    #[error("checkpoint error: {0}")]
    Checkpoint(CheckpointError),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// A node's attempt outlived its `TimeoutPolicy` (`kind` is `"run"` or `"idle"`),
    /// in LangGraph's words (`NodeTimeoutError`).
    #[error(
        "Node '{node}' exceeded its {kind} timeout of {:.3}s{} (elapsed: {elapsed:.3}s).",
        if *kind == "run" { run_timeout.unwrap_or_default() } else { idle_timeout.unwrap_or_default() },
        if *kind == "run" { "" } else { " without making progress" }
    )]
    Timeout {
        node: String,
        kind: &'static str,
        elapsed: f64,
        run_timeout: Option<f64>,
        idle_timeout: Option<f64>,
    },
    /// A step's tasks outlived the graph's `step_timeout` (seconds), as LangGraph's
    /// (a `TimeoutError` in Python).
    #[error(
        "a step of the graph ran longer than its step_timeout of {0}s; raise \
         graph.step_timeout (or set it to None) if its nodes are meant to take longer"
    )]
    StepTimeout(f64),
    /// `RunControl.request_drain(reason)` stopped the run between two steps (its
    /// progress is saved; run it again with `None` as input to continue).
    #[error("{0}")]
    Drained(String),
    /// Another run is in progress on the thread in this process, and this one's
    /// `multitask_strategy` is `reject`.
    #[error(
        "thread {0:?} already has a run in progress; wait for it to end, or pass \
         config={{\"multitask_strategy\": ...}}: \"enqueue\" to run after it, \"interrupt\" \
         to stop it at its next safe point and run now, \"rollback\" to discard it"
    )]
    Busy(String),
    /// A run of another process (or of another saver object on the same store) holds
    /// the thread's run lease, and this one's `multitask_strategy` is `reject`.
    #[error(
        "thread {0:?} already has a run in progress in another process (or on another \
         saver object on the same store); wait for it to end, or pass \
         config={{\"multitask_strategy\": ...}}: \"enqueue\" to run after it, \
         \"interrupt\" to stop it at its next safe point and run now, \"rollback\" to \
         discard it"
    )]
    BusyElsewhere(String),
    /// A newer run on the thread (`multitask_strategy="rollback"`) stopped this one and
    /// discarded its progress.
    #[error(
        "the run on thread {0:?} was rolled back: a newer run on the thread \
         (multitask_strategy=\"rollback\") stopped it and discarded its progress"
    )]
    RolledBack(String),
    /// Misuse of a run's configuration (resume without a checkpointer, etc.).
    #[error("{0}")]
    Config(String),
    /// One `Command(resume=value)` for several pending interrupts, without strict
    /// resume (LangGraph's default, which raises a `RuntimeError` for it).
    #[error("{0}")]
    AmbiguousResume(String),
    /// A `Command(resume=...)` that does not match the pending interrupts, refused
    /// before anything is written (LangGraph's `UnknownInterruptError`): `reason` is
    /// `"not_pending"` (ids in `interrupt_ids` are not pending) or `"ambiguous"` (one
    /// value while several are pending); `pending_ids` can still be answered.
    #[error("{message}")]
    UnknownInterrupt {
        message: String,
        reason: &'static str,
        interrupt_ids: Vec<String>,
        pending_ids: Vec<String>,
    },
}

impl GraphError {
    /// The error as a failed task's record keeps it: the host's own text for its
    /// exception (Python's `repr`, as LangGraph saves it), else the message.
    pub fn shown(&self) -> String {
        match self {
            GraphError::Node {
                host: Some(h),
                message,
                ..
            } => h.shown().map_or_else(|| message.clone(), str::to_owned),
            GraphError::Node { message, .. } => message.clone(),
            e => e.to_string(),
        }
    }

    /// Whether it is a task's failure on a resume value its `interrupt()` refused
    /// (see [`crate::error::HostError::refused_resume`]).
    pub fn is_refused_resume(&self) -> bool {
        matches!(self, GraphError::Node { host: Some(h), .. } if h.is_refused_resume())
    }
}
