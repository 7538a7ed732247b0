//! `list_files`: the files under a directory, `.gitignore` honoured, filtered by a glob.

use super::*;

impl Workspace {
    /// The entries under `start` (inside the root), walked from the root so that
    /// ignore files between the root and `start` apply, and sorted by name. Nothing
    /// outside the root is read (no parent or global ignore files), symlinks are not
    /// followed, `.git` is skipped.
    pub(super) fn walk(&self, start: &Path) -> ignore::Walk {
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

    pub(super) fn list_files(&self, call: Call<'_>) -> Result<String, ToolError> {
        let Call { tool, args, cancel } = call;
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
}
