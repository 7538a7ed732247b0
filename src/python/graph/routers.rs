//! Conditional edges and reducers written in Python.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::super::env::PyRunEnv;
use super::super::exiting::attach;
use super::nodes::node_error;
use super::task::call_in_task;
use super::values::{host, send_class, val_to_py, Shared};
use crate::graph::{Goto, GraphError, Reducer, Router, StateView, TaskContext, Val};

// ---------------------------------------------------------------------------------
// Routers and reducers

pub(super) struct PyRouter {
    /// The branch's name (its function's), for error messages.
    pub(super) name: String,
    pub(super) path: Py<PyAny>,
    pub(super) path_map: Option<Py<PyDict>>,
    /// Makes the function's input from the state dict (a dataclass / pydantic schema).
    pub(super) factory: Option<Py<PyAny>>,
    pub(super) shared: Arc<Shared>,
}

pub(super) fn map_goto(
    py: Python<'_>,
    map: &Option<Py<PyDict>>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Goto> {
    if let Some(m) = map {
        let m = m.bind(py);
        let target = m.get_item(key)?.ok_or_else(|| {
            PyValueError::new_err(format!(
                "the routing function returned {}, which is not in its path_map (keys: {})",
                key.repr().map(|r| r.to_string()).unwrap_or_default(),
                m.keys().repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        let t: String = target.extract()?;
        return Ok(Goto::to(t));
    }
    let t: String = key.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "a routing function must return a node name, END, Send(...) or a list of them; got {}",
            key.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    Ok(Goto::to(t))
}

impl Router for PyRouter {
    fn name(&self) -> &str {
        &self.name
    }

    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        attach(|py| -> PyResult<Vec<Goto>> {
            let input = self.shared.node_input(py, view, &self.factory)?;
            let r = match ctx.host.clone().and_then(|h| h.downcast::<PyRunEnv>().ok()) {
                Some(env) => call_in_task(
                    py,
                    &env,
                    ctx,
                    self.path.bind(py),
                    PyTuple::new(py, [input])?,
                    None,
                )?,
                None => self.path.bind(py).call1((input,))?,
            };
            // A name (a `str`) is the common answer: asking it for `__await__` would
            // build and drop an `AttributeError` at every step.
            if !r.is_instance_of::<PyString>() && r.hasattr("__await__")? {
                return Err(PyTypeError::new_err(
                    "async routing functions are not supported: make the path function sync",
                ));
            }
            let mut out = Vec::new();
            let items: Vec<Bound<'_, PyAny>> =
                if r.cast::<PyList>().is_ok() || r.cast::<PyTuple>().is_ok() {
                    r.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![r]
                };
            for i in items {
                if i.is_instance(send_class(py)?)? {
                    out.push(Goto::Send(
                        i.getattr("node")?.extract()?,
                        host(i.getattr("arg")?),
                    ));
                } else {
                    out.push(map_goto(py, &self.path_map, &i)?);
                }
            }
            Ok(out)
        })
        .map_err(|e| attach(|py| route_error(py, ctx, e)))
    }
}

pub(super) fn route_error(py: Python<'_>, ctx: &TaskContext, e: PyErr) -> GraphError {
    let message = format!("routing after {:?} failed: {}", ctx.node, e.value(py));
    node_error(py, ctx, message, e)
}

/// A reducer written in Python; `initial` makes the channel's starting value (the
/// field's type, e.g. `list`), called once per run.
pub(super) struct PyReducer {
    pub(super) func: Py<PyAny>,
    pub(super) initial: Option<Py<PyAny>>,
}

impl Reducer for PyReducer {
    fn initial(&self) -> Option<Val> {
        let f = self.initial.as_ref()?;
        // The schema reader checked that it can be called; should it fail after all,
        // the channel starts empty, as LangGraph's does when its type cannot be made.
        attach(|py| f.bind(py).call0().ok().map(host))
    }

    fn reduce(&self, channel: &str, current: Option<Val>, update: Val) -> Result<Val, GraphError> {
        attach(|py| -> PyResult<Val> {
            let cur = match &current {
                Some(c) => val_to_py(py, c)?,
                None => return Ok(update.clone()),
            };
            let upd = val_to_py(py, &update)?;
            Ok(host(self.func.bind(py).call1((cur, upd))?))
        })
        .map_err(|e| {
            GraphError::InvalidUpdate(format!("the reducer of channel {channel:?} failed: {e}"))
        })
    }
}
