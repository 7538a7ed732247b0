//! [`PostgresSaver`]: connecting (pool, TLS, options), closing, and running a call on
//! a pooled connection or a blocking caller's lane.

use super::batch::WriteColumns;
use super::schema::migrate;
use super::sql::Sql;
use super::SCHEMA_VERSION;
use super::{lane, lease};
use crate::checkpoint::caller;
use crate::checkpoint::seal::{RecordKey, Records};
use crate::checkpoint::{dedupe_writes, CheckpointError, PendingWrite, Result};
use deadpool_postgres::{ClientWrapper, Object, Pool, PoolError};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;
use tokio_postgres::error::SqlState;
use tokio_util::task::TaskTracker;

/// How a [`PostgresSaver`] connects.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// The PostgreSQL schema that holds the tables (created by `setup`). `None`: the
    /// first schema of the connection's `search_path` (usually `public`).
    pub schema: Option<String>,
    /// The most connections the saver's pool opens (on demand); threads that drive
    /// their own calls (see [`crate::checkpoint::caller`]) open as many again at most.
    pub pool_size: usize,
    /// How long connecting, or waiting for a free connection, may take.
    pub connect_timeout: Duration,
    /// The key the records are authenticated (and optionally encrypted) with, if any
    /// (see [`crate::checkpoint::seal`]).
    pub key: Option<RecordKey>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: None,
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            key: None,
        }
    }
}
/// What every call's task needs.
pub(super) struct Shared {
    pub(super) pool: Pool,
    pub(super) sql: Sql,
    /// `PostgresSaver(host:port/db)`, for messages (never the password).
    pub(super) name: String,
    pub(super) pool_size: usize,
    pub(super) connect_timeout: Duration,
    /// The threads' run leases (see `lease`).
    pub(super) leases: lease::Leases,
    /// The connections blocking callers drive themselves (see `lane`).
    pub(super) lanes: lane::Lanes,
    /// How records are stored: with a checksum, or under a key.
    pub(super) codec: Records,
}

/// The connection a call runs on: a pooled one (its socket on the saver's runtime), or
/// a blocking caller's lane (see `lane`).
// Made once per call and put in an `Arc` at once: its size costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Link {
    Pooled(Object),
    Lane(Arc<ClientWrapper>),
}

impl std::ops::Deref for Link {
    type Target = ClientWrapper;

    fn deref(&self) -> &ClientWrapper {
        match self {
            Link::Pooled(o) => o,
            Link::Lane(c) => c,
        }
    }
}

/// A durable [`Checkpointer`] backed by PostgreSQL (see the module documentation).
///
/// ```no_run
/// # async fn demo() -> ironloop::checkpoint::Result<()> {
/// use ironloop::checkpoint::{Checkpointer, PostgresSaver};
/// let saver = PostgresSaver::connect("postgresql://app@db.internal/app").await?;
/// saver.setup().await?; // once per database (idempotent)
/// let latest = saver.get("thread-1", None).await?;
/// # Ok(()) }
/// ```
pub struct PostgresSaver {
    pub(super) shared: Arc<Shared>,
    pub(super) runtime: Handle,
    pub(super) tasks: TaskTracker,
    pub(super) closed: AtomicBool,
}

impl std::fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("server", &self.shared.name)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl PostgresSaver {
    /// Connects to the server at `url` (`postgresql://user:password@host:port/db?...`,
    /// or the `key=value` form) with the default [`PostgresOptions`], and checks that it
    /// answers. Call [`setup`](Self::setup) once per database before the first run.
    ///
    /// Must be called on a tokio runtime: the saver's connections live on it.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`connect`](Self::connect) with options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            CheckpointError::storage(format!(
                "PostgresSaver: the connection string is not valid ({e}); expected \
                 postgresql://user:password@host:port/database"
            ))
        })?;
        if config.get_application_name().is_none() {
            config.application_name("ironloop");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if options.pool_size == 0 {
            return Err(CheckpointError::storage(
                "PostgresSaver: pool_size must be at least 1",
            ));
        }
        let name = format!("PostgresSaver({})", server_name(&config));
        let tls = crate::pg::tls_connector()
            .map_err(|e| CheckpointError::storage(format!("{name}: cannot set up TLS: {e}")))?;
        let sql = Sql::new(options.schema.as_deref());
        let leases = lease::Leases::new(config.clone(), tls.clone(), sql.prefix.clone());
        let lanes = lane::Lanes::new(config.clone(), tls.clone(), options.pool_size);
        let timeout = Some(options.connect_timeout);
        let pool = crate::pg::pool(config, tls, options.pool_size, timeout)
            .map_err(|e| CheckpointError::storage(format!("{name}: cannot make the pool: {e}")))?;
        let runtime = Handle::try_current().map_err(|_| {
            CheckpointError::storage(format!(
                "{name}: connect() must run on a tokio runtime (the connections live on it)"
            ))
        })?;
        let saver = PostgresSaver {
            shared: Arc::new(Shared {
                pool,
                sql,
                name,
                pool_size: options.pool_size,
                connect_timeout: options.connect_timeout,
                leases,
                lanes,
                codec: Records::new(options.key),
            }),
            runtime,
            tasks: TaskTracker::new(),
            closed: AtomicBool::new(false),
        };
        // One connection now, so that a wrong URL or an unreachable server is
        // reported here rather than by the first run.
        saver
            .call("connect", |c, _| async move {
                c.simple_query("").await?;
                Ok(())
            })
            .await?;
        Ok(saver)
    }

    /// Creates the tables, or migrates them to this version's schema; safe to call on
    /// every start, from several workers at once. Fails, changing nothing, when the
    /// database holds a newer schema than this ironloop knows.
    pub async fn setup(&self) -> Result<()> {
        const OP: &str = "set up the tables";
        if self.is_closed() {
            return Err(self.shared.closed(OP));
        }
        let sh = self.shared.clone();
        let task = self.tasks.spawn_on(
            async move {
                let mut c = sh.pool.get().await.map_err(|e| sh.pool_error(OP, e))?;
                match migrate(&mut c, &sh.sql.prefix).await {
                    Ok(newer) => Ok(newer),
                    Err(e) => {
                        drop(Object::take(c));
                        Err(sh.describe(OP, &e))
                    }
                }
            },
            &self.runtime,
        );
        match self.joined(OP, task.await)? {
            None => Ok(()),
            Some(newer) => Err(CheckpointError::storage(format!(
                "{}: the database has checkpoint schema version {newer}, this ironloop knows \
                 version {SCHEMA_VERSION}; upgrade ironloop (every worker) or use another \
                 schema",
                self.shared.name
            ))),
        }
    }

    /// Whether [`close`](Checkpointer::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `PostgresSaver(host:port/database)`: the server, as messages name it.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Runs `f` with a connection and returns its result: on the calling thread, on a
    /// lane, when that thread may block (see [`caller`] and `lane`) and a lane is free;
    /// else with a pooled connection as a task on the saver's runtime, awaited. Errors
    /// become [`CheckpointError`]s that say what failed and what to do. A connection
    /// that failed is not used again.
    pub(super) async fn call<R, F, Fut>(&self, op: &'static str, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(Arc<Link>, Arc<Shared>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<R, tokio_postgres::Error>> + Send + 'static,
    {
        if self.is_closed() {
            return Err(self.shared.closed(op));
        }
        if caller::may_block() {
            if let Some(lane) = self.shared.lanes.take() {
                return self.call_here(op, lane, f).await;
            }
        }
        let sh = self.shared.clone();
        let task = self.tasks.spawn_on(
            async move {
                let client = sh.pool.get().await.map_err(|e| sh.pool_error(op, e))?;
                let client = Arc::new(Link::Pooled(client));
                let r = f(client.clone(), sh.clone()).await;
                match r {
                    Ok(v) => Ok(v),
                    Err(e) => {
                        if let Ok(Link::Pooled(obj)) = Arc::try_unwrap(client) {
                            drop(Object::take(obj));
                        }
                        Err(sh.describe(op, &e))
                    }
                }
            },
            &self.runtime,
        );
        self.joined(op, task.await)
    }

    /// [`call`](Self::call) driven by this thread on `lane`: no other thread takes
    /// part unless the call is slow (see `lane`). `close()` waits for it as for a task.
    pub(super) async fn call_here<R, F, Fut>(
        &self,
        op: &'static str,
        mut lane: lane::Lane,
        f: F,
    ) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(Arc<Link>, Arc<Shared>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<R, tokio_postgres::Error>> + Send + 'static,
    {
        let tracked = self.tasks.token();
        let sh = self.shared.clone();
        let live = lane.live_client();
        let call = async move {
            let client = match live {
                Some(c) => c,
                None => sh
                    .lanes
                    .connect()
                    .await
                    .map_err(|e| sh.pool_error(op, PoolError::Backend(e)))?,
            };
            match f(Arc::new(Link::Lane(client.clone())), sh.clone()).await {
                Ok(v) => Ok((v, client)),
                // The connection is dropped with the error: the next call opens another.
                Err(e) => Err(sh.describe(op, &e)),
            }
        };
        let sh = self.shared.clone();
        let settle = move |r: Result<(R, Arc<ClientWrapper>)>, mut lane: lane::Lane| {
            drop(tracked);
            let (v, client) = r?;
            lane.keep(client);
            sh.lanes.give_back(lane);
            Ok(v)
        };
        match lane.drive(call, settle) {
            lane::Driven::Done(r) => r,
            lane::Driven::HandedOver(rx) => rx.await.unwrap_or_else(|_| {
                Err(CheckpointError::storage(format!(
                    "{}: cannot {op}: the thread that finishes slow calls could not start",
                    self.shared.name
                )))
            }),
        }
    }

    pub(super) fn joined<R>(
        &self,
        op: &str,
        r: std::result::Result<Result<R>, tokio::task::JoinError>,
    ) -> Result<R> {
        r.map_err(|e| {
            CheckpointError::storage(format!(
                "{}: cannot {op}: the task ended early ({e}); if the runtime is shutting \
                 down, nothing more can be saved",
                self.shared.name
            ))
        })?
    }

    /// Pending writes as the columns of `put_writes`' arrays, deduplicated.
    pub(super) fn write_columns(
        &self,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<WriteColumns> {
        let writes = dedupe_writes(&[], writes);
        let mut cols = WriteColumns::default();
        for w in writes {
            let value = self
                .shared
                .codec
                .encode_write(&w.place(checkpoint_id), &w.value)
                .map_err(|e| {
                    CheckpointError::serialization(format!(
                        "{}: cannot serialise the value written to {:?} to JSON: {e}",
                        self.shared.name, w.channel
                    ))
                })?;
            cols.values.push(value);
            cols.tasks.push(w.task_id);
            cols.idxs.push(w.idx);
            cols.nodes.push(w.node);
            cols.channels.push(w.channel);
        }
        Ok(cols)
    }
}

impl Drop for PostgresSaver {
    fn drop(&mut self) {
        // Calls under way keep their connection until they finish.
        self.shared.pool.close();
    }
}

impl Shared {
    pub(super) fn closed(&self, op: &str) -> CheckpointError {
        CheckpointError::storage(format!(
            "{}: cannot {op}: the PostgresSaver was closed; make a new one to keep using \
             the database",
            self.name
        ))
    }

    pub(super) fn pool_error(&self, op: &str, e: PoolError) -> CheckpointError {
        match e {
            PoolError::Closed => self.closed(op),
            PoolError::Timeout(_) => CheckpointError::storage(format!(
                "{}: cannot {op}: no connection within {} s: the server does not answer, or \
                 all {} connections of the pool stay busy (raise pool_size)",
                self.name,
                self.connect_timeout.as_secs_f64(),
                self.pool_size
            )),
            PoolError::Backend(e) => CheckpointError::storage(format!(
                "{}: cannot {op}: cannot connect: {}; check that the server runs and \
                 accepts this user, password and database",
                self.name,
                error_text(&e)
            )),
            other => CheckpointError::storage(format!("{}: cannot {op}: {other}", self.name)),
        }
    }

    pub(super) fn describe(&self, op: &str, e: &tokio_postgres::Error) -> CheckpointError {
        let name = &self.name;
        let detail = error_text(e);
        let code = e.code();
        let is = |states: &[&SqlState]| code.is_some_and(|c| states.contains(&c));
        let lost = e.is_closed()
            || is(&[
                &SqlState::ADMIN_SHUTDOWN,
                &SqlState::CRASH_SHUTDOWN,
                &SqlState::CANNOT_CONNECT_NOW,
                &SqlState::CONNECTION_FAILURE,
                &SqlState::CONNECTION_EXCEPTION,
            ])
            || (e.as_db_error().is_none() && std::error::Error::source(e).is_some());
        let advice = if lost {
            "the connection to the server was lost; the call either completed or left \
             nothing behind. Once the server is reachable, invoke(None, config) continues \
             the thread from its last saved step"
        } else if is(&[&SqlState::UNDEFINED_TABLE]) {
            "the checkpoint tables do not exist; call setup() once (it creates them)"
        } else if is(&[&SqlState::UNDEFINED_COLUMN, &SqlState::UNDEFINED_FUNCTION]) {
            "the checkpoint tables are from an older version; call setup() to migrate them"
        } else if is(&[
            &SqlState::INSUFFICIENT_PRIVILEGE,
            &SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
        ]) {
            "grant the user access to the ironloop_* tables"
        } else if is(&[&SqlState::DISK_FULL, &SqlState::OUT_OF_MEMORY]) {
            "the server is out of space"
        } else {
            ""
        };
        if advice.is_empty() {
            CheckpointError::storage(format!("{name}: cannot {op}: {detail}"))
        } else {
            CheckpointError::storage(format!("{name}: cannot {op}: {detail}: {advice}"))
        }
    }
}
/// The server's own message when there is one (tokio-postgres prints just "db error").
pub(super) fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{}: {}", db.code().code(), db.message());
            if let Some(d) = db.detail() {
                s.push_str(&format!(" ({d})"));
            }
            s
        }
        None => match std::error::Error::source(e) {
            Some(src) => format!("{e}: {src}"),
            None => e.to_string(),
        },
    }
}

/// `host:port/database` from a connection config.
pub(super) fn server_name(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}
