//! Running Python coroutines on an asyncio loop from Rust futures.
//!
//! Calls are queued on the run's environment and started by one callback on the
//! loop's thread (one wake-up of the loop starts every call queued by then). Each
//! call's result is converted on the loop thread, where the GIL is already held, and
//! handed back to its Rust future by one callback per loop iteration for every call
//! that finished in it (so that the runtime's threads are woken once for a batch of
//! results, not once each).
//! Dropping the Rust future cancels the asyncio task: dropping a Rust future does not
//! cancel an asyncio task by itself.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::asyncio::CancelledError;
use pyo3::exceptions::{PyKeyboardInterrupt, PyStopIteration, PySystemExit};
use pyo3::prelude::*;
#[cfg(not(feature = "abi3"))]
use pyo3::sync::PyOnceLock;
#[cfg(not(feature = "abi3"))]
use pyo3::types::PyString;
use pyo3::types::PyTuple;
use pyo3::{ffi, intern, PyTraverseError, PyVisit};
use tokio::sync::oneshot;

use super::env::PyRunEnv;
use super::exiting::{call_soon_threadsafe, hand_over};
use super::helpers::helpers;

/// Makes the coroutine to run (called on the loop thread), and optionally the
/// `contextvars` context its task must run in (default: a copy of the run's).
pub type MakeCoro = Box<dyn FnOnce(Python<'_>) -> PyResult<(Py<PyAny>, Option<Py<PyAny>>)> + Send>;

/// How a coroutine ended.
pub enum AsyncResult<'py> {
    Done(PyResult<Bound<'py, PyAny>>),
    Cancelled,
}

/// Converts a call's outcome (on the loop thread, GIL held) into what hands it to
/// its Rust future.
type OnDone = Box<dyn for<'py> FnOnce(Python<'py>, AsyncResult<'py>) -> Deliver + Send>;

/// Hands a converted result to the Rust future waiting for it (no GIL needed).
type Deliver = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Results converted on this loop thread and not yet handed over (see `defer`).
    static DELIVERIES: std::cell::RefCell<Vec<Deliver>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Queues a result for the `DeliverAll` the first queued result schedules on the
/// task's loop: every call that finishes in one loop iteration wakes the runtime
/// once, not once each (a wake-up of a parked worker is a system call and a thread
/// switch). If the loop cannot take the callback the result is handed over at once.
fn defer(py: Python<'_>, task: &Bound<'_, PyAny>, d: Deliver) {
    let first = DELIVERIES.with(|q| {
        let mut q = q.borrow_mut();
        q.push(d);
        q.len() == 1
    });
    if !first {
        return;
    }
    let scheduled = (|| -> PyResult<()> {
        let event_loop = task.call_method0(intern!(py, "get_loop"))?;
        event_loop.call_method1(intern!(py, "call_soon"), (Bound::new(py, DeliverAll)?,))?;
        Ok(())
    })();
    if scheduled.is_err() {
        deliver_all();
    }
}

fn deliver_all() {
    for d in DELIVERIES.with(|q| std::mem::take(&mut *q.borrow_mut())) {
        d();
    }
}

/// Hands over the results queued on this loop thread (see `defer`).
#[pyclass]
struct DeliverAll;

#[pymethods]
impl DeliverAll {
    fn __call__(&self) {
        deliver_all();
    }
}

/// A call waiting for the loop thread to start it.
struct PendingAsync {
    make: MakeCoro,
    done: OnDone,
    slot: Arc<TaskSlot>,
}

/// Where a call's asyncio task is, so that it can be cancelled from any thread.
#[derive(Default)]
pub struct TaskSlot(Mutex<SlotState>);

#[derive(Default)]
enum SlotState {
    #[default]
    Waiting,
    Cancelled,
    Running(Py<PyAny>),
    Done,
}

/// Called by asyncio when a task is done.
#[pyclass]
struct DoneCallback(Mutex<Option<OnDone>>);

#[pymethods]
impl DoneCallback {
    fn __call__(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        super::env::mark_loop_thread();
        let Some(f) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(());
        };
        // One call for both: `result()` of a cancelled task raises `CancelledError`
        // (and a coroutine that lets `CancelledError` out leaves its task cancelled).
        let r = match task.call_method0(intern!(py, "result")) {
            Err(e) if e.is_instance_of::<CancelledError>(py) && !raised_by_coroutine(task) => {
                AsyncResult::Cancelled
            }
            r => AsyncResult::Done(r.map_err(|e| unwrap(py, e))),
        };
        let deliver = f(py, r);
        defer(py, task, deliver);
        Ok(())
    }
}

/// Whether a task that ended in `CancelledError` raised it itself rather than being
/// cancelled: nobody asked it to stop (`Task.cancelling()` is 0, Python >= 3.11). As
/// LangGraph, a node that raises `CancelledError` fails the run; a cancelled one
/// (a sibling failed, the caller cancelled) is torn down quietly.
fn raised_by_coroutine(task: &Bound<'_, PyAny>) -> bool {
    task.call_method0(intern!(task.py(), "cancelling"))
        .and_then(|n| n.extract::<i64>())
        .is_ok_and(|n| n == 0)
}

/// Runs a coroutine the way asyncio's task steps it (the coroutine protocol: `send`,
/// `throw`, `close`, and `__next__`, which CPython's `PyIter_Send` calls for a task's
/// plain step), turning a `KeyboardInterrupt` or `SystemExit` the coroutine lets out
/// into `ironloop._runtime.Escaped`. Left as it is, asyncio lets either out of the
/// event loop: the background loop's thread would die and every later async call of
/// the process hang (`tests/python/test_base_exceptions.py`). What an
/// `async def guard(coro)` wrapper did, without a second coroutine and its frame per
/// call: a step is one `PyIter_Send` of the wrapped coroutine.
#[pyclass(module = "ironloop._ironloop", frozen)]
pub struct Guarded {
    coro: Py<PyAny>,
}

impl Guarded {
    fn step(&self, py: Python<'_>, arg: *mut ffi::PyObject) -> PyResult<Py<PyAny>> {
        let mut out: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: the GIL is held; `coro` and `arg` are live objects. `PyIter_Send`
        // stores a new reference in `out` for PYGEN_NEXT / PYGEN_RETURN and sets an
        // exception for PYGEN_ERROR.
        let r = unsafe { ffi::PyIter_Send(self.coro.as_ptr(), arg, &mut out) };
        match r {
            // SAFETY: `out` is a new reference (see above).
            ffi::PySendResult::PYGEN_NEXT => Ok(unsafe { Bound::from_owned_ptr(py, out) }.unbind()),
            ffi::PySendResult::PYGEN_RETURN => {
                // SAFETY: as above.
                let value = unsafe { Bound::from_owned_ptr(py, out) };
                Err(PyStopIteration::new_err((value.unbind(),)))
            }
            ffi::PySendResult::PYGEN_ERROR => Err(escape(py, PyErr::fetch(py))),
        }
    }
}

#[pymethods]
impl Guarded {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // SAFETY: `Py_None` is a valid borrowed reference.
        self.step(py, unsafe { ffi::Py_None() })
    }

    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.step(py, value.as_ptr())
    }

    #[pyo3(signature = (*args))]
    fn throw(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        self.coro
            .bind(py)
            .call_method1(intern!(py, "throw"), args)
            .map(Bound::unbind)
            .map_err(|e| escape(py, e))
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.coro.bind(py).call_method0(intern!(py, "close"))?;
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.coro)
    }
}

/// `Escaped(e)` for a `KeyboardInterrupt` / `SystemExit`, or `e` itself.
fn escape(py: Python<'_>, e: PyErr) -> PyErr {
    if !(e.is_instance_of::<PyKeyboardInterrupt>(py) || e.is_instance_of::<PySystemExit>(py)) {
        return e;
    }
    let value = e.value(py);
    if let Some(tb) = e.traceback(py) {
        let _ = value.setattr(intern!(py, "__traceback__"), tb);
    }
    match helpers(py).and_then(|h| h.escaped.bind(py).call1((value,))) {
        Ok(escaped) => PyErr::from_value(escaped),
        Err(err) => err,
    }
}

/// `base.copy()` for a `contextvars.Context`, through CPython's context API (the
/// limited API of the `abi3` feature has none: that build calls `copy`).
fn context_copy<'py>(py: Python<'py>, base: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(not(feature = "abi3"))]
    {
        // SAFETY: the GIL is held; `PyContext_Copy` returns a new reference or NULL
        // with an exception set (`base` not a context).
        unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyContext_Copy(base.as_ptr())) }
    }
    #[cfg(feature = "abi3")]
    {
        base.call_method0(intern!(py, "copy"))
    }
}

/// `loop.create_task(coro, context=context)` (Python >= 3.11, where `create_task`
/// takes `context`): in one vectorcall, no bound method and no keyword dict; the
/// limited API (`abi3`) calls the method with a keyword dict.
fn create_task_in<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
    coro: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(feature = "abi3")]
    {
        let kw = pyo3::types::PyDict::new(py);
        kw.set_item(intern!(py, "context"), context)?;
        event_loop.call_method(intern!(py, "create_task"), (coro,), Some(&kw))
    }
    #[cfg(not(feature = "abi3"))]
    {
        static KWNAMES: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();
        let kwnames = KWNAMES.get_or_try_init(py, || {
            PyTuple::new(py, [PyString::new(py, "context")]).map(Bound::unbind)
        })?;
        let args = [event_loop.as_ptr(), coro.as_ptr(), context.as_ptr()];
        // SAFETY: the GIL is held; `args` holds the receiver, one positional argument
        // and one keyword argument's value, named by `kwnames` (a tuple of str). The
        // call returns a new reference or NULL with an exception set.
        unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyObject_VectorcallMethod(
                    intern!(py, "create_task").as_ptr(),
                    args.as_ptr(),
                    2,
                    kwnames.as_ptr(),
                ),
            )
        }
    }
}

/// Python >= 3.11 (`create_task` takes `context=`); looked up once.
fn has_task_context(py: Python<'_>) -> bool {
    static AT_LEAST_311: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AT_LEAST_311.get_or_init(|| py.version_info() >= (3, 11))
}

/// The `KeyboardInterrupt` / `SystemExit` an `Escaped` carries (see [`Guarded`]), or
/// `e` itself.
fn unwrap(py: Python<'_>, e: PyErr) -> PyErr {
    let Ok(h) = helpers(py) else { return e };
    if !e.is_instance(py, h.escaped.bind(py)) {
        return e;
    }
    match e.value(py).getattr(intern!(py, "exc")) {
        Ok(original) => PyErr::from_value(original),
        Err(_) => e,
    }
}

fn start(py: Python<'_>, env: &Arc<PyRunEnv>, p: PendingAsync) {
    let mut state = p.slot.0.lock().unwrap_or_else(|e| e.into_inner());
    if matches!(*state, SlotState::Cancelled) {
        return;
    }
    let done = match Bound::new(py, DoneCallback(Mutex::new(Some(p.done)))) {
        Ok(d) => d,
        Err(e) => return e.print(py),
    };
    let make = p.make;
    let started = (|| -> PyResult<Py<PyAny>> {
        let (coro, context) = make(py)?;
        let coro = Bound::new(py, Guarded { coro })?.into_any();
        let event_loop = env.event_loop(py)?;
        // The task runs in its own copy of the context the maker chose, or of the
        // caller's contextvars context (`asyncio.gather` copies one per task too).
        let base = match &context {
            Some(c) => c.bind(py),
            None => env.context.bind(py),
        };
        let context = context_copy(py, base)?;
        let task = if has_task_context(py) {
            // `create_task(coro, context=...)`: the task runs in that copy, with no
            // second copy made by the task and no `Context.run` around the call.
            create_task_in(py, event_loop, &coro, &context)?
        } else {
            let create_task = event_loop.getattr(intern!(py, "create_task"))?;
            context.call_method1(intern!(py, "run"), (create_task, coro))?
        };
        task.call_method1(intern!(py, "add_done_callback"), (&done,))?;
        Ok(task.unbind())
    })();
    match started {
        Ok(task) => *state = SlotState::Running(task),
        Err(e) => {
            *state = SlotState::Done;
            drop(state);
            let f = done
                .borrow()
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(f) = f {
                f(py, AsyncResult::Done(Err(e)))();
            }
        }
    }
}

/// Cancels a call's asyncio task when its Rust future is dropped first.
struct CancelOnDrop {
    slot: Arc<TaskSlot>,
    env: Arc<PyRunEnv>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let mut state = self.slot.0.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *state, SlotState::Cancelled) {
            SlotState::Running(task) => {
                drop(state);
                // Nothing to cancel once the interpreter exits (see `exiting`).
                hand_over(|py| {
                    // Resolved already: the task it started ran on it.
                    let Ok(lp) = self.env.event_loop(py) else {
                        return;
                    };
                    let cancel = task.bind(py).getattr(intern!(py, "cancel"));
                    let r = cancel.and_then(|c| call_soon_threadsafe(lp, &c));
                    if let Err(e) = r {
                        // A closed loop has no tasks left to cancel.
                        let closed = lp
                            .call_method0("is_closed")
                            .and_then(|c| c.is_truthy())
                            .unwrap_or(false);
                        if !closed {
                            e.print(py);
                        }
                    }
                });
            }
            SlotState::Done => *state = SlotState::Done,
            SlotState::Waiting | SlotState::Cancelled => {}
        }
    }
}

/// Runs the coroutine `make` returns on the run's loop; `convert` turns its outcome
/// into `T` on the loop thread. `Err` when the loop could not be reached.
pub async fn run_async<T, F>(env: &Arc<PyRunEnv>, make: MakeCoro, convert: F) -> Result<T, String>
where
    T: Send + 'static,
    F: for<'py> FnOnce(Python<'py>, AsyncResult<'py>) -> T + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let slot = Arc::new(TaskSlot::default());
    let pending = PendingAsync {
        make,
        done: Box::new(move |py, r| {
            let out = convert(py, r);
            Box::new(move || {
                let _ = tx.send(out);
            })
        }),
        slot: slot.clone(),
    };
    let job = Box::new(move |py: Python<'_>, env: &Arc<PyRunEnv>| start(py, env, pending));
    if env.push_pending(job) {
        hand_over(|py| env.schedule_drain(py))
            .unwrap_or_else(|| {
                Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "Python is exiting",
                ))
            })
            .map_err(|e| format!("could not reach the event loop: {e}"))?;
    }
    let guard = CancelOnDrop {
        slot,
        env: env.clone(),
    };
    let r = rx.await;
    *guard.slot.0.lock().unwrap_or_else(|e| e.into_inner()) = SlotState::Done;
    r.map_err(|_| "the call was dropped before it finished".to_owned())
}
