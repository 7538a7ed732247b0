//! `ironloop.middleware.PIIMiddleware`'s built-in detectors (`crate::pii`) and the
//! file search of `FilesystemFileSearchMiddleware` (`crate::sources::workspace`'s glob
//! and grep), called from Python with the GIL released.

use pyo3::prelude::*;

use crate::sources::workspace::{glob_files, grep_lines};

/// The matches of the built-in detector `kind` in `text`: `(value, start, end)` with
/// character offsets. Raises `ValueError` for a kind that is not built in.
#[pyfunction]
fn _pii_detect(py: Python<'_>, kind: &str, text: &str) -> PyResult<Vec<(String, usize, usize)>> {
    let found = py
        .detach(|| crate::pii::detect(kind, text))
        .map_err(PyErr::from)?;
    Ok(found
        .into_iter()
        .map(|m| (m.value, m.start, m.end))
        .collect())
}

/// Files under `start` (relative to `root`) matching `pattern`: `(path, mtime)`.
#[pyfunction]
fn _workspace_glob(
    py: Python<'_>,
    root: std::path::PathBuf,
    start: &str,
    pattern: &str,
) -> PyResult<Vec<(String, f64)>> {
    let found = py
        .detach(|| glob_files(&root, start, pattern))
        .map_err(PyErr::from)?;
    Ok(found.into_iter().map(|f| (f.path, f.modified)).collect())
}

/// Lines under `start` matching the regex `pattern`: `(path, line number, text)`.
#[pyfunction]
#[pyo3(signature = (root, start, pattern, include, max_file_bytes))]
fn _workspace_grep(
    py: Python<'_>,
    root: std::path::PathBuf,
    start: &str,
    pattern: &str,
    include: Option<&str>,
    max_file_bytes: u64,
) -> PyResult<Vec<(String, u64, String)>> {
    let found = py
        .detach(|| grep_lines(&root, start, pattern, include, max_file_bytes))
        .map_err(PyErr::from)?;
    Ok(found
        .into_iter()
        .map(|f| (f.path, f.line, f.text))
        .collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_pii_detect, m)?)?;
    m.add_function(wrap_pyfunction!(_workspace_glob, m)?)?;
    m.add_function(wrap_pyfunction!(_workspace_grep, m)?)?;
    Ok(())
}
