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
//! kept as their checkpoint JSON text and decoded afresh, as a load would. That text
//! is the one the value's snapshot was written with (the pieces of
//! [`super::HostValue::to_pieces`] are shared), so keeping it costs a pointer per piece,
//! not an encoding per run.
//!
//! The cache holds at most [`STATE_CACHE_THREADS`] threads and [`STATE_CACHE_BYTES`]
//! of kept values, the least recently used going first; a state larger than that
//! alone is not kept. (By count alone, 128 threads of a state holding ~10 MB of nested
//! dicts kept 13.5 GB of JSON trees: LangGraph's `wide_state` benchmarks, a new thread
//! per run, ran out of memory.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::channel::Channel;
use super::codec::encode_pieces;
use super::engine::Graph;
use super::error::GraphError;
use super::value::Val;
use crate::checkpoint::Piece;

/// How many threads a compiled graph keeps the latest channels of.
pub const STATE_CACHE_THREADS: usize = 128;

/// How many bytes the kept values of all threads hold at most: a kept host value
/// weighs its text, a JSON value [`NODE_BYTES`] per node of its tree.
pub const STATE_CACHE_BYTES: usize = 100 << 20;

/// About what one node of a `serde_json::Value` tree (a value, an array item or an
/// object entry) weighs in memory, with its allocation.
const NODE_BYTES: usize = 96;

/// The number of JSON nodes in `v`, counted up to `cap` (a walk, no allocation).
fn nodes(v: &Value, cap: usize) -> usize {
    let mut n = 1;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        if n > cap {
            break;
        }
        match v {
            Value::Array(a) => {
                n += a.len();
                stack.extend(a.iter().filter(|x| x.is_array() || x.is_object()));
            }
            Value::Object(o) => {
                n += o.len();
                stack.extend(o.values().filter(|x| x.is_array() || x.is_object()));
            }
            _ => {}
        }
    }
    n
}

enum Kept {
    Live(Option<Val>),
    Encoded(Arc<[Piece]>),
}

struct Entry {
    checkpoint_id: String,
    values: Vec<Kept>,
    versions: Vec<u64>,
    since_snapshot: usize,
    used: u64,
    /// Bytes held by `values` (see [`STATE_CACHE_BYTES`]).
    weight: usize,
}

#[derive(Default)]
pub(super) struct StateCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    clock: u64,
    /// The sum of the entries' weights.
    weight: usize,
}

impl StateCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets a thread (deleted, or its state unknown after a failure).
    pub fn forget(&self, thread_id: &str) {
        let mut inner = self.lock();
        if let Some(e) = inner.entries.remove(thread_id) {
            inner.weight -= e.weight;
        }
    }
}

impl Inner {
    /// Drops the least recently used entries until one of `weight` more fits.
    fn make_room(&mut self, thread_id: &str, weight: usize) {
        if let Some(e) = self.entries.remove(thread_id) {
            self.weight -= e.weight;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= STATE_CACHE_THREADS
                || self.weight + weight > STATE_CACHE_BYTES)
        {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            if let Some(e) = oldest.and_then(|k| self.entries.remove(&k)) {
                self.weight -= e.weight;
            }
        }
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
            let kept: Vec<Result<Option<Val>, Arc<[Piece]>>> = e
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
                Err(text) => Some(self.codec.decode_text(&self.names()[i], text)?),
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
                Some(v @ Val::Host(_)) => Ok(Kept::Encoded(encode_pieces(name, v)?)),
                other => Ok(Kept::Live(other.clone())),
            })
            .collect::<Result<Vec<_>, GraphError>>();
        let Ok(values) = values else {
            self.state_cache.forget(thread_id);
            return;
        };
        let weight = values
            .iter()
            .map(|k| match k {
                Kept::Encoded(text) => Piece::total_len(text),
                Kept::Live(Some(Val::Json(j))) => {
                    nodes(j, STATE_CACHE_BYTES / NODE_BYTES).saturating_mul(NODE_BYTES)
                }
                Kept::Live(_) => NODE_BYTES,
            })
            .fold(0usize, usize::saturating_add);
        let mut inner = self.state_cache.lock();
        inner.clock += 1;
        let used = inner.clock;
        if weight > STATE_CACHE_BYTES {
            if let Some(e) = inner.entries.remove(thread_id) {
                inner.weight -= e.weight;
            }
            return;
        }
        inner.make_room(thread_id, weight);
        inner.weight += weight;
        inner.entries.insert(
            thread_id.to_owned(),
            Entry {
                checkpoint_id: checkpoint_id.to_owned(),
                values,
                versions: chans.iter().map(|c| c.version).collect(),
                since_snapshot,
                used,
                weight,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(used: u64, weight: usize) -> Entry {
        Entry {
            checkpoint_id: String::new(),
            values: Vec::new(),
            versions: Vec::new(),
            since_snapshot: 0,
            used,
            weight,
        }
    }

    #[test]
    fn nodes_counts_every_value_up_to_the_cap() {
        let v = json!({"a": [1, 2, {"b": "c"}], "d": null});
        // The object, its 2 entries, the array's 3 items, the inner object's entry.
        assert_eq!(nodes(&v, 100), 7);
        assert!(nodes(&json!(vec![0; 1000]), 10) <= 1001);
    }

    #[test]
    fn the_oldest_go_until_a_new_state_fits_the_node_budget() {
        let mut inner = Inner::default();
        for (i, w) in [(1, STATE_CACHE_BYTES / 2), (2, STATE_CACHE_BYTES / 4)] {
            inner.entries.insert(format!("t{i}"), entry(i, w));
            inner.weight += w;
        }
        inner.make_room("t3", STATE_CACHE_BYTES / 2);
        assert!(!inner.entries.contains_key("t1") && inner.entries.contains_key("t2"));
        assert_eq!(inner.weight, STATE_CACHE_BYTES / 4);
    }
}
