//! The per-task scratchpad: what `interrupt()` and `get_stream_writer()` find inside
//! a node, and calling Python in a task's context.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::super::env::PyRunEnv;
use super::super::helpers::helpers;
use super::super::runtime::block_on;
use super::super::toolnode::is_graph_pause;
use super::values::{host, val_to_py, Shared};
use crate::graph::{
    modes, Calls, Lent, Nest, ReplayStart, RunOptions, StateView, StreamEvent, StreamSink,
    TaskContext, ToolEvent, ToolReturn,
};
use crate::prebuilt::tool_events_with;
use crate::tool::{CallEvents, ToolError};

// ---------------------------------------------------------------------------------
// Per-task scratchpad: interrupt() and the stream writer

/// Writes a task makes while it runs (`push_message`): `(channel, value)` pairs that
/// join its output when it returns.
pub(crate) type Pushed = Arc<Mutex<Vec<(String, Py<PyAny>)>>>;

/// The state a task's node reads, as an edge hands it to the node (typed by its input
/// schema), kept unconverted until asked for: a `ToolNode` given bare tool calls
/// inside the task gives it to its tools, as LangGraph's reads the task's state
/// (`CONFIG_KEY_READ_STATE`) for calls a `Send` brought without one.
pub(crate) struct TaskState {
    view: StateView,
    shared: Arc<Shared>,
    factory: Option<Py<PyAny>>,
}

impl TaskState {
    pub(super) fn new(
        py: Python<'_>,
        view: &StateView,
        shared: &Arc<Shared>,
        factory: &Option<Py<PyAny>>,
    ) -> Self {
        TaskState {
            view: view.clone(),
            shared: shared.clone(),
            factory: factory.as_ref().map(|f| f.clone_ref(py)),
        }
    }
}

/// What a task's scratchpad is made with besides the task itself: where its
/// `push_message` writes go and, for a node's task, the state the node reads.
#[derive(Default)]
pub(crate) struct ScratchParts {
    pub(super) pushed: Pushed,
    pub(super) state: Option<TaskState>,
}

/// The `channel` of a [`Pushed`] entry that is no write: the node's output came from
/// a cache (`TaskScratch::mark_cached`).
pub(crate) const CACHED_MARK: &str = "__cached__";

/// The channel LangGraph's `debug` events show a `@task` call's result under.
const RETURN: &str = "__return__";

/// What `interrupt()` and `get_stream_writer()` use inside a node.
#[pyclass(name = "_TaskScratch", module = "ironloop._ironloop")]
pub struct TaskScratch {
    pub(super) resume: Vec<Py<PyAny>>,
    pub(super) next: usize,
    pub(super) stream: Option<StreamSink>,
    pub(super) node: String,
    pub(super) task_id: String,
    pub(super) pushed: Pushed,
    /// Where a graph run inside this task keeps its checkpoints (see [`Nest`]).
    pub(super) nest: Option<Nest>,
    /// The metadata of its `messages` chunks (see `returned::message_meta`), when
    /// the run streams them.
    pub(super) meta: Option<Py<PyDict>>,
    /// The results of the calls the task makes (`@task`s called from it), saved and
    /// found again (see `graph::Calls`).
    pub(super) calls: Calls,
    pub(super) remaining_steps: i64,
    /// Under an idle timeout: touched by the task's stream writes and heartbeats.
    pub(super) progress: Option<Arc<crate::graph::Progress>>,
    /// For an error handler's task: the failure it handles.
    pub(super) failed: Option<Arc<crate::graph::Failed>>,
    /// How many graph runs this task has started (LangGraph's `subgraph_counter`).
    pub(super) subgraph_calls: AtomicUsize,
    /// The step the task runs in: its `@task` calls' `debug` events show it.
    pub(super) step: i64,
    /// The state the task's node reads (`None` in a router's task).
    pub(super) state: Option<TaskState>,
}

impl TaskScratch {
    /// Counts a graph run started inside this task: its index among them (from 0).
    /// Past the first, a run's namespace ends in its index (LangGraph's
    /// `subgraph_counter`), so two subgraphs one node calls keep apart their
    /// checkpoints and stream namespaces.
    pub(super) fn next_subgraph_call(&self) -> usize {
        self.subgraph_calls.fetch_add(1, Ordering::Relaxed)
    }

    /// Where the `call`-th subgraph run inside this task streams, if the parent asked
    /// for subgraph events.
    /// A stateful subgraph's events (`stateful`, LangGraph's `checkpointer=True`) are
    /// tagged with the node's name alone, as its checkpoints are kept.
    pub(super) fn nested_sink(&self, stateful: bool, call: usize) -> Option<StreamSink> {
        let ns = if stateful {
            self.node.clone()
        } else {
            format!("{}:{}", self.node, self.task_id)
        };
        let sink = self.stream.as_ref().and_then(|s| s.nested(ns))?;
        if call == 0 {
            return Some(sink);
        }
        sink.nested(call.to_string())
    }

    /// What a graph run inside this task (a subgraph without a checkpointer of its
    /// own) runs with: the thread, namespace and lent checkpointer, resumed with this
    /// task's resume values. A `stateful` one (LangGraph's `checkpointer=True`) keeps
    /// one history per node, not per task: each call continues the last one's state.
    pub(super) fn lend(&self, py: Python<'_>, opts: &mut RunOptions, stateful: bool, call: usize) {
        let Some(n) = &self.nest else { return };
        opts.thread_id = Some(n.thread_id.clone());
        opts.checkpoint_ns = if stateful {
            crate::checkpoint::stateful_ns(&n.checkpoint_ns)
        } else {
            n.checkpoint_ns.clone()
        };
        if call > 0 {
            opts.checkpoint_ns = format!("{}|{call}", opts.checkpoint_ns);
        }
        opts.parents = n.parents.clone();
        if let Some(r) = &n.replay {
            match r.start_of(&opts.checkpoint_ns) {
                ReplayStart::At(id) => opts.checkpoint_id = Some(id),
                ReplayStart::Before(id) => opts.start_before = Some(id),
                ReplayStart::Latest => {}
            }
            opts.replay = Some(r.clone());
        }
        opts.lent = Some(Lent {
            saver: n.saver.clone(),
            resume: if n.answer_waiting {
                self.resume
                    .iter()
                    .map(|v| host(v.bind(py).clone()))
                    .collect()
            } else {
                Vec::new()
            },
            answers: if n.answer_waiting {
                n.answers.clone()
            } else {
                Vec::new()
            },
        });
    }
}

impl TaskScratch {
    /// Whether LangChain runs the node starts report to the stream: its models'
    /// tokens (`messages`) or its tools' lifecycles (`tools`).
    fn streams_langchain_runs(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(|s| s.wants(modes::MESSAGES | modes::TOOLS))
    }
}

/// The `tools` stream of the task running here (its scratchpad in `task_var`), for
/// tool calls a node makes through a `ToolNode` itself, as `create_agent`'s
/// `wrap_tool_call` handlers do: their calls report start / update / end like the
/// calls of a tools node. `None` outside a task or when the run does not stream tools.
pub(crate) fn current_tool_events(py: Python<'_>) -> PyResult<Option<CallEvents>> {
    let scratch = helpers(py)?
        .task_var
        .bind(py)
        .call_method1(intern!(py, "get"), (py.None(),))?;
    let Ok(s) = scratch.cast::<TaskScratch>() else {
        return Ok(None);
    };
    Ok(py_tool_events(s.borrow().stream.as_ref()))
}

/// The `tools` stream of a task's tool calls (see [`tool_events_with`]): a call that
/// `interrupt()` paused (or a drain stopped) has no end event, as in LangGraph.
pub(crate) fn py_tool_events(sink: Option<&StreamSink>) -> Option<CallEvents> {
    tool_events_with(sink, raised_pause)
}

/// Whether a tool call stopped because its Python code paused the run
/// ([`is_graph_pause`]).
fn raised_pause(e: &ToolError) -> bool {
    let Some(raised) = e.raised().and_then(|h| h.downcast_ref::<PyErr>()) else {
        return false;
    };
    super::super::exiting::attach(|py| is_graph_pause(py, raised))
}

#[pymethods]
impl TaskScratch {
    /// The k-th call returns the k-th resume value; past them, the run pauses.
    fn interrupt(&mut self, py: Python<'_>, value: Py<PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(v) = self.resume.get(self.next) {
            self.next += 1;
            return Ok(v.clone_ref(py));
        }
        let cls = helpers(py)?.graph_interrupt.bind(py);
        Err(PyErr::from_value(cls.call1((value,))?))
    }

    /// A retried node starts over: its `interrupt()` calls get the resume values
    /// from the first on again (LangGraph resets the count between attempts). The
    /// subgraph runs are still counted, as LangGraph's `subgraph_counter`: each
    /// attempt's subgraph gets a namespace of its own (`|1`, `|2`...) and runs from
    /// its start, not from the checkpoints of the attempt that failed.
    fn restart_interrupts(&mut self) {
        self.next = 0;
    }

    /// Sends `payload` to the `custom` stream.
    fn write(&self, payload: Bound<'_, PyAny>) {
        if let Some(p) = &self.progress {
            p.signal();
        }
        if let Some(s) = &self.stream {
            s.emit(modes::CUSTOM, || StreamEvent::Custom(host(payload)));
        }
    }

    #[getter]
    fn node(&self) -> &str {
        &self.node
    }

    /// The thread and namespace (`node:task_id` below the run's) this task keeps the
    /// checkpoints of a graph run inside it under: `None` in a run without a
    /// checkpointer. For `Runtime.execution_info`.
    #[getter]
    fn nest(&self) -> Option<(String, String)> {
        let n = self.nest.as_ref()?;
        Some((n.thread_id.clone(), n.checkpoint_ns.clone()))
    }

    /// `runtime.heartbeat()`: the task is alive, for its node's idle timeout (a no-op
    /// without one).
    fn heartbeat(&self) {
        if let Some(p) = &self.progress {
            p.heartbeat();
        }
    }

    /// In an error handler's task: `(node, exception)` of the failure it handles (the
    /// node's own exception when it raised one); `None` in any other task.
    #[getter]
    fn node_error(&self, py: Python<'_>) -> Option<(String, Py<PyAny>)> {
        let f = self.failed.as_ref()?;
        let err = PyErr::from(f.error.clone());
        Some((f.node.clone(), err.into_value(py).into_any()))
    }

    /// Steps the run may still take, this one included (`RemainingSteps`).
    #[getter]
    fn remaining_steps(&self) -> i64 {
        self.remaining_steps
    }

    /// The task's id: the same in every attempt of its step.
    #[getter]
    fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The state the task's node reads, as an edge gives it to the node (a dict, or
    /// its input schema's object); `None` in a task that is no node's.
    fn read_state(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some(s) = &self.state else {
            return Ok(None);
        };
        Ok(Some(s.shared.node_input(py, &s.view, &s.factory)?.unbind()))
    }

    /// The token sink of `stream_mode="messages"`: (chunk, metadata) pairs with this
    /// node; `metadata` (a dict) adds to what the chunk's metadata holds.
    #[pyo3(signature = (chunk, metadata=None))]
    fn write_message(
        &self,
        chunk: Bound<'_, PyAny>,
        metadata: Option<Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        if let Some(p) = &self.progress {
            p.signal();
        }
        let Some(s) = self.stream.as_ref().filter(|s| s.wants(modes::MESSAGES)) else {
            return Ok(());
        };
        let task_meta = self.meta.as_ref().map(|m| m.bind(chunk.py()));
        emit_chunk(s, &self.node, task_meta, chunk, metadata)
    }

    /// Sends one event of a LangChain tool run the node started itself (`tool.invoke`
    /// in a node) to the `tools` stream, as LangGraph's callback handler does:
    /// `event` is `"started"` (`value`: the input), `"delta"`, `"finished"` (`value`:
    /// the tool's output) or `"error"` (`value`: the error's text).
    #[pyo3(signature = (event, tool_call_id, tool_name, value))]
    fn write_tool(
        &self,
        event: &str,
        tool_call_id: String,
        tool_name: String,
        value: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        if let Some(p) = &self.progress {
            p.signal();
        }
        let Some(s) = self.stream.as_ref().filter(|s| s.wants(modes::TOOLS)) else {
            return Ok(());
        };
        let ev = match event {
            "started" => ToolEvent::Started {
                id: tool_call_id,
                name: tool_name,
                input: host(value),
                label: None,
            },
            "delta" => ToolEvent::OutputDelta {
                id: tool_call_id,
                delta: host(value),
                child_loop_id: None,
            },
            "finished" => ToolEvent::Finished {
                id: tool_call_id,
                output: ToolReturn::Value(host(value)),
                seconds: None,
                child_loop_id: None,
            },
            "error" => ToolEvent::Error {
                id: tool_call_id,
                message: value.str()?.to_string(),
                seconds: None,
            },
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "write_tool: unknown event {other:?}; expected \"started\", \"delta\", \
                     \"finished\" or \"error\""
                )))
            }
        };
        s.emit(modes::TOOLS, || StreamEvent::Tool(ev));
        Ok(())
    }

    /// Whether the run streams `debug` events (or the `tasks` view of them): only
    /// then are a `@task` call's events worth making.
    #[getter]
    fn streams_debug(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.wants(modes::DEBUG))
    }

    /// `debug`: a `@task` call (id `id`, task `name`) starts in this task's step, on
    /// `input` (LangGraph shows `(args, kwargs)`), as LangGraph shows its push tasks.
    fn debug_call_start(&self, id: String, name: String, input: Bound<'_, PyAny>) {
        if let Some(s) = &self.stream {
            s.emit(modes::DEBUG, || StreamEvent::DebugTask {
                step: self.step,
                id,
                node: name,
                input: Some(host(input)),
                state: None,
                metadata: None,
            });
        }
    }

    /// `debug`: a `@task` call returned `value` (shown as LangGraph's
    /// `{"__return__": value}`) or raised `error` (the exception itself).
    #[pyo3(signature = (id, name, value, error=None))]
    fn debug_call_result(
        &self,
        id: String,
        name: String,
        value: Bound<'_, PyAny>,
        error: Option<Bound<'_, PyAny>>,
    ) {
        let Some(s) = &self.stream else { return };
        s.emit(modes::DEBUG, || {
            let (writes, error) = match error {
                Some(e) => {
                    let message = format!("{name} failed: {e}");
                    let host = crate::error::HostError::new(PyErr::from_value(e));
                    let err = crate::graph::GraphError::Node {
                        node: name.clone(),
                        task_id: id.clone(),
                        message,
                        host: Some(host),
                    };
                    (Vec::new(), Some(err))
                }
                None => (vec![(RETURN.to_owned(), host(value))], None),
            };
            StreamEvent::DebugTaskResult {
                step: self.step,
                id,
                node: name,
                writes,
                error,
                interrupts: Vec::new(),
            }
        });
    }

    /// The node's output comes from a cache (`CachePolicy`): streamed as cached.
    fn mark_cached(&self, py: Python<'_>) {
        self.pushed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((CACHED_MARK.to_owned(), py.None()));
    }

    /// Adds a write of `value` to `channel` to the task's output (`push_message`).
    fn push(&self, channel: String, value: Py<PyAny>) {
        self.pushed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((channel, value));
    }

    /// `(True, result)` when call `id` finished in an earlier attempt of this step
    /// (its result was saved), else `(False, None)`: the call is made. A saved call
    /// skips the resume values its `interrupt()`s took.
    fn call_saved(&mut self, py: Python<'_>, id: &str) -> PyResult<(bool, Py<PyAny>)> {
        match self.calls.saved(id) {
            Some(s) => {
                self.next += s.answers;
                Ok((true, val_to_py(py, &s.value)?.unbind()))
            }
            None => Ok((false, py.None())),
        }
    }

    /// Saves what call `id` (of the task called `name`) returned, its `interrupt()`s
    /// having taken `answers` resume values, waiting (the GIL released) until it is
    /// stored, and streams it as that task's update.
    #[pyo3(signature = (id, name, value, answers=0))]
    fn record_call(
        &self,
        py: Python<'_>,
        id: String,
        name: String,
        value: Bound<'_, PyAny>,
        answers: usize,
    ) -> PyResult<()> {
        let val = host(value);
        if self.calls.durable() {
            let (calls, v, n) = (self.calls.clone(), val.clone(), name.clone());
            let fut = async move { calls.record(&id, &n, &v, answers).await };
            block_on(py, fut, tokio_util::sync::CancellationToken::new())??;
        }
        if let Some(s) = &self.stream {
            s.emit(modes::UPDATES, || StreamEvent::Updates {
                node: name,
                update: Some(val),
                writes: Vec::new(),
                cached: false,
            });
        }
        Ok(())
    }

    /// Whether a graph run inside this task keeps checkpoints (in the run's
    /// checkpointer, under this task's namespace).
    #[getter]
    fn nests(&self) -> bool {
        self.nest.is_some()
    }

    /// Whether the run streams `custom` (else the task's stream writer is a no-op).
    #[getter]
    fn streams_custom(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.wants(modes::CUSTOM))
    }

    /// Whether the run streams `tools` (LangChain tools the node calls then report).
    #[getter]
    fn streams_tools(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.wants(modes::TOOLS))
    }

    #[getter]
    fn streams_messages(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(|s| s.wants(modes::MESSAGES))
    }
}

/// Sends `chunk` to the `messages` stream of `node`'s task: its metadata is
/// `metadata` (the model run's own) under `task_meta` (the task's, which wins, as
/// the engine's). Its id is marked as shown, so that the node's returned message
/// with that id is not shown again.
pub(super) fn emit_chunk(
    sink: &StreamSink,
    node: &str,
    task_meta: Option<&Bound<'_, PyDict>>,
    chunk: Bound<'_, PyAny>,
    metadata: Option<Bound<'_, PyDict>>,
) -> PyResult<()> {
    let py = chunk.py();
    let meta = match task_meta {
        Some(m) => m.copy()?,
        None => PyDict::new(py),
    };
    // A LangChain model run's chunk (`metadata`: the run's own) shows what the run's
    // callbacks see under LangGraph: the task's metadata, with the task's namespace as
    // `checkpoint_ns` (langchain-core copies it from the config's `configurable`),
    // under the run's own keys (its `ls_integration` is the model's, not the graph's).
    if let Some(m) = metadata {
        if let Some(ns) = meta.get_item("langgraph_checkpoint_ns")? {
            if !meta.contains("checkpoint_ns")? {
                meta.set_item("checkpoint_ns", ns)?;
            }
        }
        meta.update(m.as_mapping())?;
    }
    if let Ok(Some(id)) = chunk
        .getattr(intern!(py, "id"))?
        .extract::<Option<String>>()
    {
        sink.first_sight(&id);
    }
    sink.emit(modes::MESSAGES, || StreamEvent::Message {
        chunk: host(chunk),
        node: node.to_owned(),
        meta: Some(host(meta.into_any())),
    });
    Ok(())
}

/// A copy of the run's context with the task's scratchpad set, so that
/// `interrupt()` and `get_stream_writer()` find it.
pub(super) fn task_context<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, TaskScratch>)> {
    task_context_with(py, env, ctx, ScratchParts::default())
}

/// [`task_context`] whose scratchpad is made with `parts`.
pub(super) fn task_context_with<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
    parts: ScratchParts,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, TaskScratch>)> {
    let scratch = task_scratch(py, env, ctx, parts)?;
    let h = helpers(py)?;
    #[cfg(not(feature = "abi3"))]
    {
        // Through CPython's context API: no `copy` / `run` method calls, no argument
        // tuples for them.
        // SAFETY: the GIL is held; `PyContext_Copy` returns a new reference or NULL
        // with an exception set.
        let context = unsafe {
            Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyContext_Copy(env.context.as_ptr()))?
        };
        super::super::env::in_context(py, &context, || {
            super::super::env::var_set(h.task_var.bind(py), scratch.as_any())?;
            if scratch.borrow().streams_langchain_runs() {
                h.stream_langchain_runs.bind(py).call1((&scratch,))?;
            }
            Ok(())
        })?;
        Ok((context, scratch))
    }
    #[cfg(feature = "abi3")]
    {
        let context = env.context.bind(py).call_method0(intern!(py, "copy"))?;
        let var = h.task_var.bind(py);
        context.call_method1(
            intern!(py, "run"),
            (var.getattr(intern!(py, "set"))?, &scratch),
        )?;
        if scratch.borrow().streams_langchain_runs() {
            context.call_method1(
                intern!(py, "run"),
                (h.stream_langchain_runs.bind(py), &scratch),
            )?;
        }
        Ok((context, scratch))
    }
}

/// The scratchpad of the task `ctx`, made with `parts`.
fn task_scratch<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
    parts: ScratchParts,
) -> PyResult<Bound<'py, TaskScratch>> {
    Bound::new(
        py,
        TaskScratch {
            resume: ctx
                .resume
                .iter()
                .map(|v| val_to_py(py, v).map(Bound::unbind))
                .collect::<PyResult<_>>()?,
            next: 0,
            stream: ctx.stream.clone(),
            node: ctx.node.clone(),
            task_id: ctx.task_id.clone(),
            pushed: parts.pushed,
            state: parts.state,
            nest: ctx.nest.clone(),
            calls: ctx.calls.clone(),
            remaining_steps: ctx.remaining_steps,
            progress: ctx.progress.clone(),
            failed: ctx.failed.clone(),
            subgraph_calls: AtomicUsize::new(0),
            step: ctx.step,
            meta: match &ctx.stream {
                Some(s) if s.wants(modes::MESSAGES) => {
                    Some(super::returned::message_meta(py, env, ctx)?.unbind())
                }
                _ => None,
            },
        },
    )
}

/// Calls `f(*args, **kw)` in a fresh copy of the run's context with the task's
/// scratchpad set: what [`task_context_with`] then [`call_in`] do, through CPython's
/// context API (no `Context.copy` / `Context.run` calls, no argument tuples for them).
/// For a call that returns its result (a sync node); the limited API has no such
/// functions, so that build takes the two steps.
pub(super) fn call_in_task_with<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
    parts: ScratchParts,
    f: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kw: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(not(feature = "abi3"))]
    {
        let scratch = task_scratch(py, env, ctx, parts)?;
        let h = helpers(py)?;
        super::super::env::in_context_copy(py, env.context.bind(py), || {
            super::super::env::var_set(h.task_var.bind(py), scratch.as_any())?;
            if scratch.borrow().streams_langchain_runs() {
                h.stream_langchain_runs.bind(py).call1((&scratch,))?;
            }
            // A thread CPython ends inside the node (the interpreter exiting) parks.
            super::super::exiting::call(f, &args, kw)
        })
    }
    #[cfg(feature = "abi3")]
    {
        let (context, _) = task_context_with(py, env, ctx, parts)?;
        call_in(py, &context, f, args, kw)
    }
}

/// Calls `f(*args, **kw)` in `context`, as `context.run(f, *args, **kw)` does
/// (through CPython's context API where there is one: no argument tuple with `f`).
pub(super) fn call_in<'py>(
    py: Python<'py>,
    context: &Bound<'py, PyAny>,
    f: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kw: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(not(feature = "abi3"))]
    {
        // A thread CPython ends inside the call (the interpreter exiting) parks.
        super::super::env::in_context(py, context, || super::super::exiting::call(f, &args, kw))
    }
    #[cfg(feature = "abi3")]
    {
        let mut all = vec![f.clone()];
        all.extend(args.iter());
        context.call_method(intern!(py, "run"), PyTuple::new(py, all)?, kw)
    }
}

/// Calls `f(*args, **kw)` in a task context (see [`call_in_task_with`]).
pub(super) fn call_in_task<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
    f: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kw: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    call_in_task_with(py, env, ctx, ScratchParts::default(), f, args, kw)
}
