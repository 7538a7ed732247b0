//! Run leases: one run at a time on a thread, across processes.
//!
//! A root run on a thread holds the thread's *turn* in its process (see
//! `graph::run::multitask`) and, for the time it runs, the thread's **run lease** in
//! the store ([`Checkpointer::try_lease`](super::Checkpointer::try_lease)), so that a
//! run on the same thread from another process (or another saver object on the same
//! store) sees it and follows its `multitask_strategy` instead of racing it.
//!
//! A lease is a lock the operating system or the server drops with its holder, not a
//! row with an expiry: a process that is killed (SIGKILL, OOM) holds nothing once it
//! is gone, so the thread can be run again at once — by a fleet's claimer of stalled
//! threads (`claim_stalled`) as by anyone — and a live run needs no heartbeat however
//! long its steps take.
//!
//! - **SQLite**: an open-file-description lock (`F_OFD_SETLK`; a classic `F_SETLK`
//!   lock on systems without them) on one byte of a file beside the database (its
//!   name plus `-runs`), at an offset that is a stable hash of the thread. The kernel
//!   drops it when the saver's file is closed, also when its process dies. SQLite's own
//!   locks are on other files.
//! - **PostgreSQL**: a session advisory lock (`pg_try_advisory_lock`) keyed by a hash
//!   of the schema and the thread, taken on one connection per saver kept for leases;
//!   the server drops it when that connection ends, also when its process dies.
//! - **MemorySaver**: the store lives in one process, whose turns already see every
//!   run: the lease is always free.
//!
//! Two threads whose keys' hashes collide (64 bits; 62 for SQLite's offsets) would
//! share a lease: a run on one would wait for, or be refused by, a run on the other.
//! Nothing else follows from it.

/// What a run waiting for a lease held in another process asks of its holder (its
/// `multitask_strategy`): stop at the next safe point, or stop now and discard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopAsk {
    Interrupt,
    Rollback,
}

/// How often [`Asks::wait`] looks at [`Asks::asked`] unless a store has a better way
/// (SQLite's lease file: one look per file, not per lease; see [`file`]).
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Where the holder of a lease reads what a run waiting for it asks (see
/// [`Checkpointer::ask_stop`](super::Checkpointer::ask_stop)).
#[async_trait::async_trait]
pub trait Asks: Send + Sync {
    /// The ask standing now, if any.
    fn asked(&self) -> Option<StopAsk>;

    /// Waits until an ask stands, and returns it: what the holder's watching task
    /// awaits while its run goes on. By default [`Asks::asked`] every
    /// [`WATCH_EVERY`].
    async fn wait(&self) -> StopAsk {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            if let Some(a) = self.asked() {
                return a;
            }
        }
    }
}

/// What holds a lease in a store; dropping it releases the lease too (for a run
/// that is cancelled), [`Held::release`] does so before it returns.
#[async_trait::async_trait]
pub trait Held: Send + Sync {
    /// Releases the lease; once this returns, another process can take it.
    async fn release(self: Box<Self>);
    /// Where the asks to this lease's holder are read, shareable with a task that
    /// watches them while the run goes on.
    fn asks(&self) -> std::sync::Arc<dyn Asks>;
}

/// A thread's run lease, held until [`RunLease::release`]d or dropped (see the
/// module documentation).
pub struct RunLease {
    held: Option<Box<dyn Held>>,
}

impl RunLease {
    /// A lease with nothing to release: the store is this process's own.
    pub fn local() -> RunLease {
        RunLease { held: None }
    }

    /// A lease held by `held`.
    pub fn new(held: impl Held + 'static) -> RunLease {
        RunLease {
            held: Some(Box::new(held)),
        }
    }

    /// Whether a lease of this process's own store: nobody elsewhere can ask for it.
    pub fn is_local(&self) -> bool {
        self.held.is_none()
    }

    /// What a run of another process waiting for the lease asks of this one.
    pub fn asked(&self) -> Option<StopAsk> {
        self.held.as_ref().and_then(|h| h.asks().asked())
    }

    /// Where the asks to this lease's holder are read; `None` for a local lease.
    pub fn asks(&self) -> Option<std::sync::Arc<dyn Asks>> {
        self.held.as_ref().map(|h| h.asks())
    }

    /// Releases the lease, so that a run another process starts right after this
    /// returns finds the thread free (a drop may release it a moment later).
    pub async fn release(mut self) {
        if let Some(h) = self.held.take() {
            h.release().await;
        }
    }
}

/// A run's standing ask to the holder of a lease ([`StopAsk`]), withdrawn when
/// dropped.
pub struct AskGuard {
    _held: Box<dyn Send + Sync>,
}

impl AskGuard {
    pub fn new(held: impl Send + Sync + 'static) -> AskGuard {
        AskGuard {
            _held: Box::new(held),
        }
    }
}

impl std::fmt::Debug for RunLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunLease")
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// A stable 64-bit hash of a thread's key (FNV-1a): the same in every process and
/// every build of ironloop, as a lease key shared by processes must be.
pub(crate) fn key_hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Leases as bytes of a lock file, held with open-file-description locks: released
/// when dropped, or when the file is closed (the process ended). A thread has four
/// bytes: its lease, an ask to interrupt, an ask to roll back (and one unused).
///
/// **The bell.** A lease's holder must notice an ask within [`WATCH_EVERY`]. Looking
/// at each held lease's ask bytes that often costs two `F_OFD_GETLK`s per lease, each
/// a walk of every lock on the file: with 1,000 runs at once, 40,000 walks of 1,000
/// locks a second (most of W7's CPU once). So a run that asks also writes a fresh
/// value into the file's first 8 bytes (its *bell*; the file's content is otherwise
/// unused, and a lock does not stop reads or writes); one task per lease file reads
/// the bell every [`WATCH_EVERY`] while anyone watches, and only when it has changed
/// do the holders look at their ask bytes. A holder also looks once as it starts
/// watching (an ask may have rung before it held the lease). An ask is made by taking
/// its byte *before* ringing, so a holder woken by the bell finds the byte taken.
#[cfg(all(unix, feature = "sqlite"))]
pub(crate) mod file {
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use tokio::sync::watch;

    use super::{StopAsk, WATCH_EVERY};

    #[cfg(any(target_os = "linux", target_os = "android"))]
    const SETLK: libc::c_int = libc::F_OFD_SETLK;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const GETLK: libc::c_int = libc::F_OFD_GETLK;
    // Without OFD locks a lock belongs to the process: two savers of one process on
    // one file do not see each other's runs (other processes do).
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const SETLK: libc::c_int = libc::F_SETLK;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const GETLK: libc::c_int = libc::F_GETLK;

    /// `flock.l_type`s.
    const WRITE: libc::c_short = libc::F_WRLCK as libc::c_short;
    const UNLOCK: libc::c_short = libc::F_UNLCK as libc::c_short;

    /// A saver's lease file: the file, and its bell as last read (see the module
    /// docs), whose receivers are the holders watching for asks.
    pub(crate) struct LeaseFile {
        file: File,
        bell: watch::Sender<u64>,
        /// Whether a task reads the bell (it ends once nobody watches).
        polling: Mutex<bool>,
    }

    impl LeaseFile {
        pub(crate) fn new(file: File) -> Arc<LeaseFile> {
            let bell = watch::Sender::new(read_bell(&file));
            Arc::new(LeaseFile {
                file,
                bell,
                polling: Mutex::new(false),
            })
        }

        /// A receiver told each time the bell is seen to change; starts the task that
        /// reads it (on the current tokio runtime), unless it runs.
        fn subscribe(self: &Arc<Self>) -> watch::Receiver<u64> {
            let rx = self.bell.subscribe();
            let mut polling = self.polling.lock().unwrap_or_else(|p| p.into_inner());
            if !*polling {
                *polling = true;
                tokio::spawn(poll_bell(self.clone()));
            }
            rx
        }
    }

    /// Reads `f`'s bell every [`WATCH_EVERY`] and tells the watchers when it changed;
    /// ends once none is left.
    async fn poll_bell(f: Arc<LeaseFile>) {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            {
                let mut polling = f.polling.lock().unwrap_or_else(|p| p.into_inner());
                if f.bell.receiver_count() == 0 {
                    *polling = false;
                    return;
                }
            }
            let now = read_bell(&f.file);
            f.bell.send_if_modified(|seen| {
                let changed = *seen != now;
                *seen = now;
                changed
            });
        }
    }

    /// The bell's value (0 for a file shorter than the bell; on an error, a value
    /// that differs from any rung, so the watchers look).
    fn read_bell(file: &File) -> u64 {
        let mut b = [0u8; 8];
        match file.read_at(&mut b, 0) {
            Ok(_) => u64::from_le_bytes(b),
            Err(_) => u64::MAX,
        }
    }

    /// Writes a value into the bell that it never held before (this process's id, a
    /// count and the time).
    fn ring(file: &File) -> std::io::Result<()> {
        static RUNG: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = RUNG.fetch_add(1, Ordering::Relaxed);
        let mut v = u64::from(std::process::id()) << 40 ^ n << 20 ^ nanos;
        if v == 0 || v == u64::MAX {
            v = 1;
        }
        file.write_all_at(&v.to_le_bytes(), 0)
    }

    /// The first of `thread`'s bytes: a multiple of 4 below 2^62.
    pub(crate) fn base(thread: &str) -> i64 {
        ((super::key_hash(thread) >> 4) << 2) as i64
    }

    fn ask_byte(ask: StopAsk) -> i64 {
        match ask {
            StopAsk::Interrupt => 1,
            StopAsk::Rollback => 2,
        }
    }

    fn flock(kind: libc::c_short, offset: i64) -> libc::flock {
        // SAFETY: `flock` is plain data; zeroed is a valid value (l_pid must be 0 for
        // OFD locks) and every field the calls read is set below.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = kind;
        fl.l_whence = libc::SEEK_SET as _;
        fl.l_start = offset as _;
        fl.l_len = 1;
        fl
    }

    /// Sets (or, with `F_UNLCK`, clears) a lock on byte `offset`: false when another
    /// holds it.
    fn set(file: &File, offset: i64, kind: libc::c_short) -> std::io::Result<bool> {
        let mut fl = flock(kind, offset);
        // SAFETY: a valid open descriptor and a pointer to a live `flock`.
        if unsafe { libc::fcntl(file.as_raw_fd(), SETLK, &mut fl as *mut libc::flock) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
            _ => Err(e),
        }
    }

    /// Whether another holds a lock on byte `offset`.
    fn taken(file: &File, offset: i64) -> bool {
        let mut fl = flock(WRITE, offset);
        // SAFETY: as in `set`.
        let r = unsafe { libc::fcntl(file.as_raw_fd(), GETLK, &mut fl as *mut libc::flock) };
        r == 0 && fl.l_type != UNLOCK
    }

    /// A held byte of the lock file.
    pub(crate) struct ByteLock {
        file: Arc<LeaseFile>,
        offset: i64,
    }

    impl ByteLock {
        /// Locks byte `offset` of `file` for writing, unless another holds it
        /// (`Ok(None)`).
        fn try_take(file: &Arc<LeaseFile>, offset: i64) -> std::io::Result<Option<Self>> {
            Ok(set(&file.file, offset, WRITE)?.then(|| ByteLock {
                file: file.clone(),
                offset,
            }))
        }
    }

    impl Drop for ByteLock {
        fn drop(&mut self) {
            // Closing the file releases it too; an error here leaves nothing to do.
            let _ = set(&self.file.file, self.offset, UNLOCK);
        }
    }

    /// `thread`'s lease in `file`, unless another holds it.
    pub(crate) fn try_lease(file: &Arc<LeaseFile>, thread: &str) -> std::io::Result<Option<Lease>> {
        Ok(ByteLock::try_take(file, base(thread))?.map(|lock| Lease { lock }))
    }

    /// Asks the holder of `thread`'s lease in `file` to stop: `None` when another run
    /// asks it already (the ask stands). Rings the bell once the ask's byte is held.
    pub(crate) fn ask(
        file: &Arc<LeaseFile>,
        thread: &str,
        ask: StopAsk,
    ) -> std::io::Result<Option<ByteLock>> {
        let Some(lock) = ByteLock::try_take(file, base(thread) + ask_byte(ask))? else {
            return Ok(None);
        };
        ring(&file.file)?;
        Ok(Some(lock))
    }

    /// A held lease.
    pub(crate) struct Lease {
        lock: ByteLock,
    }

    /// The ask bytes of a thread.
    struct AskBytes {
        file: Arc<LeaseFile>,
        base: i64,
    }

    #[async_trait::async_trait]
    impl super::Asks for AskBytes {
        fn asked(&self) -> Option<StopAsk> {
            [StopAsk::Rollback, StopAsk::Interrupt]
                .into_iter()
                .find(|&a| taken(&self.file.file, self.base + ask_byte(a)))
        }

        /// Looks at the ask bytes now, then each time the bell rings.
        async fn wait(&self) -> StopAsk {
            let mut bell = self.file.subscribe();
            loop {
                bell.borrow_and_update();
                if let Some(a) = self.asked() {
                    return a;
                }
                if bell.changed().await.is_err() {
                    // The sender lives as long as `self.file`: not reached.
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    #[async_trait::async_trait]
    impl super::Held for Lease {
        async fn release(self: Box<Self>) {}

        fn asks(&self) -> Arc<dyn super::Asks> {
            Arc::new(AskBytes {
                file: self.lock.file.clone(),
                base: self.lock.offset,
            })
        }
    }
}

#[cfg(all(test, any(feature = "sqlite", feature = "postgres")))]
mod tests {
    use super::key_hash;

    #[test]
    fn the_key_hash_is_fnv1a_and_so_the_same_everywhere() {
        assert_eq!(key_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(key_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(key_hash("thread-1"), key_hash("thread-2"));
    }
}
