//! ironloop: an agent runtime whose engine is Rust.
//!
//! The core — messages, tools, the registry and the executor — builds and tests
//! without Python; the `python` feature adds the PyO3 glue in [`python`].

pub mod adapters;
pub mod checkpoint;
pub mod error;
pub mod executor;
pub mod graph;
pub mod message;
#[cfg(feature = "models")]
pub mod model;
pub mod prebuilt;
pub mod registry;
pub mod tool;
#[cfg(feature = "workspace")]
pub mod tools;

#[cfg(feature = "python")]
pub mod python;

pub use error::{Error, Result};
pub use executor::{BeforeAction, Executor, Hooks, RunContext, Strategy, ToolResult};
pub use message::{Content, ContentPart, Message, MessageKind, ToolStatus};
pub use registry::ToolRegistry;
pub use tool::{Tool, ToolCall, ToolChoice, ToolContext, ToolDefinition, ToolError, ToolOutput};
