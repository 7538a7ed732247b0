//! The engine of `ironloop.ToolNode`: runs the tool calls of the last AI message
//! through the core executor and builds the tool messages.

use std::sync::Arc;

use futures::FutureExt;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple, PyType};

use super::coerce::message_from_py;
use super::convert::tool_call_from_py;
use super::env::PyRunEnv;
use super::exiting::attach;
use super::graph::current_tool_events;
use super::helpers::helpers;
use super::invalid_args::{call_of, invocation_error};
use super::native_tool::NativeTool;
use super::pytool::{PyPayload, PyTool};
use super::runtime::{block_on, can_drive_inline, cancel_with, drive, runtime, FirstPoll};
use super::tool_outputs::{combine, flatten_list, list_return, StepOutput};
use crate::executor::{error_text, Executor, RunContext, Strategy, ToolResult};
use crate::message::{Content, Message};
use crate::prebuilt::{last_ai_message, result_message, ToolNodeError};
use crate::registry::ToolRegistry;
use crate::tool::{Tool, ToolCall};

#[pyclass(name = "_ToolNodeCore", module = "ironloop._ironloop", frozen)]
pub struct ToolNodeCore {
    pub(crate) executor: Executor,
    pub(crate) handle_errors: Py<PyAny>,
    /// The state key holding the conversation (`ToolNode(messages_key=...)`).
    pub(crate) messages_key: String,
    /// Every tool is a Python function: starting a call only queues it (an async
    /// tool for the event loop, a sync one for the pool), so `ainvoke` may make the
    /// executor's first pass on the caller's loop thread (see `ainvoke`).
    pub(crate) python_only: bool,
    /// Some tool is given the graph's state (an injected state, or a context whose
    /// `state` it may read): only then is the state turned into Python for a call.
    pub(crate) sees_state: bool,
}

/// Parses `strategy=` as ToolNode accepts it: "parallel", "sequential" or
/// ("batched", n).
pub fn parse_strategy(
    strategy: &Bound<'_, PyAny>,
    max_concurrency: Option<usize>,
) -> PyResult<Strategy> {
    let bad = || {
        PyValueError::new_err(format!(
            "strategy must be 'parallel', 'sequential' or ('batched', n) with n >= 1; got {}",
            strategy.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    };
    if max_concurrency == Some(0) {
        return Err(PyValueError::new_err(
            "max_concurrency must be at least 1 (or None)",
        ));
    }
    if let Ok(s) = strategy.cast::<PyString>() {
        return match s.to_str()? {
            "parallel" => Ok(Strategy::Parallel { max_concurrency }),
            "sequential" => Ok(Strategy::Sequential),
            _ => Err(bad()),
        };
    }
    if let Ok(t) = strategy.cast::<PyTuple>() {
        if t.len() == 2 && t.get_item(0)?.extract::<String>().ok().as_deref() == Some("batched") {
            let n: usize = t.get_item(1)?.extract().map_err(|_| bad())?;
            if n >= 1 {
                return Ok(Strategy::Batched { size: n });
            }
        }
    }
    Err(bad())
}

/// The calls a ToolNode runs: the last AI message's, read from it where they are (a
/// message of 10,000 calls is not copied first), or the one `call=` names.
enum Calls {
    Of(Arc<Message>),
    One([ToolCall; 1]),
}

impl Calls {
    fn get(&self) -> &[ToolCall] {
        match self {
            Calls::Of(m) => m.tool_calls(),
            Calls::One(c) => c,
        }
    }
}

struct Prepared {
    calls: Calls,
    run: RunContext,
    list_in: bool,
}

impl ToolNodeCore {
    fn prepare(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        event_loop: Option<Py<PyAny>>,
        store: Option<Py<PyAny>>,
        on_progress: Option<Py<PyAny>>,
        call: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Prepared> {
        let list_in = input.cast::<PyList>().is_ok();
        // `call=`: that one call (what a wrap_tool_call handler runs), as a `Send` does;
        // the input is then only the state tools see (any shape), never read here.
        let calls = match call {
            Some(c) => Calls::One([tool_call_from_py(c)?]),
            None => Calls::Of(self.last_ai_message(input)?),
        };
        let env = PyRunEnv::capture(
            py,
            event_loop,
            Some(input.clone().unbind()),
            store,
            on_progress,
            None,
            None,
        )?;
        let run = RunContext {
            progress: env.progress_fn(),
            tracer: env.call_tracer(py),
            host: Some(env),
            events: current_tool_events(py)?,
            ..Default::default()
        };
        Ok(Prepared {
            calls,
            run,
            list_in,
        })
    }

    /// The last AI message of a ToolNode's input: a list of messages, or a state (a
    /// dict or an object) whose `messages_key` holds them.
    fn last_ai_message(&self, input: &Bound<'_, PyAny>) -> PyResult<Arc<Message>> {
        let key = self.messages_key.as_str();
        let messages = if let Ok(d) = input.cast::<PyDict>() {
            d.get_item(key)?.ok_or_else(|| {
                PyValueError::new_err(format!(
                    "ToolNode input must be a list of messages or a state dict with a \
                     {key:?} key"
                ))
            })?
        } else if input.cast::<PyList>().is_ok() {
            input.clone()
        } else if let Ok(m) = input.getattr(key) {
            m
        } else {
            return Err(PyTypeError::new_err(format!(
                "ToolNode input must be a list of messages or a state with {key:?}; got {}",
                input.get_type().name()?
            )));
        };
        let list = messages.cast::<PyList>().map_err(|_| {
            PyTypeError::new_err(format!("the {key:?} of a ToolNode input must be a list"))
        })?;
        let messages = list
            .iter()
            .map(|m| message_from_py(&m))
            .collect::<PyResult<Vec<_>>>()?;
        last_ai_message(messages.iter())
            .cloned()
            .ok_or_else(|| PyValueError::new_err(ToolNodeError::NoAiMessage.to_string()))
    }
}

pub fn command_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    Ok(helpers(py)?.command.bind(py))
}

pub fn is_graph_interrupt(py: Python<'_>, e: &PyErr) -> bool {
    helpers(py)
        .map(|h| {
            e.value(py)
                .is_instance(h.graph_interrupt.bind(py))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

/// Whether `e` stops the run without failing it: an `interrupt()` (the run pauses) or
/// the `GraphDrained` of a graph run inside the tool that was drained (the run around
/// it drains too, as LangGraph's `GraphBubbleUp`).
pub fn is_graph_pause(py: Python<'_>, e: &PyErr) -> bool {
    is_graph_interrupt(py, e)
        || helpers(py).is_ok_and(|h| {
            e.value(py)
                .is_instance(h.graph_drained.bind(py))
                .unwrap_or(false)
        })
}

/// Whether `e` is an `ironloop.errors.GraphBubbleUp` (what a node raises to tell
/// the engine something, LangGraph's base of interrupts and parent commands): a tool
/// node re-raises it whatever its `handle_tool_errors`. Looked up on the error path
/// only.
fn is_bubble_up(py: Python<'_>, e: &PyErr) -> bool {
    py.import(pyo3::intern!(py, "ironloop.errors"))
        .and_then(|m| m.getattr(pyo3::intern!(py, "GraphBubbleUp")))
        .and_then(|cls| e.value(py).is_instance(&cls))
        .unwrap_or(false)
}

/// Whether `e` is the `ValidationError` of a resume value that did not fit its
/// `interrupt(..., response_schema=)` (marked by `ironloop.errors.mark_invalid_resume`,
/// LangGraph's attribute): the model cannot fix it, so no error policy handles it.
pub fn is_invalid_resume(py: Python<'_>, e: &PyErr) -> bool {
    e.value(py)
        .getattr(pyo3::intern!(py, "_langgraph_invalid_resume"))
        .and_then(|v| v.is_truthy())
        .unwrap_or(false)
}

/// Whether `e` says a tool's injected state field is missing (`pytool::injection_error`):
/// a mistake in the graph, for the caller, never a message for the model.
fn is_injection_error(py: Python<'_>, e: &PyErr) -> bool {
    e.value(py)
        .getattr(pyo3::intern!(py, "_ironloop_injection_error"))
        .and_then(|v| v.is_truthy())
        .unwrap_or(false)
}

/// The outputs of a step, in call order, with `handle_tool_errors` applied to
/// failures: tool messages and the `Command`s tools returned (a list return
/// flattened, see `tool_outputs`; `key` is the messages key its commands answer
/// in, `list_in` whether the node was given a list of messages). An `interrupt()`
/// (or a drain) inside a tool is raised again, whatever the policy: it pauses the
/// graph, it is not a failure. `calls` (run through `registry`) are the
/// calls of `results`, in the same order: invalid arguments are reported with the
/// call's own (see `invalid_args`).
pub fn tool_results(
    py: Python<'_>,
    handle: &Bound<'_, PyAny>,
    results: Vec<ToolResult>,
    calls: &[ToolCall],
    registry: &ToolRegistry,
    key: &str,
    list_in: bool,
) -> PyResult<Vec<StepOutput>> {
    let mut out = Vec::with_capacity(results.len());
    for (index, mut r) in results.into_iter().enumerate() {
        let payload = match &r.outcome {
            Ok(o) => o
                .payload
                .as_ref()
                .and_then(|p| p.downcast_ref::<PyPayload>())
                .map(|PyPayload(obj)| obj.clone_ref(py)),
            Err(_) => None,
        };
        if let Some(obj) = payload {
            let obj = obj.into_bound(py);
            // A tool may return a `Command` (a graph update), not a message.
            if obj.is_instance(command_class(py)?)? {
                let checked = checked_command(&obj, &r, key, list_in)?;
                out.push(StepOutput::Command(checked.unbind()));
                continue;
            }
            if let Some(items) = list_return(&obj)? {
                match flatten_list(items, &r, key)? {
                    Ok(items) => {
                        out.extend(items);
                        continue;
                    }
                    Err(e) => r.outcome = Err(e),
                }
            }
        }
        // A message the node makes (of a result or a failure), not one the tool
        // returned.
        let made = !r
            .outcome
            .as_ref()
            .is_ok_and(|o| o.payload.as_ref().is_some_and(|p| p.is::<Arc<Message>>()));
        let msg = match &r.outcome {
            Ok(_) => result_message(r),
            Err(e @ crate::tool::ToolError::Unusable { .. }) => return Err(PyErr::from(e)),
            Err(e) => {
                // LangChain's `ToolInvocationError` for invalid arguments (the engine
                // raises no exception of its own for them).
                let invalid = match (e, call_of(calls, index, &r.tool_call_id)) {
                    (crate::tool::ToolError::InvalidArgs { reason, .. }, Some(call)) => {
                        Some(invocation_error(py, registry, call, reason)?)
                    }
                    _ => None,
                };
                let original = e
                    .raised()
                    .and_then(|h| h.downcast_ref::<PyErr>())
                    .or(invalid.as_ref());
                // A pause (any `GraphBubbleUp`: an interrupt, a parent command), a
                // resume value that does not fit its interrupt's schema, or a
                // KeyboardInterrupt / SystemExit: for the caller, never a message for
                // the model.
                let for_caller = |o: &&PyErr| {
                    is_graph_pause(py, o)
                        || is_bubble_up(py, o)
                        || is_invalid_resume(py, o)
                        || is_injection_error(py, o)
                        || !o.is_instance_of::<PyException>(py)
                };
                if let Some(o) = original.filter(for_caller) {
                    return Err(o.clone_ref(py));
                }
                match error_content(py, handle, e, original)? {
                    Some(text) => {
                        let mut m = r.to_message();
                        m.content = Content::Text(text);
                        Arc::new(m)
                    }
                    None => Arc::new(r.to_message()),
                }
            }
        };
        out.push(StepOutput::Message { msg, made });
    }
    Ok(out)
}

/// A `Command` a tool returned, checked against the node's input and its tool message
/// answering the call named after the tool, as LangGraph's ToolNode does
/// (`ironloop._tool_command`, looked up on this rare path only). One that does not fit
/// raises, for the caller.
fn checked_command<'py>(
    obj: &Bound<'py, PyAny>,
    r: &ToolResult,
    key: &str,
    list_in: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    py.import(pyo3::intern!(py, "ironloop._tool_command"))?
        .getattr(pyo3::intern!(py, "checked_command"))?
        .call1((obj, &r.tool_call_id, &r.name, key, list_in))
}

/// Builds a standalone ToolNode's output (see `tool_outputs::combine`).
fn finish(
    py: Python<'_>,
    handle: &Bound<'_, PyAny>,
    (results, calls): (Vec<ToolResult>, &[ToolCall]),
    registry: &ToolRegistry,
    list_in: bool,
    key: &str,
) -> PyResult<Py<PyAny>> {
    let outputs = tool_results(py, handle, results, calls, registry, key, list_in)?;
    combine(py, outputs, list_in, key)
}

/// Runs `calls` for a sync Python caller and waits for their results: driven on this
/// thread when it may drive one; called from a node of a run this thread drives (a
/// `wrap_tool_call` handler), a lone sync tool finishes in the first poll, here, with
/// no hand-over to another thread, and whatever has to wait moves to the runtime.
pub(crate) fn execute_blocking<C: CallList>(
    py: Python<'_>,
    exec: Executor,
    calls: C,
    mut run: RunContext,
) -> PyResult<(Vec<ToolResult>, C)> {
    if can_drive_inline() {
        run.inline = true;
        let cancel = run.cancel.clone();
        let results = drive(
            py,
            exec.execute(calls.get(), &run),
            &cancel,
            FirstPoll::HoldingGil,
        )?;
        return Ok((results, calls));
    }
    run.inline = calls.get().len() == 1;
    let cancel = run.cancel.clone();
    let mut fut = Box::pin(async move {
        let results = exec.execute(calls.get(), &run).await;
        (results, calls)
    });
    let first = {
        let _enter = runtime().enter();
        fut.as_mut().now_or_never()
    };
    match first {
        Some(done) => Ok(done),
        None => block_on(py, fut, cancel),
    }
}

/// Calls held by their owner while they run (see [`execute_blocking`]).
pub(crate) trait CallList: Send + 'static {
    fn get(&self) -> &[ToolCall];
}

impl CallList for Calls {
    fn get(&self) -> &[ToolCall] {
        Calls::get(self)
    }
}

impl CallList for [ToolCall; 1] {
    fn get(&self) -> &[ToolCall] {
        self
    }
}

/// The content of an error result under the `handle_tool_errors` policy: `None` for
/// the default text, `Some(text)` for a custom one; an `Err` re-raises.
fn error_content(
    py: Python<'_>,
    handle: &Bound<'_, PyAny>,
    e: &crate::tool::ToolError,
    original: Option<&PyErr>,
) -> PyResult<Option<String>> {
    let exc = || {
        original
            .map(|o| o.clone_ref(py))
            .unwrap_or_else(|| PyErr::from(e))
    };
    if let Ok(b) = handle.cast::<PyBool>() {
        return if b.is_true() {
            handled_text(py, e, original)
        } else {
            Err(exc())
        };
    }
    if let Ok(s) = handle.cast::<PyString>() {
        return Ok(Some(s.to_str()?.to_owned()));
    }
    if handle.cast::<PyType>().is_ok() || handle.cast::<PyTuple>().is_ok() {
        let err = exc();
        return if err.value(py).is_instance(handle)? {
            handled_text(py, e, original)
        } else {
            Err(err)
        };
    }
    if handle.is_callable() {
        let err = exc();
        let text = handle.call1((err.value(py),))?;
        return Ok(Some(text.str()?.to_string()));
    }
    Ok(Some(error_text(e)))
}

/// The text of a handled error, as LangGraph's ToolNode words it (the model reads it,
/// and programs ported from LangGraph match on it): a call to a tool the node lacks
/// names the tools there are; a tool's own exception is shown by its `repr`; invalid
/// arguments by LangChain's `ToolInvocationError` text (`original` is that error).
/// `None` keeps the executor's text (timeouts, refusals, Rust tools).
fn handled_text(
    py: Python<'_>,
    e: &crate::tool::ToolError,
    original: Option<&PyErr>,
) -> PyResult<Option<String>> {
    use crate::tool::ToolError;
    Ok(match (e, original) {
        (ToolError::NotFound { tool, available }, _) => Some(format!(
            "Error: {tool} is not a valid tool, try one of [{available}]."
        )),
        (ToolError::Failed { .. }, Some(o)) => Some(format!(
            "Error: {}\n Please fix your mistakes.",
            o.value(py).repr()?
        )),
        (ToolError::InvalidArgs { .. }, Some(o)) => Some(o.value(py).str()?.to_string()),
        _ => None,
    })
}

#[pymethods]
impl ToolNodeCore {
    #[new]
    #[pyo3(signature = (tools, *, strategy, max_concurrency = None, handle_tool_errors,
                        messages_key = None, deny = None, allow_only = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tools: &Bound<'_, PyAny>,
        strategy: &Bound<'_, PyAny>,
        max_concurrency: Option<usize>,
        handle_tool_errors: Py<PyAny>,
        messages_key: Option<String>,
        deny: Option<Vec<String>>,
        allow_only: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let registry = Arc::new(ToolRegistry::new());
        let (mut python_only, mut sees_state) = (true, false);
        for t in tools.try_iter()? {
            let t = t?;
            // A Rust tool is registered as itself: its calls never enter Python.
            let tool: Arc<dyn Tool> = match t.cast::<NativeTool>() {
                Ok(native) => {
                    python_only = false;
                    native.get().tool.clone()
                }
                Err(_) => {
                    let tool = PyTool::from_py(&t)?;
                    sees_state |= tool.sees_state();
                    Arc::new(tool)
                }
            };
            registry.register(tool).map_err(PyErr::from)?;
        }
        registry.set_permissions(deny.unwrap_or_default(), allow_only);
        let executor =
            Executor::new(registry).with_strategy(parse_strategy(strategy, max_concurrency)?);
        Ok(ToolNodeCore {
            executor,
            handle_errors: handle_tool_errors,
            messages_key: messages_key.unwrap_or_else(|| "messages".to_owned()),
            python_only,
            sees_state,
        })
    }

    /// `call=` runs that one call (with `input` as the state tools see);
    /// `handle_tool_errors=` replaces the node's error policy for this invocation
    /// (how `create_agent` lets a tool's exception reach `wrap_tool_call` hooks).
    #[pyo3(signature = (input, *, store = None, on_progress = None, call = None,
                        handle_tool_errors = None))]
    #[allow(clippy::too_many_arguments)]
    fn invoke(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        store: Option<Py<PyAny>>,
        on_progress: Option<Py<PyAny>>,
        call: Option<&Bound<'_, PyAny>>,
        handle_tool_errors: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let p = self.prepare(py, input, None, store, on_progress, call)?;
        let mut run = p.run;
        // Python tools only wait here (for the pool or the event loop).
        run.local = self.python_only;
        let calls = p.calls;
        let (results, calls) = execute_blocking(py, self.executor.clone(), calls, run)?;
        let handle = handle_tool_errors.unwrap_or_else(|| self.handle_errors.clone_ref(py));
        finish(
            py,
            handle.bind(py),
            (results, calls.get()),
            self.executor.registry(),
            p.list_in,
            &self.messages_key,
        )
    }

    /// Starts the calls and returns an awaitable; `event_loop` is the caller's running
    /// loop, where async tools run.
    #[pyo3(signature = (input, event_loop, *, store = None, on_progress = None, call = None,
                        handle_tool_errors = None))]
    #[allow(clippy::too_many_arguments)]
    fn ainvoke<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        event_loop: Py<PyAny>,
        store: Option<Py<PyAny>>,
        on_progress: Option<Py<PyAny>>,
        call: Option<&Bound<'py, PyAny>>,
        handle_tool_errors: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = self.prepare(py, input, Some(event_loop), store, on_progress, call)?;
        let exec = self.executor.clone();
        let handle = handle_tool_errors.unwrap_or_else(|| self.handle_errors.clone_ref(py));
        let key = self.messages_key.clone();
        let (calls, mut run, list_in) = (p.calls, p.run, p.list_in);
        run.local = self.python_only;
        // Cancelling the awaitable drops this future: cancel the run with it.
        let cancel = run.cancel.clone();
        let guard = run.cancel.clone().drop_guard();
        let registry = self.executor.registry().clone();
        let mut work = Box::pin(async move {
            let results = exec.execute(calls.get(), &run).await;
            (results, calls)
        });
        // Python tools only: the first pass over the calls runs here, on the loop
        // thread, where the GIL is held already. It queues every async call for one
        // wake-up of this loop (and every sync one for the pool) without a runtime
        // thread taking the GIL from the loop for each batch it queues.
        let first = if self.python_only {
            let _enter = runtime().enter();
            work.as_mut().now_or_never()
        } else {
            None
        };
        let fut = crate::bindings::awaitable::future_into_py(py, async move {
            let (results, calls) = match first {
                Some(done) => done,
                None => work.await,
            };
            guard.disarm();
            attach(|py| {
                let results = (results, calls.get());
                finish(py, handle.bind(py), results, &registry, list_in, &key)
            })
        })?;
        cancel_with(&fut, cancel)?;
        Ok(fut)
    }

    /// The tool names, in registration order.
    fn tool_names(&self) -> Vec<String> {
        self.executor.registry().names()
    }

    /// Replaces the deny and allow lists; the node's next step (in a graph, or a
    /// standalone call) sees them. Enforced here: a denied call never reaches its tool.
    #[pyo3(signature = (deny, allow_only = None))]
    fn set_permissions(&self, deny: Vec<String>, allow_only: Option<Vec<String>>) {
        self.executor.registry().set_permissions(deny, allow_only);
    }

    /// `(deny, allow_only)` as they stand (sorted; `allow_only` is `None` when unset).
    fn permissions(&self) -> (Vec<String>, Option<Vec<String>>) {
        self.executor.registry().permissions()
    }

    /// The names of the tools the lists let run: the ones a model is offered.
    fn runnable_names(&self) -> Vec<String> {
        self.executor.registry().runnable_names()
    }
}
