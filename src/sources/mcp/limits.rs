//! The time limits of an MCP session, and what the error says when one runs out.
//!
//! A server that never answers, prints something other than JSON-RPC on its stdout
//! (rmcp skips such lines without a word, as the other SDKs do) or prints one huge
//! line would otherwise hold `stdio(...)` until the server exits, whatever the
//! toolset's `timeout=`. So: starting a server and its `initialize` handshake get
//! [`Limits::connect`]; every request after it (`tools/list`, resources, prompts) gets
//! [`Limits::request`]; a tool call gets the same limit as the tool's timeout, which
//! the executor enforces. When the handshake runs out, [`StdoutNotes`] (kept by the
//! stdout reader) says what the server did print, so the error points at the cause.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::McpError;

/// How long starting a server (or reaching it) and the `initialize` handshake may
/// take when the toolset sets no `connect_timeout`. Long enough for `npx` / `uvx` to
/// fetch a package on a slow network.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The limit on each request, tool calls included, when the toolset sets no
/// `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A session's limits, read from the toolset's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest message read from the server, in bytes.
    pub message_bytes: usize,
    /// Starting or reaching the server and the handshake, together.
    pub connect: Duration,
    /// Each request after the handshake.
    pub request: Duration,
}

/// `fut` within `limit`, or [`McpError::Timeout`] naming `request`.
pub(crate) async fn bounded<T>(
    server: &str,
    request: &str,
    limit: Duration,
    fut: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(McpError::Timeout {
            server: server.to_owned(),
            request: request.to_owned(),
            after: limit,
        }),
    }
}

/// What a stdio server wrote to its stdout, counted by the reader as it goes: the
/// explanation of a handshake that did not complete.
#[derive(Debug, Default)]
pub(crate) struct StdoutNotes {
    json_lines: AtomicU64,
    other_lines: AtomicU64,
    /// The start of the first line that is not JSON.
    first_other: Mutex<Option<String>>,
    /// Lines over the message size limit: (how many, the largest's size).
    oversized: Mutex<(u64, u64)>,
}

impl StdoutNotes {
    /// A whole line (without its newline) that the reader passed on.
    pub(crate) fn line(&self, line: &[u8]) {
        let body = line
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(line)
            .trim_ascii();
        match body.first() {
            None => {}
            Some(b'{' | b'[') => {
                self.json_lines.fetch_add(1, Ordering::Relaxed);
            }
            Some(_) => {
                let first = self.other_lines.fetch_add(1, Ordering::Relaxed) == 0;
                if first {
                    let start = String::from_utf8_lossy(&body[..body.len().min(200)]);
                    let shown: String = start.chars().take(80).collect();
                    *self.first_other.lock().unwrap_or_else(|p| p.into_inner()) = Some(shown);
                }
            }
        }
    }

    /// A line over the size limit, of `bytes` bytes.
    pub(crate) fn oversized(&self, bytes: u64) {
        let mut o = self.oversized.lock().unwrap_or_else(|p| p.into_inner());
        o.0 += 1;
        o.1 = o.1.max(bytes);
    }

    /// What the server printed, as the second half of a sentence.
    pub(crate) fn describe(&self) -> String {
        let json = self.json_lines.load(Ordering::Relaxed);
        let other = self.other_lines.load(Ordering::Relaxed);
        let (big, largest) = *self.oversized.lock().unwrap_or_else(|p| p.into_inner());
        let mut parts = Vec::new();
        if other > 0 {
            let first = self
                .first_other
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .unwrap_or_default();
            parts.push(format!(
                "{other} line{} that {} not JSON-RPC (the first: {first:?}); an MCP stdio \
                 server must write only JSON-RPC messages to its stdout (its logs belong on \
                 stderr)",
                plural(other),
                if other == 1 { "is" } else { "are" }
            ));
        }
        if big > 0 {
            parts.push(format!(
                "{big} line{} over the message size limit (the largest {largest} bytes), \
                 which {} not read",
                plural(big),
                if big == 1 { "was" } else { "were" }
            ));
        }
        if json > 0 {
            parts.push(format!(
                "{json} JSON line{} but no answer to `initialize`",
                plural(json)
            ));
        }
        if parts.is_empty() {
            "it printed nothing on its stdout".into()
        } else {
            format!("it printed {}", parts.join("; and "))
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The reason of a stdio handshake that ran out of time.
pub(crate) fn stdio_handshake_timeout(limit: Duration, notes: &StdoutNotes) -> String {
    format!(
        "the server did not complete the MCP `initialize` handshake within {}: {}. Check \
         that the command starts an MCP server speaking stdio; if it is only slow to \
         start, raise `connect_timeout`",
        seconds(limit),
        notes.describe()
    )
}

/// The reason of an HTTP handshake that ran out of time.
pub(crate) fn http_handshake_timeout(limit: Duration) -> String {
    format!(
        "the server did not complete the MCP `initialize` handshake within {}. Check that \
         the URL is the server's streamable-HTTP endpoint and that the server is \
         responding; if it is only slow, raise `connect_timeout`",
        seconds(limit)
    )
}

pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_say_what_the_server_printed() {
        let n = StdoutNotes::default();
        assert_eq!(n.describe(), "it printed nothing on its stdout");
        n.line(b"");
        n.line(b"Starting server on stdio...");
        n.line(b"ready");
        n.line(br#"{"jsonrpc":"2.0","method":"x"}"#);
        n.oversized(200 << 20);
        let d = n.describe();
        assert!(
            d.contains(
                "2 lines that are not JSON-RPC (the first: \"Starting server on stdio...\")"
            ),
            "{d}"
        );
        assert!(d.contains("1 line over the message size limit (the largest 209715200 bytes)"));
        assert!(d.contains("1 JSON line but no answer"), "{d}");
        let e = stdio_handshake_timeout(Duration::from_millis(1500), &n);
        assert!(
            e.contains("within 1.5 s") && e.contains("connect_timeout"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn bounded_names_the_request_and_the_limit() {
        let never = std::future::pending::<Result<(), McpError>>();
        let e = bounded("`srv`", "tools/list", Duration::from_millis(20), never)
            .await
            .unwrap_err();
        assert_eq!(
            e,
            McpError::Timeout {
                server: "`srv`".into(),
                request: "tools/list".into(),
                after: Duration::from_millis(20),
            }
        );
        assert!(e.to_string().contains("tools/list"), "{e}");
    }
}
