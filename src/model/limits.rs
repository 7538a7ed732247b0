//! How much a provider's response may hold. A model endpoint is outside input: a
//! broken or hostile server could send an endless body or one SSE line that never
//! ends, and without a bound the client would buffer it until memory runs out.
//!
//! Defaults: 64 MiB for a whole response (JSON or event stream), 8 MiB for one line
//! of an event stream (one event's `data:`). The variables
//! `IRONLOOP_MAX_RESPONSE_BYTES` and `IRONLOOP_MAX_SSE_LINE_BYTES` change them for the
//! process (read once, at the first request).

use std::sync::OnceLock;

use futures::{Stream, StreamExt};

/// The default bound on a response body.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;
/// The default bound on one line of an event stream.
pub const DEFAULT_MAX_SSE_LINE_BYTES: usize = 8 << 20;

/// The limits in force: `(response bytes, SSE line bytes)`.
pub(crate) fn limits() -> (usize, usize) {
    static LIMITS: OnceLock<(usize, usize)> = OnceLock::new();
    *LIMITS.get_or_init(|| {
        let read = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|&n: &usize| n > 0)
                .unwrap_or(default)
        };
        (
            read("IRONLOOP_MAX_RESPONSE_BYTES", DEFAULT_MAX_RESPONSE_BYTES),
            read("IRONLOOP_MAX_SSE_LINE_BYTES", DEFAULT_MAX_SSE_LINE_BYTES),
        )
    })
}

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    #[error(
        "the response is larger than {0} bytes (IRONLOOP_MAX_RESPONSE_BYTES raises the limit)"
    )]
    TooLarge(usize),
    #[error(
        "an event-stream line is longer than {0} bytes (IRONLOOP_MAX_SSE_LINE_BYTES raises the limit)"
    )]
    LineTooLong(usize),
}

/// The whole body, refused past the response limit.
pub(crate) async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, BodyError> {
    let (max, _) = limits();
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The body's bytes in whole lines, with an error (and nothing after it) once the
/// whole exceeds the response limit or one line the SSE line limit.
///
/// Bytes after the last line break of a chunk are held back until their line ends:
/// `eventsource-stream` rescans its buffer for a line break on every chunk it gets,
/// so a long line fed to it piece by piece costs time quadratic in its length (a
/// 2 MiB line took 33 s in a debug build); fed whole lines, it scans each byte once.
pub(crate) fn bounded_stream(
    resp: reqwest::Response,
) -> impl Stream<Item = Result<Vec<u8>, BodyError>> + Unpin {
    let (max, max_line) = limits();
    let body = Box::pin(resp.bytes_stream());
    // (the body, the unfinished line, bytes so far); `None` after an error.
    Box::pin(futures::stream::unfold(
        Some((body, Vec::new(), 0usize)),
        move |st| async move {
            let (mut body, mut pending, mut total) = st?;
            loop {
                let chunk = match body.next().await {
                    None if pending.is_empty() => return None,
                    None => return Some((Ok(pending), None)),
                    Some(Err(e)) => return Some((Err(BodyError::from(e)), None)),
                    Some(Ok(chunk)) => chunk,
                };
                total += chunk.len();
                if total > max {
                    return Some((Err(BodyError::TooLarge(max)), None));
                }
                let is_break = |b: &u8| *b == b'\n' || *b == b'\r';
                let first = chunk.iter().position(is_break).unwrap_or(chunk.len());
                if pending.len() + first > max_line {
                    return Some((Err(BodyError::LineTooLong(max_line)), None));
                }
                match chunk.iter().rposition(is_break) {
                    None => pending.extend_from_slice(&chunk),
                    Some(last) => {
                        let mut out = std::mem::take(&mut pending);
                        out.extend_from_slice(&chunk[..=last]);
                        pending.extend_from_slice(&chunk[last + 1..]);
                        return Some((Ok(out), Some((body, pending, total))));
                    }
                }
            }
        },
    ))
}
