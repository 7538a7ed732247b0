//! `stream()` / `astream()`: events of a run as Python items, per stream mode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use tokio_util::sync::CancellationToken;

use super::super::convert::{iso_utc, value_to_py};
use super::super::messages::message_to_py;
use super::super::runtime::drive_inline;
use super::run::{interrupts_to_py, ThreadAt};
use super::values::{val_to_py, Shared};
use crate::graph::options::stream_mode_bit;
use crate::graph::{
    GraphError, InterruptInfo, Reserved, RunResult, StreamEvent, ToolEvent, ToolReturn, Val,
};

pub(super) enum StreamMsg {
    Event(StreamEvent),
    Done(Result<RunResult, GraphError>),
}

/// `(namespace, mode, chunk)` of a stream event.
pub(super) type StreamItem<'py> = (Vec<String>, &'static str, Bound<'py, PyAny>);

/// A stream event as `(namespace, mode, chunk)`; the namespace is empty for the
/// run's own events and lists `"node:task"` steps for a subgraph's.
pub(super) fn event_to_py<'py>(
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

pub(super) fn flat_event_to_py<'py>(
    py: Python<'py>,
    shared: &Shared,
    thread: &str,
    ev: StreamEvent,
    nested: bool,
) -> PyResult<Option<(&'static str, Bound<'py, PyAny>)>> {
    Ok(Some(match ev {
        // A subgraph's state is not this graph's: no cached message lists for it.
        StreamEvent::Nested { .. } => return Ok(None),
        StreamEvent::Values { state, interrupts } => {
            let v = if nested {
                // A subgraph's state is not this graph's: no cached message lists for it.
                let d = PyDict::new(py);
                for (name, val) in state.iter() {
                    d.set_item(name, val_to_py(py, val)?)?;
                }
                d.into_any()
            } else {
                shared.state_value(py, &state)?
            };
            match v.cast::<PyDict>() {
                Ok(d) if !interrupts.is_empty() => d.set_item(
                    Reserved::Interrupt.as_str(),
                    PyTuple::new(py, interrupts_to_py(py, &interrupts)?)?,
                )?,
                _ => {}
            }
            ("values", v)
        }
        StreamEvent::Updates {
            node,
            update,
            writes,
            cached,
        } => {
            let value = match update {
                Some(u) => val_to_py(py, &u)?,
                None if !writes.is_empty() => {
                    let w = PyDict::new(py);
                    for (c, v) in &writes {
                        w.set_item(c, val_to_py(py, v)?)?;
                    }
                    w.into_any()
                }
                None => py.None().into_bound(py),
            };
            let d = PyDict::new(py);
            d.set_item(node, value)?;
            if cached {
                let m = PyDict::new(py);
                m.set_item("cached", true)?;
                d.set_item("__metadata__", m)?;
            }
            ("updates", d.into_any())
        }
        StreamEvent::Interrupt(is) => {
            let d = PyDict::new(py);
            d.set_item(
                Reserved::Interrupt.as_str(),
                PyTuple::new(py, interrupts_to_py(py, &is)?)?,
            )?;
            ("updates", d.into_any())
        }
        StreamEvent::Custom(v) => ("custom", val_to_py(py, &v)?),
        StreamEvent::Tool(t) => ("tools", tool_event(py, t)?),
        StreamEvent::Message { chunk, node, meta } => {
            let extra = meta.map(|m| val_to_py(py, &m)).transpose()?;
            let meta = PyDict::new(py);
            if let Some(extra) = extra {
                meta.update(extra.cast::<PyDict>()?.as_mapping())?;
            }
            meta.set_item("langgraph_node", node)?;
            (
                "messages",
                PyTuple::new(py, [val_to_py(py, &chunk)?, meta.into_any()])?.into_any(),
            )
        }
        // The debug events, each with a payload of its own.
        other => return Ok(debug_to_py(py, shared, thread, other)?.map(|d| ("debug", d))),
    }))
}

/// A debug event as LangGraph's `debug` mode shows it (`task`, `task_result`,
/// `checkpoint`); `None` for an event of another mode.
fn debug_to_py<'py>(
    py: Python<'py>,
    shared: &Shared,
    thread: &str,
    ev: StreamEvent,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(Some(match ev {
        StreamEvent::DebugTask {
            step,
            id,
            node,
            input,
            state,
            metadata,
        } => {
            let p = PyDict::new(py);
            p.set_item("id", id)?;
            p.set_item("name", &node)?;
            let pushed = input.is_some();
            p.set_item(
                "input",
                match (input, state) {
                    (Some(v), _) => val_to_py(py, &v)?,
                    (None, Some(state)) => shared.state_value(py, &state)?,
                    (None, None) => py.None().into_bound(py),
                },
            )?;
            // LangGraph's channel names: an edge's `branch:to:<node>`, a `Send`'s push.
            let trigger = if pushed {
                "__pregel_push".to_owned()
            } else {
                format!("branch:to:{node}")
            };
            p.set_item("triggers", (trigger,))?;
            if let Some(m) = metadata {
                p.set_item("metadata", value_to_py(py, &m)?)?;
            }
            debug_event(py, "task", step, p)?
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
            // The exception itself (the node's own when it raised one), as LangGraph.
            p.set_item("error", error.map(|e| PyErr::from(e).into_value(py)))?;
            p.set_item("result", task_result(py, &writes)?)?;
            p.set_item("interrupts", interrupt_dicts(py, &interrupts)?)?;
            debug_event(py, "task_result", step, p)?
        }
        StreamEvent::DebugCheckpoint {
            step,
            checkpoint_ns,
            checkpoint_id,
            parent_id,
            state,
            next,
            next_ids,
            interrupts,
            metadata,
        } => {
            let p = PyDict::new(py);
            // A subgraph's checkpoint is named as `get_state_history` names it: its
            // namespace and `checkpoint_map`.
            let at = ThreadAt {
                thread_id: thread.to_owned(),
                checkpoint_ns,
            };
            let config = |id: &Option<String>| match id {
                Some(id) => Ok(at.mapped_config(py, id, &metadata)?.into_any()),
                None => Ok::<_, PyErr>(py.None().into_bound(py)),
            };
            p.set_item("config", config(&checkpoint_id)?)?;
            p.set_item("parent_config", config(&parent_id)?)?;
            p.set_item("values", shared.state_value(py, &state)?)?;
            p.set_item("metadata", value_to_py(py, &metadata)?)?;
            p.set_item("next", PyList::new(py, &next)?)?;
            let tasks = PyList::empty(py);
            for (i, (n, id)) in next.iter().zip(&next_ids).enumerate() {
                // LangGraph's task entry, before the task has run: the questions it
                // asked when the run resumes it.
                let d = PyDict::new(py);
                d.set_item("id", id)?;
                d.set_item("name", n)?;
                let asked = interrupts.get(i).map(Vec::as_slice).unwrap_or_default();
                d.set_item("interrupts", interrupt_dicts(py, asked)?.to_tuple())?;
                d.set_item("state", py.None())?;
                tasks.append(d)?;
            }
            p.set_item("tasks", tasks)?;
            debug_event(py, "checkpoint", step, p)?
        }
        _ => return Ok(None),
    }))
}

/// A task's interrupts as LangGraph's `task_result` shows them: each `Interrupt` as a
/// dict of its fields (`value`, `id`, `response_schema`).
fn interrupt_dicts<'py>(py: Python<'py>, is: &[InterruptInfo]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for i in interrupts_to_py(py, is)? {
        let d = PyDict::new(py);
        for field in ["value", "id", "response_schema"] {
            d.set_item(field, i.getattr(field)?)?;
        }
        list.append(d)?;
    }
    Ok(list)
}

/// A task's writes as LangGraph's `task_result` shows them: `{channel: value}`, and
/// `{channel: {"$writes": [v1, v2, ...]}}` for a channel written more than once.
pub(super) fn task_result<'py>(
    py: Python<'py>,
    writes: &[(String, Val)],
) -> PyResult<Bound<'py, PyDict>> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (c, _) in writes {
        *counts.entry(c.as_str()).or_default() += 1;
    }
    let result = PyDict::new(py);
    for (c, v) in writes {
        let v = val_to_py(py, v)?;
        if counts[c.as_str()] == 1 {
            result.set_item(c, v)?;
            continue;
        }
        let list = match result.get_item(c)? {
            Some(held) => held.get_item("$writes")?.cast_into::<PyList>()?,
            None => {
                let list = PyList::empty(py);
                let held = PyDict::new(py);
                held.set_item("$writes", &list)?;
                result.set_item(c, held)?;
                list
            }
        };
        list.append(v)?;
    }
    Ok(result)
}

pub(super) fn debug_event<'py>(
    py: Python<'py>,
    kind: &str,
    step: i64,
    payload: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    d.set_item("type", kind)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    d.set_item("timestamp", iso_utc(py, now)?)?;
    d.set_item("step", step)?;
    d.set_item("payload", payload)?;
    Ok(d.into_any())
}

/// A `tools` chunk, as LangGraph's `tools` stream mode shows it: `{"event":
/// "tool-started", "tool_call_id", "tool_name", "input"}`, `{"event":
/// "tool-output-delta", "tool_call_id", "delta"}`, `{"event": "tool-finished",
/// "tool_call_id", "output"}` (a tool node's call: the tool message the model reads)
/// or `{"event": "tool-error", "tool_call_id", "message"}`. ironloop adds keys of
/// its own when it knows them, which LangGraph's consumers pass over: the tool's
/// `label` (started), `duration` in seconds (finished, error) and `child_loop_id`,
/// the id of the run the call started (a sub-agent's; delta, finished).
fn tool_event(py: Python<'_>, t: ToolEvent) -> PyResult<Bound<'_, PyAny>> {
    let d = PyDict::new(py);
    let (child, seconds) = match t {
        ToolEvent::Started {
            id,
            name,
            input,
            label,
        } => {
            d.set_item("event", "tool-started")?;
            d.set_item("tool_call_id", id)?;
            d.set_item("tool_name", name)?;
            d.set_item("input", val_to_py(py, &input)?)?;
            if let Some(l) = label {
                d.set_item("label", l)?;
            }
            (None, None)
        }
        ToolEvent::OutputDelta {
            id,
            delta,
            child_loop_id,
        } => {
            d.set_item("event", "tool-output-delta")?;
            d.set_item("tool_call_id", id)?;
            d.set_item("delta", val_to_py(py, &delta)?)?;
            (child_loop_id, None)
        }
        ToolEvent::Finished {
            id,
            output,
            seconds,
            child_loop_id,
        } => {
            d.set_item("event", "tool-finished")?;
            d.set_item("tool_call_id", id)?;
            let output = match output {
                ToolReturn::Message(m) => message_to_py(py, m)?,
                ToolReturn::Value(v) => val_to_py(py, &v)?,
            };
            d.set_item("output", output)?;
            (child_loop_id, seconds)
        }
        ToolEvent::Error {
            id,
            message,
            seconds,
        } => {
            d.set_item("event", "tool-error")?;
            d.set_item("tool_call_id", id)?;
            d.set_item("message", message)?;
            (None, seconds)
        }
    };
    if let Some(s) = seconds {
        d.set_item("duration", s)?;
    }
    if let Some(c) = child {
        d.set_item("child_loop_id", c)?;
    }
    Ok(d.into_any())
}

/// Items of `stream()`: chunks, or (mode, chunk) when several modes were asked for.
///
/// The run is driven by the thread that pulls the items (`run`), as `invoke` drives
/// its own: a step's only task (a Python node, quick tools) runs on that thread with
/// no hand-over to the runtime's workers and back, the run yields after each step
/// (see [`crate::graph::RunOptions::live`]), and it advances only while it is pulled,
/// as LangGraph's generator does. It runs on the runtime instead (`run` is `None`)
/// when it streams what comes from inside a running task (`custom`, `messages`,
/// `tools`, subgraphs), which a task on the pulling thread would hold back, and when
/// it is started inside a node (its thread drives a run already).
#[pyclass(name = "_GraphStream", module = "ironloop._ironloop")]
pub struct GraphStream {
    pub(super) rx: Mutex<std::sync::mpsc::Receiver<StreamMsg>>,
    pub(super) shape: GraphStreamShape,
    pub(super) done: bool,
    pub(super) run: Mutex<Option<InlineRun>>,
    /// Woken when an item is sent (from the run, or from a task on another thread).
    pub(super) sent: Arc<futures::task::AtomicWaker>,
}

/// A run a sync `stream()` drives on the thread that pulls its items.
pub(super) type InlineRun = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// What the next stream message means for an iterator.
pub(super) enum Next {
    Item(Py<PyAny>),
    Skip,
    End,
}

/// Where a streamed run's messages go.
pub(super) type StreamSend = Box<dyn Fn(StreamMsg) + Send + Sync>;

impl GraphStreamShape {
    /// What a message means for the iterator; a failed run raises its error.
    pub(super) fn next_item(&self, py: Python<'_>, msg: StreamMsg) -> PyResult<Next> {
        match msg {
            StreamMsg::Event(ev) => match event_to_py(py, &self.shared, &self.thread, ev)? {
                Some((ns, mode, chunk)) => Ok(match self.item(py, ns, mode, chunk)? {
                    Some(i) => Next::Item(i.unbind()),
                    None => Next::Skip,
                }),
                None => Ok(Next::Skip),
            },
            StreamMsg::Done(r) => {
                r.map_err(PyErr::from)?;
                Ok(Next::End)
            }
        }
    }

    /// A stream item: the chunk, prefixed by its namespace (with `subgraphs=True`)
    /// and its mode (when several modes were asked for); `None` for modes not asked for.
    pub(super) fn item<'py>(
        &self,
        py: Python<'py>,
        ns: Vec<String>,
        mode: &'static str,
        chunk: Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.wanted & stream_mode_bit(mode).unwrap_or(0) == 0 {
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
            let msg = match self.drive(py) {
                Ok(Some(m)) => Ok(Some(m)),
                Ok(None) => self.received(py),
                Err(e) => Err(e),
            };
            let msg = match msg {
                Ok(m) => m,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            let msg = match msg {
                Some(m) => m,
                None => {
                    self.done = true;
                    return Ok(None);
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

impl GraphStream {
    /// Drives the run on this thread until it sends an item (returned) or ends (its
    /// result is then queued: `None`). `None` at once when the runtime runs it.
    fn drive(&mut self, py: Python<'_>) -> PyResult<Option<StreamMsg>> {
        let run = self.run.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some(fut) = run.as_mut() else {
            return Ok(None);
        };
        let rx = self.rx.get_mut().unwrap_or_else(|p| p.into_inner());
        let sent = &self.sent;
        let next = std::future::poll_fn(move |cx| {
            sent.register(cx.waker());
            if let Ok(m) = rx.try_recv() {
                return std::task::Poll::Ready(Some(m));
            }
            fut.as_mut().poll(cx).map(|()| None)
        });
        let r = drive_inline(py, next, &self.shape.cancel);
        if !matches!(r, Ok(Some(_))) {
            // Ended, or stopped by a signal (the run is cancelled): dropped here.
            *run = None;
        }
        r
    }

    /// The next message of a run that is not driven here: waits for it, looking for
    /// signals meanwhile. `None` when the run is gone.
    fn received(&mut self, py: Python<'_>) -> PyResult<Option<StreamMsg>> {
        let rx = &self.rx;
        loop {
            let r = py.detach(|| {
                rx.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .recv_timeout(std::time::Duration::from_millis(100))
            });
            match r {
                Ok(m) => return Ok(Some(m)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        self.shape.cancel.cancel();
                        return Err(e);
                    }
                }
                Err(_) => return Ok(None),
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

pub(super) struct GraphStreamShape {
    pub(super) shared: Arc<Shared>,
    pub(super) wanted: u8,
    pub(super) single: bool,
    pub(super) thread: String,
    pub(super) subgraphs: bool,
    pub(super) cancel: CancellationToken,
}
