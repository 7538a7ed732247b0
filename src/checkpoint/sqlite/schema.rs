//! The file's schema (version 4), its migrations from versions 1 to 3, and opening a
//! connection with the saver's pragmas.

use super::group::Tx;
use super::worker::JOURNAL_SIZE_LIMIT;
use super::BUSY_TIMEOUT;
use crate::checkpoint::stalled::awaits_answer_sql;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OptionalExtension};
use std::path::Path;
use std::time::{Duration, Instant};

/// Version 4: one b-tree written per checkpoint (see the module documentation).
/// Version 3 changed no table: its records may be in format 2 (see `record`), which
/// an ironloop that knows version 2 cannot read, so it refuses the file up front.
pub(super) const SCHEMA_VERSION: i64 = 4;

/// A thread's checkpoints have the `seq`s `no << 32` + 1, + 2, ...
pub(super) const SPAN: i64 = 1 << 32;

/// The checkpoints' tables of version 4, made by a new file and by the migration.
pub(super) const CHECKPOINTS: &str = "
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

pub(super) const SCHEMA: &str = "
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
pub(super) const MIGRATE_1_TO_2: &str = "
ALTER TABLE writes ADD COLUMN idx INTEGER NOT NULL DEFAULT 0;
UPDATE writes SET idx = seq;
CREATE UNIQUE INDEX writes_by_task ON writes (thread_id, checkpoint_id, task_id, idx);
";

/// Version 3 to 4: the thread's text moves to `threads`; `seq` becomes the thread's
/// number and the checkpoint's place in it; every record written before is found by
/// its id through `checkpoints_unordered` (`sortkey` '', the least key).
pub(super) const MIGRATE_3_TO_4: &str = "
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

/// What finding stalled threads needs (see [`crate::checkpoint::stalled`]), made on every open so
/// files of every schema version get it without a migration: the claims, and when each
/// thread last saved pending writes (kept by a trigger; a checkpoint's time is its
/// record's `created_at`).
pub(super) const CLAIMS: &str = "
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
pub(super) fn stalled_sql() -> String {
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
pub(super) fn init_connection(path: &Path) -> rusqlite::Result<Connection> {
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
pub(super) fn try_init_connection(path: &Path) -> rusqlite::Result<Connection> {
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
pub(super) fn setup_error(msg: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
        Some(msg),
    )
}
