use thiserror::Error;

use crate::error::HostError;

/// Why a tool call produced no output. These are data for the model (they become
/// error tool messages), not exceptions for the programmer.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ToolError {
    #[error("invalid arguments for tool `{tool}`: {reason}")]
    InvalidArgs { tool: String, reason: String },
    #[error("unknown tool `{tool}`; available tools: {available}")]
    NotFound { tool: String, available: String },
    /// `raised` is the host's exception when host code (a Python tool) raised it: the
    /// host re-raises that very object when its policy says so (`handle_tool_errors`).
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        tool: String,
        message: String,
        raised: Option<HostError>,
    },
    #[error("tool `{tool}` timed out after {seconds:.3}s")]
    Timeout { tool: String, seconds: f64 },
    #[error("tool `{tool}` was cancelled")]
    Cancelled {
        tool: String,
        raised: Option<HostError>,
    },
    #[error("tool `{tool}` was blocked: {reason}")]
    Blocked { tool: String, reason: String },
    /// The call was never started: the run stopped starting calls (a new input
    /// steered it, `multitask_strategy="interrupt"`). `reason` says why.
    #[error("tool `{tool}` was not run: {reason}")]
    Skipped { tool: String, reason: String },
    /// The tool cannot run where it was called: it needs something the caller did not
    /// provide (a store for an injected store parameter). A mistake in the program,
    /// not in the call: raised to the caller, never reported to the model.
    #[error("{message}")]
    Unusable { tool: String, message: String },
}

impl ToolError {
    /// The short name of the variant, as exposed to hooks and Python.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::InvalidArgs { .. } => "invalid_args",
            ToolError::NotFound { .. } => "not_found",
            ToolError::Failed { .. } => "failed",
            ToolError::Timeout { .. } => "timeout",
            ToolError::Cancelled { .. } => "cancelled",
            ToolError::Blocked { .. } => "blocked",
            ToolError::Skipped { .. } => "skipped",
            ToolError::Unusable { .. } => "unusable",
        }
    }

    /// A failure with `message` for `tool`.
    pub fn failed(tool: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError::Failed {
            tool: tool.into(),
            message: message.into(),
            raised: None,
        }
    }

    /// A call of `tool` cancelled before it finished.
    pub fn cancelled(tool: impl Into<String>) -> Self {
        ToolError::Cancelled {
            tool: tool.into(),
            raised: None,
        }
    }

    /// The host's exception this error was made from, if any.
    pub fn raised(&self) -> Option<&HostError> {
        match self {
            ToolError::Failed { raised, .. } | ToolError::Cancelled { raised, .. } => {
                raised.as_ref()
            }
            _ => None,
        }
    }
}
