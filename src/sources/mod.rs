//! Tool sources: places tools come from. Each turns something outside the program
//! into ordinary [`Tool`](crate::Tool)s, which go into a [`crate::ToolRegistry`] /
//! `ToolNode` like any other:
//!
//! - [`workspace`] — the file system: file tools (and an opt-in `bash`) confined to
//!   one root directory (feature `workspace`);
//! - [`mcp`] — a server: the tools of a Model Context Protocol server, called over one
//!   long-lived session (feature `mcp`);
//! - [`openapi`] — a spec: one tool per operation of an OpenAPI 3.0 / 3.1 description
//!   of an HTTP API (feature `openapi`).
//!
//! What a tool *is* lives elsewhere: [`crate::tool`] is the abstraction (the
//! [`Tool`](crate::Tool) trait, its definition, context, output and errors);
//! [`crate::registry`] holds tools by name and [`crate::executor`] runs a model's
//! calls of them. A source only builds tools; it runs nothing itself.

#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "openapi")]
pub mod openapi;
#[cfg(feature = "workspace")]
pub mod workspace;
#[cfg(feature = "openapi")]
mod yaml;
