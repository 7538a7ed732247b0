//! OpenTelemetry glue: a run's steps and its Python tools' calls reported to the
//! run's Python-side tracer (`ironloop/_tracing.py`), which makes the spans.
//!
//! Tracing costs nothing when off: `_tracing.py` hands over its `ContextVar` only when
//! `opentelemetry-api` is importable, and a run looks its tracer up once, when its
//! environment is captured ([`run_trace`]). A run without one never calls into here
//! again: the step loop sees no observer and tools call their function directly.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::graph::{GraphError, StepObserver};

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
        Python::attach(|py| {
            let r = self.call(py, "step_start", step, nodes.to_vec());
            report("step_start", r);
        })
    }

    fn step_ended(&self, step: i64, error: Option<&GraphError>) {
        Python::attach(|py| {
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
