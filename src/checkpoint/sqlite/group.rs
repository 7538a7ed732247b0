//! Group commit: the writes the SQLite thread finds queued, committed in one
//! transaction, each under a savepoint of its own.

use super::schema::setup_error;
use rusqlite::Connection;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tokio::sync::oneshot;

pub(super) type Job = Box<dyn FnOnce(&mut Connection) + Send + 'static>;

/// The most writes the SQLite thread commits in one transaction (see [`Write`]): the
/// file's write lock is held for a group's statements (tens of µs each), so another
/// process's writer waits at most for one group.
pub(super) const GROUP_MAX: usize = 64;

/// A write sent to the SQLite thread (`put_many`, `put_writes`), committed **with the
/// writes queued beside it** (group commit, see [`commit_group`]): the thread runs
/// every write it finds waiting in one `BEGIN IMMEDIATE` transaction, each under a
/// savepoint of its own (a write that fails or changes nothing is rolled back to it,
/// alone), and answers each caller once the group's `COMMIT` returned. A caller's
/// write is as durable when its call returns as in a transaction of its own, and
/// writes of one file still commit one at a time in the order they were queued;
/// with many runs at once the thread does one commit (one WAL append of the pages
/// they share, one lock round, one wake-up per caller) for many.
pub(super) trait Write: Send {
    /// Runs the write's statements on `conn`, inside the group's transaction: whether
    /// to keep them (false: it failed, or decided to change nothing).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller: with what `run` returned, or with `failed` (the write did
    /// not reach the file: its group's `COMMIT` failed, or it never ran).
    fn answer(self: Box<Self>, failed: Option<&rusqlite::Error>);
}

/// A [`Write`] of a closure `f` whose result `keep` says whether to commit.
pub(super) struct WriteJob<R, F> {
    pub(super) f: F,
    pub(super) keep: fn(&R) -> bool,
    pub(super) out: Option<std::thread::Result<rusqlite::Result<R>>>,
    pub(super) tx: oneshot::Sender<std::thread::Result<rusqlite::Result<R>>>,
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
pub(super) fn copy_error(e: &rusqlite::Error) -> rusqlite::Error {
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
pub(super) fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// A transaction on a connection, begun and ended by [`exec`]; rolled back when dropped
/// uncommitted (as `rusqlite::Transaction`, whose statements are parsed every time).
pub(super) struct Tx<'c> {
    pub(super) conn: &'c Connection,
    pub(super) open: bool,
}

impl<'c> Tx<'c> {
    /// `BEGIN IMMEDIATE` (takes the write lock up front) or a deferred `BEGIN` (a read).
    pub(super) fn begin(conn: &'c Connection, immediate: bool) -> rusqlite::Result<Self> {
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

    pub(super) fn commit(mut self) -> rusqlite::Result<()> {
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
pub(super) fn commit_group(conn: &Connection, group: Vec<Box<dyn Write>>) {
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
