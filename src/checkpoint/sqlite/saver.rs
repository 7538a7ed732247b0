//! [`SqliteSaver`]: opening, closing, and handing calls to the SQLite thread or to the
//! caller's own.

use super::group::{Job, Tx, WriteJob};
use super::rows::{find, record_row, thread_latest, RecordRow};
use super::schema::init_connection;
use super::tips::Tips;
use super::worker::{serve, Msg, Shared, Wal, Worker};
use super::BUSY_TIMEOUT;
use crate::checkpoint::caller;
use crate::checkpoint::record;
use crate::checkpoint::seal::{RecordKey, Records, SNAPSHOT_PREFIX_SEALED};
use crate::checkpoint::{
    order_chain, records_from_rows, ChainFrom, CheckpointError, CheckpointRecord, PendingWrite,
    Result, WriteRow,
};
use rusqlite::{params, Connection, ErrorCode};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

pub(super) const CLOSED: &str =
    "the SqliteSaver was closed; open a new one (SqliteSaver::open) to keep using the file";
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
    pub(super) path: PathBuf,
    pub(super) worker: Mutex<Option<Worker>>,
    pub(super) conn: Shared,
    pub(super) wal: Arc<Wal>,
    /// Where each thread ended when this saver last wrote it (see [`tips`]).
    pub(super) tips: Arc<Tips>,
    /// The file whose bytes are the threads' run leases (see [`crate::checkpoint::lease`]),
    /// opened by the first run.
    #[cfg(unix)]
    pub(super) leases: Mutex<Option<Arc<crate::checkpoint::lease::file::LeaseFile>>>,
    /// How records are stored: with a checksum, or under a key.
    pub(super) codec: Records,
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
    /// `key` (see [`crate::checkpoint::seal`]).
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
        match self.stop_worker() {
            Some(thread) => self.joined(thread.join()),
            None => Ok(()),
        }
    }

    /// Stops taking work: the SQLite thread ends once its queue is done. The thread to
    /// join for that end, `None` when closed already or when called from that thread
    /// (dropped from inside one of its own jobs: the loop ends by itself). The closing
    /// of the sync [`close`](Self::close) and of the async `Checkpointer::close`.
    pub(super) fn stop_worker(&self) -> Option<JoinHandle<std::result::Result<(), String>>> {
        let Worker { jobs, thread } = self.lock_worker().take()?;
        drop(jobs);
        (thread.thread().id() != std::thread::current().id()).then_some(thread)
    }

    /// The outcome of joining the SQLite thread.
    pub(super) fn joined(
        &self,
        r: std::thread::Result<std::result::Result<(), String>>,
    ) -> Result<()> {
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
    /// name plus `-runs`; see [`crate::checkpoint::lease`]), opened once; `None` for a private
    /// in-memory database, which no other process can open.
    #[cfg(unix)]
    pub(super) fn lease_file(
        &self,
        op: &str,
    ) -> Result<Option<Arc<crate::checkpoint::lease::file::LeaseFile>>> {
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
        let file = crate::checkpoint::lease::file::LeaseFile::new(file);
        *slot = Some(file.clone());
        Ok(Some(file))
    }

    #[cfg(unix)]
    pub(super) fn lease_error(&self, thread_id: &str, e: std::io::Error) -> CheckpointError {
        CheckpointError::storage(format!(
            "SqliteSaver({}): cannot lock thread {thread_id:?}'s run lease: {e}; the \
             database's -runs file must be on a local filesystem",
            self.path.display()
        ))
    }

    pub(super) fn lock_worker(&self) -> std::sync::MutexGuard<'_, Option<Worker>> {
        self.worker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the saver's connection and returns its result: on the calling
    /// thread when it may block (see [`caller`]) and the connection is free, else on
    /// the SQLite thread, awaited.
    pub(super) async fn call<R, F>(&self, op: &'static str, mut f: F) -> Result<R>
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
    pub(super) async fn call_write<R, F>(
        &self,
        op: &'static str,
        keep: fn(&R) -> bool,
        mut f: F,
    ) -> Result<R>
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
    pub(super) fn call_here<R, F>(
        &self,
        f: &mut F,
    ) -> Option<std::thread::Result<rusqlite::Result<R>>>
    where
        F: FnMut(&mut Connection) -> rusqlite::Result<R>,
    {
        if self.is_closed() || self.wal.backlogged() {
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
    pub(super) fn pass_on_checkpoint(&self) {
        if self.wal.take_unsent() {
            if let Some(w) = self.lock_worker().as_ref() {
                let _ = w.jobs.send(Msg::Checkpoint);
            }
        }
    }

    /// What a call's closure returned, or how it panicked.
    pub(super) fn outcome<R>(
        &self,
        op: &str,
        r: std::thread::Result<rusqlite::Result<R>>,
    ) -> Result<R> {
        match r {
            Ok(r) => r.map_err(|e| describe(&self.path, op, e)),
            Err(_panic) => Err(CheckpointError::storage(format!(
                "SqliteSaver({}): {op} panicked on the SQLite thread (a bug in ironloop); \
                 the transaction was rolled back",
                self.path.display()
            ))),
        }
    }

    pub(super) fn closed(&self, op: &str) -> CheckpointError {
        CheckpointError::storage(format!(
            "SqliteSaver({}): cannot {op}: {CLOSED}",
            self.path.display()
        ))
    }

    pub(super) fn thread_gone(&self, op: &str) -> CheckpointError {
        CheckpointError::storage(format!(
            "SqliteSaver({}): cannot {op}: the SQLite thread has stopped; open a new saver",
            self.path.display()
        ))
    }

    /// The ancestors of `id` only, up to the root or the nearest snapshot, with one
    /// recursive query over the `(thread_id, checkpoint_id)` index. UNION (not UNION
    /// ALL) makes a corrupt, cyclic chain terminate; the order is restored by
    /// following the parent links.
    pub(super) async fn read_chain(
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
                         SELECT seq, parent_id, parent_seq, ?2 AND (substr(record, 1, 3) IN (?3, ?5, ?6, ?7) \
                           OR substr(record, 1, 12) = ?4) \
                         FROM checkpoints WHERE seq = ?1 \
                       UNION \
                         SELECT c.seq, c.parent_id, c.parent_seq, ?2 AND \
                           (substr(c.record, 1, 3) IN (?3, ?5, ?6, ?7) \
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
                        SNAPSHOT_PREFIX_SEALED,
                        record::SNAPSHOT_PREFIX_5
                    ],
                    record_row,
                )?;
                rows.collect::<rusqlite::Result<Vec<RecordRow>>>()
            })
            .await?;
        let records = records_from_rows(&self.name(), &self.codec, thread_id, &rows)?;
        order_chain(&self.name(), thread_id, records, id, from)
    }

    /// `SqliteSaver(path)`, as errors name the saver.
    pub(super) fn name(&self) -> String {
        format!("SqliteSaver({})", self.path.display())
    }

    pub(super) fn encode_record(&self, r: &CheckpointRecord) -> Result<String> {
        self.codec.encode(r).map_err(|e| {
            CheckpointError::serialization(format!(
                "SqliteSaver({}): cannot serialise the checkpoint record to JSON: {e}",
                self.path.display()
            ))
        })
    }

    /// The rows of `writes` of checkpoint `checkpoint_id`, their values' texts made by
    /// the saver's codec.
    pub(super) fn encode_writes(
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
/// Turns a rusqlite error into a message that says what failed and what to do.
pub(super) fn describe(path: &Path, op: &str, e: rusqlite::Error) -> CheckpointError {
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
