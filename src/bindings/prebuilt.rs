//! `add_messages` and `tools_condition` for Python: conversions over the core rules
//! (`graph::MessageList::add`, `prebuilt::tools_condition`), so that calling them
//! directly and running them inside a graph give the same answer and the same errors.
//! The function objects are kept so that `StateGraph.compile` can recognise them and
//! run the rule in Rust with no Python call per step.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};

use super::coerce::message_from_py;
use super::messages::messages_to_py;
use crate::graph::MessageList;
use crate::message::Message;

static ADD_MESSAGES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TOOLS_CONDITION: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The messages of one side of `add_messages`: a list, or a single message.
fn message_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Arc<Message>>> {
    match obj.cast::<PyList>() {
        Ok(l) => l.iter().map(|m| message_from_py(&m)).collect(),
        Err(_) => Ok(vec![message_from_py(obj)?]),
    }
}

/// Merges two lists of messages by id: a message whose id is already present
/// replaces it, ``RemoveMessage(id=...)`` removes it, others are appended. In a graph
/// the same merge runs in Rust on the messages channel.
///
/// Example:
///     >>> from ironloop.messages import HumanMessage, AIMessage
///     >>> msgs = add_messages([HumanMessage("hi", id="1")], [AIMessage("hello", id="2")])
///     >>> [m.content for m in msgs]
///     ['hi', 'hello']
#[pyfunction]
pub fn add_messages<'py>(
    py: Python<'py>,
    left: &Bound<'py, PyAny>,
    right: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let mut list = MessageList::from_messages(message_list(left)?);
    list.add(message_list(right)?).map_err(PyErr::from)?;
    messages_to_py(py, &list.to_vec())
}

/// Routes to ``"tools"`` when the last message has tool calls, else to ``END``.
/// ``state`` is a list of messages, a dict, or an object with the messages under
/// ``messages_key``.
///
/// Example:
///     >>> from ironloop.messages import AIMessage
///     >>> tools_condition({"messages": [AIMessage(content="done")]})
///     '__end__'
#[pyfunction]
#[pyo3(signature = (state, messages_key = "messages"))]
pub fn tools_condition(state: &Bound<'_, PyAny>, messages_key: &str) -> PyResult<&'static str> {
    let messages = if state.cast::<PyList>().is_ok() {
        Some(state.clone())
    } else if let Ok(d) = state.cast::<PyDict>() {
        d.get_item(messages_key)?
    } else {
        state.getattr(messages_key).ok()
    };
    let last = match messages.filter(|m| m.len().unwrap_or(0) > 0) {
        Some(m) => Some(message_from_py(&m.get_item(-1)?)?),
        None => None,
    };
    crate::prebuilt::tools_condition(last.as_deref()).map_err(|e| {
        let shown = state.repr().map(|r| r.to_string()).unwrap_or_default();
        PyValueError::new_err(format!("{e}: {shown}"))
    })
}

/// True when `f` is ironloop's own `add_messages`.
pub fn is_add_messages(f: &Bound<'_, PyAny>) -> bool {
    ADD_MESSAGES.get(f.py()).is_some_and(|a| a.is(f))
}

/// True when `f` is ironloop's own `tools_condition`.
pub fn is_tools_condition(f: &Bound<'_, PyAny>) -> bool {
    TOOLS_CONDITION.get(f.py()).is_some_and(|a| a.is(f))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let add = wrap_pyfunction!(add_messages, m)?;
    let cond = wrap_pyfunction!(tools_condition, m)?;
    let _ = ADD_MESSAGES.set(py, add.clone().into_any().unbind());
    let _ = TOOLS_CONDITION.set(py, cond.clone().into_any().unbind());
    m.add_function(add)?;
    m.add_function(cond)?;
    Ok(())
}
