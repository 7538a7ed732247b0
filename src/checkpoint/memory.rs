//! Checkpoints in memory, as deltas: per thread, the records and pending writes.
//!
//! Records are kept as compact JSON text, with the position of their parent: a
//! `serde_json::Value` tree takes several times its text's size, and a thread's
//! memory should be about what its steps wrote. Reading a chain parses only the
//! records on it. Besides its text a record takes 48 bytes and no other allocation
//! (but one for a snapshot kept in pieces, whose text it shares with the engine):
//! its id as 16 bytes when it is a UUID (the engine's ids are), its parent as a
//! position in the thread (W6 keeps thousands of short threads, five runs of three
//! records each).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use super::record;
use super::seal::{ReadError, RecordKey, Records};
use super::stalled::{awaits_answer, Claim};
use super::{
    advanced_conflict, dedupe_writes, now_secs, same_id_conflict, ChainFrom, CheckpointError,
    CheckpointRecord, Checkpointer, History, PendingWrite, Put, Result, Writes,
};

/// A checkpoint id as a thread keeps it: the 16 bytes of a UUID written in its
/// canonical form (lower-case, hyphenated: the engine's ids), else its text. An id is
/// kept by every record and named again by its child: 16 bytes in place instead of a
/// 36-byte string behind a pointer.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Id {
    Uuid([u8; 16]),
    Text(Box<str>),
}

/// The UUID whose canonical text is exactly `id` (not one of its other spellings:
/// the text must come back as it was put).
fn canonical_uuid(id: &str) -> Option<[u8; 16]> {
    if id.len() != 36 {
        return None;
    }
    let u = uuid::Uuid::try_parse(id).ok()?;
    let mut buf = uuid::Uuid::encode_buffer();
    (u.hyphenated().encode_lower(&mut buf) == id).then(|| *u.as_bytes())
}

impl Id {
    fn new(id: &str) -> Self {
        match canonical_uuid(id) {
            Some(b) => Id::Uuid(b),
            None => Id::Text(id.into()),
        }
    }

    /// Whether this is the id `id` (whose UUID form, if any, is `uuid`).
    fn is(&self, id: &str, uuid: Option<[u8; 16]>) -> bool {
        match self {
            Id::Uuid(b) => uuid == Some(*b),
            Id::Text(t) => uuid.is_none() && **t == *id,
        }
    }

    fn text(&self) -> Cow<'_, str> {
        match self {
            Id::Uuid(b) => Cow::Owned(uuid::Uuid::from_bytes(*b).hyphenated().to_string()),
            Id::Text(t) => Cow::Borrowed(t),
        }
    }

    /// The bytes this id takes (what [`MemorySaver::approx_bytes`] counts).
    fn len(&self) -> usize {
        match self {
            Id::Uuid(b) => b.len(),
            Id::Text(t) => t.len(),
        }
    }
}

/// Where a record's parent is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    /// The record has none (a thread's first).
    None,
    /// The record at this position of the thread (nearly always the one before).
    At(u32),
    /// Not in the thread when the record was put (a `put` may name any parent): its
    /// id is the first this many bytes of the record's [`Stored::text`].
    Named(u32),
}

/// One record: 48 bytes and one allocation (its text) for a record with an engine id.
struct Stored {
    id: Id,
    parent: Parent,
    /// The record's stored text ([`record::encode`]), after its parent's id when that
    /// is [`Parent::Named`].
    text: Text,
}

// W6 keeps thousands of short threads: a record's fixed part is what they cost.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Stored>() == 48);

/// A record's stored text: whole, or without its snapshot's pieces, which it shares
/// with the engine (see [`record::encode_parted`]). 16 bytes either way.
enum Text {
    Whole(Box<str>),
    Parted(Box<(Box<str>, record::Pieces)>),
}

impl Text {
    fn new(text: String, pieces: Option<record::Pieces>) -> Self {
        match pieces {
            None => Text::Whole(text.into_boxed_str()),
            Some(p) => Text::Parted(Box::new((text.into_boxed_str(), p))),
        }
    }

    /// The text, without the pieces.
    fn str(&self) -> &str {
        match self {
            Text::Whole(t) => t,
            Text::Parted(tp) => &tp.0,
        }
    }

    /// The text after `prefix` (a parent's id put before it: the pieces' offset is in
    /// the text after it, so it stays true).
    fn prefixed(self, prefix: &str) -> Self {
        match self {
            Text::Whole(t) => Text::Whole(format!("{prefix}{t}").into_boxed_str()),
            Text::Parted(tp) => {
                let (t, p) = *tp;
                Text::Parted(Box::new((format!("{prefix}{t}").into_boxed_str(), p)))
            }
        }
    }
}

impl Stored {
    /// The record's stored text, without a named parent's id: joined with its
    /// snapshot's pieces when it keeps them apart (a record is read back less often
    /// than it is written).
    fn json(&self) -> Cow<'_, str> {
        match &self.text {
            Text::Whole(_) => Cow::Borrowed(self.head()),
            Text::Parted(tp) => Cow::Owned(tp.1.join(self.head())),
        }
    }

    /// The start of [`Stored::json`], up to its snapshot's pieces when it keeps them
    /// apart (a record's tag is before them).
    fn head(&self) -> &str {
        let text = self.text.str();
        match self.parent {
            Parent::Named(n) => &text[n as usize..],
            _ => text,
        }
    }

    /// The bytes of its text, pieces included.
    fn len(&self) -> usize {
        match &self.text {
            Text::Whole(t) => t.len(),
            Text::Parted(tp) => tp.0.len() + tp.1.len(),
        }
    }
}

#[derive(Default)]
struct Thread {
    records: Vec<Stored>,
    /// Record positions by id, kept only once a thread has [`INDEX_FROM`] records:
    /// below that a scan is as fast, and most threads are short (W6 counts the bytes
    /// of thousands of them).
    index: HashMap<Id, usize>,
    pending: HashMap<Box<str>, Vec<PendingWrite>>,
}

/// The number of records from which a thread keeps an index of them.
const INDEX_FROM: usize = 32;

impl Thread {
    /// The position of record `id`.
    fn find(&self, id: &str) -> Option<usize> {
        let uuid = canonical_uuid(id);
        if self.records.len() >= INDEX_FROM {
            let key = match uuid {
                Some(b) => Id::Uuid(b),
                None => Id::Text(id.into()),
            };
            return self.index.get(&key).copied();
        }
        self.records.iter().rposition(|r| r.id.is(id, uuid))
    }

    /// The id of the parent of the record at `i`.
    fn parent_id(&self, i: usize) -> Option<Cow<'_, str>> {
        let r = &self.records[i];
        match r.parent {
            Parent::None => None,
            Parent::At(p) => Some(self.records[p as usize].id.text()),
            Parent::Named(n) => Some(Cow::Borrowed(&r.text.str()[..n as usize])),
        }
    }

    /// The position of the parent of the record at `i`: `Ok(None)` for a first record,
    /// `Err(id)` for a parent not (or no longer) in the thread.
    fn parent_at(&self, i: usize) -> std::result::Result<Option<usize>, &str> {
        let r = &self.records[i];
        match r.parent {
            Parent::None => Ok(None),
            Parent::At(p) => Ok(Some(p as usize)),
            Parent::Named(n) => {
                let p = &r.text.str()[..n as usize];
                self.find(p).map(Some).ok_or(p)
            }
        }
    }

    fn push(&mut self, stored: Stored) {
        self.records.push(stored);
        let n = self.records.len();
        if n == INDEX_FROM {
            self.reindex();
        } else if n > INDEX_FROM {
            self.index.insert(self.records[n - 1].id.clone(), n - 1);
        }
    }

    fn reindex(&mut self) {
        self.index = if self.records.len() >= INDEX_FROM {
            (self.records.iter().enumerate())
                .map(|(i, r)| (r.id.clone(), i))
                .collect()
        } else {
            HashMap::new()
        };
    }

    /// `put` (`put_next` when `next`) of `record`, whose JSON is `json`.
    fn store(
        &mut self,
        thread_id: &str,
        record: CheckpointRecord,
        json: record::Parted,
        next: bool,
    ) -> Result<()> {
        if let Some(i) = self.find(record.id.as_str()) {
            return if self.records[i].json() == json.joined()
                && self.parent_id(i).as_deref() == record.parent_id.as_deref()
            {
                Ok(())
            } else {
                Err(same_id_conflict(thread_id, &record.id))
            };
        }
        if next {
            let latest = self.records.last().map(|r| r.id.text());
            if latest.as_deref() != record.parent_id.as_deref() {
                return Err(advanced_conflict(
                    thread_id,
                    record.parent_id.as_deref(),
                    latest.as_deref(),
                ));
            }
        }
        let record::Parted { text: json, pieces } = json;
        let (parent, text) = match &record.parent_id {
            None => (Parent::None, json),
            Some(p) => {
                if let Some(ws) = self.pending.get_mut(p.as_str()) {
                    ws.retain(|w| crate::checkpoint::kept_write(&w.channel));
                    if ws.is_empty() {
                        self.pending.remove(p.as_str());
                    }
                }
                if self.pending.is_empty() {
                    // Give the table's memory back: most threads have no pending writes.
                    self.pending = HashMap::new();
                }
                match self.find(p).and_then(|i| u32::try_from(i).ok()) {
                    Some(i) => (Parent::At(i), json),
                    None => (Parent::Named(named_len(p)?), format!("{p}{json}")),
                }
            }
        };
        self.push(Stored {
            id: Id::new(&record.id),
            parent,
            text: Text::new(text, pieces),
        });
        Ok(())
    }

    /// `put_writes` of `writes` to `checkpoint_id`.
    fn add_writes(&mut self, checkpoint_id: &str, writes: Vec<PendingWrite>) {
        let stored = self.pending.entry(checkpoint_id.into()).or_default();
        let new = dedupe_writes(stored, writes);
        stored.extend(new);
    }

    /// Forgets the records from position `n` on (undoing a batch). The records before
    /// name only records before them as parents by position.
    fn truncate(&mut self, n: usize) {
        for r in self.records.drain(n..) {
            self.index.remove(&r.id);
        }
        if self.records.len() < INDEX_FROM {
            self.index = HashMap::new();
        }
    }

    /// Deletes the records whose ids are in `gone`, and their pending writes. A record
    /// left whose parent goes keeps that parent's id by name; the others' positions
    /// are renumbered.
    fn delete(&mut self, gone: &HashSet<Id>) -> Result<()> {
        let kept: Vec<bool> = self.records.iter().map(|r| !gone.contains(&r.id)).collect();
        if kept.iter().all(|k| *k) {
            self.pending.retain(|id, _| !gone.contains(&Id::new(id)));
            return Ok(());
        }
        let mut to = vec![0u32; kept.len()];
        let mut n = 0u32;
        for (i, k) in kept.iter().enumerate() {
            to[i] = n;
            n += u32::from(*k);
        }
        // The parents about to go, by name (checked before anything changes).
        let orphaned = (0..self.records.len())
            .map(|i| match self.records[i].parent {
                Parent::At(p) if kept[i] && !kept[p as usize] => {
                    let p = self.records[p as usize].id.text().into_owned();
                    Ok(Some((named_len(&p)?, p)))
                }
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let records = std::mem::take(&mut self.records);
        for ((r, keep), orphan) in records.into_iter().zip(&kept).zip(orphaned) {
            if !keep {
                continue;
            }
            let r = match (r.parent, orphan) {
                (_, Some((n, p))) => Stored {
                    parent: Parent::Named(n),
                    text: r.text.prefixed(&p),
                    id: r.id,
                },
                (Parent::At(p), None) => Stored {
                    parent: Parent::At(to[p as usize]),
                    ..r
                },
                _ => r,
            };
            self.records.push(r);
        }
        self.pending.retain(|id, _| !gone.contains(&Id::new(id)));
        self.reindex();
        Ok(())
    }

    /// The checkpoint `id`, or the latest when `id` is `None`.
    fn record_at(&self, id: Option<&str>, codec: &Records) -> Result<Option<CheckpointRecord>> {
        let i = match id {
            Some(id) => self.find(id),
            None => self.records.len().checked_sub(1),
        };
        i.map(|i| self.parse(i, codec)).transpose()
    }

    fn parse(&self, i: usize, codec: &Records) -> Result<CheckpointRecord> {
        let r = &self.records[i];
        let id = r.id.text();
        codec
            .decode(&r.json(), &id, self.parent_id(i).as_deref())
            .map_err(|e| match e {
                ReadError::Unreadable(e) => CheckpointError::serialization(format!(
                    "MemorySaver: the stored checkpoint {id:?} is unreadable: {e}"
                )),
                ReadError::Key(m) => {
                    CheckpointError::Integrity(format!("MemorySaver: checkpoint {id:?} {m}"))
                }
            })
    }
}

/// The length of a parent id kept by name, which must fit the record's 32-bit field.
fn named_len(parent: &str) -> Result<u32> {
    u32::try_from(parent.len()).map_err(|_| {
        CheckpointError::storage(format!(
            "MemorySaver: a parent checkpoint id of {} bytes is too long (at most 4 GiB)",
            parent.len()
        ))
    })
}

/// Keeps every checkpoint in this process's memory (lost when it exits).
///
/// [`close`](Checkpointer::close) drops the checkpoints; the saver refuses calls after
/// it, as every saver does.
#[derive(Default)]
pub struct MemorySaver {
    threads: Mutex<HashMap<String, Thread>>,
    /// Claims of stalled threads: owner and expiry (seconds since the epoch). Locked
    /// after `threads`, never alone while checking a thread.
    claims: Mutex<HashMap<String, (String, f64)>>,
    /// When each thread last saved pending writes (a live run's other heartbeat).
    written: Mutex<HashMap<String, f64>>,
    closed: AtomicBool,
    /// How records are stored: with a checksum, or under a key.
    codec: Records,
}

const CLOSED: &str = "the MemorySaver was closed; its checkpoints are gone, use a new one";

impl MemorySaver {
    pub fn new() -> Self {
        Self::default()
    }

    /// A saver whose records are authenticated (and encrypted, if the key says so)
    /// with `key` (see [`super::seal`]).
    pub fn with_key(mut self, key: RecordKey) -> Self {
        self.codec = Records::new(Some(key));
        self
    }

    fn to_json(&self, record: &CheckpointRecord) -> Result<record::Parted> {
        self.codec.encode_parted(record).map_err(|e| {
            CheckpointError::serialization(format!("MemorySaver: cannot store checkpoint: {e}"))
        })
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Thread>) -> R) -> R {
        f(&mut self.threads.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Like [`with`](Self::with), for the trait's calls: an error once closed.
    fn open_with<R>(&self, f: impl FnOnce(&mut HashMap<String, Thread>) -> Result<R>) -> Result<R> {
        let mut ts = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        if self.closed.load(Ordering::Acquire) {
            return Err(CheckpointError::storage(CLOSED));
        }
        f(&mut ts)
    }

    /// `put`, and `put_next` when `next`: the check and the write under one lock.
    fn store(&self, thread_id: &str, record: CheckpointRecord, next: bool) -> Result<()> {
        let json = self.to_json(&record)?;
        self.open_with(|ts| {
            let t = ts.entry(thread_id.to_owned()).or_default();
            t.store(thread_id, record, json, next)
        })
    }

    /// Notes that `thread_id` saved pending writes now (see `written`).
    fn wrote(&self, thread_id: &str) {
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(thread_id.to_owned(), now_secs());
    }

    /// The stalled threads (see [`super::stalled`]), idle longest first, with when
    /// their latest checkpoint was saved.
    fn stalled(
        &self,
        ts: &HashMap<String, Thread>,
        claims: &HashMap<String, (String, f64)>,
        stale_after: Duration,
        now: f64,
    ) -> Result<Vec<(f64, String)>> {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let cutoff = now - stale_after.as_secs_f64();
        let mut out = Vec::new();
        // A subgraph's namespace is resumed through its thread, never on its own.
        for (id, t) in ts.iter().filter(|(id, _)| !id.contains(super::NS_SEP)) {
            let Some(i) = t.records.len().checked_sub(1) else {
                continue;
            };
            if claims.get(id).is_some_and(|(_, until)| *until > now) {
                continue;
            }
            let latest = t.parse(i, &self.codec)?;
            if latest.next.is_empty()
                || latest.created_at > cutoff
                || written.get(id).is_some_and(|at| *at > cutoff)
            {
                continue;
            }
            if t.pending
                .get(latest.id.as_str())
                .is_some_and(|ws| awaits_answer(ws))
            {
                continue;
            }
            out.push((latest.created_at, id.clone()));
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        Ok(out)
    }

    /// Approximate bytes held by checkpoints: the records' stored text and ids (16
    /// bytes for a UUID; a parent is a position, or its id when not in the thread), and
    /// the pending writes' JSON.
    pub fn approx_bytes(&self) -> usize {
        self.with(|ts| {
            ts.values()
                .map(|t| {
                    (t.records.iter())
                        .map(|r| r.len() + r.id.len())
                        .sum::<usize>()
                        + t.pending
                            .values()
                            .flatten()
                            .map(|w| serde_json::to_string(w).map(|s| s.len()).unwrap_or(0))
                            .sum::<usize>()
                })
                .sum()
        })
    }
}

#[async_trait]
impl Checkpointer for MemorySaver {
    async fn put(&self, thread_id: &str, record: CheckpointRecord) -> Result<()> {
        self.store(thread_id, record, false)
    }

    async fn put_next(&self, thread_id: &str, record: CheckpointRecord) -> Result<()> {
        self.store(thread_id, record, true)
    }

    async fn put_many(&self, thread_id: &str, puts: Vec<Put>) -> Result<()> {
        // Serialise first, outside the lock; then apply all under it, or undo.
        let puts = Put::encode_each(
            puts,
            |record, next| {
                let json = self.to_json(&record)?;
                Ok(Err((*record, json, next)))
            },
            |checkpoint_id, writes| Ok(Ok((checkpoint_id, writes))),
        )?;
        let wrote = puts.iter().any(Result::is_ok);
        self.open_with(|ts| {
            let t = ts.entry(thread_id.to_owned()).or_default();
            let (records, pending) = (t.records.len(), t.pending.clone());
            for p in puts {
                let r = match p {
                    Err((record, json, next)) => t.store(thread_id, record, json, next),
                    Ok((checkpoint_id, writes)) => {
                        t.add_writes(&checkpoint_id, writes);
                        Ok(())
                    }
                };
                if let Err(e) = r {
                    t.truncate(records);
                    t.pending = pending;
                    return Err(e);
                }
            }
            if wrote {
                self.wrote(thread_id);
            }
            Ok(())
        })
    }

    async fn put_writes(&self, thread_id: &str, checkpoint_id: &str, writes: Writes) -> Result<()> {
        self.open_with(|ts| {
            ts.entry(thread_id.to_owned())
                .or_default()
                .add_writes(checkpoint_id, writes);
            self.wrote(thread_id);
            Ok(())
        })
    }

    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>> {
        self.open_with(|ts| match ts.get(thread_id) {
            Some(t) => t.record_at(id, &self.codec),
            None => Ok(None),
        })
    }

    /// The ancestors of `id` up to the root, or to the nearest record holding a
    /// snapshot (told by its text, without parsing the others).
    async fn chain_from(&self, thread_id: &str, id: &str, from: ChainFrom) -> History {
        self.open_with(|ts| {
            let not_found = || CheckpointError::not_found(thread_id, id);
            let t = ts.get(thread_id).ok_or_else(not_found)?;
            let mut cur = Some(t.find(id).ok_or_else(not_found)?);
            let mut out = Vec::new();
            while let Some(i) = cur {
                out.push(t.parse(i, &self.codec)?);
                if from == ChainFrom::Snapshot && record::has_snapshot(t.records[i].head()) {
                    break;
                }
                cur = t.parent_at(i).map_err(|p| {
                    CheckpointError::storage(format!(
                        "MemorySaver: checkpoint chain is broken: the ancestor {p:?} of \
                         {id:?} is missing in thread {thread_id:?}"
                    ))
                })?;
                if out.len() > t.records.len() {
                    return Err(CheckpointError::storage(format!(
                        "MemorySaver: checkpoint chain of {id:?} in thread {thread_id:?} has a cycle"
                    )));
                }
            }
            out.reverse();
            Ok(out)
        })
    }

    async fn list(&self, thread_id: &str, limit: Option<usize>, before: Option<&str>) -> History {
        self.open_with(|ts| {
            let Some(t) = ts.get(thread_id) else {
                return Ok(Vec::new());
            };
            let end = before.and_then(|b| t.find(b)).unwrap_or(t.records.len());
            (0..end)
                .rev()
                .take(limit.unwrap_or(usize::MAX))
                .map(|i| t.parse(i, &self.codec))
                .collect()
        })
    }

    async fn pending_writes(&self, thread_id: &str, checkpoint_id: &str) -> Result<Writes> {
        self.open_with(|ts| {
            Ok(ts
                .get(thread_id)
                .and_then(|t| t.pending.get(checkpoint_id).cloned())
                .unwrap_or_default())
        })
    }

    async fn get_with_writes(
        &self,
        thread_id: &str,
        id: Option<&str>,
    ) -> Result<Option<(CheckpointRecord, Writes)>> {
        // Under one hold of the lock: the checkpoint and its writes as one state.
        self.open_with(|ts| {
            let Some(t) = ts.get(thread_id) else {
                return Ok(None);
            };
            let Some(record) = t.record_at(id, &self.codec)? else {
                return Ok(None);
            };
            let writes = t
                .pending
                .get(record.id.as_str())
                .cloned()
                .unwrap_or_default();
            Ok(Some((record, writes)))
        })
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        let prefix = super::ns_prefix(thread_id);
        self.open_with(|ts| {
            ts.remove(thread_id);
            ts.retain(|k, _| !k.starts_with(&prefix));
            self.claims
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(thread_id);
            self.written
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|k, _| k != thread_id && !k.starts_with(&prefix));
            Ok(())
        })
    }

    async fn thread_keys(&self) -> Result<Vec<String>> {
        self.open_with(|ts| {
            Ok(ts
                .iter()
                .filter(|(_, t)| !t.records.is_empty())
                .map(|(k, _)| k.clone())
                .collect())
        })
    }

    async fn delete_checkpoints(&self, thread_id: &str, ids: Vec<String>) -> Result<()> {
        self.open_with(|ts| match ts.get_mut(thread_id) {
            Some(t) => t.delete(&ids.iter().map(|id| Id::new(id)).collect()),
            None => Ok(()),
        })
    }

    async fn close(&self) -> Result<()> {
        let mut ts = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        self.closed.store(true, Ordering::Release);
        ts.clear();
        self.claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        Ok(())
    }

    async fn list_stalled(
        &self,
        stale_after: Duration,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        self.open_with(|ts| {
            let claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
            let found = self.stalled(ts, &claims, stale_after, now_secs())?;
            Ok(found
                .into_iter()
                .take(limit.unwrap_or(usize::MAX))
                .map(|(_, id)| id)
                .collect())
        })
    }

    async fn claim(&self, claim: &Claim) -> Result<Vec<String>> {
        self.open_with(|ts| {
            let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
            let now = now_secs();
            let found = self.stalled(ts, &claims, claim.stale_after, now)?;
            let until = now + claim.lease.as_secs_f64();
            Ok(found
                .into_iter()
                .take(claim.limit)
                .map(|(_, id)| {
                    claims.insert(id.clone(), (claim.owner.clone(), until));
                    id
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Snapshot;

    fn rec(id: &str, parent: Option<&str>) -> CheckpointRecord {
        CheckpointRecord {
            id: id.into(),
            parent_id: parent.map(Into::into),
            step: 0,
            snapshot: None,
            source: "loop".into(),
            writes: vec![],
            next: vec![],
            created_at: 0.0,
            metadata: serde_json::Value::Null,
        }
    }

    #[tokio::test]
    async fn stored_records_keep_their_ids_and_parents() {
        let s = MemorySaver::new();
        s.put("t", rec("a", None)).await.unwrap();
        s.put("t", rec("b", Some("a"))).await.unwrap();
        let chain = s.chain("t", "b").await.unwrap();
        assert_eq!(
            chain.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let t = s.threads.lock().unwrap();
        assert_eq!(t["t"].records[1].id.text(), "b");
        assert!(t["t"].records[1].parent == Parent::At(0));
    }

    #[tokio::test]
    async fn uuid_ids_are_kept_in_16_bytes_and_come_back_as_put() {
        let s = MemorySaver::new();
        let a = "0b7e5a7c-4f2d-4c1e-9a3b-1d2e3f405162";
        // Another spelling of a UUID is kept as text: it must read back unchanged.
        let b = "0B7E5A7C-4F2D-4C1E-9A3B-1D2E3F405163";
        s.put("t", rec(a, None)).await.unwrap();
        s.put("t", rec(b, Some(a))).await.unwrap();
        let chain = s.chain("t", b).await.unwrap();
        assert_eq!(
            chain
                .iter()
                .map(|r| (r.id.as_str(), r.parent_id.as_deref()))
                .collect::<Vec<_>>(),
            [(a, None), (b, Some(a))]
        );
        let t = s.threads.lock().unwrap();
        assert!(matches!(t["t"].records[0].id, Id::Uuid(_)));
        assert!(matches!(t["t"].records[1].id, Id::Text(_)));
    }

    #[tokio::test]
    async fn a_parent_outside_the_thread_is_kept_by_name_and_found_later() {
        let s = MemorySaver::new();
        s.put("t", rec("b", Some("a"))).await.unwrap();
        assert_eq!(
            s.get("t", Some("b"))
                .await
                .unwrap()
                .unwrap()
                .parent_id
                .as_deref(),
            Some("a")
        );
        assert!(matches!(
            s.chain("t", "b").await,
            Err(CheckpointError::Storage(_))
        ));
        s.put("t", rec("a", None)).await.unwrap();
        let ids: Vec<String> = s
            .chain("t", "b")
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        // The same put again is a retry, with the parent named or positioned alike.
        s.put("t", rec("b", Some("a"))).await.unwrap();
    }

    /// A record whose snapshot the engine wrote in pieces (as `snapshot_of` does).
    fn with_pieces(id: &str, parent: Option<&str>, value: &str) -> CheckpointRecord {
        let piece = crate::checkpoint::Piece::from;
        CheckpointRecord {
            snapshot: Some(Snapshot::Pieces(vec![
                [piece(r#"{"v":1,"values":{"a":"#)].into(),
                [piece(value)].into(),
                [piece(r#"},"versions":{"a":1}}"#)].into(),
            ])),
            ..rec(id, parent)
        }
    }

    #[tokio::test]
    async fn a_snapshot_in_pieces_is_shared_not_copied_and_reads_back_whole() {
        let s = MemorySaver::new();
        let b = with_pieces("b", Some("a"), r#"[1,"x",{"k":"é"}]"#);
        let Some(Snapshot::Pieces(pieces)) = &b.snapshot else {
            unreachable!()
        };
        let value = pieces[1][0].clone();
        s.put("t", rec("a", None)).await.unwrap();
        s.put("t", b.clone()).await.unwrap();
        // The saver holds the engine's piece itself, not a copy of its bytes.
        {
            let threads = s.threads.lock().unwrap();
            let Text::Parted(tp) = &threads["t"].records[1].text else {
                panic!("the record was stored whole")
            };
            assert!(crate::checkpoint::Piece::shares(&tp.1.parts[1][0], &value));
        }
        let got = s.get("t", Some("b")).await.unwrap().unwrap();
        assert_eq!(got, b);
        assert_eq!(
            got.snapshot.unwrap().json().unwrap()["values"]["a"],
            serde_json::json!([1, "x", {"k": "é"}])
        );
        // Its text is the one-piece encoding's, checksum included.
        let text = s.threads.lock().unwrap()["t"].records[1]
            .json()
            .into_owned();
        assert_eq!(text, record::encode(&b).unwrap());
        // The snapshot is found as such; a retry is no conflict, another value is.
        let chain = s.chain_from_snapshot("t", "b").await.unwrap();
        assert_eq!(
            chain.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
        s.put("t", b.clone()).await.unwrap();
        let other = with_pieces("b", Some("a"), "[2]");
        assert!(s.put("t", other).await.is_err());
        // Its parent deleted, it keeps the parent's id before its text, pieces after.
        s.delete_checkpoints("t", vec!["a".into()]).await.unwrap();
        let got = s.get("t", Some("b")).await.unwrap().unwrap();
        assert_eq!(got.parent_id.as_deref(), Some("a"));
        assert_eq!(got, b);
        assert_eq!(s.approx_bytes(), record::encode(&b).unwrap().len() + 1 + 1);
    }

    #[tokio::test]
    async fn deleting_renumbers_parents_and_names_the_deleted_ones() {
        let s = MemorySaver::new();
        s.put("t", rec("a", None)).await.unwrap();
        s.put("t", rec("b", Some("a"))).await.unwrap();
        s.put("t", rec("c", Some("b"))).await.unwrap();
        s.put("t", rec("d", Some("a"))).await.unwrap();
        s.delete_checkpoints("t", vec!["b".into()]).await.unwrap();
        let d = s.chain("t", "d").await.unwrap();
        assert_eq!(
            d.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["a", "d"]
        );
        let c = s.get("t", Some("c")).await.unwrap().unwrap();
        assert_eq!(c.parent_id.as_deref(), Some("b"));
        assert!(matches!(
            s.chain("t", "c").await,
            Err(CheckpointError::Storage(_))
        ));
        let listed: Vec<String> = s
            .list("t", None, None)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(listed, ["d", "c", "a"]);
    }

    #[tokio::test]
    async fn long_threads_find_records_through_the_index() {
        let s = MemorySaver::new();
        let ids: Vec<String> = (0..INDEX_FROM * 2)
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        for (i, id) in ids.iter().enumerate() {
            let parent = i.checked_sub(1).map(|p| ids[p].as_str());
            s.put_next("t", rec(id, parent)).await.unwrap();
        }
        let chain = s.chain("t", &ids[ids.len() - 1]).await.unwrap();
        assert_eq!(chain.into_iter().map(|r| r.id).collect::<Vec<_>>(), ids);
        let mid = s
            .get("t", Some(&ids[INDEX_FROM + 3]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(mid.parent_id.as_deref(), Some(ids[INDEX_FROM + 2].as_str()));
    }
}
