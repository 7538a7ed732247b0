//! A failed run as the Python exception the caller sees.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::super::errors::error;
use crate::graph::GraphError;

/// The Python exception for a failed run: the node's own exception when it raised,
/// with a note naming the task (as LangGraph's `During task with name …`).
pub(super) fn graph_error(py: Python<'_>, e: GraphError) -> PyErr {
    match e {
        GraphError::Node {
            node,
            task_id,
            message,
            host,
        } => match host.as_ref().and_then(|s| s.downcast_ref::<PyErr>()) {
            Some(err) => {
                let err = err.clone_ref(py);
                add_task_note(py, &err, &node, &task_id);
                err
            }
            None => error(
                py,
                "IronloopError",
                GraphError::Node {
                    node,
                    task_id,
                    message,
                    host: None,
                }
                .to_string(),
            ),
        },
        GraphError::InvalidUpdate(m) => error(py, "InvalidUpdateError", m),
        GraphError::Recursion(_) => error(py, "GraphRecursionError", e.to_string()),
        GraphError::Serialize { .. } => error(py, "CheckpointSerializationError", e.to_string()),
        GraphError::Checkpoint(e) => PyErr::from(&e),
        GraphError::Build(m) => PyValueError::new_err(m),
        GraphError::Config(m) => PyValueError::new_err(m),
        GraphError::Cancelled => error(py, "ToolCancelledError", "the run was cancelled"),
    }
}

/// Adds `During task with name '…' and id '…'` to the exception's notes, once (a
/// subgraph's failure passes through every enclosing graph).
pub(super) fn add_task_note(py: Python<'_>, err: &PyErr, node: &str, task_id: &str) {
    let note = format!("During task with name '{node}' and id '{task_id}'");
    let value = err.value(py);
    let r = (|| -> PyResult<()> {
        let notes = match value.getattr("__notes__") {
            Ok(n) if n.is_instance_of::<PyList>() => n.cast_into::<PyList>()?,
            _ => {
                let l = PyList::empty(py);
                value.setattr("__notes__", &l)?;
                l
            }
        };
        if notes
            .iter()
            .any(|n| n.extract::<String>().is_ok_and(|s| s == note))
        {
            return Ok(());
        }
        notes.append(note)
    })();
    let _ = r;
}
