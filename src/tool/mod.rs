//! Tools: the half sent to the model ([`ToolDefinition`]) and the half that runs
//! ([`Tool::call`]), plus what flows between them.

mod arg_errors;
mod builder;
mod call;
mod context;
mod definition;
mod error;
mod events;
pub mod name;
mod output;
mod wrappers;

use async_trait::async_trait;
use serde_json::Value;
use std::time::Duration;

pub use arg_errors::{schema_error_text, ArgError};
pub use builder::{FnTool, ToolBuilder};
pub use call::{ToolCall, ToolChoice};
pub use context::{ChildRun, ProgressFn, ToolContext};
pub use definition::ToolDefinition;
pub use error::ToolError;
pub use events::{CallEvent, CallEvents, CallSpan, CallTracer};
pub use name::ToolNameError;
pub use output::ToolOutput;
pub use wrappers::{HandleError, ReturnDirect};

/// A callable tool. Implementations are shared across concurrent calls (`Send + Sync`).
#[async_trait]
pub trait Tool: Send + Sync {
    fn definition(&self) -> &ToolDefinition;

    /// Runs the tool. `args` has already been validated against
    /// `definition().parameters` by the executor.
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// A per-tool time limit; the executor's default applies when `None`.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// A human-readable label for the tool's calls (yoagent's `label`, e.g. "Search
    /// the web"), shown in the `tools` stream's start event and on
    /// [`ToolContext::label`] so that a UI need not show the model-facing name.
    fn label(&self) -> Option<&str> {
        None
    }
}

impl dyn Tool {
    /// Starts a builder for a tool made from a Rust closure.
    pub fn builder(name: impl Into<String>, description: impl Into<String>) -> ToolBuilder {
        ToolBuilder::new(name, description)
    }
}

/// What kind of JSON value `v` is, as an error message names it ("an array").
pub(crate) fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
