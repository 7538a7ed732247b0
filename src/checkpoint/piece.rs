//! A piece of a snapshot's text: JSON text whose bytes may be shared with other
//! texts, so that cloning or slicing it copies none.
//!
//! A state often holds one large value in many places (one document appended to
//! several growing lists: LangGraph's `wide_state` benchmarks hold one ~8 KB dict
//! ~2,000 times, 16.7 MB of text). Written as one string, every place is a copy of the
//! first: megabytes of fresh memory faulted in page by page, then copied again into
//! the record. Kept as pieces, a container written once is one piece, and every other
//! place it appears, in the same value or in a later checkpoint holding the same
//! encoded value, is that piece again.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use bytes::Bytes;

/// JSON text (always UTF-8) whose bytes are shared: [`Clone`] copies a pointer.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Piece(Bytes);

impl Piece {
    /// A piece of `bytes`, which the caller checked to be UTF-8.
    ///
    /// # Safety
    ///
    /// `bytes` must be valid UTF-8 (a slice of JSON text cut at an ASCII byte is).
    pub unsafe fn from_utf8_unchecked(bytes: Bytes) -> Self {
        Piece(bytes)
    }

    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor takes UTF-8 (a `String`, or bytes its caller
        // vouched for).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// Splits the piece at byte `at`: it keeps `..at`, the piece returned holds
    /// `at..` (the same bytes, not a copy). `None`, and the piece unchanged, if `at`
    /// is not a char boundary.
    pub fn split_off(&mut self, at: usize) -> Option<Piece> {
        self.as_str()
            .is_char_boundary(at)
            .then(|| Piece(self.0.split_off(at)))
    }

    /// The text as a `String` (its bytes moved when the piece alone holds them).
    pub fn into_string(self) -> String {
        // SAFETY: a piece is UTF-8 (see `as_str`).
        unsafe { String::from_utf8_unchecked(Vec::from(self.0)) }
    }

    /// Whether `a` and `b` are the same bytes in memory (a piece shared, not a copy).
    pub fn shares(a: &Piece, b: &Piece) -> bool {
        a.0.as_ptr() == b.0.as_ptr() && a.0.len() == b.0.len()
    }

    /// The bytes of `pieces`.
    pub fn total_len(pieces: &[Piece]) -> usize {
        pieces.iter().map(|p| p.len()).sum()
    }

    /// `pieces` as one text: the piece itself when there is one, else joined.
    pub fn joined(pieces: &[Piece]) -> Cow<'_, str> {
        match pieces {
            [] => Cow::Borrowed(""),
            [one] => Cow::Borrowed(one.as_str()),
            more => Cow::Owned(Piece::join(more)),
        }
    }

    /// `pieces` joined into one text.
    pub fn join(pieces: &[Piece]) -> String {
        let mut out = String::with_capacity(Piece::total_len(pieces));
        for p in pieces {
            out.push_str(p);
        }
        out
    }
}

impl Deref for Piece {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for Piece {
    fn from(s: String) -> Self {
        Piece(Bytes::from(s.into_bytes()))
    }
}

impl From<&str> for Piece {
    fn from(s: &str) -> Self {
        Piece::from(s.to_owned())
    }
}

/// One value's pieces, shared whole: a snapshot holds each channel's run (one pointer
/// cloned, not a count per piece: cloning and dropping the pieces one by one was 13 %
/// of a checkpointed `wide_state` run, which holds ~3,400 of them).
pub type Run = Arc<[Piece]>;

/// The pieces of `runs`, in order.
pub fn pieces_of_runs(runs: &[Run]) -> impl Iterator<Item = &Piece> {
    runs.iter().flat_map(|r| r.iter())
}

/// The bytes of `runs`.
pub fn runs_len(runs: &[Run]) -> usize {
    runs.iter().map(|r| Piece::total_len(r)).sum()
}

/// `runs` joined into one text.
pub fn join_runs(runs: &[Run]) -> String {
    let mut out = String::with_capacity(runs_len(runs));
    for p in pieces_of_runs(runs) {
        out.push_str(p);
    }
    out
}

/// A shared string as the owner of a piece's bytes.
struct SharedString(Arc<String>);

impl AsRef<[u8]> for SharedString {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl From<Arc<String>> for Piece {
    /// The string's bytes, not copied: the piece holds the string.
    fn from(s: Arc<String>) -> Self {
        Piece(Bytes::from_owner(SharedString(s)))
    }
}

impl fmt::Debug for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_from_a_shared_string_shares_its_bytes() {
        let s = Arc::new("{\"a\":\"é\"}".to_owned());
        let p = Piece::from(s.clone());
        assert_eq!(&*p, s.as_str());
        assert_eq!(p.as_ptr(), s.as_ptr());
        let q = p.clone();
        assert!(Piece::shares(&p, &q));
        assert!(!Piece::shares(&p, &Piece::from(s.as_str())));
        assert_eq!(Piece::join(&[p, Piece::from("[1]")]), "{\"a\":\"é\"}[1]");
        let mut whole = Piece::from("[\"é\",1]");
        assert_eq!(whole.split_off(3), None);
        let tail = whole.split_off(4).unwrap();
        assert_eq!((&*whole, &*tail), ("[\"é", "\",1]"));
        assert_eq!(tail.into_string(), "\",1]");
    }
}
