//! The checkpointer classes: `MemorySaver` and `SqliteSaver` over the core savers.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::super::errors::error;
use crate::checkpoint::{Checkpointer, MemorySaver, SqliteSaver};

// ---------------------------------------------------------------------------------
// Checkpointers

/// Keeps checkpoints in memory (deltas: each step's writes).
#[pyclass(name = "MemorySaver", module = "ironloop", frozen)]
pub struct PyMemorySaver {
    pub inner: Arc<MemorySaver>,
}

#[pymethods]
impl PyMemorySaver {
    #[new]
    fn new() -> Self {
        PyMemorySaver {
            inner: Arc::new(MemorySaver::new()),
        }
    }

    /// Approximate bytes of checkpoint data held.
    fn approx_bytes(&self) -> usize {
        self.inner.approx_bytes()
    }
}

/// Checkpoints in a SQLite file (WAL): durable across crashes, shareable between
/// processes.
#[pyclass(name = "SqliteSaver", module = "ironloop", frozen)]
pub struct PySqliteSaver {
    pub(super) inner: Mutex<Option<Arc<SqliteSaver>>>,
    pub(super) path: String,
}

#[pymethods]
impl PySqliteSaver {
    #[new]
    fn new(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let p = path.clone();
        let saver = py
            .detach(move || SqliteSaver::open(&p))
            .map_err(PyErr::from)?;
        Ok(PySqliteSaver {
            inner: Mutex::new(Some(Arc::new(saver))),
            path: path.display().to_string(),
        })
    }

    #[classmethod]
    fn from_conn_string(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        conn: String,
    ) -> PyResult<Self> {
        let path = conn
            .strip_prefix("sqlite:///")
            .or_else(|| conn.strip_prefix("file:"))
            .unwrap_or(&conn);
        Self::new(py, path.into())
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Closes the file; the saver can no longer be used.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(s) = s {
            py.detach(move || s.close()).map_err(PyErr::from)?;
        }
        Ok(())
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
                error(
                    py,
                    "CheckpointStorageError",
                    "this SqliteSaver is closed; open a new one to use the file",
                )
            });
    }
    Err(PyTypeError::new_err(format!(
        "checkpointer must be MemorySaver or SqliteSaver, got {}",
        obj.get_type().name()?
    )))
}
