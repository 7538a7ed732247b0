//! The size limit on one message from an MCP server.
//!
//! rmcp caps a stdio line and a streamable-HTTP SSE event at 16 MiB, but it drops an
//! oversized message with a `tracing` record only, so the request it answered waits
//! for its timeout. Here the limit is settable (`max_message_bytes`), and a message
//! over it becomes, at once, an error response to the request it answered: the
//! message is skipped without being kept, its top-level `"id"` is picked out on the
//! way ([`IdScanner`]), and a JSON-RPC error with that id takes its place. The call
//! then fails with [`McpError::TooLarge`](super::McpError::TooLarge), naming the
//! limit. A message without an id (a notification) is dropped and logged.
//!
//! Over stdio [`BoundedLines`] does this around the child's stdout (rmcp's own
//! line reader behind it then never sees a line over the limit); over HTTP,
//! [`BoundedHttpClient`](super::http_client::BoundedHttpClient) turns rmcp's
//! "event too large" stream error into the same response.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

use super::limits::StdoutNotes;

/// The default limit on one message from an MCP server, in bytes: rmcp's own
/// (`DEFAULT_MAX_LINE_LENGTH`, `DEFAULT_MAX_SSE_EVENT_SIZE`), so a message that
/// passes over one transport passes over the other.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The JSON-RPC error code of the response that stands in for a refused message
/// (-32603, "internal error": the client could not take the server's answer). The
/// refusal is recognised by [`MARKER`] in the error's data, not by the code.
const TOO_LARGE_CODE: i32 = -32603;

/// The value of `data.ironloop` in a stand-in response.
pub(crate) const MARKER: &str = "message_too_large";

/// The stand-in for a refused message: a JSON-RPC error response with its id.
pub(crate) fn too_large_response(id: &Value, bytes: Option<u64>, limit: usize) -> String {
    let size = match bytes {
        Some(b) => format!("a message of {b} bytes"),
        None => format!("a message of more than {limit} bytes"),
    };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": TOO_LARGE_CODE,
            "message": format!("the server sent {size}, over the limit of {limit} bytes"),
            "data": {"ironloop": MARKER, "bytes": bytes, "limit": limit},
        },
    })
    .to_string()
}

/// `(bytes, limit)` when `data` is the data of a stand-in response.
pub(crate) fn refused(data: Option<&Value>) -> Option<(Option<u64>, usize)> {
    let d = data?;
    if d.get("ironloop")?.as_str()? != MARKER {
        return None;
    }
    let limit = usize::try_from(d.get("limit")?.as_u64()?).ok()?;
    Some((d.get("bytes").and_then(Value::as_u64), limit))
}

/// Where the scanner is inside the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum At {
    /// Before the top-level `{`.
    #[default]
    Start,
    /// At depth 1, where a key comes next (after `{` or `,`).
    Key,
    /// Reading a depth-1 key.
    InKey,
    /// After a depth-1 key, before its `:`.
    Colon,
    /// In a depth-1 value (or deeper inside one).
    Value,
    /// The top-level value ended, or it is not an object: nothing more to find.
    Done,
}

/// Picks the top-level `"id"` out of a JSON object fed to it in pieces, keeping only
/// a few bytes: the id of a message too large to keep. Strings, escapes and nesting
/// are followed, so an `"id"` inside the result or inside a string is not taken.
#[derive(Debug, Default)]
pub(crate) struct IdScanner {
    at: At,
    /// Depth below the top-level object while in a value (0: the value itself).
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The current depth-1 key, up to 3 bytes (more: not `id`).
    key: Vec<u8>,
    /// The text of the `"id"` value while it is read (`None` when not in it).
    value: Option<Vec<u8>>,
    found: Option<Value>,
}

impl IdScanner {
    /// The longest id text kept; a longer one is not a usable id.
    const MAX_ID: usize = 256;

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.at == At::Done {
                return;
            }
            self.step(b);
        }
    }

    /// The id, once the top-level `"id"` value has been read whole (a number or a
    /// string).
    pub(crate) fn id(&self) -> Option<&Value> {
        self.found.as_ref()
    }

    fn step(&mut self, b: u8) {
        match self.at {
            At::Start => match b {
                b'{' => self.at = At::Key,
                b if b.is_ascii_whitespace() => {}
                _ => self.at = At::Done,
            },
            At::Key => match b {
                b'"' => {
                    self.key.clear();
                    self.at = At::InKey;
                }
                b'}' => self.at = At::Done,
                _ => {}
            },
            At::InKey => {
                if self.escaped {
                    self.escaped = false;
                    self.push_key(b);
                } else if b == b'\\' {
                    self.escaped = true;
                    self.push_key(b);
                } else if b == b'"' {
                    self.at = At::Colon;
                } else {
                    self.push_key(b);
                }
            }
            At::Colon => {
                if b == b':' {
                    self.at = At::Value;
                    self.depth = 0;
                    let is_id = self.key == b"id" && self.found.is_none();
                    self.value = is_id.then(Vec::new);
                }
            }
            At::Value => self.value_byte(b),
            At::Done => {}
        }
    }

    fn push_key(&mut self, b: u8) {
        if self.key.len() < 3 {
            self.key.push(b);
        }
    }

    fn value_byte(&mut self, b: u8) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            self.keep(b);
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.keep(b);
            }
            b'{' | b'[' => {
                self.depth += 1;
                // An object or array is not an id.
                self.value = None;
            }
            b'}' | b']' if self.depth > 0 => self.depth -= 1,
            b',' if self.depth == 0 => {
                self.end_value();
                self.at = At::Key;
            }
            b'}' => {
                // depth 0: the top-level object ends.
                self.end_value();
                self.at = At::Done;
            }
            _ => self.keep(b),
        }
    }

    fn keep(&mut self, b: u8) {
        if self.depth > 0 {
            return;
        }
        if let Some(v) = &mut self.value {
            if v.len() >= Self::MAX_ID {
                self.value = None;
            } else {
                v.push(b);
            }
        }
    }

    fn end_value(&mut self) {
        if let Some(text) = self.value.take() {
            let parsed = serde_json::from_slice::<Value>(text.trim_ascii());
            if let Ok(v @ (Value::Number(_) | Value::String(_))) = parsed {
                self.found = Some(v);
            }
        }
    }
}

/// A message skipped because it is over the limit.
#[derive(Debug, Default)]
struct Skipped {
    bytes: u64,
    scan: IdScanner,
}

impl Skipped {
    fn feed(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        self.scan.feed(bytes);
    }
}

/// The child's stdout, line by line (one line is one JSON-RPC message), with every
/// line over `limit` bytes replaced by a stand-in error response to its request (or
/// dropped, when it has no id). At most `limit` bytes of a line are kept.
pub(crate) struct BoundedLines<R> {
    inner: R,
    limit: usize,
    /// The server, for the log record of a refused message.
    server: String,
    /// The line being read (at most `limit` bytes).
    line: Vec<u8>,
    /// The line being skipped, when it went over the limit.
    skipping: Option<Skipped>,
    /// Whole lines ready for the reader, and how far it has read them.
    out: Vec<u8>,
    out_pos: usize,
    chunk: Box<[u8]>,
    eof: bool,
    /// What went by, for the error of a handshake that never completed.
    notes: Arc<StdoutNotes>,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, limit: usize, server: String) -> Self {
        BoundedLines {
            inner,
            limit,
            server,
            line: Vec::new(),
            skipping: None,
            out: Vec::new(),
            out_pos: 0,
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            eof: false,
            notes: Arc::default(),
        }
    }

    /// What the server has printed so far (shared: it keeps counting).
    pub(crate) fn notes(&self) -> Arc<StdoutNotes> {
        self.notes.clone()
    }

    fn take(&mut self, data: &[u8]) {
        let mut rest = data;
        while !rest.is_empty() {
            let newline = rest.iter().position(|&b| b == b'\n');
            let piece = &rest[..newline.map_or(rest.len(), |i| i + 1)];
            rest = &rest[piece.len()..];
            let body = &piece[..piece.len() - usize::from(newline.is_some())];
            if let Some(s) = &mut self.skipping {
                s.feed(body);
            } else if self.line.len() + body.len() > self.limit {
                let mut s = Skipped::default();
                s.feed(&self.line);
                s.feed(body);
                self.line = Vec::new();
                self.skipping = Some(s);
            } else {
                self.line.extend_from_slice(piece);
            }
            if newline.is_some() {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        match self.skipping.take() {
            Some(s) => self.refuse(s),
            None => {
                let body = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                self.notes.line(body);
                self.out.extend_from_slice(&self.line);
                self.line.clear();
            }
        }
    }

    fn refuse(&mut self, s: Skipped) {
        self.notes.oversized(s.bytes);
        match s.scan.id() {
            Some(id) => {
                log::warn!(
                    "the MCP server {} sent a message of {} bytes, over the limit of {} \
                     bytes (max_message_bytes); the request it answers (id {id}) fails",
                    self.server,
                    s.bytes,
                    self.limit
                );
                self.out.extend_from_slice(
                    too_large_response(id, Some(s.bytes), self.limit).as_bytes(),
                );
                self.out.push(b'\n');
            }
            None => log::warn!(
                "the MCP server {} sent a message of {} bytes without an id (a \
                 notification), over the limit of {} bytes (max_message_bytes); it was \
                 dropped",
                self.server,
                s.bytes,
                self.limit
            ),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_pos);
                buf.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut rb = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut rb);
            let n = rb.filled().len();
            if let Poll::Ready(Ok(())) = polled {
                if n == 0 {
                    this.eof = true;
                    // An unterminated last line goes on as it is (the reader drops it).
                    match this.skipping.take() {
                        Some(s) => this.refuse(s),
                        None => this.out.append(&mut this.line),
                    }
                } else {
                    this.take(&chunk[..n]);
                }
            }
            this.chunk = chunk;
            ready!(polled)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn id_of(text: &str) -> Option<Value> {
        // Fed one byte at a time and whole: pieces must not matter.
        let mut one = IdScanner::default();
        for b in text.as_bytes() {
            one.feed(std::slice::from_ref(b));
        }
        let mut whole = IdScanner::default();
        whole.feed(text.as_bytes());
        assert_eq!(one.id(), whole.id(), "{text}");
        whole.id().cloned()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            Some(json!(7))
        );
        assert_eq!(
            id_of(
                r#"{"result":{"id":1,"x":["id",{"id":2}],"s":"\"id\":3"},"jsonrpc":"2.0","id":"a,b}"}"#
            ),
            Some(json!("a,b}"))
        );
        assert_eq!(id_of(r#" { "id" : 12 } "#), Some(json!(12)));
        assert_eq!(
            id_of(r#"{"method":"notifications/progress","params":{"id":1}}"#),
            None
        );
        assert_eq!(id_of(r#"{"id":{"x":1},"result":1}"#), None);
        assert_eq!(id_of(r#"[{"id":1}]"#), None);
        // Cut short (the message was never finished): no id is made up.
        assert_eq!(id_of(r#"{"result":"xxx","id":12"#), None);
    }

    async fn read_all(input: Vec<u8>, limit: usize) -> String {
        let mut r = BoundedLines::new(&input[..], limit, "`test`".into());
        let mut out = String::new();
        r.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_over_the_limit_become_an_error_response_to_their_request() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"t":"{}"}}}}"#,
            "x".repeat(500)
        );
        let small = r#"{"jsonrpc":"2.0","id":4,"result":{}}"#;
        let note = format!(
            r#"{{"jsonrpc":"2.0","method":"n","params":"{}"}}"#,
            "y".repeat(500)
        );
        let input = format!("{small}\n{big}\n{note}\n{small}\n").into_bytes();
        let out = read_all(input.clone(), 100).await;
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0]["id"], 4);
        assert_eq!(lines[1]["id"], 3);
        assert_eq!(
            refused(lines[1]["error"].get("data")),
            Some((Some(big.len() as u64), 100))
        );
        assert_eq!(lines[2]["id"], 4);
        // Under the limit, every line passes unchanged.
        assert_eq!(read_all(input.clone(), 1000).await.as_bytes(), &input[..]);
        // A line of exactly the limit passes.
        assert_eq!(
            read_all(format!("{small}\n").into_bytes(), small.len()).await,
            format!("{small}\n")
        );
    }
}
