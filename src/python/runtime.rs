//! Running core futures from Python threads.

use std::future::Future;
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

pub fn runtime() -> &'static Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Runs `fut` to completion for a sync Python caller, with the GIL released, while
/// still answering Ctrl-C: a pending signal cancels `cancel` and the error is raised.
pub fn block_on<F>(py: Python<'_>, fut: F, cancel: CancellationToken) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let mut handle = runtime().spawn(fut);
    loop {
        let done = py.detach(|| {
            runtime().block_on(async {
                tokio::time::timeout(Duration::from_millis(100), &mut handle).await
            })
        });
        match done {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(join)) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "ironloop run task failed: {join}"
                )))
            }
            Err(_elapsed) => {
                if let Err(e) = py.check_signals() {
                    cancel.cancel();
                    handle.abort();
                    return Err(e);
                }
            }
        }
    }
}
