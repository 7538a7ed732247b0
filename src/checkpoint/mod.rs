//! Checkpoints: what a thread's runs leave behind, written as deltas.
//!
//! A checkpoint record holds the writes of one step (not the state), the tasks to run
//! next and where it came from. A state is rebuilt by replaying the writes of the
//! chain of records from the thread's first checkpoint, through the channels'
//! reducers. Storage therefore grows with what the steps wrote, never with the size
//! of the state times the number of steps.

pub mod memory;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

pub use memory::MemorySaver;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSaver;

#[derive(Debug, Clone, Error)]
#[error("{0}")]
pub struct CheckpointError(pub String);

pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;

/// A task to run from a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub node: String,
    /// The argument of a task made by `Send`, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<Value>,
}

/// One write to a channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    /// The node that wrote it (or `__input__`, `__update__`, `__engine__`).
    pub node: String,
    pub channel: String,
    pub value: Value,
}

/// One checkpoint: the writes that lead to it from its parent, and what runs next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    pub id: String,
    pub parent_id: Option<String>,
    pub step: i64,
    /// `input`, `loop`, `update` or `fork`.
    pub source: String,
    pub writes: Vec<Write>,
    pub next: Vec<TaskRecord>,
    /// Seconds since the Unix epoch.
    pub created_at: f64,
    #[serde(default)]
    pub metadata: Value,
}

/// A write of a task that finished inside a step that has not (yet) completed, kept
/// so that a resumed run does not run the task again. Channels starting with `__`
/// are the engine's own: `__done__` (finished, no writes), `__interrupt__`,
/// `__resume__`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite {
    pub task_id: String,
    pub node: String,
    pub channel: String,
    pub value: Value,
}

/// Where checkpoints are kept. Implementations must make a `put` durable (or at least
/// handed to the OS) before returning: a run only moves on once its step is saved.
#[async_trait]
pub trait Checkpointer: Send + Sync {
    /// Saves a checkpoint; the pending writes of its parent are dropped with it (the
    /// record now holds them).
    async fn put(&self, thread_id: &str, record: CheckpointRecord) -> Result<()>;
    /// Saves writes of tasks that finished in the step that runs from `checkpoint_id`.
    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<()>;
    /// The latest checkpoint of the thread (the last one saved), or the one with `id`.
    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>>;
    /// The records from the thread's first checkpoint to `id`, oldest first.
    async fn chain(&self, thread_id: &str, id: &str) -> Result<Vec<CheckpointRecord>>;
    /// Checkpoints newest first, at most `limit`, older than `before` when given.
    async fn list(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<CheckpointRecord>>;
    async fn pending_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Vec<PendingWrite>>;
    async fn delete_thread(&self, thread_id: &str) -> Result<()>;
}

pub(crate) fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
