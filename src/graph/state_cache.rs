//! The latest channels of the threads a compiled graph ran lately, so that a run
//! continuing a thread in the same process does not load again what it already holds.
//!
//! An entry is keyed by thread and holds the checkpoint id the channels belong to. A
//! run uses it only when that id is the checkpoint it starts from, as just read from
//! the store: checkpoint ids are never reused, so a match is the same state even when
//! other savers or processes write the store; a thread advanced elsewhere has another
//! latest id and is loaded from the store.
//!
//! Messages and JSON values are immutable and kept as they are (a messages list is a
//! persistent structure: keeping it costs a pointer). Values owned by the host (Python
//! objects) may be changed in place by whoever holds them after the run, so they are
//! kept as their checkpoint JSON and decoded afresh, as a load would. That JSON is the
//! one the value's write was checkpointed with ([`super::HostValue::to_json`] is
//! shared), so keeping it costs a pointer too, not an encoding per run.
//!
//! The cache holds at most [`STATE_CACHE_THREADS`] threads, the least recently used
//! going first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::channel::Channel;
use super::codec::encode_shared;
use super::engine::Graph;
use super::error::GraphError;
use super::value::Val;

/// How many threads a compiled graph keeps the latest channels of.
pub const STATE_CACHE_THREADS: usize = 128;

enum Kept {
    Live(Option<Val>),
    Encoded(Arc<Value>),
}

struct Entry {
    checkpoint_id: String,
    values: Vec<Kept>,
    versions: Vec<u64>,
    since_snapshot: usize,
    used: u64,
}

#[derive(Default)]
pub(super) struct StateCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    clock: u64,
}

impl StateCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets a thread (deleted, or its state unknown after a failure).
    pub fn forget(&self, thread_id: &str) {
        self.lock().entries.remove(thread_id);
    }
}

impl Graph {
    /// The channels of `thread_id` at `checkpoint_id` and the records since their
    /// snapshot, if the cache holds exactly that checkpoint.
    pub(super) fn cached_state(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<(Vec<Channel>, usize)>, GraphError> {
        let (kept, versions, since) = {
            let mut inner = self.state_cache.lock();
            inner.clock += 1;
            let clock = inner.clock;
            let Some(e) = inner.entries.get_mut(thread_id) else {
                return Ok(None);
            };
            if e.checkpoint_id != checkpoint_id {
                return Ok(None);
            }
            e.used = clock;
            let kept: Vec<Result<Option<Val>, Arc<Value>>> = e
                .values
                .iter()
                .map(|k| match k {
                    Kept::Live(v) => Ok(v.clone()),
                    Kept::Encoded(j) => Err(j.clone()),
                })
                .collect();
            (kept, e.versions.clone(), e.since_snapshot)
        };
        // Decoding host values may call into the host: outside the lock.
        let mut chans = self.fresh_channels();
        for (i, ((c, k), version)) in chans.iter_mut().zip(kept).zip(versions).enumerate() {
            c.value = match k {
                Ok(v) => v,
                Err(json) => Some(self.codec.decode_shared(&self.names()[i], json)?),
            };
            c.version = version;
        }
        Ok(Some((chans, since)))
    }

    /// Keeps `chans`, the state of `thread_id` at `checkpoint_id`. A host value that
    /// cannot be turned into JSON (a reducer's result, say: the checkpoint holds the
    /// writes, which could) leaves the thread uncached; its next run loads it.
    pub(super) fn cache_state(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        chans: &[Channel],
        since_snapshot: usize,
    ) {
        let values = chans
            .iter()
            .zip(self.names().iter())
            .map(|(c, name)| match &c.value {
                Some(v @ Val::Host(_)) => Ok(Kept::Encoded(encode_shared(name, v)?)),
                other => Ok(Kept::Live(other.clone())),
            })
            .collect::<Result<Vec<_>, GraphError>>();
        let Ok(values) = values else {
            self.state_cache.forget(thread_id);
            return;
        };
        let mut inner = self.state_cache.lock();
        inner.clock += 1;
        let used = inner.clock;
        if inner.entries.len() >= STATE_CACHE_THREADS && !inner.entries.contains_key(thread_id) {
            if let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            {
                inner.entries.remove(&oldest);
            }
        }
        inner.entries.insert(
            thread_id.to_owned(),
            Entry {
                checkpoint_id: checkpoint_id.to_owned(),
                values,
                versions: chans.iter().map(|c| c.version).collect(),
                since_snapshot,
                used,
            },
        );
    }
}
