//! The PyO3 glue: conversions, wrappers and the `ironloop._ironloop` module. No
//! runtime logic lives here; it calls into the core.

mod ai_message;
mod aio;
mod args;
mod awaitable;
mod backoff;
mod chunks;
mod coerce;
mod context;
mod convert;
mod env;
mod errors;
mod exiting;
mod graph;
mod helpers;
mod invalid_args;
mod lc_construct;
mod lc_match;
mod lc_messages;
mod logs;
#[cfg(unix)]
mod loop_waker;
mod mcp;
mod messages;
mod model_stream;
mod models;
mod native_tool;
mod on_loop;
mod openapi;
mod pii;
mod pool;
mod prebuilt;
mod pytool;
mod runtime;
mod serde;
mod shapes;
mod store;
mod task_runtime;
mod thread_state;
mod tool_outputs;
mod toolnode;
mod tracing;

use pyo3::prelude::*;

/// The extension's Rust allocations (never CPython's own) go to mimalloc: a step or an
/// async tool call makes ~20 short-lived allocations on threads that hand them to one
/// another, and glibc's slow paths for those (`malloc_consolidate`, `unlink_chunk`)
/// were ~12 % of W1's samples (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
#[pyo3(name = "_ironloop")]
fn ironloop_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::configure();
    exiting::register(m)?;
    logs::register(m)?;
    messages::register(m)?;
    m.add_class::<context::PyToolContext>()?;
    m.add_class::<toolnode::ToolNodeCore>()?;
    graph::register(m)?;
    prebuilt::register(m)?;
    models::register(m)?;
    native_tool::register(m)?;
    openapi::register(m)?;
    pii::register(m)?;
    mcp::register(m)?;
    tracing::register(m)?;
    serde::register(m)?;
    store::register(m)?;
    m.add_function(wrap_pyfunction!(convert::_json_schema_errors, m)?)?;
    m.add_function(wrap_pyfunction!(args::_timeout_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(shapes::_shape_key, m)?)?;
    m.add_class::<backoff::PyBackoff>()?;
    m.add_function(wrap_pyfunction!(helpers::_install_helpers, m)?)?;
    m.add_function(wrap_pyfunction!(task_runtime::_install_task_runtime, m)?)?;
    m.add_function(wrap_pyfunction!(task_runtime::_task_runtime, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
