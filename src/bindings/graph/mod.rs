//! The engine of `ironloop.StateGraph` as Python sees it: Python nodes, routers and
//! reducers on the core step loop, the state as Python sees it, runs and streams.
//!
//! One file a concept: `values` (Python values in channels, the state dict and its
//! message cache), `task` (the per-task scratchpad), `describe` (the typed graph description
//! `StateGraph.compile` sends), `nodes`, `routers` (and
//! reducers), `savers` (and `saver_records`, their records for the LangGraph saver
//! API), `options` (a run's typed options), `run` (one run's set-up and results),
//! `errors`, `stream` (and `astream`), and `compiled` (the `_GraphCore` class).

mod astream;
mod compiled;
mod control;
mod describe;
mod nodes;
mod options;
mod returned;
mod routers;
mod run;
mod saver_records;
mod savers;
mod stream;
mod task;
mod values;
mod wrapped_tools;

use pyo3::prelude::*;

use astream::AsyncGraphStream;
use run::GraphCore;
use savers::{PyMemorySaver, PyPostgresSaver, PySqliteSaver};
use stream::GraphStream;
pub(crate) use task::current_tool_events;
use task::TaskScratch;
pub(crate) use values::host;

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
    m.add_class::<control::PyDrain>()?;
    m.add_class::<PyMemorySaver>()?;
    m.add_class::<PySqliteSaver>()?;
    m.add_class::<PyPostgresSaver>()?;
    m.add_function(wrap_pyfunction!(_child_ns, m)?)?;
    saver_records::register(m)?;
    options::register(m)?;
    // The names the core reserves, for `ironloop._constants` to take rather than spell.
    m.add("_START", crate::graph::START)?;
    m.add("_END", crate::graph::END)?;
    m.add("_INTERRUPT", crate::graph::Reserved::Interrupt.as_str())?;
    m.add("_ROOT", crate::graph::ROOT)?;
    Ok(())
}
