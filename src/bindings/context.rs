//! `ToolContext` for Python tools: the system half of a call.

use std::sync::Arc;

use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use super::env::PyRunEnv;
use crate::tool::{CallEvent, CallEvents, ChildRun, ToolContext};

/// Declare a tool parameter as `ctx: ToolContext` to receive it; it is hidden from
/// the schema the model sees.
#[pyclass(name = "ToolContext", module = "ironloop", frozen)]
pub struct PyToolContext {
    tool_call_id: String,
    tool_name: String,
    cancel: CancellationToken,
    env: Arc<PyRunEnv>,
    events: Option<CallEvents>,
    label: Option<Arc<str>>,
    child_run: ChildRun,
}

impl PyToolContext {
    pub fn new(ctx: &ToolContext, env: Arc<PyRunEnv>) -> Self {
        PyToolContext {
            tool_call_id: ctx.tool_call_id.clone(),
            tool_name: ctx.tool_name.clone(),
            cancel: ctx.cancel.clone(),
            env,
            events: ctx.events.clone(),
            label: ctx.label.clone(),
            child_run: ctx.child_run.clone(),
        }
    }
}

#[pymethods]
impl PyToolContext {
    /// Marks the class for `@tool`: parameters of this type are injected.
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __ironloop_inject__: &'static str = "context";

    #[getter]
    fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    #[getter]
    fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The tool's human-readable label (`Tool(label=...)`, yoagent's `label`), or
    /// None; the `tools` stream's start event shows it too.
    #[getter]
    fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The id of the run this call started (see `set_child_loop_id`), or None.
    #[getter]
    fn child_loop_id(&self) -> Option<&str> {
        self.child_run.get().map(String::as_str)
    }

    /// Records that this call started the run `run_id` (a sub-agent's; yoagent's
    /// `child_loop_id`): the call's later `update` events, its `end` event and its
    /// tool message's `response_metadata["child_loop_id"]` carry it, so a UI can nest
    /// the sub-agent's stream under this call. Set once: a second, different id is a
    /// `ValueError`.
    fn set_child_loop_id(&self, run_id: &str) -> PyResult<()> {
        if self.child_run.set(run_id.to_owned()).is_err()
            && self.child_run.get().map(String::as_str) != Some(run_id)
        {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "tool call {:?} already started run {:?}; a call records one child run, \
                 so start one sub-agent run per call",
                self.tool_call_id,
                self.child_run.get().map_or("", String::as_str)
            )));
        }
        Ok(())
    }

    /// True once the run is cancelled or the call timed out: a long tool should stop.
    #[getter]
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    #[getter]
    fn state(&self, py: Python<'_>) -> Py<PyAny> {
        super::pytool::opt(py, &self.env.state).unbind()
    }

    #[getter]
    fn store(&self, py: Python<'_>) -> Py<PyAny> {
        super::pytool::opt(py, &self.env.store).unbind()
    }

    /// Reports progress while the tool runs; it reaches the run's progress callback
    /// (and, in a graph, the `custom` stream) at once.
    fn progress(&self, py: Python<'_>, payload: Py<PyAny>) -> PyResult<()> {
        if let Some(cb) = &self.env.on_progress {
            cb.call1(py, (payload,))?;
        }
        Ok(())
    }

    /// Reports a partial result (yoagent's `on_update`): it goes to the run's `tools`
    /// stream as an `update` event of this call and never reaches the model. A no-op
    /// when nobody streams `tools`.
    fn update(&self, partial: Bound<'_, PyAny>) {
        if let Some(ev) = &self.events {
            let payload: Arc<dyn std::any::Any + Send + Sync> =
                Arc::new(super::graph::host(partial));
            ev(CallEvent::Update {
                tool_call_id: &self.tool_call_id,
                tool_name: &self.tool_name,
                payload,
                child_run: self.child_run.get().map(String::as_str),
            });
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolContext(tool_call_id={:?}, tool_name={:?}, cancelled={})",
            self.tool_call_id,
            self.tool_name,
            self.cancel.is_cancelled()
        )
    }
}
