//! `_RunOptions`: a run's options (LangGraph's run keywords) as one typed object,
//! checked once here against the core's tables (`crate::graph::options`) when
//! `CompiledStateGraph` builds it, then handed to `invoke` / `ainvoke` / `stream`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::graph::options::{self, DEBUG_VIEWS, DURABILITIES, STREAM_MODES};
use crate::graph::{Durability, Graph, RunOptions};

#[pyclass(name = "_RunOptions", module = "ironloop._ironloop", frozen)]
pub struct PyRunOptions {
    /// `None`: the config's (LangGraph's `__pregel_durability`, which a parent run
    /// sets for its subgraphs), else the engine's default.
    pub(super) durability: Option<Durability>,
    pub(super) interrupt_before: Option<Vec<String>>,
    pub(super) interrupt_after: Option<Vec<String>>,
    /// The stream modes asked for, as the core's bit set.
    pub(super) modes: u8,
    /// One mode asked for by name (not a list): items are bare chunks.
    pub(super) single: bool,
    pub(super) subgraphs: bool,
    /// LangGraph's `graph.step_timeout`, in seconds (see `RunOptions::step_timeout`).
    pub(super) step_timeout: Option<std::time::Duration>,
}

#[pymethods]
impl PyRunOptions {
    #[new]
    #[pyo3(signature = (*, durability=None, stream_mode=None, subgraphs=false,
                        interrupt_before=None, interrupt_after=None, step_timeout=None))]
    fn new(
        durability: Option<&str>,
        stream_mode: Option<&Bound<'_, PyAny>>,
        subgraphs: bool,
        interrupt_before: Option<&Bound<'_, PyAny>>,
        interrupt_after: Option<&Bound<'_, PyAny>>,
        step_timeout: Option<f64>,
    ) -> PyResult<Self> {
        let step_timeout = step_timeout
            .map(|s| {
                std::time::Duration::try_from_secs_f64(s)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "step_timeout must be a positive number of seconds (or None: no \
                         limit), got {s}"
                        ))
                    })
            })
            .transpose()?;
        let durability = durability.map(options::durability).transpose()?;
        let (modes, single) = match stream_mode {
            Some(m) => {
                let (names, single) = names(m, "stream_mode")?;
                (options::stream_modes(&names)?, single)
            }
            None => (0, false),
        };
        Ok(PyRunOptions {
            durability,
            interrupt_before: breakpoints(interrupt_before, "interrupt_before")?,
            interrupt_after: breakpoints(interrupt_after, "interrupt_after")?,
            modes,
            single,
            subgraphs,
            step_timeout,
        })
    }
}

impl PyRunOptions {
    /// Sets `opts` from these options; the breakpoints' node names are checked
    /// against `graph`.
    pub(super) fn apply(&self, graph: &Graph, opts: &mut RunOptions) -> PyResult<()> {
        if let Some(d) = self.durability {
            opts.durability = d;
        }
        opts.step_timeout = self.step_timeout;
        if let Some(names) = &self.interrupt_before {
            opts.interrupt_before = Some(graph.breakpoints(names.clone())?);
        }
        if let Some(names) = &self.interrupt_after {
            opts.interrupt_after = Some(graph.breakpoints(names.clone())?);
        }
        Ok(())
    }
}

/// A name or a list of names, and whether it was one name.
fn names(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(Vec<String>, bool)> {
    if let Ok(s) = obj.extract::<String>() {
        return Ok((vec![s], true));
    }
    let names = obj.extract::<Vec<String>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a name or a list of names, got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    Ok((names, false))
}

/// A run's breakpoints: `None` when not given or empty (LangGraph then uses the
/// compiled graph's).
fn breakpoints(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<String>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let (names, _) = names(obj, what)?;
    Ok((!names.is_empty()).then_some(names))
}

/// LangGraph's name of durability `d`, as a config carries it.
pub(super) fn durability_name(d: Durability) -> &'static str {
    DURABILITIES
        .iter()
        .find(|(_, v)| *v == d)
        .map(|(n, _)| *n)
        .unwrap_or_default()
}

/// The core's tables, for Python: `_DURABILITIES`, `_STREAM_MODES` (the engine's) and
/// `_DEBUG_VIEWS` (LangGraph's modes taken out of `debug` events).
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyRunOptions>()?;
    let durabilities = DURABILITIES.iter().map(|(n, _)| *n);
    m.add("_DURABILITIES", PyTuple::new(py, durabilities)?)?;
    m.add(
        "_STREAM_MODES",
        PyTuple::new(py, STREAM_MODES.iter().map(|(n, _)| *n))?,
    )?;
    m.add("_DEBUG_VIEWS", PyTuple::new(py, DEBUG_VIEWS)?)?;
    Ok(())
}
