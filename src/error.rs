//! Errors of the runtime as a whole (as opposed to [`crate::tool::ToolError`], which is
//! data for the model).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// A tool's JSON Schema is not a valid schema: the tool cannot be registered.
    #[error("tool `{tool}` has an invalid parameters schema: {reason}")]
    InvalidSchema { tool: String, reason: String },
    /// A tool's name is one the model providers refuse (see [`crate::tool::name`]).
    #[error(transparent)]
    InvalidToolName(#[from] crate::tool::ToolNameError),
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error raised by host code (a Python exception), carried whole inside a core error
/// so that the host can re-raise the original object, traceback and all, when the error
/// comes back out of the engine. The core never looks inside; equality is identity.
#[derive(Clone)]
pub struct HostError(pub Arc<dyn Any + Send + Sync>, Option<Arc<str>>, bool);

impl HostError {
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        HostError(Arc::new(value), None, false)
    }

    /// With how the host shows the error (Python's `repr`): what a record that keeps
    /// the error as text (a failed task's pending write, as LangGraph's) holds.
    pub fn shown_as(self, text: String) -> Self {
        HostError(self.0, Some(text.into()), self.2)
    }

    /// Marked as a resume value the node's `interrupt(..., response_schema=)` refused
    /// (LangGraph's `is_invalid_resume`): the step's other tasks are not cancelled for
    /// it, so one answered by the same resume is not cut off after its side effects
    /// and run again later; the run fails once they finish.
    pub fn refused_resume(self) -> Self {
        HostError(self.0, self.1, true)
    }

    /// Whether it is marked by [`HostError::refused_resume`].
    pub fn is_refused_resume(&self) -> bool {
        self.2
    }

    /// How the host shows the error, if it said.
    pub fn shown(&self) -> Option<&str> {
        self.1.as_deref()
    }

    /// The host's value, when it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostError(..)")
    }
}

impl PartialEq for HostError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// An error and its sources, each once, as one line: `a: b: c`.
#[cfg(feature = "models")]
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !message.contains(&t) {
            message.push_str(": ");
            message.push_str(&t);
        }
        src = s.source();
    }
    message
}
