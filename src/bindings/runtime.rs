//! Running core futures from Python threads.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use super::exiting::{attach, call_soon_threadsafe, hand_over};

pub fn runtime() -> &'static Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Sets how the runtime is built when first used (at import, before any use): the
/// multi-threaded runtime pyo3-async-runtimes would build, whose threads keep one
/// Python thread state each for their whole life (see [`super::thread_state`]).
pub fn configure() {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .enable_all()
        .on_thread_start(super::thread_state::keep)
        .on_thread_stop(super::thread_state::release);
    pyo3_async_runtimes::tokio::init(builder);
}

/// How long a sync caller waits before it looks for a pending signal again: Ctrl-C is
/// answered within about this long (the bound is 200 ms), at the cost of one
/// GIL acquisition per slice while a run waits.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

thread_local! {
    /// Set while this thread drives a run itself (see [`drive_inline`]).
    static DRIVING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `fut` on the runtime for a sync Python caller and waits with the GIL released,
/// still answering Ctrl-C: a pending signal cancels `cancel` and the error is raised.
/// Works from any thread, including one that is inside a run already.
pub fn block_on<F>(py: Python<'_>, fut: F, cancel: CancellationToken) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    // A `Receiver` is not `Sync`; the closure given to `detach` must be `Send`.
    let rx = std::sync::Mutex::new(rx);
    let handle = runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    loop {
        match py.detach(|| {
            rx.lock()
                .unwrap_or_else(|p| p.into_inner())
                .recv_timeout(SIGNAL_SLICE)
        }) {
            Ok(v) => return Ok(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    cancel.cancel();
                    handle.abort();
                    return Err(e);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "ironloop: the run's task ended without a result (it panicked)",
                ))
            }
        }
    }
}

/// [`block_on`] for a call that nothing but Ctrl-C stops (no run's token to cancel):
/// a saver's, a store's or a model stream's own call.
pub fn block_on_uncancelled<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    block_on(py, fut, CancellationToken::new())
}

/// An asyncio future on the running loop, finished already with `value`: what an
/// `async` source returns when its next item is queued already, so that awaiting it
/// needs no task on the runtime and no wake-up of the loop from another thread.
pub fn finished_future<'py>(
    py: Python<'py>,
    value: impl IntoPyObject<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let event_loop = pyo3_async_runtimes::tokio::get_current_loop(py)?;
    let fut = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
    fut.call_method1(pyo3::intern!(py, "set_result"), (value,))?;
    Ok(fut)
}

/// Cancels its token when the asyncio future it is a done callback of was cancelled.
#[pyclass]
struct CancelWhenCancelled(CancellationToken);

#[pymethods]
impl CancelWhenCancelled {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if was_cancelled(fut)? {
            self.0.cancel();
        }
        Ok(())
    }
}

/// Whether the asyncio future `fut` (a done callback's argument) was cancelled.
pub(crate) fn was_cancelled(fut: &Bound<'_, PyAny>) -> PyResult<bool> {
    fut.call_method0(pyo3::intern!(fut.py(), "cancelled"))?
        .is_truthy()
}

/// Cancels `cancel` as soon as the awaitable `fut` (made by `future_into_py`) is
/// cancelled, on the loop's thread before the cancelled caller resumes: the Rust
/// future behind it is dropped only later, on the runtime, and whatever it holds
/// (a thread's turn) must already show it is on its way out when the caller starts
/// its next run.
pub fn cancel_with(fut: &Bound<'_, PyAny>, cancel: CancellationToken) -> PyResult<()> {
    let cb = Bound::new(fut.py(), CancelWhenCancelled(cancel))?;
    fut.call_method1(pyo3::intern!(fut.py(), "add_done_callback"), (cb,))?;
    Ok(())
}

/// A run's future that, once done or dropped, sets an `asyncio.Event` (`stopped`, of
/// the loop `lp`). A cancelled `ainvoke` waits for it before it lets its caller go on:
/// dropping the run first schedules the `cancel()` of its nodes' asyncio tasks on that
/// loop, so they see their `CancelledError` (and may clean up) before the caller's
/// next line, as LangGraph's nodes do.
pub struct Watched<F> {
    fut: Option<Pin<Box<F>>>,
    /// `(event, loop)`.
    stopped: Option<(Py<PyAny>, Py<PyAny>)>,
}

impl<F: Future> Watched<F> {
    pub fn new(fut: F, stopped: Option<(Py<PyAny>, Py<PyAny>)>) -> Self {
        Watched {
            fut: Some(Box::pin(fut)),
            stopped,
        }
    }
}

impl<F: Future> Future for Watched<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.fut.as_mut() {
            Some(f) => f.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}

impl<F> Drop for Watched<F> {
    fn drop(&mut self) {
        // The run first (its tasks' cancellations are handed to the loop), then the
        // event: the loop runs them in that order.
        drop(self.fut.take());
        if let Some((event, lp)) = self.stopped.take() {
            hand_over(move |py| {
                if let Ok(set) = event.bind(py).getattr(pyo3::intern!(py, "set")) {
                    // A closed loop has nobody waiting.
                    let _ = call_soon_threadsafe(lp.bind(py), &set);
                }
            });
        }
    }
}

/// Whether a run started on this thread now may be driven inline.
pub fn can_drive_inline() -> bool {
    !DRIVING.with(|d| d.get())
}

/// Wakes the thread that drives a run inline.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives `fut` on the calling thread (GIL released), so that a task the future runs
/// inline (`Python::attach`) needs no thread hand-over. A run started from inside an
/// inline task must use [`block_on`] instead (see [`can_drive_inline`]).
///
/// The thread sleeps between polls at most [`SIGNAL_SLICE`] and then looks for a
/// pending signal: Python only runs its signal handlers on the main thread when that
/// thread executes Python code, which a thread parked in Rust never does. On Ctrl-C
/// `cancel` is cancelled and the future dropped here, which cancels what it waits on
/// (asyncio tasks, bash process groups, HTTP requests); the error is raised. A
/// `KeyboardInterrupt` a tool running inline raised (see [`note_interrupt`]) counts
/// as that signal.
pub fn drive_inline<F: Future + Send>(
    py: Python<'_>,
    fut: F,
    cancel: &CancellationToken,
) -> PyResult<F::Output>
where
    F::Output: Send,
{
    drive(py, fut, cancel, FirstPoll::Released)
}

/// Waits for `fut` for a sync Python caller: driven on this thread when it may drive
/// one ([`drive_inline`]: a saver's reads and writes then run right here, with no
/// hand-over to the runtime and to the saver's thread and back), else on the runtime
/// ([`block_on`]), as a call from inside an inline task must.
pub fn wait_for<F>(py: Python<'_>, fut: F, cancel: CancellationToken) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if can_drive_inline() {
        drive_inline(py, fut, &cancel)
    } else {
        block_on(py, fut, cancel)
    }
}

/// Where [`drive`] makes a future's first poll.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FirstPoll {
    /// With the GIL released, as every later poll ([`drive_inline`]).
    Released,
    /// Before the GIL is released: the calls a tools step runs inline in that poll
    /// (all of them, for a step of quick sync tools) then share this one hold of the
    /// GIL instead of taking and releasing it once each. Only for futures whose first
    /// poll never waits for another thread that needs the GIL (the executor's: calls
    /// start in that poll; whatever waits is handed over).
    HoldingGil,
}

thread_local! {
    /// A `KeyboardInterrupt` / `SystemExit` raised by a tool run inline on this
    /// thread while it drives a run (see [`note_interrupt`]).
    static ESCAPED: std::cell::RefCell<Option<PyErr>> = const { std::cell::RefCell::new(None) };
}

/// Called by a tool that ran inline and raised `KeyboardInterrupt` / `SystemExit`:
/// Python ran the signal handler inside that tool, so no signal is left pending for
/// [`drive_inline`] to see while the run's other calls keep it waiting. The run is
/// cancelled and the error raised as a pending signal would be.
pub fn note_interrupt(e: PyErr) {
    if DRIVING.with(|d| d.get()) {
        ESCAPED.with(|x| *x.borrow_mut() = Some(e));
    }
}

/// [`drive_inline`], its first poll made where `first` says.
pub fn drive<F: Future + Send>(
    py: Python<'_>,
    fut: F,
    cancel: &CancellationToken,
    first: FirstPoll,
) -> PyResult<F::Output>
where
    F::Output: Send,
{
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DRIVING.with(|d| d.set(false));
            ESCAPED.with(|x| x.borrow_mut().take());
        }
    }
    DRIVING.with(|d| d.set(true));
    let _reset = Reset;
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut fut = std::pin::pin!(fut);
    if first == FirstPoll::HoldingGil {
        let _enter = runtime().enter();
        let mut cx = Context::from_waker(&waker);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Ok(v);
        }
    }
    py.detach(|| {
        // This thread waits for each save anyway: a saver may do its I/O right here.
        let _blocking = crate::checkpoint::caller::BlockingCaller::enter();
        let _enter = runtime().enter();
        let mut cx = Context::from_waker(&waker);
        let mut checked = Instant::now();
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return Ok(v);
            }
            if let Some(e) = ESCAPED.with(|x| x.borrow_mut().take()) {
                cancel.cancel();
                return Err(e);
            }
            std::thread::park_timeout(SIGNAL_SLICE);
            if checked.elapsed() >= SIGNAL_SLICE {
                checked = Instant::now();
                if let Err(e) = attach(|py| py.check_signals()) {
                    cancel.cancel();
                    return Err(e);
                }
            }
        }
    })
}
