//! The checkpointer classes: `MemorySaver`, `SqliteSaver` and `PostgresSaver` over the
//! core savers.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use super::super::args::Timeout;
use super::super::errors::Class;
use super::super::runtime::block_on_uncancelled;
use crate::checkpoint::{
    Checkpointer, MemorySaver, PostgresOptions, PostgresSaver, RecordKey, SqliteSaver, KEY_ENV,
};

// ---------------------------------------------------------------------------------
// Checkpointers

/// One saver class's `#[pymethods]`: the methods every saver has alike, written here
/// once, then the class's own (`$own`). `closes`: a saver with connections or a file
/// to release, which closes the same way as a context manager, sync and async.
macro_rules! saver_methods {
    ($class:ident, closes { $($own:tt)* }) => {
        saver_methods!($class {
            /// Lets the work under way finish, then releases the connections or the
            /// file; the saver can no longer be used. Idempotent.
            fn close(&self, py: Python<'_>) -> PyResult<()> {
                match taken(&self.inner) {
                    Some(s) => {
                        let close = async move { Checkpointer::close(&*s).await };
                        Ok(block_on_uncancelled(py, close)??)
                    }
                    None => Ok(()),
                }
            }

            fn __enter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            fn __exit__(
                &self,
                py: Python<'_>,
                _a: Py<PyAny>,
                _b: Py<PyAny>,
                _c: Py<PyAny>,
            ) -> PyResult<bool> {
                self.close(py)?;
                Ok(false)
            }

            /// `async with Saver(...) as saver:`, as LangGraph's async savers are used.
            fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
                let me = slf.clone().unbind();
                crate::bindings::awaitable::future_into_py(slf.py(), async move { Ok(me) })
            }

            fn __aexit__<'py>(
                &self,
                py: Python<'py>,
                _a: Py<PyAny>,
                _b: Py<PyAny>,
                _c: Py<PyAny>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let s = taken(&self.inner);
                crate::bindings::awaitable::future_into_py(py, async move {
                    if let Some(s) = s {
                        Checkpointer::close(&*s).await?;
                    }
                    Ok(false)
                })
            }

            $($own)*
        });
    };
    ($class:ident { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            /// Deletes the thread's checkpoints and writes, its subgraphs' included.
            fn delete_thread(slf: &Bound<'_, Self>, thread_id: String) -> PyResult<()> {
                delete_thread(slf.as_any(), thread_id)
            }

            /// Threads whose last run stopped mid-step (a crashed worker) and that no
            /// live claim holds, idle longest first (see `claim_stalled`).
            #[pyo3(signature = (*, stale_after=60.0, limit=None))]
            fn list_stalled(
                slf: &Bound<'_, Self>,
                stale_after: f64,
                limit: Option<usize>,
            ) -> PyResult<Vec<String>> {
                list_stalled_on(slf.as_any(), stale_after, limit)
            }

            /// Claims up to `limit` stalled threads for `owner` for `lease` seconds,
            /// atomically: two workers never get the same thread.
            #[pyo3(signature = (owner, *, stale_after=60.0, lease=None, limit=1))]
            fn claim_stalled(
                slf: &Bound<'_, Self>,
                owner: String,
                stale_after: f64,
                lease: Option<f64>,
                limit: usize,
            ) -> PyResult<Vec<String>> {
                let py = slf.py();
                let stale = seconds(py, stale_after, "stale_after")?;
                let lease = match lease {
                    Some(l) => seconds(py, l, "lease")?,
                    None => stale,
                };
                if limit == 0 {
                    return Err(Class::InvalidArgument.err(py, "limit must be at least 1, got 0"));
                }
                if owner.is_empty() {
                    return Err(Class::InvalidArgument.err(
                        py,
                        "owner must name the worker that claims (e.g. its host and pid), got ''",
                    ));
                }
                let cp = checkpointer_from(py, slf.as_any())?;
                Ok(block_on_uncancelled(py, async move {
                    cp.claim_stalled(&owner, stale, lease, limit).await
                })??)
            }

            $($own)*
        }
    };
}

/// The saver a closing class held, taken out of it (`None` once closed): later calls
/// say the saver is closed.
fn taken<T: Checkpointer + 'static>(inner: &Mutex<Option<Arc<T>>>) -> Option<Arc<T>> {
    inner.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// `saver.delete_thread(thread_id)`, for every saver class.
fn delete_thread(saver: &Bound<'_, PyAny>, thread_id: String) -> PyResult<()> {
    let py = saver.py();
    let cp = checkpointer_from(py, saver)?;
    block_on_uncancelled(py, async move { cp.delete_thread(&thread_id).await })?
        .map_err(PyErr::from)
}

/// The key a saver's records are authenticated with: `key` (bytes, or a str), else the
/// environment variable `IRONLOOP_CHECKPOINT_KEY` when it is set, else none.
/// `encrypt` without a key is refused: the caller asked for what cannot be done.
fn record_key(
    py: Python<'_>,
    key: Option<&Bound<'_, PyAny>>,
    encrypt: bool,
    accept_unkeyed: bool,
) -> PyResult<Option<RecordKey>> {
    let invalid = |m: String| Class::InvalidArgument.err(py, m);
    let key = match key {
        Some(k) if k.is_instance_of::<PyString>() => Some(
            RecordKey::from_text(&k.extract::<String>()?).map_err(|e| invalid(e.to_string()))?,
        ),
        Some(k) => {
            let bytes: Vec<u8> = k.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "key must be bytes (32 of them) or a str, got {}",
                    k.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            Some(RecordKey::new(&bytes).map_err(|e| invalid(e.to_string()))?)
        }
        None => match std::env::var(KEY_ENV) {
            Ok(text) if !text.is_empty() => Some(
                RecordKey::from_text(&text)
                    .map_err(|e| invalid(format!("the environment variable {KEY_ENV}: {e}")))?,
            ),
            _ => None,
        },
    };
    match key {
        Some(k) => Ok(Some(k.encrypt(encrypt).accept_unkeyed(accept_unkeyed))),
        None if encrypt => Err(invalid(format!(
            "encrypt=True needs a key: pass key=... (32 bytes, or a str of 64 hex digits) or \
             set the environment variable {KEY_ENV}"
        ))),
        None => Ok(None),
    }
}

/// Keeps checkpoints in memory (deltas: each step's writes). Python may subclass the
/// savers (as LangGraph's tests and users' wrappers do); the engine still saves through
/// the Rust storage, not through methods a subclass overrides.
#[pyclass(name = "MemorySaver", module = "ironloop", frozen, subclass)]
pub struct PyMemorySaver {
    pub inner: Arc<MemorySaver>,
}

saver_methods!(PyMemorySaver {
    #[new]
    #[pyo3(signature = (*, key=None, encrypt=false, accept_unkeyed=false))]
    fn new(
        py: Python<'_>,
        key: Option<&Bound<'_, PyAny>>,
        encrypt: bool,
        accept_unkeyed: bool,
    ) -> PyResult<Self> {
        let saver = match record_key(py, key, encrypt, accept_unkeyed)? {
            Some(k) => MemorySaver::new().with_key(k),
            None => MemorySaver::new(),
        };
        Ok(PyMemorySaver {
            inner: Arc::new(saver),
        })
    }

    /// Approximate bytes of checkpoint data held.
    fn approx_bytes(&self) -> usize {
        self.inner.approx_bytes()
    }
});

/// Checkpoints in a SQLite file (WAL): durable across crashes, shareable between
/// processes.
#[pyclass(name = "SqliteSaver", module = "ironloop", frozen, subclass)]
pub struct PySqliteSaver {
    pub(super) inner: Mutex<Option<Arc<SqliteSaver>>>,
    pub(super) path: String,
}

saver_methods!(PySqliteSaver, closes {
    #[new]
    #[pyo3(signature = (path, *, key=None, encrypt=false, accept_unkeyed=false))]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        key: Option<&Bound<'_, PyAny>>,
        encrypt: bool,
        accept_unkeyed: bool,
    ) -> PyResult<Self> {
        let key = record_key(py, key, encrypt, accept_unkeyed)?;
        let p = path.clone();
        let mut saver = py
            .detach(move || SqliteSaver::open(&p))
            .map_err(PyErr::from)?;
        if let Some(k) = key {
            saver = saver.with_key(k);
        }
        Ok(PySqliteSaver {
            inner: Mutex::new(Some(Arc::new(saver))),
            path: path.display().to_string(),
        })
    }

    #[classmethod]
    #[pyo3(signature = (conn, *, key=None, encrypt=false, accept_unkeyed=false))]
    fn from_conn_string(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        conn: String,
        key: Option<&Bound<'_, PyAny>>,
        encrypt: bool,
        accept_unkeyed: bool,
    ) -> PyResult<Self> {
        let path = conn
            .strip_prefix("sqlite:///")
            .or_else(|| conn.strip_prefix("file:"))
            .unwrap_or(&conn);
        Self::new(py, path.into(), key, encrypt, accept_unkeyed)
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }
});

/// Checkpoints in PostgreSQL, shared by every process and machine that uses the same
/// database. Calls run on the shared tokio runtime with the GIL released.
#[pyclass(name = "PostgresSaver", module = "ironloop", frozen, subclass)]
pub struct PyPostgresSaver {
    inner: Mutex<Option<Arc<PostgresSaver>>>,
    server: String,
}

impl PyPostgresSaver {
    fn saver(&self) -> Option<Arc<PostgresSaver>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn open_saver(&self, py: Python<'_>) -> PyResult<Arc<PostgresSaver>> {
        self.saver().ok_or_else(|| {
            Class::CheckpointStorage.err(
                py,
                format!(
                    "PostgresSaver({}) is closed; make a new one to keep using the database",
                    self.server
                ),
            )
        })
    }
}

saver_methods!(PyPostgresSaver, closes {
    /// Connects to `conn_string` (`postgresql://user:password@host:port/db?sslmode=...`)
    /// and checks the server answers. Call `setup()` once per database.
    #[new]
    #[pyo3(signature = (
        conn_string, *, schema=None, pool_size=8, connect_timeout=None, key=None, encrypt=false,
        accept_unkeyed=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        conn_string: String,
        schema: Option<String>,
        pool_size: usize,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        encrypt: bool,
        accept_unkeyed: bool,
    ) -> PyResult<Self> {
        if pool_size == 0 {
            return Err(Class::InvalidArgument.err(py, "pool_size must be at least 1, got 0"));
        }
        let mut opts = PostgresOptions {
            schema,
            pool_size,
            key: record_key(py, key, encrypt, accept_unkeyed)?,
            ..Default::default()
        };
        if let Some(t) = connect_timeout {
            if let Some(Timeout(d)) = Timeout::optional(t, "connect_timeout")? {
                opts.connect_timeout = d;
            }
        }
        let connect = async move { PostgresSaver::connect_with(&conn_string, opts).await };
        let saver = block_on_uncancelled(py, connect)??;
        let server = saver
            .name()
            .trim_start_matches("PostgresSaver(")
            .trim_end_matches(')')
            .to_owned();
        Ok(PyPostgresSaver {
            inner: Mutex::new(Some(Arc::new(saver))),
            server,
        })
    }

    /// The same as the constructor (LangGraph's spelling): the arguments are the
    /// constructor's, and it checks them.
    #[classmethod]
    #[pyo3(signature = (*args, **kwargs))]
    fn from_conn_string<'py>(
        cls: &Bound<'py, PyType>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        cls.call(args, kwargs)
    }

    /// `host:port/database` (never the password).
    #[getter]
    fn server(&self) -> &str {
        &self.server
    }

    /// Creates or migrates the tables; safe on every start, from several workers.
    fn setup(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.open_saver(py)?;
        Ok(block_on_uncancelled(py, async move { s.setup().await })??)
    }

    /// Like `setup`, as an awaitable.
    fn asetup<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.open_saver(py)?;
        crate::bindings::awaitable::future_into_py(py, async move { Ok(s.setup().await?) })
    }

    /// Like `close`, as an awaitable.
    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = taken(&self.inner);
        crate::bindings::awaitable::future_into_py(py, async move {
            if let Some(s) = s {
                Checkpointer::close(&*s).await?;
            }
            Ok(())
        })
    }

    fn __repr__(&self) -> String {
        let state = if self.saver().is_some() {
            ""
        } else {
            ", closed"
        };
        format!("PostgresSaver('{}'{state})", self.server)
    }
});

// ---------------------------------------------------------------------------------
// Stalled threads: the same two methods on every saver

/// `saver.list_stalled(...)` for any of the savers.
fn list_stalled_on(
    saver: &Bound<'_, PyAny>,
    stale_after: f64,
    limit: Option<usize>,
) -> PyResult<Vec<String>> {
    let py = saver.py();
    let stale = seconds(py, stale_after, "stale_after")?;
    let cp = checkpointer_from(py, saver)?;
    Ok(block_on_uncancelled(py, async move {
        cp.list_stalled(stale, limit).await
    })??)
}

/// A positive, finite number of seconds; the error names the argument.
fn seconds(py: Python<'_>, v: f64, name: &str) -> PyResult<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Class::InvalidArgument.err(
                py,
                format!("{name} must be a positive number of seconds, got {v}"),
            )
        })
}

pub(super) fn checkpointer_from(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
) -> PyResult<Arc<dyn Checkpointer>> {
    if let Ok(m) = obj.cast::<PyMemorySaver>() {
        return Ok(m.get().inner.clone());
    }
    if let Ok(s) = obj.cast::<PySqliteSaver>() {
        return s
            .get()
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .map(|s| s as Arc<dyn Checkpointer>)
            .ok_or_else(|| {
                Class::CheckpointStorage.err(
                    py,
                    "this SqliteSaver is closed; open a new one to use the file",
                )
            });
    }
    if let Ok(s) = obj.cast::<PyPostgresSaver>() {
        return Ok(s.get().open_saver(py)? as Arc<dyn Checkpointer>);
    }
    Err(PyTypeError::new_err(format!(
        "checkpointer must be MemorySaver, SqliteSaver or PostgresSaver, got {}",
        obj.get_type().name()?
    )))
}
