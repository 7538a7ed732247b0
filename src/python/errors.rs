//! Raising the exceptions of `ironloop.errors` (defined in Python, so that they can
//! inherit from several built-in exceptions) from Rust.

use pyo3::prelude::*;

use crate::tool::ToolError;

/// An instance of `ironloop.errors.<class>` with `msg`.
pub fn error(py: Python<'_>, class: &str, msg: impl Into<String>) -> PyErr {
    let made = py
        .import("ironloop.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((msg.into(),)));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// The typed Python exception for a tool error.
pub fn tool_error(py: Python<'_>, e: &ToolError) -> PyErr {
    let class = match e {
        ToolError::InvalidArgs { .. } => "ToolInvalidArgsError",
        ToolError::NotFound { .. } => "ToolNotFoundError",
        ToolError::Failed { .. } => "ToolExecutionError",
        ToolError::Timeout { .. } => "ToolTimeoutError",
        ToolError::Cancelled { .. } => "ToolCancelledError",
        ToolError::Blocked { .. } => "ToolBlockedError",
    };
    error(py, class, e.to_string())
}
