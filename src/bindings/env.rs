//! The per-run Python environment that tools receive through `ToolContext::host`,
//! and the queue of work for its event loop's thread (`push_pending`: one wake-up of
//! the loop runs every job queued by then). `aio` builds coroutine calls on this
//! queue; this module knows nothing of them (the dependency goes one way).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[cfg(not(feature = "abi3"))]
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use super::exiting::{attach, call_soon_from};
use super::helpers::helpers;
use crate::prebuilt::ModelCall;
use crate::tool::ToolContext;

/// Work for the loop thread: run there, with the GIL held, by a `Drain`.
pub type LoopJob = Box<dyn FnOnce(Python<'_>, &Arc<PyRunEnv>) + Send>;

pub struct PyRunEnv {
    /// The caller's `contextvars` context, copied again for every call.
    pub context: Py<PyAny>,
    /// The loop async tools run on: the caller's (under `ainvoke`) or the runtime's own
    /// background loop, which a sync caller's run looks up only when it first starts an
    /// async call (see [`PyRunEnv::event_loop`]).
    pub(crate) event_loop: PyOnceLock<Py<PyAny>>,
    /// True when `event_loop` is the caller's (an `ainvoke`): async variants of nodes
    /// are preferred then.
    pub caller_loop: bool,
    /// The caller's loop's thread (under `ainvoke` / `astream`, where the run was
    /// captured): work queued for the loop from there needs no wake-up of the loop.
    pub(crate) loop_thread: Option<std::thread::ThreadId>,
    /// What `InjectedState` parameters receive.
    pub state: Option<Py<PyAny>>,
    /// What `InjectedStore` parameters receive.
    pub store: Option<Py<PyAny>>,
    /// Receives `ToolContext.progress(payload)` calls.
    pub on_progress: Option<Py<PyAny>>,
    /// The run's config dict, for nodes that take a `config` parameter.
    pub config: Option<Py<PyAny>>,
    /// The run's tracer (`ironloop/_tracing.py`), when OpenTelemetry is on for it;
    /// looked up once, at capture (see `tracing::run_trace`).
    pub trace: Option<Py<PyAny>>,
    /// The model step of the agent whose run this is, when the engine may run it
    /// without Python (an ironloop HTTP model; see `graph::nodes::AgentModelNode`).
    pub agent: Option<Arc<ModelCall>>,
    /// Jobs waiting for the loop thread (async calls to start; see `Drain`).
    pub(crate) pending: Mutex<Vec<LoopJob>>,
    pub(crate) drain_scheduled: AtomicBool,
    /// Whether `config` has LangChain `callbacks`: looked up on the run's first node
    /// call and kept, instead of a dict lookup on every task (see
    /// `graph::nodes::has_callbacks`).
    pub(crate) callbacks: std::sync::OnceLock<bool>,
}

/// Calls `callable(*args, **kwargs)` in a fresh copy of `base` (a
/// `contextvars.Context`): what `base.copy().run(callable, *args, **kwargs)` does.
/// Each tool call runs in its own copy, so a `ContextVar.set` in one call is never
/// seen by a sibling.
///
/// Through CPython's context API (`PyContext_Copy` / `_Enter` / `_Exit`) instead of
/// two method calls and an argument tuple built for `Context.run`; the limited API
/// (an `abi3` build, the `abi3` feature) has no such functions, so that build calls
/// `Context.run` (docs/decisions.md, "Wheels are built per CPython version").
pub fn call_in_context_copy<'py>(
    py: Python<'py>,
    base: &Bound<'py, PyAny>,
    callable: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(not(feature = "abi3"))]
    {
        in_context_copy(py, base, || super::exiting::call(callable, &args, kwargs))
    }
    #[cfg(feature = "abi3")]
    {
        let copy = base.call_method0(pyo3::intern!(py, "copy"))?;
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(callable.clone());
        all.extend(args.iter());
        let run = copy.getattr(pyo3::intern!(py, "run"))?;
        super::exiting::call(&run, &PyTuple::new(py, all)?, kwargs)
    }
}

/// Runs `f` with a fresh copy of `base` (a `contextvars.Context`) entered on this
/// thread, as `base.copy().run(...)` would run it: the body of [`call_in_context_copy`],
/// for callers that make their call some other way (a vectorcall with keyword names).
/// Not in the limited API (see there).
#[cfg(not(feature = "abi3"))]
pub fn in_context_copy<'py>(
    py: Python<'py>,
    base: &Bound<'py, PyAny>,
    f: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the GIL is held; `PyContext_Copy` returns a new reference or NULL
    // with an exception set, which `from_owned_ptr_or_err` turns into `Err`.
    let copy = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyContext_Copy(base.as_ptr()))? };
    in_context(py, &copy, f)
}

/// Runs `f` with `context` (a `contextvars.Context`) entered on this thread, as
/// `context.run(...)` would run it (and failing as it does when `context` is
/// entered already), without the method call and its argument tuple. Not in the
/// limited API (see [`call_in_context_copy`]).
#[cfg(not(feature = "abi3"))]
pub fn in_context<'py, R>(
    py: Python<'py>,
    context: &Bound<'py, PyAny>,
    f: impl FnOnce() -> PyResult<R>,
) -> PyResult<R> {
    // SAFETY: the GIL is held; `PyContext_Enter` checks that `context` is a context
    // not entered yet (an exception set and -1 otherwise).
    if unsafe { ffi::PyContext_Enter(context.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    let r = f();
    // The call's error, if any, is held by `r` (no exception is set here), as
    // `PyContext_Exit` needs. It fails only when the call left another context
    // current.
    // SAFETY: `context` was entered above on this thread.
    if unsafe { ffi::PyContext_Exit(context.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    r
}

/// `var.get(None)` (`var` a `contextvars.ContextVar`) in the current context: its
/// value (or its default), `None` when it has neither or holds Python's `None`.
pub fn var_get<'py>(var: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = var.py();
    #[cfg(not(feature = "abi3"))]
    let value = {
        let mut out = std::ptr::null_mut();
        // SAFETY: the GIL is held; `PyContextVar_Get` checks `var`'s type, stores a new
        // reference (or NULL: no value, no default) in `out`, and returns -1 with an
        // exception set on an error.
        if unsafe { ffi::PyContextVar_Get(var.as_ptr(), std::ptr::null_mut(), &mut out) } < 0 {
            return Err(PyErr::fetch(py));
        }
        if out.is_null() {
            return Ok(None);
        }
        // SAFETY: `out` is the new reference `PyContextVar_Get` stored.
        unsafe { Bound::from_owned_ptr(py, out) }
    };
    #[cfg(feature = "abi3")]
    let value = var.call_method1(pyo3::intern!(py, "get"), (py.None(),))?;
    Ok((!value.is_none()).then_some(value))
}

/// `var.set(value)` (`var` a `contextvars.ContextVar`) in the current context: its
/// token, for [`var_reset`]. Through CPython's API where there is one (no method
/// lookup and call).
pub fn var_set<'py>(
    var: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(not(feature = "abi3"))]
    {
        // SAFETY: the GIL is held; `PyContextVar_Set` checks `var`'s type and returns
        // a new reference (the token) or NULL with an exception set.
        unsafe {
            Bound::from_owned_ptr_or_err(
                var.py(),
                ffi::PyContextVar_Set(var.as_ptr(), value.as_ptr()),
            )
        }
    }
    #[cfg(feature = "abi3")]
    {
        var.call_method1(pyo3::intern!(var.py(), "set"), (value,))
    }
}

/// `var.reset(token)`, `token` from [`var_set`].
pub fn var_reset(var: &Bound<'_, PyAny>, token: &Bound<'_, PyAny>) -> PyResult<()> {
    #[cfg(not(feature = "abi3"))]
    {
        // SAFETY: the GIL is held; `PyContextVar_Reset` checks both objects' types
        // (-1 with an exception set on a wrong or used token).
        if unsafe { ffi::PyContextVar_Reset(var.as_ptr(), token.as_ptr()) } != 0 {
            return Err(PyErr::fetch(var.py()));
        }
        Ok(())
    }
    #[cfg(feature = "abi3")]
    {
        var.call_method1(pyo3::intern!(var.py(), "reset"), (token,))
            .map(drop)
    }
}

static FIRST_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `contextvars.copy_context`, looked up once: a wrapped tool call (`create_agent`'s
/// `wrap_tool_call`) captures an environment per call, and importing the module each
/// time was over half of the capture (~2.9 k of ~4.9 k instructions).
static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

thread_local! {
    /// Set on threads that run an event loop we started calls on.
    static ON_LOOP_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the current thread as one that runs an asyncio loop.
pub fn mark_loop_thread() {
    ON_LOOP_THREAD.with(|f| f.set(true));
}

/// The loop async tools of a sync caller run on, picked by Python for the calling
/// thread: a caller on a loop thread (an async tool calling `invoke`) must not get its
/// own, blocked loop, so it gets the next one.
fn background_loop(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(helpers(py)?.background_loop.bind(py).call0()?.unbind())
}

/// The first background loop (the one every caller off a loop thread gets), looked up
/// once. Called only for an environment captured off a loop thread, from that thread,
/// a runtime worker or a tool thread, none of them a loop thread.
fn first_loop(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    FIRST_LOOP.get_or_try_init(py, || background_loop(py))
}

impl PyRunEnv {
    /// The loop this run's async calls go to. For a sync caller that is the first
    /// background loop, started (and `asyncio` imported) here, on the first async call:
    /// a run of sync nodes and tools never pays for either.
    pub fn event_loop<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyAny>> {
        let lp = self
            .event_loop
            .get_or_try_init(py, || Ok::<_, PyErr>(first_loop(py)?.clone_ref(py)))?;
        Ok(lp.bind(py))
    }

    /// The same loop for an environment derived from this one (resolved already, or
    /// to be resolved the same way).
    pub fn share_loop(&self, py: Python<'_>) -> PyOnceLock<Py<PyAny>> {
        let cell = PyOnceLock::new();
        if let Some(lp) = self.event_loop.get(py) {
            let _ = cell.set(py, lp.clone_ref(py));
        }
        cell
    }

    /// The environment of tool calls a node of this run makes: its own `context`
    /// (the task's), the state and store tools are given and where their progress
    /// goes; the loop, config and trace are the run's.
    pub fn for_tools(
        &self,
        py: Python<'_>,
        context: Py<PyAny>,
        state: Option<Py<PyAny>>,
        store: Option<Py<PyAny>>,
        on_progress: Option<Py<PyAny>>,
    ) -> Self {
        PyRunEnv {
            context,
            event_loop: self.share_loop(py),
            caller_loop: self.caller_loop,
            loop_thread: self.loop_thread,
            state,
            store,
            on_progress,
            config: self.config.as_ref().map(|c| c.clone_ref(py)),
            trace: self.trace.as_ref().map(|t| t.clone_ref(py)),
            agent: None,
            pending: Default::default(),
            drain_scheduled: Default::default(),
            callbacks: Default::default(),
        }
    }

    /// An environment for a run started from Python: `event_loop` is the caller's
    /// running loop, or `None` for a sync call (async tools then go to a loop the
    /// runtime owns, on its own thread).
    pub fn capture(
        py: Python<'_>,
        event_loop: Option<Py<PyAny>>,
        state: Option<Py<PyAny>>,
        store: Option<Py<PyAny>>,
        on_progress: Option<Py<PyAny>>,
        config: Option<Py<PyAny>>,
        agent: Option<Arc<ModelCall>>,
    ) -> PyResult<Arc<Self>> {
        let context = COPY_CONTEXT
            .import(py, "contextvars", "copy_context")?
            .call0()?
            .unbind();
        let trace = super::tracing::run_trace(py, context.bind(py))?;
        let caller_loop = event_loop.is_some();
        let cell = PyOnceLock::new();
        match event_loop {
            Some(l) => {
                let _ = cell.set(py, l);
            }
            // On a loop thread the loop depends on the calling thread: look it up now.
            None if ON_LOOP_THREAD.with(|f| f.get()) => {
                let _ = cell.set(py, background_loop(py)?);
            }
            // Anywhere else it is the first background loop, looked up when needed.
            None => {}
        }
        Ok(Arc::new(PyRunEnv {
            context,
            event_loop: cell,
            caller_loop,
            loop_thread: caller_loop.then(|| std::thread::current().id()),
            state,
            store,
            on_progress,
            config,
            trace,
            agent,
            pending: Mutex::new(Vec::new()),
            drain_scheduled: AtomicBool::new(false),
            callbacks: Default::default(),
        }))
    }

    /// The run's progress callback as the executor's [`ProgressFn`], so that Rust
    /// tools (an MCP server's progress notifications) report where Python tools do.
    /// The payload reaches Python as a plain value; a failing callback is logged, as
    /// a report must not fail the call that made it.
    pub fn progress_fn(&self) -> Option<crate::tool::ProgressFn> {
        // Most runs have no callback: answer without taking the GIL (a tools step
        // calls this every time).
        self.on_progress.as_ref()?;
        let cb = attach(|py| self.on_progress.as_ref().map(|c| c.clone_ref(py)))?;
        Some(Arc::new(move |_id: &str, payload: serde_json::Value| {
            attach(|py| {
                let done = pythonize::pythonize(py, &payload)
                    .map_err(PyErr::from)
                    .and_then(|v| cb.call1(py, (v,)));
                if let Err(e) = done {
                    log::warn!("the progress callback failed: {e}");
                }
            })
        }))
    }

    /// The step observer that traces this run, when it is traced.
    pub fn step_observer(&self, py: Python<'_>) -> Option<Arc<dyn crate::graph::StepObserver>> {
        let trace = self.trace.as_ref()?.clone_ref(py);
        Some(Arc::new(super::tracing::PyStepTracer {
            trace,
            context: self.context.clone_ref(py),
        }))
    }

    /// The call tracer of this run's tool calls, when it is traced; the calls' spans
    /// start in this environment's context.
    pub fn call_tracer(&self, py: Python<'_>) -> Option<Arc<dyn crate::tool::CallTracer>> {
        let trace = self.trace.as_ref()?.clone_ref(py);
        Some(Arc::new(super::tracing::PyCallTracer {
            trace,
            context: self.context.clone_ref(py),
        }))
    }

    /// The environment of a call, or a fresh one for a tool called outside a run.
    pub fn of(py: Python<'_>, ctx: &ToolContext) -> PyResult<Arc<Self>> {
        if let Some(env) = ctx.host.clone().and_then(|h| h.downcast::<PyRunEnv>().ok()) {
            return Ok(env);
        }
        Self::capture(py, None, None, None, None, None, None)
    }

    /// Queues a job; true when the caller must schedule a drain on the loop.
    pub fn push_pending(&self, p: LoopJob) -> bool {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p);
        !self.drain_scheduled.swap(true, Ordering::AcqRel)
    }

    fn take_pending(&self) -> Vec<LoopJob> {
        // Clear the flag first: a call queued after this point schedules a new drain.
        self.drain_scheduled.store(false, Ordering::Release);
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Asks the event loop's thread to run the queued jobs.
    pub fn schedule_drain(self: &Arc<Self>, py: Python<'_>) -> PyResult<()> {
        let drain = Bound::new(py, Drain(self.clone()))?;
        let here = self.loop_thread == Some(std::thread::current().id());
        let r = self
            .event_loop(py)
            .and_then(|lp| call_soon_from(lp, &drain, here));
        if r.is_err() {
            // Nothing will drain: let the next call try again.
            self.drain_scheduled.store(false, Ordering::Release);
        }
        r.map(|_| ())
    }
}

/// Runs the jobs queued for a run's loop; scheduled on its event loop.
#[pyclass]
struct Drain(Arc<PyRunEnv>);

#[pymethods]
impl Drain {
    fn __call__(&self, py: Python<'_>) {
        mark_loop_thread();
        let env = &self.0;
        for job in env.take_pending() {
            job(py, env);
        }
    }
}
