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
//! `checkpoint_id`. `record` is the record's text (see [`super::record`]: format 4, or
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

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};
use tokio::sync::oneshot;

mod tips;

use tips::{Tip, Tips};

use super::caller;
use super::record;
use super::seal::{ReadError, RecordKey, Records, SNAPSHOT_PREFIX_SEALED};
use super::stalled::{awaits_answer_sql, check_claim};
use super::{
    advanced_conflict, now_secs, order_chain, same_id_conflict, writes_from_rows, ChainFrom,
    CheckpointError, CheckpointRecord, Checkpointer, PendingWrite, Put, Result, WriteRow,
};

/// How long a statement waits for a lock held by another connection before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// Version 4: one b-tree written per checkpoint (see the module documentation).
/// Version 3 changed no table: its records may be in format 2 (see `record`), which
/// an ironloop that knows version 2 cannot read, so it refuses the file up front.
const SCHEMA_VERSION: i64 = 4;

/// A thread's checkpoints have the `seq`s `no << 32` + 1, + 2, ...
const SPAN: i64 = 1 << 32;

/// The checkpoints' tables of version 4, made by a new file and by the migration.
const CHECKPOINTS: &str = "
CREATE TABLE threads (
    no        INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL UNIQUE
);
CREATE TABLE checkpoints (
    seq           INTEGER PRIMARY KEY,
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    parent_seq    INTEGER,
    sortkey       TEXT,
    record        TEXT NOT NULL
);
CREATE INDEX checkpoints_unordered ON checkpoints (checkpoint_id) WHERE sortkey IS NOT NULL;
CREATE INDEX checkpoints_orphans ON checkpoints (parent_id)
    WHERE parent_seq IS NULL AND parent_id IS NOT NULL;
";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS writes (
    seq           INTEGER PRIMARY KEY,
    thread_id     TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    node          TEXT NOT NULL,
    channel       TEXT NOT NULL,
    value         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS writes_by_checkpoint ON writes (thread_id, checkpoint_id, seq);
CREATE UNIQUE INDEX IF NOT EXISTS writes_by_task ON writes (thread_id, checkpoint_id, task_id, idx);
";

/// Version 1 to 2: pending writes get an `idx` (deduplication key with the task id).
const MIGRATE_1_TO_2: &str = "
ALTER TABLE writes ADD COLUMN idx INTEGER NOT NULL DEFAULT 0;
UPDATE writes SET idx = seq;
CREATE UNIQUE INDEX writes_by_task ON writes (thread_id, checkpoint_id, task_id, idx);
";

/// Version 3 to 4: the thread's text moves to `threads`; `seq` becomes the thread's
/// number and the checkpoint's place in it; every record written before is found by
/// its id through `checkpoints_unordered` (`sortkey` '', the least key).
const MIGRATE_3_TO_4: &str = "
ALTER TABLE checkpoints RENAME TO checkpoints_3;
CREATE TABLE threads (
    no        INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL UNIQUE
);
INSERT INTO threads (thread_id) SELECT thread_id FROM checkpoints_3
    GROUP BY thread_id ORDER BY min(seq);
CREATE TABLE checkpoints (
    seq           INTEGER PRIMARY KEY,
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    parent_seq    INTEGER,
    sortkey       TEXT,
    record        TEXT NOT NULL
);
INSERT INTO checkpoints (seq, checkpoint_id, parent_id, parent_seq, sortkey, record)
    SELECT (t.no << 32) + row_number() OVER (PARTITION BY c.thread_id ORDER BY c.seq),
           c.checkpoint_id, c.parent_id, NULL, '', c.record
    FROM checkpoints_3 c JOIN threads t ON t.thread_id = c.thread_id ORDER BY 1;
DROP TABLE checkpoints_3;
CREATE INDEX checkpoints_unordered ON checkpoints (checkpoint_id) WHERE sortkey IS NOT NULL;
UPDATE checkpoints SET parent_seq = (SELECT p.seq FROM checkpoints p
    WHERE p.checkpoint_id = checkpoints.parent_id AND p.sortkey IS NOT NULL
      AND +p.seq > (checkpoints.seq >> 32) << 32
      AND +p.seq < ((checkpoints.seq >> 32) + 1) << 32)
    WHERE parent_id IS NOT NULL;
CREATE INDEX checkpoints_orphans ON checkpoints (parent_id)
    WHERE parent_seq IS NULL AND parent_id IS NOT NULL;
";

/// What finding stalled threads needs (see [`super::stalled`]), made on every open so
/// files of every schema version get it without a migration: the claims, and when each
/// thread last saved pending writes (kept by a trigger; a checkpoint's time is its
/// record's `created_at`).
const CLAIMS: &str = "
CREATE TABLE IF NOT EXISTS claims (
    thread_id  TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS activity (
    thread_id  TEXT PRIMARY KEY,
    at         REAL NOT NULL
);
CREATE TRIGGER IF NOT EXISTS writes_activity AFTER INSERT ON writes BEGIN
    INSERT INTO activity (thread_id, at) VALUES (new.thread_id, unixepoch('now', 'subsec'))
    ON CONFLICT (thread_id) DO UPDATE SET at = excluded.at;
END;
";

/// The stalled threads, idle longest first: the latest record of each thread (highest
/// `seq`) has tasks, is older than `?1` (and so are the thread's pending writes), waits
/// on no interrupt, and no claim outlives
/// `?2` (now). `?3` is the limit (-1: none). Subgraphs' namespaces (keys with U+001F,
/// see `checkpoint::thread_key`) are resumed through their thread, not listed.
fn stalled_sql() -> String {
    format!(
        "SELECT t.thread_id FROM threads t \
         JOIN checkpoints c ON c.seq = (SELECT max(seq) FROM checkpoints \
           WHERE seq > t.no << 32 AND seq < (t.no + 1) << 32) \
         LEFT JOIN claims k ON k.thread_id = t.thread_id \
         WHERE json_array_length(c.record, {next}) > 0 \
           AND instr(t.thread_id, char(31)) = 0 \
           AND json_extract(c.record, {created}) <= ?1 \
           AND coalesce((SELECT at FROM activity a WHERE a.thread_id = t.thread_id), 0) <= ?1 \
           AND (k.expires_at IS NULL OR k.expires_at <= ?2) \
           AND NOT {} \
         ORDER BY json_extract(c.record, {created}), t.thread_id LIMIT ?3",
        awaits_answer_sql("writes", "t.thread_id", "c.checkpoint_id"),
        // The record's fields, in either format (see `record`).
        next = "CASE WHEN substr(c.record, 1, 1) = '[' THEN '$[5]' ELSE '$.next' END",
        created = "CASE WHEN substr(c.record, 1, 1) = '[' THEN '$[3]' ELSE '$.created_at' END",
    )
}

const CLOSED: &str =
    "the SqliteSaver was closed; open a new one (SqliteSaver::open) to keep using the file";

type Job = Box<dyn FnOnce(&mut Connection) + Send + 'static>;

/// The most writes the SQLite thread commits in one transaction (see [`Write`]): the
/// file's write lock is held for a group's statements (tens of µs each), so another
/// process's writer waits at most for one group.
const GROUP_MAX: usize = 64;

/// A write sent to the SQLite thread (`put_many`, `put_writes`), committed **with the
/// writes queued beside it** (group commit, see [`commit_group`]): the thread runs
/// every write it finds waiting in one `BEGIN IMMEDIATE` transaction, each under a
/// savepoint of its own (a write that fails or changes nothing is rolled back to it,
/// alone), and answers each caller once the group's `COMMIT` returned. A caller's
/// write is as durable when its call returns as in a transaction of its own, and
/// writes of one file still commit one at a time in the order they were queued;
/// with many runs at once the thread does one commit (one WAL append of the pages
/// they share, one lock round, one wake-up per caller) for many.
trait Write: Send {
    /// Runs the write's statements on `conn`, inside the group's transaction: whether
    /// to keep them (false: it failed, or decided to change nothing).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller: with what `run` returned, or with `failed` (the write did
    /// not reach the file: its group's `COMMIT` failed, or it never ran).
    fn answer(self: Box<Self>, failed: Option<&rusqlite::Error>);
}

/// A [`Write`] of a closure `f` whose result `keep` says whether to commit.
struct WriteJob<R, F> {
    f: F,
    keep: fn(&R) -> bool,
    out: Option<std::thread::Result<rusqlite::Result<R>>>,
    tx: oneshot::Sender<std::thread::Result<rusqlite::Result<R>>>,
}

impl<R, F> Write for WriteJob<R, F>
where
    R: Send + 'static,
    F: FnMut(&Connection) -> rusqlite::Result<R> + Send + 'static,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let r = catch_unwind(AssertUnwindSafe(|| (self.f)(conn)));
        let keep = matches!(&r, Ok(Ok(v)) if (self.keep)(v));
        self.out = Some(r);
        keep
    }

    fn answer(self: Box<Self>, failed: Option<&rusqlite::Error>) {
        let out = match (failed, self.out) {
            (Some(e), _) => Ok(Err(copy_error(e))),
            (None, None) => Ok(Err(setup_error("the write was not run".into()))),
            (None, Some(out)) => out,
        };
        let _ = self.tx.send(out);
    }
}

/// `e` again (rusqlite's errors are not `Clone`): the same code and message, for
/// every write of a group that one failure stopped.
fn copy_error(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, msg) => {
            rusqlite::Error::SqliteFailure(*code, msg.clone().or_else(|| Some(e.to_string())))
        }
        other => setup_error(other.to_string()),
    }
}

/// Runs one statement that returns no rows, prepared once per connection:
/// `execute_batch` parses its SQL at every call, and every durable step runs a
/// `BEGIN IMMEDIATE` and a `COMMIT`.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// A transaction on a connection, begun and ended by [`exec`]; rolled back when dropped
/// uncommitted (as `rusqlite::Transaction`, whose statements are parsed every time).
struct Tx<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Tx<'c> {
    /// `BEGIN IMMEDIATE` (takes the write lock up front) or a deferred `BEGIN` (a read).
    fn begin(conn: &'c Connection, immediate: bool) -> rusqlite::Result<Self> {
        exec(
            conn,
            if immediate {
                "BEGIN IMMEDIATE"
            } else {
                "BEGIN"
            },
        )?;
        Ok(Tx { conn, open: true })
    }

    fn commit(mut self) -> rusqlite::Result<()> {
        self.open = false;
        let r = exec(self.conn, "COMMIT");
        if r.is_err() && !self.conn.is_autocommit() {
            let _ = exec(self.conn, "ROLLBACK");
        }
        r
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            let _ = exec(self.conn, "ROLLBACK");
        }
    }
}

/// Commits `group` (see [`Write`]): one transaction, a savepoint per write when there
/// are several. A write that makes SQLite roll the whole transaction back (an I/O
/// error, a full disk) is answered with its error, and the writes kept before it are
/// run again in a new transaction with those after it; a failed `COMMIT` is every
/// kept write's error. Nothing is answered as saved before its `COMMIT` returned.
fn commit_group(conn: &Connection, group: Vec<Box<dyn Write>>) {
    let mut todo = group;
    while !todo.is_empty() {
        let nested = todo.len() > 1;
        if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
            for w in todo {
                w.answer(Some(&e));
            }
            return;
        }
        let mut kept: Vec<Box<dyn Write>> = Vec::with_capacity(todo.len());
        let mut rest = todo.into_iter();
        let mut retry = None;
        while let Some(mut w) = rest.next() {
            if nested {
                if let Err(e) = exec(conn, "SAVEPOINT ironloop_write") {
                    w.answer(Some(&e));
                    continue;
                }
            }
            let keep = w.run(conn);
            if conn.is_autocommit() {
                // SQLite rolled the transaction back: `w` failed, the writes kept
                // before it are gone and go again with the rest.
                if keep {
                    // Its statements ended the transaction themselves: not a write.
                    w.answer(Some(&setup_error("a write ended its transaction".into())));
                } else {
                    w.answer(None);
                }
                retry = Some(kept.drain(..).chain(rest.by_ref()).collect::<Vec<_>>());
                break;
            }
            let end = match (nested, keep) {
                (true, true) => exec(conn, "RELEASE ironloop_write"),
                (true, false) => {
                    conn.execute_batch("ROLLBACK TO ironloop_write; RELEASE ironloop_write")
                }
                (false, _) => Ok(()),
            };
            match (end, keep) {
                (Ok(()), true) => kept.push(w),
                (Ok(()), false) => w.answer(None),
                (Err(e), _) => {
                    // Not expected (the savepoint is there): the transaction's state
                    // is unknown, so it is rolled back and the group goes again.
                    w.answer(Some(&e));
                    let _ = exec(conn, "ROLLBACK");
                    retry = Some(kept.drain(..).chain(rest.by_ref()).collect());
                    break;
                }
            }
        }
        if let Some(again) = retry {
            todo = again;
            continue;
        }
        // A lone write that changes nothing is rolled back; otherwise the group commits.
        let done = if kept.is_empty() {
            exec(conn, "ROLLBACK")
        } else {
            exec(conn, "COMMIT")
        };
        if done.is_err() && !conn.is_autocommit() {
            let _ = exec(conn, "ROLLBACK");
        }
        let failed = done.err();
        for w in kept {
            w.answer(failed.as_ref());
        }
        return;
    }
}

/// A stored record as read: its id, parent and text (see [`record`]).
type RecordRow = (String, Option<String>, String);

/// Reads a [`RecordRow`] from `checkpoint_id, parent_id, record` columns.
fn record_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecordRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

/// The record at `seq`.
fn read_row(conn: &Connection, seq: i64) -> rusqlite::Result<RecordRow> {
    conn.prepare_cached("SELECT checkpoint_id, parent_id, record FROM checkpoints WHERE seq = ?1")?
        .query_row([seq], record_row)
}

/// The row of the thread's checkpoint `id`, or of its latest when `id` is `None`.
fn read_record_at(
    conn: &Connection,
    thread_id: &str,
    id: Option<&str>,
) -> rusqlite::Result<Option<RecordRow>> {
    let Some((no, last)) = thread_latest(conn, thread_id)? else {
        return Ok(None);
    };
    let seq = match id {
        Some(id) => find(conn, no, last.as_ref(), id)?,
        None => last.map(|l| l.seq),
    };
    seq.map(|seq| read_row(conn, seq)).transpose()
}

/// The pending writes saved against `checkpoint_id`, in the order they were saved.
fn read_writes(
    conn: &Connection,
    thread_id: &str,
    checkpoint_id: &str,
) -> rusqlite::Result<Vec<WriteRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, idx, node, channel, value FROM writes \
         WHERE thread_id = ?1 AND checkpoint_id = ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![thread_id, checkpoint_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })?;
    rows.collect()
}

/// What saving a record found.
enum Next {
    Saved,
    /// A record with that id was there already (its parent and text).
    Stored(Option<String>, String),
    /// The thread's latest checkpoint is not the record's parent (`put_next`).
    Moved(Option<String>),
}

/// One put of a batch, encoded, ready for the SQLite thread.
enum Row {
    Record {
        id: String,
        parent_id: Option<String>,
        json: String,
        next: bool,
    },
    Writes {
        checkpoint_id: String,
        writes: Vec<WriteRow>,
    },
}

/// The thread's number in `threads`, if it has one.
fn thread_no(conn: &Connection, t: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT no FROM threads WHERE thread_id = ?1")?
        .query_row([t], |r| r.get(0))
        .optional()
}

/// A thread's latest checkpoint: its `seq`, id and sort key (the greatest of the
/// thread's keys: `sortkey` is never less than the key of an earlier row).
struct Latest {
    seq: i64,
    id: String,
    key: String,
}

fn latest(conn: &Connection, no: i64) -> rusqlite::Result<Option<Latest>> {
    conn.prepare_cached(
        "SELECT seq, checkpoint_id, coalesce(sortkey, checkpoint_id) FROM checkpoints \
         WHERE seq > ?1 AND seq < ?2 ORDER BY seq DESC LIMIT 1",
    )?
    .query_row(params![no * SPAN, (no + 1) * SPAN], |r| {
        Ok(Latest {
            seq: r.get(0)?,
            id: r.get(1)?,
            key: r.get(2)?,
        })
    })
    .optional()
}

/// Thread `t`'s number and latest checkpoint, in one statement ([`thread_no`] then
/// [`latest`]): every step and every load starts with them.
fn thread_latest(conn: &Connection, t: &str) -> rusqlite::Result<Option<(i64, Option<Latest>)>> {
    conn.prepare_cached(
        "SELECT t.no, c.seq, c.checkpoint_id, coalesce(c.sortkey, c.checkpoint_id) \
         FROM threads t LEFT JOIN checkpoints c ON c.seq = ( \
             SELECT seq FROM checkpoints WHERE seq > t.no * ?2 AND seq < (t.no + 1) * ?2 \
             ORDER BY seq DESC LIMIT 1) \
         WHERE t.thread_id = ?1",
    )?
    .query_row(params![t, SPAN], |r| {
        let last = match r.get::<_, Option<i64>>(1)? {
            Some(seq) => Some(Latest {
                seq,
                id: r.get(2)?,
                key: r.get(3)?,
            }),
            None => None,
        };
        Ok((r.get(0)?, last))
    })
    .optional()
}

/// The `seq` of checkpoint `id` of thread `no` (whose latest is `latest`).
///
/// A record whose id was greater than every key before it (ironloop's ids are UUIDs
/// of version 7: they grow with time) is stored with no `sortkey`: the thread's rows
/// are in the order of their ids, and a binary search over `seq` finds it, reading
/// about log2(n) rows and writing no index. Any other record (an id from elsewhere, a
/// clock that went back, a file of version 3) has a `sortkey` (the greatest key before
/// it, so that the keys never decrease) and is found through the partial index
/// `checkpoints_unordered`.
fn find(
    conn: &Connection,
    no: i64,
    latest: Option<&Latest>,
    id: &str,
) -> rusqlite::Result<Option<i64>> {
    let Some(latest) = latest else {
        return Ok(None);
    };
    if latest.id == id {
        return Ok(Some(latest.seq));
    }
    let unordered: Option<i64> = conn
        .prepare_cached(
            "SELECT seq FROM checkpoints WHERE checkpoint_id = ?1 AND sortkey IS NOT NULL \
             AND +seq > ?2 AND +seq < ?3 LIMIT 1",
        )?
        .query_row(params![id, no * SPAN, (no + 1) * SPAN], |r| r.get(0))
        .optional()?;
    if unordered.is_some() || id > latest.key.as_str() {
        return Ok(unordered);
    }
    // The first row whose key is at least `id`, among the rows in [lo, hi).
    let mut probe = conn.prepare_cached(
        "SELECT seq, coalesce(sortkey, checkpoint_id), sortkey IS NULL FROM checkpoints \
         WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT 1",
    )?;
    let (mut lo, mut hi) = (no * SPAN + 1, latest.seq + 1);
    let mut first: Option<(i64, String, bool)> = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let row: Option<(i64, String, bool)> = probe
            .query_row(params![mid, hi], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        match row {
            Some((seq, key, _)) if key.as_str() < id => lo = seq + 1,
            found => {
                if found.is_some() {
                    first = found;
                }
                hi = mid;
            }
        }
    }
    Ok(first.and_then(|(seq, key, ordered)| (ordered && key == id).then_some(seq)))
}

/// Saves a record in `tx` (a connection inside a write transaction) as `put` does (`put_next` when `next`: only if the thread's
/// latest checkpoint is its parent); the parent's pending writes go with it.
///
/// The common case, a run's next step, writes one b-tree: the record's row, at the
/// end of its thread's `seq`s; its id (greater than the thread's keys) and its parent
/// (the latest) need no index entry. When `tips` knows where the thread ended, that
/// case is a check and the insert (see [`tips`]).
fn save_record(
    tx: &Connection,
    tips: &Tips,
    t: &str,
    id: &str,
    parent_id: &Option<String>,
    json: &str,
    next: bool,
) -> rusqlite::Result<Next> {
    if tips.append(tx, t, id, parent_id.as_deref(), json)? {
        return Ok(Next::Saved);
    }
    let (no, last) = match thread_latest(tx, t)? {
        Some(found) => found,
        None => {
            tx.prepare_cached("INSERT INTO threads (thread_id) VALUES (?1)")?
                .execute([t])?;
            (tx.last_insert_rowid(), None)
        }
    };
    if let Some(seq) = find(tx, no, last.as_ref(), id)? {
        let (parent, text) = tx
            .prepare_cached("SELECT parent_id, record FROM checkpoints WHERE seq = ?1")?
            .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))?;
        return Ok(Next::Stored(parent, text));
    }
    let latest_id = last.as_ref().map(|l| l.id.as_str());
    if next && latest_id != parent_id.as_deref() {
        return Ok(Next::Moved(latest_id.map(str::to_owned)));
    }
    let parent_seq = match (parent_id, &last) {
        (Some(p), Some(l)) if *p == l.id => Some(l.seq),
        (Some(p), _) => find(tx, no, last.as_ref(), p)?,
        (None, _) => None,
    };
    let seq = last.as_ref().map_or(no * SPAN, |l| l.seq) + 1;
    if seq >= (no + 1) * SPAN {
        return Err(setup_error(format!(
            "thread {t:?} has {} checkpoints, the most one thread can hold; delete some \
             (delete_checkpoints) or start a new thread",
            SPAN - 1
        )));
    }
    // `None`: the id is greater than every key of the thread (see `find`).
    let sortkey = match &last {
        Some(l) if id <= l.key.as_str() => Some(l.key.as_str()),
        _ => None,
    };
    tx.prepare_cached(
        "INSERT INTO checkpoints (seq, checkpoint_id, parent_id, parent_seq, sortkey, record) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![seq, id, parent_id, parent_seq, sortkey, json])?;
    // Records put before their parent (an import in any order) now have it.
    tx.prepare_cached(
        "UPDATE checkpoints SET parent_seq = ?1 WHERE parent_id = ?2 \
         AND parent_seq IS NULL AND parent_id IS NOT NULL AND +seq > ?3 AND +seq < ?4",
    )?
    .execute(params![seq, id, no * SPAN, (no + 1) * SPAN])?;
    delete_parent_writes(tx, t, parent_id.as_deref())?;
    let key = sortkey.unwrap_or(id).to_owned();
    tips.set(
        t,
        Tip {
            no,
            seq,
            id: id.to_owned(),
            key,
        },
    );
    Ok(Next::Saved)
}

/// A new checkpoint's parent has run: its pending writes go.
fn delete_parent_writes(tx: &Connection, t: &str, parent_id: Option<&str>) -> rusqlite::Result<()> {
    if let Some(parent) = parent_id {
        tx.prepare_cached("DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id = ?2")?
            .execute(params![t, parent])?;
    }
    Ok(())
}

/// Inserts pending writes in `tx`, ignoring those whose `(task_id, idx)` is stored.
fn insert_writes(
    tx: &Connection,
    t: &str,
    checkpoint_id: &str,
    rows: &[WriteRow],
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO writes \
         (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (thread_id, checkpoint_id, task_id, idx) DO NOTHING",
    )?;
    for (task_id, idx, node, channel, value) in rows {
        stmt.execute(params![
            t,
            checkpoint_id,
            task_id,
            idx,
            node,
            channel,
            value
        ])?;
    }
    Ok(())
}

/// What the SQLite thread is asked to do.
enum Msg {
    /// A statement (or transaction) on the saver's connection.
    Run(Job),
    /// A write, committed with the writes queued beside it (see [`Write`]).
    Write(Box<dyn Write>),
    /// Copy the WAL back into the database file (see [`Wal`]).
    Checkpoint,
}

struct Worker {
    jobs: mpsc::Sender<Msg>,
    thread: JoinHandle<std::result::Result<(), String>>,
}

/// The saver's connection: used by its SQLite thread, and by a caller that may block
/// (see [`caller`]) directly. `None` once the thread has closed it.
type Shared = Arc<Mutex<Option<Connection>>>;

/// WAL checkpoints off the committing path.
///
/// SQLite's default is to checkpoint inside the `COMMIT` that finds the WAL past its
/// limit: copying the WAL into the file and syncing both (two `fsync`s) on the path of
/// the step that happened to cross it, which was most of a durable step's cost (see
/// BENCHMARKS.md). The connection's WAL hook only notes that the WAL grew by
/// [`WAL_PAGES`] since the last copy was asked for; the SQLite thread then runs a
/// `PASSIVE` checkpoint on a connection of its own, which never blocks writers, while
/// steps go on committing. A commit is durable as before: in the WAL, handed to the
/// OS, when `put` returns.
///
/// A passive copy alone never lets the WAL start over under a steady stream of
/// commits: SQLite rewinds the WAL only for a writer whose transaction began after the
/// whole WAL was copied, and the next step always begins while the copy of the last
/// one is under way. The WAL then grew without end (41 MB after W9's 2,000 turns), and
/// every commit and page read got slower with it. So once the WAL is past
/// [`WAL_RESTART_PAGES`], the copy is a `RESTART` one: it takes the write lock for the
/// copy (writers wait that long, a few ms per 4 MiB of WAL), waits up to
/// [`RESTART_WAIT`] for readers to leave the WAL, and the next commit starts the WAL
/// from its beginning. When the lock or the readers do not come free in time it copies
/// what it can, as a passive one would, and the next one tries again.
#[derive(Default)]
struct Wal {
    /// A checkpoint was asked for and has not finished.
    requested: AtomicBool,
    /// Asked for, and the SQLite thread not told yet.
    unsent: AtomicBool,
    /// The WAL's size in pages when the last checkpoint was asked for.
    asked_at: AtomicI32,
    /// The checkpoint asked for is to restart the WAL.
    restart: AtomicBool,
}

/// How much the WAL grows, in pages, between two copies back (1 MiB of 4 KiB pages);
/// the file is truncated to [`JOURNAL_SIZE_LIMIT`] when the WAL restarts.
const WAL_PAGES: i32 = 256;
const JOURNAL_SIZE_LIMIT: i64 = 1 << 20;
/// The WAL's size, in pages, past which a copy also restarts it (see [`Wal`]).
const WAL_RESTART_PAGES: i32 = 4 * WAL_PAGES;
/// How long a restarting copy waits for the write lock and then for readers.
const RESTART_WAIT: Duration = Duration::from_millis(50);

impl Wal {
    /// The WAL hook: a commit left `pages` pages in the WAL.
    fn committed(&self, pages: i32) {
        let asked_at = self.asked_at.load(Ordering::Relaxed);
        // `pages < asked_at`: the WAL restarted since.
        let due = pages >= WAL_PAGES && (pages < asked_at || pages >= asked_at + WAL_PAGES);
        if due && !self.requested.swap(true, Ordering::AcqRel) {
            self.asked_at.store(pages, Ordering::Relaxed);
            self.restart
                .store(pages >= WAL_RESTART_PAGES, Ordering::Relaxed);
            self.unsent.store(true, Ordering::Release);
        }
    }

    /// Whether a checkpoint was asked for that nobody has passed on yet (and now this
    /// caller must).
    fn take_unsent(&self) -> bool {
        self.unsent.load(Ordering::Acquire) && self.unsent.swap(false, Ordering::AcqRel)
    }
}

/// A durable [`Checkpointer`] backed by one SQLite file (see the module documentation).
///
/// ```no_run
/// # async fn demo() -> ironloop::checkpoint::Result<()> {
/// use ironloop::checkpoint::{Checkpointer, SqliteSaver};
/// let saver = SqliteSaver::open("checkpoints.db")?;
/// let latest = saver.get("thread-1", None).await?;
/// # Ok(()) }
/// ```
pub struct SqliteSaver {
    path: PathBuf,
    worker: Mutex<Option<Worker>>,
    conn: Shared,
    wal: Arc<Wal>,
    /// Where each thread ended when this saver last wrote it (see [`tips`]).
    tips: Arc<Tips>,
    /// The file whose bytes are the threads' run leases (see [`super::lease`]),
    /// opened by the first run.
    #[cfg(unix)]
    leases: Mutex<Option<Arc<super::lease::file::LeaseFile>>>,
    /// How records are stored: with a checksum, or under a key.
    codec: Records,
}

impl std::fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSaver")
            .field("path", &self.path)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl SqliteSaver {
    /// Opens (creating if missing) the checkpoint file at `path` and its schema, in WAL
    /// mode, and starts the saver's SQLite thread. `":memory:"` gives a private
    /// in-memory database (not durable; useful for tests).
    ///
    /// Fails with a message naming the file when it cannot be created or opened (missing
    /// directory, no write permission), is not a SQLite database, or holds tables that
    /// were not made by ironloop (e.g. a LangGraph checkpoint file).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut conn = init_connection(&path).map_err(|e| describe(&path, "open", e))?;
        let tips = Arc::new(Tips::of(&conn).map_err(|e| describe(&path, "open", e))?);
        let wal = Arc::new(Wal::default());
        let hook = wal.clone();
        // Replaces SQLite's own checkpoint-on-commit (see [`Wal`]).
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            hook.committed(pages);
            Ok(())
        }))
        .map_err(|e| describe(&path, "open", e))?;
        let conn: Shared = Arc::new(Mutex::new(Some(conn)));
        let (jobs, rx) = mpsc::channel::<Msg>();
        let (shared, wal_state, file) = (conn.clone(), wal.clone(), path.clone());
        let thread = std::thread::Builder::new()
            .name("ironloop-sqlite".into())
            .spawn(move || serve(&file, &shared, &wal_state, &rx))
            .map_err(|e| {
                CheckpointError::storage(format!(
                    "SqliteSaver({}): cannot start the SQLite thread: {e}",
                    path.display()
                ))
            })?;
        Ok(Self {
            path,
            worker: Mutex::new(Some(Worker { jobs, thread })),
            conn,
            wal,
            tips,
            #[cfg(unix)]
            leases: Mutex::new(None),
            codec: Records::default(),
        })
    }

    /// This saver, its records authenticated (and encrypted, if the key says so) with
    /// `key` (see [`super::seal`]).
    pub fn with_key(mut self, key: RecordKey) -> Self {
        self.codec = Records::new(Some(key));
        self
    }

    /// The same as [`SqliteSaver::open`] (LangGraph's spelling).
    pub fn from_conn_string(path: impl AsRef<Path>) -> Result<Self> {
        Self::open(path)
    }

    /// The path of the file this saver writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock_worker().is_none()
    }

    /// Finishes the work already queued, closes the connection and stops the saver's
    /// thread (blocking the caller until then). Later calls on the saver fail with "the
    /// SqliteSaver was closed". Calling `close` again does nothing.
    pub fn close(&self) -> Result<()> {
        let Some(Worker { jobs, thread }) = self.lock_worker().take() else {
            return Ok(());
        };
        drop(jobs);
        if thread.thread().id() == std::thread::current().id() {
            // Dropped from inside one of its own jobs: the loop ends by itself.
            return Ok(());
        }
        self.joined(thread.join())
    }

    /// The outcome of joining the SQLite thread.
    fn joined(&self, r: std::thread::Result<std::result::Result<(), String>>) -> Result<()> {
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(CheckpointError::storage(format!(
                "SqliteSaver({}): closing the database failed: {e}; the data already \
                 committed is safe",
                self.path.display()
            ))),
            Err(_) => Err(CheckpointError::storage(format!(
                "SqliteSaver({}): the SQLite thread panicked while closing",
                self.path.display()
            ))),
        }
    }

    /// The file beside the database whose bytes are the threads' run leases (its
    /// name plus `-runs`; see [`super::lease`]), opened once; `None` for a private
    /// in-memory database, which no other process can open.
    #[cfg(unix)]
    fn lease_file(&self, op: &str) -> Result<Option<Arc<super::lease::file::LeaseFile>>> {
        if self.is_closed() {
            return Err(CheckpointError::storage(format!(
                "SqliteSaver({}): cannot {op}: {CLOSED}",
                self.path.display()
            )));
        }
        let p = self.path.as_os_str();
        if p.is_empty() || p == ":memory:" {
            return Ok(None);
        }
        let mut slot = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = &*slot {
            return Ok(Some(f.clone()));
        }
        let mut name = p.to_os_string();
        name.push("-runs");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&name)
            .map_err(|e| {
                CheckpointError::storage(format!(
                    "SqliteSaver({}): cannot open {} (where runs on the file take their \
                     thread's lease, so that two processes do not run one thread at once): \
                     {e}; SQLite needs write access to the database's directory",
                    self.path.display(),
                    PathBuf::from(&name).display()
                ))
            })?;
        let file = super::lease::file::LeaseFile::new(file);
        *slot = Some(file.clone());
        Ok(Some(file))
    }

    #[cfg(unix)]
    fn lease_error(&self, thread_id: &str, e: std::io::Error) -> CheckpointError {
        CheckpointError::storage(format!(
            "SqliteSaver({}): cannot lock thread {thread_id:?}'s run lease: {e}; the \
             database's -runs file must be on a local filesystem",
            self.path.display()
        ))
    }

    fn lock_worker(&self) -> std::sync::MutexGuard<'_, Option<Worker>> {
        self.worker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the saver's connection and returns its result: on the calling
    /// thread when it may block (see [`caller`]) and the connection is free, else on
    /// the SQLite thread, awaited.
    async fn call<R, F>(&self, op: &'static str, mut f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnMut(&mut Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        if caller::may_block() {
            if let Some(r) = self.call_here(&mut f) {
                self.pass_on_checkpoint();
                return self.outcome(op, r);
            }
        }
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(|| f(conn))));
        });
        {
            let worker = self.lock_worker();
            let Some(w) = worker.as_ref() else {
                return Err(self.closed(op));
            };
            if w.jobs.send(Msg::Run(job)).is_err() {
                return Err(self.thread_gone(op));
            }
        }
        match rx.await {
            Ok(r) => self.outcome(op, r),
            Err(_) => Err(self.thread_gone(op)),
        }
    }

    /// Runs the write `f` in a write transaction on the saver's connection, committed
    /// when `keep` says so of its result (else rolled back): on the calling thread as
    /// [`call`](Self::call) does, else on the SQLite thread with the writes queued
    /// beside it (see [`Write`]). Returns once committed (or not).
    async fn call_write<R, F>(&self, op: &'static str, keep: fn(&R) -> bool, mut f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        if caller::may_block() {
            let mut here = |conn: &mut Connection| {
                let tx = Tx::begin(conn, true)?;
                let r = f(&tx)?;
                if keep(&r) {
                    tx.commit()?;
                }
                Ok(r)
            };
            if let Some(r) = self.call_here(&mut here) {
                self.pass_on_checkpoint();
                return self.outcome(op, r);
            }
        }
        let (tx, rx) = oneshot::channel();
        let job = WriteJob {
            f,
            keep,
            out: None,
            tx,
        };
        {
            let worker = self.lock_worker();
            let Some(w) = worker.as_ref() else {
                return Err(self.closed(op));
            };
            if w.jobs.send(Msg::Write(Box::new(job))).is_err() {
                return Err(self.thread_gone(op));
            }
        }
        match rx.await {
            Ok(r) => self.outcome(op, r),
            Err(_) => Err(self.thread_gone(op)),
        }
    }

    /// `f` on the calling thread, unless the connection is busy: in use by the SQLite
    /// thread, or the file's write lock held by another connection (then `f` waits
    /// there, where a sync caller still answers Ctrl-C). `None` when it did not run to
    /// the end (a transaction it began was rolled back).
    fn call_here<R, F>(&self, f: &mut F) -> Option<std::thread::Result<rusqlite::Result<R>>>
    where
        F: FnMut(&mut Connection) -> rusqlite::Result<R>,
    {
        if self.is_closed() {
            return None;
        }
        let mut guard = match self.conn.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        let conn = guard.as_mut()?;
        // Do not wait for another process's lock here: the SQLite thread does that.
        conn.busy_timeout(Duration::ZERO).ok()?;
        let r = catch_unwind(AssertUnwindSafe(|| f(conn)));
        if conn.busy_timeout(BUSY_TIMEOUT).is_err() {
            // The connection would no longer wait for locks: let the thread have it
            // as it is; the next open sets the timeout again.
            log::warn!(
                "SqliteSaver({}): cannot restore the busy timeout",
                self.path.display()
            );
        }
        match r {
            Ok(Err(rusqlite::Error::SqliteFailure(e, _)))
                if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
            {
                None
            }
            r => Some(r),
        }
    }

    /// Tells the SQLite thread to checkpoint the WAL when a commit made here asked for
    /// it (see [`Wal`]).
    fn pass_on_checkpoint(&self) {
        if self.wal.take_unsent() {
            if let Some(w) = self.lock_worker().as_ref() {
                let _ = w.jobs.send(Msg::Checkpoint);
            }
        }
    }

    /// What a call's closure returned, or how it panicked.
    fn outcome<R>(&self, op: &str, r: std::thread::Result<rusqlite::Result<R>>) -> Result<R> {
        match r {
            Ok(r) => r.map_err(|e| describe(&self.path, op, e)),
            Err(_panic) => Err(CheckpointError::storage(format!(
                "SqliteSaver({}): {op} panicked on the SQLite thread (a bug in ironloop); \
                 the transaction was rolled back",
                self.path.display()
            ))),
        }
    }

    fn closed(&self, op: &str) -> CheckpointError {
        CheckpointError::storage(format!(
            "SqliteSaver({}): cannot {op}: {CLOSED}",
            self.path.display()
        ))
    }

    fn thread_gone(&self, op: &str) -> CheckpointError {
        CheckpointError::storage(format!(
            "SqliteSaver({}): cannot {op}: the SQLite thread has stopped; open a new saver",
            self.path.display()
        ))
    }

    /// The ancestors of `id` only, up to the root or the nearest snapshot, with one
    /// recursive query over the `(thread_id, checkpoint_id)` index. UNION (not UNION
    /// ALL) makes a corrupt, cyclic chain terminate; the order is restored by
    /// following the parent links.
    async fn read_chain(
        &self,
        thread_id: &str,
        id: &str,
        from: ChainFrom,
    ) -> Result<Vec<CheckpointRecord>> {
        let (t, target) = (thread_id.to_owned(), id.to_owned());
        let stop = from == ChainFrom::Snapshot;
        let rows = self
            .call("read a checkpoint chain", move |conn| {
                let conn = &Tx::begin(conn, false)?;
                let Some((no, last)) = thread_latest(conn, &t)? else {
                    return Ok(Vec::new());
                };
                let Some(start) = find(conn, no, last.as_ref(), &target)? else {
                    return Ok(Vec::new());
                };
                // A parent is followed by its `seq` only while the row there is the
                // parent named (a deleted parent's `seq` may hold another row later).
                let mut stmt = conn.prepare_cached(
                    "WITH RECURSIVE ancestors(seq, parent_id, parent_seq, stop) AS ( \
                         SELECT seq, parent_id, parent_seq, ?2 AND (substr(record, 1, 3) IN (?3, ?5, ?6) \
                           OR substr(record, 1, 12) = ?4) \
                         FROM checkpoints WHERE seq = ?1 \
                       UNION \
                         SELECT c.seq, c.parent_id, c.parent_seq, ?2 AND \
                           (substr(c.record, 1, 3) IN (?3, ?5, ?6) \
                           OR substr(c.record, 1, 12) = ?4) \
                         FROM ancestors a \
                         JOIN checkpoints c ON c.seq = a.parent_seq \
                           AND c.checkpoint_id = a.parent_id \
                         WHERE NOT a.stop \
                     ) \
                     SELECT c.checkpoint_id, c.parent_id, c.record \
                     FROM ancestors a JOIN checkpoints c ON c.seq = a.seq",
                )?;
                let rows = stmt.query_map(
                    params![
                        start,
                        stop,
                        record::SNAPSHOT_PREFIX,
                        record::SNAPSHOT_PREFIX_V1,
                        record::SNAPSHOT_PREFIX_4,
                        SNAPSHOT_PREFIX_SEALED
                    ],
                    record_row,
                )?;
                rows.collect::<rusqlite::Result<Vec<RecordRow>>>()
            })
            .await?;
        let records = self.decode_records(thread_id, rows)?;
        order_chain(
            &format!("SqliteSaver({})", self.path.display()),
            thread_id,
            records,
            id,
            from,
        )
    }

    fn decode_record(&self, thread_id: &str, row: &RecordRow) -> Result<CheckpointRecord> {
        self.codec
            .decode(&row.2, &row.0, row.1.as_deref())
            .map_err(|e| match e {
                ReadError::Unreadable(e) => CheckpointError::serialization(format!(
                    "SqliteSaver({}): {} of thread {thread_id:?} cannot be read ({e}); \
                     the file was written by an incompatible version or modified by hand",
                    self.path.display(),
                    super::record_name(&row.0)
                )),
                ReadError::Key(m) => CheckpointError::Integrity(format!(
                    "SqliteSaver({}): {} of thread {thread_id:?} {m}",
                    self.path.display(),
                    super::record_name(&row.0)
                )),
            })
    }

    fn decode_records(
        &self,
        thread_id: &str,
        rows: Vec<RecordRow>,
    ) -> Result<Vec<CheckpointRecord>> {
        rows.iter()
            .map(|j| self.decode_record(thread_id, j))
            .collect()
    }

    fn encode_record(&self, r: &CheckpointRecord) -> Result<String> {
        self.codec.encode(r).map_err(|e| {
            CheckpointError::serialization(format!(
                "SqliteSaver({}): cannot serialise the checkpoint record to JSON: {e}",
                self.path.display()
            ))
        })
    }

    /// The rows of `writes` of checkpoint `checkpoint_id`, their values' texts made by
    /// the saver's codec.
    fn encode_writes(
        &self,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<Vec<WriteRow>> {
        writes
            .into_iter()
            .map(|w| {
                let value = self
                    .codec
                    .encode_write(&w.place(checkpoint_id), &w.value)
                    .map_err(|e| {
                        CheckpointError::serialization(format!(
                            "SqliteSaver({}): cannot serialise the value written to {:?} to \
                             JSON: {e}",
                            self.path.display(),
                            w.channel
                        ))
                    })?;
                Ok((w.task_id, w.idx, w.node, w.channel, value))
            })
            .collect()
    }
}

impl Drop for SqliteSaver {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("{e}");
        }
    }
}

#[async_trait]
impl Checkpointer for SqliteSaver {
    async fn put_many(&self, thread_id: &str, mut puts: Vec<Put>) -> Result<()> {
        Put::drop_superseded_writes(&mut puts);
        let rows = puts
            .into_iter()
            .map(|p| match p {
                Put::Record { record, next } => Ok(Row::Record {
                    json: self.encode_record(&record)?,
                    id: record.id,
                    parent_id: record.parent_id,
                    next,
                }),
                Put::Writes {
                    checkpoint_id,
                    writes,
                } => Ok(Row::Writes {
                    writes: self.encode_writes(&checkpoint_id, writes)?,
                    checkpoint_id,
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        let t = thread_id.to_owned();
        let tips = self.tips.clone();
        let codec = self.codec.clone();
        // One write transaction, or a savepoint of a group's (see `Write`; BEGIN
        // IMMEDIATE holds the file's write lock): every check and insert are atomic
        // for every process that shares the file, and a failed check leaves nothing of
        // the batch (rolled back).
        let failed = self
            .call_write("save a checkpoint", Option::is_none, move |tx| {
                for row in &rows {
                    match row {
                        Row::Record {
                            id,
                            parent_id,
                            json,
                            next,
                        } => match save_record(tx, &tips, &t, id, parent_id, json, *next)? {
                            Next::Saved => {}
                            Next::Stored(p, s)
                                if codec.same(
                                    id,
                                    (&s, p.as_deref()),
                                    (json, parent_id.as_deref()),
                                ) => {}
                            other => return Ok(Some((id.clone(), parent_id.clone(), other))),
                        },
                        Row::Writes {
                            checkpoint_id,
                            writes,
                        } => insert_writes(tx, &t, checkpoint_id, writes)?,
                    }
                }
                Ok(None)
            })
            .await?;
        match failed {
            None => Ok(()),
            Some((id, _, Next::Stored(..))) => Err(same_id_conflict(thread_id, &id)),
            Some((_, expected, Next::Moved(latest))) => Err(advanced_conflict(
                thread_id,
                expected.as_deref(),
                latest.as_deref(),
            )),
            Some((_, _, Next::Saved)) => unreachable!("a saved record is not a failure"),
        }
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let rows = self.encode_writes(checkpoint_id, writes)?;
        let thread_id = thread_id.to_owned();
        let checkpoint_id = checkpoint_id.to_owned();
        self.call_write(
            "save pending writes",
            |_| true,
            move |tx| insert_writes(tx, &thread_id, &checkpoint_id, &rows),
        )
        .await
    }

    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>> {
        let t = thread_id.to_owned();
        let id = id.map(str::to_owned);
        let json = self
            .call("read a checkpoint", move |conn| {
                // One read transaction: the statements below see one state of the file.
                let conn = &Tx::begin(conn, false)?;
                read_record_at(conn, &t, id.as_deref())
            })
            .await?;
        json.map(|j| self.decode_record(thread_id, &j)).transpose()
    }

    async fn get_with_writes(
        &self,
        thread_id: &str,
        id: Option<&str>,
    ) -> Result<Option<(CheckpointRecord, Vec<PendingWrite>)>> {
        let t = thread_id.to_owned();
        let id = id.map(str::to_owned);
        let found = self
            .call("read a checkpoint and its pending writes", move |conn| {
                let conn = &Tx::begin(conn, false)?;
                let Some(row) = read_record_at(conn, &t, id.as_deref())? else {
                    return Ok(None);
                };
                let writes = read_writes(conn, &t, &row.0)?;
                Ok(Some((row, writes)))
            })
            .await?;
        found
            .map(|(row, writes)| {
                Ok((
                    self.decode_record(thread_id, &row)?,
                    writes_from_rows(
                        &format!("SqliteSaver({})", self.path.display()),
                        &self.codec,
                        thread_id,
                        &row.0,
                        writes,
                    )?,
                ))
            })
            .transpose()
    }

    async fn chain(&self, thread_id: &str, id: &str) -> Result<Vec<CheckpointRecord>> {
        self.read_chain(thread_id, id, ChainFrom::Root).await
    }

    async fn chain_from_snapshot(
        &self,
        thread_id: &str,
        id: &str,
    ) -> Result<Vec<CheckpointRecord>> {
        self.read_chain(thread_id, id, ChainFrom::Snapshot).await
    }

    async fn list(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<CheckpointRecord>> {
        let t = thread_id.to_owned();
        let before = before.map(str::to_owned);
        // SQLite reads a negative LIMIT as "no limit".
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = self
            .call("list checkpoints", move |conn| {
                let conn = &Tx::begin(conn, false)?;
                let Some((no, last)) = thread_latest(conn, &t)? else {
                    return Ok(Vec::new());
                };
                // An unknown `before` filters nothing, as in MemorySaver.
                let below = match &before {
                    Some(b) => find(conn, no, last.as_ref(), b)?,
                    None => None,
                };
                let mut stmt = conn.prepare_cached(
                    "SELECT checkpoint_id, parent_id, record FROM checkpoints \
                     WHERE seq > ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
                )?;
                let below = below.unwrap_or((no + 1) * SPAN);
                let rows = stmt.query_map(params![no * SPAN, below, limit], record_row)?;
                rows.collect::<rusqlite::Result<Vec<RecordRow>>>()
            })
            .await?;
        self.decode_records(thread_id, rows)
    }

    async fn pending_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Vec<PendingWrite>> {
        let (t, c) = (thread_id.to_owned(), checkpoint_id.to_owned());
        let rows = self
            .call("read pending writes", move |conn| read_writes(conn, &t, &c))
            .await?;
        writes_from_rows(
            &format!("SqliteSaver({})", self.path.display()),
            &self.codec,
            thread_id,
            checkpoint_id,
            rows,
        )
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        let (t, ns) = (thread_id.to_owned(), super::ns_prefix(thread_id));
        self.call("delete a thread", move |conn| {
            let tx = Tx::begin(conn, true)?;
            tx.prepare_cached(
                "DELETE FROM checkpoints WHERE seq IN (SELECT c.seq FROM threads t \
                 JOIN checkpoints c ON c.seq > t.no << 32 AND c.seq < (t.no + 1) << 32 \
                 WHERE t.thread_id = ?1 OR substr(t.thread_id, 1, length(?2)) = ?2)",
            )?
            .execute(params![t, ns])?;
            for table in ["threads", "writes", "claims", "activity"] {
                tx.prepare_cached(&format!(
                    "DELETE FROM {table} WHERE thread_id = ?1 \
                     OR substr(thread_id, 1, length(?2)) = ?2"
                ))?
                .execute(params![t, ns])?;
            }
            tx.commit()
        })
        .await
    }

    async fn delete_checkpoints(&self, thread_id: &str, ids: Vec<String>) -> Result<()> {
        let t = thread_id.to_owned();
        self.call("delete checkpoints", move |conn| {
            let tx = Tx::begin(conn, true)?;
            {
                let mut st = tx.prepare_cached(
                    "DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id = ?2",
                )?;
                for id in &ids {
                    st.execute(params![t, id])?;
                }
            }
            if let Some(no) = thread_no(&tx, &t)? {
                let mut deleted = 0;
                for id in &ids {
                    let last = latest(&tx, no)?;
                    if let Some(seq) = find(&tx, no, last.as_ref(), id)? {
                        deleted += tx
                            .prepare_cached("DELETE FROM checkpoints WHERE seq = ?1")?
                            .execute([seq])?;
                    }
                }
                if deleted > 0 {
                    // Their children are orphans now (found again if they come back).
                    tx.prepare_cached(
                        "UPDATE checkpoints SET parent_seq = NULL \
                         WHERE seq > ?1 AND seq < ?2 AND parent_seq IS NOT NULL \
                         AND NOT EXISTS (SELECT 1 FROM checkpoints p \
                           WHERE p.seq = checkpoints.parent_seq)",
                    )?
                    .execute(params![no * SPAN, (no + 1) * SPAN])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn list_stalled(
        &self,
        stale_after: Duration,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        let now = now_secs();
        let cutoff = now - stale_after.as_secs_f64();
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.call("list stalled threads", move |conn| {
            let mut stmt = conn.prepare_cached(&stalled_sql())?;
            let rows = stmt.query_map(params![cutoff, now, limit], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    async fn claim_stalled(
        &self,
        owner: &str,
        stale_after: Duration,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<String>> {
        check_claim(owner, stale_after, lease)?;
        let owner = owner.to_owned();
        let now = now_secs();
        let cutoff = now - stale_after.as_secs_f64();
        let until = now + lease.as_secs_f64();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // One write transaction: the check and the claims are atomic for every process.
        self.call("claim stalled threads", move |conn| {
            let tx = Tx::begin(conn, true)?;
            let ids: Vec<String> = {
                let mut stmt = tx.prepare_cached(&stalled_sql())?;
                let rows = stmt.query_map(params![cutoff, now, limit], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            {
                let mut claim = tx.prepare_cached(
                    "INSERT INTO claims (thread_id, owner, expires_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (thread_id) DO UPDATE \
                     SET owner = excluded.owner, expires_at = excluded.expires_at",
                )?;
                for id in &ids {
                    claim.execute(params![id, owner, until])?;
                }
            }
            tx.commit()?;
            Ok(ids)
        })
        .await
    }

    #[cfg(unix)]
    async fn try_lease(&self, thread_id: &str) -> Result<Option<super::RunLease>> {
        let Some(file) = self.lease_file("start a run")? else {
            return Ok(Some(super::RunLease::local()));
        };
        super::lease::file::try_lease(&file, thread_id)
            .map(|l| l.map(super::RunLease::new))
            .map_err(|e| self.lease_error(thread_id, e))
    }

    #[cfg(unix)]
    async fn ask_stop(
        &self,
        thread_id: &str,
        ask: super::StopAsk,
    ) -> Result<Option<super::AskGuard>> {
        let Some(file) = self.lease_file("ask a run to stop")? else {
            return Ok(None);
        };
        super::lease::file::ask(&file, thread_id, ask)
            .map(|l| l.map(super::AskGuard::new))
            .map_err(|e| self.lease_error(thread_id, e))
    }

    async fn close(&self) -> Result<()> {
        let Some(Worker { jobs, thread }) = self.lock_worker().take() else {
            return Ok(());
        };
        drop(jobs);
        if thread.thread().id() == std::thread::current().id() {
            return Ok(());
        }
        // Joining waits for the queued work: off the async threads when on tokio.
        let joined = match tokio::runtime::Handle::try_current() {
            Ok(h) => h.spawn_blocking(move || thread.join()).await.map_err(|_| {
                CheckpointError::storage(format!(
                    "SqliteSaver({}): closing was interrupted",
                    self.path.display()
                ))
            })?,
            Err(_) => thread.join(),
        };
        self.joined(joined)
    }
}

/// The SQLite thread: runs the jobs sent to it on the saver's connection, and the WAL
/// checkpoints asked for (see [`Wal`]) on a connection of its own. Ends when every
/// sender is gone (close / drop) and the queue is empty, closing both connections (the
/// last one closed copies the WAL into the file and removes it).
fn serve(
    path: &Path,
    conn: &Shared,
    wal: &Wal,
    jobs: &mpsc::Receiver<Msg>,
) -> std::result::Result<(), String> {
    let mut copier: Option<Connection> = None;
    let mut next: Option<Msg> = None;
    loop {
        let msg = match next.take() {
            Some(m) => m,
            None => match jobs.recv() {
                Ok(m) => m,
                Err(_) => break,
            },
        };
        match msg {
            Msg::Run(job) => {
                let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(c) = guard.as_mut() {
                    job(c);
                }
            }
            Msg::Write(w) => {
                // The writes queued behind it join its group, up to the first other job.
                let mut group = vec![w];
                while group.len() < GROUP_MAX {
                    match jobs.try_recv() {
                        Ok(Msg::Write(w)) => group.push(w),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let guard = conn.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(c) = guard.as_ref() {
                    commit_group(c, group);
                }
            }
            Msg::Checkpoint => checkpoint_wal(path, &mut copier, wal),
        }
        if wal.take_unsent() {
            checkpoint_wal(path, &mut copier, wal);
        }
    }
    drop(copier);
    let taken = conn.lock().unwrap_or_else(|p| p.into_inner()).take();
    match taken {
        Some(c) => c.close().map_err(|(_, e)| e.to_string()),
        None => Ok(()),
    }
}

/// A checkpoint of the WAL on `copier` (opened on first use): `PASSIVE`, or `RESTART`
/// when [`Wal`] asked for one. A failure is logged, not fatal: the commits are in the
/// WAL, and the next checkpoint (or the last connection's close) copies them.
fn checkpoint_wal(path: &Path, copier: &mut Option<Connection>, wal: &Wal) {
    let r = (|| -> rusqlite::Result<()> {
        if copier.is_none() {
            let c = Connection::open(path)?;
            // Only a restarting copy waits (a passive one never does): briefly, as
            // writers wait while it holds the write lock.
            c.busy_timeout(RESTART_WAIT)?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            let _: i64 =
                c.pragma_update_and_check(None, "journal_size_limit", JOURNAL_SIZE_LIMIT, |r| {
                    r.get(0)
                })?;
            *copier = Some(c);
        }
        let c = copier.as_ref().expect("opened above");
        let sql = if wal.restart.load(Ordering::Relaxed) {
            "PRAGMA wal_checkpoint(RESTART)"
        } else {
            "PRAGMA wal_checkpoint(PASSIVE)"
        };
        c.query_row(sql, [], |_| Ok(()))
    })();
    wal.requested.store(false, Ordering::Release);
    if let Err(e) = r {
        log::warn!(
            "SqliteSaver({}): copying the WAL into the file failed ({e}); it is retried \
             when the WAL has grown by {WAL_PAGES} pages",
            path.display()
        );
        *copier = None;
    }
}

/// Opens the connection, sets the pragmas and creates or checks the schema, trying
/// again while the file is busy for up to [`BUSY_TIMEOUT`].
///
/// Why again, when the connection has a busy timeout: in WAL mode SQLite answers
/// `SQLITE_BUSY` at once, without calling the busy handler, while another connection
/// holds the file exclusively for a moment: the first one to open a new file switching
/// it to WAL, one rebuilding the WAL index after a crash, the last one closing and
/// cleaning up ("Sometimes Queries Return SQLITE_BUSY In WAL Mode", sqlite.org/wal.html).
/// Two savers opening one new file at once met the first (a test, under load).
/// Everything here is idempotent (the schema is created in one transaction, or seen).
fn init_connection(path: &Path) -> rusqlite::Result<Connection> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match try_init_connection(path) {
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                ) && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// One try of [`init_connection`].
fn try_init_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    // First, so that the pragmas below also wait for other processes opening the file.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
        return Err(setup_error(format!(
            "SQLite refused WAL mode (journal_mode is {mode:?}); put the file on a local \
             filesystem"
        )));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // rusqlite keeps 16 prepared statements by default; the saver has more than that,
    // and one evicted is parsed again at its next use.
    conn.set_prepared_statement_cache_capacity(64);
    // Plans that never depend on bound values: without this the bundled SQLite (STAT4)
    // marks the step's `INSERT ... SELECT` to be re-prepared (parsed and planned again)
    // whenever a new parent id is bound, i.e. at every step.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // Keep the WAL small: it is copied into the database every `WAL_PAGES` pages (1 MiB),
    // restarted once past `WAL_RESTART_PAGES` (see `Wal`, whose hook replaces SQLite's own
    // checkpoint on commit) and truncated back to 1 MiB when it restarts, so a thread's file holds about its records'
    // bytes rather than a 4 MiB log beside them. A per-connection setting that returns
    // its new value as a row.
    let _: i64 =
        conn.pragma_update_and_check(None, "journal_size_limit", JOURNAL_SIZE_LIMIT, |r| r.get(0))?;
    let tx = Tx::begin(&conn, true)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    match version {
        0 => {
            let foreign: Option<String> = tx
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' \
                     AND name IN ('checkpoints', 'writes', 'threads') LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(table) = foreign {
                return Err(setup_error(format!(
                    "the file already has a `{table}` table that ironloop did not create \
                     (a LangGraph checkpoint file?); use a new file"
                )));
            }
            tx.execute_batch(CHECKPOINTS)?;
            tx.execute_batch(SCHEMA)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        // Format-1 records stay as they are and load as before.
        1..=3 => {
            if version == 1 {
                tx.execute_batch(MIGRATE_1_TO_2)?;
            }
            tx.execute_batch(MIGRATE_3_TO_4)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        SCHEMA_VERSION => {}
        v => {
            return Err(setup_error(format!(
                "the file has checkpoint schema version {v}, this ironloop knows version \
                 {SCHEMA_VERSION}; upgrade ironloop or use a new file"
            )))
        }
    }
    tx.execute_batch(CLAIMS)?;
    tx.commit()?;
    Ok(conn)
}

/// An error found while checking the file, carried as a rusqlite error to `describe`.
fn setup_error(msg: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
        Some(msg),
    )
}

/// Turns a rusqlite error into a message that says what failed and what to do.
fn describe(path: &Path, op: &str, e: rusqlite::Error) -> CheckpointError {
    let p = path.display();
    let advice = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "the file stayed locked by another connection for more than {} s (a long \
             transaction in another process?); retry, or give each process its own file",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(ErrorCode::CannotOpen) => "cannot open the file; check that its directory exists \
                                        and is writable"
            .into(),
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
            "the file is read-only; SQLite needs write access to it and to its directory (it \
             creates the -wal and -shm files beside it)"
                .into()
        }
        Some(ErrorCode::DiskFull) => "the disk is full; free some space and retry".into(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            "the file is not a SQLite database or is damaged; point SqliteSaver at another file"
                .into()
        }
        Some(ErrorCode::SystemIoFailure) => "a disk I/O error occurred; check the disk and that \
                                             the file is on a local filesystem"
            .into(),
        _ => String::new(),
    };
    let detail = match &e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        other => other.to_string(),
    };
    if advice.is_empty() {
        CheckpointError::storage(format!("SqliteSaver({p}): cannot {op}: {detail}"))
    } else {
        CheckpointError::storage(format!("SqliteSaver({p}): cannot {op}: {detail}: {advice}"))
    }
}
