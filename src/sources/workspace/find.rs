//! Glob and grep over a workspace root as data, not as a tool's text: for callers that
//! format the results themselves (LangChain's `FilesystemFileSearchMiddleware`, in
//! `python/ironloop/middleware/file_search.py`). Same walk as `list_files` and
//! `search` (`.gitignore` honoured, `.git` skipped, symlinks not followed) and the
//! same confined open, so a symlink or hard link out of the root is never read.

use std::time::UNIX_EPOCH;

use super::*;

/// A file `glob_files` found: its path relative to the root and its modification time
/// (seconds since the Unix epoch), by which LangChain's glob tool sorts.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundFile {
    pub path: String,
    pub modified: f64,
}

/// A line `grep_lines` found: path relative to the root, 1-based line number, text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLine {
    pub path: String,
    pub line: u64,
    pub text: String,
}

/// Why a glob or grep found nothing to search: the message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("{0}")]
    Root(#[from] io::Error),
    #[error("{0}")]
    Path(String),
    #[error("`{pattern}` is not a valid {what}: {reason}")]
    Pattern {
        pattern: String,
        what: &'static str,
        reason: String,
    },
}

fn open_root(root: &Path) -> Result<Workspace, FindError> {
    Ok(Workspace {
        root: Root::new(root)?,
        opts: WorkspaceOptions::default(),
    })
}

impl Workspace {
    /// `start` resolved to an existing directory inside the root.
    fn find_start(&self, start: &str) -> Result<std::path::PathBuf, FindError> {
        let r = self
            .existing("find", start)
            .map_err(|e| FindError::Path(e.to_string()))?;
        if !r.path.is_dir() {
            return Err(FindError::Path(format!("`{start}` is not a directory")));
        }
        Ok(r.path)
    }
}

/// The regular files under `start` (relative to `root`) whose path relative to
/// `start` matches `pattern` (`*` stays within one directory, `**` crosses them).
pub fn glob_files(root: &Path, start: &str, pattern: &str) -> Result<Vec<FoundFile>, FindError> {
    let ws = open_root(root)?;
    let base = ws.find_start(start)?;
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| FindError::Pattern {
            pattern: pattern.to_owned(),
            what: "glob",
            reason: e.to_string(),
        })?
        .compile_matcher();
    let mut out = Vec::new();
    for entry in ws.walk(&base).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if !glob.is_match(rel) {
            continue;
        }
        let modified = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        out.push(FoundFile {
            path: ws.root.display(entry.path()),
            modified,
        });
    }
    Ok(out)
}

/// Every line matching `pattern` (a Rust regex, ripgrep's syntax) in the text files
/// under `start` whose name matches `include` (a glob on the file name, `{a,b}`
/// allowed) and whose size is at most `max_file_bytes`.
pub fn grep_lines(
    root: &Path,
    start: &str,
    pattern: &str,
    include: Option<&str>,
    max_file_bytes: u64,
) -> Result<Vec<FoundLine>, FindError> {
    let ws = open_root(root)?;
    let base = ws.find_start(start)?;
    let bad = |what: &'static str, p: &str, e: String| FindError::Pattern {
        pattern: p.to_owned(),
        what,
        reason: e,
    };
    let re = search_regex(pattern, false)
        .map_err(|e| bad("regular expression", pattern, e.to_string()))?;
    let include = include
        .map(|p| {
            GlobBuilder::new(p)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| bad("glob", p, e.to_string()))
        })
        .transpose()?;
    let mut out = Vec::new();
    for entry in ws.walk(&base).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) || !entry.path().starts_with(&base) {
            continue;
        }
        if let Some(g) = &include {
            if !g.is_match(entry.file_name()) {
                continue;
            }
        }
        let Ok(file) = open_confined(&ws.root, entry.path(), Access::Read) else {
            continue;
        };
        if file.metadata().map_or(true, |m| m.len() > max_file_bytes) {
            continue;
        }
        let mut bytes = Vec::new();
        if io::Read::read_to_end(&mut io::Read::take(file, max_file_bytes), &mut bytes).is_err()
            || bytes[..bytes.len().min(8192)].contains(&0)
        {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if !re.is_match(text) {
            continue;
        }
        let path = ws.root.display(entry.path());
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                out.push(FoundLine {
                    path: path.clone(),
                    line: i as u64 + 1,
                    text: line.trim_end_matches('\r').to_owned(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_and_grep_stay_in_the_root_and_respect_patterns() {
        let dir = std::env::temp_dir().join(format!("ironloop-find-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("src/sub")).unwrap();
        fs::write(dir.join("a.py"), "import os\nx = 1\n").unwrap();
        fs::write(dir.join("src/b.py"), "def f():\n    import os\n").unwrap();
        fs::write(dir.join("src/sub/c.txt"), "nothing\n").unwrap();
        let globbed = |pattern: &str| {
            let mut paths: Vec<_> = glob_files(&dir, ".", pattern)
                .unwrap()
                .into_iter()
                .map(|f| f.path)
                .collect();
            paths.sort();
            paths
        };
        assert_eq!(globbed("*.py"), ["a.py"]);
        assert_eq!(globbed("**/*.py"), ["a.py", "src/b.py"]);
        let hits = grep_lines(&dir, "src", "import", Some("*.{py,pyi}"), 1 << 20).unwrap();
        assert_eq!(
            hits,
            [FoundLine {
                path: "src/b.py".into(),
                line: 2,
                text: "    import os".into()
            }]
        );
        assert!(
            grep_lines(&dir, ".", "import", None, 3).unwrap().is_empty(),
            "size cap"
        );
        assert!(matches!(
            glob_files(&dir, "../", "*"),
            Err(FindError::Path(_))
        ));
        assert!(matches!(
            grep_lines(&dir, ".", "(", None, 10),
            Err(FindError::Pattern { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
