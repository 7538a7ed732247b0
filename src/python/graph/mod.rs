//! The engine of `ironloop.StateGraph` as Python sees it: Python nodes, routers and
//! reducers on the core step loop, the state as Python sees it, runs and streams.
//!
//! One file a concept: `values` (Python values in channels, the state dict and its
//! message cache), `task` (the per-task scratchpad), `describe` (the typed graph description
//! `StateGraph.compile` sends), `nodes`, `routers` (and
//! reducers), `savers`, `run` (one run's set-up and results), `errors`, `stream`, and
//! `compiled` (the `_GraphCore` class).

mod compiled;
mod describe;
mod nodes;
mod returned;
mod routers;
mod run;
mod savers;
mod stream;
mod task;
mod values;

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::convert::value_from_py;
use super::messages::message_to_py;
use crate::message::Message;
use run::GraphCore;
use savers::{PyMemorySaver, PyPostgresSaver, PySqliteSaver};
use stream::{AsyncGraphStream, GraphStream};
pub(crate) use task::current_tool_events;
use task::TaskScratch;
pub(crate) use values::host;

/// Rebuilds a message from its `model_dump()` dict.
#[pyfunction]
pub fn _message_from_dict<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let v = value_from_py(d, "a message dict")?;
    let m: Message = serde_json::from_value(v)
        .map_err(|e| PyValueError::new_err(format!("not a message: {e}")))?;
    message_to_py(py, Arc::new(m))
}

/// A message's dict as a checkpoint keeps it (the inverse of `_message_from_dict`),
/// from any message object (ironloop's or langchain-core's). Reads, never changes, the
/// object: a langchain-core message without an id is written with a fresh one.
#[pyfunction]
pub fn _message_to_dict<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let m = match obj.cast::<super::messages::PyMessage>() {
        Ok(own) => own.borrow().inner.clone(),
        Err(_) => Arc::new(super::coerce::from_attributes(obj)?),
    };
    let v = serde_json::to_value(&*m).map_err(|e| PyValueError::new_err(e.to_string()))?;
    super::convert::value_to_py(py, &v)
}

/// The `checkpoint_ns` of a subgraph run by `node`'s task `task_id` in a run at
/// `parent_ns` (see [`crate::checkpoint::child_ns`]).
#[pyfunction]
pub fn _child_ns(parent_ns: &str, node: &str, task_id: &str) -> String {
    crate::checkpoint::child_ns(parent_ns, node, task_id)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GraphCore>()?;
    m.add_class::<GraphStream>()?;
    m.add_class::<AsyncGraphStream>()?;
    m.add_class::<TaskScratch>()?;
    m.add_class::<PyMemorySaver>()?;
    m.add_class::<PySqliteSaver>()?;
    m.add_class::<PyPostgresSaver>()?;
    m.add_function(wrap_pyfunction!(_message_from_dict, m)?)?;
    m.add_function(wrap_pyfunction!(_message_to_dict, m)?)?;
    m.add_function(wrap_pyfunction!(_child_ns, m)?)?;
    Ok(())
}
