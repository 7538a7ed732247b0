//! Python functions as core tools.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use tokio::sync::oneshot;

use super::aio::{run_async, AsyncResult, MakeCoro};
use super::args::Timeout;
use super::context::PyToolContext;
use super::convert::{json_from_py, value_from_py, value_to_py};
#[cfg(not(feature = "abi3"))]
use super::env::in_context_copy;
use super::env::{call_in_context_copy, PyRunEnv};
use super::exiting::attach;
#[cfg(not(feature = "abi3"))]
use super::exiting::vectorcall;
use super::helpers::helpers;
use super::messages::PyMessage;
use super::pool::Pool;
use crate::error::HostError;
use crate::message::MessageKind;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// What a parameter hidden from the schema is filled with.
#[derive(Debug, Clone)]
enum Inject {
    State(Option<String>),
    /// A state field the parameter has a default for: when the state lacks it, the
    /// parameter is left out so its default stands (LangGraph's optional state args).
    OptionalField(String),
    Store,
    ToolCallId,
    Context,
}

struct Inner {
    def: ToolDefinition,
    /// Called with the arguments as keywords (the function itself, or a wrapper that
    /// converts arguments to dataclasses / pydantic models first).
    target: Py<PyAny>,
    is_async: bool,
    timeout: Option<Duration>,
    /// `Tool(label=...)`: the human-readable label of its calls.
    label: Option<String>,
    return_direct: bool,
    injected: Vec<(Py<PyString>, Inject)>,
    /// The tool's calls finish within [`INLINE_BUDGET`] (false until one has): its
    /// next call beside siblings may run on the driving thread (see `timed`).
    quick: AtomicBool,
    /// Inline calls in a row that went over the budget.
    strikes: AtomicU8,
}

/// How long a sync tool's last call may have taken for its next call to run on the
/// thread that drives the run while sibling calls wait behind it (`call_sync`). A
/// hand-over to a pool thread and back costs tens of microseconds and a wake-up of
/// two threads; a call under this budget costs its siblings less than that, and a
/// call over it (a `time.sleep`, I/O) moves the tool's later calls to the pool,
/// where they run in parallel.
pub const INLINE_BUDGET: Duration = Duration::from_micros(100);

/// A Python `ironloop.Tool` seen by the executor.
#[derive(Clone)]
pub struct PyTool(Arc<Inner>);

/// What a tool returned, carried unconverted to the caller (a `Command`, say).
pub struct PyPayload(pub Py<PyAny>);

impl PyTool {
    /// Reads an `ironloop.Tool` object (see `python/ironloop/_tool.py`).
    pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let name: String = obj.getattr("name")?.extract()?;
        let description: String = obj.getattr("description")?.extract()?;
        let parameters = value_from_py(&obj.getattr("parameters")?, "tool parameters")?;
        let timeout =
            Timeout::optional(&obj.getattr("timeout")?, &format!("tool {name:?}: timeout"))?
                .map(|t| t.0);
        let mut injected = Vec::new();
        let inj = obj.getattr("_injected")?;
        let inj = inj.cast::<PyDict>()?;
        // A duck-typed tool without the attribute has no optional fields.
        let optional = obj
            .getattr(intern!(obj.py(), "_optional_state"))
            .ok()
            .filter(|o| !o.is_none());
        for (param, spec) in inj.iter() {
            let (kind, field): (String, Option<String>) = spec.extract()?;
            let has_default = match &optional {
                Some(o) => o.contains(&param)?,
                None => false,
            };
            let k = match kind.as_str() {
                "state" => match field {
                    Some(f) if has_default => Inject::OptionalField(f),
                    other => Inject::State(other),
                },
                "store" => Inject::Store,
                "tool_call_id" => Inject::ToolCallId,
                "context" => Inject::Context,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "tool {name:?}: unknown injection kind {other:?} for parameter {param}"
                    )))
                }
            };
            injected.push((param.cast_into::<PyString>()?.unbind(), k));
        }
        Ok(PyTool(Arc::new(Inner {
            def: ToolDefinition::new(name, description, parameters),
            target: obj.getattr("_target")?.unbind(),
            is_async: obj.getattr("_is_async")?.extract()?,
            timeout,
            // `Tool.__init__` checked it is a str or None; an object without one
            // (a duck-typed tool) has none.
            label: match obj.getattr(intern!(obj.py(), "label")) {
                Ok(l) => l.extract()?,
                Err(_) => None,
            },
            return_direct: obj.getattr("return_direct")?.extract()?,
            injected,
            quick: AtomicBool::new(false),
            strikes: AtomicU8::new(0),
        })))
    }

    /// Whether the tool is given the graph's state: injected whole or as a field, or
    /// through an injected context (its `state`).
    pub fn sees_state(&self) -> bool {
        self.0.injected.iter().any(|(_, i)| {
            matches!(
                i,
                Inject::State(_) | Inject::OptionalField(_) | Inject::Context
            )
        })
    }
}

/// One call of a Python tool: its arguments, its context and the run's environment,
/// which every step of making the call reads.
#[derive(Clone, Copy)]
struct Call<'a> {
    args: &'a Value,
    ctx: &'a ToolContext,
    env: &'a Arc<PyRunEnv>,
}

impl<'a> Call<'a> {
    fn new(args: &'a Value, ctx: &'a ToolContext, env: &'a Arc<PyRunEnv>) -> Self {
        Call { args, ctx, env }
    }
}

impl Inner {
    /// Records how long a call took (see [`INLINE_BUDGET`]). A quick call, inline or
    /// on the pool, makes the tool quick. Two inline calls in a row over the budget
    /// make it slow: one alone can be a garbage collection or the OS preempting the
    /// thread (a call of a microsecond then reads milliseconds), which the pool would
    /// not have avoided; a tool that blocks does it again. A slow call on the pool
    /// changes nothing: there it waits for the GIL behind its pool siblings.
    fn timed(&self, started: Instant, inline: bool) {
        if started.elapsed() <= INLINE_BUDGET {
            self.strikes.store(0, Ordering::Relaxed);
            self.quick.store(true, Ordering::Relaxed);
        } else if inline && self.strikes.fetch_add(1, Ordering::Relaxed) >= 1 {
            self.strikes.store(0, Ordering::Relaxed);
            self.quick.store(false, Ordering::Relaxed);
        }
    }

    /// As LangGraph's ToolNode: a tool with an injected store needs the graph to have
    /// one (injecting `None` would fail later, somewhere less clear).
    fn check_usable(&self, env: &PyRunEnv) -> Result<(), ToolError> {
        let wants_store = self
            .injected
            .iter()
            .any(|(_, i)| matches!(i, Inject::Store));
        if wants_store && env.store.is_none() {
            return Err(ToolError::Unusable {
                tool: self.def.name.clone(),
                message: "Cannot inject store into tools with InjectedStore annotations - \
                          please compile your graph with a store."
                    .into(),
            });
        }
        Ok(())
    }

    /// The call's arguments and the injected values, as keywords.
    fn kwargs<'py>(&self, py: Python<'py>, call: Call<'_>) -> PyResult<Bound<'py, PyDict>> {
        let kw = value_to_py(py, call.args)?.cast_into::<PyDict>()?;
        for (param, how) in &self.injected {
            if let Some(v) = self.injected_value(py, how, call)? {
                kw.set_item(param.bind(py), v)?;
            }
        }
        Ok(kw)
    }

    /// The value an injected parameter receives; `None` leaves it out (an optional
    /// field the state lacks: the parameter's default stands).
    fn injected_value<'py>(
        &self,
        py: Python<'py>,
        how: &Inject,
        call: Call<'_>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Call { ctx, env, .. } = call;
        Ok(Some(match how {
            Inject::ToolCallId => PyString::new(py, &ctx.tool_call_id).into_any(),
            Inject::Store => opt(py, &env.store),
            Inject::State(None) => whole_state(py, &env.state)?,
            Inject::State(Some(field)) => match &env.state {
                Some(s) => select_field(s.bind(py), field)
                    .map_err(|e| injection_error(py, &self.def.name, s.bind(py), field, e))?,
                None => py.None().into_bound(py),
            },
            Inject::OptionalField(field) => match &env.state {
                Some(s) if has_field(s.bind(py), field)? => select_field(s.bind(py), field)?,
                _ => return Ok(None),
            },
            Inject::Context => Bound::new(py, PyToolContext::new(ctx, env.clone()))?.into_any(),
        }))
    }

    /// Calls the tool's function with the call's arguments and the injected values as
    /// keywords: what `target(**self.kwargs(...))` does, in one vectorcall with the
    /// names in a tuple (no keyword dict built, then unpacked again by the call). An
    /// injected parameter replaces an argument of the same name, as in `kwargs`.
    #[cfg(not(feature = "abi3"))]
    fn call_kw<'py>(&self, py: Python<'py>, call: Call<'_>) -> PyResult<Bound<'py, PyAny>> {
        const MAX: usize = 8;
        let map = match call.args {
            Value::Object(map) if map.len() + self.injected.len() <= MAX => map,
            _ => {
                let kw = self.kwargs(py, call)?;
                let none = pyo3::types::PyTuple::empty(py);
                return super::exiting::call(self.target.bind(py), &none, Some(&kw));
            }
        };
        let mut names: Vec<Bound<'py, PyAny>> = Vec::with_capacity(MAX);
        let mut values: Vec<Bound<'py, PyAny>> = Vec::with_capacity(MAX);
        for (k, v) in map {
            let injected = self
                .injected
                .iter()
                .any(|(p, _)| p.bind(py).to_str().is_ok_and(|p| p == k));
            if !injected {
                names.push(PyString::new(py, k).into_any());
                values.push(value_to_py(py, v)?);
            }
        }
        for (param, how) in &self.injected {
            if let Some(v) = self.injected_value(py, how, call)? {
                names.push(param.bind(py).clone().into_any());
                values.push(v);
            }
        }
        let kwnames = pyo3::types::PyTuple::new(py, names)?;
        let ptrs: [*mut pyo3::ffi::PyObject; MAX] =
            std::array::from_fn(|i| values.get(i).map_or(std::ptr::null_mut(), |v| v.as_ptr()));
        // SAFETY: the GIL is held; `ptrs` starts with `kwnames.len()` live values (the
        // keyword arguments, no positional ones) named by `kwnames`, a tuple of str.
        // The call returns a new reference or NULL with an exception set.
        // A thread CPython ends inside the tool (the interpreter finalizing) parks
        // here, before `names`, `values` and `kwnames` are released without the GIL.
        let ret = unsafe { vectorcall(self.target.as_ptr(), ptrs.as_ptr(), 0, kwnames.as_ptr()) };
        // SAFETY: as above: `ret` is a new reference or NULL with an exception set.
        unsafe { Bound::from_owned_ptr_or_err(py, ret) }
    }

    /// `target(**self.kwargs(...))`: the limited API (the `abi3` feature) has
    /// `PyObject_Vectorcall` from 3.12 on only.
    #[cfg(feature = "abi3")]
    fn call_kw<'py>(&self, py: Python<'py>, call: Call<'_>) -> PyResult<Bound<'py, PyAny>> {
        let kw = self.kwargs(py, call)?;
        let none = pyo3::types::PyTuple::empty(py);
        super::exiting::call(self.target.bind(py), &none, Some(&kw))
    }

    /// [`Self::call_kw`] in a fresh copy of the run's context (what a sync tool runs
    /// in): one vectorcall inside the entered copy, where the `abi3` build has
    /// `Context.run` take the keyword dict.
    fn call_kw_in_copy<'py>(
        &self,
        py: Python<'py>,
        context: &Bound<'py, PyAny>,
        call: Call<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        #[cfg(not(feature = "abi3"))]
        {
            in_context_copy(py, context, || self.call_kw(py, call))
        }
        #[cfg(feature = "abi3")]
        {
            let kw = self.kwargs(py, call)?;
            let none = pyo3::types::PyTuple::empty(py);
            call_in_context_copy(py, context, self.target.bind(py), none, Some(&kw))
        }
    }

    /// Converts what the tool returned (or raised) into the core's outcome.
    fn outcome(
        &self,
        py: Python<'_>,
        r: PyResult<Bound<'_, PyAny>>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut out = match r {
            Ok(obj) => output_from_py(&obj).map_err(|m| ToolError::failed(&self.def.name, m))?,
            Err(e) => return Err(record_error(py, &self.def.name, e, ctx)),
        };
        out.return_direct = self.return_direct;
        Ok(out)
    }

    fn run_sync(
        &self,
        py: Python<'_>,
        args: &Value,
        ctx: &ToolContext,
        env: &Arc<PyRunEnv>,
    ) -> Result<ToolOutput, ToolError> {
        self.check_usable(env)?;
        let call = Call { args, ctx, env };
        let context = env.context.bind(py);
        let r = match &env.trace {
            // Traced: the call's span is current while its function runs, so a
            // sub-agent it starts is traced under it.
            Some(trace) => self.kwargs(py, call).and_then(|kw| {
                call_in_context_copy(
                    py,
                    context,
                    &trace.bind(py).getattr(intern!(py, "call_tool"))?,
                    (
                        call_span(py, ctx),
                        &self.def.name,
                        &ctx.tool_call_id,
                        self.target.bind(py),
                        kw,
                    )
                        .into_pyobject(py)?,
                    None,
                )
            }),
            None => self.call_kw_in_copy(py, context, call),
        };
        self.outcome(py, r, ctx)
    }
}

/// The span the executor opened for this call (see `tracing::PyCallTracer`), or
/// `None` when the call came some other way: the tracer then opens one itself.
fn call_span<'py>(py: Python<'py>, ctx: &ToolContext) -> Bound<'py, PyAny> {
    match ctx
        .span
        .as_ref()
        .and_then(|s| s.downcast_ref::<Py<PyAny>>())
    {
        Some(span) => span.bind(py).clone(),
        None => py.None().into_bound(py),
    }
}

pub(super) fn opt<'py>(py: Python<'py>, v: &Option<Py<PyAny>>) -> Bound<'py, PyAny> {
    match v {
        Some(v) => v.bind(py).clone(),
        None => py.None().into_bound(py),
    }
}

/// Whether the state has `field` (a key of a dict state, an attribute of an object
/// one, "messages" of a bare message list).
fn has_field(state: &Bound<'_, PyAny>, field: &str) -> PyResult<bool> {
    if field == "messages" && state.cast::<pyo3::types::PyList>().is_ok() {
        return Ok(true);
    }
    match state.cast::<PyDict>() {
        Ok(d) => d.contains(field),
        Err(_) => state.hasattr(field),
    }
}

/// A state field a tool is to be given that the state lacks: a mistake in the graph,
/// not in the model's call, so it reaches the caller whatever `handle_tool_errors`
/// says (marked `_ironloop_injection_error`, see `toolnode::tool_results`), as
/// LangGraph's ToolNode raises it: the `KeyError` (or `AttributeError`) of the missing
/// field, or for a bare message list LangGraph's `ValueError` asking for a state dict.
fn injection_error(
    py: Python<'_>,
    tool: &str,
    state: &Bound<'_, PyAny>,
    field: &str,
    e: PyErr,
) -> PyErr {
    let e = if state.cast::<pyo3::types::PyList>().is_ok() {
        pyo3::exceptions::PyValueError::new_err(format!(
            "Invalid input to ToolNode. Tool {tool} requires graph state dict as input. \
             State should contain fields {field}."
        ))
    } else {
        e
    };
    let _ = e
        .value(py)
        .setattr(pyo3::intern!(py, "_ironloop_injection_error"), true);
    e
}

/// What a parameter given the whole state receives: the state, or for a ToolNode given
/// a bare list of messages, `{"messages": [...]}` (LangGraph's: the tool reads a dict
/// state either way).
fn whole_state<'py>(py: Python<'py>, state: &Option<Py<PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let state = opt(py, state);
    if state.cast::<pyo3::types::PyList>().is_err() {
        return Ok(state);
    }
    let d = PyDict::new(py);
    d.set_item("messages", state)?;
    Ok(d.into_any())
}

fn select_field<'py>(state: &Bound<'py, PyAny>, field: &str) -> PyResult<Bound<'py, PyAny>> {
    // A ToolNode given a bare list of messages: that list is the "messages" field.
    if field == "messages" && state.cast::<pyo3::types::PyList>().is_ok() {
        return Ok(state.clone());
    }
    if let Ok(d) = state.cast::<PyDict>() {
        return d.get_item(field)?.ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err(format!(
                "InjectedState({field:?}): the state has no field {field:?}"
            ))
        });
    }
    state.getattr(field)
}

/// A `KeyboardInterrupt` / `SystemExit` raised by a tool run inline beside sibling
/// calls: the run must stop now, not when the siblings are done (see
/// `runtime::note_interrupt`).
fn escape_interrupt(py: Python<'_>, out: &Result<ToolOutput, ToolError>) {
    if let Err(e) = out {
        if let Some(raised) = e.raised().and_then(|h| h.downcast_ref::<PyErr>()) {
            if !raised.is_instance_of::<PyException>(py) {
                super::runtime::note_interrupt(raised.clone_ref(py));
            }
        }
    }
}

/// Turns a Python exception into the error the model sees (type and message), logs
/// its traceback, and carries the exception itself in the error for the caller.
fn record_error(py: Python<'_>, tool: &str, e: PyErr, ctx: &ToolContext) -> ToolError {
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    // Keep the traceback on the exception object: the log shows it, and a re-raise
    // (`handle_tool_errors=False`) carries it.
    if let Some(tb) = e.traceback(py) {
        let _ = e.value(py).setattr("__traceback__", tb);
    }
    if !pauses_the_graph(py, &e) {
        log_exception(py, tool, &ctx.tool_call_id, &e);
    }
    let raised = Some(HostError::new(e));
    if ty == "CancelledError" {
        return ToolError::Cancelled {
            tool: tool.into(),
            raised,
        };
    }
    let message = if msg.is_empty() {
        ty
    } else {
        format!("{ty}: {msg}")
    };
    ToolError::Failed {
        tool: tool.into(),
        message,
        raised,
    }
}

/// `interrupt()` called in a tool, or a subgraph's `Command(graph=Command.PARENT)`:
/// control flow that reaches the graph, not a failure to log.
fn pauses_the_graph(py: Python<'_>, e: &PyErr) -> bool {
    helpers(py).is_ok_and(|h| {
        e.is_instance(py, h.graph_interrupt.bind(py))
            || e.is_instance(py, h.parent_command.bind(py))
    })
}

fn log_exception(py: Python<'_>, tool: &str, call_id: &str, e: &PyErr) {
    let r = (|| -> PyResult<()> {
        let logger = helpers(py)?.logger.bind(py);
        let kw = PyDict::new(py);
        kw.set_item("exc_info", e.value(py))?;
        logger.call_method(
            "warning",
            ("tool %r (call %s) raised", tool, call_id),
            Some(&kw),
        )?;
        Ok(())
    })();
    if let Err(err) = r {
        err.print(py);
    }
}

/// The output of a tool's return value: a string as it is, a `ToolMessage` as the
/// result itself, JSON values as JSON text (objects and lists also as the artifact),
/// and anything else (a `Command`, an object) carried through for the caller, with
/// its `str()` as the text.
///
/// Nothing is changed on the way: a value that has no text (its `str()` raises) or a
/// string that is not valid Unicode (a lone surrogate, which no provider's JSON can
/// carry) is an `Err` with what the model and the user should read, never an empty or
/// altered success. See `docs/decisions.md`, "A tool result that has no text".
pub fn output_from_py(obj: &Bound<'_, PyAny>) -> Result<ToolOutput, String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(ToolOutput::text(unicode_text(s)?.to_owned()));
    }
    let own = obj
        .cast::<PyMessage>()
        .ok()
        .map(|m| m.borrow().inner.clone());
    let lc = match super::lc_messages::active() {
        Some(lc) if own.is_none() && lc.is_message(obj).unwrap_or(false) => {
            super::coerce::message_from_py(obj).ok()
        }
        _ => None,
    };
    if let Some(msg) = own.or(lc) {
        let artifact = match &msg.kind {
            MessageKind::Tool { artifact, .. } => artifact.clone(),
            _ => None,
        };
        return Ok(ToolOutput {
            content: msg.content.clone(),
            artifact,
            return_direct: false,
            payload: Some(Arc::new(msg)),
            child_run: None,
        });
    }
    match json_from_py(obj) {
        Ok(v) => Ok(ToolOutput::json(v)),
        Err(why_not_json) => {
            let kind = type_name(obj);
            let text = match obj.str() {
                Ok(s) => unicode_text(&s)
                    .map_err(|e| format!("the str() of the tool's {kind} result: {e}"))?
                    .to_owned(),
                Err(e) => {
                    return Err(format!(
                        "the tool returned a {kind}, which cannot be turned into text: it is \
                         not JSON data ({why_not_json}), and str() raised {}; return a string \
                         or JSON-compatible data",
                        exception_text(obj.py(), &e)
                    ))
                }
            };
            let mut out = ToolOutput::text(text);
            out.payload = Some(Arc::new(PyPayload(obj.clone().unbind())));
            Ok(out)
        }
    }
}

/// `s` as UTF-8, or why it cannot be: the position of its first lone surrogate.
fn unicode_text<'a>(s: &'a Bound<'_, PyString>) -> Result<&'a str, String> {
    s.to_str().map_err(|e| {
        let at = e
            .value(s.py())
            .getattr("start")
            .and_then(|v| v.extract::<usize>())
            .map_or_else(|_| String::new(), |i| format!(" at position {i}"));
        format!(
            "the tool's result contains a lone surrogate{at}, which is not valid Unicode and \
             cannot be sent to a model; return valid Unicode text (e.g. decode bytes with \
             errors='replace' if losing those characters is acceptable)"
        )
    })
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// `Type: message` of an exception (its `str()` may itself fail).
fn exception_text(py: Python<'_>, e: &PyErr) -> String {
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    match e.value(py).str() {
        Ok(m) if m.len().is_ok_and(|n| n > 0) => format!("{ty}: {}", m.to_string_lossy()),
        _ => ty,
    }
}

impl PyTool {
    /// A sync call runs on the driving thread when the executor allows it
    /// (`ctx.inline`) and either nothing waits behind it or the tool's last call was
    /// quick (see [`INLINE_BUDGET`]); a tools step of quick calls then runs on one
    /// thread with no hand-over per call. Otherwise it goes to the tool pool, so that
    /// a call that blocks never holds up its siblings. A tool quick so far that starts
    /// blocking holds up the siblings after it for two of its calls at most, then its
    /// calls go to the pool again.
    async fn call_sync(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if ctx.inline && (ctx.alone || self.0.quick.load(Ordering::Relaxed)) {
            return attach(|py| {
                let env = PyRunEnv::of(py, &ctx)
                    .map_err(|e| ToolError::failed(&self.0.def.name, e.to_string()))?;
                let started = Instant::now();
                let out = self.0.run_sync(py, &args, &ctx, &env);
                self.0.timed(started, true);
                if !ctx.alone {
                    escape_interrupt(py, &out);
                }
                out
            });
        }
        let (tx, rx) = oneshot::channel();
        let this = self.0.clone();
        let ctx2 = ctx.clone();
        Pool::global().submit(Box::new(move |py| {
            if ctx2.cancel.is_cancelled() || tx.is_closed() {
                return;
            }
            let env = match PyRunEnv::of(py, &ctx2) {
                Ok(env) => env,
                Err(e) => {
                    let _ = tx.send(Err(ToolError::failed(&this.def.name, e.to_string())));
                    return;
                }
            };
            let started = Instant::now();
            let out = this.run_sync(py, &args, &ctx2, &env);
            this.timed(started, false);
            let _ = tx.send(out);
        }));
        rx.await
            .unwrap_or_else(|_| Err(ToolError::cancelled(ctx.tool_name.clone())))
    }

    async fn call_async(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let env = match ctx.host.clone().and_then(|h| h.downcast::<PyRunEnv>().ok()) {
            Some(env) => env,
            None => attach(|py| PyRunEnv::of(py, &ctx))
                .map_err(|e| ToolError::failed(&self.0.def.name, e.to_string()))?,
        };
        self.0.check_usable(&env)?;
        // One context shared by the maker and the converter (no copy of its strings).
        let ctx = Arc::new(ctx);
        let (tool, ctx2) = (self.0.clone(), ctx.clone());
        let make = {
            let (tool, env) = (self.0.clone(), env.clone());
            Box::new(move |py: Python<'_>| {
                let coro = match &env.trace {
                    Some(trace) => trace.bind(py).call_method1(
                        intern!(py, "call_tool_async"),
                        (
                            call_span(py, &ctx),
                            &tool.def.name,
                            &ctx.tool_call_id,
                            tool.target.bind(py),
                            tool.kwargs(py, Call::new(&args, &ctx, &env))?,
                        ),
                    )?,
                    None => tool.call_kw(py, Call::new(&args, &ctx, &env))?,
                };
                Ok((coro.unbind(), None))
            }) as MakeCoro
        };
        let r = run_async(&env, make, move |py, r| match r {
            AsyncResult::Done(res) => tool.outcome(py, res, &ctx2),
            AsyncResult::Cancelled => Err(ToolError::cancelled(tool.def.name.clone())),
        })
        .await;
        r.unwrap_or_else(|e| Err(ToolError::failed(&self.0.def.name, e)))
    }
}

#[async_trait]
impl Tool for PyTool {
    fn definition(&self) -> &ToolDefinition {
        &self.0.def
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if self.0.is_async {
            self.call_async(args, ctx).await
        } else {
            self.call_sync(args, ctx).await
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.0.timeout
    }

    fn label(&self) -> Option<&str> {
        self.0.label.as_deref()
    }
}
