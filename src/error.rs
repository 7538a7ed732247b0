//! Errors of the runtime as a whole (as opposed to [`crate::tool::ToolError`], which is
//! data for the model).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// A tool's JSON Schema is not a valid schema: the tool cannot be registered.
    #[error("tool `{tool}` has an invalid parameters schema: {reason}")]
    InvalidSchema { tool: String, reason: String },
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
