//! A saver's records and pending writes as JSON text, for the LangGraph saver API
//! (`get_tuple`, `list`, `put`, `put_writes`, `copy_thread`, `prune`, ...) that
//! `ironloop.checkpoint` builds on every saver class. The storage stays the engine's:
//! these functions read and save [`CheckpointRecord`]s through the [`Checkpointer`]
//! trait, so sealing, run leases and the one-transaction rule hold for them too; only
//! the shape LangGraph's callers expect is made in Python.

use std::future::Future;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::super::runtime::block_on_uncancelled;
use super::savers::checkpointer_from;
use crate::checkpoint::{CheckpointRecord, Checkpointer, PendingWrite, Put, Result};

/// Runs `f` on `saver`'s storage with the GIL released, its error raised as the
/// saver's typed exception.
fn on_saver<T, F, Fut>(saver: &Bound<'_, PyAny>, f: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<dyn Checkpointer>) -> Fut,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    let py = saver.py();
    let cp = checkpointer_from(py, saver)?;
    block_on_uncancelled(py, f(cp))?.map_err(PyErr::from)
}

fn to_text<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| PyValueError::new_err(format!("not JSON: {e}")))
}

fn from_text<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| {
        PyValueError::new_err(format!(
            "not a {what} ({e}): build it with ironloop.checkpoint, not by hand"
        ))
    })
}

/// Every storage key `saver` holds checkpoints under: thread ids and, for
/// subgraphs, `thread_id` + `\x1f` + `checkpoint_ns`.
#[pyfunction]
pub fn _saver_thread_keys(saver: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    on_saver(saver, |cp| async move { cp.thread_keys().await })
}

/// The record `id` (else the key's latest) and its pending writes, as JSON text.
#[pyfunction]
#[pyo3(signature = (saver, key, id=None))]
pub fn _saver_get(
    saver: &Bound<'_, PyAny>,
    key: String,
    id: Option<String>,
) -> PyResult<Option<(String, String)>> {
    let got = on_saver(saver, |cp| async move {
        cp.get_with_writes(&key, id.as_deref()).await
    })?;
    got.map(|(r, w)| Ok((to_text(&r)?, to_text(&w)?)))
        .transpose()
}

/// The key's records newest first (at most `limit`, older than `before`), as JSON.
#[pyfunction]
#[pyo3(signature = (saver, key, limit=None, before=None))]
pub fn _saver_list(
    saver: &Bound<'_, PyAny>,
    key: String,
    limit: Option<usize>,
    before: Option<String>,
) -> PyResult<Vec<String>> {
    let records = on_saver(saver, |cp| async move {
        cp.list(&key, limit, before.as_deref()).await
    })?;
    records.iter().map(to_text).collect()
}

/// The pending writes of the key's checkpoint `id`, as JSON text.
#[pyfunction]
pub fn _saver_writes(saver: &Bound<'_, PyAny>, key: String, id: String) -> PyResult<String> {
    to_text(&on_saver(saver, |cp| async move {
        cp.pending_writes(&key, &id).await
    })?)
}

/// Saves `records` (JSON, parents first), then `writes` (`(checkpoint_id, JSON list
/// of pending writes)`), under `key` in one transaction. The writes come last so that
/// a copied chain keeps every checkpoint's pending writes: a record's save drops its
/// parent's, and these belong to records already saved.
#[pyfunction]
pub fn _saver_put(
    saver: &Bound<'_, PyAny>,
    key: String,
    records: Vec<String>,
    writes: Vec<(String, String)>,
) -> PyResult<()> {
    let mut puts = Vec::with_capacity(records.len() + writes.len());
    for r in &records {
        let record: CheckpointRecord = from_text(r, "checkpoint record")?;
        puts.push(Put::Record {
            record: Box::new(record),
            next: false,
        });
    }
    for (checkpoint_id, w) in writes {
        let writes: Vec<PendingWrite> = from_text(&w, "list of pending writes")?;
        puts.push(Put::Writes {
            checkpoint_id,
            writes,
        });
    }
    if puts.is_empty() {
        return Ok(());
    }
    on_saver(saver, |cp| async move { cp.put_many(&key, puts).await })
}

/// Deletes the key's checkpoints `ids` with their pending writes.
#[pyfunction]
pub fn _saver_delete_checkpoints(
    saver: &Bound<'_, PyAny>,
    key: String,
    ids: Vec<String>,
) -> PyResult<()> {
    on_saver(
        saver,
        |cp| async move { cp.delete_checkpoints(&key, ids).await },
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_saver_thread_keys, m)?)?;
    m.add_function(wrap_pyfunction!(_saver_get, m)?)?;
    m.add_function(wrap_pyfunction!(_saver_list, m)?)?;
    m.add_function(wrap_pyfunction!(_saver_writes, m)?)?;
    m.add_function(wrap_pyfunction!(_saver_put, m)?)?;
    m.add_function(wrap_pyfunction!(_saver_delete_checkpoints, m)?)?;
    Ok(())
}
