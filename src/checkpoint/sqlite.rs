//! Checkpoints in a SQLite file, as deltas: one row per checkpoint record, one row per
//! pending write.
//!
//! # Threading
//!
//! A [`SqliteSaver`] owns one `rusqlite::Connection` and one dedicated OS thread (named
//! `ironloop-sqlite`). Async callers send a closure over a channel and await the answer
//! on a `tokio::sync::oneshot`, so a tokio worker never blocks on disk I/O or on a lock
//! held by another process. A caller that waits for its saves anyway (a thread driving
//! a run by hand, see [`super::caller`]) runs the closure on its own thread instead,
//! when the connection is free and the file's write lock is not held elsewhere: a
//! durable step then costs no thread switch. Statements are prepared once and cached on
//! that connection. JSON (de)serialisation happens on the caller's side, so the SQLite
//! connection only does SQLite work. The WAL is copied back into the file by the SQLite
//! thread, on a second connection, off the committing path (see `Wal`).
//!
//! Dropping the saver, or calling [`SqliteSaver::close`], lets the thread finish the work
//! already queued, closes the connection and joins the thread. Any call made after that
//! returns a [`CheckpointError::Storage`] saying the saver was closed. A future dropped while its
//! operation is queued does not cancel the operation: a `put` is either fully written or
//! not written at all (every write is one transaction, or one savepoint of a group
//! commit's: see below).
//!
//! # Durability and sharing
//!
//! The file is in WAL mode with `synchronous=NORMAL`: a committed `put` is in the WAL,
//! handed to the OS, before the call returns, so it survives the process being killed
//! (SIGKILL, panic, OOM). It may be lost on a power cut or an OS crash, never corrupted:
//! the WAL is synced to disk when it is copied into the file (every 1 MiB of WAL, in the
//! background), not at every commit.
//!
//! Several savers, in one process or several, may share one file. Every write runs in a
//! `BEGIN IMMEDIATE` transaction (it takes the write lock up front, so it cannot fail
//! half-way with `SQLITE_BUSY` on lock upgrade, and `put_next`'s check of the thread's
//! latest checkpoint and its insert are atomic for every process) and the connection
//! waits up to [`BUSY_TIMEOUT`] for a lock held by someone else before giving up. The
//! SQLite thread commits the writes it finds queued together (up to 64, in queue
//! order), each under a savepoint of the group's transaction, and answers each once
//! the group's `COMMIT` returned (*group commit*, see `Write`): what many runs at once
//! save costs one commit, not one each. Reads
//! never wait on writers (WAL). The file must live on a local filesystem: WAL needs
//! shared memory.
//!
//! # Schema (`PRAGMA user_version = 4`)
//!
//! ```sql
//! threads(no INTEGER PRIMARY KEY, thread_id UNIQUE)
//! checkpoints(seq INTEGER PRIMARY KEY, checkpoint_id, parent_id, parent_seq, sortkey, record)
//!     INDEX (checkpoint_id) WHERE sortkey IS NOT NULL,
//!     INDEX (parent_id) WHERE parent_seq IS NULL AND parent_id IS NOT NULL
//! writes(seq INTEGER PRIMARY KEY, thread_id, checkpoint_id, task_id, idx, node, channel,
//!        value)
//!     UNIQUE (thread_id, checkpoint_id, task_id, idx), INDEX (thread_id, checkpoint_id, seq)
//! ```
//!
//! A thread's checkpoints have the `seq`s `no × 2³² + 1, + 2, …` in the order they were
//! put (`no`: the thread's number in `threads`), so the thread's latest checkpoint is
//! its highest `seq`, found in the table's own b-tree. `parent_seq` is the parent's
//! `seq` (NULL while the parent is not stored). A run's step (an id greater than every
//! id of the thread before it, as ironloop's time-ordered ids are) writes one b-tree:
//! its row, at the end of the thread; such rows have no `sortkey` and are found by id
//! with a binary search over `seq` (their ids grow with it). A row whose id is not
//! greater (an id from elsewhere, a clock set back, a record migrated from version 3)
//! has `sortkey` = the greatest key before it and an entry in the partial index on
//! `checkpoint_id`. `record` is the record's text (see [`super::record`]: format 4 or 5, or
//! formats 3, 2 and 1 for records written before), `value` a pending write's value as
//! compact JSON. Putting a record whose id already exists in the thread changes
//! nothing (an identical record) or is a conflict (another one); a pending write whose
//! `(task_id, idx)` is stored is ignored (see [`Checkpointer`]).
//!
//! Files of versions 1 to 3 (`checkpoints` with `thread_id` and `step` columns, indexed
//! by `(thread_id, checkpoint_id)` and `(thread_id, seq)`) are migrated to version 4 in
//! one transaction when the file is opened. Before that, version 1 (no `idx`) is
//! migrated to 2: its writes get their `seq` as `idx`, which keeps them all. Version 3
//! changed no table: it marks a file whose records may be in format 2, which an
//! ironloop knowing version 2 refuses.
//! A `put_many` batch is one `BEGIN IMMEDIATE` transaction (or one savepoint of a group's).
//!
//! `chain` reads only the ancestors of the requested checkpoint, with one recursive
//! query that follows `parent_seq`; its cost grows with the length of that chain, not with the size of the thread or of the file. `chain_from_snapshot`
//! is the same query stopped at the first record whose text says it holds a snapshot
//! ([`record::has_snapshot`](super::record::has_snapshot)'s prefixes; no schema change: files
//! written before snapshots load as they are, through their whole chain, until a run
//! adds a snapshot).

use std::time::Duration;

mod checkpointer;
mod group;
mod rows;
mod saver;
mod schema;
mod tips;
mod worker;

pub use saver::SqliteSaver;

/// How long a statement waits for a lock held by another connection before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
