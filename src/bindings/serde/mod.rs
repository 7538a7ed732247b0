//! Python values to and from checkpoint JSON, in Rust: `encode` (one pass over the
//! objects) and `decode` (types restored only from the graph's [`Allowlist`]). The
//! JSON forms are the core's (`crate::graph::tagged`); plain data is plain JSON, so
//! checkpoints written before these forms load unchanged.

mod decode;
mod encode;
mod rope;
mod text;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde_json::Value;

pub use decode::{decode, Allowlist};
pub use encode::{encode, encode_pieces, encode_text};

/// `obj` as the checkpoint JSON a saver would store for it, as UTF-8 bytes (for tests
/// and benchmarks; a `TypeError` says why a value cannot be stored).
#[pyfunction]
pub fn _checkpoint_encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let text = encode_text(obj).map_err(PyTypeError::new_err)?;
    Ok(PyBytes::new(py, text.as_bytes()))
}

/// `obj`'s checkpoint JSON as a snapshot keeps it, in pieces (for tests: a large
/// container met again is the same piece again, and the pieces join into
/// `_checkpoint_encode`'s text).
#[pyfunction]
pub fn _checkpoint_encode_pieces<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let pieces = encode_pieces(obj).map_err(PyTypeError::new_err)?;
    Ok(pieces
        .iter()
        .map(|p| PyBytes::new(py, p.as_bytes()))
        .collect())
}

/// The value of checkpoint JSON (bytes or str), restoring the types of `allowlist`
/// (`{"module:qualname": class}`), as a graph loading a checkpoint does.
#[pyfunction]
#[pyo3(signature = (text, allowlist=None))]
pub fn _checkpoint_decode<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    allowlist: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let parsed = match text.cast::<PyBytes>() {
        Ok(b) => serde_json::from_slice::<Value>(b.as_bytes()),
        Err(_) => serde_json::from_str::<Value>(text.cast::<PyString>()?.to_str()?),
    };
    let v = parsed.map_err(|e| PyValueError::new_err(format!("not JSON: {e}")))?;
    decode(py, &v, &Allowlist::from_py(allowlist)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_checkpoint_encode, m)?)?;
    m.add_function(wrap_pyfunction!(_checkpoint_encode_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(_checkpoint_decode, m)?)?;
    Ok(())
}
