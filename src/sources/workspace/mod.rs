//! The workspace tool source: the file system under one root directory.
//!
//! [`workspace_tools`] gives an agent a directory to work in: `read_file`,
//! `write_file`, `edit_file`, `list_files`, `search` and, when asked for, `bash`.
//! Every path the model gives is confined to the root (see [`path`]).
//!
//! ```
//! use ironloop::sources::workspace::{workspace_tools, WorkspaceOptions};
//! let dir = std::env::temp_dir();
//! let tools = workspace_tools(&dir, WorkspaceOptions::default()).unwrap();
//! let names: Vec<_> = tools.iter().map(|t| t.definition().name.clone()).collect();
//! assert_eq!(names, ["read_file", "write_file", "edit_file", "list_files", "search"]);
//! ```
//!
//! Every failure is an error result whose text names the path and says what to do
//! instead, for the model to correct itself: a refused path (absolute, `..` above
//! the root, a symlink leading out) is `InvalidArgs`; a path that does not exist, a
//! directory where a file was expected, an `edit_file` whose text occurs zero or
//! several times, a timed-out command are `Failed`. What a tool returns is bounded
//! (`max_output_bytes`, entry and match counts); what was cut is said in a note.
//!
//! File work runs on tokio's blocking pool and watches `ctx.cancel`; `bash` runs
//! `bash -c` in the root as the leader of a new process group, and the whole group is
//! killed when the command times out, is cancelled, or returns (background processes
//! included), or when the call is dropped; so is every process that left the group
//! but kept the call's environment marker (see [`strays`]). The file tools open what
//! they read and write through [`open`]: a symlink swapped in after the path was
//! checked, or a hard link to a file outside the root, is refused.

mod bash;
mod definitions;
mod find;
mod list;
mod open;
pub mod path;
mod read;
mod search;
mod strays;
mod write;

use std::collections::VecDeque;
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use regex::{Regex, RegexBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

pub use self::find::{glob_files, grep_lines, FindError, FoundFile, FoundLine};
use self::open::{open_confined, Access, OpenError};
use self::path::{io_reason, PathError, Resolved, Root};
use self::search::*;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// How the workspace tools behave. `Default` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct WorkspaceOptions {
    /// Adds the `bash` tool. Off by default: a command can do whatever the process
    /// can (it is not confined to the root the way paths are).
    pub allow_bash: bool,
    /// How long a command may run when the call gives no `timeout_seconds` (30 s).
    pub bash_timeout: Duration,
    /// The most a call may ask for with `timeout_seconds` (600 s, or `bash_timeout`
    /// if that is longer).
    pub max_bash_timeout: Duration,
    /// The most text one result carries (64 KiB): read_file's lines, the listing,
    /// the matches, and each of bash's stdout and stderr.
    pub max_output_bytes: usize,
    /// read_file's `limit` when the call gives none (2,000 lines).
    pub default_read_lines: usize,
    /// The most entries list_files returns (1,000).
    pub max_list_entries: usize,
    /// The most matching lines search returns (200).
    pub max_search_matches: usize,
    /// A time limit for every call of every one of these tools, enforced by the
    /// executor as for any tool (`Tool::timeout`); none by default.
    pub timeout: Option<Duration>,
    /// Variables bash commands get on top of [`BASH_ENV_ALLOWED`] (taken from this
    /// process). Nothing else of this process's environment is passed on: what the
    /// model runs could print an API key the process holds.
    pub bash_env: Vec<(String, String)>,
}

/// The variables of this process's environment that bash commands inherit.
pub const BASH_ENV_ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "TMPDIR",
];

impl Default for WorkspaceOptions {
    fn default() -> Self {
        WorkspaceOptions {
            allow_bash: false,
            bash_timeout: Duration::from_secs(30),
            max_bash_timeout: Duration::from_secs(600),
            max_output_bytes: 64 * 1024,
            default_read_lines: 2000,
            max_list_entries: 1000,
            max_search_matches: 200,
            timeout: None,
            bash_env: Vec::new(),
        }
    }
}

/// Files larger than this are skipped by `search` (and counted in a note).
const MAX_SEARCH_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// A matching line is shown up to this many characters.
const MAX_MATCH_LINE_CHARS: usize = 300;
/// `list_files` stops counting what it leaves out here.
const MAX_LIST_COUNT: usize = 100_000;
/// How long `bash` waits for the pipes to close once the command's group is killed.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// The workspace tools for `root` (an existing directory): `read_file`,
/// `write_file`, `edit_file`, `list_files`, `search`, and `bash` when
/// `options.allow_bash`. Fails when `root` is not a directory or an option is out of
/// range.
pub fn workspace_tools(
    root: impl AsRef<Path>,
    options: WorkspaceOptions,
) -> io::Result<Vec<Arc<dyn Tool>>> {
    let bad = |m: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, m.to_owned()));
    if options.max_output_bytes == 0 {
        return bad("max_output_bytes must be at least 1");
    }
    if options.bash_timeout.is_zero() {
        return bad("bash_timeout must be positive");
    }
    if options.default_read_lines == 0
        || options.max_list_entries == 0
        || options.max_search_matches == 0
    {
        return bad(
            "default_read_lines, max_list_entries and max_search_matches must be at least 1",
        );
    }
    let ws = Arc::new(Workspace {
        root: Root::new(root)?,
        opts: options,
    });
    let mut kinds = vec![
        Kind::Read,
        Kind::Write,
        Kind::Edit,
        Kind::List,
        Kind::Search,
    ];
    if ws.opts.allow_bash {
        kinds.push(Kind::Bash);
    }
    Ok(kinds
        .into_iter()
        .map(|kind| {
            Arc::new(WorkspaceTool {
                def: ws.definition(kind),
                kind,
                ws: ws.clone(),
            }) as Arc<dyn Tool>
        })
        .collect())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Edit,
    List,
    Search,
    Bash,
}

struct Workspace {
    root: Root,
    opts: WorkspaceOptions,
}

/// One call of a workspace tool: its name (what its errors name), its arguments, and
/// the token that stops it.
#[derive(Clone, Copy)]
struct Call<'a> {
    tool: &'a str,
    args: &'a Value,
    cancel: &'a CancellationToken,
}

struct WorkspaceTool {
    def: ToolDefinition,
    kind: Kind,
    ws: Arc<Workspace>,
}

#[async_trait]
impl Tool for WorkspaceTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = self.def.name.clone();
        if self.kind == Kind::Bash {
            let call = Call {
                tool: &name,
                args: &args,
                cancel: &ctx.cancel,
            };
            return self.ws.bash(call).await;
        }
        let (ws, kind, cancel) = (self.ws.clone(), self.kind, ctx.cancel.clone());
        let tool = name.clone();
        let job = tokio::task::spawn_blocking(move || {
            let t = tool.as_str();
            let call = Call {
                tool: t,
                args: &args,
                cancel: &cancel,
            };
            match kind {
                Kind::Read => ws.read_file(call),
                Kind::Write => ws.write_file(t, &args),
                Kind::Edit => ws.edit_file(t, &args),
                Kind::List => ws.list_files(call),
                Kind::Search => ws.search(call),
                Kind::Bash => unreachable!("bash runs on the async side"),
            }
        });
        // Work left on the blocking pool watches the token and stops soon after.
        tokio::select! {
            r = job => match r {
                Ok(r) => r.map(ToolOutput::text),
                Err(e) => Err(failed(&name, format!("the tool panicked: {e}"))),
            },
            _ = ctx.cancel.cancelled() => Err(ToolError::cancelled(name)),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.ws.opts.timeout
    }
}

// ---------------------------------------------------------------- file tools

impl Workspace {
    /// `r` opened for `access` through [`open_confined`], errors worded for the model.
    fn open(
        &self,
        tool: &str,
        user: &str,
        r: &Resolved,
        access: Access,
    ) -> Result<fs::File, ToolError> {
        let verb = match access {
            Access::Read => "read",
            Access::Write => "write",
        };
        open_confined(&self.root, &r.path, access).map_err(|e| match e {
            OpenError::Refused(why) => failed(tool, format!("cannot {verb} `{user}`: {why}")),
            OpenError::Io(e) => failed(tool, format!("cannot {verb} `{user}`: {}", io_reason(&e))),
        })
    }

    /// Replaces the content of `r` (created if missing) through a checked descriptor.
    fn replace_content(
        &self,
        tool: &str,
        user: &str,
        r: &Resolved,
        content: &[u8],
    ) -> Result<(), ToolError> {
        let mut file = self.open(tool, user, r, Access::Write)?;
        file.set_len(0)
            .and_then(|_| file.write_all(content))
            .map_err(|e| failed(tool, format!("cannot write `{user}`: {}", io_reason(&e))))
    }
}

// ---------------------------------------------------------------- helpers

fn failed(tool: &str, message: impl Into<String>) -> ToolError {
    ToolError::failed(tool, message)
}

fn cancelled(tool: &str) -> ToolError {
    ToolError::cancelled(tool)
}

/// Seconds as people write them: `30`, `0.5`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// A required string argument (the schema has been checked, but a direct call may
/// not have been).
fn str_arg<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArgs {
            tool: tool.to_owned(),
            reason: format!("`{key}` is required and must be a string"),
        })
}

fn opt_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn opt_usize(args: &Value, key: &str) -> Option<usize> {
    args.get(key)
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::bash::*;
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        c.push(b"0123456789abcdefghij");
        assert_eq!(c.render(), "01234\n[truncated: 10 bytes omitted]\nfghij");
        let mut c = Capture::new(10);
        for b in b"0123456789abcdefghij".chunks(3) {
            c.push(b);
        }
        assert_eq!(c.render(), "01234\n[truncated: 10 bytes omitted]\nfghij");
        let mut c = Capture::new(10);
        c.push(b"short");
        assert_eq!(c.render(), "short");
    }

    #[test]
    fn overlapping_occurrences_count() {
        assert_eq!(occurrences("aaa", "aa"), vec![0, 1]);
        assert_eq!(occurrences("é-é", "é"), vec![0, 3]);
        assert!(occurrences("abc", "x").is_empty());
    }

    #[test]
    fn clip_and_floor() {
        assert_eq!(clip_chars("héllo", 2), "hé…");
        assert_eq!(floor_boundary("héllo", 2), 1);
    }
}
