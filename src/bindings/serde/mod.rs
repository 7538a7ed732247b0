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

use crate::checkpoint::Piece;

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
    joined_bytes(py, &text)
}

/// `pieces` joined into one `bytes`: each copied once, into the object (not joined in
/// Rust first and copied again, nor zeroed first as `PyBytes::new_with` does: for a
/// large value each pass over its text is a few percent of encoding it).
fn joined_bytes<'py>(py: Python<'py>, pieces: &[Piece]) -> PyResult<Bound<'py, PyBytes>> {
    let len = Piece::total_len(pieces);
    // SAFETY: a `bytes` of `len` uninitialised bytes, filled below before any Python
    // code sees it (an error before that drops it unseen).
    unsafe {
        let obj = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as isize);
        let bytes = Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked::<PyBytes>();
        let mut dst = pyo3::ffi::PyBytes_AsString(obj).cast::<u8>();
        for p in pieces {
            std::ptr::copy_nonoverlapping(p.as_ptr(), dst, p.len());
            dst = dst.add(p.len());
        }
        Ok(bytes)
    }
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
