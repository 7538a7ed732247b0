//! Tool sources: tools made from something outside the program — an OpenAPI
//! description of an HTTP API ([`openapi`]), an MCP server — that go into a
//! [`crate::ToolRegistry`] / `ToolNode` like any other [`crate::Tool`].

#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "openapi")]
pub mod openapi;
