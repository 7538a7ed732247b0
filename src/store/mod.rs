//! Long-term memory: LangGraph's `BaseStore` as a Rust engine.
//!
//! A store keeps JSON objects (items) under a namespace (a path of labels) and a
//! key, across threads and runs. Items may carry vectors (one per embedded field,
//! made by the host from the item's text) so that a search ranks them by cosine
//! similarity to a query's vector, exactly (`vector`). Items may expire (`ttl`): an
//! expired item is never returned, and a sweep deletes it.
//!
//! Every backend answers the same [`Op`]s through [`StoreBackend::batch`], in the
//! order given: [`memory::MemoryStore`] (this process), [`sqlite::SqliteStore`] (one
//! file, the vectors beside the items in the same database) and, with the
//! `postgres` feature, [`postgres::PostgresStore`]. The rules they share —
//! namespaces, filters, ranking, expiry — live in their own modules so that the
//! three cannot drift.

pub mod filter;
pub mod index;
pub mod matrix;
pub mod memory;
pub mod namespace;
#[cfg(feature = "postgres")]
pub mod pgvector;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod ttl;
pub mod vector;

use async_trait::async_trait;
use serde_json::{Map, Value};

pub use filter::Filter;
pub use namespace::{MatchCondition, MatchKind, Namespace};

/// What went wrong in a store operation.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The caller passed something the store cannot take (a bad namespace, a value
    /// that is not a JSON object, a vector of the wrong size, an unknown filter
    /// operator). The message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The database failed (I/O, a dropped connection, a locked file).
    #[error("{0}")]
    Storage(String),
    /// The store was closed before the operation.
    #[error("the store is closed: make a new one (or use it inside its `with` block)")]
    Closed,
}

/// A store operation's result type.
pub type Result<T> = std::result::Result<T, StoreError>;

/// A stored item as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub namespace: Namespace,
    pub key: String,
    /// The value's JSON text (an object): as written, but for PostgreSQL's `jsonb`
    /// column (LangGraph's), which renders it anew (keys ordered, spaced).
    pub value: String,
    /// Seconds since the Unix epoch.
    pub created_at: f64,
    pub updated_at: f64,
    /// The cosine similarity to the search's query, for a ranked search.
    pub score: Option<f32>,
}

/// The value half of a put.
#[derive(Debug, Clone)]
pub struct PutValue {
    /// The value's JSON text; must be an object.
    pub json: String,
    /// One vector per embedded text (`field` names it, e.g. `"text"` or `"tags.1"`);
    /// empty when the item is not indexed.
    pub vectors: Vec<(String, Vec<f32>)>,
    /// Minutes until the item expires after its last write (or read, when reads
    /// refresh); `None`: never.
    pub ttl_minutes: Option<f64>,
}

/// A search: LangGraph's `SearchOp`, with the query already embedded.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub prefix: Namespace,
    pub filter: Option<Filter>,
    pub limit: usize,
    pub offset: usize,
    /// The query's vector: the search is ranked by cosine similarity to it.
    pub query: Option<Vec<f32>>,
    pub refresh_ttl: bool,
}

/// LangGraph's `ListNamespacesOp`.
#[derive(Debug, Clone, Default)]
pub struct ListNamespaces {
    pub conditions: Vec<MatchCondition>,
    pub max_depth: Option<usize>,
    pub limit: usize,
    pub offset: usize,
}

/// One operation of a batch.
#[derive(Debug, Clone)]
pub enum Op {
    Get {
        namespace: Namespace,
        key: String,
        refresh_ttl: bool,
    },
    /// `value: None` deletes the item.
    Put {
        namespace: Namespace,
        key: String,
        value: Option<PutValue>,
    },
    Search(Search),
    ListNamespaces(ListNamespaces),
}

/// The result of one [`Op`], at the op's position.
#[derive(Debug, Clone, PartialEq)]
pub enum OpResult {
    Item(Option<Item>),
    Items(Vec<Item>),
    Namespaces(Vec<Namespace>),
    /// What a put answers.
    Done,
}

/// A store backend: runs a batch of operations in order, each seeing the ones
/// before it.
#[async_trait]
pub trait StoreBackend: Send + Sync {
    /// Creates the backend's tables (idempotent); a no-op in memory.
    async fn setup(&self) -> Result<()>;
    /// Runs `ops` in order. A put's value is checked (JSON object, vectors of the
    /// store's size) before anything of the batch is written.
    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>>;
    /// Deletes the expired items; returns how many.
    async fn sweep(&self) -> Result<usize>;
    /// Releases the backend's connections; later calls fail with
    /// [`StoreError::Closed`].
    async fn close(&self) -> Result<()>;
}

/// Checks the puts of a batch before any is applied: the value is a JSON object and
/// every vector has `dims` numbers (when the store has an index), and every namespace
/// is well formed: a bad op fails the batch before it writes anything.
pub fn check_puts(ops: &[Op], dims: Option<usize>) -> Result<()> {
    for op in ops {
        match op {
            Op::Put {
                namespace,
                key,
                value,
            } => {
                namespace::validate_for_put(namespace)?;
                if let Some(v) = value {
                    check_value(namespace, key, v, dims)?;
                }
            }
            Op::Get { namespace, .. } => namespace::validate_labels(namespace)?,
            Op::Search(s) => {
                namespace::validate_labels(&s.prefix)?;
                if let (Some(q), Some(d)) = (&s.query, dims) {
                    if q.len() != d {
                        return Err(StoreError::Invalid(format!(
                            "the query's embedding has {} dimensions, but the store's index \
                             has dims={d}; make `dims` match the embedding model",
                            q.len()
                        )));
                    }
                }
            }
            Op::ListNamespaces(l) => {
                for c in &l.conditions {
                    namespace::validate_labels(&c.path)?;
                }
            }
        }
    }
    Ok(())
}

fn check_value(ns: &Namespace, key: &str, v: &PutValue, dims: Option<usize>) -> Result<()> {
    let parsed: Value = serde_json::from_str(&v.json).map_err(|e| {
        StoreError::Invalid(format!(
            "the value of {key:?} in {ns:?} is not JSON ({e}); store a dict of JSON values"
        ))
    })?;
    if !parsed.is_object() {
        return Err(StoreError::Invalid(format!(
            "the value of {key:?} in {ns:?} is not a JSON object; store a dict"
        )));
    }
    if let Some(ttl) = v.ttl_minutes {
        if !(ttl.is_finite() && ttl > 0.0) {
            return Err(StoreError::Invalid(format!(
                "ttl must be a positive number of minutes, got {ttl}"
            )));
        }
    }
    for (field, vec) in &v.vectors {
        if let Some(d) = dims {
            if vec.len() != d {
                return Err(StoreError::Invalid(format!(
                    "the embedding of field {field:?} of {key:?} has {} dimensions, but the \
                     store's index has dims={d}; make `dims` match the embedding model",
                    vec.len()
                )));
            }
        }
        if vec.iter().any(|x| !x.is_finite()) {
            return Err(StoreError::Invalid(format!(
                "the embedding of field {field:?} of {key:?} holds a NaN or infinite number"
            )));
        }
    }
    Ok(())
}

/// Parses a value's JSON text as an object (what a filter reads).
pub(crate) fn parse_object(json: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(json) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
