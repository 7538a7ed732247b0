//! How a [`CheckpointRecord`] is stored: the text every saver keeps per record.
//!
//! # Format 5 (written since repeated pieces are stored once)
//!
//! Format 4 but for the snapshot, which a record holding one whose pieces repeat
//! stores as its distinct pieces and the order they come in: see [`shared`]. Tagged
//! [`TAG_5_SHARED`] (`8`, [`SNAPSHOT_PREFIX_5`]). A record without such a snapshot is
//! written in format 4, which an ironloop reading formats 1 to 4 reads; one that
//! reads formats 1 to 4 refuses a format-5 record (its tag), asking for an upgrade.
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
//!   node's name, or `[node, arg]` for a `Send`'s; any other is `[id, node, arg]`,
//!   and a `Send`'s with a timeout of its own `[id, node, arg, timeout]` (added
//!   later: records without one read as before).
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

mod decode;
mod encode;
mod shared;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;

pub use decode::decode;
pub(super) use decode::decode_authenticated;
pub use encode::{encode, encode_body, encode_parted, Parted, Pieces};

/// The first element of a format-2 or -3 record without a snapshot.
pub const TAG: u64 = 2;
/// The first element of a format-2 or -3 record holding a snapshot.
pub const TAG_SNAPSHOT: u64 = 3;

/// The first element of a format-4 record without a snapshot.
pub const TAG_4: u64 = 4;
/// The first element of a format-4 record holding a snapshot.
pub const TAG_4_SNAPSHOT: u64 = 5;

/// The first element of a format-5 record (it holds a snapshot, stored as its
/// distinct pieces).
pub const TAG_5_SHARED: u64 = 8;

/// The number of elements of a format-3 record (with or without a snapshot).
const FORMAT_3_LEN: usize = 9;

/// The sources a format-4 record stores as their index (see the module docs).
const SOURCES: [&str; 3] = ["input", "loop", "update"];

/// How the text of a format-2 or -3 record holding a snapshot starts.
pub const SNAPSHOT_PREFIX: &str = "[3,";
/// How the text of a format-4 record holding a snapshot starts.
pub const SNAPSHOT_PREFIX_4: &str = "[5,";
/// How the text of a format-5 record starts (it holds a snapshot).
pub const SNAPSHOT_PREFIX_5: &str = "[8,";
/// How the text of a format-1 record holding a snapshot starts (and no other record's:
/// every other format-1 record starts with `{"id":`).
pub const SNAPSHOT_PREFIX_V1: &str = "{\"snapshot\":";

/// Whether the stored text `text` holds a snapshot, without parsing it.
pub fn has_snapshot(text: &str) -> bool {
    text.starts_with(SNAPSHOT_PREFIX_4)
        || text.starts_with(SNAPSHOT_PREFIX_5)
        || text.starts_with(super::seal::SNAPSHOT_PREFIX_SEALED)
        || text.starts_with(SNAPSHOT_PREFIX)
        || text.starts_with(SNAPSHOT_PREFIX_V1)
}

/// The CRC-32 of a format-3 or -4 record: of its id and its parent's (each with its length,
/// so that no two pairs give the same bytes) and of `body`, its text before the last
/// comma. The ids are in it because the stores keep them beside the text: a damaged
/// `parent_id` would chain the record to another one.
pub fn checksum(id: &str, parent_id: Option<&str>, body: &str) -> u32 {
    checksum_of(id, parent_id, [body])
}

/// [`checksum`] of a body held in consecutive parts (a record kept in pieces).
fn checksum_of<'a>(
    id: &str,
    parent_id: Option<&str>,
    body: impl IntoIterator<Item = &'a str>,
) -> u32 {
    let mut h = crc32fast::Hasher::new();
    frame_ids(id, parent_id, |b| h.update(b));
    for part in body {
        h.update(part.as_bytes());
    }
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
