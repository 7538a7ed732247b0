//! The engine of `ironloop.StateGraph`: Python nodes, routers and reducers on the
//! core step loop, and the state as Python sees it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::aio::{run_async, AsyncResult, MakeCoro};
use super::convert::{import_cached, value_from_py, value_to_py};
use super::env::PyRunEnv;
use super::errors::error;
use super::messages::{message_from_py, message_to_py};
use super::pool::Pool;
use super::runtime::{block_on, can_drive_inline, drive_inline};
use super::toolnode::{command_class, is_graph_interrupt, tool_results, ToolNodeCore};
use crate::checkpoint::{CheckpointRecord, Checkpointer, MemorySaver, SqliteSaver};
use crate::executor::RunContext;
use crate::graph::{
    modes, ChannelKind, Goto, Graph, GraphError, GraphSpec, HostValue, InterruptInfo, MessageList,
    NodeFailure, NodeOutput, NodeRunner, Reducer, Resume, Router, RunInput, RunOptions, RunResult,
    Snapshot, StateView, StreamEvent, StreamSink, TaskContext, Val, ValueCodec, END, START,
};
use crate::message::{Message, MessageKind};

// ---------------------------------------------------------------------------------
// Values

/// A Python object in a channel.
pub struct PyObj(pub Py<PyAny>);

static ENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static DECODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl HostValue for PyObj {
    fn to_json(&self) -> Result<Value, String> {
        Python::attach(|py| {
            let obj = self.0.bind(py);
            // Plain scalars go straight across; anything with structure goes through
            // the encoder, which keeps tuples, sets, dataclasses and models typed.
            if obj.is_none()
                || obj.cast::<PyString>().is_ok()
                || obj.cast::<pyo3::types::PyInt>().is_ok()
                || obj.cast::<pyo3::types::PyFloat>().is_ok()
            {
                if let Ok(v) = pythonize::depythonize::<Value>(obj) {
                    return Ok(v);
                }
            }
            let enc = import_cached(py, &ENCODE, "ironloop._serde", "encode")
                .map_err(|e| e.to_string())?;
            let v = enc.call1((obj,)).map_err(|e| e.value(py).to_string())?;
            pythonize::depythonize::<Value>(&v).map_err(|e| e.to_string())
        })
    }

    fn type_name(&self) -> String {
        Python::attach(|py| {
            let t = self.0.bind(py).get_type();
            t.fully_qualified_name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn host(obj: Bound<'_, PyAny>) -> Val {
    Val::Host(Arc::new(PyObj(obj.unbind())))
}

/// The Python object of a value (messages as a fresh list).
fn val_to_py<'py>(py: Python<'py>, v: &Val) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Val::Host(h) => match h.as_any().downcast_ref::<PyObj>() {
            Some(o) => Ok(o.0.bind(py).clone()),
            None => value_to_py(py, &h.to_json().map_err(PyValueError::new_err)?),
        },
        Val::Json(j) => value_to_py(py, j),
        Val::Messages(l) => {
            let list = PyList::empty(py);
            for m in l.iter() {
                list.append(message_to_py(py, m.clone())?)?;
            }
            Ok(list.into_any())
        }
    }
}

/// Decodes checkpointed JSON into Python objects (messages revived).
struct PyCodec;

impl ValueCodec for PyCodec {
    fn decode(&self, _channel: &str, value: Value) -> Result<Val, GraphError> {
        Python::attach(|py| {
            let obj = value_to_py(py, &value)?;
            let dec = import_cached(py, &DECODE, "ironloop._serde", "decode")?;
            Ok(host(dec.call1((obj,))?))
        })
        .map_err(|e: PyErr| {
            GraphError::Checkpoint(format!("cannot decode a checkpointed value: {e}"))
        })
    }
}

fn messages_val(obj: &Bound<'_, PyAny>) -> PyResult<Val> {
    let list: Vec<Arc<Message>> = if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        obj.try_iter()?
            .map(|m| message_from_py(&m?))
            .collect::<PyResult<_>>()?
    } else {
        vec![message_from_py(obj)?]
    };
    Ok(Val::Messages(MessageList::from_messages(list)))
}

// ---------------------------------------------------------------------------------
// Shared graph state (Python side)

/// A messages channel's Python list, kept between steps: extended in place when the
/// history only grew and nobody else holds the list, so a step does not rebuild the
/// history's Python objects.
struct MsgCache {
    list: Py<PyList>,
    len: usize,
    generation: u64,
    last: Option<Arc<Message>>,
}

struct Shared {
    /// Builds the node input from a dict (dataclass / pydantic schemas).
    state_factory: Option<Py<PyAny>>,
    messages_channels: HashSet<String>,
    channels: HashSet<String>,
    caches: Mutex<HashMap<String, MsgCache>>,
    store: Option<Py<PyAny>>,
}

impl Shared {
    /// The messages list for a node, reusing the cached Python objects.
    fn messages_list<'py>(
        &self,
        py: Python<'py>,
        ch: &str,
        l: &MessageList,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = caches.get_mut(ch) {
            let grew_only = c.generation == l.generation()
                && c.len <= l.len()
                && match (&c.last, c.len.checked_sub(1).and_then(|i| l.get(i))) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, _) => c.len == 0,
                    _ => false,
                };
            let list = c.list.bind(py);
            // Extend in place only if the list is ours alone and unmodified.
            if grew_only
                && unsafe { pyo3::ffi::Py_REFCNT(list.as_ptr()) } == 1
                && list.len() == c.len
            {
                for i in c.len..l.len() {
                    list.append(message_to_py(py, l.get(i).unwrap().clone())?)?;
                }
                c.len = l.len();
                c.last = l.last().cloned();
                return Ok(list.clone().into_any());
            }
            if grew_only && list.len() == c.len {
                // Someone kept the old list: copy it (pointers only) and extend the copy.
                let copy = list.get_slice(0, c.len);
                for i in c.len..l.len() {
                    copy.append(message_to_py(py, l.get(i).unwrap().clone())?)?;
                }
                *c = MsgCache {
                    list: copy.clone().unbind(),
                    len: l.len(),
                    generation: l.generation(),
                    last: l.last().cloned(),
                };
                return Ok(copy.into_any());
            }
        }
        let list = PyList::empty(py);
        for m in l.iter() {
            list.append(message_to_py(py, m.clone())?)?;
        }
        caches.insert(
            ch.to_owned(),
            MsgCache {
                list: list.clone().unbind(),
                len: l.len(),
                generation: l.generation(),
                last: l.last().cloned(),
            },
        );
        Ok(list.into_any())
    }

    /// The state as a dict of Python objects.
    fn state_dict<'py>(&self, py: Python<'py>, view: &StateView) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, v) in view.iter() {
            let obj = match v {
                Val::Messages(l) => self.messages_list(py, name, l)?,
                v => val_to_py(py, v)?,
            };
            d.set_item(name, obj)?;
        }
        Ok(d)
    }

    /// What a node receives: the dict, or the schema's object made from it.
    fn node_input<'py>(&self, py: Python<'py>, view: &StateView) -> PyResult<Bound<'py, PyAny>> {
        let d = self.state_dict(py, view)?;
        match &self.state_factory {
            Some(f) => f.bind(py).call1((d,)),
            None => Ok(d.into_any()),
        }
    }

    /// Channel writes from a dict-like update.
    fn writes_from(
        &self,
        py: Python<'_>,
        node: &str,
        upd: &Bound<'_, PyAny>,
        out: &mut NodeOutput,
    ) -> PyResult<()> {
        let d = match upd.cast::<PyDict>() {
            Ok(d) => d.clone(),
            Err(_) => {
                let conv = py.import("ironloop.graph")?.getattr("_as_update")?;
                conv.call1((upd, node))?.cast_into::<PyDict>()?
            }
        };
        for (k, v) in d.iter() {
            let k: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "node {node:?} returned an update with a non-str key"
                ))
            })?;
            if !self.channels.contains(&k) {
                let mut known: Vec<_> = self.channels.iter().cloned().collect();
                known.sort();
                return Err(error(
                    py,
                    "InvalidUpdateError",
                    format!(
                        "node {node:?} wrote key {k:?}, which is not in the state schema \
                         (keys: {})",
                        known.join(", ")
                    ),
                ));
            }
            let val = if self.messages_channels.contains(&k) {
                messages_val(&v)?
            } else {
                host(v)
            };
            out.writes.push((k, val));
        }
        Ok(())
    }

    fn goto_from(&self, py: Python<'_>, g: &Bound<'_, PyAny>, out: &mut Vec<Goto>) -> PyResult<()> {
        if g.is_none() {
            return Ok(());
        }
        if let Ok(s) = g.cast::<PyString>() {
            let s = s.to_str()?;
            out.push(if s == END {
                Goto::End
            } else {
                Goto::Node(s.to_owned())
            });
            return Ok(());
        }
        if g.is_instance(send_class(py)?)? {
            let node: String = g.getattr("node")?.extract()?;
            out.push(Goto::Send(node, host(g.getattr("arg")?)));
            return Ok(());
        }
        if g.cast::<PyList>().is_ok() || g.cast::<PyTuple>().is_ok() {
            for item in g.try_iter()? {
                self.goto_from(py, &item?, out)?;
            }
            return Ok(());
        }
        Err(PyTypeError::new_err(format!(
            "cannot route to {}: use a node name, END, Send(...) or a list of them",
            g.repr()?
        )))
    }

    /// A node's return value as writes and routing.
    fn output(
        &self,
        py: Python<'_>,
        node: &str,
        r: &Bound<'_, PyAny>,
        out: &mut NodeOutput,
    ) -> PyResult<()> {
        if r.is_none() {
            return Ok(());
        }
        if r.is_instance(command_class(py)?)? {
            let g = r.getattr("graph")?;
            if !g.is_none() {
                return Err(PyValueError::new_err(
                    "Command(graph=...) to a parent graph is not supported yet",
                ));
            }
            let upd = r.getattr("update")?;
            if !upd.is_none() {
                if upd.cast::<PyList>().is_ok() || upd.cast::<PyTuple>().is_ok() {
                    // A list of (key, value) pairs, as LangGraph allows.
                    let d = PyDict::new(py);
                    for kv in upd.try_iter()? {
                        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = kv?.extract()?;
                        d.set_item(k, v)?;
                    }
                    self.writes_from(py, node, &d, out)?;
                } else {
                    self.writes_from(py, node, &upd, out)?;
                }
            }
            self.goto_from(py, &r.getattr("goto")?, &mut out.goto)?;
            return Ok(());
        }
        if r.cast::<PyList>().is_ok() || r.cast::<PyTuple>().is_ok() {
            for item in r.try_iter()? {
                self.output(py, node, &item?, out)?;
            }
            return Ok(());
        }
        self.writes_from(py, node, r, out)
    }
}

static SEND: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TASK_VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn send_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    import_cached(py, &SEND, "ironloop.types", "Send")
}

/// A node error as the run's failure; the original exception is kept for re-raising.
fn node_failure(py: Python<'_>, node: &str, task: &str, e: PyErr, env: &PyRunEnv) -> NodeFailure {
    if is_graph_interrupt(py, &e) {
        let v = e
            .value(py)
            .getattr("value")
            .map(host)
            .unwrap_or(Val::Json(Value::Null));
        return NodeFailure::Interrupt(v);
    }
    if let Some(tb) = e.traceback(py) {
        let _ = e.value(py).setattr("__traceback__", tb);
    }
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let message = format!("{ty}: {}", e.value(py));
    env.errors
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(format!("task:{task}"), e);
    NodeFailure::Error(GraphError::Node {
        node: node.to_owned(),
        message,
    })
}

fn env_of(ctx: &TaskContext) -> Result<Arc<PyRunEnv>, NodeFailure> {
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
// Per-task scratchpad: interrupt() and the stream writer

/// What `interrupt()` and `get_stream_writer()` use inside a node.
#[pyclass(name = "_TaskScratch", module = "ironloop._ironloop")]
pub struct TaskScratch {
    resume: Vec<Py<PyAny>>,
    next: usize,
    stream: Option<StreamSink>,
    node: String,
    task_id: String,
}

impl TaskScratch {
    /// Where a subgraph run inside this task streams, if the parent asked for
    /// subgraph events.
    fn nested_sink(&self) -> Option<StreamSink> {
        self.stream
            .as_ref()
            .and_then(|s| s.nested(format!("{}:{}", self.node, self.task_id)))
    }
}

#[pymethods]
impl TaskScratch {
    /// The k-th call returns the k-th resume value; past them, the run pauses.
    fn interrupt(&mut self, py: Python<'_>, value: Py<PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(v) = self.resume.get(self.next) {
            self.next += 1;
            return Ok(v.clone_ref(py));
        }
        let cls = py.import("ironloop.errors")?.getattr("GraphInterrupt")?;
        Err(PyErr::from_value(cls.call1((value,))?))
    }

    /// Sends `payload` to the `custom` stream.
    fn write(&self, payload: Bound<'_, PyAny>) {
        if let Some(s) = &self.stream {
            s.emit(modes::CUSTOM, || StreamEvent::Custom(host(payload)));
        }
    }

    #[getter]
    fn node(&self) -> &str {
        &self.node
    }

    /// The token sink of `stream_mode="messages"`: (chunk) pairs with this node.
    fn write_message(&self, chunk: Bound<'_, PyAny>) {
        if let Some(s) = &self.stream {
            let node = self.node.clone();
            s.emit(modes::MESSAGES, || StreamEvent::Message {
                chunk: host(chunk),
                node,
            });
        }
    }

    #[getter]
    fn streams_messages(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(|s| s.wants(modes::MESSAGES))
    }
}

/// A copy of the run's context with the task's scratchpad set, so that
/// `interrupt()` and `get_stream_writer()` find it.
fn task_context<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, TaskScratch>)> {
    let context = env.context.bind(py).call_method0(intern!(py, "copy"))?;
    let scratch = Bound::new(
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
        },
    )?;
    let var = import_cached(py, &TASK_VAR, "ironloop._runtime", "task_var")?;
    context.call_method1(
        intern!(py, "run"),
        (var.getattr(intern!(py, "set"))?, &scratch),
    )?;
    Ok((context, scratch))
}

/// Calls `f(*args, **kw)` in `context`.
fn call_in<'py>(
    py: Python<'py>,
    context: &Bound<'py, PyAny>,
    f: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kw: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut all = vec![f.clone()];
    all.extend(args.iter());
    context.call_method(intern!(py, "run"), PyTuple::new(py, all)?, kw)
}

/// Calls `f(*args, **kw)` in a task context (see [`task_context`]).
fn call_in_task<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
    f: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    kw: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (context, _) = task_context(py, env, ctx)?;
    call_in(py, &context, f, args, kw)
}

// ---------------------------------------------------------------------------------
// Nodes

/// Which optional parameters a node function takes.
#[derive(Clone, Copy, Default)]
struct Wants {
    config: bool,
    store: bool,
    writer: bool,
}

struct PyNode {
    name: String,
    func: Py<PyAny>,
    is_async: bool,
    /// An async variant, used under `ainvoke` (e.g. a model's `ainvoke`).
    afunc: Option<Py<PyAny>>,
    wants: Wants,
    shared: Arc<Shared>,
}

impl PyNode {
    fn call<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
        arg: &Option<Val>,
        ctx: &TaskContext,
        env: &PyRunEnv,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let input = match arg {
            Some(a) => val_to_py(py, a)?,
            None => self.shared.node_input(py, view)?,
        };
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
            kw.set_item(
                "writer",
                py.import("ironloop.graph")?.getattr("_task_writer")?,
            )?;
        }
        let kw = if kw.is_empty() { None } else { Some(&kw) };
        let (context, _) = task_context(py, env, ctx)?;
        let r = call_in(
            py,
            &context,
            self.func.bind(py),
            PyTuple::new(py, [input])?,
            kw,
        )?;
        Ok((r, context))
    }

    fn finish(
        &self,
        py: Python<'_>,
        r: PyResult<Bound<'_, PyAny>>,
        ctx: &TaskContext,
        env: &PyRunEnv,
    ) -> Result<NodeOutput, NodeFailure> {
        let r = r.map_err(|e| node_failure(py, &self.name, &ctx.task_id, e, env))?;
        let mut out = NodeOutput::default();
        self.shared
            .output(py, &self.name, &r, &mut out)
            .map_err(|e| node_failure(py, &self.name, &ctx.task_id, e, env))?;
        if !r.is_none() {
            out.update = Some(host(r));
        }
        Ok(out)
    }
}

#[async_trait]
impl NodeRunner for PyNode {
    async fn run(
        &self,
        view: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let env = env_of(&ctx)?;
        let use_async = self.is_async || (self.afunc.is_some() && env.caller_loop);
        if use_async {
            let func = match (&self.afunc, env.caller_loop) {
                (Some(a), true) => Python::attach(|py| a.clone_ref(py)),
                _ => Python::attach(|py| self.func.clone_ref(py)),
            };
            let this = PyNodeRef {
                func,
                name: self.name.clone(),
                wants: self.wants,
                shared: self.shared.clone(),
            };
            let (ctx2, env2) = (ctx.clone(), env.clone());
            let this2 = PyNodeRef {
                func: Python::attach(|py| this.func.clone_ref(py)),
                name: this.name.clone(),
                wants: this.wants,
                shared: this.shared.clone(),
            };
            let (ctx3, env3) = (ctx.clone(), env.clone());
            let make: MakeCoro = Box::new(move |py| {
                let n = this.node(py);
                let (coro, context) = n.call(py, &view, &arg, &ctx2, &env2)?;
                Ok((coro.unbind(), Some(context.unbind())))
            });
            let r = run_async(&env, make, move |py, r| {
                let n = this2.node(py);
                match r {
                    AsyncResult::Done(res) => n.finish(py, res, &ctx3, &env3),
                    AsyncResult::Cancelled => Err(NodeFailure::Error(GraphError::Cancelled)),
                }
            })
            .await;
            return r.unwrap_or_else(|e| {
                Err(NodeFailure::Error(GraphError::Node {
                    node: self.name.clone(),
                    message: e,
                }))
            });
        }
        if ctx.inline {
            return Python::attach(|py| {
                let r = self.call(py, &view, &arg, &ctx, &env).map(|(r, _)| r);
                self.finish(py, r, &ctx, &env)
            });
        }
        let (tx, rx) = oneshot::channel();
        let this = PyNodeRef {
            func: Python::attach(|py| self.func.clone_ref(py)),
            name: self.name.clone(),
            wants: self.wants,
            shared: self.shared.clone(),
        };
        let ctx2 = ctx.clone();
        Pool::global().submit(Box::new(move |py| {
            if tx.is_closed() {
                return;
            }
            let n = this.node(py);
            let r = n.call(py, &view, &arg, &ctx2, &env).map(|(r, _)| r);
            let _ = tx.send(n.finish(py, r, &ctx2, &env));
        }));
        rx.await
            .unwrap_or(Err(NodeFailure::Error(GraphError::Cancelled)))
    }
}

/// The parts of a node a job on another thread needs.
struct PyNodeRef {
    func: Py<PyAny>,
    name: String,
    wants: Wants,
    shared: Arc<Shared>,
}

impl PyNodeRef {
    fn node(&self, py: Python<'_>) -> PyNode {
        PyNode {
            name: self.name.clone(),
            func: self.func.clone_ref(py),
            is_async: false,
            afunc: None,
            wants: self.wants,
            shared: self.shared.clone(),
        }
    }
}

/// A `ToolNode` in a graph: reads the last AI message from the messages channel and
/// runs its calls through the executor, with no Python in between.
struct ToolsNode {
    name: String,
    core: Py<ToolNodeCore>,
    channel: String,
    shared: Arc<Shared>,
}

#[async_trait]
impl NodeRunner for ToolsNode {
    async fn run(
        &self,
        view: StateView,
        arg: Option<Val>,
        ctx: TaskContext,
    ) -> Result<NodeOutput, NodeFailure> {
        let env = env_of(&ctx)?;
        let calls = match (&arg, view.get(&self.channel)) {
            (Some(a), _) => Python::attach(|py| -> PyResult<_> {
                // Send("tools", tool_call): run that one call.
                let obj = val_to_py(py, a)?;
                Ok(vec![super::convert::tool_call_from_py(&obj)?])
            })
            .map_err(|e| {
                Python::attach(|py| node_failure(py, &self.name, &ctx.task_id, e, &env))
            })?,
            (None, Some(Val::Messages(l))) => l
                .iter()
                .rev()
                .find(|m| matches!(m.kind, MessageKind::Ai { .. }))
                .map(|m| m.tool_calls().to_vec())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let (executor, state, tool_env) = Python::attach(|py| -> PyResult<_> {
            let core = self.core.borrow(py);
            let state = self.shared.state_dict(py, &view)?.into_any().unbind();
            // Tools see the task's scratchpad (for interrupt()) in their context, and
            // their progress goes to the graph's custom stream.
            let (context, scratch) = task_context(py, &env, &ctx)?;
            let on_progress = match &ctx.stream {
                Some(s) if s.wants(modes::CUSTOM) => Some(scratch.getattr("write")?.unbind()),
                _ => None,
            };
            let tool_env = Arc::new(PyRunEnv {
                context: context.unbind(),
                event_loop: env.event_loop.clone_ref(py),
                caller_loop: env.caller_loop,
                state: Some(state.clone_ref(py)),
                store: self.shared.store.as_ref().map(|s| s.clone_ref(py)),
                on_progress,
                config: env.config.as_ref().map(|c| c.clone_ref(py)),
                errors: Default::default(),
                pending: Default::default(),
                drain_scheduled: Default::default(),
            });
            Ok((core.executor.clone(), state, tool_env))
        })
        .map_err(|e| Python::attach(|py| node_failure(py, &self.name, &ctx.task_id, e, &env)))?;
        let _ = state;
        let run = RunContext {
            cancel: ctx.cancel.clone(),
            host: Some(tool_env.clone()),
            inline: ctx.inline,
            ..Default::default()
        };
        let results = executor.execute(&calls, &run).await;
        Python::attach(|py| {
            let core = self.core.borrow(py);
            let (msgs, commands) =
                tool_results(py, core.handle_errors.bind(py), results, &tool_env)
                    .map_err(|e| node_failure(py, &self.name, &ctx.task_id, e, &env))?;
            let mut out = NodeOutput::default();
            for c in commands {
                self.shared
                    .output(py, &self.name, c.bind(py), &mut out)
                    .map_err(|e| node_failure(py, &self.name, &ctx.task_id, e, &env))?;
            }
            if !msgs.is_empty() {
                out.writes.push((
                    self.channel.clone(),
                    Val::Messages(MessageList::from_messages(msgs.clone())),
                ));
            }
            let d = PyDict::new(py);
            let list = PyList::empty(py);
            for m in msgs {
                list.append(
                    message_to_py(py, m)
                        .map_err(|e| node_failure(py, &self.name, &ctx.task_id, e, &env))?,
                )
                .map_err(|e| node_failure(py, &self.name, &ctx.task_id, e, &env))?;
            }
            let _ = d.set_item(&self.channel, list);
            out.update = Some(host(d.into_any()));
            Ok(out)
        })
    }
}

// ---------------------------------------------------------------------------------
// Routers and reducers

struct PyRouter {
    path: Py<PyAny>,
    path_map: Option<Py<PyDict>>,
    shared: Arc<Shared>,
}

fn map_goto(py: Python<'_>, map: &Option<Py<PyDict>>, key: &Bound<'_, PyAny>) -> PyResult<Goto> {
    if let Some(m) = map {
        let m = m.bind(py);
        let target = m.get_item(key)?.ok_or_else(|| {
            PyValueError::new_err(format!(
                "the routing function returned {}, which is not in its path_map (keys: {})",
                key.repr().map(|r| r.to_string()).unwrap_or_default(),
                m.keys().repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        let t: String = target.extract()?;
        return Ok(if t == END { Goto::End } else { Goto::Node(t) });
    }
    let t: String = key.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "a routing function must return a node name, END, Send(...) or a list of them; got {}",
            key.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    Ok(if t == END { Goto::End } else { Goto::Node(t) })
}

impl Router for PyRouter {
    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        Python::attach(|py| -> PyResult<Vec<Goto>> {
            let input = self.shared.node_input(py, view)?;
            let r = match ctx.host.clone().and_then(|h| h.downcast::<PyRunEnv>().ok()) {
                Some(env) => call_in_task(
                    py,
                    &env,
                    ctx,
                    self.path.bind(py),
                    PyTuple::new(py, [input])?,
                    None,
                )?,
                None => self.path.bind(py).call1((input,))?,
            };
            if r.hasattr("__await__")? {
                return Err(PyTypeError::new_err(
                    "async routing functions are not supported: make the path function sync",
                ));
            }
            let mut out = Vec::new();
            let items: Vec<Bound<'_, PyAny>> =
                if r.cast::<PyList>().is_ok() || r.cast::<PyTuple>().is_ok() {
                    r.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![r]
                };
            for i in items {
                if i.is_instance(send_class(py)?)? {
                    out.push(Goto::Send(
                        i.getattr("node")?.extract()?,
                        host(i.getattr("arg")?),
                    ));
                } else {
                    out.push(map_goto(py, &self.path_map, &i)?);
                }
            }
            Ok(out)
        })
        .map_err(|e| Python::attach(|py| route_error(py, ctx, e)))
    }
}

fn route_error(py: Python<'_>, ctx: &TaskContext, e: PyErr) -> GraphError {
    let message = format!("routing after {:?} failed: {}", ctx.node, e.value(py));
    if let Some(env) = ctx.host.clone().and_then(|h| h.downcast::<PyRunEnv>().ok()) {
        env.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("task:{}", ctx.task_id), e);
    }
    GraphError::Node {
        node: ctx.node.clone(),
        message,
    }
}

/// `tools_condition` in Rust: to the tools node when the last message has tool calls.
struct ToolsCondition {
    channel: String,
    path_map: Option<Py<PyDict>>,
}

impl Router for ToolsCondition {
    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        let has_calls = match view.get(&self.channel) {
            Some(Val::Messages(l)) => l.last().is_some_and(|m| !m.tool_calls().is_empty()),
            _ => false,
        };
        let key = if has_calls { "tools" } else { END };
        Python::attach(|py| map_goto(py, &self.path_map, PyString::new(py, key).as_any()))
            .map(|g| vec![g])
            .map_err(|e| Python::attach(|py| route_error(py, ctx, e)))
    }
}

struct PyReducer {
    func: Py<PyAny>,
    initial: Option<Py<PyAny>>,
}

impl Reducer for PyReducer {
    fn reduce(&self, channel: &str, current: Option<Val>, update: Val) -> Result<Val, GraphError> {
        Python::attach(|py| -> PyResult<Val> {
            let cur = match (&current, &self.initial) {
                (Some(c), _) => val_to_py(py, c)?,
                (None, Some(f)) => f.bind(py).call0()?,
                (None, None) => return Ok(update.clone()),
            };
            let upd = val_to_py(py, &update)?;
            Ok(host(self.func.bind(py).call1((cur, upd))?))
        })
        .map_err(|e| {
            GraphError::InvalidUpdate(format!("the reducer of channel {channel:?} failed: {e}"))
        })
    }
}

// ---------------------------------------------------------------------------------
// Checkpointers

/// Keeps checkpoints in memory (deltas: each step's writes).
#[pyclass(name = "MemorySaver", module = "ironloop", frozen)]
pub struct PyMemorySaver {
    pub inner: Arc<MemorySaver>,
}

#[pymethods]
impl PyMemorySaver {
    #[new]
    fn new() -> Self {
        PyMemorySaver {
            inner: Arc::new(MemorySaver::new()),
        }
    }

    /// Approximate bytes of checkpoint data held.
    fn approx_bytes(&self) -> usize {
        self.inner.approx_bytes()
    }
}

/// Checkpoints in a SQLite file (WAL): durable across crashes, shareable between
/// processes.
#[pyclass(name = "SqliteSaver", module = "ironloop", frozen)]
pub struct PySqliteSaver {
    inner: Mutex<Option<Arc<SqliteSaver>>>,
    path: String,
}

#[pymethods]
impl PySqliteSaver {
    #[new]
    fn new(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let p = path.clone();
        let saver = py
            .detach(move || SqliteSaver::open(&p))
            .map_err(|e| error(py, "CheckpointError", e.0))?;
        Ok(PySqliteSaver {
            inner: Mutex::new(Some(Arc::new(saver))),
            path: path.display().to_string(),
        })
    }

    #[classmethod]
    fn from_conn_string(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        conn: String,
    ) -> PyResult<Self> {
        let path = conn
            .strip_prefix("sqlite:///")
            .or_else(|| conn.strip_prefix("file:"))
            .unwrap_or(&conn);
        Self::new(py, path.into())
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Closes the file; the saver can no longer be used.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(s) = s {
            py.detach(move || s.close())
                .map_err(|e| error(py, "CheckpointError", e.0))?;
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _a: Py<PyAny>,
        _b: Py<PyAny>,
        _c: Py<PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

fn checkpointer_from(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Checkpointer>> {
    if let Ok(m) = obj.cast::<PyMemorySaver>() {
        return Ok(m.get().inner.clone());
    }
    if let Ok(s) = obj.cast::<PySqliteSaver>() {
        return s
            .get()
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .map(|s| s as Arc<dyn Checkpointer>)
            .ok_or_else(|| error(py, "CheckpointError", "this SqliteSaver is closed"));
    }
    Err(PyTypeError::new_err(format!(
        "checkpointer must be MemorySaver or SqliteSaver, got {}",
        obj.get_type().name()?
    )))
}

// ---------------------------------------------------------------------------------
// The compiled graph

/// `(name, kind, reducer, initial)` for each channel, as `StateGraph.compile` sends it.
type ChannelArg = (String, String, Option<Py<PyAny>>, Option<Py<PyAny>>);
/// `(name, function, kind, is_async, wanted parameters, async variant)` for each node.
type NodeArg = (
    String,
    Py<PyAny>,
    String,
    bool,
    Vec<String>,
    Option<Py<PyAny>>,
);
/// `(source, path, kind, path_map, possible ends)` for each conditional edge.
type BranchArg = (
    String,
    Py<PyAny>,
    String,
    Option<Py<PyDict>>,
    Option<Vec<String>>,
);

#[pyclass(name = "_GraphCore", module = "ironloop._ironloop", frozen)]
pub struct GraphCore {
    graph: Arc<Graph>,
    shared: Arc<Shared>,
}

/// What a Python call passes for a run.
struct RunSetup {
    input: RunInput,
    opts: RunOptions,
    env: Arc<PyRunEnv>,
}

fn parent_sink(py: Python<'_>) -> PyResult<Option<StreamSink>> {
    let var = import_cached(py, &TASK_VAR, "ironloop._runtime", "task_var")?;
    let cur = var.call_method1(intern!(py, "get"), (py.None(),))?;
    Ok(match cur.cast::<TaskScratch>() {
        Ok(sc) => sc.borrow().nested_sink(),
        Err(_) => None,
    })
}

fn config_str(cfg: &Bound<'_, PyAny>, key: &str) -> PyResult<Option<String>> {
    let Ok(d) = cfg.cast::<PyDict>() else {
        return Ok(None);
    };
    let Some(c) = d.get_item("configurable")? else {
        return Ok(None);
    };
    let Ok(c) = c.cast::<PyDict>() else {
        return Ok(None);
    };
    match c.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.str()?.to_string())),
        _ => Ok(None),
    }
}

impl GraphCore {
    fn setup(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyAny>>,
        event_loop: Option<Py<PyAny>>,
        stream: Option<StreamSink>,
    ) -> PyResult<RunSetup> {
        // A run inside a task of a streaming run (a subgraph, a sub-agent) streams
        // into it when it asked for subgraph events.
        let stream = match stream {
            Some(s) => Some(s),
            None => parent_sink(py)?,
        };
        let mut opts = RunOptions {
            stream,
            ..Default::default()
        };
        let cfg = match config {
            Some(c) if !c.is_none() => c.clone(),
            _ => PyDict::new(py).into_any(),
        };
        if !cfg.is_none() && cfg.cast::<PyDict>().is_err() {
            return Err(PyTypeError::new_err(
                "config must be a dict, e.g. {\"configurable\": {\"thread_id\": \"1\"}}",
            ));
        }
        opts.thread_id = config_str(&cfg, "thread_id")?;
        opts.checkpoint_id = config_str(&cfg, "checkpoint_id")?;
        if let Ok(d) = cfg.cast::<PyDict>() {
            if let Some(r) = d.get_item("recursion_limit")? {
                let n: i64 = r
                    .extract()
                    .map_err(|_| PyTypeError::new_err("recursion_limit must be an int"))?;
                if n < 1 {
                    return Err(PyValueError::new_err(format!(
                        "recursion_limit must be at least 1, got {n}"
                    )));
                }
                opts.recursion_limit = n as usize;
            }
            if let Some(m) = d.get_item("metadata")? {
                opts.metadata = value_from_py(&m, "config metadata")?;
            }
        }
        let run_input = if input.is_none() {
            RunInput::Continue
        } else if input.is_instance(command_class(py)?)? {
            let resume = input.getattr("resume")?;
            if resume.is_none() {
                return Err(PyValueError::new_err(
                    "as a graph input, Command must carry resume=...; to change the state use update_state()",
                ));
            }
            if let Ok(d) = resume.cast::<PyDict>() {
                // {interrupt_id: value} when several interrupts are pending.
                let ids_look_like_tasks = d.keys().iter().all(|k| {
                    k.extract::<String>()
                        .map(|s| s.contains(':'))
                        .unwrap_or(false)
                });
                if ids_look_like_tasks && !d.is_empty() {
                    let mut m = Vec::new();
                    for (k, v) in d.iter() {
                        m.push((k.extract()?, host(v)));
                    }
                    RunInput::Resume(Resume::ById(m))
                } else {
                    RunInput::Resume(Resume::One(host(resume)))
                }
            } else {
                RunInput::Resume(Resume::One(host(resume)))
            }
        } else {
            let mut out = NodeOutput::default();
            let d = if input.cast::<PyDict>().is_ok() {
                input.clone()
            } else {
                py.import("ironloop.graph")?
                    .getattr("_as_update")?
                    .call1((input, START))?
            };
            self.shared.writes_from(py, START, &d, &mut out)?;
            RunInput::Values(out.writes)
        };
        let env = PyRunEnv::capture(
            py,
            event_loop,
            None,
            self.shared.store.as_ref().map(|s| s.clone_ref(py)),
            None,
            Some(cfg.unbind()),
        )?;
        opts.host = Some(env.clone());
        Ok(RunSetup {
            input: run_input,
            opts,
            env,
        })
    }

    /// Starts a run whose events (and then its result) go to `send`; returns how to
    /// shape them for Python.
    fn start_stream(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyAny>>,
        event_loop: Option<Py<PyAny>>,
        (bits, wanted, single, subgraphs): (u8, u8, bool, bool),
        send: StreamSend,
    ) -> PyResult<GraphStreamShape> {
        let send: Arc<dyn Fn(StreamMsg) + Send + Sync> = Arc::from(send);
        let events = send.clone();
        let sink = StreamSink {
            modes: bits,
            subgraphs,
            send: Arc::new(move |ev| events(StreamMsg::Event(ev))),
        };
        let s = self.setup(py, input, config, event_loop, Some(sink))?;
        let thread = s.opts.thread_id.clone().unwrap_or_default();
        let cancel = s.opts.cancel.clone();
        let (graph, stop) = (self.graph.clone(), cancel.clone());
        super::runtime::runtime().spawn(async move {
            let r = tokio::select! {
                r = graph.run(s.input, s.opts) => r,
                _ = stop.cancelled() => Err(GraphError::Cancelled),
            };
            send(StreamMsg::Done(r));
        });
        Ok(GraphStreamShape {
            shared: self.shared.clone(),
            env: s.env,
            wanted,
            single,
            thread,
            subgraphs,
            cancel,
        })
    }

    fn output<'py>(
        &self,
        py: Python<'py>,
        r: Result<RunResult, GraphError>,
        env: &PyRunEnv,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = r.map_err(|e| graph_error(py, e, env))?;
        let d = self.shared.state_dict(py, &r.state)?;
        if !r.interrupts.is_empty() {
            d.set_item("__interrupt__", interrupts_to_py(py, &r.interrupts)?)?;
        }
        Ok(d.into_any())
    }

    fn snapshot_to_py<'py>(
        &self,
        py: Python<'py>,
        thread: &str,
        s: Snapshot,
    ) -> PyResult<Bound<'py, PyAny>> {
        let values = self.shared.state_dict(py, &s.state)?;
        snapshot(
            py,
            thread,
            &s.record,
            s.parent.as_ref(),
            values.into_any(),
            &s.pending,
            self,
        )
    }
}

fn interrupts_to_py<'py>(py: Python<'py>, is: &[InterruptInfo]) -> PyResult<Bound<'py, PyAny>> {
    let cls = py.import("ironloop.types")?.getattr("Interrupt")?;
    let items = is
        .iter()
        .filter(|i| !i.id.starts_with("before:") && !i.id.starts_with("after:"))
        .map(|i| cls.call1((val_to_py(py, &i.value)?, &i.id)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any())
}

/// The Python exception for a failed run: the node's own exception when it raised.
fn graph_error(py: Python<'_>, e: GraphError, env: &PyRunEnv) -> PyErr {
    match &e {
        GraphError::Node { .. } => {
            let mut errors = env.errors.lock().unwrap_or_else(|p| p.into_inner());
            let key = errors.keys().find(|k| k.starts_with("task:")).cloned();
            if let Some(err) = key.and_then(|k| errors.remove(&k)) {
                return err;
            }
            error(py, "IronloopError", e.to_string())
        }
        GraphError::InvalidUpdate(m) => error(py, "InvalidUpdateError", m.clone()),
        GraphError::Recursion(_) => error(py, "GraphRecursionError", e.to_string()),
        GraphError::Serialize { .. } => error(py, "CheckpointSerializationError", e.to_string()),
        GraphError::Checkpoint(_) => error(py, "CheckpointError", e.to_string()),
        GraphError::Build(m) => PyValueError::new_err(m.clone()),
        GraphError::Config(m) => PyValueError::new_err(m.clone()),
        GraphError::Cancelled => error(py, "ToolCancelledError", "the run was cancelled"),
    }
}

fn config_dict<'py>(py: Python<'py>, thread: &str, id: &str) -> PyResult<Bound<'py, PyDict>> {
    let c = PyDict::new(py);
    c.set_item("thread_id", thread)?;
    c.set_item("checkpoint_ns", "")?;
    c.set_item("checkpoint_id", id)?;
    let d = PyDict::new(py);
    d.set_item("configurable", c)?;
    Ok(d)
}

fn snapshot<'py>(
    py: Python<'py>,
    thread: &str,
    r: &CheckpointRecord,
    parent: Option<&CheckpointRecord>,
    values: Bound<'py, PyAny>,
    pending: &[crate::checkpoint::PendingWrite],
    core: &GraphCore,
) -> PyResult<Bound<'py, PyAny>> {
    let types = py.import("ironloop.types")?;
    let next = PyTuple::new(py, r.next.iter().map(|t| t.node.as_str()))?;
    let interrupt_cls = types.getattr("Interrupt")?;
    let task_cls = types.getattr("PregelTask")?;
    let mut all_interrupts = Vec::new();
    let mut tasks = Vec::new();
    for t in &r.next {
        let mut its = Vec::new();
        for w in pending
            .iter()
            .filter(|w| w.task_id == t.id && w.channel == "__interrupt__")
        {
            let v = PyCodec
                .decode("__interrupt__", w.value.clone())
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            let i = interrupt_cls.call1((val_to_py(py, &v)?, &t.id))?;
            all_interrupts.push(i.clone());
            its.push(i);
        }
        let kw = PyDict::new(py);
        kw.set_item("interrupts", PyTuple::new(py, its)?)?;
        tasks.push(task_cls.call((&t.id, &t.node), Some(&kw))?);
    }
    let metadata = value_to_py(py, &r.metadata)?;
    let created = py
        .import("datetime")?
        .getattr("datetime")?
        .call_method1(
            "fromtimestamp",
            (
                r.created_at,
                py.import("datetime")?.getattr("timezone")?.getattr("utc")?,
            ),
        )?
        .call_method0("isoformat")?;
    let parent_config = match parent.map(|p| p.id.as_str()).or(r.parent_id.as_deref()) {
        Some(p) => config_dict(py, thread, p)?.into_any(),
        None => py.None().into_bound(py),
    };
    let _ = core;
    types.getattr("StateSnapshot")?.call1((
        values,
        next,
        config_dict(py, thread, &r.id)?,
        metadata,
        created,
        parent_config,
        PyTuple::new(py, tasks)?,
        PyTuple::new(py, all_interrupts)?,
    ))
}

enum StreamMsg {
    Event(StreamEvent),
    Done(Result<RunResult, GraphError>),
}

/// `(namespace, mode, chunk)` of a stream event.
type StreamItem<'py> = (Vec<String>, &'static str, Bound<'py, PyAny>);

/// A stream event as `(namespace, mode, chunk)`; the namespace is empty for the
/// run's own events and lists `"node:task"` steps for a subgraph's.
fn event_to_py<'py>(
    py: Python<'py>,
    shared: &Shared,
    thread: &str,
    ev: StreamEvent,
) -> PyResult<Option<StreamItem<'py>>> {
    let mut ns = Vec::new();
    let mut ev = ev;
    while let StreamEvent::Nested { ns: n, ev: inner } = ev {
        ns.push(n);
        ev = *inner;
    }
    let nested = !ns.is_empty();
    Ok(flat_event_to_py(py, shared, thread, ev, nested)?.map(|(m, c)| (ns, m, c)))
}

fn flat_event_to_py<'py>(
    py: Python<'py>,
    shared: &Shared,
    thread: &str,
    ev: StreamEvent,
    nested: bool,
) -> PyResult<Option<(&'static str, Bound<'py, PyAny>)>> {
    Ok(Some(match ev {
        // A subgraph's state is not this graph's: no cached message lists for it.
        StreamEvent::Values(v) if nested => {
            let d = PyDict::new(py);
            for (name, val) in v.iter() {
                d.set_item(name, val_to_py(py, val)?)?;
            }
            ("values", d.into_any())
        }
        StreamEvent::Nested { .. } => return Ok(None),
        StreamEvent::Values(v) => ("values", shared.state_dict(py, &v)?.into_any()),
        StreamEvent::Updates { node, update } => {
            let d = PyDict::new(py);
            d.set_item(
                node,
                match update {
                    Some(u) => val_to_py(py, &u)?,
                    None => py.None().into_bound(py),
                },
            )?;
            ("updates", d.into_any())
        }
        StreamEvent::Interrupt(is) => {
            let d = PyDict::new(py);
            d.set_item("__interrupt__", interrupts_to_py(py, &is)?)?;
            ("updates", d.into_any())
        }
        StreamEvent::Custom(v) => ("custom", val_to_py(py, &v)?),
        StreamEvent::Message { chunk, node } => {
            let meta = PyDict::new(py);
            meta.set_item("langgraph_node", node)?;
            (
                "messages",
                PyTuple::new(py, [val_to_py(py, &chunk)?, meta.into_any()])?.into_any(),
            )
        }
        StreamEvent::DebugTask {
            step,
            id,
            node,
            input,
        } => {
            let p = PyDict::new(py);
            p.set_item("id", id)?;
            p.set_item("name", node)?;
            p.set_item(
                "input",
                match input {
                    Some(v) => val_to_py(py, &v)?,
                    None => py.None().into_bound(py),
                },
            )?;
            p.set_item("triggers", PyList::empty(py))?;
            ("debug", debug_event(py, "task", step, p)?)
        }
        StreamEvent::DebugTaskResult {
            step,
            id,
            node,
            writes,
            error,
            interrupts,
        } => {
            let p = PyDict::new(py);
            p.set_item("id", id)?;
            p.set_item("name", node)?;
            p.set_item("error", error)?;
            let result = PyList::empty(py);
            for (c, v) in &writes {
                result.append(PyTuple::new(
                    py,
                    [PyString::new(py, c).into_any(), val_to_py(py, v)?],
                )?)?;
            }
            p.set_item("result", result)?;
            let its = PyList::empty(py);
            for v in &interrupts {
                its.append(val_to_py(py, v)?)?;
            }
            p.set_item("interrupts", its)?;
            ("debug", debug_event(py, "task_result", step, p)?)
        }
        StreamEvent::DebugCheckpoint {
            step,
            checkpoint_id,
            parent_id,
            state,
            next,
            metadata,
        } => {
            let p = PyDict::new(py);
            p.set_item(
                "config",
                match &checkpoint_id {
                    Some(id) => config_dict(py, thread, id)?.into_any(),
                    None => py.None().into_bound(py),
                },
            )?;
            p.set_item(
                "parent_config",
                match &parent_id {
                    Some(id) => config_dict(py, thread, id)?.into_any(),
                    None => py.None().into_bound(py),
                },
            )?;
            p.set_item("values", shared.state_dict(py, &state)?)?;
            p.set_item("metadata", value_to_py(py, &metadata)?)?;
            p.set_item("next", PyList::new(py, &next)?)?;
            p.set_item(
                "tasks",
                PyList::new(
                    py,
                    next.iter().map(|n| {
                        let d = PyDict::new(py);
                        let _ = d.set_item("name", n);
                        d
                    }),
                )?,
            )?;
            ("debug", debug_event(py, "checkpoint", step, p)?)
        }
    }))
}

fn debug_event<'py>(
    py: Python<'py>,
    kind: &str,
    step: i64,
    payload: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    d.set_item("type", kind)?;
    let now = py.import("datetime")?.getattr("datetime")?.call_method1(
        "now",
        (py.import("datetime")?.getattr("timezone")?.getattr("utc")?,),
    )?;
    d.set_item("timestamp", now.call_method0("isoformat")?)?;
    d.set_item("step", step)?;
    d.set_item("payload", payload)?;
    Ok(d.into_any())
}

fn parse_modes(modes_obj: &Bound<'_, PyAny>) -> PyResult<(u8, bool)> {
    let names: Vec<String> = if let Ok(s) = modes_obj.extract::<String>() {
        vec![s]
    } else {
        modes_obj.extract()?
    };
    let single = modes_obj.extract::<String>().is_ok();
    let mut bits = 0u8;
    for n in names {
        bits |= match n.as_str() {
            "values" => modes::VALUES,
            "updates" => modes::UPDATES,
            "custom" => modes::CUSTOM,
            "messages" => modes::MESSAGES,
            "debug" => modes::DEBUG,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown stream_mode {other:?}: use values, updates, custom, messages or debug"
                )))
            }
        };
    }
    Ok((bits, single))
}

/// Items of `stream()`: chunks, or (mode, chunk) when several modes were asked for.
#[pyclass(name = "_GraphStream", module = "ironloop._ironloop")]
pub struct GraphStream {
    rx: Mutex<std::sync::mpsc::Receiver<StreamMsg>>,
    shape: GraphStreamShape,
    done: bool,
}

/// What the next stream message means for an iterator.
enum Next {
    Item(Py<PyAny>),
    Skip,
    End,
}

/// Where a streamed run's messages go.
type StreamSend = Box<dyn Fn(StreamMsg) + Send + Sync>;

fn mode_bit(name: &str) -> u8 {
    match name {
        "values" => modes::VALUES,
        "updates" => modes::UPDATES,
        "custom" => modes::CUSTOM,
        "messages" => modes::MESSAGES,
        "debug" => modes::DEBUG,
        _ => 0,
    }
}

impl GraphStreamShape {
    /// What a message means for the iterator; a failed run raises its error.
    fn next_item(&self, py: Python<'_>, msg: StreamMsg) -> PyResult<Next> {
        match msg {
            StreamMsg::Event(ev) => match event_to_py(py, &self.shared, &self.thread, ev)? {
                Some((ns, mode, chunk)) => Ok(match self.item(py, ns, mode, chunk)? {
                    Some(i) => Next::Item(i.unbind()),
                    None => Next::Skip,
                }),
                None => Ok(Next::Skip),
            },
            StreamMsg::Done(r) => {
                r.map_err(|e| graph_error(py, e, &self.env))?;
                Ok(Next::End)
            }
        }
    }

    /// A stream item: the chunk, prefixed by its namespace (with `subgraphs=True`)
    /// and its mode (when several modes were asked for); `None` for modes not asked for.
    fn item<'py>(
        &self,
        py: Python<'py>,
        ns: Vec<String>,
        mode: &'static str,
        chunk: Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.wanted & mode_bit(mode) == 0 {
            return Ok(None);
        }
        let mut parts = Vec::with_capacity(3);
        if self.subgraphs {
            parts.push(PyTuple::new(py, ns)?.into_any());
        }
        if !self.single {
            parts.push(PyString::new(py, mode).into_any());
        }
        if parts.is_empty() {
            return Ok(Some(chunk));
        }
        parts.push(chunk);
        Ok(Some(PyTuple::new(py, parts)?.into_any()))
    }
}

#[pymethods]
impl GraphStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            if self.done {
                return Ok(None);
            }
            let msg = {
                let rx = &self.rx;
                loop {
                    let r = py.detach(|| {
                        rx.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .recv_timeout(std::time::Duration::from_millis(100))
                    });
                    match r {
                        Ok(m) => break m,
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                            if let Err(e) = py.check_signals() {
                                self.shape.cancel.cancel();
                                self.done = true;
                                return Err(e);
                            }
                        }
                        Err(_) => {
                            self.done = true;
                            return Ok(None);
                        }
                    }
                }
            };
            match self.shape.next_item(py, msg) {
                Ok(Next::Item(item)) => return Ok(Some(item)),
                Ok(Next::Skip) => {}
                Ok(Next::End) => {
                    self.done = true;
                    return Ok(None);
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
    }
}

impl Drop for GraphStream {
    fn drop(&mut self) {
        // Abandoning the iterator stops the run.
        if !self.done {
            self.shape.cancel.cancel();
        }
    }
}

/// `astream()`'s source: `await next()` gives the next item, or raises StopAsyncIteration.
#[pyclass(name = "_AsyncGraphStream", module = "ironloop._ironloop")]
pub struct AsyncGraphStream {
    rx: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<StreamMsg>>>,
    shape: Arc<GraphStreamShape>,
}

struct GraphStreamShape {
    shared: Arc<Shared>,
    env: Arc<PyRunEnv>,
    wanted: u8,
    single: bool,
    thread: String,
    subgraphs: bool,
    cancel: CancellationToken,
}

#[pymethods]
impl AsyncGraphStream {
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rx = self.rx.clone();
        let shape = self.shape.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            loop {
                let msg = rx.lock().await.recv().await;
                let next = Python::attach(|py| match msg {
                    Some(m) => shape.next_item(py, m),
                    None => Ok(Next::End),
                })?;
                match next {
                    Next::Item(item) => return Ok(item),
                    Next::Skip => {}
                    Next::End => return Err(pyo3::exceptions::PyStopAsyncIteration::new_err(())),
                }
            }
        })
    }

    fn cancel(&self) {
        self.shape.cancel.cancel();
    }
}

#[pymethods]
impl GraphCore {
    #[new]
    #[pyo3(signature = (*, channels, nodes, edges, joins, branches, checkpointer=None,
                        interrupt_before=Vec::new(), interrupt_after=Vec::new(), store=None,
                        state_factory=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        channels: Vec<ChannelArg>,
        nodes: Vec<NodeArg>,
        edges: Vec<(String, String)>,
        joins: Vec<(Vec<String>, String)>,
        branches: Vec<BranchArg>,
        checkpointer: Option<Bound<'_, PyAny>>,
        interrupt_before: Vec<String>,
        interrupt_after: Vec<String>,
        store: Option<Py<PyAny>>,
        state_factory: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let mut spec = GraphSpec::default();
        let mut messages_channels = HashSet::new();
        let mut all = HashSet::new();
        for (name, kind, reducer, initial) in channels {
            let k = match kind.as_str() {
                "last" => ChannelKind::LastValue,
                "messages" => {
                    messages_channels.insert(name.clone());
                    ChannelKind::Messages
                }
                "reducer" => ChannelKind::Reducer(Arc::new(PyReducer {
                    func: reducer.ok_or_else(|| {
                        PyValueError::new_err("reducer channel without a reducer")
                    })?,
                    initial,
                })),
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown channel kind {other}"
                    )))
                }
            };
            all.insert(name.clone());
            spec.channels.push((name, k));
        }
        let shared = Arc::new(Shared {
            state_factory,
            messages_channels,
            channels: all,
            caches: Mutex::new(HashMap::new()),
            store,
        });
        for (name, func, kind, is_async, wants, afunc) in nodes {
            let runner: Arc<dyn NodeRunner> =
                match kind.as_str() {
                    "tools" => {
                        let core = func
                            .bind(py)
                            .getattr("_core")?
                            .cast_into::<ToolNodeCore>()?
                            .unbind();
                        let channel =
                            if shared.messages_channels.contains("messages") {
                                "messages".to_owned()
                            } else {
                                shared.messages_channels.iter().next().cloned().ok_or_else(
                                    || {
                                        PyValueError::new_err(format!(
                                "ToolNode {name:?} needs a messages channel in the state \
                                 (e.g. messages: Annotated[list, add_messages])"
                            ))
                                    },
                                )?
                            };
                        Arc::new(ToolsNode {
                            name: name.clone(),
                            core,
                            channel,
                            shared: shared.clone(),
                        })
                    }
                    _ => Arc::new(PyNode {
                        name: name.clone(),
                        func,
                        is_async,
                        afunc,
                        wants: Wants {
                            config: wants.iter().any(|w| w == "config"),
                            store: wants.iter().any(|w| w == "store"),
                            writer: wants.iter().any(|w| w == "writer"),
                        },
                        shared: shared.clone(),
                    }),
                };
            spec.nodes.push(crate::graph::NodeSpec { name, runner });
        }
        spec.edges = edges;
        spec.joins = joins;
        for (source, path, kind, path_map, ends) in branches {
            let router: Arc<dyn Router> = match kind.as_str() {
                "tools_condition" => {
                    let channel = if shared.messages_channels.contains("messages") {
                        "messages"
                    } else {
                        ""
                    };
                    Arc::new(ToolsCondition {
                        channel: channel.to_owned(),
                        path_map,
                    })
                }
                _ => Arc::new(PyRouter {
                    path,
                    path_map,
                    shared: shared.clone(),
                }),
            };
            spec.branches.push(crate::graph::BranchSpec {
                source,
                router,
                ends,
            });
        }
        let cp = match checkpointer {
            Some(c) if !c.is_none() => Some(checkpointer_from(py, &c)?),
            _ => None,
        };
        let graph = Graph::compile(
            spec,
            cp,
            Arc::new(PyCodec),
            interrupt_before,
            interrupt_after,
        )
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(GraphCore {
            graph: Arc::new(graph),
            shared,
        })
    }

    #[pyo3(signature = (input, config=None))]
    fn invoke<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        config: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut s = self.setup(py, input, config, None, None)?;
        let graph = self.graph.clone();
        let r = if can_drive_inline() {
            s.opts.inline = true;
            drive_inline(py, graph.run(s.input, s.opts))
        } else {
            let cancel = s.opts.cancel.clone();
            block_on(py, async move { graph.run(s.input, s.opts).await }, cancel)?
        };
        self.output(py, r, &s.env)
    }

    #[pyo3(signature = (input, config, event_loop))]
    fn ainvoke<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        config: Option<&Bound<'py, PyAny>>,
        event_loop: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.setup(py, input, config, Some(event_loop), None)?;
        let graph = self.graph.clone();
        let shared = self.shared.clone();
        let env = s.env.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let guard = s.opts.cancel.clone().drop_guard();
            let r = graph.run(s.input, s.opts).await;
            guard.disarm();
            Python::attach(|py| {
                let core = GraphCore { graph, shared };
                core.output(py, r, &env).map(Bound::unbind)
            })
        })
    }

    #[pyo3(signature = (input, config, stream_mode, event_loop=None, subgraphs=false))]
    fn stream(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyAny>>,
        stream_mode: &Bound<'_, PyAny>,
        event_loop: Option<Py<PyAny>>,
        subgraphs: bool,
    ) -> PyResult<Py<PyAny>> {
        let (bits, single) = parse_modes(stream_mode)?;
        let wanted = {
            let names: Vec<String> = stream_mode
                .extract::<String>()
                .map(|s| vec![s])
                .or_else(|_| stream_mode.extract())?;
            names.iter().map(|n| mode_bit(n)).fold(0, |a, b| a | b)
        };
        let start = |py, lp, send| {
            self.start_stream(
                py,
                input,
                config,
                lp,
                (bits, wanted, single, subgraphs),
                send,
            )
        };
        if let Some(lp) = event_loop {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let shape = start(py, Some(lp), Box::new(move |m| drop(tx.send(m))))?;
            let st = AsyncGraphStream {
                rx: Arc::new(tokio::sync::Mutex::new(rx)),
                shape: Arc::new(shape),
            };
            return Ok(Bound::new(py, st)?.into_any().unbind());
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let shape = start(py, None, Box::new(move |m| drop(tx.send(m))))?;
        let st = GraphStream {
            rx: Mutex::new(rx),
            shape,
            done: false,
        };
        Ok(Bound::new(py, st)?.into_any().unbind())
    }

    #[pyo3(signature = (config))]
    fn get_state<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let thread = config_str(config, "thread_id")?.ok_or_else(|| {
            PyValueError::new_err("get_state needs config={\"configurable\": {\"thread_id\": ...}}")
        })?;
        let id = config_str(config, "checkpoint_id")?;
        let graph = self.graph.clone();
        let t2 = thread.clone();
        let env = PyRunEnv::capture(py, None, None, None, None, None)?;
        let snap = block_on(
            py,
            async move { graph.load(&t2, id.as_deref()).await },
            CancellationToken::new(),
        )?
        .map_err(|e| graph_error(py, e, &env))?;
        match snap {
            Some(s) => self.snapshot_to_py(py, &thread, s),
            None => {
                let types = py.import("ironloop.types")?;
                let c = PyDict::new(py);
                c.set_item("thread_id", &thread)?;
                let cfg = PyDict::new(py);
                cfg.set_item("configurable", c)?;
                types.getattr("StateSnapshot")?.call1((
                    PyDict::new(py),
                    PyTuple::empty(py),
                    cfg,
                    py.None(),
                    py.None(),
                    py.None(),
                    PyTuple::empty(py),
                    PyTuple::empty(py),
                ))
            }
        }
    }

    #[pyo3(signature = (config, limit=None, before=None))]
    fn get_state_history<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        limit: Option<usize>,
        before: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let thread = config_str(config, "thread_id")?
            .ok_or_else(|| PyValueError::new_err("get_state_history needs a thread_id"))?;
        let before = match before {
            Some(b) => config_str(b, "checkpoint_id")?,
            None => None,
        };
        let graph = self.graph.clone();
        let t2 = thread.clone();
        let env = PyRunEnv::capture(py, None, None, None, None, None)?;
        let snaps = block_on(
            py,
            async move { graph.history(&t2, limit, before.as_deref()).await },
            CancellationToken::new(),
        )?
        .map_err(|e| graph_error(py, e, &env))?;
        let out = PyList::empty(py);
        for s in snaps {
            out.append(self.snapshot_to_py(py, &thread, s)?)?;
        }
        Ok(out)
    }

    #[pyo3(signature = (config, values, as_node=None))]
    fn update_state<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        values: &Bound<'py, PyAny>,
        as_node: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let thread = config_str(config, "thread_id")?
            .ok_or_else(|| PyValueError::new_err("update_state needs a thread_id"))?;
        let id = config_str(config, "checkpoint_id")?;
        let mut out = NodeOutput::default();
        if !values.is_none() {
            self.shared.output(
                py,
                as_node.as_deref().unwrap_or("update_state"),
                values,
                &mut out,
            )?;
        }
        let graph = self.graph.clone();
        let env = PyRunEnv::capture(py, None, None, None, None, None)?;
        let host_env: Arc<dyn std::any::Any + Send + Sync> = env.clone();
        let t2 = thread.clone();
        let new_id = block_on(
            py,
            async move {
                graph
                    .update_state(&t2, id.as_deref(), out.writes, as_node, Some(host_env))
                    .await
            },
            CancellationToken::new(),
        )?
        .map_err(|e| graph_error(py, e, &env))?;
        config_dict(py, &thread, &new_id)
    }

    /// Node names, for drawing.
    fn node_names(&self) -> Vec<String> {
        self.graph
            .spec()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect()
    }
}

/// Rebuilds a message from its `model_dump()` dict.
#[pyfunction]
pub fn _message_from_dict<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let v = value_from_py(d, "a message dict")?;
    let m: Message = serde_json::from_value(v)
        .map_err(|e| PyValueError::new_err(format!("not a message: {e}")))?;
    message_to_py(py, Arc::new(m))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GraphCore>()?;
    m.add_class::<GraphStream>()?;
    m.add_class::<AsyncGraphStream>()?;
    m.add_class::<TaskScratch>()?;
    m.add_class::<PyMemorySaver>()?;
    m.add_class::<PySqliteSaver>()?;
    m.add_function(wrap_pyfunction!(_message_from_dict, m)?)?;
    Ok(())
}
