//! Message-like values as messages: what Python code hands where a message is taken
//! (an ironloop message, a `(role, content)` tuple, a dict, a string, a langchain-core
//! message), read into the core's shared `Message`.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::convert::{
    content_from_py, get_item, invalid_tool_calls_from_py, metadata_from_py, status_from_str,
    tool_calls_from_py, usage_from_py, value_from_py,
};
use super::lc_messages::{self, LcKind};
use super::messages::{message_to_py, PyMessage};
use crate::message::{Content, Message, MessageKind, ToolStatus};

/// Any message-like input as a shared message: an ironloop message (no copy), a
/// `(role, content)` tuple, a `{"role", "content", ...}` dict, a plain string (a human
/// message), or a langchain-core message (duck-typed on `.type` and `.content`).
///
/// When langchain-core's classes are this process's message classes, a langchain-core
/// message is kept as the message's Python object (`lc_messages::keep`), so the same
/// object comes back wherever the message is handed to Python; a chunk is read as the
/// whole message it stands for and not kept.
pub fn message_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Arc<Message>> {
    if let Ok(m) = obj.cast::<PyMessage>() {
        return Ok(m.borrow().inner.clone());
    }
    // str, tuple and dict first: no langchain-core message is one, and these checks
    // cost a flag test where `isinstance` on langchain-core's classes goes through
    // `ABCMeta` (a model's answer is often a dict, once per model call).
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Arc::new(Message::human(s.to_str()?)));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        if t.len() != 2 {
            return Err(PyValueError::new_err(
                "a message tuple must be (role, content), e.g. ('user', 'hello')",
            ));
        }
        let role: String = t.get_item(0)?.extract()?;
        let content = content_from_py(&t.get_item(1)?)?;
        return from_role(obj.py(), &role, content, None).map(Arc::new);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let py = obj.py();
        let role = match get_item(d, intern!(py, "role"))? {
            Some(r) => Some(r),
            None => get_item(d, intern!(py, "type"))?,
        };
        let role: String = role
            .ok_or_else(|| {
                PyValueError::new_err(
                    "a message dict needs a 'role' (user, assistant, system, tool), \
                     e.g. {'role': 'user', 'content': 'hello'}",
                )
            })?
            .extract()?;
        let content = match get_item(d, intern!(py, "content"))? {
            Some(c) => content_from_py(&c)?,
            None => Content::default(),
        };
        return from_role(py, &role, content, Some(d)).map(Arc::new);
    }
    if let Some(lc) = lc_messages::active() {
        if let Some(kind) = lc.classify(obj)? {
            if let Some(m) = lc_messages::handed_back(obj)? {
                return Ok(m);
            }
            let fields = lc_fields(obj)?;
            let m = from_fields(obj.py(), &fields)?;
            if kind == LcKind::Chunk {
                return Ok(Arc::new(m));
            }
            return lc_messages::keep(obj, &fields, m).map(Arc::new);
        }
    }
    // langchain-core messages and look-alikes.
    if let (Ok(ty), Ok(_)) = (obj.getattr("type"), obj.getattr("content")) {
        if ty.extract::<String>().is_ok() {
            return from_attributes(obj).map(Arc::new);
        }
    }
    let ty = obj.get_type().name()?.to_string();
    Err(PyTypeError::new_err(format!(
        "cannot use a {ty} as a message: pass a message object (HumanMessage, AIMessage, ...), \
         a (role, content) tuple or a {{'role': ..., 'content': ...}} dict"
    )))
}

/// A langchain-core message, or an object shaped like one, read by its attributes
/// (`type`, `content`, `id`, `tool_calls`, ...).
pub(super) fn from_attributes(obj: &Bound<'_, PyAny>) -> PyResult<Message> {
    let d = match lc_messages::active() {
        Some(lc) if lc.is_message(obj)? => lc_fields(obj)?,
        _ => attributes(obj)?,
    };
    from_fields(obj.py(), &d)
}

/// A message from its fields by name (`type`, `content`, `id`, `tool_calls`, ...).
fn from_fields(py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<Message> {
    let text = |k: &Bound<'_, PyString>| -> PyResult<String> {
        get_item(d, k)?
            .ok_or_else(|| PyValueError::new_err(format!("a message needs a {k:?}")))?
            .extract()
    };
    let ty = text(intern!(py, "type"))?;
    let role = match ty.as_str() {
        // langchain-core's chunks and its free-role ChatMessage.
        "AIMessageChunk" => "ai".to_owned(),
        "HumanMessageChunk" => "human".to_owned(),
        "SystemMessageChunk" => "system".to_owned(),
        "ToolMessageChunk" => "tool".to_owned(),
        "chat" | "ChatMessageChunk" => text(intern!(py, "role"))?,
        _ => ty,
    };
    let content = match get_item(d, intern!(py, "content"))? {
        Some(c) => content_from_py(&c)?,
        None => Content::default(),
    };
    from_role(py, &role, content, Some(d))
}

/// A langchain-core message's fields as they are: its pydantic `__dict__` (every
/// field, no copy, no attribute look-up that fails); its attributes, for a class
/// that keeps them elsewhere.
fn lc_fields<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    match lc_messages::instance_dict(obj) {
        Ok(d) => Ok(d),
        Err(_) => attributes(obj),
    }
}

/// The attributes a message object may carry (see [`attributes`]).
const MESSAGE_ATTRIBUTES: [&str; 13] = [
    "type",
    "content",
    "role",
    "id",
    "name",
    "tool_calls",
    "invalid_tool_calls",
    "usage_metadata",
    "tool_call_id",
    "status",
    "artifact",
    "additional_kwargs",
    "response_metadata",
];

/// An object's message attributes as a dict (those it has). The names are interned
/// once: a key made anew is hashed anew.
fn attributes<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    static NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();
    let py = obj.py();
    let names = NAMES.get_or_init(py, || {
        MESSAGE_ATTRIBUTES
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect()
    });
    let d = PyDict::new(py);
    for k in names {
        if let Ok(v) = obj.getattr(k.bind(py)) {
            d.set_item(k, v)?;
        }
    }
    Ok(d)
}

/// The message of `role` with `content` and the fields of `d` (its keys interned:
/// a dict message is read once per model answer, and a key made anew is hashed anew).
fn from_role<'py>(
    py: Python<'py>,
    role: &str,
    content: Content,
    d: Option<&Bound<'py, PyDict>>,
) -> PyResult<Message> {
    let field = |k: &Bound<'py, PyString>| -> PyResult<Option<Bound<'py, PyAny>>> {
        match d {
            Some(d) => get_item(d, k),
            None => Ok(None),
        }
    };
    let kind = match role {
        "user" | "human" => MessageKind::Human,
        "assistant" | "ai" => MessageKind::Ai {
            tool_calls: tool_calls_from_py(field(intern!(py, "tool_calls"))?.as_ref())?,
            invalid_tool_calls: invalid_tool_calls_from_py(
                field(intern!(py, "invalid_tool_calls"))?.as_ref(),
            )?,
            // `usage` is the key of a message's `model_dump()` (the core's own form).
            usage: match field(intern!(py, "usage_metadata"))? {
                Some(u) => usage_from_py(Some(&u))?,
                None => field(intern!(py, "usage"))?
                    .map(|u| value_from_py(&u, "usage"))
                    .transpose()?
                    .map(serde_json::from_value::<crate::message::Usage>)
                    .transpose()
                    .map_err(|e| PyValueError::new_err(format!("a message's usage: {e}")))?,
            },
        },
        "remove" => MessageKind::Remove,
        "system" | "developer" => MessageKind::System,
        "tool" => MessageKind::Tool {
            tool_call_id: field(intern!(py, "tool_call_id"))?
                .ok_or_else(|| PyValueError::new_err("a tool message needs a 'tool_call_id'"))?
                .extract()?,
            status: match field(intern!(py, "status"))? {
                Some(s) => status_from_str(&s.extract::<String>()?)?,
                None => ToolStatus::Success,
            },
            artifact: match field(intern!(py, "artifact"))? {
                Some(a) => Some(value_from_py(&a, "artifact")?),
                None => None,
            },
        },
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown message role {other:?}: use 'user', 'assistant', 'system' or 'tool'"
            )))
        }
    };
    // A fresh id only for a message given without one (making one reads the OS's
    // random source).
    let id = match field(intern!(py, "id"))? {
        Some(id) => id.extract()?,
        None => crate::message::new_id(),
    };
    let mut m = Message {
        id,
        name: None,
        content,
        additional_kwargs: metadata_from_py(
            field(intern!(py, "additional_kwargs"))?.as_ref(),
            "additional_kwargs",
        )?,
        response_metadata: metadata_from_py(
            field(intern!(py, "response_metadata"))?.as_ref(),
            "response_metadata",
        )?,
        kind,
        host: Default::default(),
    };
    if let Some(n) = field(intern!(py, "name"))? {
        m.name = Some(n.extract()?);
    }
    Ok(m)
}

/// Whether `obj` is a langchain-core message. Only asks when langchain-core is
/// already imported (a langchain object cannot exist otherwise); never imports it.
pub(super) fn is_langchain_message(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = obj.py();
    let modules = py.import("sys")?.getattr("modules")?;
    match modules.get_item("langchain_core.messages.base") {
        Ok(m) => obj.is_instance(&m.getattr("BaseMessage")?),
        Err(_) => Ok(false),
    }
}

/// Whether `obj` is already a message of this process's classes (kept as it is by
/// `_coerce_message`, as langchain-core's `convert_to_messages` keeps its own): a
/// langchain-core message other than a chunk when those are the classes, else one of
/// ironloop's own (which, with langchain-core's classes chosen, is made into one).
fn is_message_object(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    match lc_messages::active() {
        Some(lc) => Ok(lc.classify(obj)? == Some(LcKind::Whole)),
        None => Ok(obj.cast::<PyMessage>().is_ok()),
    }
}

/// Any message-like value as a message object of this process's classes.
#[pyfunction]
pub(super) fn _coerce_message<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if is_message_object(obj)? {
        return Ok(obj.clone());
    }
    // Usually handed back at once (a model's answer): remembered, see `hand_out`.
    lc_messages::hand_out(py, message_from_py(obj)?)
}

/// A list of message-likes as message objects (the same objects where they are
/// messages already), in one call.
#[pyfunction]
pub(super) fn _coerce_messages<'py>(
    py: Python<'py>,
    seq: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for item in seq.try_iter()? {
        let item = item?;
        if is_message_object(&item)? {
            out.append(item)?;
        } else {
            out.append(message_to_py(py, message_from_py(&item)?)?)?;
        }
    }
    Ok(out)
}
