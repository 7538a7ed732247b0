//! The store's glue: `_StoreCore` runs batches of store operations on a Rust backend
//! (`crate::store`), `_OpenAIEmbeddings` is the Rust embeddings client. Operations
//! cross as tuples made by `python/ironloop/store/_core.py` (values as JSON text,
//! vectors as lists of floats), items come back as tuples it turns into `Item`s.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use super::awaitable::future_into_py;
use super::errors::Class;
use super::runtime::{block_on_uncancelled, runtime};
use crate::model::{HttpSettings, ModelError, OpenAIEmbeddings, RetryPolicy};
use crate::store::memory::MemoryStore;
#[cfg(feature = "postgres")]
use crate::store::postgres::PostgresStore;
use crate::store::sqlite::SqliteStore;
#[cfg(feature = "postgres")]
use crate::store::vector::Metric;
use crate::store::{
    ttl, Filter, Item, ListNamespaces, MatchCondition, MatchKind, Op, OpResult, PutValue, Search,
    StoreBackend, StoreError,
};

impl From<StoreError> for PyErr {
    fn from(e: StoreError) -> PyErr {
        match e {
            StoreError::Invalid(m) => PyValueError::new_err(m),
            other => Class::Store.new_err(other.to_string()),
        }
    }
}

/// Which backend a `_StoreCore` drives: memory and SQLite work without waiting (a
/// sync call runs them on the caller's thread, the GIL released), PostgreSQL on the
/// runtime.
#[derive(Clone)]
enum Backend {
    Memory(Arc<MemoryStore>),
    Sqlite(Arc<SqliteStore>),
    #[cfg(feature = "postgres")]
    Postgres(Arc<PostgresStore>),
}

impl Backend {
    fn dynamic(&self) -> Arc<dyn StoreBackend> {
        match self {
            Backend::Memory(s) => s.clone(),
            Backend::Sqlite(s) => s.clone(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(s) => s.clone(),
        }
    }

    /// Runs `ops` from a sync caller.
    fn run(&self, py: Python<'_>, ops: Vec<Op>) -> PyResult<Vec<OpResult>> {
        match self {
            Backend::Memory(s) => Ok(py.detach(|| s.run(ops))?),
            Backend::Sqlite(s) => Ok(py.detach(|| s.run(ops))?),
            #[cfg(feature = "postgres")]
            Backend::Postgres(s) => {
                let s = s.clone();
                Ok(block_on_uncancelled(
                    py,
                    async move { s.batch(ops).await },
                )??)
            }
        }
    }

    /// Runs `ops` for an async caller: SQLite on a blocking thread of the runtime.
    async fn arun(self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        match self {
            Backend::Memory(s) => s.run(ops),
            Backend::Sqlite(s) => tokio::task::spawn_blocking(move || s.run(ops))
                .await
                .map_err(|e| StoreError::Storage(format!("SqliteStore: the batch failed: {e}")))?,
            #[cfg(feature = "postgres")]
            Backend::Postgres(s) => s.batch(ops).await,
        }
    }
}

/// A store engine: `InMemoryStore`, `SqliteStore` and `PostgresStore` each hold one.
#[pyclass(name = "_StoreCore", module = "ironloop._ironloop", frozen)]
pub struct StoreCore {
    backend: Backend,
    sweeper: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl StoreCore {
    fn new(backend: Backend) -> Self {
        StoreCore {
            backend,
            sweeper: Mutex::new(None),
        }
    }
}

#[pymethods]
impl StoreCore {
    /// A store in this process's memory.
    #[staticmethod]
    #[pyo3(signature = (dims=None))]
    fn memory(dims: Option<usize>) -> Self {
        StoreCore::new(Backend::Memory(Arc::new(MemoryStore::new(dims))))
    }

    /// A store in the SQLite database at `path` (`:memory:` for a private one).
    #[staticmethod]
    #[pyo3(signature = (path, dims=None))]
    fn sqlite(py: Python<'_>, path: String, dims: Option<usize>) -> PyResult<Self> {
        let s = py.detach(|| SqliteStore::open(&path, dims))?;
        Ok(StoreCore::new(Backend::Sqlite(Arc::new(s))))
    }

    /// A store in the PostgreSQL database at `dsn`, searched by `distance`
    /// (LangGraph's `distance_type`: `cosine`, `inner_product` or `l2`); in pgvector
    /// when the server has it, with LangGraph's `ann_index_config` (`vector_type`,
    /// and `ann_kind` / `ann_params` for an index). What is not given is
    /// `AnnConfig::default()`'s: no index, exact search.
    #[cfg(feature = "postgres")]
    #[staticmethod]
    #[pyo3(signature = (
        dsn, dims=None, pool_size=4, distance="cosine", vector_type=None,
        ann_kind=None, ann_params=Vec::new()
    ))]
    #[allow(clippy::too_many_arguments)]
    fn postgres(
        py: Python<'_>,
        dsn: String,
        dims: Option<usize>,
        pool_size: usize,
        distance: &str,
        vector_type: Option<String>,
        ann_kind: Option<String>,
        ann_params: Vec<(String, i64)>,
    ) -> PyResult<Self> {
        let default = crate::store::pgvector::AnnConfig::default();
        let ann = crate::store::pgvector::AnnConfig {
            vector_type: vector_type.unwrap_or(default.vector_type),
            kind: ann_kind.or(default.kind),
            params: ann_params,
        };
        let metric = Metric::parse(distance).ok_or_else(|| {
            PyValueError::new_err(format!(
                "distance_type={distance:?} is not supported: pass 'cosine', \
                 'inner_product' or 'l2'"
            ))
        })?;
        let fut = async move { PostgresStore::connect(&dsn, dims, pool_size, metric, ann).await };
        let s = block_on_uncancelled(py, fut)??;
        Ok(StoreCore::new(Backend::Postgres(Arc::new(s))))
    }

    /// The SQLite store's schema steps, in order (`SqliteStore.MIGRATIONS`).
    #[staticmethod]
    fn sqlite_migrations() -> Vec<&'static str> {
        crate::store::sqlite::MIGRATIONS.to_vec()
    }

    /// The PostgreSQL store's schema steps, in order (`PostgresStore.MIGRATIONS`).
    #[cfg(feature = "postgres")]
    #[staticmethod]
    fn postgres_migrations() -> Vec<&'static str> {
        crate::store::postgres::MIGRATIONS.to_vec()
    }

    /// Runs a batch of operation tuples; returns one result per operation.
    fn batch<'py>(&self, py: Python<'py>, ops: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let ops = parse_ops(ops)?;
        let results = self.backend.run(py, ops)?;
        results_to_py(py, results)
    }

    /// Like `batch`, as an awaitable.
    fn abatch<'py>(&self, py: Python<'py>, ops: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let ops = parse_ops(ops)?;
        let backend = self.backend.clone();
        future_into_py(py, async move {
            let results = backend.arun(ops).await?;
            Python::attach(|py| results_to_py(py, results).map(Bound::unbind))
        })
    }

    fn setup(&self, py: Python<'_>) -> PyResult<()> {
        let b = self.backend.dynamic();
        Ok(block_on_uncancelled(py, async move { b.setup().await })??)
    }

    fn asetup<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let b = self.backend.dynamic();
        future_into_py(py, async move { Ok(b.setup().await?) })
    }

    /// Deletes the expired items now; returns how many.
    fn sweep(&self, py: Python<'_>) -> PyResult<usize> {
        let b = self.backend.dynamic();
        Ok(block_on_uncancelled(py, async move { b.sweep().await })??)
    }

    fn asweep<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let b = self.backend.dynamic();
        future_into_py(py, async move { Ok(b.sweep().await?) })
    }

    /// Starts sweeping every `seconds` on the runtime (replacing a running sweeper);
    /// it stops with `stop_sweeper`, `close`, or when the store is dropped.
    fn start_sweeper(&self, seconds: f64) -> PyResult<()> {
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(PyValueError::new_err(format!(
                "sweep_interval_minutes must be a positive number, got {} minutes",
                seconds / 60.0
            )));
        }
        let weak: Weak<dyn StoreBackend> = match &self.backend {
            Backend::Memory(s) => Arc::downgrade(s) as Weak<dyn StoreBackend>,
            Backend::Sqlite(s) => Arc::downgrade(s) as Weak<dyn StoreBackend>,
            #[cfg(feature = "postgres")]
            Backend::Postgres(s) => Arc::downgrade(s) as Weak<dyn StoreBackend>,
        };
        let handle = {
            let _rt = runtime().enter();
            ttl::spawn_sweeper(weak, Duration::from_secs_f64(seconds))
        };
        if let Some(old) = self.lock_sweeper().replace(handle) {
            old.abort();
        }
        Ok(())
    }

    /// Stops the sweeper; returns whether one was running.
    fn stop_sweeper(&self) -> bool {
        match self.lock_sweeper().take() {
            Some(h) => {
                h.abort();
                true
            }
            None => false,
        }
    }

    fn sweeper_running(&self) -> bool {
        self.lock_sweeper()
            .as_ref()
            .is_some_and(|h| !h.is_finished())
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.stop_sweeper();
        let b = self.backend.dynamic();
        Ok(block_on_uncancelled(py, async move { b.close().await })??)
    }
}

impl StoreCore {
    fn lock_sweeper(&self) -> std::sync::MutexGuard<'_, Option<tokio::task::JoinHandle<()>>> {
        self.sweeper.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for StoreCore {
    fn drop(&mut self) {
        if let Some(h) = self.lock_sweeper().take() {
            h.abort();
        }
    }
}

fn strings(t: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    t.try_iter()?.map(|x| x?.extract::<String>()).collect()
}

fn parse_ops(ops: &Bound<'_, PyAny>) -> PyResult<Vec<Op>> {
    ops.try_iter()?
        .map(|op| parse_op(&op?.cast_into::<PyTuple>()?))
        .collect()
}

/// One operation tuple (see `python/ironloop/store/_core.py`).
fn parse_op(t: &Bound<'_, PyTuple>) -> PyResult<Op> {
    let kind: String = t.get_item(0)?.extract()?;
    Ok(match kind.as_str() {
        "get" => Op::Get {
            namespace: strings(&t.get_item(1)?)?,
            key: t.get_item(2)?.extract()?,
            refresh_ttl: t.get_item(3)?.extract()?,
        },
        "put" => {
            let json: Option<String> = t.get_item(3)?.extract()?;
            Op::Put {
                namespace: strings(&t.get_item(1)?)?,
                key: t.get_item(2)?.extract()?,
                value: match json {
                    None => None,
                    Some(json) => Some(PutValue {
                        json,
                        vectors: t
                            .get_item(4)?
                            .try_iter()?
                            .map(|fv| {
                                let fv = fv?;
                                Ok((fv.get_item(0)?.extract()?, vector(&fv.get_item(1)?)?))
                            })
                            .collect::<PyResult<_>>()?,
                        ttl_minutes: t.get_item(5)?.extract()?,
                    }),
                },
            }
        }
        "search" => {
            let filter: Option<String> = t.get_item(2)?.extract()?;
            let filter = match filter {
                None => None,
                Some(text) => match serde_json::from_str(&text) {
                    Ok(serde_json::Value::Object(m)) => Some(Filter::new(m)?),
                    _ => {
                        return Err(PyValueError::new_err(
                            "a search filter is a dict of JSON values",
                        ))
                    }
                },
            };
            Op::Search(Search {
                prefix: strings(&t.get_item(1)?)?,
                filter,
                limit: t.get_item(3)?.extract()?,
                offset: t.get_item(4)?.extract()?,
                query: {
                    let q = t.get_item(5)?;
                    if q.is_none() {
                        None
                    } else {
                        Some(vector(&q)?)
                    }
                },
                refresh_ttl: t.get_item(6)?.extract()?,
            })
        }
        "list" => {
            let mut conditions = Vec::new();
            for c in t.get_item(1)?.try_iter()? {
                let c = c?;
                let kind: String = c.get_item(0)?.extract()?;
                let kind = match kind.as_str() {
                    "prefix" => MatchKind::Prefix,
                    "suffix" => MatchKind::Suffix,
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "unsupported match type {other:?}: use \"prefix\" or \"suffix\""
                        )))
                    }
                };
                conditions.push(MatchCondition {
                    kind,
                    path: strings(&c.get_item(1)?)?,
                });
            }
            Op::ListNamespaces(ListNamespaces {
                conditions,
                max_depth: t.get_item(2)?.extract()?,
                limit: t.get_item(3)?.extract()?,
                offset: t.get_item(4)?.extract()?,
            })
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown store operation {other:?}"
            )))
        }
    })
}

/// A vector as the host sends it: `bytes` of native-endian `f32`s (what
/// `_core.py` makes of a list or an array, in C), or a sequence of floats.
fn vector(v: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    if let Ok(b) = v.cast::<PyBytes>() {
        let raw = b.as_bytes();
        if !raw.len().is_multiple_of(4) {
            return Err(PyValueError::new_err(
                "a vector's bytes are not whole float32s",
            ));
        }
        return Ok(raw
            .chunks_exact(4)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect());
    }
    v.extract()
}

fn item_to_py<'py>(py: Python<'py>, it: Item) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            PyTuple::new(py, it.namespace)?.into_any(),
            it.key.into_pyobject(py)?.into_any(),
            it.value.into_pyobject(py)?.into_any(),
            it.created_at.into_pyobject(py)?.into_any(),
            it.updated_at.into_pyobject(py)?.into_any(),
            it.score.into_pyobject(py)?.into_any(),
        ],
    )
}

fn results_to_py(py: Python<'_>, results: Vec<OpResult>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for r in results {
        match r {
            OpResult::Done | OpResult::Item(None) => out.append(py.None())?,
            OpResult::Item(Some(it)) => out.append(item_to_py(py, it)?)?,
            OpResult::Items(items) => {
                let l = PyList::empty(py);
                for it in items {
                    l.append(item_to_py(py, it)?)?;
                }
                out.append(l)?;
            }
            OpResult::Namespaces(nss) => {
                let l = PyList::empty(py);
                for ns in nss {
                    l.append(PyTuple::new(py, ns)?)?;
                }
                out.append(l)?;
            }
        }
    }
    Ok(out)
}

/// The Rust OpenAI embeddings client, for `index={"embed": "openai:<model>"}`.
#[pyclass(name = "_OpenAIEmbeddings", module = "ironloop._ironloop", frozen)]
pub struct PyOpenAIEmbeddings {
    inner: Arc<OpenAIEmbeddings>,
}

#[pymethods]
impl PyOpenAIEmbeddings {
    #[new]
    #[pyo3(signature = (model, *, base_url=None, api_key=None, dimensions=None, batch_size=512, timeout=60.0, max_retries=2))]
    fn new(
        model: String,
        base_url: Option<String>,
        api_key: Option<String>,
        dimensions: Option<usize>,
        batch_size: usize,
        timeout: f64,
        max_retries: u32,
    ) -> PyResult<Self> {
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(PyValueError::new_err(format!(
                "timeout must be a positive number of seconds, got {timeout}"
            )));
        }
        let settings = HttpSettings {
            base_url,
            api_key,
            timeout: Duration::from_secs_f64(timeout),
            retry: RetryPolicy {
                max_retries,
                ..Default::default()
            },
            ..Default::default()
        };
        let inner = OpenAIEmbeddings::new(model, settings, dimensions, batch_size)?;
        Ok(PyOpenAIEmbeddings {
            inner: Arc::new(inner),
        })
    }

    /// One vector per text.
    fn embed(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<f32>>> {
        let e = self.inner.clone();
        let out: Result<_, ModelError> =
            block_on_uncancelled(py, async move { e.embed(&texts).await })?;
        Ok(out?)
    }

    fn aembed<'py>(&self, py: Python<'py>, texts: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
        let e = self.inner.clone();
        future_into_py(py, async move { Ok(e.embed(&texts).await?) })
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StoreCore>()?;
    m.add_class::<PyOpenAIEmbeddings>()?;
    Ok(())
}
