//! Checkpoints: what a thread's runs leave behind, written as deltas.
//!
//! A checkpoint record holds the writes of one step (not the state), the tasks to run
//! next and where it came from. A state is rebuilt by replaying the writes of the
//! chain of records through the channels' reducers. Storage therefore grows with what
//! the steps wrote, never with the size of the state times the number of steps.
//!
//! Every few steps the engine also puts a *snapshot* in a record (the channels'
//! values there, see `graph::snapshot`), so that loading a thread replays the deltas
//! after the nearest snapshot ([`Checkpointer::chain_from_snapshot`]) instead of the
//! whole chain. How a record is stored, and how a store tells a record holding a
//! snapshot by its first bytes without parsing it, is [`record`]'s; records under a
//! user's key (authenticated, optionally encrypted) are [`seal`]'s.

pub mod caller;
pub mod lease;
pub mod memory;
pub mod piece;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod record;
pub mod seal;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod stalled;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

pub use lease::{AskGuard, RunLease, StopAsk};
pub use memory::MemorySaver;
pub use piece::{join_runs, pieces_of_runs, runs_len, Piece, Run};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresSaver};
pub use seal::{KeyError, RecordKey, Records, KEY_ENV};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSaver;
pub use stalled::Claim;

/// Why a checkpointer call failed. Every message says what happened and, where the
/// caller can do something about it, what to do.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CheckpointError {
    /// A value could not be turned into JSON, or a stored record or write could not be
    /// read back (written by an incompatible version, or edited by hand).
    #[error("{0}")]
    Serialization(String),
    /// The store failed: a connection or the disk, a lock held too long, a schema it
    /// does not know, a damaged chain, or a saver that was closed.
    #[error("{0}")]
    Storage(String),
    /// A stored record fails the check of the saver's key: tampered with, written with
    /// another key, or written without one (see [`seal`]).
    #[error("{0}")]
    Integrity(String),
    /// Another writer got there first: a checkpoint id already stored with other
    /// content, or a second run advancing the same thread.
    #[error("{message}")]
    Conflict { thread_id: String, message: String },
    /// A checkpoint asked for by id does not exist in the thread.
    #[error("{message}")]
    NotFound {
        thread_id: String,
        checkpoint_id: String,
        message: String,
    },
}

impl CheckpointError {
    pub fn serialization(msg: impl Into<String>) -> Self {
        CheckpointError::Serialization(msg.into())
    }

    pub fn storage(msg: impl Into<String>) -> Self {
        CheckpointError::Storage(msg.into())
    }

    pub fn conflict(thread_id: &str, msg: impl Into<String>) -> Self {
        CheckpointError::Conflict {
            thread_id: thread_id.to_owned(),
            message: msg.into(),
        }
    }

    /// Checkpoint `checkpoint_id` is not in thread `thread_id`.
    pub fn not_found(thread_id: &str, checkpoint_id: &str) -> Self {
        CheckpointError::NotFound {
            thread_id: thread_id.to_owned(),
            checkpoint_id: checkpoint_id.to_owned(),
            message: format!(
                "thread {thread_id:?} has no checkpoint {checkpoint_id:?}; take a \
                 checkpoint_id from get_state_history(config), or leave it out for the \
                 latest"
            ),
        }
    }

    /// The thread the error is about, when it names one.
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            CheckpointError::Conflict { thread_id, .. }
            | CheckpointError::NotFound { thread_id, .. } => Some(thread_id),
            _ => None,
        }
    }
}

pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;

/// Records of a thread's history, oldest or newest first as the call says: what the
/// reads of several checkpoints ([`Checkpointer::chain`], [`Checkpointer::list`])
/// return.
pub type History = Result<Vec<CheckpointRecord>>;

/// The pending writes of one checkpoint, in the order they were first saved.
pub type Writes = Vec<PendingWrite>;

/// A task to run from a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub node: String,
    /// The argument of a task made by `Send`, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<Value>,
    /// The `Send`'s own timeout (LangGraph's `Send(timeout=)`), as JSON (see
    /// `graph::TimeoutPolicy::to_json`): a resumed run times the task by it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Value>,
}

/// One write to a channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    /// The node that wrote it (or `__input__`, `__update__`, `__engine__`).
    pub node: String,
    pub channel: String,
    pub value: Arc<Value>,
    /// Whether it is the first write of another task of the same node as the write
    /// before it (a node that ran several times in one step, by `Send`, or several
    /// updates made as one node): the history shows each task its own writes as its
    /// result, as LangGraph's does (see [`task_groups`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_task: bool,
}

/// `writes` in groups of one task's each: consecutive writes of one node, split where
/// another task of that node begins ([`Write::new_task`]). The stored format keeps
/// these groups, so they read back the same.
pub fn task_groups(writes: &[Write]) -> std::slice::ChunkBy<'_, Write, fn(&Write, &Write) -> bool> {
    writes.chunk_by(|a, b| a.node == b.node && !b.new_task)
}

/// A checkpoint's snapshot of its channels' values (opaque to savers): the JSON read
/// back from a store, or the text the engine writes in pieces, each channel's value
/// the checkpoint text it keeps (shared, not copied: a value unchanged since the last
/// checkpoint is not encoded again) and written out once, into the record's text (or
/// shared by it, in `MemorySaver`: [`record::encode_parted`]).
#[derive(Debug, Clone)]
pub enum Snapshot {
    Json(Value),
    /// JSON text as pieces whose concatenation is the snapshot (a large container
    /// met again is the same piece again: [`Piece`]), in runs (a channel's value is
    /// one [`Run`], shared with the engine).
    Pieces(Vec<Run>),
}

impl Snapshot {
    /// The snapshot as JSON (the pieces joined and parsed).
    pub fn json(&self) -> Result<Cow<'_, Value>> {
        match self {
            Snapshot::Json(v) => Ok(Cow::Borrowed(v)),
            Snapshot::Pieces(p) => serde_json::from_str(&join_runs(p))
                .map(Cow::Owned)
                .map_err(|e| CheckpointError::serialization(format!("a snapshot that is not JSON ({e}): this is a bug in ironloop, please report it"))),
        }
    }
}

impl From<Value> for Snapshot {
    fn from(v: Value) -> Self {
        Snapshot::Json(v)
    }
}

impl PartialEq for Snapshot {
    fn eq(&self, other: &Self) -> bool {
        matches!((self.json(), other.json()), (Ok(a), Ok(b)) if a == b)
    }
}

impl Serialize for Snapshot {
    /// The JSON (the pieces parsed: `record::encode`, the hot path, copies them).
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json().map_err(serde::ser::Error::custom)?.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Snapshot {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Value::deserialize(d).map(Snapshot::Json)
    }
}

/// One checkpoint: the writes that lead to it from its parent, and what runs next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// The channels' values at this checkpoint, when the engine materialised them
    /// here (every few steps; opaque to savers). Declared first so that it is the
    /// first JSON field of a record stored in format 1 (see [`record`]). Records
    /// written before snapshots existed have none and load as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Snapshot>,
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
    /// The write's place among its task's writes: `0..n` for a finished task's
    /// writes, negative for the engine's own (see `graph::pending`). A checkpoint holds
    /// at most one write per `(task_id, idx)`.
    #[serde(default)]
    pub idx: i64,
    pub node: String,
    pub channel: String,
    pub value: Arc<Value>,
}

/// One save of a batch given to [`Checkpointer::put_many`]: what `put`, `put_next` and
/// `put_writes` each save.
#[derive(Debug, Clone, PartialEq)]
pub enum Put {
    /// A checkpoint, saved as by `put_next` when `next`, else as by `put`.
    Record {
        record: Box<CheckpointRecord>,
        next: bool,
    },
    /// Writes of tasks of the step that runs from `checkpoint_id`, as by `put_writes`.
    Writes {
        checkpoint_id: String,
        writes: Vec<PendingWrite>,
    },
}

impl Put {
    /// Leaves out of `puts` the pending writes of a checkpoint that a later record of
    /// the batch follows: that record's save drops its parent's pending writes in the
    /// same transaction (see the contract), so they would be written only to be
    /// deleted. A run's input checkpoint is saved so: its input as pending writes, then
    /// the first step's record, which holds them.
    pub fn drop_superseded_writes(puts: &mut Vec<Put>) {
        if puts.len() < 2 {
            return;
        }
        let mut keep = vec![true; puts.len()];
        let mut followed: Vec<String> = Vec::new();
        for (i, p) in puts.iter_mut().enumerate().rev() {
            match p {
                Put::Record { record, .. } => followed.extend(record.parent_id.clone()),
                Put::Writes {
                    checkpoint_id,
                    writes,
                } if followed.contains(checkpoint_id) => {
                    // Those a checkpoint keeps once it has a child stay.
                    writes.retain(|w| kept_write(&w.channel));
                    keep[i] = !writes.is_empty();
                }
                Put::Writes { .. } => {}
            }
        }
        let mut keep = keep.into_iter();
        puts.retain(|_| keep.next().unwrap_or(true));
    }

    /// `puts` as a saver's rows, in order, the superseded writes left out (see
    /// [`drop_superseded_writes`](Self::drop_superseded_writes)): each record made a
    /// row by `record` (with its `next`), each checkpoint's writes by `writes`. What
    /// every saver's `put_many` does first, before its transaction.
    pub(crate) fn encode_each<T>(
        mut puts: Vec<Put>,
        mut record: impl FnMut(Box<CheckpointRecord>, bool) -> Result<T>,
        mut writes: impl FnMut(String, Vec<PendingWrite>) -> Result<T>,
    ) -> Result<Vec<T>> {
        Put::drop_superseded_writes(&mut puts);
        puts.into_iter()
            .map(|p| match p {
                Put::Record { record: r, next } => record(r, next),
                Put::Writes {
                    checkpoint_id,
                    writes: w,
                } => writes(checkpoint_id, w),
            })
            .collect()
    }
}

/// Why a store refused a record of a batch (the batch is then rolled back).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) enum Refused {
    /// The thread holds a checkpoint with this id and other content.
    SameId(String),
    /// A `put_next` whose parent is not the thread's latest checkpoint any more.
    Moved {
        expected: Option<String>,
        latest: Option<String>,
    },
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Refused {
    /// The conflict `put_many` of thread `thread_id` answers with.
    pub(crate) fn error(self, thread_id: &str) -> CheckpointError {
        match self {
            Refused::SameId(id) => same_id_conflict(thread_id, &id),
            Refused::Moved { expected, latest } => {
                advanced_conflict(thread_id, expected.as_deref(), latest.as_deref())
            }
        }
    }
}

#[cfg(test)]
mod put_tests {
    use super::*;

    fn record(id: &str, parent: Option<&str>) -> Put {
        Put::Record {
            record: Box::new(CheckpointRecord {
                snapshot: None,
                id: id.into(),
                parent_id: parent.map(Into::into),
                step: 0,
                source: "loop".into(),
                writes: vec![],
                next: vec![],
                created_at: 0.0,
                metadata: Value::Null,
            }),
            next: true,
        }
    }

    fn writes(id: &str) -> Put {
        Put::Writes {
            checkpoint_id: id.into(),
            writes: vec![],
        }
    }

    fn shape(puts: &[Put]) -> Vec<String> {
        puts.iter()
            .map(|p| match p {
                Put::Record { record, .. } => format!("r {}", record.id),
                Put::Writes { checkpoint_id, .. } => format!("w {checkpoint_id}"),
            })
            .collect()
    }

    #[test]
    fn only_writes_a_later_record_follows_are_left_out() {
        let mut puts = vec![
            writes("c0"),
            record("c0", None),
            writes("c0"),
            writes("x"),
            record("c1", Some("c0")),
            writes("c1"),
            record("c2", Some("x")),
            writes("c2"),
        ];
        Put::drop_superseded_writes(&mut puts);
        // c0's go (c1 follows it), x's go (c2 follows it, though not c1), c1's stay
        // (nothing after follows c1), c2's stay.
        assert_eq!(shape(&puts), ["r c0", "r c1", "w c1", "r c2", "w c2"]);
        // Writes after the record that follows them stay: its save has passed.
        let mut puts = vec![record("c1", Some("c0")), writes("c0")];
        Put::drop_superseded_writes(&mut puts);
        assert_eq!(shape(&puts), ["r c1", "w c0"]);
    }

    #[test]
    fn the_questions_and_errors_of_a_followed_checkpoint_stay() {
        let write = |channel: &str| PendingWrite {
            task_id: "t".into(),
            idx: -1,
            node: "a".into(),
            channel: channel.into(),
            value: Arc::new(Value::Null),
        };
        let mut puts = vec![
            Put::Writes {
                checkpoint_id: "c0".into(),
                writes: vec![write("x"), write("__interrupt__"), write("__error__")],
            },
            record("c1", Some("c0")),
        ];
        Put::drop_superseded_writes(&mut puts);
        let Put::Writes { writes, .. } = &puts[0] else {
            panic!("the kept writes were left out: {:?}", shape(&puts));
        };
        let channels: Vec<&str> = writes.iter().map(|w| w.channel.as_str()).collect();
        assert_eq!(channels, ["__interrupt__", "__error__"]);
        assert_eq!(
            dropped_writes_sql(),
            "channel NOT IN ('__interrupt__', '__error__')"
        );
    }

    #[test]
    fn encoding_a_batch_leaves_out_superseded_writes_and_stops_at_the_first_error() {
        let batch = || vec![writes("c0"), record("c1", Some("c0")), writes("c1")];
        let rows = Put::encode_each(
            batch(),
            |r, next| Ok(format!("r {} {next}", r.id)),
            |id, _| Ok(format!("w {id}")),
        );
        assert_eq!(rows.unwrap(), ["r c1 true", "w c1"]);
        let refused = Put::encode_each(
            batch(),
            |_, _| Err(CheckpointError::serialization("no")),
            |id, _| Ok(id),
        );
        assert_eq!(refused, Err(CheckpointError::serialization("no")));
    }
}

/// Where checkpoints are kept. Implementations must make a `put` durable (or at least
/// handed to the OS) before returning: a run only moves on once its step is saved.
///
/// # The contract (every saver passes the conformance suite in `tests/checkpoint.rs`)
///
/// - **Threads are separate**: the same checkpoint id may exist in two threads.
/// - **`put` is idempotent**: putting a record whose id the thread already holds does
///   nothing when the stored record is the same (so a call retried after an error
///   whose outcome was unknown is safe) and keeps the record's place in the thread's
///   order; a *different* record under that id is a [`CheckpointError::Conflict`].
///   A `put` drops the pending writes of the record's parent (the record holds them
///   now). The "latest" checkpoint is the last one put, not the highest step.
/// - **`put_next` is a compare-and-set**: it saves the record only if the thread's
///   latest checkpoint is still the record's parent (none, for a record without a
///   parent), atomically, also between processes; otherwise nothing is written and
///   the error is a [`CheckpointError::Conflict`] naming the thread. Runs save every
///   step with it, so two runs advancing one thread at once never fork or interleave
///   its history: the second one fails at its next step. A record already stored is
///   handled as by `put` (a retry is `Ok`).
/// - **`put_writes` deduplicates** by `(task_id, idx)` within a checkpoint: a write
///   whose key is already stored is ignored (the first one stays). Writes come back
///   in the order they were first saved.
/// - **Not found**: `get` of an unknown id is `Ok(None)`; `chain` of an unknown id is
///   [`CheckpointError::NotFound`]; a chain whose ancestor is missing is
///   [`CheckpointError::Storage`] (the store is damaged), never silently cut.
/// - **`close`** lets the work already started finish, then releases the saver's
///   connections and threads; calling it again does nothing; every later call fails
///   with a [`CheckpointError::Storage`] saying the saver was closed.
/// - **`put_many`** saves a batch of puts, in order, as one transaction: each as its
///   own call would (the same checks, the same errors), and all of them or, when one
///   fails, none. A run whose `durability` lets its saves lag its steps (`"async"`,
///   `"exit"`) hands them over this way, so a store pays one commit (and, over a
///   network, a few round trips) per batch rather than per step.
/// - A call either happens completely or not at all (one transaction), also when the
///   future is dropped half-way.
#[async_trait]
pub trait Checkpointer: Send + Sync {
    /// Saves a checkpoint; the pending writes of its parent are dropped with it (the
    /// record now holds them). By default a batch of one.
    async fn put(&self, thread_id: &str, record: CheckpointRecord) -> Result<()> {
        let record = Box::new(record);
        let puts = vec![Put::Record {
            record,
            next: false,
        }];
        self.put_many(thread_id, puts).await
    }
    /// Saves the thread's next checkpoint: like `put`, if the thread's latest
    /// checkpoint is still `record.parent_id` (see the trait's documentation). By
    /// default a batch of one.
    async fn put_next(&self, thread_id: &str, record: CheckpointRecord) -> Result<()> {
        let record = Box::new(record);
        let puts = vec![Put::Record { record, next: true }];
        self.put_many(thread_id, puts).await
    }
    /// Saves `puts` in order, in one transaction: all of them, or none when one fails
    /// (see the trait's documentation).
    async fn put_many(&self, thread_id: &str, puts: Vec<Put>) -> Result<()>;
    /// Saves writes of tasks that finished in the step that runs from `checkpoint_id`.
    /// By default a batch of one; a saver with a cheaper path for writes alone
    /// overrides it.
    async fn put_writes(&self, thread_id: &str, checkpoint_id: &str, writes: Writes) -> Result<()> {
        let checkpoint_id = checkpoint_id.to_owned();
        let puts = vec![Put::Writes {
            checkpoint_id,
            writes,
        }];
        self.put_many(thread_id, puts).await
    }
    /// The latest checkpoint of the thread (the last one saved), or the one with `id`.
    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>>;
    /// The records from `from` (the thread's first checkpoint, or the nearest one
    /// holding a snapshot) to `id`, oldest first: what [`chain`](Self::chain) and
    /// [`chain_from_snapshot`](Self::chain_from_snapshot) return. The one read of
    /// ancestors a saver writes: with [`ChainFrom::Snapshot`] its cost should grow with
    /// the distance to that snapshot, not with the thread (a query that stops there).
    async fn chain_from(&self, thread_id: &str, id: &str, from: ChainFrom) -> History;
    /// The records from the thread's first checkpoint to `id`, oldest first.
    async fn chain(&self, thread_id: &str, id: &str) -> History {
        self.chain_from(thread_id, id, ChainFrom::Root).await
    }
    /// The records from the nearest checkpoint holding a snapshot (`id` itself, or
    /// its closest ancestor with one) to `id`, oldest first; the whole chain when no
    /// record on it has a snapshot (a thread written before snapshots). Errors as
    /// `chain`. This is how a thread is loaded (see [`chain_from`](Self::chain_from)).
    async fn chain_from_snapshot(&self, thread_id: &str, id: &str) -> History {
        self.chain_from(thread_id, id, ChainFrom::Snapshot).await
    }
    /// Checkpoints newest first, at most `limit`, older than `before` when given.
    async fn list(&self, thread_id: &str, limit: Option<usize>, before: Option<&str>) -> History;
    async fn pending_writes(&self, thread_id: &str, checkpoint_id: &str) -> Result<Writes>;
    /// The checkpoint [`get`](Self::get) returns, with its pending writes: what a
    /// thread's state shows. By default the two reads one after the other; a saver
    /// that can make them one read of one state of its store overrides it (then a
    /// checkpoint saved between the two by another writer, which drops its parent's
    /// pending writes, cannot leave the first without them).
    async fn get_with_writes(
        &self,
        thread_id: &str,
        id: Option<&str>,
    ) -> Result<Option<(CheckpointRecord, Writes)>> {
        let Some(record) = self.get(thread_id, id).await? else {
            return Ok(None);
        };
        let writes = self.pending_writes(thread_id, &record.id).await?;
        Ok(Some((record, writes)))
    }
    /// Deletes the thread's checkpoints and writes, those of its subgraphs' namespaces
    /// (see [`thread_key`]) included.
    async fn delete_thread(&self, thread_id: &str) -> Result<()>;
    /// Every key the saver holds checkpoints under (thread ids, and the
    /// [`thread_key`]s of their subgraphs' namespaces), in no set order: how
    /// LangGraph's saver API lists, prunes and deletes across threads (`list(None)`,
    /// `delete_for_runs`, a thread's namespaces for `copy_thread`).
    async fn thread_keys(&self) -> Result<Vec<String>>;
    /// Deletes the thread's checkpoints `ids` and their pending writes, in one
    /// transaction (ids the thread does not have are skipped); the thread's latest
    /// checkpoint is then the newest one left. This is how a run stopped by
    /// `multitask_strategy="rollback"` leaves the history, as LangGraph's server deletes
    /// it: only checkpoints no other one descends from are deleted that way.
    async fn delete_checkpoints(&self, thread_id: &str, ids: Vec<String>) -> Result<()>;
    /// Finishes the work under way and releases the saver's resources (see the trait's
    /// documentation). Idempotent.
    async fn close(&self) -> Result<()>;
    /// The threads whose last run stopped mid-step and that nobody has claimed, those
    /// idle longest first, at most `limit` (see [`stalled`] for the rule).
    async fn list_stalled(
        &self,
        stale_after: Duration,
        limit: Option<usize>,
    ) -> Result<Vec<String>>;
    /// Claims up to `limit` stalled threads for `owner` for `lease`, atomically: two
    /// callers (in any process) never get the same thread while a claim lives. The
    /// caller then resumes each with `invoke(None, config)`. The arguments are checked
    /// here, once for every saver; the saver stores the claim ([`claim`](Self::claim)).
    async fn claim_stalled(
        &self,
        owner: &str,
        stale_after: Duration,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.claim(&Claim::new(owner, stale_after, lease, limit)?)
            .await
    }
    /// Stores a checked claim (see [`claim_stalled`](Self::claim_stalled)): the
    /// threads claimed.
    async fn claim(&self, claim: &Claim) -> Result<Vec<String>>;
    /// Takes the run lease of `thread_id` (see [`lease`]): `Ok(None)` when a run of
    /// another process, or of another saver object on the same store, holds it. The
    /// lease is held until the returned value is dropped, or its holder's process ends.
    /// By default always free: a store of one process, whose runs its turns see.
    async fn try_lease(&self, thread_id: &str) -> Result<Option<RunLease>> {
        let _ = thread_id;
        Ok(Some(RunLease::local()))
    }
    /// Asks the holder of `thread_id`'s run lease (a run in another process, see
    /// [`try_lease`](Self::try_lease)) to stop: its run sees the ask through
    /// [`RunLease::asked`]. `Some(guard)`: the ask stands until the guard is dropped;
    /// `None`: it was sent once, or another run asks already — ask again while
    /// waiting. By default never needed (every lease is free).
    async fn ask_stop(&self, thread_id: &str, ask: StopAsk) -> Result<Option<AskGuard>> {
        let _ = (thread_id, ask);
        Ok(None)
    }
}

/// Where the checkpoints of a graph run inside another graph's task (a subgraph) are
/// kept: under the key `thread_id` + [`NS_SEP`] + `checkpoint_ns` (LangGraph's
/// `node:task_id` segments joined by `|`), in the same store as the parent's. A root
/// run's key is the thread id itself. Savers treat keys as opaque except in
/// [`Checkpointer::delete_thread`], which deletes a thread's namespaces with it.
pub fn thread_key(thread_id: &str, checkpoint_ns: &str) -> String {
    if checkpoint_ns.is_empty() {
        thread_id.to_owned()
    } else {
        format!("{thread_id}{NS_SEP}{checkpoint_ns}")
    }
}

/// Separates a thread id from a namespace in a storage key (see [`thread_key`]): a
/// control character no thread id a person picks contains.
pub const NS_SEP: char = '\u{1f}';

/// The prefix of the storage keys of `thread_id`'s namespaces.
pub(crate) fn ns_prefix(thread_id: &str) -> String {
    format!("{thread_id}{NS_SEP}")
}

/// The namespace of a checkpoint run by `node`'s task `task_id`, inside a run whose
/// own namespace is `parent_ns` (`""` for a root run), as LangGraph spells it.
/// The channels of the pending writes a checkpoint keeps when the next checkpoint is
/// saved (its other pending writes go then, see the contract): the questions its
/// tasks asked (`__interrupt__`) and the errors they failed the run with
/// (`__error__`). They are the record of the step that `get_state_history` shows, as
/// LangGraph's savers keep them; they are few, and nothing resumes from them (a run
/// from a checkpoint with a child replays it, asking again).
pub const KEPT_WRITES: [&str; 2] = [
    crate::graph::Reserved::Interrupt.as_str(),
    crate::graph::Reserved::Error.as_str(),
];

/// Whether a pending write on `channel` stays once its checkpoint has a child.
pub fn kept_write(channel: &str) -> bool {
    KEPT_WRITES.contains(&channel)
}

/// The SQL condition that picks the pending writes a child's save drops (see
/// [`KEPT_WRITES`]).
pub fn dropped_writes_sql() -> String {
    let kept: Vec<String> = KEPT_WRITES.iter().map(|c| format!("'{c}'")).collect();
    format!("channel NOT IN ({})", kept.join(", "))
}

pub fn child_ns(parent_ns: &str, node: &str, task_id: &str) -> String {
    if parent_ns.is_empty() {
        format!("{node}:{task_id}")
    } else {
        format!("{parent_ns}|{node}:{task_id}")
    }
}

/// The namespace of a stateful subgraph (LangGraph's `checkpointer=True`) run inside
/// the task whose namespace is `task_ns` (see [`child_ns`]): the node's name without
/// the task id, so that every call of the subgraph from that node continues the same
/// history.
pub fn stateful_ns(task_ns: &str) -> String {
    let (parent, last) = match task_ns.rsplit_once('|') {
        Some((p, l)) => (Some(p), l),
        None => (None, task_ns),
    };
    // Node names cannot hold ':' (LangGraph reserves it): the first one ends the name.
    let node = last.split_once(':').map_or(last, |(n, _)| n);
    match parent {
        Some(p) => format!("{p}|{node}"),
        None => node.to_owned(),
    }
}

/// A pending write as a saver stores it: task id, index, node, channel, value (JSON).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) type WriteRow = (String, i64, String, String, String);

/// A stored record's columns: its id, its parent's, its text.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) type RecordRow = (String, Option<String>, String);

/// A stored record of thread `thread_id` read back from its columns (through `codec`:
/// without a key, or under one); `saver` names the saver in the errors, which say
/// which record could not be read and why.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn record_from_row(
    saver: &str,
    codec: &seal::Records,
    thread_id: &str,
    (id, parent, text): &RecordRow,
) -> Result<CheckpointRecord> {
    codec
        .decode(text, id, parent.as_deref())
        .map_err(|e| match e {
            seal::ReadError::Unreadable(e) => CheckpointError::serialization(format!(
                "{saver}: {} of thread {thread_id:?} cannot be read ({e}); it was written by \
                 an incompatible version or modified by hand",
                record_name(id)
            )),
            seal::ReadError::Key(m) => CheckpointError::Integrity(format!(
                "{saver}: {} of thread {thread_id:?} {m}",
                record_name(id)
            )),
        })
}

/// [`record_from_row`] for each of `rows`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn records_from_rows(
    saver: &str,
    codec: &seal::Records,
    thread_id: &str,
    rows: &[RecordRow],
) -> Result<Vec<CheckpointRecord>> {
    rows.iter()
        .map(|row| record_from_row(saver, codec, thread_id, row))
        .collect()
}

/// Pending writes of checkpoint `checkpoint_id` read back from their stored columns
/// (through `codec`: without a key, or under one); `saver` names the saver in the
/// errors.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn writes_from_rows(
    saver: &str,
    codec: &seal::Records,
    thread_id: &str,
    checkpoint_id: &str,
    rows: Vec<WriteRow>,
) -> Result<Vec<PendingWrite>> {
    rows.into_iter()
        .map(|(task_id, idx, node, channel, value)| {
            let place = seal::WritePlace {
                checkpoint_id,
                task_id: &task_id,
                idx,
                node: &node,
                channel: &channel,
            };
            let value = codec.decode_write(&place, &value).map_err(|e| match e {
                seal::ReadError::Unreadable(e) => CheckpointError::serialization(format!(
                    "{saver}: a pending write of thread {thread_id:?} to {channel:?} cannot be \
                     read ({e}); it was modified by hand"
                )),
                seal::ReadError::Key(m) => CheckpointError::Integrity(format!(
                    "{saver}: the pending write of task {task_id:?} to {channel:?} (thread \
                     {thread_id:?}) {m}"
                )),
            })?;
            Ok(PendingWrite {
                task_id,
                idx,
                node,
                channel,
                value: Arc::new(value),
            })
        })
        .collect()
}

impl PendingWrite {
    /// Where this write of checkpoint `checkpoint_id` belongs, for its code.
    pub fn place<'a>(&'a self, checkpoint_id: &'a str) -> seal::WritePlace<'a> {
        seal::WritePlace {
            checkpoint_id,
            task_id: &self.task_id,
            idx: self.idx,
            node: &self.node,
            channel: &self.channel,
        }
    }
}

/// Keeps the first write of each `(task_id, idx)`, in order: the rule of
/// [`Checkpointer::put_writes`] for savers that dedupe in memory.
pub(crate) fn dedupe_writes(stored: &[PendingWrite], new: Vec<PendingWrite>) -> Vec<PendingWrite> {
    let mut seen: std::collections::HashSet<(String, i64)> =
        stored.iter().map(|w| (w.task_id.clone(), w.idx)).collect();
    new.into_iter()
        .filter(|w| seen.insert((w.task_id.clone(), w.idx)))
        .collect()
}

/// A record put under an id the thread holds with other content.
pub(crate) fn same_id_conflict(thread_id: &str, id: &str) -> CheckpointError {
    CheckpointError::conflict(
        thread_id,
        format!(
            "thread {thread_id:?} already has a checkpoint {id:?} with other content; \
             checkpoint ids are never reused, so another writer (or a bug) made this one"
        ),
    )
}

/// A run's step that does not follow the thread's latest checkpoint any more.
pub(crate) fn advanced_conflict(
    thread_id: &str,
    expected: Option<&str>,
    latest: Option<&str>,
) -> CheckpointError {
    let at = |c: Option<&str>| match c {
        Some(id) => format!("{id:?}"),
        None => "no checkpoint".to_owned(),
    };
    CheckpointError::conflict(
        thread_id,
        format!(
            "thread {thread_id:?} was advanced by another run: this run's step follows {} \
             but the thread is now at {}; nothing of the step was saved. Let one run at a \
             time write a thread (e.g. send a thread to one worker); to go on from where the \
             thread is now, invoke it again",
            at(expected),
            at(latest)
        ),
    )
}

/// Where a chain of ancestors starts (see [`Checkpointer::chain_from`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainFrom {
    /// The thread's first checkpoint.
    Root,
    /// The nearest record holding a snapshot (the root when none does).
    Snapshot,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// Orders the ancestors of `id` from the root (or, with [`ChainFrom::Snapshot`], the
/// nearest snapshot) down to `id`.
pub(crate) fn order_chain(
    saver: &str,
    thread_id: &str,
    records: Vec<CheckpointRecord>,
    id: &str,
    from: ChainFrom,
) -> Result<Vec<CheckpointRecord>> {
    let mut by_id: std::collections::HashMap<String, CheckpointRecord> =
        records.into_iter().map(|r| (r.id.clone(), r)).collect();
    let mut out: Vec<CheckpointRecord> = Vec::with_capacity(by_id.len());
    let mut cur = Some(id.to_owned());
    while let Some(c) = cur {
        let Some(r) = by_id.remove(&c) else {
            if c == id && out.is_empty() {
                return Err(CheckpointError::not_found(thread_id, id));
            }
            let what = if out.iter().any(|r| r.id == c) {
                format!("of {id:?} in thread {thread_id:?} has a cycle")
            } else {
                format!(
                    "is broken: the ancestor {c:?} of {id:?} is missing in thread {thread_id:?}"
                )
            };
            return Err(CheckpointError::storage(format!(
                "{saver}: checkpoint chain {what}; the store was modified outside ironloop"
            )));
        };
        cur = match from {
            ChainFrom::Snapshot if r.snapshot.is_some() => None,
            _ => r.parent_id.clone(),
        };
        out.push(r);
    }
    out.reverse();
    Ok(out)
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// How an error names a stored record: its id (kept beside the record since format
/// 2), when that id is usable in a message.
pub(crate) fn record_name(id: &str) -> String {
    if id.is_empty() || id.len() > 200 {
        "a checkpoint (its id is unreadable too)".to_owned()
    } else {
        format!("checkpoint {id:?}")
    }
}

pub(crate) fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
