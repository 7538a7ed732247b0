//! When a run's checkpoints reach the store: LangGraph's `durability`.
//!
//! - `Sync` (the default): each step is saved before the next one starts.
//! - `Async`: a step's save runs while the next step's tasks run; the run waits for
//!   it before the next save (and before any write against it), so saves stay in
//!   order and a conflict with another writer still fails the run. A crash can lose
//!   the step whose save was under way (its nodes run again on resume).
//! - `Exit`: nothing is written until the run ends (completed, paused or failed);
//!   then every step's checkpoint and writes are saved, in order. A crash loses the
//!   whole run.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::super::engine::Graph;
use super::super::error::GraphError;
use crate::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, PendingWrite};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    #[default]
    Sync,
    Async,
    Exit,
}

impl Durability {
    /// `"sync"`, `"async"` or `"exit"`, as LangGraph names them.
    pub fn parse(s: &str) -> Option<Durability> {
        match s {
            "sync" => Some(Durability::Sync),
            "async" => Some(Durability::Async),
            "exit" => Some(Durability::Exit),
            _ => None,
        }
    }
}

/// One save, kept until the run ends (`Exit`).
enum Save {
    /// A checkpoint: `put` (a fork's first) or `put_next`.
    Record {
        record: Box<CheckpointRecord>,
        put: bool,
    },
    Writes {
        checkpoint_id: String,
        writes: Vec<PendingWrite>,
    },
}

/// A run's saves to its checkpointer, under its durability.
pub(super) struct Saves {
    cp: Arc<dyn Checkpointer>,
    thread: String,
    durability: Durability,
    /// `Async`: the save under way.
    inflight: Mutex<Option<JoinHandle<Result<(), CheckpointError>>>>,
    /// `Exit`: what the run saves when it ends.
    deferred: Mutex<Vec<Save>>,
}

impl Saves {
    pub fn new(cp: Arc<dyn Checkpointer>, thread: String, durability: Durability) -> Saves {
        Saves {
            cp,
            thread,
            durability,
            inflight: Mutex::new(None),
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// Saves `record` as the thread's next checkpoint (`put_next`), or with `put` (a
    /// fork's first).
    pub async fn record(&self, record: CheckpointRecord, put: bool) -> Result<(), GraphError> {
        match self.durability {
            Durability::Sync => self.put(record, put).await,
            Durability::Async => {
                self.settle().await?;
                let (cp, thread) = (self.cp.clone(), self.thread.clone());
                let h = tokio::spawn(async move {
                    if put {
                        cp.put(&thread, record).await
                    } else {
                        cp.put_next(&thread, record).await
                    }
                });
                *self.inflight.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                Ok(())
            }
            Durability::Exit => {
                self.defer(Save::Record {
                    record: Box::new(record),
                    put,
                });
                Ok(())
            }
        }
    }

    /// Saves `writes` of tasks of the step that runs from `checkpoint_id`.
    pub async fn writes(
        &self,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), GraphError> {
        match self.durability {
            Durability::Exit => {
                self.defer(Save::Writes {
                    checkpoint_id: checkpoint_id.to_owned(),
                    writes,
                });
                Ok(())
            }
            _ => {
                // Writes refer to a checkpoint: it must be saved first.
                self.settle().await?;
                self.cp
                    .put_writes(&self.thread, checkpoint_id, writes)
                    .await
                    .map_err(Graph::cp_err)
            }
        }
    }

    /// Waits for the save under way (`Async`) and saves what was kept (`Exit`): called
    /// when the run ends, however it ends.
    pub async fn finish(&self) -> Result<(), GraphError> {
        self.settle().await?;
        let kept = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|p| p.into_inner()));
        for s in kept {
            match s {
                Save::Record { record, put } => self.put(*record, put).await?,
                Save::Writes {
                    checkpoint_id,
                    writes,
                } => self
                    .cp
                    .put_writes(&self.thread, &checkpoint_id, writes)
                    .await
                    .map_err(Graph::cp_err)?,
            }
        }
        Ok(())
    }

    async fn put(&self, record: CheckpointRecord, put: bool) -> Result<(), GraphError> {
        if put {
            self.cp.put(&self.thread, record).await
        } else {
            self.cp.put_next(&self.thread, record).await
        }
        .map_err(Graph::cp_err)
    }

    /// Waits for the save under way, if any.
    async fn settle(&self) -> Result<(), GraphError> {
        let h = self
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match h {
            None => Ok(()),
            Some(h) => match h.await {
                Ok(r) => r.map_err(Graph::cp_err),
                Err(e) => Err(GraphError::Checkpoint(CheckpointError::storage(format!(
                    "saving a checkpoint of thread {:?} stopped: {e}",
                    self.thread
                )))),
            },
        }
    }

    fn defer(&self, s: Save) {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(s);
    }
}
