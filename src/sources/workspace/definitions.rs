//! The tools' definitions (names, descriptions, argument schemas) and how a path the
//! model gives is resolved inside the root.

use super::*;

// ---------------------------------------------------------------- definitions

impl Workspace {
    pub(super) fn definition(&self, kind: Kind) -> ToolDefinition {
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

    pub(super) fn max_bash_timeout(&self) -> Duration {
        self.opts.max_bash_timeout.max(self.opts.bash_timeout)
    }

    pub(super) fn resolve(&self, tool: &str, user: &str) -> Result<Resolved, ToolError> {
        self.root.resolve(user).map_err(|e| match e {
            PathError::Refused(reason) => ToolError::InvalidArgs {
                tool: tool.to_owned(),
                reason,
            },
            PathError::Io(m) => failed(tool, m),
        })
    }

    /// `user` resolved to something that exists.
    pub(super) fn existing(&self, tool: &str, user: &str) -> Result<Resolved, ToolError> {
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
    pub(super) fn existing_file(&self, tool: &str, user: &str) -> Result<Resolved, ToolError> {
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
