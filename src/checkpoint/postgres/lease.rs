//! The PostgreSQL saver's run leases (see [`crate::checkpoint::lease`]): session
//! advisory locks, on one connection per saver kept for them (not a pooled one: a
//! session lock lives as long as its connection, and the server drops it when that
//! connection ends — also when the process holding it dies).
//!
//! The key is `hashtextextended(schema prefix || thread, 0)`, computed by the server,
//! so every process and version agrees on it. If the lease connection is lost (a
//! server restart), the leases on it are gone with it: runs under way go on, and the
//! next run opens a new connection.
//!
//! A run waiting for a lease asks its holder to stop with a notification on channel
//! [`CHANNEL`] (`pg_notify`; payload: `i` or `r` and the key's FNV hash, see
//! [`key_hash`]); the lease connection listens on it, so a holder learns of an ask
//! without polling the server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tokio::runtime::Handle;
use tokio_postgres::{AsyncMessage, Client, Config, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::checkpoint::lease::{key_hash, Asks, Held, StopAsk};

/// The channel asks to stop are notified on.
pub(super) const CHANNEL: &str = "ironloop_runs";

/// The asks to the leases held on this saver's lease connection, by key hash: how
/// many leases of the key are held, and the ask (0 none, 1 interrupt, 2 rollback).
type AskTable = Arc<Mutex<HashMap<u64, (usize, Arc<AtomicU8>)>>>;

fn lock_asks(asks: &AskTable) -> std::sync::MutexGuard<'_, HashMap<u64, (usize, Arc<AtomicU8>)>> {
    asks.lock().unwrap_or_else(|p| p.into_inner())
}

/// The payload asking the holder of `key`'s lease to stop.
pub(super) fn ask_payload(prefix: &str, thread: &str, ask: StopAsk) -> String {
    let kind = match ask {
        StopAsk::Interrupt => 'i',
        StopAsk::Rollback => 'r',
    };
    format!("{kind} {:016x}", key_hash(&format!("{prefix}{thread}")))
}

/// Records the ask a notification carries, if it is for a lease held here.
fn note_ask(asks: &AskTable, payload: &str) {
    let Some((kind, hash)) = payload.split_once(' ') else {
        return;
    };
    let ask = match kind {
        "i" => 1,
        "r" => 2,
        _ => return,
    };
    let Ok(hash) = u64::from_str_radix(hash, 16) else {
        return;
    };
    if let Some((_, flag)) = lock_asks(asks).get(&hash) {
        flag.fetch_max(ask, Ordering::AcqRel);
    }
}

/// Opens the lease connection when the first run needs it.
pub(super) struct Leases {
    config: Config,
    tls: MakeRustlsConnect,
    /// The schema prefix (`"name".` or nothing), part of every key.
    prefix: String,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
    asks: AskTable,
}

struct Conn {
    client: Client,
    lock: Statement,
    unlock: Statement,
}

impl Leases {
    pub(super) fn new(config: Config, tls: MakeRustlsConnect, prefix: String) -> Leases {
        Leases {
            config,
            tls,
            prefix,
            conn: Default::default(),
            asks: Default::default(),
        }
    }

    /// The lease connection, opened (again) when there is none or it was lost. Runs on
    /// the saver's runtime: the connection's task is spawned there.
    async fn conn(&self) -> Result<Arc<Conn>, tokio_postgres::Error> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok(c.clone());
        }
        let (client, mut connection) = self.config.connect(self.tls.clone()).await?;
        let asks = self.asks.clone();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(m)) = messages.next().await {
                if let AsyncMessage::Notification(n) = m {
                    note_ask(&asks, n.payload());
                }
            }
        });
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        let lock = client
            .prepare("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
            .await?;
        let unlock = client
            .prepare("SELECT pg_advisory_unlock(hashtextextended($1, 0))")
            .await?;
        let c = Arc::new(Conn {
            client,
            lock,
            unlock,
        });
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Takes `thread`'s lease unless a session holds it (`None`). On the saver's
    /// runtime.
    pub(super) async fn try_take(
        &self,
        thread: &str,
    ) -> Result<Option<Lease>, tokio_postgres::Error> {
        let conn = self.conn().await?;
        let key = format!("{}{thread}", self.prefix);
        let took: bool = conn.client.query_one(&conn.lock, &[&key]).await?.get(0);
        if !took {
            return Ok(None);
        }
        let hash = key_hash(&key);
        let ask = {
            let mut asks = lock_asks(&self.asks);
            let e = asks.entry(hash).or_default();
            e.0 += 1;
            // An ask sent before this lease was taken was for an earlier holder.
            e.1.store(0, Ordering::Release);
            e.1.clone()
        };
        Ok(Some(Lease {
            conn: Some(conn),
            key,
            hash,
            ask,
            asks: self.asks.clone(),
            runtime: Handle::current(),
        }))
    }

    /// Ends the lease connection once the leases on it are released (the saver is
    /// closed).
    pub(super) async fn close(&self) {
        self.conn.lock().await.take();
    }
}

/// A thread's lease, held on the lease connection.
pub(super) struct Lease {
    conn: Option<Arc<Conn>>,
    key: String,
    hash: u64,
    ask: Arc<AtomicU8>,
    asks: AskTable,
    runtime: Handle,
}

impl Lease {
    /// Stops listening for asks to this lease, and hands back what unlocks it.
    fn end(&mut self) -> Option<(Arc<Conn>, String)> {
        let conn = self.conn.take()?;
        let mut asks = lock_asks(&self.asks);
        if let Some(e) = asks.get_mut(&self.hash) {
            e.0 -= 1;
            if e.0 == 0 {
                asks.remove(&self.hash);
            }
        }
        Some((conn, std::mem::take(&mut self.key)))
    }
}

async fn unlock(conn: Arc<Conn>, key: String) {
    // A lost connection has released it already.
    let _ = conn.client.query_one(&conn.unlock, &[&key]).await;
}

#[async_trait::async_trait]
impl Held for Lease {
    async fn release(mut self: Box<Self>) {
        if let Some((conn, key)) = self.end() {
            // On the saver's runtime, where the connection's task runs.
            let _ = self.runtime.spawn(unlock(conn, key)).await;
        }
    }

    fn asks(&self) -> Arc<dyn Asks> {
        Arc::new(Noted(self.ask.clone()))
    }
}

/// The ask the lease connection noted for a lease (0 none, 1 interrupt, 2 rollback).
struct Noted(Arc<AtomicU8>);

impl Asks for Noted {
    fn asked(&self) -> Option<StopAsk> {
        match self.0.load(Ordering::Acquire) {
            1 => Some(StopAsk::Interrupt),
            2 => Some(StopAsk::Rollback),
            _ => None,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some((conn, key)) = self.end() {
            self.runtime.spawn(unlock(conn, key));
        }
    }
}
