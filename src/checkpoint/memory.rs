//! Checkpoints in memory, as deltas: per thread, the records and pending writes.
//!
//! Records are kept as compact JSON text, with the position of their parent: a
//! `serde_json::Value` tree takes several times its text's size, and a thread's
//! memory should be about what its steps wrote. Reading a chain parses only the
//! records on it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use super::record;
use super::stalled::{awaits_answer, check_claim};
use super::{
    advanced_conflict, dedupe_writes, now_secs, same_id_conflict, ChainFrom, CheckpointError,
    CheckpointRecord, Checkpointer, PendingWrite, Put, Result,
};

struct Stored {
    id: Box<str>,
    parent: Option<Box<str>>,
    json: Box<str>,
}

#[derive(Default)]
struct Thread {
    records: Vec<Stored>,
    /// Record positions by id, kept only once a thread has [`INDEX_FROM`] records:
    /// below that a scan is as fast, and most threads are short (W6 counts the bytes
    /// of thousands of them).
    index: HashMap<Box<str>, usize>,
    pending: HashMap<Box<str>, Vec<PendingWrite>>,
}

/// The number of records from which a thread keeps an index of them.
const INDEX_FROM: usize = 32;

impl Thread {
    /// The position of record `id`.
    fn find(&self, id: &str) -> Option<usize> {
        if self.records.len() >= INDEX_FROM {
            return self.index.get(id).copied();
        }
        self.records.iter().rposition(|r| &*r.id == id)
    }

    fn push(&mut self, stored: Stored) {
        self.records.push(stored);
        let n = self.records.len();
        if n == INDEX_FROM {
            self.index = (self.records.iter().enumerate())
                .map(|(i, r)| (r.id.clone(), i))
                .collect();
        } else if n > INDEX_FROM {
            self.index.insert(self.records[n - 1].id.clone(), n - 1);
        }
    }

    /// `put` (`put_next` when `next`) of `record`, whose JSON is `json`.
    fn store(
        &mut self,
        thread_id: &str,
        record: CheckpointRecord,
        json: String,
        next: bool,
    ) -> Result<()> {
        if let Some(i) = self.find(record.id.as_str()) {
            let stored = &self.records[i];
            return if *stored.json == *json
                && stored.parent.as_deref() == record.parent_id.as_deref()
            {
                Ok(())
            } else {
                Err(same_id_conflict(thread_id, &record.id))
            };
        }
        let latest = self.records.last().map(|r| &*r.id);
        if next && latest != record.parent_id.as_deref() {
            return Err(advanced_conflict(
                thread_id,
                record.parent_id.as_deref(),
                latest,
            ));
        }
        if let Some(p) = &record.parent_id {
            self.pending.remove(p.as_str());
            if self.pending.is_empty() {
                // Give the table's memory back: most threads have no pending writes.
                self.pending = HashMap::new();
            }
        }
        let parent = record.parent_id.map(Into::into);
        self.push(Stored {
            id: record.id.into(),
            parent,
            json: json.into(),
        });
        Ok(())
    }

    /// `put_writes` of `writes` to `checkpoint_id`.
    fn add_writes(&mut self, checkpoint_id: &str, writes: Vec<PendingWrite>) {
        let stored = self.pending.entry(checkpoint_id.into()).or_default();
        let new = dedupe_writes(stored, writes);
        stored.extend(new);
    }

    /// Forgets the records from position `n` on (undoing a batch).
    fn truncate(&mut self, n: usize) {
        for r in self.records.drain(n..) {
            self.index.remove(&r.id);
        }
        if self.records.len() < INDEX_FROM {
            self.index = HashMap::new();
        }
    }

    fn parse(&self, i: usize) -> Result<CheckpointRecord> {
        let r = &self.records[i];
        record::decode(&r.json, &r.id, r.parent.as_deref()).map_err(|e| {
            CheckpointError::serialization(format!(
                "MemorySaver: the stored checkpoint {:?} is unreadable: {e}",
                self.records[i].id
            ))
        })
    }
}

fn to_json(record: &CheckpointRecord) -> Result<String> {
    record::encode(record).map_err(|e| {
        CheckpointError::serialization(format!("MemorySaver: cannot store checkpoint: {e}"))
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
}

const CLOSED: &str = "the MemorySaver was closed; its checkpoints are gone, use a new one";

impl MemorySaver {
    pub fn new() -> Self {
        Self::default()
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
        let json = to_json(&record)?;
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

    /// The ancestors of `id` up to the root, or to the nearest record holding a
    /// snapshot (told by its text, without parsing the others).
    fn read_chain(
        &self,
        thread_id: &str,
        id: &str,
        from: ChainFrom,
    ) -> Result<Vec<CheckpointRecord>> {
        self.open_with(|ts| {
            let not_found = || CheckpointError::not_found(thread_id, id);
            let t = ts.get(thread_id).ok_or_else(not_found)?;
            let mut cur = Some(t.find(id).ok_or_else(not_found)?);
            let mut out = Vec::new();
            while let Some(i) = cur {
                out.push(t.parse(i)?);
                let stored = &t.records[i];
                if from == ChainFrom::Snapshot && record::has_snapshot(&stored.json) {
                    break;
                }
                cur = match &stored.parent {
                    None => None,
                    Some(p) => Some(t.find(p).ok_or_else(|| {
                        CheckpointError::storage(format!(
                            "MemorySaver: checkpoint chain is broken: the ancestor {p:?} of \
                             {id:?} is missing in thread {thread_id:?}"
                        ))
                    })?),
                };
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
            let latest = t.parse(i)?;
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

    /// Approximate bytes held by checkpoints: the records' stored text and ids, and
    /// the pending writes' JSON.
    pub fn approx_bytes(&self) -> usize {
        self.with(|ts| {
            ts.values()
                .map(|t| {
                    (t.records.iter())
                        .map(|r| {
                            r.json.len() + r.id.len() + r.parent.as_ref().map_or(0, |p| p.len())
                        })
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
        let puts = puts
            .into_iter()
            .map(|p| match p {
                Put::Record { record, next } => {
                    let json = to_json(&record)?;
                    Ok(Err((*record, json, next)))
                }
                Put::Writes {
                    checkpoint_id,
                    writes,
                } => Ok(Ok((checkpoint_id, writes))),
            })
            .collect::<Result<Vec<_>>>()?;
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

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<()> {
        self.open_with(|ts| {
            ts.entry(thread_id.to_owned())
                .or_default()
                .add_writes(checkpoint_id, writes);
            self.wrote(thread_id);
            Ok(())
        })
    }

    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>> {
        self.open_with(|ts| {
            let Some(t) = ts.get(thread_id) else {
                return Ok(None);
            };
            let i = match id {
                Some(id) => t.find(id),
                None => t.records.len().checked_sub(1),
            };
            i.map(|i| t.parse(i)).transpose()
        })
    }

    async fn chain(&self, thread_id: &str, id: &str) -> Result<Vec<CheckpointRecord>> {
        self.read_chain(thread_id, id, ChainFrom::Root)
    }

    async fn chain_from_snapshot(
        &self,
        thread_id: &str,
        id: &str,
    ) -> Result<Vec<CheckpointRecord>> {
        self.read_chain(thread_id, id, ChainFrom::Snapshot)
    }

    async fn list(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<CheckpointRecord>> {
        self.open_with(|ts| {
            let Some(t) = ts.get(thread_id) else {
                return Ok(Vec::new());
            };
            let end = before.and_then(|b| t.find(b)).unwrap_or(t.records.len());
            (0..end)
                .rev()
                .take(limit.unwrap_or(usize::MAX))
                .map(|i| t.parse(i))
                .collect()
        })
    }

    async fn pending_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Vec<PendingWrite>> {
        self.open_with(|ts| {
            Ok(ts
                .get(thread_id)
                .and_then(|t| t.pending.get(checkpoint_id).cloned())
                .unwrap_or_default())
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

    async fn delete_checkpoints(&self, thread_id: &str, ids: Vec<String>) -> Result<()> {
        self.open_with(|ts| {
            if let Some(t) = ts.get_mut(thread_id) {
                let gone: std::collections::HashSet<&str> =
                    ids.iter().map(String::as_str).collect();
                t.records.retain(|r| !gone.contains(&*r.id));
                t.pending.retain(|id, _| !gone.contains(&**id));
                t.index = if t.records.len() >= INDEX_FROM {
                    (t.records.iter().enumerate())
                        .map(|(i, r)| (r.id.clone(), i))
                        .collect()
                } else {
                    HashMap::new()
                };
            }
            Ok(())
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

    async fn claim_stalled(
        &self,
        owner: &str,
        stale_after: Duration,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<String>> {
        check_claim(owner, stale_after, lease)?;
        self.open_with(|ts| {
            let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
            let now = now_secs();
            let found = self.stalled(ts, &claims, stale_after, now)?;
            let until = now + lease.as_secs_f64();
            Ok(found
                .into_iter()
                .take(limit)
                .map(|(_, id)| {
                    claims.insert(id.clone(), (owner.to_owned(), until));
                    id
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(&*t["t"].records[1].id, "b");
    }
}
