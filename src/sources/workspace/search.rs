//! `search`: a regular expression or literal text across the files under a directory.

use super::*;

impl Workspace {
    pub(super) fn search(&self, call: Call<'_>) -> Result<String, ToolError> {
        let Call { tool, args, cancel } = call;
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
pub(super) fn search_regex(pattern: &str, ignore_case: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .multi_line(true)
        .crlf(true)
        .size_limit(8 << 20)
        .build()
}

pub(super) fn glob_matcher(tool: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
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
pub(super) fn glob_matches(g: &GlobMatcher, rel: &str) -> bool {
    if g.glob().glob().contains('/') {
        g.is_match(rel)
    } else {
        g.is_match(rel.rsplit('/').next().unwrap_or(rel))
    }
}

/// The start of every occurrence of `needle`, overlapping ones included (`aa` occurs
/// twice in `aaa`: replacing "the" one would be a guess).
pub(super) fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
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
pub(super) fn read_line_capped<R: BufRead>(
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
pub(super) fn utf8_text(bytes: &[u8], cut: bool) -> Option<&str> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    (!text.contains('\0')).then_some(text)
}

pub(super) fn floor_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    (0..=i).rev().find(|&k| s.is_char_boundary(k)).unwrap_or(0)
}

pub(super) fn clip_chars(s: &str, n: usize) -> String {
    let s = s.trim_end_matches('\r');
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
