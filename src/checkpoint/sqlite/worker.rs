//! The SQLite thread: the jobs it runs and the WAL copies it makes off the committing
//! path.

use super::group::{commit_group, Job, Write, GROUP_MAX};
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the SQLite thread is asked to do.
pub(super) enum Msg {
    /// A statement (or transaction) on the saver's connection.
    Run(Job),
    /// A write, committed with the writes queued beside it (see [`Write`]).
    Write(Box<dyn Write>),
    /// Copy the WAL back into the database file (see [`Wal`]).
    Checkpoint,
}

pub(super) struct Worker {
    pub(super) jobs: mpsc::Sender<Msg>,
    pub(super) thread: JoinHandle<std::result::Result<(), String>>,
}

/// The saver's connection: used by its SQLite thread, and by a caller that may block
/// (see [`caller`]) directly. `None` once the thread has closed it.
pub(super) type Shared = Arc<Mutex<Option<Connection>>>;

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
/// what it can, as a passive one would, and the next one tries again. On a busy machine
/// the next one may miss too, and commits made on the caller's thread may outrun the
/// copy; so past [`WAL_HARD_PAGES`] a restart waits up to [`RESTART_HARD_WAIT`], and
/// while a copy is under way commits go through the SQLite thread, behind it (see
/// [`Wal::backlogged`]): the WAL's size has a bound whatever the load.
#[derive(Default)]
pub(super) struct Wal {
    /// A checkpoint was asked for and has not finished.
    pub(super) requested: AtomicBool,
    /// Asked for, and the SQLite thread not told yet.
    pub(super) unsent: AtomicBool,
    /// The WAL's size in pages when the last checkpoint was asked for.
    pub(super) asked_at: AtomicI32,
    /// The checkpoint asked for is to restart the WAL.
    pub(super) restart: AtomicBool,
    /// The restart asked for waits [`RESTART_HARD_WAIT`], not [`RESTART_WAIT`].
    pub(super) hard: AtomicBool,
    /// The WAL's size in pages after the last commit.
    pub(super) pages: AtomicI32,
}

/// How much the WAL grows, in pages, between two copies back (1 MiB of 4 KiB pages);
/// the file is truncated to [`JOURNAL_SIZE_LIMIT`] when the WAL restarts.
pub(super) const WAL_PAGES: i32 = 256;
pub(super) const JOURNAL_SIZE_LIMIT: i64 = 1 << 20;
/// The WAL's size, in pages, past which a copy also restarts it (see [`Wal`]).
pub(super) const WAL_RESTART_PAGES: i32 = 4 * WAL_PAGES;
/// How long a restarting copy waits for the write lock and then for readers.
pub(super) const RESTART_WAIT: Duration = Duration::from_millis(50);
/// The WAL's size, in pages, past which a restart waits [`RESTART_HARD_WAIT`] (8 MiB).
pub(super) const WAL_HARD_PAGES: i32 = 2 * WAL_RESTART_PAGES;
/// How long a restart waits once the WAL is past [`WAL_HARD_PAGES`]: writers wait
/// behind it that long at worst, once per 8 MiB written while restarts kept missing.
pub(super) const RESTART_HARD_WAIT: Duration = Duration::from_secs(1);

impl Wal {
    /// The WAL hook: a commit left `pages` pages in the WAL.
    pub(super) fn committed(&self, pages: i32) {
        self.pages.store(pages, Ordering::Relaxed);
        let asked_at = self.asked_at.load(Ordering::Relaxed);
        // `pages < asked_at`: the WAL restarted since.
        let due = pages >= WAL_PAGES && (pages < asked_at || pages >= asked_at + WAL_PAGES);
        if due && !self.requested.swap(true, Ordering::AcqRel) {
            self.asked_at.store(pages, Ordering::Relaxed);
            self.restart
                .store(pages >= WAL_RESTART_PAGES, Ordering::Relaxed);
            self.hard.store(pages >= WAL_HARD_PAGES, Ordering::Relaxed);
            self.unsent.store(true, Ordering::Release);
        }
    }

    /// Whether the WAL is past [`WAL_HARD_PAGES`] with a copy asked for and not done:
    /// a commit then waits its turn on the SQLite thread, behind the copy, instead of
    /// growing the WAL further from the caller's thread.
    pub(super) fn backlogged(&self) -> bool {
        self.pages.load(Ordering::Relaxed) >= WAL_HARD_PAGES
            && self.requested.load(Ordering::Acquire)
    }

    /// Whether a checkpoint was asked for that nobody has passed on yet (and now this
    /// caller must).
    pub(super) fn take_unsent(&self) -> bool {
        self.unsent.load(Ordering::Acquire) && self.unsent.swap(false, Ordering::AcqRel)
    }
}
/// The SQLite thread: runs the jobs sent to it on the saver's connection, and the WAL
/// checkpoints asked for (see [`Wal`]) on a connection of its own. Ends when every
/// sender is gone (close / drop) and the queue is empty, closing both connections (the
/// last one closed copies the WAL into the file and removes it).
pub(super) fn serve(
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
pub(super) fn checkpoint_wal(path: &Path, copier: &mut Option<Connection>, wal: &Wal) {
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
        let hard = wal.hard.load(Ordering::Relaxed);
        c.busy_timeout(if hard {
            RESTART_HARD_WAIT
        } else {
            RESTART_WAIT
        })?;
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
