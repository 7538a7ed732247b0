//! Connections a blocking caller drives itself (see [`crate::checkpoint::caller`]).
//!
//! A pooled connection's socket belongs to the saver's runtime: a call from a sync
//! `invoke` wakes a tokio worker, whose connection task writes the statement; when the
//! answer comes back the runtime's I/O driver wakes that task, which wakes the call,
//! which wakes the caller — about five thread switches for one round trip. A **lane**
//! is a connection on a single-threaded runtime of its own, which the calling thread
//! runs (`block_on`) for the length of the call: that thread writes the statement,
//! waits in `epoll` for the answer and reads it, as a synchronous client (psycopg)
//! does. The statements and their futures are the pooled path's own.
//!
//! A lane is taken for one call and given back after it; the saver keeps at most
//! `pool_size` of them (more sync callers at once use the pool). A lane's connection
//! is only read while a call runs, so before each call the lane lets it read what the
//! server sent meanwhile: a connection the server ended while idle is noticed then and
//! replaced, as the pool does on checkout. A call still unanswered after
//! [`HANDOVER`] (a row lock held elsewhere, a server that stalls) is handed, with its
//! lane, to a thread of its own that drives it to the end, and the caller awaits it
//! like any other call: it answers Ctrl-C again, and a call it stops waiting for is
//! still never cut in two.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::ClientWrapper;
use tokio::runtime::Runtime;
use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long a caller drives a call itself before handing it to a thread (the glue
/// checks for Ctrl-C every 50 ms).
pub(super) const HANDOVER: Duration = Duration::from_millis(50);

/// The saver's idle lanes, and how many are open.
pub(super) struct Lanes {
    config: Config,
    tls: MakeRustlsConnect,
    max: usize,
    idle: Mutex<Vec<Lane>>,
    open: Arc<AtomicUsize>,
    closed: AtomicBool,
}

/// A runtime of its own and, once connected, a connection living on it.
pub(super) struct Lane {
    runtime: Option<Runtime>,
    client: Option<Arc<ClientWrapper>>,
    open: Arc<AtomicUsize>,
}

/// How a call driven on a lane went.
pub(super) enum Driven<U> {
    /// It ended within [`HANDOVER`].
    Done(U),
    /// It goes on on a thread of its own; the answer comes on this channel (closed if
    /// that thread could not start).
    HandedOver(tokio::sync::oneshot::Receiver<U>),
}

impl Lanes {
    pub(super) fn new(config: Config, tls: MakeRustlsConnect, max: usize) -> Lanes {
        Lanes {
            config,
            tls,
            max,
            idle: Mutex::new(Vec::new()),
            open: Arc::new(AtomicUsize::new(0)),
            closed: AtomicBool::new(false),
        }
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Lane>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle lane, or a new one while fewer than `max` are open; `None` when all are
    /// busy (the call then goes through the pool) or the runtime cannot be made.
    pub(super) fn take(&self) -> Option<Lane> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        if let Some(lane) = self.lock_idle().pop() {
            return Some(lane);
        }
        let opened = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            });
        opened.ok()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build();
        match runtime {
            Ok(rt) => Some(Lane {
                runtime: Some(rt),
                client: None,
                open: self.open.clone(),
            }),
            Err(e) => {
                self.open.fetch_sub(1, Ordering::AcqRel);
                log::warn!("PostgresSaver: cannot make a caller's runtime ({e}); using the pool");
                None
            }
        }
    }

    /// Keeps `lane` for the next call (dropped when the saver is closed).
    pub(super) fn give_back(&self, lane: Lane) {
        if !self.closed.load(Ordering::Acquire) {
            self.lock_idle().push(lane);
        }
    }

    /// Closes the idle lanes' connections; lanes in use are closed when their call ends.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let idle = std::mem::take(&mut *self.lock_idle());
        drop(idle);
    }

    /// Opens a connection on the current (a lane's) runtime.
    pub(super) async fn connect(&self) -> Result<Arc<ClientWrapper>, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(self.tls.clone()).await?;
        let task = tokio::spawn(async move {
            // An error ends the connection; the next call on it says what happened.
            let _ = connection.await;
        });
        Ok(Arc::new(ClientWrapper::new(client, task)))
    }
}

impl Lane {
    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("a lane has its runtime until dropped")
    }

    /// The lane's connection, if it has one the server has not ended: the connection's
    /// task first reads what arrived while the lane was idle (two turns of the
    /// runtime: one polls the socket, one runs the task).
    pub(super) fn live_client(&mut self) -> Option<Arc<ClientWrapper>> {
        let client = self.client.take()?;
        self.runtime().block_on(async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        });
        (!client.is_closed()).then_some(client)
    }

    /// Keeps `client` as the lane's connection.
    pub(super) fn keep(&mut self, client: Arc<ClientWrapper>) {
        self.client = Some(client);
    }

    /// Runs `call` on this thread for up to [`HANDOVER`], then, if it is not done, on
    /// a thread of its own; `settle` gets its output and the lane, wherever it ended.
    pub(super) fn drive<T, U, F, G>(self, call: F, settle: G) -> Driven<U>
    where
        F: Future<Output = T> + Send + 'static,
        U: Send + 'static,
        G: FnOnce(T, Lane) -> U + Send + 'static,
    {
        let mut call = Box::pin(call);
        let first = self
            .runtime()
            .block_on(async { tokio::time::timeout(HANDOVER, call.as_mut()).await });
        match first {
            Ok(done) => Driven::Done(settle(done, self)),
            Err(_) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let spawned = std::thread::Builder::new()
                    .name("ironloop-pg-call".into())
                    .spawn(move || {
                        let done = self.runtime().block_on(call);
                        let _ = tx.send(settle(done, self));
                    });
                if let Err(e) = spawned {
                    // The call (and its lane) is dropped unfinished: its connection
                    // closes, so the server rolls back whatever it had begun.
                    log::warn!("PostgresSaver: cannot start a thread for a slow call ({e})");
                }
                Driven::HandedOver(rx)
            }
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // The connection's task is aborted with its client; the runtime is shut down
        // without waiting (a lane may be dropped on a runtime's thread).
        self.client.take();
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}
