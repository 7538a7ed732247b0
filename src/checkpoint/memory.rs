//! Checkpoints in memory, as deltas: per thread, the records and pending writes.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{walk_chain, CheckpointRecord, Checkpointer, PendingWrite, Result};

#[derive(Default)]
struct Thread {
    records: Vec<CheckpointRecord>,
    index: HashMap<String, usize>,
    pending: HashMap<String, Vec<PendingWrite>>,
}

/// Keeps every checkpoint in this process's memory (lost when it exits).
#[derive(Default)]
pub struct MemorySaver {
    threads: Mutex<HashMap<String, Thread>>,
}

impl MemorySaver {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Thread>) -> R) -> R {
        f(&mut self.threads.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Approximate bytes held by checkpoints (JSON text of the records and writes).
    pub fn approx_bytes(&self) -> usize {
        self.with(|ts| {
            ts.values()
                .map(|t| {
                    t.records
                        .iter()
                        .map(|r| serde_json::to_string(r).map(|s| s.len()).unwrap_or(0))
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
        self.with(|ts| {
            let t = ts.entry(thread_id.to_owned()).or_default();
            if let Some(p) = &record.parent_id {
                t.pending.remove(p);
            }
            t.index.insert(record.id.clone(), t.records.len());
            t.records.push(record);
        });
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<()> {
        self.with(|ts| {
            ts.entry(thread_id.to_owned())
                .or_default()
                .pending
                .entry(checkpoint_id.to_owned())
                .or_default()
                .extend(writes)
        });
        Ok(())
    }

    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>> {
        Ok(self.with(|ts| {
            let t = ts.get(thread_id)?;
            match id {
                Some(id) => t.index.get(id).map(|&i| t.records[i].clone()),
                None => t.records.last().cloned(),
            }
        }))
    }

    async fn chain(&self, thread_id: &str, id: &str) -> Result<Vec<CheckpointRecord>> {
        let records = self.with(|ts| ts.get(thread_id).map(|t| t.records.clone()));
        walk_chain(records.unwrap_or_default(), id)
    }

    async fn list(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<CheckpointRecord>> {
        Ok(self.with(|ts| {
            let Some(t) = ts.get(thread_id) else {
                return Vec::new();
            };
            let end = before
                .and_then(|b| t.index.get(b).copied())
                .unwrap_or(t.records.len());
            t.records[..end]
                .iter()
                .rev()
                .take(limit.unwrap_or(usize::MAX))
                .cloned()
                .collect()
        }))
    }

    async fn pending_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Vec<PendingWrite>> {
        Ok(self.with(|ts| {
            ts.get(thread_id)
                .and_then(|t| t.pending.get(checkpoint_id).cloned())
                .unwrap_or_default()
        }))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        self.with(|ts| ts.remove(thread_id));
        Ok(())
    }
}
