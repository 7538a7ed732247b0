//! ironloop: an agent runtime whose engine is Rust.
//!
//! The core — messages, tools, the registry and the executor — builds and tests
//! without Python; the `python` feature adds the PyO3 glue in [`python`].
//!
//! Tools: [`tool`] is the abstraction (the [`Tool`] trait and what flows through a
//! call), [`registry`] and [`executor`] hold and run tools, and [`sources`] makes
//! tools from places outside the program (the file system, an MCP server, an
//! OpenAPI spec).

pub mod checkpoint;
pub mod error;
pub mod executor;
pub mod graph;
pub mod host_slot;
pub mod message;
pub mod message_chunk;
#[cfg(feature = "models")]
pub mod model;
#[cfg(feature = "postgres")]
pub(crate) mod pg;
#[cfg(feature = "pii")]
pub mod pii;
pub mod prebuilt;
pub mod registry;
pub mod retry;
pub mod secrets;
pub mod sources;
pub mod store;
pub mod tool;

#[cfg(feature = "python")]
pub mod bindings;

pub use error::{Error, Result};
pub use executor::{BeforeAction, Executor, Hooks, RunContext, Strategy, ToolResult};
pub use message::{Content, ContentPart, Message, MessageKind, ToolStatus};
pub use registry::ToolRegistry;
pub use tool::{Tool, ToolCall, ToolChoice, ToolContext, ToolDefinition, ToolError, ToolOutput};
