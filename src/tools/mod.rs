//! Built-in tools.
//!
//! [`workspace_tools`] gives an agent a directory to work in: `read_file`,
//! `write_file`, `edit_file`, `list_files`, `search` and, when asked for, `bash`.
//! Every path the model gives is confined to the root (see [`path`]).
//!
//! ```
//! use ironloop::tools::{workspace_tools, WorkspaceOptions};
//! let dir = std::env::temp_dir();
//! let tools = workspace_tools(&dir, WorkspaceOptions::default()).unwrap();
//! let names: Vec<_> = tools.iter().map(|t| t.definition().name.clone()).collect();
//! assert_eq!(names, ["read_file", "write_file", "edit_file", "list_files", "search"]);
//! ```

pub mod path;
mod workspace;

pub use workspace::{workspace_tools, WorkspaceOptions};
