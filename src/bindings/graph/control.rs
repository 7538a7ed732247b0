//! LangGraph's `RunControl` as the engine reads it: the drain flag a run is given
//! (`invoke(..., control=RunControl())`), shared between the caller's thread, the
//! run's nodes and the step loop, which checks it between steps.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::graph::Drain;

/// The config key (in `configurable`) where the Python side puts a run's [`PyDrain`].
pub(super) const DRAIN_KEY: &str = "__ironloop_drain";

/// A run's drain flag, held by `ironloop.runtime.RunControl`.
#[pyclass(name = "_Drain", module = "ironloop._ironloop", frozen)]
pub struct PyDrain(Arc<Drain>);

#[pymethods]
impl PyDrain {
    #[new]
    fn new() -> Self {
        PyDrain(Arc::default())
    }

    /// Asks the run to stop before its next step, for `reason`.
    fn request(&self, reason: String) {
        self.0.request(reason);
    }

    /// The reason given to [`PyDrain::request`], `None` until then.
    #[getter]
    fn reason(&self) -> Option<String> {
        self.0.reason()
    }
}

/// The drain flag in `cfg`'s `configurable`, if the run was given one.
pub(super) fn drain_of(cfg: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Drain>>> {
    Ok(match super::run::configurable_item(cfg, DRAIN_KEY)? {
        Some(v) => v.cast::<PyDrain>().ok().map(|d| d.get().0.clone()),
        None => None,
    })
}
