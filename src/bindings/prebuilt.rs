//! `add_messages` and `tools_condition` for Python: conversions over the core rules
//! (`graph::MessageList::add`, `prebuilt::tools_condition`), so that calling them
//! directly and running them inside a graph give the same answer and the same errors.
//! The function objects are kept so that `StateGraph.compile` can recognise them and
//! run the rule in Rust with no Python call per step. The agents' rule after the model
//! (`prebuilt::after_model`) is here too: called from Python, and as the mark that
//! has `compile` run it in Rust.

use std::sync::Arc;

use pyo3::exceptions::{PyImportError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};

use super::coerce::message_from_py;
use super::lc_messages::instance_dict;
use super::messages::messages_to_py;
use crate::graph::MessageList;
use crate::message::{Message, MessageKind};
use crate::prebuilt::{after_model, tool_call_arg, AfterModel, AfterModelRoute};

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
/// ``format="langchain-openai"`` (LangGraph's option) gives the merged messages'
/// contents in OpenAI's shapes (text, ``image_url`` blocks) through langchain-core's
/// ``convert_to_openai_messages``; ``add_messages(format=...)`` alone is that reducer,
/// for ``Annotated[list, add_messages(format="langchain-openai")]``.
///
/// Example:
///     >>> from ironloop.messages import HumanMessage, AIMessage
///     >>> msgs = add_messages([HumanMessage("hi", id="1")], [AIMessage("hello", id="2")])
///     >>> [m.content for m in msgs]
///     ['hi', 'hello']
#[pyfunction]
#[pyo3(signature = (left = None, right = None, *, format = None))]
pub fn add_messages<'py>(
    py: Python<'py>,
    left: Option<&Bound<'py, PyAny>>,
    right: Option<&Bound<'py, PyAny>>,
    format: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(f) = format.filter(|f| *f != OPENAI_FORMAT) {
        return Err(PyValueError::new_err(format!(
            "Unrecognized format='{f}'. Expected one of '{OPENAI_FORMAT}', None."
        )));
    }
    let (left, right) = match (left, right) {
        (Some(l), Some(r)) => (l, r),
        (None, None) if format.is_some() => return formatting_reducer(py, format),
        _ => {
            return Err(PyTypeError::new_err(
                "add_messages takes the two sides to merge, add_messages(left, right), or \
                 only format= to make a reducer: add_messages(format=\"langchain-openai\")",
            ))
        }
    };
    let mut list = MessageList::from_messages(message_list(left)?);
    list.add(message_list(right)?).map_err(PyErr::from)?;
    let merged = messages_to_py(py, &list.to_vec())?;
    if format.is_none() {
        return Ok(merged.into_any());
    }
    let lc = py.import("langchain_core.messages").map_err(|e| {
        PyImportError::new_err(format!(
            "add_messages(format='{OPENAI_FORMAT}') formats with langchain-core's \
             convert_to_openai_messages, which did not import ({e}): pip install langchain-core"
        ))
    })?;
    let openai = lc.call_method1("convert_to_openai_messages", (merged,))?;
    lc.call_method1("convert_to_messages", (openai,))
}

/// LangGraph's one `format=` of `add_messages`.
const OPENAI_FORMAT: &str = "langchain-openai";

/// `add_messages` with `format` bound: a reducer of its own (a Python one to the
/// engine, which runs only the bare `add_messages` in Rust).
fn formatting_reducer<'py>(py: Python<'py>, format: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
    let add = ADD_MESSAGES
        .get(py)
        .ok_or_else(|| PyRuntimeError::new_err("add_messages is not registered"))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("format", format)?;
    py.import("functools")?
        .getattr("partial")?
        .call((add.bind(py),), Some(&kwargs))
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

/// The agents' rule after the model ([`crate::prebuilt::after_model`]) over a Python
/// list of messages: `("tools", pending calls as LangGraph's ToolCall dicts)`,
/// `("back", [])` or `("done", [])`. Only the messages from the last AI message on are
/// read (converted), newest first, so the cost does not grow with the conversation.
#[pyfunction]
pub fn _after_model<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<(&'static str, Bound<'py, PyList>)> {
    let mut tail = Vec::new();
    for i in (0..messages.len()?).rev() {
        let m = message_from_py(&messages.get_item(i)?)?;
        let ai = matches!(m.kind, MessageKind::Ai { .. });
        tail.push(m);
        if ai {
            break;
        }
    }
    tail.reverse();
    let (route, calls) = match after_model(tail.iter()) {
        AfterModelRoute::Tools(calls) => ("tools", calls),
        AfterModelRoute::Back => ("back", Vec::new()),
        AfterModelRoute::Done => ("done", Vec::new()),
    };
    let calls = calls
        .into_iter()
        .map(|c| pythonize::pythonize(py, &tool_call_arg(c)).map_err(PyErr::from))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((route, PyList::new(py, calls)?))
}

/// Whether an AI message of `messages` (`type == "ai"`) has invalid tool calls
/// (arguments that did not parse): what `create_agent`'s model node answers before
/// calling the model (`ironloop._invalid_calls`). The whole history is read at every
/// model call, so langchain-core's own message classes are told apart by their class
/// pointer and only an `AIMessage`'s field is read (in Python, two attribute reads a
/// message: 3.7 µs at 100 messages); anything else is read as Python would.
#[pyfunction]
pub fn _has_invalid_calls(messages: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = messages.py();
    let lc = super::lc_messages::active();
    let key = intern!(py, "invalid_tool_calls");
    for m in messages.try_iter()? {
        let m = m?;
        let calls = match lc.and_then(|lc| lc.exact_ai(&m)) {
            // langchain-core's own `AIMessage`: the field straight from its `__dict__`.
            Some(true) => match instance_dict(&m)?.get_item(key)? {
                Some(calls) => calls,
                None => m.getattr(key)?,
            },
            Some(false) => continue,
            None if m.getattr(intern!(py, "type"))?.eq(intern!(py, "ai"))? => m.getattr(key)?,
            None => continue,
        };
        if calls.is_truthy()? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The mark an agent puts on its routing function after the model
/// (`__ironloop_router__`, see `ironloop._agent.after_model_router`): `compile` then
/// runs [`AfterModel`] in Rust over the graph's messages channel, with these routes.
#[pyclass(name = "_AfterModelRoute", module = "ironloop._ironloop", frozen)]
pub struct AfterModelMark {
    tools: String,
    per_call: bool,
    back: String,
    done: String,
}

#[pymethods]
impl AfterModelMark {
    #[new]
    fn new(tools: String, per_call: bool, back: String, done: String) -> Self {
        AfterModelMark {
            tools,
            per_call,
            back,
            done,
        }
    }
}

/// The Rust router a routing function stands for when an agent marked it (see
/// [`AfterModelMark`]), reading `channel`; `None` for any other function.
pub fn after_model_router(path: &Bound<'_, PyAny>, channel: &str) -> PyResult<Option<AfterModel>> {
    let Some(mark) = path.getattr_opt(pyo3::intern!(path.py(), "__ironloop_router__"))? else {
        return Ok(None);
    };
    let Ok(mark) = mark.cast::<AfterModelMark>() else {
        return Ok(None);
    };
    let mark = mark.get();
    Ok(Some(AfterModel {
        channel: channel.to_owned(),
        tools: mark.tools.clone(),
        per_call: mark.per_call,
        back: mark.back.clone(),
        done: mark.done.clone(),
    }))
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
    m.add_function(wrap_pyfunction!(_after_model, m)?)?;
    m.add_function(wrap_pyfunction!(_has_invalid_calls, m)?)?;
    m.add_class::<AfterModelMark>()?;
    Ok(())
}
