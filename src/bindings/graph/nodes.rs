//! Python nodes (sync, async, dual) and the tool node on the core step loop; a
//! node's exception becomes the run's failure with the exception kept inside it.

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use pyo3::exceptions::asyncio::CancelledError;
use pyo3::exceptions::PyBaseException;
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::Value;
use tokio::sync::oneshot;

use super::super::aio::{run_async, AsyncResult, MakeCoro};
use super::super::convert::tool_call_from_py;
use super::super::env::PyRunEnv;
use super::super::errors::Class;
use super::super::exiting::attach;
use super::super::helpers::helpers;
use super::super::messages::messages_to_py;
use super::super::model_stream::stream_chunks;
use super::super::pool::Pool;
use super::super::tool_outputs::split;
use super::super::toolnode::{is_graph_interrupt, is_invalid_resume, tool_results, ToolNodeCore};
use super::describe::Wants;
use super::returned::{message_meta, stream_returned_messages};
use super::task::{
    call_in, call_in_task_with, emit_chunk, task_context_with, Pushed, ScratchParts, TaskState,
};
use super::values::{host, val_to_py, Shared};
use crate::error::HostError;
use crate::executor::RunContext;
use crate::graph::{
    modes, GraphError, InterruptInfo, NodeFailure, NodeOutput, NodeRunner, StateView, TaskContext,
    Val,
};
use crate::message::Message;
use crate::prebuilt::{answer_output, ToolNode};
use crate::tool::ToolCall;

/// What running a node gives: its output, or why it failed.
type NodeResult = Result<NodeOutput, NodeFailure>;

/// Whether `e` is a subgraph's `Command(graph=Command.PARENT)` (`ParentCommand`).
pub(super) fn is_parent_command(py: Python<'_>, e: &PyErr) -> bool {
    helpers(py).is_ok_and(|h| e.is_instance(py, h.parent_command.bind(py)))
}

/// A node error as the run's failure; the original exception travels inside it.
pub(super) fn node_failure(py: Python<'_>, ctx: &TaskContext, e: PyErr) -> NodeFailure {
    if is_graph_interrupt(py, &e) {
        // A graph nested in the node stopped at a static breakpoint (`GraphCore::output`).
        let at_breakpoint = e.value(py).getattr("breakpoint");
        if at_breakpoint.is_ok_and(|b| b.is_truthy().unwrap_or(false)) {
            return NodeFailure::Paused;
        }
        if let Some(qs) = nested_questions(e.value(py)) {
            return NodeFailure::Nested(qs);
        }
        let v = e
            .value(py)
            .getattr("value")
            .map(host)
            .unwrap_or(Val::Json(Value::Null));
        return NodeFailure::Interrupt(v);
    }
    let e = if e.is_instance_of::<CancelledError>(py) {
        node_cancelled(py, &ctx.node, e)
    } else {
        e
    };
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let message = format!("{ty}: {}", e.value(py));
    NodeFailure::Error(node_error(py, ctx, message, e))
}

/// The questions, with their ids, of the graph nested in the node whose pause `e` (a
/// `GraphInterrupt`) is (see [`nested_pause`]); `None` for the node's own
/// `interrupt()`.
fn nested_questions(e: &Bound<'_, PyBaseException>) -> Option<Vec<(String, Val)>> {
    let qs = e.getattr(intern!(e.py(), NESTED_ATTR)).ok()?;
    let qs: Vec<(String, Bound<'_, PyAny>)> = qs.extract().ok()?;
    (!qs.is_empty()).then(|| qs.into_iter().map(|(id, v)| (id, host(v))).collect())
}

/// Where a nested graph's pause keeps its questions on the `GraphInterrupt` it raises
/// in its parent's task (see [`nested_pause`]).
const NESTED_ATTR: &str = "_nested";

/// The `GraphInterrupt` a graph nested in a task (run with its parent's checkpointer)
/// raises when `interrupts` (its `interrupt()`s) paused it: the task pauses on each of
/// them with its id, as LangGraph's parent shows each question of its subgraph's
/// parallel tasks (see `graph::nested`). Its `value` is the first question's, for
/// code that reads one.
pub(super) fn nested_pause(py: Python<'_>, interrupts: &[InterruptInfo]) -> PyResult<PyErr> {
    let first = match interrupts.first() {
        Some(i) => val_to_py(py, &i.value)?,
        None => py.None().into_bound(py),
    };
    let e = helpers(py)?.graph_interrupt.bind(py).call1((first,))?;
    let qs = interrupts
        .iter()
        .map(|i| Ok((i.id.as_str(), val_to_py(py, &i.value)?)))
        .collect::<PyResult<Vec<_>>>()?;
    e.setattr(NESTED_ATTR, PyTuple::new(py, qs)?)?;
    Ok(PyErr::from_value(e))
}

/// A `CancelledError` the node's own code raised, as LangGraph's `NodeCancelledError`
/// (an `Exception`, caused by it): a failure of the node, not a tear-down of the run.
fn node_cancelled(py: Python<'_>, node: &str, e: PyErr) -> PyErr {
    let made = Class::NodeCancelled
        .type_object(py)
        .and_then(|t| t.call1((node,)));
    match made {
        Ok(err) => {
            let err = PyErr::from_value(err);
            err.set_cause(py, Some(e));
            err
        }
        Err(made) => made,
    }
}

/// `ctx`'s failure with the Python exception `e` kept whole (traceback included).
pub(super) fn node_error(
    py: Python<'_>,
    ctx: &TaskContext,
    message: String,
    e: PyErr,
) -> GraphError {
    if let Some(tb) = e.traceback(py) {
        let _ = e.value(py).setattr("__traceback__", tb);
    }
    let shown = e.value(py).repr().map(|r| r.to_string());
    let refused = is_invalid_resume(py, &e);
    let mut host = HostError::new(e);
    if refused {
        host = host.refused_resume();
    }
    let host = match shown {
        Ok(r) => host.shown_as(r),
        Err(_) => host,
    };
    ctx.node_error(message, Some(host))
}

pub(super) fn env_of(ctx: &TaskContext) -> Result<Arc<PyRunEnv>, NodeFailure> {
    ctx.host
        .clone()
        .and_then(|h| h.downcast::<PyRunEnv>().ok())
        .ok_or_else(|| {
            NodeFailure::Error(GraphError::Config(
                "a Python node ran outside a Python run".into(),
            ))
        })
}

// ---------------------------------------------------------------------------------
// Nodes

pub(super) struct PyNode {
    pub(super) name: String,
    pub(super) func: Py<PyAny>,
    pub(super) is_async: bool,
    /// An async variant, used under `ainvoke` (e.g. a model's `ainvoke`).
    pub(super) afunc: Option<Py<PyAny>>,
    pub(super) wants: Wants,
    /// Makes the node's input from the state dict (a dataclass / pydantic schema).
    pub(super) factory: Option<Py<PyAny>>,
    pub(super) shared: Arc<Shared>,
}

impl PyNode {
    /// The function's arguments: its input (the `Send` argument, or the state as its
    /// schema shows it) and the keywords it takes.
    fn arguments<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
        arg: &Option<Val>,
        env: &PyRunEnv,
    ) -> PyResult<(Bound<'py, PyTuple>, Option<Bound<'py, PyDict>>)> {
        let input = match arg {
            Some(a) => val_to_py(py, a)?,
            None => self.shared.node_input(py, view, &self.factory)?,
        };
        let w = self.wants;
        // Most nodes take the state alone: no keyword dict made for them.
        if !(w.config || w.store || w.writer || (w.send_state && arg.is_some())) {
            return Ok((PyTuple::new(py, [input])?, None));
        }
        let kw = PyDict::new(py);
        if self.wants.config {
            kw.set_item("config", env.config.as_ref().map(|c| c.bind(py).clone()))?;
        }
        if self.wants.store {
            kw.set_item(
                "store",
                self.shared.store.as_ref().map(|s| s.bind(py).clone()),
            )?;
        }
        if self.wants.writer {
            kw.set_item("writer", helpers(py)?.task_writer.bind(py))?;
        }
        if self.wants.send_state && arg.is_some() {
            let state = self.shared.node_input(py, view, &self.factory)?;
            kw.set_item(intern!(py, "send_state"), state)?;
        }
        let kw = if kw.is_empty() { None } else { Some(kw) };
        Ok((PyTuple::new(py, [input])?, kw))
    }

    /// Calls the function in the task's context. With `coroutine` (an async
    /// function): what it returned, a coroutine, and that context (where the coroutine
    /// is to run); otherwise its result (and no context).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
        arg: &Option<Val>,
        ctx: &TaskContext,
        env: &PyRunEnv,
        pushed: &Pushed,
        coroutine: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        let (args, kw) = self.arguments(py, view, arg, env)?;
        let parts = self.parts(py, view, pushed);
        if !coroutine {
            let f = self.traced(py, env, ctx)?;
            let r = call_in_task_with(py, env, ctx, parts, &f, args, kw.as_ref())?;
            return Ok((r, None));
        }
        let (context, _) = task_context_with(py, env, ctx, parts)?;
        let r = call_in(py, &context, &self.traced(py, env, ctx)?, args, kw.as_ref())?;
        Ok((r, Some(context)))
    }

    /// What the task's scratchpad is made with: `pushed`, and the state the node reads.
    fn parts(&self, py: Python<'_>, view: &StateView, pushed: &Pushed) -> ScratchParts {
        ScratchParts {
            pushed: pushed.clone(),
            state: Some(TaskState::new(py, view, &self.shared, &self.factory)),
        }
    }

    /// The node's function or, when the run reports to LangChain callbacks (its config
    /// has `callbacks`: the run's own chain run's, see `ironloop/_callbacks.py`), the
    /// function wrapped to report the node's chain run under it, as LangGraph's: with
    /// the task's metadata (`langgraph_step`, `langgraph_node`, ...: see
    /// `returned::message_meta`), made only then.
    fn traced<'py>(
        &self,
        py: Python<'py>,
        env: &PyRunEnv,
        ctx: &TaskContext,
    ) -> PyResult<Bound<'py, PyAny>> {
        let f = self.func.bind(py).clone();
        if !has_callbacks(py, env)? {
            return Ok(f);
        }
        let meta = message_meta(py, env, ctx)?;
        meta.set_item(intern!(py, "langgraph_node"), self.name.as_str())?;
        helpers(py)?
            .node_call
            .bind(py)
            .call1((self.name.as_str(), f, meta))
    }

    pub(super) fn finish(
        &self,
        py: Python<'_>,
        r: PyResult<Bound<'_, PyAny>>,
        ctx: &TaskContext,
        pushed: &Pushed,
    ) -> Result<NodeOutput, NodeFailure> {
        // A subgraph run by this node sent it a `Command(graph=Command.PARENT)`.
        let r = match r {
            Err(e) if is_parent_command(py, &e) => e.value(py).getattr(intern!(py, "command")),
            r => r,
        };
        let r = r.map_err(|e| node_failure(py, ctx, e))?;
        let mut out = NodeOutput::default();
        // What the node pushed while it ran (`push_message`) comes before what it
        // returned.
        let pushed = std::mem::take(&mut *pushed.lock().unwrap_or_else(|p| p.into_inner()));
        for (channel, value) in pushed {
            if channel == super::task::CACHED_MARK {
                out.cached = true;
                continue;
            }
            let write = PyDict::new(py);
            let list =
                pyo3::types::PyList::new(py, [value]).map_err(|e| node_failure(py, ctx, e))?;
            write
                .set_item(channel, list)
                .map_err(|e| node_failure(py, ctx, e))?;
            self.shared
                .write_output(py, &self.name, write.as_any(), &mut out)
                .map_err(|e| node_failure(py, ctx, e))?;
        }
        returned(&self.shared, py, &self.name, &r, out, ctx)
    }
}

/// `out` with what a node returned (`value`: its update, goto or command) written, and
/// that update as the `updates` stream shows it: how a Python node's call ends, and a
/// tool node's hand-off to the parent graph.
pub(super) fn returned(
    shared: &Shared,
    py: Python<'_>,
    name: &str,
    value: &Bound<'_, PyAny>,
    mut out: NodeOutput,
    ctx: &TaskContext,
) -> Result<NodeOutput, NodeFailure> {
    let fail = |e| node_failure(py, ctx, e);
    // Only the `updates` and `messages` streams look at it: a run without them
    // builds no Python object for it (a step's update would be a new dict).
    if !shows_update(ctx) {
        shared
            .write_output(py, name, value, &mut out)
            .map_err(fail)?;
        return Ok(out);
    }
    let written = shared.output(py, name, value, &mut out).map_err(fail)?;
    out.update = shared.shown_update(py, written).map_err(fail)?.map(host);
    Ok(out)
}

/// Whether the run's stream shows what nodes returned (its `updates` or `messages`
/// mode): otherwise a task's output is its writes alone.
pub(super) fn shows_update(ctx: &TaskContext) -> bool {
    ctx.stream
        .as_ref()
        .is_some_and(|s| s.wants(modes::UPDATES | modes::MESSAGES))
}

/// A node whose returned messages go to the `messages` stream (when the run asks for
/// it) once it has run: what a Python node and a tool node both do, written once.
pub(super) struct ShowsMessages<N>(pub(super) N);

#[async_trait]
impl<N: NodeRunner> NodeRunner for ShowsMessages<N> {
    /// A run whose stream has no `messages` mode (decided by the run's stream, the
    /// same for every task) gets the node's own future: no state or context kept for
    /// after it, and no second future around it on every task.
    fn run<'a, 'f>(
        &'a self,
        view: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> BoxFuture<'f, NodeResult>
    where
        'a: 'f,
        Self: 'f,
    {
        if !wants_messages(&ctx) {
            return self.0.run(view, arg, ctx);
        }
        Box::pin(async move {
            let given = view.clone();
            let out = self.0.run(view, arg, ctx.clone()).await?;
            shown_in_messages_mode(&given, &ctx, out)
        })
    }

    fn answers_when_steered(&self) -> bool {
        self.0.answers_when_steered()
    }
}

/// `out`, after its new messages went to the `messages` stream (if it is asked for).
fn shown_in_messages_mode(
    given: &StateView,
    ctx: &TaskContext,
    out: NodeOutput,
) -> Result<NodeOutput, NodeFailure> {
    if !wants_messages(ctx) {
        return Ok(out);
    }
    attach(|py| {
        stream_returned_messages(py, given, ctx, &out).map_err(|e| node_failure(py, ctx, e))
    })?;
    Ok(out)
}

/// Whether the run's stream has the `messages` mode.
fn wants_messages(ctx: &TaskContext) -> bool {
    ctx.stream
        .as_ref()
        .is_some_and(|s| s.wants(modes::MESSAGES))
}

/// Runs the function: on the event loop (async), inline or on the pool (sync). The
/// messages it returns are shown by [`ShowsMessages`], which the graph wraps it in.
#[async_trait]
impl NodeRunner for PyNode {
    async fn run(&self, view: StateView, arg: Option<Val>, ctx: TaskContext) -> NodeResult {
        let env = env_of(&ctx)?;
        let use_async = self.is_async || (self.afunc.is_some() && env.caller_loop);
        if use_async {
            let func = match (&self.afunc, env.caller_loop) {
                (Some(a), true) => attach(|py| a.clone_ref(py)),
                _ => attach(|py| self.func.clone_ref(py)),
            };
            let this = self.job(func);
            let (ctx2, env2) = (ctx.clone(), env.clone());
            let this2 = self.job(attach(|py| this.func.clone_ref(py)));
            let ctx3 = ctx.clone();
            let pushed = Pushed::default();
            let pushed2 = pushed.clone();
            let make: MakeCoro = Box::new(move |py| {
                let n = this.node(py);
                let (coro, context) = n.call(py, &view, &arg, &ctx2, &env2, &pushed, true)?;
                Ok((coro.unbind(), context.map(Bound::unbind)))
            });
            let call = run_async(&env, make, move |py, r| {
                let n = this2.node(py);
                match r {
                    AsyncResult::Done(res) => n.finish(py, res, &ctx3, &pushed2),
                    AsyncResult::Cancelled => Err(NodeFailure::Error(GraphError::Cancelled)),
                }
            });
            // A sibling failed: the coroutine is cancelled (dropping the call cancels its
            // asyncio task), as LangGraph. A sync node cannot be stopped and finishes.
            let r = tokio::select! {
                r = call => r,
                _ = ctx.cancel.cancelled() => return Err(NodeFailure::Error(GraphError::Cancelled)),
            };
            return r.unwrap_or_else(|e| Err(NodeFailure::Error(ctx.node_error(e, None))));
        }
        let pushed = Pushed::default();
        if ctx.inline {
            return attach(|py| {
                let r = self.call(py, &view, &arg, &ctx, &env, &pushed, false);
                let r = r.map(|(r, _)| r);
                self.finish(py, r, &ctx, &pushed)
            });
        }
        let (tx, rx) = oneshot::channel();
        let this = self.job(attach(|py| self.func.clone_ref(py)));
        let ctx2 = ctx.clone();
        Pool::global().submit(Box::new(move |py| {
            if tx.is_closed() {
                return;
            }
            let n = this.node(py);
            let r = n.call(py, &view, &arg, &ctx2, &env, &pushed, false);
            let r = r.map(|(r, _)| r);
            let _ = tx.send(n.finish(py, r, &ctx2, &pushed));
        }));
        rx.await
            .unwrap_or(Err(NodeFailure::Error(GraphError::Cancelled)))
    }
}

impl PyNode {
    /// What a job on another thread needs of this node, calling `func`.
    fn job(&self, func: Py<PyAny>) -> PyNodeRef {
        PyNodeRef {
            func,
            name: self.name.clone(),
            wants: self.wants,
            factory: attach(|py| self.factory.as_ref().map(|f| f.clone_ref(py))),
            shared: self.shared.clone(),
        }
    }
}

/// The parts of a node a job on another thread needs.
pub(super) struct PyNodeRef {
    pub(super) func: Py<PyAny>,
    pub(super) name: String,
    pub(super) wants: Wants,
    pub(super) factory: Option<Py<PyAny>>,
    pub(super) shared: Arc<Shared>,
}

impl PyNodeRef {
    pub(super) fn node(&self, py: Python<'_>) -> PyNode {
        PyNode {
            name: self.name.clone(),
            func: self.func.clone_ref(py),
            is_async: false,
            afunc: None,
            wants: self.wants,
            factory: self.factory.as_ref().map(|f| f.clone_ref(py)),
            shared: self.shared.clone(),
        }
    }
}

/// An agent's model step (`create_react_agent`'s `"agent"` node). When the run brings
/// the agent's model as an [`AgentModel`](super::super::models::AgentModel) (an
/// ironloop HTTP model, a prompt that is absent or a system message, nothing in the
/// run that observes model calls from Python), the engine calls the model itself:
/// the request is built from the channel's messages and the answer written back,
/// with no Python call; under `stream_mode="messages"` the chunks go to the stream
/// as the model's `invoke` sends them from a node. Otherwise the node's function runs.
pub(super) struct AgentModelNode {
    pub(super) channel: String,
    pub(super) function: ShowsMessages<PyNode>,
}

#[async_trait]
impl NodeRunner for AgentModelNode {
    async fn run(&self, view: StateView, arg: Option<Val>, ctx: TaskContext) -> NodeResult {
        let env = env_of(&ctx)?;
        let call = env.agent.as_ref().filter(|_| arg.is_none());
        let (Some(call), Some(Val::Messages(history))) = (call, view.get(&self.channel)) else {
            return NodeRunner::run(&self.function, view, arg, ctx).await;
        };
        let tokens = ctx.stream.as_ref().filter(|s| s.wants(modes::MESSAGES));
        let Some(sink) = tokens else {
            return match call.answer(history).await {
                Ok(answer) => Ok(answer_output(&self.channel, answer)),
                // The exception the model's `invoke` raises.
                Err(e) => Err(attach(|py| node_failure(py, &ctx, e.into()))),
            };
        };
        // Tokens to the `messages` stream as they arrive, as the model's `invoke` sends
        // them from a node (the task's metadata, the chunks' id marked as shown).
        let fail = |e| attach(|py| node_failure(py, &ctx, e));
        let meta = attach(|py| message_meta(py, &env, &ctx).map(Bound::unbind)).map_err(fail)?;
        let req = call.request(history);
        let each = |chunk: Bound<'_, PyAny>| {
            let task_meta = meta.bind(chunk.py());
            emit_chunk(sink, &ctx.node, Some(task_meta), chunk, None)
        };
        let answer = stream_chunks(call.model.clone(), req, each)
            .await
            .map_err(fail)?;
        let out = answer_output(&self.channel, call.named(Message::clone(&answer)));
        shown_in_messages_mode(&view, &ctx, out)
    }
}

/// A `ToolNode` in a graph: the core tool node reads the last AI message from the
/// messages channel and runs its calls through the executor; Python is entered only
/// for what Python tools need (their state, context and error policy).
pub(super) struct ToolsNode {
    name: String,
    core: Py<ToolNodeCore>,
    node: ToolNode,
    shared: Arc<Shared>,
    /// Makes the state tools see from the state dict (a dataclass / pydantic schema):
    /// an `InjectedState` gets the state as a node of the graph would.
    factory: Option<Py<PyAny>>,
    /// `create_agent`'s `wrap_tool_call` chain, run by this node around each call a
    /// `Send` brings (see `wrapped_tools`).
    wrapped: Option<Arc<super::wrapped_tools::Wrapped>>,
}

impl ToolsNode {
    pub(super) fn new(
        name: String,
        core: Py<ToolNodeCore>,
        channel: &str,
        shared: Arc<Shared>,
        factory: Option<Py<PyAny>>,
    ) -> Self {
        let executor = attach(|py| core.borrow(py).executor.clone());
        ToolsNode {
            name,
            core,
            node: ToolNode::new(executor, channel),
            shared,
            factory,
            wrapped: None,
        }
    }

    /// This node with `create_agent`'s `wrap_tool_call` chain (`runner`, a
    /// `CallRunner`) around its calls; `fallback` is the same chain as a Python node,
    /// for the tasks the engine's path does not take (see `wrapped_tools`).
    pub(super) fn wrapping(
        mut self,
        py: Python<'_>,
        runner: &Bound<'_, PyAny>,
        fallback: PyNode,
    ) -> PyResult<Self> {
        let w = super::wrapped_tools::Wrapped::new(
            py,
            &self.name,
            &self.core,
            &self.node,
            &self.shared,
            &self.factory,
            runner,
            fallback,
        )?;
        self.wrapped = Some(Arc::new(w));
        Ok(self)
    }
}

/// A graph a tool ran handed off to the graph of the tools node `name` (its
/// `Command(graph=Command.PARENT)`, raised through the tool as `ParentCommand`, `e`):
/// the node's output is that command, as a Python node's is ([`PyNode::finish`]), not
/// a failure of the run. The call has reported its end already (`tool-error`), as
/// under LangGraph. For the tools node with and without `wrap_tool_call` middleware.
pub(super) fn handed_off(
    shared: &Shared,
    py: Python<'_>,
    name: &str,
    ctx: &TaskContext,
    e: &PyErr,
) -> Result<NodeOutput, NodeFailure> {
    let command = e
        .value(py)
        .getattr(intern!(py, "command"))
        .map_err(|e| node_failure(py, ctx, e))?;
    returned(shared, py, name, &command, NodeOutput::default(), ctx)
}

/// Runs the calls of the last AI message (or the one `Send` brought) through the core
/// tool node; the messages it returns are shown by [`ShowsMessages`].
#[async_trait]
impl NodeRunner for ToolsNode {
    fn answers_when_steered(&self) -> bool {
        true
    }

    async fn run(&self, view: StateView, arg: Option<Val>, ctx: TaskContext) -> NodeResult {
        if let Some(w) = &self.wrapped {
            return w.clone().run(view, arg, ctx).await;
        }
        let env = env_of(&ctx)?;
        let (send, tool_env, chain) = attach(|py| -> PyResult<_> {
            // Send("tools", ...): run the calls it brought.
            let (send, inlined) = match &arg {
                Some(a) => {
                    let (calls, state) = sent_calls(&val_to_py(py, a)?)?;
                    (Some(calls), state)
                }
                None => (None, None),
            };
            // Only a tool given the state (an injected state or context) reads it:
            // the state is not turned into Python objects for tools that never look.
            let state = match inlined {
                _ if !self.core.get().sees_state => None,
                Some(s) => Some(s.unbind()),
                None => Some(self.shared.node_input(py, &view, &self.factory)?.unbind()),
            };
            // Tools see the task's scratchpad (for interrupt()) in their context, and
            // their progress goes to the graph's custom stream.
            let parts = ScratchParts {
                state: Some(TaskState::new(py, &view, &self.shared, &self.factory)),
                ..Default::default()
            };
            let (context, scratch) = task_context_with(py, &env, &ctx, parts)?;
            let chain = self.chain_run(py, &env, &ctx, &view, &context)?;
            let on_progress = match &ctx.stream {
                Some(s) if s.wants(modes::CUSTOM) => Some(scratch.getattr("write")?.unbind()),
                _ => None,
            };
            let store = self.shared.store.as_ref().map(|s| s.clone_ref(py));
            let tool_env = Arc::new(env.for_tools(py, context.unbind(), state, store, on_progress));
            Ok((send, tool_env, chain))
        })
        .map_err(|e| attach(|py| node_failure(py, &ctx, e)))?;
        let calls = send.unwrap_or_else(|| self.node.calls(&view, None));
        let tracer = match &tool_env.trace {
            Some(_) => attach(|py| tool_env.call_tracer(py)),
            None => None,
        };
        let run = RunContext {
            cancel: ctx.cancel.clone(),
            progress: tool_env.progress_fn(),
            tracer,
            host: Some(tool_env.clone()),
            inline: ctx.inline,
            steer: ctx.steer.clone(),
            events: super::task::py_tool_events(ctx.stream.as_ref()),
            // Python tools only wait here (for the pool or the event loop).
            local: self.core.get().python_only,
            ..Default::default()
        };
        let results = self.node.run(&calls, &run).await;
        // A cancelled task has no output (its calls' results would say "cancelled").
        if ctx.cancel.is_cancelled() {
            return Err(NodeFailure::Error(GraphError::Cancelled));
        }
        attach(|py| {
            let out = self.tools_output(py, &ctx, results, &calls);
            if let Some(chain) = &chain {
                ended(py, chain.bind(py), &out, self.node.channel());
            }
            out
        })
    }
}

impl ToolsNode {
    /// The `ToolNode`'s LangChain chain run, open in `context` (so that its tools'
    /// runs report under it), when the run has callbacks: LangGraph's node run.
    fn chain_run(
        &self,
        py: Python<'_>,
        env: &PyRunEnv,
        ctx: &TaskContext,
        view: &StateView,
        context: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let node = (self.name.as_str(), &*self.shared, &self.factory);
        chain_run(py, node, env, ctx, view, context)
    }

    fn tools_output(
        &self,
        py: Python<'_>,
        ctx: &TaskContext,
        results: Vec<crate::executor::ToolResult>,
        calls: &[crate::tool::ToolCall],
    ) -> Result<NodeOutput, NodeFailure> {
        {
            let fail = |e| node_failure(py, ctx, e);
            let core = self.core.borrow(py);
            let outputs = match tool_results(
                py,
                core.handle_errors.bind(py),
                results,
                calls,
                core.executor.registry(),
                &core.messages_key,
                false,
            ) {
                Err(e) if is_parent_command(py, &e) => {
                    return handed_off(&self.shared, py, &self.name, ctx, &e)
                }
                r => r.map_err(fail)?,
            };
            let (msgs, commands) = split(outputs);
            let mut out = self.node.output(msgs.clone());
            for c in commands {
                self.shared
                    .write_output(py, &self.name, c.bind(py), &mut out)
                    .map_err(fail)?;
            }
            // What the node returned, as Python shows it: only the `updates` and
            // `messages` streams look at it (a run without them reads the writes).
            if shows_update(ctx) {
                let update = PyDict::new(py);
                update
                    .set_item(
                        self.node.channel(),
                        messages_to_py(py, &msgs).map_err(fail)?,
                    )
                    .map_err(fail)?;
                out.update = Some(host(update.into_any()));
            }
            Ok(out)
        }
    }
}

/// A tool node's LangChain chain run (see `ToolsNode::chain_run`); `node` is its name,
/// the graph's shared parts and its input factory.
pub(super) fn chain_run(
    py: Python<'_>,
    (name, shared, factory): (&str, &Shared, &Option<Py<PyAny>>),
    env: &PyRunEnv,
    ctx: &TaskContext,
    view: &StateView,
    context: &Bound<'_, PyAny>,
) -> PyResult<Option<Py<PyAny>>> {
    if !has_callbacks(py, env)? {
        return Ok(None);
    }
    let input = shared.node_input(py, view, factory)?;
    let meta = message_meta(py, env, ctx)?;
    meta.set_item(intern!(py, "langgraph_node"), name)?;
    let run = helpers(py)?
        .node_run
        .bind(py)
        .call1((context, name, input, meta))?;
    Ok((!run.is_none()).then(|| run.unbind()))
}

/// The calls a `Send` brought a tools node, and the state it inlined: one tool call,
/// a list of them (LangChain's `Send("tools", [call])`), or LangGraph's
/// `ToolCallWithContext` (`{"__type": "tool_call_with_context", "tool_call": ...,
/// "state": ...}`, what its `create_react_agent(version="v2")` sends), whose state the
/// tools see.
fn sent_calls<'py>(
    arg: &Bound<'py, PyAny>,
) -> PyResult<(Vec<ToolCall>, Option<Bound<'py, PyAny>>)> {
    let py = arg.py();
    if let Ok(list) = arg.cast::<PyList>() {
        let calls = list
            .iter()
            .map(|c| tool_call_from_py(&c))
            .collect::<PyResult<_>>()?;
        return Ok((calls, None));
    }
    if let Ok(d) = arg.cast::<PyDict>() {
        let kind = d.get_item(intern!(py, "__type"))?;
        if kind.is_some_and(|k| k.eq("tool_call_with_context").unwrap_or(false)) {
            let call = d
                .get_item(intern!(py, "tool_call"))?
                .ok_or_else(|| PyValueError::new_err("a ToolCallWithContext has no 'tool_call'"))?;
            let state = d.get_item(intern!(py, "state"))?;
            return Ok((vec![tool_call_from_py(&call)?], state));
        }
    }
    Ok((vec![tool_call_from_py(arg)?], None))
}

/// Whether the run reports to LangChain callbacks (its config has `callbacks`):
/// decided once per run environment, as the run's config is the same for its tasks.
pub(super) fn has_callbacks(py: Python<'_>, env: &PyRunEnv) -> PyResult<bool> {
    if let Some(&known) = env.callbacks.get() {
        return Ok(known);
    }
    let found = config_has_callbacks(py, env)?;
    let _ = env.callbacks.set(found);
    Ok(found)
}

/// Whether `env`'s config dict has (non-`None`) `callbacks`.
fn config_has_callbacks(py: Python<'_>, env: &PyRunEnv) -> PyResult<bool> {
    let Some(config) = env.config.as_ref() else {
        return Ok(false);
    };
    let Ok(config) = config.bind(py).cast::<PyDict>() else {
        return Ok(false);
    };
    Ok(config
        .get_item(intern!(py, "callbacks"))?
        .is_some_and(|c| !c.is_none()))
}

/// Ends a node's chain run (see `ToolsNode::chain_run`): with the node's writes
/// to its messages channel (`{channel: [messages]}`), or its failure (a pause as
/// LangGraph's `GraphInterrupt`). A handler that fails is logged, as langchain-core
/// does: the node's result stands.
pub(super) fn ended(
    py: Python<'_>,
    chain: &Bound<'_, PyAny>,
    out: &Result<NodeOutput, NodeFailure>,
    channel: &str,
) {
    let r = (|| -> PyResult<()> {
        match out {
            Ok(out) => {
                let shown = PyDict::new(py);
                for (c, v) in out.writes.iter().filter(|(c, _)| c == channel) {
                    shown.set_item(c, val_to_py(py, v)?)?;
                }
                chain.call_method1(intern!(py, "end"), (shown,))?;
            }
            Err(failure) => {
                let exc = match failure {
                    NodeFailure::Error(e) => PyErr::from(e.clone())
                        .into_value(py)
                        .into_bound(py)
                        .into_any(),
                    NodeFailure::Interrupt(v) => helpers(py)?
                        .graph_interrupt
                        .bind(py)
                        .call1((val_to_py(py, v)?,))?,
                    NodeFailure::Paused | NodeFailure::Nested(_) => {
                        helpers(py)?.graph_interrupt.bind(py).call0()?
                    }
                };
                let kw = PyDict::new(py);
                kw.set_item("exc", exc)?;
                chain.call_method("end", (), Some(&kw))?;
            }
        }
        Ok(())
    })();
    if let Err(e) = r {
        log::warn!("a LangChain callback handler failed ending a ToolNode's run: {e}");
    }
}
