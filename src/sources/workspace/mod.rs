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

mod open;
pub mod path;
mod strays;

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

use self::open::{open_confined, Access, OpenError};
use self::path::{io_reason, PathError, Resolved, Root};
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
            return self.ws.bash(&name, &args, &ctx.cancel).await;
        }
        let (ws, kind, cancel) = (self.ws.clone(), self.kind, ctx.cancel.clone());
        let tool = name.clone();
        let job = tokio::task::spawn_blocking(move || {
            let t = tool.as_str();
            match kind {
                Kind::Read => ws.read_file(t, &args, &cancel),
                Kind::Write => ws.write_file(t, &args),
                Kind::Edit => ws.edit_file(t, &args),
                Kind::List => ws.list_files(t, &args, &cancel),
                Kind::Search => ws.search(t, &args, &cancel),
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

// ---------------------------------------------------------------- definitions

impl Workspace {
    fn definition(&self, kind: Kind) -> ToolDefinition {
        let o = &self.opts;
        let max = o.max_output_bytes;
        let path = |what: &str| json!({"type": "string", "description": what});
        let (name, description, properties, required) = match kind {
            Kind::Read => (
                "read_file",
                format!(
                    "Reads a UTF-8 text file of the workspace. Returns its lines from `offset` \
                     (1-based, default 1), at most `limit` lines (default {}) and at most {max} \
                     bytes; a note at the end says when more remains and the offset to read on \
                     from.",
                    o.default_read_lines
                ),
                json!({
                    "path": path("The file's path, relative to the workspace root."),
                    "offset": {"type": "integer", "minimum": 1,
                               "description": "The first line to read (1-based)."},
                    "limit": {"type": "integer", "minimum": 1,
                              "description": "How many lines to read at most."},
                }),
                vec!["path"],
            ),
            Kind::Write => (
                "write_file",
                "Writes `content` to a file of the workspace: creates it (and any missing \
                 parent directories) or replaces the whole file. To change part of an existing \
                 file, use edit_file."
                    .to_owned(),
                json!({
                    "path": path("The file's path, relative to the workspace root."),
                    "content": {"type": "string", "description": "The file's whole new text."},
                }),
                vec!["path", "content"],
            ),
            Kind::Edit => (
                "edit_file",
                "Replaces the text `old` with `new` in a file of the workspace. `old` must \
                 match the file exactly (whitespace and indentation included) and occur \
                 exactly once: include enough surrounding lines to make it unique. An empty \
                 `new` deletes `old`."
                    .to_owned(),
                json!({
                    "path": path("The file's path, relative to the workspace root."),
                    "old": {"type": "string", "description": "The exact text to replace."},
                    "new": {"type": "string", "description": "The text to put in its place."},
                }),
                vec!["path", "old", "new"],
            ),
            Kind::List => (
                "list_files",
                format!(
                    "Lists the files and directories under `path` (default: the workspace \
                     root), recursively, as paths relative to the root; directories end with \
                     `/`. Skips what .gitignore / .ignore files ignore and the .git directory. \
                     At most {} entries.",
                    o.max_list_entries
                ),
                json!({
                    "path": path("A directory relative to the workspace root (default `.`)."),
                    "pattern": {"type": "string", "description":
                        "A glob such as `*.py` or `src/**/*.rs`, matched against the path \
                         relative to the root (against the file name when it has no `/`)."},
                }),
                vec![],
            ),
            Kind::Search => (
                "search",
                format!(
                    "Searches the workspace's text files for a regular expression (Rust regex \
                     syntax, matched line by line) and returns the matching lines as \
                     `path:line: text`, at most {}. Skips what .gitignore ignores, binary \
                     files and the .git directory.",
                    o.max_search_matches
                ),
                json!({
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": path("A directory or file to search, relative to the workspace \
                                  root (default `.`)."),
                    "glob": {"type": "string", "description":
                        "Only files matching this glob, e.g. `*.py` (matched against the file \
                         name, or against the path relative to the root when it has a `/`)."},
                    "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
                }),
                vec!["pattern"],
            ),
            Kind::Bash => (
                "bash",
                format!(
                    "Runs a bash command in the workspace root (no stdin) and returns its exit \
                     code, stdout and stderr (each cut to {max} bytes, with a note). The command \
                     is killed, with every process it started, after `timeout_seconds` \
                     (default {}, at most {}); processes it leaves in the background are killed \
                     when it returns.",
                    secs(o.bash_timeout),
                    secs(self.max_bash_timeout())
                ),
                json!({
                    "command": {"type": "string", "description": "The bash command line."},
                    "timeout_seconds": {"type": "number", "exclusiveMinimum": 0,
                                        "maximum": self.max_bash_timeout().as_secs_f64(),
                                        "description": "The time limit in seconds."},
                }),
                vec!["command"],
            ),
        };
        ToolDefinition::new(
            name,
            description,
            json!({"type": "object", "properties": properties, "required": required}),
        )
    }

    fn max_bash_timeout(&self) -> Duration {
        self.opts.max_bash_timeout.max(self.opts.bash_timeout)
    }

    fn resolve(&self, tool: &str, user: &str) -> Result<Resolved, ToolError> {
        self.root.resolve(user).map_err(|e| match e {
            PathError::Refused(reason) => ToolError::InvalidArgs {
                tool: tool.to_owned(),
                reason,
            },
            PathError::Io(m) => failed(tool, m),
        })
    }

    /// `user` resolved to something that exists.
    fn existing(&self, tool: &str, user: &str) -> Result<Resolved, ToolError> {
        let r = self.resolve(tool, user)?;
        if !r.exists {
            return Err(failed(
                tool,
                format!("`{user}` does not exist: use list_files to see what there is"),
            ));
        }
        Ok(r)
    }

    /// `user` resolved to an existing regular file.
    fn existing_file(&self, tool: &str, user: &str) -> Result<Resolved, ToolError> {
        let r = self.existing(tool, user)?;
        if r.path.is_dir() {
            return Err(failed(
                tool,
                format!("`{user}` is a directory, not a file: use list_files to see its entries"),
            ));
        }
        // A pipe or a device could block a reader forever.
        if !r.path.is_file() {
            return Err(failed(
                tool,
                format!("`{user}` is not a regular file (a pipe, a socket or a device)"),
            ));
        }
        Ok(r)
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

impl Workspace {
    fn read_file(
        &self,
        tool: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let user = str_arg(tool, args, "path")?;
        let r = self.existing_file(tool, user)?;
        let offset = opt_usize(args, "offset").unwrap_or(1).max(1);
        let limit = opt_usize(args, "limit")
            .unwrap_or(self.opts.default_read_lines)
            .max(1);
        let max = self.opts.max_output_bytes;
        let file = self.open(tool, user, &r, Access::Read)?;
        let mut reader = BufReader::new(file);
        let mut out = String::new();
        let mut line = Vec::new();
        let (mut total, mut last_shown) = (0usize, 0usize);
        let mut cut_by_bytes = false;
        let mut partial_line = false;
        let read_err =
            |e: io::Error| failed(tool, format!("cannot read `{user}`: {}", io_reason(&e)));
        loop {
            line.clear();
            let showing =
                total + 1 >= offset && total + 1 < offset.saturating_add(limit) && !cut_by_bytes;
            // A line is kept only as far as the result can still take it (one byte
            // more says it did not fit): a 200 MB line costs 64 KiB, not 200 MB.
            let keep = if showing { max - out.len() + 1 } else { 0 };
            let n = read_line_capped(&mut reader, &mut line, keep, showing).map_err(read_err)?;
            if n == 0 {
                break;
            }
            total += 1;
            if total % 4096 == 0 && cancel.is_cancelled() {
                return Err(cancelled(tool));
            }
            if !showing {
                continue;
            }
            // Full means longer than the result can take (`keep` is one byte more).
            let cut = line.len() >= keep;
            let text = utf8_text(&line, cut).ok_or_else(|| {
                failed(
                    tool,
                    format!(
                        "`{user}` is not a UTF-8 text file (it looks binary): read_file \
                         reads text only"
                    ),
                )
            })?;
            if out.len() + text.len() > max || cut {
                cut_by_bytes = true;
                if out.is_empty() {
                    out.push_str(&text[..floor_boundary(text, max)]);
                    partial_line = true;
                    last_shown = total;
                    // The note needs no line count: stop reading here.
                    break;
                }
                if line.last() != Some(&b'\n') {
                    // The rest of this line, unread so far.
                    read_line_capped(&mut reader, &mut line, 0, false).map_err(read_err)?;
                }
                continue;
            }
            out.push_str(text);
            last_shown = total;
        }
        if total == 0 {
            return Ok(format!("[`{user}` is empty]"));
        }
        if offset > total {
            return Err(failed(
                tool,
                format!(
                    "`{user}` has {total} lines: offset {offset} is past its end (read from an \
                     offset between 1 and {total})"
                ),
            ));
        }
        if partial_line {
            out.push_str(&format!(
                "\n[truncated: line {last_shown} is longer than {max} bytes; only its start is \
                 shown]"
            ));
        } else if last_shown < total {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            let why = if cut_by_bytes {
                format!(" (a result holds at most {max} bytes)")
            } else {
                String::new()
            };
            out.push_str(&format!(
                "[truncated: showing lines {offset}-{last_shown} of {total}{why}; call read_file \
                 with offset={} to read on]",
                last_shown + 1
            ));
        }
        Ok(out)
    }

    fn write_file(&self, tool: &str, args: &Value) -> Result<String, ToolError> {
        let user = str_arg(tool, args, "path")?;
        let content = str_arg(tool, args, "content")?;
        let r = self.resolve(tool, user)?;
        if r.path == self.root.path() || (r.exists && r.path.is_dir()) {
            return Err(failed(
                tool,
                format!("`{user}` is a directory: give the path of a file to write"),
            ));
        }
        let shown = self.root.display(&r.path);
        let io_err =
            |e: io::Error| failed(tool, format!("cannot write `{user}`: {}", io_reason(&e)));
        let before = if r.exists {
            Some(fs::metadata(&r.path).map_err(io_err)?.len())
        } else {
            if let Some(parent) = r.path.parent() {
                fs::create_dir_all(parent).map_err(io_err)?;
            }
            None
        };
        self.replace_content(tool, user, &r, content.as_bytes())?;
        Ok(match before {
            Some(n) => format!(
                "Wrote {} bytes to `{shown}` (replacing its previous {n} bytes).",
                content.len()
            ),
            None => format!("Wrote {} bytes to `{shown}` (a new file).", content.len()),
        })
    }

    fn edit_file(&self, tool: &str, args: &Value) -> Result<String, ToolError> {
        let user = str_arg(tool, args, "path")?;
        let old = str_arg(tool, args, "old")?;
        let new = str_arg(tool, args, "new")?;
        if old.is_empty() {
            return Err(ToolError::InvalidArgs {
                tool: tool.to_owned(),
                reason: format!(
                    "`old` is empty: give the exact text of `{user}` to replace (use write_file \
                     to create or replace a whole file)"
                ),
            });
        }
        let r = self.existing_file(tool, user)?;
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut self.open(tool, user, &r, Access::Read)?, &mut bytes)
            .map_err(|e| failed(tool, format!("cannot read `{user}`: {}", io_reason(&e))))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            failed(
                tool,
                format!("`{user}` is not a UTF-8 text file: edit_file edits text only"),
            )
        })?;
        let at = occurrences(&text, old);
        let line_of = |i: usize| text[..i].matches('\n').count() + 1;
        match at.len() {
            0 => Err(failed(
                tool,
                format!(
                    "`old` was not found in `{user}`: it must match the file's text exactly, \
                     whitespace and indentation included; read_file the file and copy the text \
                     to replace from it"
                ),
            )),
            1 => {
                let i = at[0];
                let mut edited = String::with_capacity(text.len() - old.len() + new.len());
                edited.push_str(&text[..i]);
                edited.push_str(new);
                edited.push_str(&text[i + old.len()..]);
                self.replace_content(tool, user, &r, edited.as_bytes())?;
                Ok(format!(
                    "Edited `{}`: replaced {} line(s) at line {} with {} line(s).",
                    self.root.display(&r.path),
                    old.lines().count().max(1),
                    line_of(i),
                    new.lines().count()
                ))
            }
            n => {
                let mut lines: Vec<String> = at
                    .iter()
                    .take(10)
                    .map(|&i| line_of(i).to_string())
                    .collect();
                if n > 10 {
                    lines.push("…".into());
                }
                Err(failed(
                    tool,
                    format!(
                        "`old` occurs {n} times in `{user}` (at lines {}): it must occur exactly \
                         once; include more of the surrounding text to make it unique",
                        lines.join(", ")
                    ),
                ))
            }
        }
    }

    /// The entries under `start` (inside the root), walked from the root so that
    /// ignore files between the root and `start` apply, and sorted by name. Nothing
    /// outside the root is read (no parent or global ignore files), symlinks are not
    /// followed, `.git` is skipped.
    fn walk(&self, start: &Path) -> ignore::Walk {
        let start = start.to_path_buf();
        WalkBuilder::new(self.root.path())
            .hidden(false)
            .parents(false)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .filter_entry(move |e| {
                if e.depth() > 0 && e.file_name() == ".git" {
                    return false;
                }
                let p = e.path();
                p.starts_with(&start) || start.starts_with(p)
            })
            .build()
    }

    fn list_files(
        &self,
        tool: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let user = opt_str(args, "path").unwrap_or(".");
        let pattern = opt_str(args, "pattern");
        let glob = pattern.map(|p| glob_matcher(tool, p)).transpose()?;
        let r = self.existing(tool, user)?;
        if !r.path.is_dir() {
            return Ok(self.root.display(&r.path));
        }
        let max = self.opts.max_output_bytes;
        let (mut out, mut shown, mut left_out) = (String::new(), 0usize, 0usize);
        for (k, entry) in self.walk(&r.path).enumerate() {
            if k % 1024 == 1023 && cancel.is_cancelled() {
                return Err(cancelled(tool));
            }
            let Ok(entry) = entry else { continue };
            let p = entry.path();
            if p == r.path || !p.starts_with(&r.path) {
                continue;
            }
            let rel = self.root.display(p);
            if let Some(g) = &glob {
                if !glob_matches(g, &rel) {
                    continue;
                }
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let extra = rel.len() + usize::from(is_dir) + 1;
            if shown >= self.opts.max_list_entries || out.len() + extra > max {
                left_out += 1;
                if left_out >= MAX_LIST_COUNT {
                    break;
                }
                continue;
            }
            out.push_str(&rel);
            if is_dir {
                out.push('/');
            }
            out.push('\n');
            shown += 1;
        }
        let place = if r.path == self.root.path() {
            "the workspace root".to_owned()
        } else {
            format!("`{user}`")
        };
        if shown == 0 && left_out == 0 {
            return Ok(match pattern {
                Some(p) => format!("[nothing under {place} matches `{p}`]"),
                None => format!("[{place} is empty]"),
            });
        }
        if left_out > 0 {
            let more = if left_out >= MAX_LIST_COUNT {
                format!("more than {MAX_LIST_COUNT}")
            } else {
                left_out.to_string()
            };
            out.push_str(&format!(
                "[truncated: {shown} entries shown, {more} more not shown; narrow the listing \
                 with `path` or `pattern`]"
            ));
        } else {
            out.pop();
        }
        Ok(out)
    }

    fn search(
        &self,
        tool: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let pattern = str_arg(tool, args, "pattern")?;
        let user = opt_str(args, "path").unwrap_or(".");
        let glob = opt_str(args, "glob")
            .map(|p| glob_matcher(tool, p))
            .transpose()?;
        let re = search_regex(pattern, args.get("ignore_case") == Some(&Value::Bool(true)))
            .map_err(|e| ToolError::InvalidArgs {
                tool: tool.to_owned(),
                reason: format!("`pattern` is not a valid regular expression: {e}"),
            })?;
        let r = self.existing(tool, user)?;
        if !r.path.is_dir() {
            self.existing_file(tool, user)?;
        }
        let files: Box<dyn Iterator<Item = std::path::PathBuf>> = if r.path.is_dir() {
            let start = r.path.clone();
            Box::new(self.walk(&r.path).filter_map(move |e| {
                let e = e.ok()?;
                let is_file = e.file_type().is_some_and(|t| t.is_file());
                (is_file && e.path().starts_with(&start)).then(|| e.into_path())
            }))
        } else {
            Box::new(std::iter::once(r.path.clone()))
        };
        let (max, cap) = (self.opts.max_output_bytes, self.opts.max_search_matches);
        let (mut out, mut found, mut stopped, mut too_large, mut refused) =
            (String::new(), 0usize, false, 0usize, 0usize);
        'files: for path in files {
            if cancel.is_cancelled() {
                return Err(cancelled(tool));
            }
            let rel = self.root.display(&path);
            if let Some(g) = &glob {
                if !glob_matches(g, &rel) {
                    continue;
                }
            }
            let file = match open_confined(&self.root, &path, Access::Read) {
                Ok(f) => f,
                Err(OpenError::Refused(_)) => {
                    refused += 1;
                    continue;
                }
                Err(OpenError::Io(_)) => continue,
            };
            match file.metadata() {
                Ok(m) if m.len() > MAX_SEARCH_FILE_BYTES => {
                    too_large += 1;
                    continue;
                }
                Ok(_) => {}
                Err(_) => continue,
            }
            let mut bytes = Vec::new();
            if io::Read::read_to_end(&mut io::Read::take(file, MAX_SEARCH_FILE_BYTES), &mut bytes)
                .is_err()
            {
                continue;
            }
            if bytes[..bytes.len().min(8192)].contains(&0) {
                continue; // binary
            }
            let text = String::from_utf8_lossy(&bytes);
            if !re.is_match(&text) {
                continue;
            }
            for (i, line) in text.lines().enumerate() {
                if !re.is_match(line) {
                    continue;
                }
                let shown = clip_chars(line, MAX_MATCH_LINE_CHARS);
                let entry = format!("{rel}:{}: {shown}\n", i + 1);
                if found >= cap || out.len() + entry.len() > max {
                    stopped = true;
                    break 'files;
                }
                out.push_str(&entry);
                found += 1;
            }
        }
        let mut notes = Vec::new();
        if stopped {
            notes.push(format!(
                "[stopped after {found} matches; narrow the search with `path`, `glob` or a more \
                 specific pattern]"
            ));
        }
        if too_large > 0 {
            notes.push(format!(
                "[skipped {too_large} file(s) larger than {} MiB]",
                MAX_SEARCH_FILE_BYTES >> 20
            ));
        }
        if refused > 0 {
            notes.push(format!(
                "[skipped {refused} file(s) with several hard links or replaced while being \
                 opened: the workspace tools read only files with one link, inside the root]"
            ));
        }
        if found == 0 {
            let place = if r.path == self.root.path() {
                "the workspace".to_owned()
            } else {
                format!("`{user}`")
            };
            notes.insert(0, format!("[no matches for `{pattern}` in {place}]"));
        }
        out.push_str(&notes.join("\n"));
        if out.ends_with('\n') {
            out.pop();
        }
        Ok(out)
    }
}

/// The regex `search` uses: `^` and `$` at line ends (so that a whole file can be
/// tested at once before its lines are), CRLF-aware, with a bounded size.
fn search_regex(pattern: &str, ignore_case: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .multi_line(true)
        .crlf(true)
        .size_limit(8 << 20)
        .build()
}

fn glob_matcher(tool: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::InvalidArgs {
            tool: tool.to_owned(),
            reason: format!("`{pattern}` is not a valid glob: {e}"),
        })
}

/// Matches `rel` (relative to the root), or only its last component when the
/// pattern has no `/`, as .gitignore patterns do.
fn glob_matches(g: &GlobMatcher, rel: &str) -> bool {
    if g.glob().glob().contains('/') {
        g.is_match(rel)
    } else {
        g.is_match(rel.rsplit('/').next().unwrap_or(rel))
    }
}

/// The start of every occurrence of `needle`, overlapping ones included (`aa` occurs
/// twice in `aaa`: replacing "the" one would be a guess).
fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut at = Vec::new();
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        let i = from + i;
        at.push(i);
        from = i + hay[i..].chars().next().map_or(1, char::len_utf8);
    }
    at
}

/// The largest char boundary of `s` at or below `i`.
/// Reads one line (up to and including `\n`) from `r`, keeping at most `keep` bytes
/// of it in `buf`. With `stop`, reading stops once `buf` holds `keep` bytes (the rest
/// of the line stays unread); without, the rest is skipped. Returns how many bytes
/// were consumed; 0 at the end of the file.
fn read_line_capped<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    keep: usize,
    stop: bool,
) -> io::Result<usize> {
    let mut n = 0;
    loop {
        if stop && buf.len() >= keep {
            return Ok(n);
        }
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(n);
        }
        let (mut take, mut finished) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        if stop && take > room {
            (take, finished) = (room, false);
        }
        buf.extend_from_slice(&chunk[..take.min(room)]);
        r.consume(take);
        n += take;
        if finished {
            return Ok(n);
        }
    }
}

/// `bytes` as text if it is UTF-8 without NUL bytes; when `cut` (only the start of a
/// line was kept), a character cut in half at the end is dropped.
fn utf8_text(bytes: &[u8], cut: bool) -> Option<&str> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    (!text.contains('\0')).then_some(text)
}

fn floor_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    (0..=i).rev().find(|&k| s.is_char_boundary(k)).unwrap_or(0)
}

fn clip_chars(s: &str, n: usize) -> String {
    let s = s.trim_end_matches('\r');
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

// ---------------------------------------------------------------- bash

/// The head and the tail of a stream, at most `cap` bytes together, and how much
/// went by in between.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
    cap: usize,
}

impl Capture {
    fn new(cap: usize) -> Self {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            cap,
        }
    }

    fn push(&mut self, mut buf: &[u8]) {
        self.total += buf.len();
        let head_cap = self.cap - self.cap / 2;
        if self.head.len() < head_cap {
            let k = buf.len().min(head_cap - self.head.len());
            self.head.extend_from_slice(&buf[..k]);
            buf = &buf[k..];
        }
        let tail_cap = self.cap / 2;
        if buf.len() >= tail_cap {
            self.tail.clear();
            self.tail.extend(&buf[buf.len() - tail_cap..]);
        } else {
            let drop = (self.tail.len() + buf.len()).saturating_sub(tail_cap);
            self.tail.drain(..drop);
            self.tail.extend(buf);
        }
    }

    fn render(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        let omitted = self.total - self.head.len() - self.tail.len();
        if omitted > 0 {
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!("[truncated: {omitted} bytes omitted]\n"));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

/// Kills a command's whole process group (the command ran as its leader), unless
/// that was done already: when the call ends any way, nothing it started survives.
struct KillGroup {
    pgid: Option<u32>,
    /// The call's [`strays::MARKER_VAR`] value, until its processes are killed.
    marker: Option<String>,
}

impl KillGroup {
    fn kill(&mut self) {
        self.kill_group();
        if let Some(marker) = self.marker.take() {
            strays::kill_marked(&marker);
        }
    }

    fn kill_group(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.take() {
            if let Ok(pgid) = libc::pid_t::try_from(pgid) {
                // SAFETY: killpg has no memory-safety preconditions; a group that is
                // gone already gives ESRCH, which is ignored.
                unsafe {
                    libc::killpg(pgid, libc::SIGKILL);
                }
            }
        }
        #[cfg(not(unix))]
        {
            self.pgid = None;
        }
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn pump<R: AsyncRead + Unpin>(mut r: R, into: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => into
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}

enum End {
    Exited(io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

impl Workspace {
    async fn bash(
        &self,
        tool: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let command = str_arg(tool, args, "command")?;
        let max_t = self.max_bash_timeout();
        let limit = match args.get("timeout_seconds").and_then(Value::as_f64) {
            None => self.opts.bash_timeout,
            Some(t) if t > 0.0 && t <= max_t.as_secs_f64() => Duration::from_secs_f64(t),
            Some(t) => {
                return Err(ToolError::InvalidArgs {
                    tool: tool.to_owned(),
                    reason: format!(
                        "timeout_seconds must be above 0 and at most {}, got {t}",
                        secs(max_t)
                    ),
                })
            }
        };
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(self.root.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env_clear();
        for name in BASH_ENV_ALLOWED {
            if let Some(v) = std::env::var_os(name) {
                cmd.env(name, v);
            }
        }
        cmd.envs(self.opts.bash_env.iter().map(|(k, v)| (k, v)));
        let marker = strays::new_marker();
        cmd.env(strays::MARKER_VAR, &marker);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| failed(tool, format!("could not start bash: {}", io_reason(&e))))?;
        let mut group = KillGroup {
            pgid: child.id(),
            marker: Some(marker),
        };
        let cap = self.opts.max_output_bytes;
        let (out, err) = (
            Arc::new(Mutex::new(Capture::new(cap))),
            Arc::new(Mutex::new(Capture::new(cap))),
        );
        let mut readers = Vec::new();
        if let Some(s) = child.stdout.take() {
            readers.push(AbortOnDrop(tokio::spawn(pump(s, out.clone()))));
        }
        if let Some(s) = child.stderr.take() {
            readers.push(AbortOnDrop(tokio::spawn(pump(s, err.clone()))));
        }
        let end = tokio::select! {
            s = child.wait() => End::Exited(s),
            _ = tokio::time::sleep(limit) => End::TimedOut,
            _ = cancel.cancelled() => End::Cancelled,
        };
        // The command if it still runs, and whatever it left running.
        group.kill();
        if !matches!(end, End::Exited(_)) {
            let _ = child.kill().await;
        }
        let _ = tokio::time::timeout(
            PIPE_GRACE,
            futures::future::join_all(readers.iter_mut().map(|r| &mut r.0)),
        )
        .await;
        drop(readers);
        let render = || {
            let out = out.lock().unwrap_or_else(|p| p.into_inner());
            let err = err.lock().unwrap_or_else(|p| p.into_inner());
            let mut s = String::new();
            for (label, c) in [("stdout", &*out), ("stderr", &*err)] {
                if c.total > 0 {
                    let text = c.render();
                    s.push_str(&format!("[{label}]\n{text}"));
                    if !text.ends_with('\n') {
                        s.push('\n');
                    }
                }
            }
            s
        };
        match end {
            End::Cancelled => Err(cancelled(tool)),
            End::TimedOut => {
                let so_far = render();
                let so_far = if so_far.is_empty() {
                    "It printed nothing.".to_owned()
                } else {
                    format!("Its output until then:\n{so_far}")
                };
                Err(failed(
                    tool,
                    format!(
                        "the command `{}` timed out after {}s and was killed, with every process \
                         it started: run something quicker, or pass a larger timeout_seconds (at \
                         most {}). {}",
                        clip_chars(command, 200),
                        secs(limit),
                        secs(max_t),
                        so_far.trim_end()
                    ),
                ))
            }
            End::Exited(Err(e)) => Err(failed(
                tool,
                format!("waiting for the command failed: {}", io_reason(&e)),
            )),
            End::Exited(Ok(status)) => {
                let head = match status.code() {
                    Some(c) => format!("exit code: {c}"),
                    None => {
                        #[cfg(unix)]
                        let s = {
                            use std::os::unix::process::ExitStatusExt;
                            status
                                .signal()
                                .map(|s| format!("killed by signal {s}"))
                                .unwrap_or_else(|| "no exit code".into())
                        };
                        #[cfg(not(unix))]
                        let s = "no exit code".to_owned();
                        s
                    }
                };
                let body = render();
                let text = if body.is_empty() {
                    format!("{head} (no output)")
                } else {
                    format!("{head}\n{}", body.trim_end_matches('\n'))
                };
                Ok(ToolOutput::text(text))
            }
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
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
