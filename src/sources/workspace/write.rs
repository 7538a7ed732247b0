//! `write_file` and `edit_file`: whole-file writes and exact-text replacements,
//! through a descriptor checked to lie inside the root.

use super::*;

impl Workspace {
    pub(super) fn write_file(&self, tool: &str, args: &Value) -> Result<String, ToolError> {
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

    pub(super) fn edit_file(&self, tool: &str, args: &Value) -> Result<String, ToolError> {
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
}
