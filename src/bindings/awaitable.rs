//! Rust futures as asyncio futures: what every `async` method of ours returns.
//!
//! pyo3-async-runtimes' `future_into_py` does the same, but hands the result to the
//! loop from a thread that may still be inside `call_soon_threadsafe` (writing to
//! the loop's socket, GIL released) when the awaiting script has already ended and
//! the interpreter finalizes: CPython then ends that thread inside a call pyo3
//! declares unable to unwind, and the process aborts (see `exiting`). Here the
//! result is handed over through [`exiting::hand_over`], which the exit waits for.

use std::future::Future;
use std::sync::Mutex;

use futures::FutureExt;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use tokio::sync::oneshot;

use super::exiting::{attach, call_soon_threadsafe, hand_over};
use super::runtime::{block_on_uncancelled, runtime};

/// Runs `fut` on the runtime and returns an asyncio future of the running loop that
/// gets its output. Cancelling the asyncio future drops `fut` (its caller sees
/// `CancelledError` at once; `fut` is dropped on the runtime a moment later: a run
/// cancels its token synchronously as well, see `runtime::cancel_with`).
pub fn future_into_py<F, T>(py: Python<'_>, fut: F) -> PyResult<Bound<'_, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    let event_loop = pyo3_async_runtimes::tokio::get_current_loop(py)?;
    let py_fut = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
    let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
    py_fut.call_method1(
        pyo3::intern!(py, "add_done_callback"),
        (OnCancel(Mutex::new(Some(cancel_tx))),),
    )?;
    let (lp, target) = (event_loop.unbind(), py_fut.clone().unbind());
    runtime().spawn(async move {
        // A panic fails the awaitable instead of leaving it pending for ever.
        let fut = std::panic::AssertUnwindSafe(fut).catch_unwind();
        let out = tokio::select! {
            out = fut => out.unwrap_or_else(|_| {
                Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "ironloop: the operation's task panicked (a bug: please report it)",
                ))
            }),
            // Cancelled (or the future dropped): `fut` is dropped here, nothing to hand.
            _ = cancel_rx => return,
        };
        hand_over(move |py| {
            let out = out.and_then(|v| v.into_py_any(py));
            let done = Bound::new(py, Complete(Mutex::new(Some((target, out)))))?;
            // A closed loop has nobody waiting.
            let _ = call_soon_threadsafe(lp.bind(py), done.as_any());
            Ok::<_, PyErr>(())
        });
    });
    Ok(py_fut)
}

/// `fut`'s output as the Python object `to_py` makes of it: waited for with the GIL
/// released, or with `asynchronous` an awaitable of the running loop. The one body of
/// the native methods that take `asynchronous=` (a model call, an MCP request).
pub fn wait_or_await<'py, T, E, F, C>(
    py: Python<'py>,
    asynchronous: bool,
    fut: F,
    to_py: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
    PyErr: From<E>,
    C: for<'p> FnOnce(Python<'p>, T) -> PyResult<Bound<'p, PyAny>> + Send + 'static,
{
    if asynchronous {
        return future_into_py(py, async move {
            let v = fut.await?;
            attach(|py| to_py(py, v).map(Bound::unbind))
        });
    }
    let v = block_on_uncancelled(py, fut)??;
    to_py(py, v)
}

/// The asyncio future's done callback: tells the runtime's task it was cancelled.
#[pyclass]
struct OnCancel(Mutex<Option<oneshot::Sender<()>>>);

#[pymethods]
impl OnCancel {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if super::runtime::was_cancelled(fut)? {
            if let Some(tx) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = tx.send(());
            }
        }
        Ok(())
    }
}

/// Sets the asyncio future's result or exception, on the loop's thread (unless it
/// was cancelled meanwhile).
#[pyclass]
struct Complete(Mutex<Option<Outcome>>);

/// The asyncio future and what it gets.
type Outcome = (Py<PyAny>, PyResult<Py<PyAny>>);

#[pymethods]
impl Complete {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let Some((fut, out)) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(());
        };
        let fut = fut.bind(py);
        if fut.call_method0(pyo3::intern!(py, "done"))?.is_truthy()? {
            return Ok(());
        }
        match out {
            Ok(v) => fut.call_method1(pyo3::intern!(py, "set_result"), (v,))?,
            Err(e) => fut.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),))?,
        };
        Ok(())
    }
}
