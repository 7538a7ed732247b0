//! How a [`CheckpointRecord`] is stored: the text every saver keeps per record.
//!
//! # Format 4 (written since the compact fixed parts)
//!
//! Format 3 with its fixed parts shorter (each costs every record of every store its
//! bytes: a W4m row on PostgreSQL fits 19 to a page instead of 18):
//!
//! ```text
//! [tag, step, source, created_at, writes, next, (metadata,) (snapshot,) crc]
//! ```
//!
//! - `tag` is [`TAG_4`] (`4`), or [`TAG_4_SNAPSHOT`] (`5`) when the record holds a
//!   snapshot, which is then the element before the checksum ([`SNAPSHOT_PREFIX_4`]).
//!   No `null` slot when there is none: the tag says it.
//! - `source`: the engine's sources as numbers, `0` `"input"`, `1` `"loop"`, `2`
//!   `"update"`; any other as `[source]`. Never a string, so no change of the tag
//!   makes a format-4 record pass for a format-2 one (whose source is a string, and
//!   which has no checksum): the decoder refuses it.
//! - `writes`: consecutive writes of one node as one group, `[node, channel, value,
//!   channel, value, ...]`, in their order.
//! - `metadata`: as in format 3, but left out when it is the engine's with no other
//!   key (format 3's `{}`): a record without a snapshot then has 7 elements, else 8; a
//!   record with one has 8 or 9.
//! - `created_at` (index 3) and `next` (index 5) keep their positions, which the
//!   stores' SQL reads; the `crc` is format 3's, over the ids and the text before it.
//!
//! # Format 3 (written before format 4, since the checksum)
//!
//! A JSON array, without what the store keeps beside it or what can be derived, and
//! a checksum last:
//!
//! ```text
//! [tag, step, source, created_at, writes, next, metadata, snapshot | null, crc]
//! ```
//!
//! - `tag` is [`TAG`] (`2`), or [`TAG_SNAPSHOT`] (`3`) when the record holds a
//!   snapshot (then `null` is replaced by it): a store tells a record with a snapshot
//!   by the text's first three bytes ([`SNAPSHOT_PREFIX`]) without parsing it. The
//!   stores' queries also read `created_at` (index 3) and `next` (index 5) in SQL, so
//!   these positions are the same in formats 2 and 3.
//! - The record's `id` and `parent_id` are not in the text: every saver keeps them
//!   beside it (columns, or the in-memory entry) and hands them to [`decode`].
//! - `writes`: `[node, channel, value]` each.
//! - `next`: a task whose id is the engine's own (`{record id}:{i}:{node}`) is its
//!   node's name, or `[node, arg]` for a `Send`'s; any other is `[id, node, arg]`.
//! - `metadata`: the engine's metadata ends with `source`, `step` and `parents: {}`
//!   repeating the record's own: then only the keys before them are stored, as an
//!   object, and put back on reading. Any other metadata is stored whole, wrapped in a
//!   one-element array.
//! - `crc`: the CRC-32 ([`checksum`]) of the record's id, its parent's id and every
//!   byte of the text before the last comma, as a decimal number. On reading, the text
//!   must end in exactly `,{crc}]` with the CRC of what precedes it, so a changed byte
//!   anywhere in the text, or a changed id or parent beside it, is an error naming the
//!   record, never another state (a disk, a copy or an edit that damaged the file).
//!   The slot for the snapshot is always there so that every format-3 record has 9
//!   elements: no change of one tag byte turns it into a format-2 record.
//!
//! Values (writes, task arguments, metadata, snapshots) are the same JSON as before.
//!
//! # Format 2 (records written before the checksum)
//!
//! `[tag, step, source, created_at, writes, next, metadata(, snapshot)]`, the fields as
//! in format 3: 7 elements, 8 with a snapshot. Read as before, without a checksum to
//! check (so a damaged format-2 record can still read back as another state, as it
//! could before). Nothing rewrites them.
//!
//! # Format 1 (records written before the compact encoding)
//!
//! The whole record as a JSON object (`{"id": ...}`, or `{"snapshot": ...}` first when
//! it holds one): read as it is, so stores written by earlier versions load
//! unchanged, chains mixing the formats included. No checksum either.
//!
//! Nothing rewrites records of formats 1 to 3: they read as before, and a thread's
//! new records are written in format 4 on the same chains.

use std::fmt::Write as _;

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use std::sync::Arc;

use super::{CheckpointRecord, Snapshot, TaskRecord, Write};

/// The first element of a format-2 or -3 record without a snapshot.
pub const TAG: u64 = 2;
/// The first element of a format-2 or -3 record holding a snapshot.
pub const TAG_SNAPSHOT: u64 = 3;

/// The first element of a format-4 record without a snapshot.
pub const TAG_4: u64 = 4;
/// The first element of a format-4 record holding a snapshot.
pub const TAG_4_SNAPSHOT: u64 = 5;

/// The number of elements of a format-3 record (with or without a snapshot).
const FORMAT_3_LEN: usize = 9;

/// The sources a format-4 record stores as their index (see the module docs).
const SOURCES: [&str; 3] = ["input", "loop", "update"];

/// How the text of a format-2 or -3 record holding a snapshot starts.
pub const SNAPSHOT_PREFIX: &str = "[3,";
/// How the text of a format-4 record holding a snapshot starts.
pub const SNAPSHOT_PREFIX_4: &str = "[5,";
/// How the text of a format-1 record holding a snapshot starts (and no other record's:
/// every other format-1 record starts with `{"id":`).
pub const SNAPSHOT_PREFIX_V1: &str = "{\"snapshot\":";

/// Whether the stored text `text` holds a snapshot, without parsing it.
pub fn has_snapshot(text: &str) -> bool {
    text.starts_with(SNAPSHOT_PREFIX_4)
        || text.starts_with(super::seal::SNAPSHOT_PREFIX_SEALED)
        || text.starts_with(SNAPSHOT_PREFIX)
        || text.starts_with(SNAPSHOT_PREFIX_V1)
}

/// The stored text of `record` (format 4). Deterministic: the same record always gives
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
pub fn encode_body(record: &CheckpointRecord) -> serde_json::Result<String> {
    let pieces: &[Arc<String>] = match &record.snapshot {
        Some(Snapshot::Pieces(p)) => p,
        _ => &[],
    };
    let size = pieces.iter().map(|p| p.len()).sum::<usize>();
    let mut text = Vec::with_capacity(size + 256);
    serde_json::to_writer(&mut text, &Format4(record))?;
    text.pop(); // `[a,...,h]` becomes `[a,...,h`.
    if !pieces.is_empty() {
        text.push(b',');
        for p in pieces {
            text.extend_from_slice(p.as_bytes());
        }
    }
    // serde_json writes UTF-8, and the pieces are `String`s.
    String::from_utf8(text).map_err(serde::ser::Error::custom)
}

/// A record as format 4 stores it, without the checksum (see the module docs).
struct Format4<'a>(&'a CheckpointRecord);

impl Serialize for Format4<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut seq = s.serialize_seq(None)?;
        seq.serialize_element(&if r.snapshot.is_some() {
            TAG_4_SNAPSHOT
        } else {
            TAG_4
        })?;
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

/// Consecutive writes of one node as one group, `[node, channel, value, ...]`.
struct WriteGroups<'a>(&'a [Write]);

impl Serialize for WriteGroups<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.chunk_by(|a, b| a.node == b.node).map(WriteGroup))
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
/// engine's own as its node's name (or `[node, arg]`), any other as `[id, node, arg]`.
struct Next<'a>(&'a CheckpointRecord);

impl Serialize for Next<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut seq = s.serialize_seq(Some(r.next.len()))?;
        for (i, t) in r.next.iter().enumerate() {
            if is_engine_task_id(&t.id, &r.id, i, &t.node) {
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

/// Whether `task_id` is [`engine_task_id`]`(id, i, node)`, without making it.
fn is_engine_task_id(task_id: &str, id: &str, i: usize, node: &str) -> bool {
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

/// The CRC-32 of a format-3 or -4 record: of its id and its parent's (each with its length,
/// so that no two pairs give the same bytes) and of `body`, its text before the last
/// comma. The ids are in it because the stores keep them beside the text: a damaged
/// `parent_id` would chain the record to another one.
pub fn checksum(id: &str, parent_id: Option<&str>, body: &str) -> u32 {
    let mut h = crc32fast::Hasher::new();
    frame_ids(id, parent_id, |b| h.update(b));
    h.update(body.as_bytes());
    h.finalize()
}

/// Feeds a record's id and its parent's to `update`, each with its length, so that no
/// two pairs give the same bytes: what the checksum and a key's code cover first.
pub fn frame_ids(id: &str, parent_id: Option<&str>, mut update: impl FnMut(&[u8])) {
    update(&(id.len() as u64).to_le_bytes());
    update(id.as_bytes());
    match parent_id {
        None => update(&[0]),
        Some(p) => {
            update(&[1]);
            update(&(p.len() as u64).to_le_bytes());
            update(p.as_bytes());
        }
    }
}

/// Checks the checksum of a format-3 or -4 record's text: it must end in exactly
/// `,{crc}]`, `crc` the [`checksum`] of what precedes the comma.
fn verify(text: &str, id: &str, parent_id: Option<&str>) -> Result<(), String> {
    let damaged = |what: &str| {
        format!(
            "its checksum does not match ({what}): the record was changed after it was \
             written (a damaged disk or file, or an edit by hand); restore the store from \
             a copy, or go back to an earlier checkpoint of the thread"
        )
    };
    let (body, tail) = text
        .rsplit_once(',')
        .ok_or_else(|| damaged("no checksum"))?;
    let stored = tail
        .strip_suffix(']')
        .filter(|d| !d.is_empty() && d.len() <= 10 && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u32>().ok())
        .filter(|c| tail.len() == c.to_string().len() + 1)
        .ok_or_else(|| damaged("the checksum is not a number as written"))?;
    if checksum(id, parent_id, body) != stored {
        return Err(damaged("computed over the record's id, parent and text"));
    }
    Ok(())
}

/// Whether two stored records of id `id`, each a text and a parent, are the same
/// record: the same text, or (a record stored in an earlier format put again in
/// format 3) the same content. How a store tells a retried `put` from a conflicting
/// one.
pub fn same(id: &str, a: (&str, Option<&str>), b: (&str, Option<&str>)) -> bool {
    if a == b {
        return true;
    }
    a.1 == b.1
        && matches!(
            (decode(a.0, id, a.1), decode(b.0, id, b.1)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// The record `id` (child of `parent_id`) from its stored text, in any format.
/// The error says what is wrong with the text; callers name the store and thread.
pub fn decode(text: &str, id: &str, parent_id: Option<&str>) -> Result<CheckpointRecord, String> {
    decode_checked(text, id, parent_id, Check::Checksum)
}

/// A format-4 record whose authentication code in place of the checksum the caller
/// checked ([`super::seal`]).
pub(super) fn decode_authenticated(
    text: &str,
    id: &str,
    parent_id: Option<&str>,
) -> Result<CheckpointRecord, String> {
    decode_checked(text, id, parent_id, Check::Done)
}

/// What checks the last element of a format-3 or -4 record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// It is the checksum, checked here.
    Checksum,
    /// The caller checked it (a key's code): only format 4 has one.
    Done,
}

fn decode_checked(
    text: &str,
    id: &str,
    parent_id: Option<&str>,
    check: Check,
) -> Result<CheckpointRecord, String> {
    let record = decode_any(text, id, parent_id, check)?;
    // A time no calendar can show (a corrupted number) would fail later, far from here.
    if !(0.0..MAX_CREATED_AT).contains(&record.created_at) {
        return Err(format!(
            "created_at {} is not a time between 1970 and 9999",
            record.created_at
        ));
    }
    Ok(record)
}

/// Seconds since the epoch at the start of year 10000.
const MAX_CREATED_AT: f64 = 253_402_300_800.0;

fn decode_any(
    text: &str,
    id: &str,
    parent_id: Option<&str>,
    check: Check,
) -> Result<CheckpointRecord, String> {
    if check == Check::Done && !matches!(text.get(..3), Some("[4," | "[5,")) {
        return Err("only a format-4 record carries an authentication code".into());
    }
    if text.starts_with('{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Array(mut items) = v else {
        return Err("not a checkpoint record (neither an object nor an array)".into());
    };
    let tag = items.first().and_then(Value::as_u64);
    let format_4 = matches!(tag, Some(TAG_4 | TAG_4_SNAPSHOT));
    let snapshot = match (tag, items.len()) {
        (Some(TAG | TAG_SNAPSHOT), FORMAT_3_LEN) => {
            verify(text, id, parent_id)?;
            items.pop(); // the checksum
            match (tag, items.pop()) {
                (Some(TAG), Some(Value::Null)) => None,
                (Some(TAG_SNAPSHOT), Some(s)) if !s.is_null() => Some(s),
                _ => return Err("the tag does not say whether there is a snapshot".into()),
            }
        }
        (Some(TAG), 7) => None,
        (Some(TAG_SNAPSHOT), 8) => items.pop(),
        (Some(TAG_4), 7 | 8) | (Some(TAG_4_SNAPSHOT), 8 | 9) => {
            if check == Check::Checksum {
                verify(text, id, parent_id)?;
            }
            items.pop(); // the checksum
            let snapshot = if tag == Some(TAG_4_SNAPSHOT) {
                items.pop()
            } else {
                None
            };
            // No metadata element: the engine's metadata with no other key.
            if items.len() == 6 {
                items.push(Value::Object(Map::new()));
            }
            snapshot
        }
        _ => {
            return Err(format!(
                "a record of format {:?} with {} fields, this ironloop reads formats 1 to 4 \
                 (upgrade ironloop)",
                items.first(),
                items.len()
            ))
        }
    };
    let mut it = items.into_iter().skip(1);
    let mut next_item = |what: &str| it.next().ok_or_else(|| format!("no {what}"));
    let step = next_item("step")?
        .as_i64()
        .ok_or("the step is not an integer")?;
    let source = match (format_4, next_item("source")?) {
        (false, Value::String(s)) => s,
        (false, _) => return Err("the source is not a string".into()),
        (true, Value::Number(n)) => n
            .as_u64()
            .and_then(|i| SOURCES.get(usize::try_from(i).ok()?))
            .map(|s| (*s).to_owned())
            .ok_or("the source is not one of the engine's")?,
        (true, Value::Array(a)) => match <[Value; 1]>::try_from(a) {
            Ok([Value::String(s)]) => s,
            _ => return Err("the source is not [source]".into()),
        },
        (true, _) => return Err("the source is neither a number nor [source]".into()),
    };
    let created_at = next_item("created_at")?
        .as_f64()
        .ok_or("created_at is not a number")?;
    let writes = match next_item("writes")? {
        Value::Array(ws) if format_4 => {
            let mut out = Vec::with_capacity(ws.len());
            for g in ws {
                let bad = || "a group of writes is not [node, channel, value, ...]".to_owned();
                let Value::Array(g) = g else {
                    return Err(bad());
                };
                if g.len() < 3 || g.len() % 2 == 0 {
                    return Err(bad());
                }
                let mut g = g.into_iter();
                let Some(Value::String(node)) = g.next() else {
                    return Err(bad());
                };
                while let (Some(channel), Some(value)) = (g.next(), g.next()) {
                    let Value::String(channel) = channel else {
                        return Err(bad());
                    };
                    out.push(Write {
                        node: node.clone(),
                        channel,
                        value: Arc::new(value),
                    });
                }
            }
            out
        }
        Value::Array(ws) => ws
            .into_iter()
            .map(|w| match w {
                Value::Array(w) if w.len() == 3 => {
                    let mut w = w.into_iter();
                    let (node, channel, value) = (w.next(), w.next(), w.next());
                    match (node, channel, value) {
                        (Some(Value::String(node)), Some(Value::String(channel)), Some(value)) => {
                            Ok(Write {
                                node,
                                channel,
                                value: Arc::new(value),
                            })
                        }
                        _ => Err("a write is not [node, channel, value]".to_owned()),
                    }
                }
                _ => Err("a write is not [node, channel, value]".to_owned()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("the writes are not a list".into()),
    };
    let next = match next_item("next")? {
        Value::Array(ts) => ts
            .into_iter()
            .enumerate()
            .map(|(i, t)| task(id, i, t))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("the next tasks are not a list".into()),
    };
    let metadata = match next_item("metadata")? {
        Value::Object(mut m) => {
            m.insert("source".into(), json!(source));
            m.insert("step".into(), json!(step));
            m.insert("parents".into(), json!({}));
            Value::Object(m)
        }
        Value::Array(mut whole) if whole.len() == 1 => whole.pop().unwrap_or_default(),
        _ => return Err("the metadata is neither an object nor [metadata]".into()),
    };
    Ok(CheckpointRecord {
        snapshot: snapshot.map(Snapshot::Json),
        id: id.to_owned(),
        parent_id: parent_id.map(str::to_owned),
        step,
        source,
        writes,
        next,
        created_at,
        metadata,
    })
}

/// The id the engine gives the `i`-th task of the step after checkpoint `id`.
fn engine_task_id(id: &str, i: usize, node: &str) -> String {
    format!("{id}:{i}:{node}")
}

/// A task of `next` from its stored form (see the module docs).
fn task(id: &str, i: usize, t: Value) -> Result<TaskRecord, String> {
    let bad = || "a next task is not node, [node, arg] or [id, node, arg]".to_owned();
    match t {
        Value::String(node) => Ok(TaskRecord {
            id: engine_task_id(id, i, &node),
            node,
            arg: None,
        }),
        Value::Array(a) if a.len() == 2 => {
            let mut a = a.into_iter();
            match (a.next(), a.next()) {
                (Some(Value::String(node)), Some(arg)) => Ok(TaskRecord {
                    id: engine_task_id(id, i, &node),
                    node,
                    arg: Some(arg),
                }),
                _ => Err(bad()),
            }
        }
        Value::Array(a) if a.len() == 3 => {
            let mut a = a.into_iter();
            match (a.next(), a.next(), a.next()) {
                (Some(Value::String(tid)), Some(Value::String(node)), Some(arg)) => {
                    Ok(TaskRecord {
                        id: tid,
                        node,
                        arg: (!arg.is_null()).then_some(arg),
                    })
                }
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// How a record's metadata is stored (see the module docs).
enum Metadata {
    /// The engine's: its first `n` keys, then `source`, `step` and `parents: {}`
    /// repeating the record's own; stored as an object of the first `n` keys (none
    /// at all when `n` is 0).
    Derived(usize),
    /// Any other, stored whole in a one-element array.
    Whole,
}

fn metadata(record: &CheckpointRecord) -> Metadata {
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
struct MapPrefix<'a>(&'a Value, usize);

impl Serialize for MapPrefix<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(m) => s.collect_map(m.iter().take(self.1)),
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `record`'s `next` as a JSON tree (what format 3 stores too).
    fn encode_next(record: &CheckpointRecord) -> Vec<Value> {
        serde_json::from_str(&serde_json::to_string(&Next(record)).unwrap()).unwrap()
    }

    /// `record`'s metadata as formats 3 and 4 store it, as a JSON tree.
    fn compact_metadata(record: &CheckpointRecord) -> Value {
        match metadata(record) {
            Metadata::Derived(n) => serde_json::to_value(MapPrefix(&record.metadata, n)).unwrap(),
            Metadata::Whole => Value::Array(vec![record.metadata.clone()]),
        }
    }

    fn record(id: &str) -> CheckpointRecord {
        CheckpointRecord {
            snapshot: None,
            id: id.into(),
            parent_id: Some("p".into()),
            step: 4,
            source: "loop".into(),
            writes: vec![Write {
                node: "b".into(),
                channel: "messages".into(),
                value: json!([{"id": "m1", "content": "hi", "type": "ai"}]).into(),
            }],
            next: vec![
                TaskRecord {
                    id: format!("{id}:0:a"),
                    node: "a".into(),
                    arg: None,
                },
                TaskRecord {
                    id: format!("{id}:1:w"),
                    node: "w".into(),
                    arg: Some(json!({"x": 1})),
                },
                TaskRecord {
                    id: "other".into(),
                    node: "a".into(),
                    arg: None,
                },
            ],
            created_at: 1_795_418_839.542_807,
            metadata: json!({"user": "u", "source": "loop", "step": 4, "parents": {}}),
        }
    }

    fn round_trip(r: &CheckpointRecord) -> String {
        let text = encode(r).unwrap();
        let back = decode(&text, &r.id, r.parent_id.as_deref()).unwrap();
        assert_eq!(&back, r, "{text}");
        // Metadata keys keep their order (Python sees a dict).
        assert_eq!(
            serde_json::to_string(&back.metadata).unwrap(),
            serde_json::to_string(&r.metadata).unwrap()
        );
        text
    }

    #[test]
    fn records_round_trip_without_their_derivable_parts() {
        let r = record("c1");
        let text = round_trip(&r);
        assert!(text.starts_with("[4,4,1,"), "{text}");
        assert!(!text.contains("c1") && !text.contains("\"p\""), "{text}");
        assert!(
            text.contains(r#""a",["w",{"x":1}],["other","a",null]"#),
            "{text}"
        );
        assert!(text.contains(r#"{"user":"u"}"#), "{text}");
        assert!(!has_snapshot(&text));
    }

    #[test]
    fn format_4_shortens_the_fixed_parts() {
        // W4m's record: node `a` writes two channels, the metadata is the engine's.
        let mut r = record("c1");
        r.metadata = json!({"source": "loop", "step": 4, "parents": {}});
        r.writes = vec![
            Write {
                node: "a".into(),
                channel: "count".into(),
                value: json!(4).into(),
            },
            Write {
                node: "a".into(),
                channel: "messages".into(),
                value: json!([{"id": "m1"}]).into(),
            },
        ];
        r.next.truncate(1);
        let text = round_trip(&r);
        let crc = checksum("c1", Some("p"), text.rsplit_once(',').unwrap().0);
        assert_eq!(
            text,
            format!(
                r#"[4,4,1,1795418839.542807,[["a","count",4,"messages",[{{"id":"m1"}}]]],["a"],{crc}]"#
            )
        );
        // 19 bytes fewer than format 3 wrote before the checksum (`"loop"` for `1`,
        // `],["a"`, `,{},null`).
        let body = |t: &str| t.rsplit_once(',').unwrap().0.len();
        assert_eq!(body(&format_3(&r)) - body(&text), 19, "{}", format_3(&r));
        // Writes of a node that come back later stay in their order.
        for (i, node) in ["b", "a", "a"].into_iter().enumerate() {
            r.writes.push(Write {
                node: node.into(),
                channel: format!("c{i}"),
                value: json!(i).into(),
            });
        }
        let text = round_trip(&r);
        assert!(
            text.contains(r#"]],["b","c0",0],["a","c1",1,"c2",2]],"#),
            "{text}"
        );
        // Sources the engine does not write, and every one it does.
        for source in ["input", "loop", "update", "fork", "", "1"] {
            r.source = source.into();
            r.metadata = json!({"source": source, "step": 4, "parents": {}});
            let text = round_trip(&r);
            match SOURCES.iter().position(|s| *s == source) {
                Some(i) => assert!(text.starts_with(&format!("[4,4,{i},")), "{text}"),
                None => assert!(text.starts_with(&format!("[4,4,[\"{source}\"],")), "{text}"),
            }
        }
    }

    #[test]
    fn only_the_engines_own_task_ids_are_left_out() {
        for (task_id, i, node, engine) in [
            ("c1:0:a", 0, "a", true),
            ("c1:10:a", 10, "a", true),
            ("c1:3:a:b", 3, "a:b", true),
            ("c1:03:a", 3, "a", false),
            ("c1:00:a", 0, "a", false),
            ("c1:+3:a", 3, "a", false),
            ("c1::a", 0, "a", false),
            ("c1:1:a", 10, "a", false),
            ("c1:10:a", 1, "a", false),
            ("c1:1:ab", 1, "a", false),
            ("c2:1:a", 1, "a", false),
            ("c1:1", 1, "", false),
        ] {
            assert_eq!(
                is_engine_task_id(task_id, "c1", i, node),
                engine,
                "{task_id} {i} {node}"
            );
            assert_eq!(engine, task_id == engine_task_id("c1", i, node));
        }
    }

    #[test]
    fn metadata_that_does_not_repeat_the_record_is_kept_whole() {
        for metadata in [
            json!({"step": 4, "nested": {"k": [1, null, true]}}),
            json!({"source": "loop", "step": 5, "parents": {}}),
            json!({"source": "loop", "step": 4, "parents": {"": "x"}}),
            json!({"step": 4, "source": "loop", "parents": {}}),
            json!({"source": "input", "x": 1, "source2": 0, "step": 4, "parents": {}}),
            json!({"source": "loop", "step": 4.0, "parents": {}}),
            Value::Null,
            json!([1]),
        ] {
            let mut r = record("c1");
            r.metadata = metadata;
            round_trip(&r);
        }
    }

    #[test]
    fn snapshots_are_tagged_and_before_the_checksum() {
        let mut r = record("c2");
        r.snapshot = Some(json!({"v": 1, "values": {"count": 3}}).into());
        let text = round_trip(&r);
        let crc = checksum("c2", Some("p"), text.rsplit_once(',').unwrap().0);
        assert!(has_snapshot(&text) && text.starts_with(SNAPSHOT_PREFIX_4));
        assert!(
            text.ends_with(&format!(
                r#"{{"user":"u"}},{{"v":1,"values":{{"count":3}}}},{crc}]"#
            )),
            "{text}"
        );
        // Without metadata of its own, and a snapshot that is JSON's null.
        r.metadata = json!({"source": "loop", "step": 4, "parents": {}});
        for s in [json!(5), Value::Null] {
            r.snapshot = Some(s.into());
            assert!(has_snapshot(&round_trip(&r)));
        }
        r.snapshot = None;
        let text = round_trip(&r);
        let crc = checksum("c2", Some("p"), text.rsplit_once(',').unwrap().0);
        assert!(
            text.ends_with(&format!(r#"["other","a",null]],{crc}]"#)),
            "{text}"
        );
        assert!(!has_snapshot(&text));
    }

    #[test]
    fn a_snapshot_in_pieces_is_stored_as_its_json() {
        let mut r = record("c2");
        r.snapshot = Some(json!({"v": 1, "values": {"a": [1, "x"]}}).into());
        let whole = encode(&r).unwrap();
        let piece = |s: &str| Arc::new(s.to_owned());
        r.snapshot = Some(Snapshot::Pieces(vec![
            piece(r#"{"v":1,"values":{"a":"#),
            piece(r#"[1,"x"]"#),
            piece("}}"),
        ]));
        assert_eq!(encode(&r).unwrap(), whole);
        assert_eq!(decode(&whole, "c2", Some("p")).unwrap(), r);
    }

    /// `record` as format 3 wrote it (9 elements, a checksum last).
    fn format_3(r: &CheckpointRecord) -> String {
        let writes: Vec<Value> = r
            .writes
            .iter()
            .map(|w| json!([w.node, w.channel, w.value]))
            .collect();
        let next = encode_next(r);
        let tag = if r.snapshot.is_some() {
            TAG_SNAPSHOT
        } else {
            TAG
        };
        let out = json!([
            tag,
            r.step,
            r.source,
            r.created_at,
            writes,
            next,
            compact_metadata(r),
            serde_json::to_value(&r.snapshot).unwrap()
        ]);
        let mut text = serde_json::to_string(&out).unwrap();
        text.pop();
        let crc = checksum(&r.id, r.parent_id.as_deref(), &text);
        format!("{text},{crc}]")
    }

    #[test]
    fn format_3_records_still_load() {
        let mut r = record("c1");
        for snapshot in [None, Some(json!({"v": 1}).into())] {
            r.snapshot = snapshot;
            let v3 = format_3(&r);
            assert!(
                v3.starts_with(if r.snapshot.is_some() {
                    "[3,4,\"loop\","
                } else {
                    "[2,4,\"loop\","
                }),
                "{v3}"
            );
            assert_eq!(has_snapshot(&v3), r.snapshot.is_some());
            assert_eq!(decode(&v3, "c1", Some("p")).unwrap(), r);
            assert!(same(
                "c1",
                (&v3, Some("p")),
                (&encode(&r).unwrap(), Some("p"))
            ));
            assert!(decode(&v3, "c1", Some("q"))
                .unwrap_err()
                .contains("checksum"));
        }
    }

    /// `record` as format 2 (7 elements, 8 with a snapshot; no checksum) wrote it.
    fn format_2(r: &CheckpointRecord) -> String {
        let Value::Array(mut items) = serde_json::from_str(&format_3(r)).unwrap() else {
            unreachable!()
        };
        items.pop();
        if items.last() == Some(&Value::Null) {
            items.pop();
        }
        serde_json::to_string(&items).unwrap()
    }

    #[test]
    fn format_2_records_still_load() {
        let r = record("c1");
        let v2 = format_2(&r);
        assert!(v2.ends_with(r#"{"user":"u"}]"#), "{v2}");
        assert_eq!(decode(&v2, "c1", Some("p")).unwrap(), r);
        let mut s = r.clone();
        s.snapshot = Some(json!({"v": 1}).into());
        let v2 = format_2(&s);
        assert!(has_snapshot(&v2) && v2.ends_with(r#"{"v":1}]"#), "{v2}");
        assert_eq!(decode(&v2, "c1", Some("p")).unwrap(), s);
        assert!(same(
            "c1",
            (&v2, Some("p")),
            (&encode(&s).unwrap(), Some("p"))
        ));
    }

    #[test]
    fn every_changed_byte_is_an_error() {
        let mut with_snapshot = record("c1");
        with_snapshot.snapshot = Some(json!({"v": 1, "values": {"n": 3}}).into());
        let mut engine_metadata = record("c1");
        engine_metadata.metadata = json!({"source": "loop", "step": 4, "parents": {}});
        let mut both = engine_metadata.clone();
        both.snapshot = with_snapshot.snapshot.clone();
        let mut other_source = record("c1");
        other_source.source = "fork".into();
        let records = [
            record("c1"),
            with_snapshot,
            engine_metadata,
            both,
            other_source,
        ];
        let texts = records
            .iter()
            .map(|r| encode(r).unwrap())
            .chain(records[..2].iter().map(format_3));
        for text in texts {
            let mut changes = 0;
            for i in 0..text.len() {
                for b in 0u8..128 {
                    let mut bytes = text.clone().into_bytes();
                    if bytes[i] == b {
                        continue;
                    }
                    bytes[i] = b;
                    let changed = String::from_utf8(bytes).unwrap();
                    let e = decode(&changed, "c1", Some("p"))
                        .expect_err(&format!("byte {i} set to {b}: {changed}"));
                    assert!(!e.is_empty());
                    changes += 1;
                }
                // Cut short, or a byte left out.
                assert!(decode(&text[..i], "c1", Some("p")).is_err());
                let (a, b) = (&text[..i], &text[i + 1..]);
                assert!(
                    decode(&format!("{a}{b}"), "c1", Some("p")).is_err(),
                    "{a}{b}"
                );
            }
            assert!(changes > 100 * 127, "{changes}");
            // The ids beside the text are checked too.
            for (id, parent) in [("c2", Some("p")), ("c1", Some("q")), ("c1", None)] {
                let e = decode(&text, id, parent).unwrap_err();
                assert!(e.contains("checksum does not match"), "{e}");
            }
            // Nor can it pass for a record of another format by a change of its tag
            // (format 2's have no checksum), nor by cutting off its checksum.
            for tag in ["[2,", "[3,", "[4,", "[5,"] {
                let other_tag = format!("{tag}{}", &text[3..]);
                if other_tag != text {
                    assert!(decode(&other_tag, "c1", Some("p")).is_err(), "{other_tag}");
                }
                if text.starts_with("[4,") || text.starts_with("[5,") {
                    let (body, _) = text.rsplit_once(',').unwrap();
                    let cut = format!("{tag}{}]", &body[3..]);
                    assert!(decode(&cut, "c1", Some("p")).is_err(), "{cut}");
                }
            }
        }
    }

    #[test]
    fn format_1_records_still_load() {
        let r = record("c1");
        let v1 = serde_json::to_string(&r).unwrap();
        assert_eq!(decode(&v1, "ignored", None).unwrap(), r);
        let mut s = r.clone();
        s.snapshot = Some(json!({"v": 1}).into());
        let v1 = serde_json::to_string(&s).unwrap();
        assert!(has_snapshot(&v1));
        assert_eq!(decode(&v1, "c1", Some("p")).unwrap(), s);
    }

    #[test]
    fn a_record_is_the_same_in_both_formats() {
        let r = record("c1");
        let (v1, v2) = (serde_json::to_string(&r).unwrap(), encode(&r).unwrap());
        assert!(same("c1", (&v1, Some("p")), (&v2, Some("p"))));
        assert!(same("c1", (&v2, Some("p")), (&v2, Some("p"))));
        assert!(!same("c1", (&v2, Some("p")), (&v2, Some("q"))));
        let mut other = r.clone();
        other.step = 5;
        let o2 = encode(&other).unwrap();
        assert!(!same("c1", (&v1, Some("p")), (&o2, Some("p"))));
        assert!(!same("c1", (&v2, Some("p")), (&o2, Some("p"))));
    }

    #[test]
    fn unreadable_texts_say_why() {
        for (text, want) in [
            ("[9,1]", "format"),
            ("[2,1,\"loop\",0.0,[],[],{}]x", "trailing"),
            ("[2,\"x\",\"loop\",0.0,[],[],{}]", "step"),
            ("[2,1,\"loop\",0.0,[[1,2,3]],[],{}]", "write"),
            ("[2,1,\"loop\",0.0,[],[7],{}]", "next task"),
            ("[2,1,\"loop\",0.0,[],[],5]", "metadata"),
            ("7", "neither"),
            (
                "[2,1,\"loop\",0.0,[],[],{},null,1]",
                "checksum does not match",
            ),
            ("[2,1,\"loop\",0.0,[],[],{},null,01]", "number"),
            (
                "[2,1,\"loop\",0.0,[],[],{},null,\"1\"]",
                "not a number as written",
            ),
            (
                "[2,1,\"loop\",0.0,[],[],{},null, 1]",
                "not a number as written",
            ),
        ] {
            let e = decode(text, "c", None).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
