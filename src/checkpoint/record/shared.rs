//! Format 5's snapshot: a snapshot whose pieces repeat, each distinct piece stored once.
//!
//! A state often holds one large value in many places (LangGraph's `wide_dict_15x600`
//! benchmark: one nested dict referenced from every item of several growing lists).
//! The engine already writes it once and shares the piece (see [`crate::checkpoint::Piece`]),
//! but format 4 stores the snapshot as its JSON: every place a copy, 29 MB of text
//! made of 49,467 pieces of which 12 are distinct, where SQLite's insert and the
//! WAL's copy into the file were four fifths of the run. Format 5 stores each distinct
//! piece once, so a record's bytes grow with the distinct data it holds.
//!
//! The snapshot element is a JSON array of the snapshot's pieces in order: a string is
//! a piece met for the first time (the next number, from 0), a number is the piece of
//! that number met again. Joined, they are the snapshot's JSON (format 4's element):
//!
//! ```text
//! [8, step, source, created_at, writes, next, (metadata,) ["{\"v\":1,…[", "{…}", 1, "},{", 1, 2, …], crc]
//! ```
//!
//! Everything else is format 4's, in the same places (the stores' SQL reads
//! `created_at` and `next`; the tag `8`, [`super::SNAPSHOT_PREFIX_5`], says a snapshot
//! is there). Pieces are told equal by their bytes (a piece shared by pointer is
//! recognised without reading it), so the same record always gives the same text.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write as _;

use serde_json::Value;

use crate::checkpoint::{pieces_of_runs, Run};

/// The fewest bytes format 5 must save over format 4 to be written.
const MIN_SAVED: usize = 4096;

/// The distinct pieces of a snapshot and the order they come in.
pub(super) struct Shared<'a> {
    /// Each piece's number: the index of its first occurrence in `distinct`.
    order: Vec<u32>,
    /// The pieces met first, in order.
    distinct: Vec<&'a str>,
}

impl<'a> Shared<'a> {
    /// The pieces of `runs` stored once each, when that is worth it: their repeats are
    /// at least half the snapshot's bytes and [`MIN_SAVED`] (escaping the distinct ones
    /// as JSON strings costs a few percent of them; a snapshot that repeats less is
    /// stored as format 4, its JSON, which any ironloop since format 4 reads).
    pub(super) fn of(runs: &'a [Run]) -> Option<Self> {
        let mut numbers: HashMap<Key<'a>, u32, foldhash::fast::FixedState> = HashMap::default();
        let (mut order, mut distinct) = (Vec::new(), Vec::new());
        let (mut total, mut distinct_len) = (0usize, 0usize);
        for p in pieces_of_runs(runs) {
            let text = p.as_str();
            if text.is_empty() {
                continue;
            }
            total += text.len();
            let next = u32::try_from(distinct.len()).ok()?;
            let n = *numbers.entry(Key(text)).or_insert_with(|| {
                distinct.push(text);
                distinct_len += text.len();
                next
            });
            order.push(n);
        }
        let saved = total - distinct_len;
        (saved >= MIN_SAVED && distinct_len <= saved).then_some(Shared { order, distinct })
    }

    /// Writes the snapshot element (see the module docs) at the end of `out`.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        let mut met = 0u32;
        for (i, &n) in self.order.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if n == met {
                met += 1;
                // A `str` always serialises.
                let _ = serde_json::to_writer(&mut *out, self.distinct[n as usize]);
            } else {
                let _ = write!(out, "{n}");
            }
        }
        out.push(b']');
    }

    /// An upper bound of what [`Shared::write`] writes but for escapes.
    pub(super) fn len_hint(&self) -> usize {
        self.distinct.iter().map(|d| d.len() + 3).sum::<usize>() + 6 * self.order.len()
    }
}

/// A piece's text as a key: equal when the bytes are (the same bytes in memory found
/// without reading them), hashed by its length and ends only, so that a large piece
/// met again costs no pass over it.
#[derive(Clone, Copy)]
struct Key<'a>(&'a str);

/// How many bytes of each end of a piece its hash reads.
const ENDS: usize = 32;

impl Hash for Key<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let b = self.0.as_bytes();
        h.write_usize(b.len());
        h.write(&b[..b.len().min(ENDS)]);
        h.write(&b[b.len().saturating_sub(ENDS)..]);
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }
}

impl Eq for Key<'_> {}

/// The snapshot's JSON from format 5's snapshot element (see the module docs).
pub(super) fn join(element: Value) -> Result<Value, String> {
    let bad = |what: &str| format!("the snapshot's pieces {what}");
    let Value::Array(items) = element else {
        return Err(bad("are not a list"));
    };
    let mut distinct: Vec<String> = Vec::new();
    let mut order: Vec<usize> = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) => {
                order.push(distinct.len());
                distinct.push(s);
            }
            Value::Number(n) => {
                let i = n
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|&i| i < distinct.len())
                    .ok_or_else(|| bad("refer to a piece not met before"))?;
                order.push(i);
            }
            _ => return Err(bad("hold something neither a piece nor a number")),
        }
    }
    let mut text = String::with_capacity(order.iter().map(|&i| distinct[i].len()).sum());
    for i in order {
        text.push_str(&distinct[i]);
    }
    serde_json::from_str(&text).map_err(|e| bad(&format!("do not join into JSON ({e})")))
}
