//! The Python objects the glue calls back into, handed over once.
//!
//! Some behaviour stays in Python because it is Python's own (the background asyncio
//! loops, a dataclass or model read as a state update) and some results are Python classes (`Command`,
//! `Interrupt`, `StateSnapshot`). Rather than importing them by string on the hot path,
//! `ironloop/_wiring.py` passes them in at import time, as one typed struct: a renamed
//! helper then fails at `import ironloop`, not in the middle of a run.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// What `ironloop/_wiring.py` hands over (keys of the dict passed to
/// `_install_helpers`, one per field).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct Helpers {
    /// `ironloop._state.as_update(obj, node)`: a non-dict node result as an update dict.
    pub as_update: Py<PyAny>,
    /// `ironloop._node_calls._task_writer`: the `writer` argument of a node that asks for it.
    pub task_writer: Py<PyAny>,
    /// `ironloop.errors.CheckpointTypeWarning`: a checkpointed value whose type the
    /// graph does not allow was loaded as plain data (`serde::decode`).
    pub type_warning: Py<PyAny>,
    /// `ironloop._runtime.task_var`: the running task's scratchpad context variable.
    pub task_var: Py<PyAny>,
    /// `ironloop._runtime.background_loop()`: the loop async tools of a sync caller use.
    pub background_loop: Py<PyAny>,
    /// `ironloop._runtime.Escaped`: every coroutine the glue runs is wrapped
    /// (`aio::Guarded`), so that a `KeyboardInterrupt` or `SystemExit` in it reaches
    /// the caller as this instead of stopping the event loop it runs on.
    pub escaped: Py<PyAny>,
    /// `ironloop._runtime.logger`.
    pub logger: Py<PyAny>,
    /// `ironloop._runtime.stream_langchain_runs(scratch)`: run in a task's context
    /// when its run streams `messages` or `tools`, for LangChain models and tools the
    /// node calls.
    pub stream_langchain_runs: Py<PyAny>,
    /// `ironloop._callbacks.node_call(name, func, metadata)`: a node's function wrapped
    /// to report a LangChain chain run, for a run whose config has `callbacks`.
    pub node_call: Py<PyAny>,
    /// `ironloop._callbacks.router_call(name, func)`: a conditional edge's routing
    /// function wrapped to report its call as a chain run under its node's, for a run
    /// whose config has `callbacks`.
    pub router_call: Py<PyAny>,
    /// `ironloop._callbacks.node_run(context, name, input, metadata)`: the chain run of
    /// a node the engine runs itself (a `ToolNode`), open in `context`, or `None`.
    pub node_run: Py<PyAny>,
    /// `ironloop.types._overwritten(value)`: `(v,)` when `value` is LangGraph's
    /// `Overwrite(v)` (or its `{"__overwrite__": v}` form), else `None`.
    pub overwritten: Py<PyAny>,
    /// `ironloop.errors.GraphInterrupt`: raised by `interrupt()` to pause a node.
    pub graph_interrupt: Py<PyAny>,
    /// `ironloop.errors.GraphDrained`: a graph a node or tool ran stopped at its
    /// `RunControl.request_drain()`; it stops the run around it too.
    pub graph_drained: Py<PyAny>,
    /// `ironloop.errors.ParentCommand`: a subgraph's `Command(graph=Command.PARENT)`.
    pub parent_command: Py<PyAny>,
    /// Classes of `ironloop.types` and `ironloop.messages` the glue builds or tests for.
    pub send: Py<PyAny>,
    pub command: Py<PyAny>,
    /// Makes an `Interrupt` from an interrupt value and its id (`_interrupt.py`: the
    /// value may carry a `response_schema`).
    pub interrupt: Py<PyAny>,
    pub pregel_task: Py<PyAny>,
    pub state_snapshot: Py<PyAny>,
    pub tool_call: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

/// The helpers, once `import ironloop` has installed them.
pub fn helpers(py: Python<'_>) -> PyResult<&'static Helpers> {
    HELPERS.get(py).ok_or_else(|| {
        PyRuntimeError::new_err(
            "ironloop's runtime is not initialised: import the `ironloop` package \
             (`import ironloop`), not `ironloop._ironloop` on its own",
        )
    })
}

/// Called once by `ironloop/_wiring.py`; later calls (a reloaded package) keep the
/// first set, which every object created so far refers to.
#[pyfunction]
pub fn _install_helpers(py: Python<'_>, helpers: &Bound<'_, PyDict>) -> PyResult<()> {
    let h: Helpers = helpers.extract()?;
    let _ = HELPERS.set(py, h);
    Ok(())
}
