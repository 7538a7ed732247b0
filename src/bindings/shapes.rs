//! The cache key of an agent shape (`ironloop/_shapes.py`): agents made per request
//! share one compiled graph per shape, found by this key on every `create_agent` /
//! `create_react_agent` call.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// `(tag, flags, ids of objects)`, or `None` (build a graph of its own) when one of
/// `objects` is a `dict` or a `list`, whose contents could change under an equal id.
/// The objects are compared by identity: the cache keeps them alive while their entry
/// is in it, so an id is not reused meanwhile. In Rust because in Python the key cost
/// an agent per request (W11) a sixth of its making (`id()` is audited, `map` and a
/// tuple of unknown length on top).
#[pyfunction]
pub fn _shape_key<'py>(
    tag: Bound<'py, PyAny>,
    flags: Bound<'py, PyAny>,
    objects: &Bound<'py, PyList>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let mut ids = Vec::with_capacity(objects.len());
    for obj in objects.iter() {
        if obj.is_exact_instance_of::<PyDict>() || obj.is_exact_instance_of::<PyList>() {
            return Ok(None);
        }
        ids.push(obj.as_ptr() as usize);
    }
    let py = objects.py();
    let ids = PyTuple::new(py, ids)?.into_any();
    Ok(Some(PyTuple::new(py, [tag, flags, ids])?))
}
