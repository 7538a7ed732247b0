//! When a run's checkpoints reach the store: LangGraph's `durability`.
//!
//! - `Sync` (the default): each step is saved before the next one starts. In a step
//!   of several tasks, each finished task's writes are saved in the background as it
//!   finishes (as LangGraph does), so that a crash before the step's end does not run
//!   it again; the step's checkpoint then waits for those saves, and writes still
//!   queued go unsaved, as the checkpoint holds them (its save would delete them).
//!   The last task to finish in a step that completes is not saved on its own: the
//!   checkpoint, saved next, holds its writes.
//! - `Async`: a step's save is queued and the run goes on; one background task hands
//!   the queue to the checkpointer, in order, as one [`Checkpointer::put_many`] (one
//!   transaction) each time the previous one is done, so the saves of the steps that
//!   ran meanwhile share a commit (and, on PostgreSQL, a round trip). A save that
//!   fails (a conflict with another writer, the store gone) fails the run at its next
//!   save, or when it ends. A crash can lose the steps queued or under way (their
//!   nodes run again on resume).
//! - `Exit`: nothing is written until the run ends (completed, paused or failed);
//!   then one checkpoint, the run's last, is saved with the pending writes of its
//!   step, as one `put_many` (see `exit`). A crash loses the whole run.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::super::engine::Graph;
use super::super::error::GraphError;
use crate::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, PendingWrite, Put};

/// See the module docs; LangGraph's names for it are in [`crate::graph::options`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    #[default]
    Sync,
    Async,
    Exit,
}

/// The saves an `Async` run queued and its background task has not taken yet.
#[derive(Default)]
struct Queue {
    puts: Vec<Put>,
    /// Whether a background task is saving (it takes the queue when it is done).
    saving: bool,
    /// Why a background save failed: the run fails with it.
    failed: Option<CheckpointError>,
}

/// A run's saves to its checkpointer, under its durability.
pub(super) struct Saves {
    cp: Arc<dyn Checkpointer>,
    thread: String,
    durability: Durability,
    /// `Async`: what waits for the background task, and that task.
    queue: Arc<Mutex<Queue>>,
    saver: Mutex<Option<JoinHandle<()>>>,
    /// What the run saves later: under `Exit`, everything, when it ends; under `Sync`,
    /// the input checkpoint's batch, with the first step's checkpoint.
    deferred: Mutex<Vec<Put>>,
}

impl Saves {
    pub fn new(cp: Arc<dyn Checkpointer>, thread: String, durability: Durability) -> Saves {
        Saves {
            cp,
            thread,
            durability,
            queue: Arc::default(),
            saver: Mutex::new(None),
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// Saves `record` as the thread's next checkpoint (`put_next`), or with `put` (a
    /// fork's first); with `pending` writes of its own (the input of an input
    /// checkpoint), saved first in the same batch (one transaction).
    ///
    /// `hold` (an input checkpoint): under `Sync` the batch is saved with the next
    /// record, in the same transaction. The step after an input checkpoint runs no
    /// node (its one task, `START`, outputs the input), so it ends without waiting on
    /// anything: one commit per run is saved, and the store never holds the input
    /// checkpoint without the step that follows it, nor that step without its input.
    /// A run that ends before that step's checkpoint (a router failed) saves the
    /// batch as it ends. (Not held when a stream shows checkpoints as they are made:
    /// its reader may look the input checkpoint up at once.)
    pub async fn record(
        &self,
        pending: Vec<PendingWrite>,
        record: CheckpointRecord,
        put: bool,
        hold: bool,
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Sync {
            self.drop_queued_writes_of(record.parent_id.as_deref());
            self.settle().await?;
        }
        let mut puts = Vec::with_capacity(2);
        if !pending.is_empty() {
            puts.push(Put::Writes {
                checkpoint_id: record.id.clone(),
                writes: pending,
            });
        }
        puts.push(Put::Record {
            record: Box::new(record),
            next: !put,
        });
        match self.durability {
            Durability::Sync => {
                let batch = {
                    let mut held = lock(&self.deferred);
                    if hold {
                        held.extend(puts);
                        return Ok(());
                    }
                    let mut batch = std::mem::take(&mut *held);
                    batch.extend(puts);
                    batch
                };
                self.save(batch).await
            }
            Durability::Async => {
                for p in puts {
                    self.enqueue(p)?;
                }
                Ok(())
            }
            Durability::Exit => {
                lock(&self.deferred).extend(puts);
                Ok(())
            }
        }
    }

    /// `Sync`: the step from `parent` is about to be saved, with all its tasks'
    /// writes in its record; those of them still queued need not be saved first.
    fn drop_queued_writes_of(&self, parent: Option<&str>) {
        let Some(parent) = parent else { return };
        lock(&self.queue)
            .puts
            .retain(|p| !matches!(p, Put::Writes { checkpoint_id, .. } if checkpoint_id == parent));
    }

    /// Saves `writes` of tasks of the step that runs from `checkpoint_id`: those of a
    /// task that `finished` (in a step of several) under `Sync` in the background (see
    /// the module docs), an interrupt's before this returns.
    pub async fn writes(
        &self,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
        finished: bool,
    ) -> Result<(), GraphError> {
        let p = Put::Writes {
            checkpoint_id: checkpoint_id.to_owned(),
            writes,
        };
        match self.durability {
            Durability::Sync if !finished => self.save(vec![p]).await,
            // Queued behind the checkpoint they refer to.
            Durability::Sync | Durability::Async => self.enqueue(p),
            Durability::Exit => {
                lock(&self.deferred).push(p);
                Ok(())
            }
        }
    }

    /// `Exit`: `record` is what the run saves (as the thread's next unless `fork`),
    /// with the pending writes kept for it; those kept for the checkpoints before it,
    /// which were never saved, go. `continued`: writes of its parent's step saved
    /// again after it (its save drops them).
    pub fn keep_at_exit(&self, record: CheckpointRecord, fork: bool, continued: Vec<PendingWrite>) {
        let mut kept = lock(&self.deferred);
        kept.retain(
            |p| matches!(p, Put::Writes { checkpoint_id, .. } if *checkpoint_id == record.id),
        );
        if let (Some(parent), false) = (&record.parent_id, continued.is_empty()) {
            kept.push(Put::Writes {
                checkpoint_id: parent.clone(),
                writes: continued,
            });
        }
        kept.insert(
            0,
            Put::Record {
                record: Box::new(record),
                next: !fork,
            },
        );
    }

    /// `Exit`: the run saves nothing; what was kept for it goes.
    pub fn discard_at_exit(&self) {
        lock(&self.deferred).clear();
    }

    /// Waits for the queued saves (`Async`) and saves what was kept (`Exit`, or an
    /// input checkpoint held under `Sync`): called when the run ends, however it ends.
    pub async fn finish(&self) -> Result<(), GraphError> {
        self.settle().await?;
        let kept = std::mem::take(&mut *lock(&self.deferred));
        if kept.is_empty() {
            return Ok(());
        }
        self.save(kept).await
    }

    async fn save(&self, mut puts: Vec<Put>) -> Result<(), GraphError> {
        let (cp, t) = (&self.cp, self.thread.as_str());
        // One put: its own call (what `put_many` would do, without the batch's work).
        let r = match (puts.len(), puts.pop()) {
            (1, Some(Put::Record { record, next: true })) => cp.put_next(t, *record).await,
            (1, Some(Put::Record { record, .. })) => cp.put(t, *record).await,
            (
                1,
                Some(Put::Writes {
                    checkpoint_id,
                    writes,
                }),
            ) => cp.put_writes(t, &checkpoint_id, writes).await,
            (_, Some(last)) => {
                puts.push(last);
                cp.put_many(t, puts).await
            }
            (_, None) => Ok(()),
        };
        r.map_err(Graph::cp_err)
    }

    /// Queues `p` for the background task, starting one when none runs; the error of
    /// a save that failed, if one did.
    fn enqueue(&self, p: Put) -> Result<(), GraphError> {
        let mut q = lock(&self.queue);
        if let Some(e) = &q.failed {
            return Err(GraphError::Checkpoint(e.clone()));
        }
        q.puts.push(p);
        if !q.saving {
            q.saving = true;
            let (cp, thread, queue) = (self.cp.clone(), self.thread.clone(), self.queue.clone());
            let h = tokio::spawn(save_queued(cp, thread, queue));
            *lock(&self.saver) = Some(h);
        }
        Ok(())
    }

    /// Waits until the queue is saved (or a save failed).
    async fn settle(&self) -> Result<(), GraphError> {
        loop {
            let h = lock(&self.saver).take();
            let Some(h) = h else { break };
            if let Err(e) = h.await {
                let mut q = lock(&self.queue);
                q.saving = false;
                q.failed.get_or_insert(CheckpointError::storage(format!(
                    "saving a checkpoint of thread {:?} stopped: {e}",
                    self.thread
                )));
            }
        }
        match &lock(&self.queue).failed {
            Some(e) => Err(GraphError::Checkpoint(e.clone())),
            None => Ok(()),
        }
    }
}

/// The background task of an `Async` run: saves the queue, batch after batch, until it
/// is empty or a save fails.
async fn save_queued(cp: Arc<dyn Checkpointer>, thread: String, queue: Arc<Mutex<Queue>>) {
    loop {
        let batch = {
            let mut q = lock(&queue);
            if q.puts.is_empty() || q.failed.is_some() {
                q.saving = false;
                return;
            }
            std::mem::take(&mut q.puts)
        };
        if let Err(e) = cp.put_many(&thread, batch).await {
            let mut q = lock(&queue);
            q.failed = Some(e);
            q.saving = false;
            return;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
