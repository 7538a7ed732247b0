//! `create_agent`'s tools node with `wrap_tool_call` middleware, run by the engine's
//! tool node: the task a `Send` of one call starts calls the middleware chain
//! (`CallRunner.run_sent`, composed once per compiled agent) in the task's context,
//! and hands its innermost hook a [`ToolCallHandler`], which runs the call's tool
//! here (argument validation, permissions, time limits, the `tools` stream and the
//! `ToolMessage` all the engine's, as without middleware) and returns the message or
//! `Command` the hooks see. The hooks' answer is written to the messages channel as
//! the tool node's own output.
//!
//! Without it each call was a Python node calling the tool node back for its one call
//! (building a request of its own, an update dict to hand back, and the node's
//! output converted from it): about twice the instructions of the tool step. A task
//! this path does not take — an async run (its chain and handler are coroutines), or
//! a task not started by a `Send` of one call — runs the same chain as that Python
//! node (`fallback`).

use std::sync::Arc;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tokio::sync::oneshot;

use super::super::coerce::message_from_py;
use super::super::convert::tool_call_from_py;
use super::super::env::{var_reset, var_set, PyRunEnv};
use super::super::exiting::attach;
use super::super::pool::Pool;
use super::super::tool_outputs::{combine, output_message, StepOutput};
use super::super::toolnode::{command_class, execute_blocking, tool_results, ToolNodeCore};
use super::nodes::{
    chain_run, ended, env_of, handed_off, is_parent_command, node_failure, shows_update, PyNode,
};
use super::task::{call_in, task_context_with, Pushed, ScratchParts, TaskState};
use super::values::{host, val_to_py, Shared};
use crate::executor::RunContext;
use crate::graph::{GraphError, NodeFailure, NodeOutput, NodeRunner, StateView, TaskContext, Val};
use crate::prebuilt::ToolNode;
use crate::tool::CallEvents;

type NodeResult = Result<NodeOutput, NodeFailure>;

/// What the wrapped tools node keeps, shared with the pool thread a task may run on.
pub(super) struct Wrapped {
    name: String,
    core: Py<ToolNodeCore>,
    node: ToolNode,
    shared: Arc<Shared>,
    factory: Option<Py<PyAny>>,
    /// `CallRunner.run_sent(call, state, config, execute)`.
    run_sent: Py<PyAny>,
    /// `CallRunner._sent_output(result)`: a `Command` result as the node's update.
    sent_output: Py<PyAny>,
    /// What a handler does for a request it cannot run itself (another tool, a
    /// renamed call): `CallRunner._execute`, the Python node's handler.
    execute: Py<PyAny>,
    /// The error policy of the handler's tool run (tool exceptions reach the hooks).
    policy: Py<PyAny>,
    /// The tools as given, by name (`ToolNode._originals`): a request's `tool`.
    originals: Py<PyAny>,
    /// `ironloop._tool_call.request_runtime`.
    request_runtime: Py<PyAny>,
    fallback: PyNode,
}

impl Wrapped {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        py: Python<'_>,
        name: &str,
        core: &Py<ToolNodeCore>,
        node: &ToolNode,
        shared: &Arc<Shared>,
        factory: &Option<Py<PyAny>>,
        runner: &Bound<'_, PyAny>,
        fallback: PyNode,
    ) -> PyResult<Self> {
        let get = |attr: &str| runner.getattr(attr).map(Bound::unbind);
        let originals = runner.getattr("node")?.getattr("_originals")?.unbind();
        let request_runtime = py
            .import(intern!(py, "ironloop._tool_call"))?
            .getattr(intern!(py, "request_runtime"))?
            .unbind();
        Ok(Wrapped {
            name: name.to_owned(),
            core: core.clone_ref(py),
            node: node.clone(),
            shared: shared.clone(),
            factory: factory.as_ref().map(|f| f.clone_ref(py)),
            run_sent: get("run_sent")?,
            sent_output: get("_sent_output")?,
            execute: get("_execute")?,
            policy: runner.call_method0("_policy")?.unbind(),
            originals,
            request_runtime,
            fallback,
        })
    }

    /// Runs the task: the sent call through the chain, inline or on the pool as a
    /// sync Python node runs; anything else as the Python node.
    pub(super) async fn run(
        self: Arc<Self>,
        view: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> NodeResult {
        let env = env_of(&ctx)?;
        let call = match &arg {
            Some(a) if !env.caller_loop => attach(|py| one_call(py, a)),
            _ => None,
        };
        let Some(call) = call else {
            return NodeRunner::run(&self.fallback, view, arg, ctx).await;
        };
        if ctx.inline {
            return attach(|py| self.call(py, &view, call, &ctx, &env));
        }
        let (tx, rx) = oneshot::channel();
        let ctx2 = ctx.clone();
        Pool::global().submit(Box::new(move |py| {
            if tx.is_closed() {
                return;
            }
            let _ = tx.send(self.call(py, &view, call, &ctx2, &env));
        }));
        rx.await
            .unwrap_or(Err(NodeFailure::Error(GraphError::Cancelled)))
    }

    fn call(
        &self,
        py: Python<'_>,
        view: &StateView,
        call: Py<PyAny>,
        ctx: &TaskContext,
        env: &Arc<PyRunEnv>,
    ) -> NodeResult {
        let fail = |e| node_failure(py, ctx, e);
        let pushed = Pushed::default();
        let (answer, chain) = (|| -> PyResult<_> {
            let state = self.shared.node_input(py, view, &self.factory)?;
            let parts = ScratchParts {
                pushed: pushed.clone(),
                state: Some(TaskState::new(py, view, &self.shared, &self.factory)),
            };
            let (context, _) = task_context_with(py, env, ctx, parts)?;
            let node = (self.name.as_str(), &*self.shared, &self.factory);
            let chain = chain_run(py, node, env, ctx, view, &context)?;
            let handler = ToolCallHandler {
                wrapped: self.handle_parts(py, env, ctx, &context),
            };
            let config = env.config.as_ref().map(|c| c.clone_ref(py));
            let args = (call, state, config, handler);
            let answer = call_in(
                py,
                &context,
                self.run_sent.bind(py),
                args.into_pyobject(py)?,
                None,
            );
            Ok((answer, chain))
        })()
        .map_err(fail)?;
        let out = self.output(py, answer, ctx, &pushed);
        if ctx.cancel.is_cancelled() {
            return Err(NodeFailure::Error(GraphError::Cancelled));
        }
        if let Some(chain) = &chain {
            ended(py, chain.bind(py), &out, self.node.channel());
        }
        out
    }

    fn handle_parts(
        &self,
        py: Python<'_>,
        env: &PyRunEnv,
        ctx: &TaskContext,
        context: &Bound<'_, PyAny>,
    ) -> HandlerParts {
        let store = self.shared.store.as_ref().map(|s| s.clone_ref(py));
        HandlerParts {
            core: self.core.clone_ref(py),
            env: Arc::new(env.for_tools(py, context.clone().unbind(), None, store, None)),
            events: super::task::py_tool_events(ctx.stream.as_ref()),
            execute: self.execute.clone_ref(py),
            policy: self.policy.clone_ref(py),
            originals: self.originals.clone_ref(py),
            request_runtime: self.request_runtime.clone_ref(py),
        }
    }

    /// The node's output for what the chain answered: a `ToolMessage` written to the
    /// messages channel as the tool node writes its own; a `Command` (or what the
    /// task pushed) as the Python node writes it.
    fn output(
        &self,
        py: Python<'_>,
        answer: PyResult<Bound<'_, PyAny>>,
        ctx: &TaskContext,
        pushed: &Pushed,
    ) -> NodeResult {
        let fail = |e| node_failure(py, ctx, e);
        let answer = match answer {
            Err(e) if is_parent_command(py, &e) => {
                return handed_off(&self.shared, py, &self.name, ctx, &e)
            }
            r => r.map_err(fail)?,
        };
        let plain = pushed.lock().map(|p| p.is_empty()).unwrap_or(false);
        if !plain
            || answer
                .is_instance(command_class(py).map_err(fail)?)
                .map_err(fail)?
        {
            let update = self.sent_output.bind(py).call1((&answer,));
            return self.fallback.finish(py, update, ctx, pushed);
        }
        let msg = message_from_py(&answer).map_err(fail)?;
        let mut out = self.node.output(vec![msg]);
        if shows_update(ctx) {
            let update = PyDict::new(py);
            let msgs = PyList::new(py, [answer]).map_err(fail)?;
            update.set_item(self.node.channel(), msgs).map_err(fail)?;
            out.update = Some(host(update.into_any()));
        }
        Ok(out)
    }
}

/// The one tool call a `Send` brought (a dict with `name`, `args` and `id`, what
/// `create_agent` sends), or `None` for any other argument.
fn one_call(py: Python<'_>, arg: &Val) -> Option<Py<PyAny>> {
    let obj = val_to_py(py, arg).ok()?;
    let d = obj.cast::<PyDict>().ok()?;
    let has = |k: &Bound<'_, pyo3::types::PyString>| d.contains(k).unwrap_or(false);
    (has(intern!(py, "name")) && has(intern!(py, "args")) && has(intern!(py, "id")))
        .then(|| obj.unbind())
}

/// What a [`ToolCallHandler`] runs its call with.
struct HandlerParts {
    core: Py<ToolNodeCore>,
    /// The task's environment (its context, store, config, trace).
    env: Arc<PyRunEnv>,
    events: Option<CallEvents>,
    execute: Py<PyAny>,
    policy: Py<PyAny>,
    originals: Py<PyAny>,
    request_runtime: Py<PyAny>,
}

/// The innermost handler of a wrapped call's chain: `handler(request)` runs the
/// request's call on the engine's tool node and returns its `ToolMessage` (or the
/// `Command` its tool returned), any number of times. The tool sees the request's
/// state and runtime. A request for another tool than the agent's own by that name
/// (`override(tool=...)`) is run as the Python node's handler runs it.
#[pyclass(name = "_ToolCallHandler", module = "ironloop._ironloop", frozen)]
pub struct ToolCallHandler {
    wrapped: HandlerParts,
}

#[pymethods]
impl ToolCallHandler {
    fn __call__(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let h = &self.wrapped;
        let fields = request
            .getattr(intern!(py, "__dict__"))?
            .cast_into::<PyDict>()?;
        let (Some(call), Some(tool)) = (
            fields.get_item(intern!(py, "tool_call"))?,
            fields.get_item(intern!(py, "tool"))?,
        ) else {
            return h.execute.call1(py, (request,));
        };
        let call = tool_call_from_py(&call)?;
        let own = h.originals.bind(py).get_item(call.name.as_str()).ok();
        if tool.is_none() || !own.is_some_and(|o| o.is(&tool)) {
            return h.execute.call1(py, (request,));
        }
        let core = h.core.get();
        let state = match core.sees_state {
            true => fields.get_item(intern!(py, "state"))?.map(Bound::unbind),
            false => None,
        };
        let store = match fields.get_item(intern!(py, "runtime"))? {
            // A runtime set (read, or given with `override`): its store, as the
            // Python node's handler takes it.
            Some(rt) => rt.getattr(intern!(py, "store")).ok().map(Bound::unbind),
            None => h.env.store.as_ref().map(|s| s.clone_ref(py)),
        };
        let runtime = fields
            .get_item(intern!(py, "runtime"))?
            .unwrap_or_else(|| request.clone());
        let var = h.request_runtime.bind(py);
        let token = var_set(var, &runtime)?;
        let outputs = self.run(py, call, state, store);
        var_reset(var, &token)?;
        one_result(py, outputs?, &core.messages_key)
    }
}

impl ToolCallHandler {
    fn run(
        &self,
        py: Python<'_>,
        call: crate::tool::ToolCall,
        state: Option<Py<PyAny>>,
        store: Option<Py<PyAny>>,
    ) -> PyResult<Vec<StepOutput>> {
        let h = &self.wrapped;
        let e = &h.env;
        let env = Arc::new(e.for_tools(py, e.context.clone_ref(py), state, store, None));
        let core = h.core.get();
        // As a tool node called from Python (the Python node's handler): a token of its
        // own, so a Ctrl-C reaches the hooks as `KeyboardInterrupt` while the call
        // waits, not as a cancelled call; no steering (a hook's call always runs).
        let run = RunContext {
            tracer: env.trace.as_ref().and_then(|_| env.call_tracer(py)),
            host: Some(env),
            events: h.events.clone(),
            local: core.python_only,
            ..Default::default()
        };
        let exec = core.executor.clone();
        let (results, calls) = execute_blocking(py, exec, [call], run)?;
        let registry = core.executor.registry();
        let key = &core.messages_key;
        tool_results(py, h.policy.bind(py), results, &calls, registry, key, false)
    }
}

/// The one answer of a call: its message, or the `Command` its tool returned (the
/// first of a list's, as the Python node's handler takes it).
fn one_result(py: Python<'_>, mut outputs: Vec<StepOutput>, key: &str) -> PyResult<Py<PyAny>> {
    if outputs.len() == 1 {
        return match outputs.pop() {
            Some(StepOutput::Message { msg, made }) => Ok(output_message(py, &msg, made)?.unbind()),
            Some(StepOutput::Command(c)) => Ok(c),
            None => unreachable!("one output"),
        };
    }
    let combined = combine(py, outputs, false, key)?;
    py.import(intern!(py, "ironloop._tool_wrap"))?
        .getattr(intern!(py, "_one_result"))?
        .call1((combined,))
        .map(Bound::unbind)
}
