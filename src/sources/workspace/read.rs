//! `read_file`: a file's lines, numbered, from an offset, bounded in size.

use super::*;

impl Workspace {
    pub(super) fn read_file(&self, call: Call<'_>) -> Result<String, ToolError> {
        let Call { tool, args, cancel } = call;
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
}
