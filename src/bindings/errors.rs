//! The one place where the core's errors become Python exceptions.
//!
//! The exceptions are those of `ironloop.errors`, defined in Python so that they can
//! inherit from several built-in exceptions (`ToolTimeoutError` is a `TimeoutError`,
//! `McpConnectionError` a `ConnectionError`...). The classes are looked up once per
//! interpreter ([`Class`]); each core error type converts with `From` (`?` or
//! `.map_err(PyErr::from)` at the call sites), so a new error type is one more `impl`.

use std::io;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyType};

use super::exiting::attach;
use crate::checkpoint::CheckpointError;
use crate::graph::GraphError;
use crate::model::ModelError;
use crate::sources::mcp::McpError;
use crate::sources::openapi::OpenApiError;
use crate::tool::ToolError;

/// Declares [`Class`] and its Python names in one list.
macro_rules! classes {
    ($($variant:ident => $name:literal,)*) => {
        /// An exception class of `ironloop.errors`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Class {
            $($variant,)*
        }

        impl Class {
            /// Every class, in declaration order (the order of the cache).
            const ALL: &'static [Class] = &[$(Class::$variant,)*];

            /// The class's name in `ironloop.errors`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Class::$variant => $name,)*
                }
            }
        }
    };
}

classes! {
    Ironloop => "IronloopError",
    InvalidArgument => "InvalidArgumentError",
    ToolInvalidArgs => "ToolInvalidArgsError",
    ToolNotFound => "ToolNotFoundError",
    ToolExecution => "ToolExecutionError",
    ToolTimeout => "ToolTimeoutError",
    ToolCancelled => "ToolCancelledError",
    ToolBlocked => "ToolBlockedError",
    GraphRecursion => "GraphRecursionError",
    InvalidUpdate => "InvalidUpdateError",
    Checkpoint => "CheckpointError",
    CheckpointSerialization => "CheckpointSerializationError",
    CheckpointStorage => "CheckpointStorageError",
    CheckpointIntegrity => "CheckpointIntegrityError",
    CheckpointConflict => "CheckpointConflictError",
    CheckpointNotFound => "CheckpointNotFoundError",
    ThreadBusy => "ThreadBusyError",
    RunRolledBack => "RunRolledBackError",
    UnknownInterrupt => "UnknownInterruptError",
    NodeTimeout => "NodeTimeoutError",
    NodeCancelled => "NodeCancelledError",
    GraphDrained => "GraphDrained",
    Model => "ModelError",
    Store => "StoreError",
    OpenApiSpec => "OpenApiSpecError",
    OpenApiFetch => "OpenApiFetchError",
    OpenApiFile => "OpenApiFileError",
    OpenApiFileNotFound => "OpenApiFileNotFoundError",
    McpConnection => "McpConnectionError",
    McpSession => "McpSessionError",
    WorkspaceConfig => "WorkspaceConfigError",
    WorkspaceNotFound => "WorkspaceNotFoundError",
    WorkspaceFile => "WorkspaceFileError",
}

/// The classes of `ironloop.errors`, indexed by `Class as usize`; imported once.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

impl Class {
    /// The Python class.
    pub fn type_object(self, py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
        let all = CLASSES.get_or_try_init(py, || -> PyResult<_> {
            let m = py.import("ironloop.errors")?;
            Class::ALL
                .iter()
                .map(|c| Ok(m.getattr(c.name())?.cast_into::<PyType>()?.unbind()))
                .collect()
        })?;
        Ok(all[self as usize].bind(py))
    }

    /// An instance of this class with `msg`, as a `PyErr`.
    pub fn err(self, py: Python<'_>, msg: impl Into<String>) -> PyErr {
        match self.type_object(py).and_then(|t| t.call1((msg.into(),))) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    }

    /// Like [`Class::err`], for code that does not hold a `Python` token.
    pub fn new_err(self, msg: impl Into<String>) -> PyErr {
        let msg = msg.into();
        attach(|py| self.err(py, msg))
    }
}

impl Class {
    /// The class a [`ToolError`] is raised as (and named by in a span's `error.type`).
    pub fn of_tool_error(e: &ToolError) -> Class {
        match e {
            ToolError::InvalidArgs { .. } => Class::ToolInvalidArgs,
            ToolError::NotFound { .. } => Class::ToolNotFound,
            ToolError::Failed { .. } => Class::ToolExecution,
            ToolError::Timeout { .. } => Class::ToolTimeout,
            ToolError::Cancelled { .. } | ToolError::Skipped { .. } => Class::ToolCancelled,
            ToolError::Blocked { .. } => Class::ToolBlocked,
            ToolError::Unusable { .. } => Class::InvalidArgument,
        }
    }
}

/// `From<E>` for an error the glue maps by reference (`From<&E>`, which a caller
/// holding a borrowed error uses too).
macro_rules! from_owned {
    ($($error:ty),*) => {$(
        impl From<$error> for PyErr {
            fn from(e: $error) -> PyErr {
                PyErr::from(&e)
            }
        }
    )*};
}

from_owned!(ToolError, ModelError, CheckpointError);

impl From<&ToolError> for PyErr {
    fn from(e: &ToolError) -> PyErr {
        Class::of_tool_error(e).new_err(e.to_string())
    }
}

/// `ModelError` with `.status_code`, `.provider`, `.kind` and `.retryable`.
impl From<&ModelError> for PyErr {
    fn from(e: &ModelError) -> PyErr {
        attach(|py| {
            with_attrs(py, Class::Model.err(py, e.to_string()), |v| {
                v.setattr("status_code", e.status())?;
                v.setattr("provider", e.provider())?;
                v.setattr("kind", e.kind())?;
                v.setattr("retryable", e.is_retryable())
            })
        })
    }
}

/// The `CheckpointError` subclass of each kind; a conflict and a missing checkpoint
/// carry `.thread_id` (and `.checkpoint_id`).
impl From<&CheckpointError> for PyErr {
    fn from(e: &CheckpointError) -> PyErr {
        attach(|py| {
            let (class, checkpoint_id) = match e {
                CheckpointError::Serialization(_) => (Class::CheckpointSerialization, None),
                CheckpointError::Storage(_) => (Class::CheckpointStorage, None),
                CheckpointError::Integrity(_) => (Class::CheckpointIntegrity, None),
                CheckpointError::Conflict { .. } => (Class::CheckpointConflict, None),
                CheckpointError::NotFound { checkpoint_id, .. } => {
                    (Class::CheckpointNotFound, Some(checkpoint_id.as_str()))
                }
            };
            with_attrs(py, class.err(py, e.to_string()), |v| {
                v.setattr("thread_id", e.thread_id())?;
                v.setattr("checkpoint_id", checkpoint_id)
            })
        })
    }
}

impl From<OpenApiError> for PyErr {
    fn from(e: OpenApiError) -> PyErr {
        let class = match &e {
            OpenApiError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                Class::OpenApiFileNotFound
            }
            OpenApiError::Io { .. } => Class::OpenApiFile,
            OpenApiError::Fetch { .. } => Class::OpenApiFetch,
            OpenApiError::Parse(_) | OpenApiError::Invalid(_) | OpenApiError::Config(_) => {
                Class::OpenApiSpec
            }
        };
        class.new_err(e.to_string())
    }
}

impl From<McpError> for PyErr {
    fn from(e: McpError) -> PyErr {
        let class = match &e {
            McpError::Connect { .. } => Class::McpConnection,
            McpError::Server { .. }
            | McpError::Closed { .. }
            | McpError::Cancelled { .. }
            | McpError::Protocol { .. }
            | McpError::TooLarge { .. }
            | McpError::Timeout { .. } => Class::McpSession,
        };
        class.new_err(e.to_string())
    }
}

/// Why the workspace tools could not be made (the core reports an `io::Error`).
#[derive(Debug)]
pub struct WorkspaceError(pub io::Error);

impl From<WorkspaceError> for PyErr {
    fn from(WorkspaceError(e): WorkspaceError) -> PyErr {
        let class = match e.kind() {
            io::ErrorKind::NotFound => Class::WorkspaceNotFound,
            io::ErrorKind::InvalidInput => Class::WorkspaceConfig,
            _ => Class::WorkspaceFile,
        };
        class.new_err(e.to_string())
    }
}

/// A failed run as the exception the caller sees: the node's own exception when it
/// raised (carried in the error as a [`crate::error::HostError`]), with a note naming the
/// task, as LangGraph's `During task with name …`.
/// A tool the registry refuses (a schema or a name the providers refuse) or a
/// configuration value out of range: an argument the caller passed.
impl From<crate::error::Error> for PyErr {
    fn from(e: crate::error::Error) -> PyErr {
        Class::InvalidArgument.new_err(e.to_string())
    }
}

/// Chunks that cannot be joined: a `ValueError`, as langchain-core raises.
impl From<crate::message_chunk::JoinError> for PyErr {
    fn from(e: crate::message_chunk::JoinError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// Messages `add_messages` cannot merge: a `ValueError`, as LangGraph raises.
impl From<crate::graph::MessagesError> for PyErr {
    fn from(e: crate::graph::MessagesError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// A PII type without a built-in detector.
impl From<crate::pii::UnknownKind> for PyErr {
    fn from(e: crate::pii::UnknownKind) -> PyErr {
        Class::InvalidArgument.new_err(e.to_string())
    }
}

/// A retry setting no backoff can follow (a negative delay or factor): an argument.
impl From<crate::retry::InvalidBackoff> for PyErr {
    fn from(e: crate::retry::InvalidBackoff) -> PyErr {
        Class::InvalidArgument.new_err(e.to_string())
    }
}

/// A workspace search's failure: a root that does not exist is a
/// `FileNotFoundError`, anything else (a bad pattern, a path outside the root) a
/// `ValueError`.
impl From<crate::sources::workspace::FindError> for PyErr {
    fn from(e: crate::sources::workspace::FindError) -> PyErr {
        use crate::sources::workspace::FindError;
        match e {
            FindError::Root(e) if e.kind() == io::ErrorKind::NotFound => {
                pyo3::exceptions::PyFileNotFoundError::new_err(e.to_string())
            }
            other => PyValueError::new_err(other.to_string()),
        }
    }
}

impl From<GraphError> for PyErr {
    fn from(e: GraphError) -> PyErr {
        attach(|py| match e {
            GraphError::Node {
                node,
                task_id,
                message,
                host,
            } => match host.as_ref().and_then(|s| s.downcast_ref::<PyErr>()) {
                Some(err) => {
                    let err = err.clone_ref(py);
                    add_task_note(py, &err, &node, &task_id);
                    err
                }
                None => Class::Ironloop.err(
                    py,
                    GraphError::Node {
                        node,
                        task_id,
                        message,
                        host: None,
                    }
                    .to_string(),
                ),
            },
            GraphError::InvalidUpdate(m) => Class::InvalidUpdate.err(py, m),
            GraphError::Recursion(_) => Class::GraphRecursion.err(py, e.to_string()),
            GraphError::Serialize { .. } => Class::CheckpointSerialization.err(py, e.to_string()),
            GraphError::Checkpoint(e) => PyErr::from(&e),
            GraphError::Build(m) | GraphError::Config(m) => PyValueError::new_err(m),
            GraphError::AmbiguousResume(m) => pyo3::exceptions::PyRuntimeError::new_err(m),
            GraphError::Cancelled => Class::ToolCancelled.err(py, "the run was cancelled"),
            GraphError::Timeout {
                node,
                kind,
                elapsed,
                run_timeout,
                idle_timeout,
            } => node_timeout(py, node, kind, elapsed, run_timeout, idle_timeout),
            GraphError::Drained(reason) => Class::GraphDrained.err(py, reason),
            GraphError::StepTimeout(_) => pyo3::exceptions::PyTimeoutError::new_err(e.to_string()),
            GraphError::Busy(ref t) | GraphError::BusyElsewhere(ref t) => {
                with_thread(py, Class::ThreadBusy, &e, t)
            }
            GraphError::RolledBack(ref t) => with_thread(py, Class::RunRolledBack, &e, t),
            GraphError::UnknownInterrupt {
                message,
                reason,
                interrupt_ids,
                pending_ids,
            } => unknown_interrupt(py, message, reason, interrupt_ids, pending_ids),
        })
    }
}

/// LangGraph's `NodeTimeoutError(node, elapsed, kind=, idle_timeout=, run_timeout=)`.
fn node_timeout(
    py: Python<'_>,
    node: String,
    kind: &str,
    elapsed: f64,
    run_timeout: Option<f64>,
    idle_timeout: Option<f64>,
) -> PyErr {
    let made = Class::NodeTimeout.type_object(py).and_then(|cls| {
        let kw = pyo3::types::PyDict::new(py);
        kw.set_item("kind", kind)?;
        kw.set_item("run_timeout", run_timeout)?;
        kw.set_item("idle_timeout", idle_timeout)?;
        cls.call((node, elapsed), Some(&kw))
    });
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `UnknownInterruptError` with LangGraph's attributes (`reason`, `interrupt_ids`,
/// `pending_ids`, the ids as tuples).
fn unknown_interrupt(
    py: Python<'_>,
    message: String,
    reason: &str,
    interrupt_ids: Vec<String>,
    pending_ids: Vec<String>,
) -> PyErr {
    with_attrs(py, Class::UnknownInterrupt.err(py, message), |v| {
        v.setattr("reason", reason)?;
        v.setattr("interrupt_ids", PyTuple::new(py, interrupt_ids)?)?;
        v.setattr("pending_ids", PyTuple::new(py, pending_ids)?)
    })
}

/// `class` with `e`'s message and `.thread_id`.
fn with_thread(py: Python<'_>, class: Class, e: &GraphError, thread: &str) -> PyErr {
    with_attrs(py, class.err(py, e.to_string()), |v| {
        v.setattr("thread_id", thread)
    })
}

/// `err` with the attributes `set` gives its exception; the error of setting one
/// instead, when that fails (then nothing better can be raised).
fn with_attrs(
    py: Python<'_>,
    err: PyErr,
    set: impl FnOnce(&Bound<'_, pyo3::exceptions::PyBaseException>) -> PyResult<()>,
) -> PyErr {
    match set(err.value(py)) {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// Adds `During task with name '…' and id '…'` to the exception's notes, once (a
/// subgraph's failure passes through every enclosing graph).
fn add_task_note(py: Python<'_>, err: &PyErr, node: &str, task_id: &str) {
    add_note(
        py,
        err,
        &format!("During task with name '{node}' and id '{task_id}'"),
    );
}

/// Appends `note` to the exception's `__notes__`, unless it is there already. Written
/// to the attribute, not through `add_note`, which CPython 3.10 lacks (its
/// tracebacks do not print notes, but the note is there to read).
pub(crate) fn add_note(py: Python<'_>, err: &PyErr, note: &str) {
    let value = err.value(py);
    let r = (|| -> PyResult<()> {
        let notes = match value.getattr("__notes__") {
            Ok(n) if n.is_instance_of::<PyList>() => n.cast_into::<PyList>()?,
            _ => {
                let l = PyList::empty(py);
                value.setattr("__notes__", &l)?;
                l
            }
        };
        if notes
            .iter()
            .any(|n| n.extract::<String>().is_ok_and(|s| s == note))
        {
            return Ok(());
        }
        notes.append(note)
    })();
    // A note is a courtesy: an exception that refuses attributes is raised without it.
    let _ = r;
}
