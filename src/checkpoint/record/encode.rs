//! Writing a record in format 4, or 5 when its snapshot's pieces repeat (the module
//! docs of [`super`] describe them): serialised straight from the [`CheckpointRecord`],
//! its derivable parts left out.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use super::shared::Shared;
use super::{checksum, checksum_of, SOURCES, TAG_4, TAG_4_SNAPSHOT, TAG_5_SHARED};
use crate::checkpoint::{pieces_of_runs, runs_len, CheckpointRecord, Run, Snapshot, Write};

/// The stored text of `record` (format 4, or 5). Deterministic: the same record always gives
/// the same text, which is how a store tells a retried `put` from a conflicting one.
/// Serialised straight from the record: a JSON tree built first cloned every value it
/// holds (a W7 step's messages; every few steps the whole state).
pub fn encode(record: &CheckpointRecord) -> serde_json::Result<String> {
    let mut text = encode_body(record)?;
    let crc = checksum(&record.id, record.parent_id.as_deref(), &text);
    let _ = write!(text, ",{crc}]");
    Ok(text)
}

/// The text of `record` in format 4 before its last comma: `[a,...,h` (what the
/// checksum, or a key's authentication code, covers with the ids).
/// A snapshot the engine wrote in pieces is copied in here, once, after the rest.
/// A snapshot whose pieces repeat is written in format 5 instead, each distinct piece
/// once ([`Shared`]).
pub fn encode_body(record: &CheckpointRecord) -> serde_json::Result<String> {
    let pieces = pieces_of(record);
    if let Some(shared) = Shared::of(pieces) {
        let mut text = head_bytes(record, TAG_5_SHARED, shared.len_hint())?;
        shared.write(&mut text);
        // SAFETY: as in `head`; the pieces are written as JSON strings and numbers.
        return Ok(unsafe { String::from_utf8_unchecked(text) });
    }
    let mut text = head(record, runs_len(pieces))?;
    for p in pieces_of_runs(pieces) {
        text.push_str(p);
    }
    Ok(text)
}

/// The text of `record` in format 4 with the snapshot's pieces left where the engine
/// keeps them: what a saver holding records in memory stores (a piece repeated costs it
/// a pointer, so format 5's table would only add work to every read). Copying a large
/// state's pieces into one text was half of its checkpoint's cost (a fresh allocation
/// the size of the state, faulted in page by page, then the copy); the pieces are
/// shared instead, and a channel whose value did not change shares its text with the
/// records before.
pub fn encode_parted(record: &CheckpointRecord) -> serde_json::Result<Parted> {
    let pieces = pieces_of(record);
    let mut text = head(record, 0)?;
    let at = text.len();
    let body = std::iter::once(text.as_str()).chain(pieces_of_runs(pieces).map(|p| p.as_str()));
    let crc = checksum_of(&record.id, record.parent_id.as_deref(), body);
    let _ = write!(text, ",{crc}]");
    let pieces = (!pieces.is_empty()).then(|| Pieces {
        at,
        parts: pieces.into(),
    });
    Ok(Parted { text, pieces })
}

/// The pieces of a snapshot the engine wrote in pieces (none for any other record).
fn pieces_of(record: &CheckpointRecord) -> &[Run] {
    match &record.snapshot {
        Some(Snapshot::Pieces(p)) => p,
        _ => &[],
    }
}

/// The text of `record` before its snapshot's pieces (or its last comma when it has
/// none), with room for `more` bytes.
fn head(record: &CheckpointRecord, more: usize) -> serde_json::Result<String> {
    let tag = if record.snapshot.is_some() {
        TAG_4_SNAPSHOT
    } else {
        TAG_4
    };
    let text = head_bytes(record, tag, more)?;
    // SAFETY: serde_json writes UTF-8 (its strings come from `&str`, the rest is ASCII).
    // Checking it again was ~4 % of a large state's checkpoint.
    Ok(unsafe { String::from_utf8_unchecked(text) })
}

/// [`head`]'s bytes, the record tagged `tag`.
fn head_bytes(record: &CheckpointRecord, tag: u64, more: usize) -> serde_json::Result<Vec<u8>> {
    let mut text = Vec::with_capacity(more + 256);
    serde_json::to_writer(&mut text, &Format4(record, tag))?;
    text.pop(); // `[a,...,h]` becomes `[a,...,h`.
    if !pieces_of(record).is_empty() {
        text.push(b',');
    }
    Ok(text)
}

/// A record's stored text as [`encode_parted`] makes it: `text` with `pieces` (when
/// there are) inserted at their byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parted {
    pub text: String,
    pub pieces: Option<Pieces>,
}

/// A snapshot's pieces and where they go in the text around them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    /// The byte offset in the text where the pieces go (a char boundary: after a comma).
    pub at: usize,
    /// The snapshot's runs, shared with the engine (one pointer each, see [`Run`]).
    pub parts: Box<[Run]>,
}

impl Parted {
    /// A text with no pieces.
    pub fn whole(text: String) -> Self {
        Parted { text, pieces: None }
    }

    /// The record's format-4 text: `text` itself when there are no pieces (then
    /// [`encode`]'s).
    pub fn joined(&self) -> Cow<'_, str> {
        match &self.pieces {
            None => Cow::Borrowed(&self.text),
            Some(p) => Cow::Owned(p.join(&self.text)),
        }
    }
}

impl Pieces {
    /// `text` with the pieces inserted at [`Pieces::at`].
    pub fn join(&self, text: &str) -> String {
        let (before, after) = text.split_at(self.at);
        let size = self.len() + text.len();
        let mut out = String::with_capacity(size);
        out.push_str(before);
        for p in pieces_of_runs(&self.parts) {
            out.push_str(p);
        }
        out.push_str(after);
        out
    }

    /// The bytes of the pieces.
    pub fn len(&self) -> usize {
        runs_len(&self.parts)
    }

    /// Whether there are none (never, as [`encode_parted`] makes them).
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

/// A record as format 4 stores it, tagged with the second field, without the checksum
/// (see the module docs).
struct Format4<'a>(&'a CheckpointRecord, u64);

impl Serialize for Format4<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut seq = s.serialize_seq(None)?;
        seq.serialize_element(&self.1)?;
        seq.serialize_element(&r.step)?;
        match SOURCES.iter().position(|s| *s == r.source) {
            Some(i) => seq.serialize_element(&i)?,
            None => seq.serialize_element(&[&r.source])?,
        }
        seq.serialize_element(&r.created_at)?;
        seq.serialize_element(&WriteGroups(&r.writes))?;
        seq.serialize_element(&Next(r))?;
        match metadata(r) {
            Metadata::Derived(0) => {}
            Metadata::Derived(n) => seq.serialize_element(&MapPrefix(&r.metadata, n))?,
            Metadata::Whole => seq.serialize_element(&[&r.metadata])?,
        }
        // A snapshot in pieces follows, from `encode_body`.
        if let Some(snapshot @ Snapshot::Json(_)) = &r.snapshot {
            seq.serialize_element(snapshot)?;
        }
        seq.end()
    }
}

/// Consecutive writes of one node as one group, `[node, channel, value, ...]`, one
/// group per task (see [`crate::checkpoint::task_groups`]).
struct WriteGroups<'a>(&'a [Write]);

impl Serialize for WriteGroups<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(crate::checkpoint::task_groups(self.0).map(WriteGroup))
    }
}

/// One node's consecutive writes (never empty).
struct WriteGroup<'a>(&'a [Write]);

impl Serialize for WriteGroup<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(1 + 2 * self.0.len()))?;
        seq.serialize_element(&self.0[0].node)?;
        for w in self.0 {
            seq.serialize_element(&w.channel)?;
            seq.serialize_element(&w.value)?;
        }
        seq.end()
    }
}

/// A record's `next` tasks as formats 3 and 4 store them: a task whose id is the
/// engine's own as its node's name (or `[node, arg]`), any other as `[id, node, arg]`;
/// a `Send`'s task with a timeout of its own as `[id, node, arg, timeout]`.
pub(super) struct Next<'a>(pub(super) &'a CheckpointRecord);

impl Serialize for Next<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut seq = s.serialize_seq(Some(r.next.len()))?;
        for (i, t) in r.next.iter().enumerate() {
            if let Some(timeout) = &t.timeout {
                seq.serialize_element(&(&t.id, &t.node, &t.arg, timeout))?;
            } else if is_engine_task_id(&t.id, &r.id, i, &t.node) {
                match &t.arg {
                    None => seq.serialize_element(&t.node)?,
                    Some(a) => seq.serialize_element(&(&t.node, a))?,
                }
            } else {
                seq.serialize_element(&(&t.id, &t.node, &t.arg))?;
            }
        }
        seq.end()
    }
}

/// Whether `task_id` is `engine_task_id(id, i, node)`, without making it.
pub(super) fn is_engine_task_id(task_id: &str, id: &str, i: usize, node: &str) -> bool {
    task_id
        .strip_prefix(id)
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(n, rest)| is_decimal(n, i) && rest == node)
}

/// Whether `s` is `n` as `format!` writes it (no sign, no leading zero).
fn is_decimal(s: &str, mut n: usize) -> bool {
    let b = s.as_bytes();
    for &c in b.iter().rev() {
        if !c.is_ascii_digit() || usize::from(c - b'0') != n % 10 {
            return false;
        }
        n /= 10;
    }
    n == 0 && !b.is_empty() && (b.len() == 1 || b[0] != b'0')
}

/// How a record's metadata is stored (see the module docs).
pub(super) enum Metadata {
    /// The engine's: its first `n` keys, then `source`, `step` and `parents: {}`
    /// repeating the record's own; stored as an object of the first `n` keys (none
    /// at all when `n` is 0).
    Derived(usize),
    /// Any other, stored whole in a one-element array.
    Whole,
}

pub(super) fn metadata(record: &CheckpointRecord) -> Metadata {
    if let Value::Object(m) = &record.metadata {
        let n = m.len();
        if n >= 3 {
            let mut tail = m.iter().skip(n - 3);
            let derived = matches!(
                (tail.next(), tail.next(), tail.next()),
                (Some((k0, source)), Some((k1, step)), Some((k2, parents)))
                    if k0 == "source"
                        && source.as_str() == Some(record.source.as_str())
                        && k1 == "step"
                        && step.as_i64() == Some(record.step)
                        && step.is_i64()
                        && k2 == "parents"
                        && parents.as_object().is_some_and(Map::is_empty)
            );
            // A key repeated in the rest would make `insert` on reading move it.
            if derived
                && !m
                    .keys()
                    .take(n - 3)
                    .any(|k| matches!(k.as_str(), "source" | "step" | "parents"))
            {
                return Metadata::Derived(n - 3);
            }
        }
    }
    Metadata::Whole
}

/// The first `n` entries of an object (`Value::Object`), as an object.
pub(super) struct MapPrefix<'a>(pub(super) &'a Value, pub(super) usize);

impl Serialize for MapPrefix<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(m) => s.collect_map(m.iter().take(self.1)),
            other => other.serialize(s),
        }
    }
}
