//! Runs an async caller's run on the thread of the asyncio loop that awaits it
//! (`ainvoke`, `astream`).
//!
//! On the runtime, every step of a run of coroutine nodes crossed threads three
//! times: the runtime's worker asked the loop to start the node's task
//! (`call_soon_threadsafe`, a write to the loop's wake-up pipe), the loop woke the
//! worker with the node's result (a futex wake), and the worker handed the step's
//! stream item back to the loop (`call_soon_threadsafe` again), each side taking the
//! GIL in turn. Polled by a callback on the loop's own thread, the run starts its
//! coroutines and hands over its items with `call_soon`: no thread wakes for them.
//!
//! A wake from another thread (the runtime's worker, the SQLite saver's) goes through
//! the loop's [`LoopWaker`] where the loop has one: no GIL taken for it.
//!
//! Each poll releases the GIL (as `runtime::drive_inline`'s do): a sync node on the
//! pool, or a thread that holds a lock the run waits for and needs the GIL, gets it
//! meanwhile. Sync nodes still run on the pool, never on the loop's thread: a node
//! that blocks must not stop the loop's other coroutines.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(unix)]
use std::sync::Weak;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::thread::ThreadId;

use futures::FutureExt;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use super::exiting::{attach, call_soon_from, hand_over};
#[cfg(unix)]
use super::loop_waker::LoopWaker;
use super::runtime::{runtime, was_cancelled};

/// A run's future, as the loop's callbacks poll it.
type RunFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A future polled on one asyncio loop's thread, woken from any thread.
pub struct LoopRun {
    /// `None` once it ended or was stopped.
    fut: Mutex<Option<RunFuture>>,
    /// A poll is queued on the loop: later wakes queue none (one poll serves them all).
    scheduled: AtomicBool,
    event_loop: Py<PyAny>,
    /// The loop's thread (where the run was started): a wake from there queues the
    /// poll with `call_soon`, not through the loop's wake-up pipe.
    thread: ThreadId,
    /// The loop's waker, for wakes from other threads (weak: the loop's reader owns
    /// it, and a closed loop drops it; a wake then finds the loop closed as before).
    #[cfg(unix)]
    waker: Option<Weak<LoopWaker>>,
}

impl LoopRun {
    /// Starts `fut` on `event_loop`, which must be running on this thread, with its
    /// first poll made here and now (not queued behind the loop's other callbacks: a
    /// served stream's run waited there for the response's own set-up).
    pub fn start<F>(event_loop: &Bound<'_, PyAny>, fut: F) -> PyResult<Arc<Self>>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let run = Arc::new(LoopRun {
            fut: Mutex::new(Some(Box::pin(fut))),
            scheduled: AtomicBool::new(true),
            event_loop: event_loop.clone().unbind(),
            thread: std::thread::current().id(),
            #[cfg(unix)]
            waker: LoopWaker::of(event_loop).map(|w| Arc::downgrade(&w)),
        });
        // The run's first waits (its checkpoint read, a model request) start before
        // the caller's next callbacks run.
        run.poll(event_loop.py());
        Ok(run)
    }

    /// Queues a poll on the loop, unless one is queued already.
    fn schedule(self: &Arc<Self>) {
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let here = std::thread::current().id() == self.thread;
        #[cfg(unix)]
        if !here {
            if let Some(waker) = self.waker.as_ref().and_then(Weak::upgrade) {
                waker.wake(self.clone());
                return;
            }
        }
        let queued = hand_over(|py| {
            let poll = Bound::new(py, Poll(self.clone()))?;
            call_soon_from(self.event_loop.bind(py), poll.as_any(), here)
        });
        if !matches!(queued, Some(Ok(()))) {
            // A closed loop polls nothing more; the run goes with its last reference.
            self.scheduled.store(false, Ordering::Release);
        }
    }

    /// Polls the run once (a [`Poll`] callback, or the loop's [`LoopWaker`] pass).
    pub fn poll(self: &Arc<Self>, py: Python<'_>) {
        // Cleared first: a wake during the poll queues the next one.
        self.scheduled.store(false, Ordering::Release);
        let mut slot = self.fut.lock().unwrap_or_else(|p| p.into_inner());
        let Some(fut) = slot.as_mut() else {
            return;
        };
        let waker = Waker::from(self.clone());
        let ended = py.detach(|| {
            let _enter = runtime().enter();
            let mut cx = Context::from_waker(&waker);
            // A panic ends the run (its owner's future reports it, see
            // `future_into_py`); it must not leave a broken future to poll again.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                fut.as_mut().poll(&mut cx).is_ready()
            }))
            .unwrap_or(true)
        });
        if ended {
            let done = slot.take();
            drop(slot);
            py.detach(|| drop(done));
        }
    }

    /// Drops the future (what cancelling the task that awaits it does), with the GIL
    /// released as a poll runs it. Called on the loop's thread, between two polls
    /// (both are the loop's callbacks).
    pub fn stop(&self, py: Python<'_>) {
        // Locked only by a poll, which never runs while another callback does.
        let fut = match self.fut.try_lock() {
            Ok(mut slot) => slot.take(),
            Err(_) => return,
        };
        py.detach(|| drop(fut));
    }
}

impl Wake for LoopRun {
    fn wake(self: Arc<Self>) {
        self.schedule();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}

/// The loop's callback that polls a [`LoopRun`] once.
#[pyclass]
struct Poll(Arc<LoopRun>);

#[pymethods]
impl Poll {
    fn __call__(&self, py: Python<'_>) {
        self.0.poll(py);
    }
}

/// Runs `fut` on `event_loop` (running on this thread; see the module docs) and
/// returns an asyncio future of that loop that gets its output. Cancelling the asyncio
/// future drops `fut` at once, on the loop's thread, before the canceller resumes.
/// What `awaitable::future_into_py` does for calls that run on the runtime.
pub fn future_into_py<'py, F, T>(
    event_loop: &Bound<'py, PyAny>,
    fut: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let py = event_loop.py();
    let target = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
    let result_to = target.clone().unbind();
    let run = async move {
        let out = std::panic::AssertUnwindSafe(fut)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "ironloop: the operation's task panicked (a bug: please report it)",
                ))
            });
        // The last poll runs on the loop's thread: the result is set right here.
        attach(|py| settle(result_to.bind(py), out.and_then(|v| v.into_py_any(py))));
    };
    let run = LoopRun::start(event_loop, run)?;
    target.call_method1(
        pyo3::intern!(py, "add_done_callback"),
        (StopWhenCancelled(run),),
    )?;
    Ok(target)
}

/// Sets an asyncio future's result or exception, unless it is done (cancelled).
pub(crate) fn settle(fut: &Bound<'_, PyAny>, out: PyResult<Py<PyAny>>) {
    let py = fut.py();
    if future_done(fut) {
        return;
    }
    let set = match out {
        Ok(v) => fut.call_method1(pyo3::intern!(py, "set_result"), (v,)),
        Err(e) => fut.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),)),
    };
    if let Err(e) = set {
        e.print(py);
    }
}

/// Whether an asyncio future is done (a caller cancelled it, or it was settled); one
/// whose `done()` fails counts as done, so nothing is set on it.
pub(crate) fn future_done(fut: &Bound<'_, PyAny>) -> bool {
    fut.call_method0(pyo3::intern!(fut.py(), "done"))
        .and_then(|d| d.is_truthy())
        .unwrap_or(true)
}

/// The asyncio future's done callback: a cancelled future stops its run.
#[pyclass]
struct StopWhenCancelled(Arc<LoopRun>);

#[pymethods]
impl StopWhenCancelled {
    fn __call__(&self, py: Python<'_>, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if was_cancelled(fut)? {
            self.0.stop(py);
        }
        Ok(())
    }
}
