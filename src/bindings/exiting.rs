//! Our threads and an interpreter that is finalizing.
//!
//! On Python < 3.14 a thread that takes the GIL back once the interpreter is
//! finalizing is ended by CPython (`PyThread_exit_thread`, that is `pthread_exit`): a
//! forced unwind through every frame of the thread. pyo3 parks a thread that meets it
//! in `PyGILState_Ensure` / `PyEval_RestoreThread`. A thread that meets it *inside*
//! Python code — a sync tool on the pool waking from `time.sleep` after the script
//! ended, a runtime thread whose `call_soon_threadsafe` released the GIL to write to
//! the loop's socket — unwinds into the Rust frame that called Python. pyo3 declares
//! its calls `extern "C"` (they may not unwind), so the unwinder gives up there and
//! glibc aborts the process (SIGABRT at exit, often with nothing printed).
//!
//! Two rules keep a process that exits from aborting:
//!
//! - The calls of ours that can block in Python for long (a tool's or a node's own
//!   function, `call_soon_threadsafe`) go through [`call`] (and `call_kw`'s
//!   [`vectorcall`]), made through `"C-unwind"` function pointers, inside a guard that
//!   parks the thread when such an unwind reaches it ([`parks_if_ended`]) before any
//!   destructor of ours runs (they would release Python objects after the
//!   interpreter is gone). The parked thread ends with the
//!   process; the exit does not wait for the tool.
//! - Handing a result or a cancellation to an event loop ([`hand_over`]) stops when the
//!   interpreter starts to exit: an `atexit` hook ([`at_exit`]) marks the exit and
//!   waits (the GIL released) for the hand-overs under way to leave Python.
//!
//! Python 3.14 parks such threads itself.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Set by [`at_exit`]: no hand-over to an event loop starts any more.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Hand-overs inside Python now (see [`hand_over`]).
static HANDING: AtomicUsize = AtomicUsize::new(0);
/// How long the exit waits for the hand-overs under way (they take microseconds;
/// a loaded machine may not schedule their threads for a while).
const EXIT_WAIT: Duration = Duration::from_secs(2);

type PyObj = *mut pyo3::ffi::PyObject;
/// `PyObject_Call`, as a function that may unwind.
type CallFn = unsafe extern "C-unwind" fn(PyObj, PyObj, PyObj) -> PyObj;
/// `PyObject_Vectorcall`, as a function that may unwind.
#[cfg(not(feature = "abi3"))]
type VectorcallFn = unsafe extern "C-unwind" fn(PyObj, *const PyObj, usize, PyObj) -> PyObj;

/// `PyObject_Call` through a pointer the optimizer cannot see through: pyo3-ffi
/// declares it `extern "C"` (it may not unwind), and a second declaration of the same
/// symbol would be merged with that one, so the call would get no landing pad and
/// the guard of [`parks_if_ended`] around it would be dropped as dead code.
fn call_fn() -> CallFn {
    type Declared = unsafe extern "C" fn(PyObj, PyObj, PyObj) -> PyObj;
    let f: Declared = pyo3::ffi::PyObject_Call;
    // SAFETY: the same C function, called with the same arguments and C calling
    // convention; only the (false) promise that it never unwinds is dropped.
    std::hint::black_box(unsafe { std::mem::transmute::<Declared, CallFn>(f) })
}

/// Test seam: set to `1` in a process's environment before its first tool call, it
/// makes [`vectorcall_fn`] answer `None` as on CPython 3.10, so that 3.11+ runs the
/// fallback 3.10 runs ([`vectorcall_through_call`]); no Python 3.10 is needed to test
/// it (`tests/python/test_vectorcall_fallback.py`). Read once, where the function is
/// looked up.
#[cfg(all(unix, not(feature = "abi3")))]
const FORCE_FALLBACK_ENV: &str = "IRONLOOP_TEST_VECTORCALL_FALLBACK";

/// `PyObject_Vectorcall` looked up in the running interpreter (exported from Python
/// 3.11 on; `None` before, where pyo3 provides it as an inline function, or when
/// [`FORCE_FALLBACK_ENV`] asks for the 3.10 path), for the same reason as
/// [`call_fn`].
#[cfg(all(unix, not(feature = "abi3")))]
fn vectorcall_fn() -> Option<VectorcallFn> {
    static FOUND: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let addr = *FOUND.get_or_init(|| {
        if std::env::var_os(FORCE_FALLBACK_ENV).is_some_and(|v| v == "1") {
            return 0;
        }
        // SAFETY: a lookup of a symbol by a NUL-terminated name in the process.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"PyObject_Vectorcall".as_ptr()) as usize }
    });
    // SAFETY: the address of CPython's `PyObject_Vectorcall`, whose C signature this is.
    (addr != 0).then(|| unsafe { std::mem::transmute::<usize, VectorcallFn>(addr) })
}

#[cfg(all(not(unix), not(feature = "abi3")))]
fn vectorcall_fn() -> Option<VectorcallFn> {
    None
}

/// Whether tool calls made with keywords go through `PyObject_Call` ([`call`], with
/// the arguments gathered into a dict): on CPython 3.10, in an `abi3` build, or with
/// [`FORCE_FALLBACK_ENV`] set. For tests, which cannot tell the two paths apart
/// otherwise (they are meant to give the same results).
#[cfg(not(feature = "abi3"))]
#[pyfunction]
fn _vectorcall_fallback() -> bool {
    vectorcall_fn().is_none()
}

/// The `abi3` build calls every tool through [`call`].
#[cfg(feature = "abi3")]
#[pyfunction]
fn _vectorcall_fallback() -> bool {
    true
}

/// Parks the thread forever when dropped by an unwind that is not a Rust panic
/// (CPython ending the thread); forgotten on the way out otherwise.
struct ParkIfEnded;

impl Drop for ParkIfEnded {
    fn drop(&mut self) {
        // A Rust panic unwinds on, as it would without the guard.
        if std::thread::panicking() {
            return;
        }
        loop {
            std::thread::park();
        }
    }
}

/// Runs `f`; a thread that CPython ends while in `f` (see the module docs) parks
/// here, before the destructors of the frames that called `f` run (they would
/// release Python objects without the GIL). Only a call through a `"C-unwind"`
/// function ([`call`], [`vectorcall`]) gets this far.
pub fn parks_if_ended<R>(f: impl FnOnce() -> R) -> R {
    let guard = ParkIfEnded;
    let r = f();
    std::mem::forget(guard);
    r
}

/// `Python::attach` for our threads: one that CPython ends while attached parks
/// inside the attach, before pyo3's guard would release a thread state that is no
/// longer current.
pub fn attach<F, R>(f: F) -> R
where
    F: for<'py> FnOnce(Python<'py>) -> R,
{
    Python::attach(|py| parks_if_ended(|| f(py)))
}

/// `callable(*args, **kwargs)`, for calls that may block in Python (a tool's or a
/// node's function, `call_soon_threadsafe`): a thread CPython ends meanwhile parks.
pub fn call<'py>(
    callable: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let kw = kwargs.map_or(std::ptr::null_mut(), |k| k.as_ptr());
    // SAFETY: the GIL is held (the `Bound`s prove it); `args` is a tuple and `kw` a
    // dict or NULL. The call returns a new reference or NULL with an exception set.
    let f = call_fn();
    let ret = parks_if_ended(|| unsafe { f(callable.as_ptr(), args.as_ptr(), kw) });
    // SAFETY: as above.
    unsafe { Bound::from_owned_ptr_or_err(callable.py(), ret) }
}

/// `PyObject_Vectorcall`, parking the thread if CPython ends it during the call
/// (on Python 3.10, where the function is not exported, the same call made through
/// [`call`] with the arguments gathered into a tuple and a dict).
///
/// # Safety
/// As `PyObject_Vectorcall`: the GIL held, `args` holding the positional then the
/// keyword arguments' values named by `kwnames` (a tuple of str, or NULL).
#[cfg(not(feature = "abi3"))]
pub unsafe fn vectorcall(
    callable: PyObj,
    args: *const PyObj,
    nargsf: usize,
    kwnames: PyObj,
) -> PyObj {
    match vectorcall_fn() {
        // SAFETY: the caller's contract.
        Some(f) => parks_if_ended(|| unsafe { f(callable, args, nargsf, kwnames) }),
        // SAFETY: the caller's contract.
        None => unsafe { vectorcall_through_call(callable, args, nargsf, kwnames) },
    }
}

/// [`vectorcall`] where `PyObject_Vectorcall` is not exported: the positional
/// arguments gathered into a tuple, the keyword ones into a dict, then [`call`], so
/// the thread parks there too.
///
/// # Safety
/// As [`vectorcall`].
#[cfg(not(feature = "abi3"))]
unsafe fn vectorcall_through_call(
    callable: PyObj,
    args: *const PyObj,
    nargsf: usize,
    kwnames: PyObj,
) -> PyObj {
    use pyo3::types::PyDict;
    // SAFETY: the caller holds the GIL (`vectorcall`'s contract).
    let py = unsafe { Python::assume_attached() };
    // SAFETY: reads the argument count out of `nargsf`; no memory is touched.
    let npos = unsafe { pyo3::ffi::PyVectorcall_NARGS(nargsf) } as usize;
    let gathered = (|| -> PyResult<Bound<'_, PyAny>> {
        // SAFETY: `args` holds `npos` positional values, then one per name in `kwnames`;
        // each is a live borrowed reference for the duration of the call.
        let arg = |i: usize| unsafe { Bound::from_borrowed_ptr(py, *args.add(i)) };
        let positional = PyTuple::new(py, (0..npos).map(arg))?;
        let keywords = if kwnames.is_null() {
            None
        } else {
            // SAFETY: `kwnames` is a tuple of str (the contract), borrowed.
            let names = unsafe { Bound::from_borrowed_ptr(py, kwnames) };
            let dict = PyDict::new(py);
            for (j, name) in names.cast::<PyTuple>()?.iter().enumerate() {
                dict.set_item(name, arg(npos + j))?;
            }
            Some(dict)
        };
        // SAFETY: `callable` is a live object the caller lends for the call.
        let callable = unsafe { Bound::from_borrowed_ptr(py, callable) };
        call(&callable, &positional, keywords.as_ref())
    })();
    match gathered {
        Ok(ret) => ret.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// `event_loop.call_soon_threadsafe(callback)`: wakes the loop through its socket,
/// with the GIL released for the write.
pub fn call_soon_threadsafe(
    event_loop: &Bound<'_, PyAny>,
    callback: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let py = event_loop.py();
    let method = event_loop.getattr(pyo3::intern!(py, "call_soon_threadsafe"))?;
    call(&method, &PyTuple::new(py, [callback])?, None).map(|_| ())
}

/// Queues `callback` on `event_loop`: with `call_soon` when `here` (the caller runs
/// on the loop's thread: no write to the loop's wake-up pipe, no wake-up), else with
/// [`call_soon_threadsafe`].
pub fn call_soon_from(
    event_loop: &Bound<'_, PyAny>,
    callback: &Bound<'_, PyAny>,
    here: bool,
) -> PyResult<()> {
    if here {
        let py = event_loop.py();
        event_loop.call_method1(pyo3::intern!(py, "call_soon"), (callback,))?;
        return Ok(());
    }
    call_soon_threadsafe(event_loop, callback)
}

/// Runs `f` attached, to hand something to an event loop from one of our threads
/// (a result, a cancellation, queued calls), unless the interpreter is exiting:
/// `None` then, and nothing was done (the loops are going away with it).
pub fn hand_over<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    // Counted before the flag is read, and `at_exit` sets the flag before it reads
    // the count: either this sees the flag, or the exit waits for this.
    HANDING.fetch_add(1, Ordering::SeqCst);
    let r = (!EXITING.load(Ordering::SeqCst)).then(|| attach(f));
    HANDING.fetch_sub(1, Ordering::SeqCst);
    r
}

/// The `atexit` hook: from here on no hand-over starts; those under way are waited
/// for (GIL released), so that none is inside Python when the interpreter
/// finalizes.
#[pyfunction]
fn at_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    let started = Instant::now();
    while HANDING.load(Ordering::SeqCst) > 0 && started.elapsed() < EXIT_WAIT {
        py.detach(|| std::thread::sleep(Duration::from_millis(1)));
    }
}

/// Adds [`_vectorcall_fallback`]; registers [`at_exit`] with `atexit` (at import: it
/// then runs after the hooks of the modules imported later, the application's
/// included).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_vectorcall_fallback, m)?)?;
    let hook = wrap_pyfunction!(at_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
