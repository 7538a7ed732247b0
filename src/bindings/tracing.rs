//! OpenTelemetry glue: a run's steps and its tool calls (every tool's: Python
//! functions, MCP, OpenAPI and workspace tools alike) reported to the run's
//! Python-side tracer (`ironloop/_tracing.py`), which makes the spans.
//!
//! Tracing costs nothing when off: `_tracing.py` hands over its `ContextVar` only when
//! `opentelemetry-api` is importable, and a run looks its tracer up once, when its
//! environment is captured ([`run_trace`]). A run without one never calls into here
//! again: the step loop sees no observer, the executor no call tracer, and tools call
//! their function directly.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::errors::Class;
use super::exiting::attach;
use crate::graph::{GraphError, StepObserver};
use crate::tool::{CallSpan, CallTracer, ToolCall, ToolError, ToolOutput};

/// The `ContextVar` that holds the tracer of the run being started, once tracing is
/// available.
static TRACE_VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Called by `ironloop/_tracing.py` when `opentelemetry-api` is importable.
#[pyfunction]
fn _enable_tracing(py: Python<'_>, var: Py<PyAny>) {
    let _ = TRACE_VAR.set(py, var);
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_enable_tracing, m)?)?;
    Ok(())
}

/// The tracer of the run whose environment is `context` (the caller's copied
/// context), or `None`: tracing unavailable, or no span wanted for this run.
pub fn run_trace(py: Python<'_>, context: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
    let Some(var) = TRACE_VAR.get(py) else {
        return Ok(None);
    };
    let trace = context.call_method1(pyo3::intern!(py, "get"), (var.bind(py),))?;
    Ok((!trace.is_none()).then(|| trace.unbind()))
}

/// The tracer of the run the calling Python code runs in (a tool invoked directly
/// inside a node or a tool), or `None`: one `ContextVar.get` when tracing is available,
/// nothing when it is not.
pub fn current_trace(py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
    let Some(var) = TRACE_VAR.get(py) else {
        return Ok(None);
    };
    let trace = var.bind(py).call_method0(pyo3::intern!(py, "get"))?;
    Ok((!trace.is_none()).then(|| trace.unbind()))
}

/// A step's span, opened and closed in the run's own `contextvars` context: the
/// tracer makes the step span current there, so every task of the step (whose
/// context is copied from the run's) starts its spans under it.
pub struct PyStepTracer {
    pub trace: Py<PyAny>,
    pub context: Py<PyAny>,
}

impl PyStepTracer {
    /// `context.run(trace.<method>, step, extra)`, with the GIL held.
    fn call<'py, A>(&self, py: Python<'py>, method: &str, step: i64, extra: A) -> PyResult<()>
    where
        A: IntoPyObject<'py>,
    {
        let f = self.trace.bind(py).getattr(method)?;
        self.context
            .bind(py)
            .call_method1(pyo3::intern!(py, "run"), (f, step, extra))?;
        Ok(())
    }
}

/// A tracer that fails must not fail the run it watches: its error is logged.
fn report(method: &str, r: PyResult<()>) {
    if let Err(e) = r {
        log::warn!("the tracer's {method} failed: {e}");
    }
}

impl StepObserver for PyStepTracer {
    fn step_started(&self, step: i64, nodes: &[&str]) {
        attach(|py| {
            let r = self.call(py, "step_start", step, nodes.to_vec());
            report("step_start", r);
        })
    }

    fn step_ended(&self, step: i64, error: Option<&GraphError>) {
        attach(|py| {
            let kind = error.map(|e| error_type(py, e));
            let r = self.call(py, "step_end", step, kind);
            report("step_end", r);
        })
    }
}

/// `error.type` of a failed step: the Python exception's class for a node that
/// raised, else the core error's kind (`Recursion`, `Cancelled`, ...).
fn error_type(py: Python<'_>, e: &GraphError) -> String {
    if let GraphError::Node { host: Some(h), .. } = e {
        if let Some(err) = h.downcast_ref::<PyErr>() {
            if let Ok(name) = err.get_type(py).qualname() {
                return name.to_string();
            }
        }
    }
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("GraphError")
        .to_string()
}

/// Opens and closes the spans of a traced run's tool calls. `context` is the
/// `contextvars` context the calls run in (a task's, where its step's span is
/// current): each span is started in a copy of it, so parallel calls are siblings
/// under the step, whichever threads they start on.
pub struct PyCallTracer {
    pub trace: Py<PyAny>,
    pub context: Py<PyAny>,
}

impl CallTracer for PyCallTracer {
    fn started(&self, call: &ToolCall) -> Option<CallSpan> {
        attach(|py| {
            let r = (|| -> PyResult<Py<PyAny>> {
                let f = self
                    .trace
                    .bind(py)
                    .getattr(pyo3::intern!(py, "tool_start"))?;
                let context = self
                    .context
                    .bind(py)
                    .call_method0(pyo3::intern!(py, "copy"))?;
                let span = context.call_method1(
                    pyo3::intern!(py, "run"),
                    (f, call.name.as_str(), call.id.as_str()),
                )?;
                Ok(span.unbind())
            })();
            match r {
                Ok(span) => Some(Arc::new(span) as CallSpan),
                Err(e) => {
                    report("tool_start", Err(e));
                    None
                }
            }
        })
    }

    fn ended(&self, span: CallSpan, _call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) {
        let Some(span) = span.downcast_ref::<Py<PyAny>>() else {
            return;
        };
        attach(|py| {
            let r = (|| -> PyResult<()> {
                let (kind, description, raised) = match outcome {
                    Ok(_) => (None, None, None),
                    Err(e) => {
                        let raised = e
                            .raised()
                            .and_then(|h| h.downcast_ref::<PyErr>())
                            .map(|err| err.value(py).clone().into_any());
                        (
                            Some(Class::of_tool_error(e).name()),
                            Some(error_description(e)),
                            raised,
                        )
                    }
                };
                self.trace.bind(py).call_method1(
                    pyo3::intern!(py, "tool_end"),
                    (span.bind(py), kind, description, raised),
                )?;
                Ok(())
            })();
            report("tool_end", r);
        })
    }
}

/// The status description of a failed call: what the model is told, but never the
/// call's arguments (an invalid-arguments error quotes them).
fn error_description(e: &ToolError) -> String {
    match e {
        ToolError::InvalidArgs { tool, .. } => format!("invalid arguments for tool `{tool}`"),
        e => {
            let text = e.to_string();
            match text.char_indices().nth(200) {
                Some((i, _)) => text[..i].to_string(),
                None => text,
            }
        }
    }
}
