//! `stream_mode="messages"` also shows the messages a node returns, as LangGraph: a
//! `ToolMessage` of a tool node, an `AIMessage` a node wrote without a model. Only
//! those the node was not given (a node that returns the whole history shows only
//! what it added) and the stream has not shown already (a model's answer whose
//! chunks were streamed is not shown again).

use std::collections::HashSet;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::super::env::PyRunEnv;
use super::super::messages::PyMessage;
use super::super::toolnode::command_class;
use super::nodes::env_of;
use super::values::{host, val_to_py};
use crate::graph::{modes, NodeOutput, StateView, StreamEvent, TaskContext, Val};

/// The `configurable` keys LangGraph 1.2 shows in a `messages` chunk's metadata; any
/// other (an API key, a nested setting) stays out.
const PROPAGATED_TO_METADATA: [&str; 7] = [
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
];

/// The metadata of a task's `messages` chunks, as LangGraph 1.2 gives it (besides
/// `langgraph_node`, added with the chunk): the run's `config["metadata"]`, the
/// [`PROPAGATED_TO_METADATA`] keys of its `configurable`, `langgraph_step`,
/// `langgraph_triggers` and `langgraph_path` (an edge-triggered task:
/// `("branch:to:<node>",)` and `("__pregel_pull", node)`; a `Send`'s:
/// `("__pregel_push",)` and `("__pregel_push", index, False)`),
/// `langgraph_checkpoint_ns` (`node:task_id`, below the parent's namespace) and
/// `ls_integration`. Made once per task that streams messages.
pub(super) fn message_meta<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    ctx: &TaskContext,
) -> PyResult<Bound<'py, PyDict>> {
    let meta = PyDict::new(py);
    if let Some(config) = env.config.as_ref().map(|c| c.bind(py).cast::<PyDict>()) {
        let config = config?;
        if let Some(m) = config.get_item("metadata")? {
            if let Ok(m) = m.cast::<PyDict>() {
                meta.update(m.as_mapping())?;
            }
        }
        if let Some(Ok(c)) = config
            .get_item("configurable")?
            .map(|c| c.cast_into::<PyDict>())
        {
            // What LangGraph's `ensure_config` copies from `configurable` into the
            // metadata (a truthy value the metadata does not set already).
            for key in PROPAGATED_TO_METADATA {
                if meta.contains(key)? {
                    continue;
                }
                if let Some(v) = c.get_item(key)?.filter(|v| v.is_truthy().unwrap_or(false)) {
                    meta.set_item(key, v)?;
                }
            }
        }
    }
    meta.set_item("langgraph_step", ctx.step)?;
    let node = ctx.node.as_str();
    if ctx.push {
        let index: i64 = ctx
            .task_id
            .split(':')
            .nth(1)
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        meta.set_item("langgraph_triggers", ("__pregel_push",))?;
        meta.set_item("langgraph_path", ("__pregel_push", index, false))?;
    } else {
        meta.set_item("langgraph_triggers", (format!("branch:to:{node}"),))?;
        meta.set_item("langgraph_path", ("__pregel_pull", node))?;
    }
    let ns = match &ctx.nest {
        Some(n) => n.checkpoint_ns.clone(),
        None => format!("{node}:{}", ctx.task_id),
    };
    meta.set_item("langgraph_checkpoint_ns", ns)?;
    meta.set_item("ls_integration", "langgraph")?;
    Ok(meta)
}

/// Streams the new messages of `out` (the node's shown update) in `messages` mode.
pub(super) fn stream_returned_messages(
    py: Python<'_>,
    view: &StateView,
    ctx: &TaskContext,
    out: &NodeOutput,
) -> PyResult<()> {
    let Some(sink) = ctx.stream.as_ref().filter(|s| s.wants(modes::MESSAGES)) else {
        return Ok(());
    };
    let Some(update) = &out.update else {
        return Ok(());
    };
    let mut found = Vec::new();
    let shown = val_to_py(py, update)?;
    match shown.cast::<PyList>() {
        // A node that wrote a key more than once shows one `{key: value}` per write.
        Ok(l) if l.iter().any(|w| w.cast::<PyDict>().is_ok()) => {
            for w in l.iter() {
                collect(&w, &mut found)?;
            }
        }
        _ => collect(&shown, &mut found)?,
    }
    // What the stream showed already (a model's answer whose chunks were streamed) is
    // left out first: often nothing is left, and the rest needs the task's state.
    let mut fresh = Vec::with_capacity(found.len());
    for m in found {
        let id = id_of(&m)?;
        if !id.as_deref().is_some_and(|i| sink.shown(i)) {
            fresh.push((m, id));
        }
    }
    if fresh.is_empty() {
        return Ok(());
    }
    let given = given_ids(py, view, &fresh)?;
    let env = env_of(ctx).map_err(|_| meta_err())?;
    let base = message_meta(py, &env, ctx)?;
    for (m, id) in fresh {
        if let Some(id) = &id {
            if given.contains(id) || !sink.first_sight(id) {
                continue;
            }
        }
        let meta = base.copy()?;
        sink.emit(modes::MESSAGES, || StreamEvent::Message {
            chunk: host(m),
            node: ctx.node.clone(),
            meta: Some(host(meta.into_any())),
        });
    }
    Ok(())
}

/// The ids of `fresh` that are in the task's state (a node that returns the whole
/// history shows only what it added). A messages channel is asked by id, without
/// turning its history into Python objects; any other value is searched as LangGraph
/// does.
fn given_ids(
    py: Python<'_>,
    view: &StateView,
    fresh: &[(Bound<'_, PyAny>, Option<String>)],
) -> PyResult<HashSet<String>> {
    let mut given = HashSet::new();
    for (_, v) in view.iter() {
        match v {
            Val::Messages(list) => {
                let held = fresh.iter().filter_map(|(_, id)| id.as_ref());
                given.extend(held.filter(|id| list.contains_id(id)).cloned());
            }
            v => {
                let mut held = Vec::new();
                collect(&val_to_py(py, v)?, &mut held)?;
                for m in held {
                    if let Some(id) = id_of(&m)? {
                        given.insert(id);
                    }
                }
            }
        }
    }
    Ok(given)
}

fn meta_err() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("a task without its run environment")
}

/// The messages in `v`: `v` itself, the items of a list, or the values (and their
/// items) of a dict, as LangGraph looks for them in a node's output; a list holding
/// `Command`s (a node may return several) is searched item by item, each command's
/// `update` in its place.
fn collect<'py>(v: &Bound<'py, PyAny>, found: &mut Vec<Bound<'py, PyAny>>) -> PyResult<()> {
    if let Some(list) = with_commands(v)? {
        let command = command_class(v.py())?;
        for item in list {
            if item.is_instance(command)? {
                collect(&item.getattr(intern!(v.py(), "update"))?, found)?;
            } else {
                collect(&item, found)?;
            }
        }
    } else if is_message(v)? {
        found.push(v.clone());
    } else if let Ok(d) = v.cast::<PyDict>() {
        for item in d.values() {
            if is_message(&item)? {
                found.push(item);
            } else {
                items(&item, found)?;
            }
        }
    } else {
        items(v, found)?;
    }
    Ok(())
}

/// The items of `v` when it is a list or tuple holding a `Command`.
fn with_commands<'py>(v: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
    let list: Vec<Bound<'py, PyAny>> = if let Ok(l) = v.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = v.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        return Ok(None);
    };
    let command = command_class(v.py())?;
    for item in &list {
        if item.is_instance(command)? {
            return Ok(Some(list));
        }
    }
    Ok(None)
}

fn items<'py>(v: &Bound<'py, PyAny>, found: &mut Vec<Bound<'py, PyAny>>) -> PyResult<()> {
    let list: Vec<Bound<'py, PyAny>> = if let Ok(l) = v.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = v.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        return Ok(());
    };
    for item in list {
        if is_message(&item)? {
            found.push(item);
        }
    }
    Ok(())
}

/// An ironloop message, or a langchain-core one (known by its module: langchain-core
/// is optional and never imported here).
fn is_message(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if v.cast::<PyMessage>().is_ok() {
        return Ok(true);
    }
    let module = v.get_type().module()?;
    Ok(module.to_str()?.starts_with("langchain_core.messages"))
}

fn id_of(m: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    m.getattr(intern!(m.py(), "id"))?.extract()
}
