//! Message classes for Python (`AIMessage` in `ai_message.rs`, `AIMessageChunk` in
//! `chunks.rs`; message-like values are read in `coerce.rs`). Each object wraps a
//! shared `Arc<Message>`: handing a history between Rust and Python copies pointers,
//! never the messages.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use super::ai_message::PyAIMessage;
use super::coerce::{self, from_attributes, is_langchain_message};
use super::convert::{
    content_from_py, content_to_py, metadata_from_py, metadata_to_py, status_from_str,
    tool_call_to_py, value_from_py, value_to_py,
};
use crate::message::{Content, Message, MessageKind, ToolStatus};

/// Base class of all ironloop messages.
#[pyclass(subclass, name = "BaseMessage", module = "ironloop.messages")]
pub struct PyMessage {
    pub inner: Arc<Message>,
}

/// What a message keeps beside its kind's own fields, as its constructor takes it.
pub(super) struct Common<'a, 'py> {
    pub content: Option<&'a Bound<'py, PyAny>>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub additional_kwargs: Option<&'a Bound<'py, PyAny>>,
    pub response_metadata: Option<&'a Bound<'py, PyAny>>,
}

/// Refuses the keywords a constructor does not know (langchain-core's messages take
/// any; ironloop keeps no unnamed fields, so one would be lost). `example`, which
/// langchain-core's human and AI messages have, is taken when false (its default)
/// and refused when true: ironloop keeps no such flag.
pub(super) fn check_kwargs(cls: &str, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let Some(kw) = kwargs else { return Ok(()) };
    for (k, v) in kw.iter() {
        let k: String = k.extract()?;
        let takes_example = matches!(cls, "HumanMessage" | "AIMessage" | "AIMessageChunk");
        if k == "example" && takes_example {
            if v.is_truthy()? {
                return Err(PyValueError::new_err(format!(
                    "{cls}(example=True): ironloop messages keep no `example` flag (a \
                     langchain-core field for few-shot prompts); leave it out"
                )));
            }
            continue;
        }
        return Err(PyTypeError::new_err(format!(
            "{cls}() got an unexpected keyword argument '{k}': ironloop messages keep \
             content, id, name, additional_kwargs, response_metadata and their own kind's \
             fields, nothing else"
        )));
    }
    Ok(())
}

/// The message of `kind` made of `common`.
pub(super) fn build(kind: MessageKind, common: Common<'_, '_>) -> PyResult<Message> {
    let content = match common.content {
        Some(c) => content_from_py(c)?,
        None => Content::default(),
    };
    Ok(Message {
        id: common.id.unwrap_or_else(crate::message::new_id),
        name: common.name,
        content,
        additional_kwargs: metadata_from_py(common.additional_kwargs, "additional_kwargs")?,
        response_metadata: metadata_from_py(common.response_metadata, "response_metadata")?,
        kind,
        host: Default::default(),
    })
}

fn base(kind: MessageKind, common: Common<'_, '_>) -> PyResult<PyMessage> {
    Ok(PyMessage {
        inner: Arc::new(build(kind, common)?),
    })
}

/// The Python object for a shared message: its langchain-core object when those are
/// this process's message classes (made once per message, `lc_messages.rs`), else
/// one of ironloop's own classes.
pub fn message_to_py(py: Python<'_>, m: Arc<Message>) -> PyResult<Bound<'_, PyAny>> {
    match super::lc_messages::active() {
        Some(lc) => lc.to_py(py, &m),
        None => own_message_to_py(py, m),
    }
}

/// The ironloop-class object for a shared message, of the right subclass.
pub fn own_message_to_py(py: Python<'_>, m: Arc<Message>) -> PyResult<Bound<'_, PyAny>> {
    let init = PyClassInitializer::from(PyMessage { inner: m.clone() });
    Ok(match m.kind {
        MessageKind::System => Bound::new(py, init.add_subclass(PySystemMessage))?.into_any(),
        MessageKind::Human => Bound::new(py, init.add_subclass(PyHumanMessage))?.into_any(),
        MessageKind::Ai { .. } => Bound::new(py, init.add_subclass(PyAIMessage))?.into_any(),
        MessageKind::Tool { .. } => Bound::new(py, init.add_subclass(PyToolMessage))?.into_any(),
        MessageKind::Remove => Bound::new(py, init.add_subclass(PyRemoveMessage))?.into_any(),
    })
}

impl PyMessage {
    /// This message with the fields `update` names replaced (`model_copy`).
    pub(super) fn copied(&self, update: Option<&Bound<'_, PyDict>>) -> PyResult<Message> {
        let mut m = (*self.inner).clone();
        let Some(u) = update else { return Ok(m) };
        for (k, v) in u.iter() {
            match k.extract::<String>()?.as_str() {
                "id" => {
                    m.id = if v.is_none() {
                        crate::message::new_id()
                    } else {
                        v.extract()?
                    }
                }
                "content" => m.content = content_from_py(&v)?,
                "name" => m.name = v.extract()?,
                "additional_kwargs" => {
                    m.additional_kwargs = metadata_from_py(Some(&v), "additional_kwargs")?
                }
                "response_metadata" => {
                    m.response_metadata = metadata_from_py(Some(&v), "response_metadata")?
                }
                other => {
                    return Err(PyValueError::new_err(format!(
                        "model_copy cannot update {other:?}; it updates id, content, name, \
                         additional_kwargs and response_metadata"
                    )))
                }
            }
        }
        Ok(m)
    }

    /// Whether `other` is a message with the same fields (see `__eq__`); `None` when
    /// it is no message at all.
    pub(super) fn equals(&self, other: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        if let Ok(o) = other.cast::<PyMessage>() {
            let o = o.borrow();
            return Ok(Some(
                Arc::ptr_eq(&self.inner, &o.inner) || *self.inner == *o.inner,
            ));
        }
        if is_langchain_message(other)? {
            let mut theirs = from_attributes(other)?;
            let same_id = other.getattr("id")?.eq(&self.inner.id)?;
            theirs.id.clone_from(&self.inner.id);
            return Ok(Some(same_id && theirs == *self.inner));
        }
        Ok(None)
    }

    /// Swaps in a changed message. Always a new `Arc` (never changed in place), so
    /// that [`PyMessage::_key`] names one unchanging value.
    fn replace(&mut self, m: Message) {
        self.inner = Arc::new(m);
    }
}

#[pymethods]
impl PyMessage {
    /// An identity of the value this object holds, the same for every object holding
    /// it and new after any change (for caches of derived values, e.g. the
    /// langchain-core twin). Unique while some object holds the value: a cache keeps
    /// `_shared()` alongside its entry.
    #[getter]
    fn _key(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Another object holding the same value (no copy); changing one does not change
    /// the other.
    fn _shared<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        own_message_to_py(py, self.inner.clone())
    }

    #[getter]
    fn content<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        content_to_py(py, &self.inner.content)
    }

    #[setter]
    fn set_content(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut m = (*self.inner).clone();
        m.content = content_from_py(value)?;
        self.replace(m);
        Ok(())
    }

    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    #[setter]
    fn set_id(&mut self, value: String) {
        let mut m = (*self.inner).clone();
        m.id = value;
        self.replace(m);
    }

    #[getter]
    fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    #[setter]
    fn set_name(&mut self, value: Option<String>) {
        let mut m = (*self.inner).clone();
        m.name = value;
        self.replace(m);
    }

    /// langchain-core's `additional_kwargs`: provider fields kept with the message (a
    /// copy: assign a new dict to change it).
    #[getter]
    fn additional_kwargs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        metadata_to_py(py, &self.inner.additional_kwargs)
    }

    #[setter]
    fn set_additional_kwargs(&mut self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let mut m = (*self.inner).clone();
        m.additional_kwargs = metadata_from_py(value, "additional_kwargs")?;
        self.replace(m);
        Ok(())
    }

    /// langchain-core's `response_metadata`: what the provider said about the response;
    /// on a `ToolMessage`, the call's `_reasoningForCall` (a copy: assign a new dict to
    /// change it).
    #[getter]
    fn response_metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        metadata_to_py(py, &self.inner.response_metadata)
    }

    #[setter]
    fn set_response_metadata(&mut self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let mut m = (*self.inner).clone();
        m.response_metadata = metadata_from_py(value, "response_metadata")?;
        self.replace(m);
        Ok(())
    }

    /// The langchain type tag: "human", "ai", "system", "tool" or "remove".
    #[getter]
    fn r#type(&self) -> &'static str {
        self.inner.type_name()
    }

    /// The text of the content (text parts joined).
    #[getter]
    fn text(&self) -> String {
        self.inner.content.text()
    }

    /// The message as a plain dict (what a checkpoint stores).
    fn model_dump<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v =
            serde_json::to_value(&*self.inner).map_err(|e| PyValueError::new_err(e.to_string()))?;
        value_to_py(py, &v)
    }

    /// A copy with some fields replaced: `id`, `content`, `name`, `additional_kwargs`,
    /// `response_metadata` (`update={"id": None}` gives the copy a fresh id).
    #[pyo3(signature = (update = None, deep = false))]
    fn model_copy<'py>(
        &self,
        py: Python<'py>,
        update: Option<&Bound<'py, PyDict>>,
        deep: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = deep; // messages are immutable values: a copy is always deep enough
        own_message_to_py(py, Arc::new(self.copied(update)?))
    }

    /// langchain-core's layout, line for line (ported programs print transcripts with
    /// it): a centred title, `Name:` if any, a blank line, the text, then each tool
    /// call with its arguments one per line, values as Python's `str()` shows them.
    fn pretty_repr(&self, py: Python<'_>) -> PyResult<String> {
        let title = format!(" {} Message ", capitalised(self.inner.type_name()));
        let mut s = format!("{title:=^80}");
        if let Some(n) = &self.inner.name {
            s.push_str(&format!("\nName: {n}"));
        }
        s.push_str("\n\n");
        s.push_str(&self.inner.content.text());
        if !matches!(self.inner.kind, MessageKind::Ai { .. }) {
            return Ok(s);
        }
        // An AI message's text is trimmed, as langchain-core's `AIMessage.pretty_repr`.
        let mut s = s.trim().to_string();
        let calls = self.inner.tool_calls();
        if !calls.is_empty() {
            s.push_str("\nTool Calls:");
        }
        for c in calls {
            s.push_str(&format!(
                "\n  {} ({})\n Call ID: {}\n  Args:",
                c.name, c.id, c.id
            ));
            match &c.arguments {
                Value::Object(args) => {
                    for (k, v) in args {
                        let shown = value_to_py(py, v)?.str()?.to_string();
                        s.push_str(&format!("\n    {k}: {shown}"));
                    }
                }
                Value::String(text) => s.push_str(&format!("\n    {text}")),
                _ => {}
            }
        }
        Ok(s)
    }

    /// Through Python's `print`, so that `sys.stdout` redirections see it.
    fn pretty_print(&self, py: Python<'_>) -> PyResult<()> {
        let text = self.pretty_repr(py)?;
        py.import("builtins")?.getattr("print")?.call1((text,))?;
        Ok(())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of(py, &self.inner, self.inner.class_name(), "")
    }

    /// Equal to another message with the same fields (id included), and to a
    /// langchain-core message that converts to one (its `id` compared with `==`, so a
    /// test's "any id" placeholder works). `NotImplemented` for anything else.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Ok(match self.equals(other)? {
            Some(eq) => pyo3::types::PyBool::new(py, eq)
                .to_owned()
                .into_any()
                .unbind(),
            None => py.NotImplemented(),
        })
    }

    fn __hash__(&self) -> PyResult<isize> {
        Err(PyTypeError::new_err(
            "messages are mutable and unhashable; use message.id",
        ))
    }
}

/// langchain-core's repr, less its empty fields: `Class(content=..., additional_kwargs=...,
/// response_metadata=..., tool_calls=..., tool_call_id=..., status=..., name=..., id=...)`,
/// with `extra` (a chunk's fragments, `", tool_call_chunks=[...]"`) before the id.
pub(super) fn repr_of(py: Python<'_>, m: &Message, class: &str, extra: &str) -> PyResult<String> {
    let content = content_to_py(py, &m.content)?.repr()?.to_string();
    let mut s = format!("{class}(content={content}");
    for (key, map) in [
        ("additional_kwargs", &m.additional_kwargs),
        ("response_metadata", &m.response_metadata),
    ] {
        if !map.is_empty() {
            s.push_str(&format!(", {key}={}", metadata_to_py(py, map)?.repr()?));
        }
    }
    if let MessageKind::Ai { tool_calls, .. } = &m.kind {
        if !tool_calls.is_empty() {
            let calls = PyList::empty(py);
            for c in tool_calls {
                calls.append(tool_call_to_py(py, c)?)?;
            }
            s.push_str(&format!(", tool_calls={}", calls.repr()?));
        }
    }
    let quoted = |text: &str| -> PyResult<String> {
        Ok(pyo3::types::PyString::new(py, text).repr()?.to_string())
    };
    if let MessageKind::Tool {
        tool_call_id,
        status,
        ..
    } = &m.kind
    {
        s.push_str(&format!(", tool_call_id={}", quoted(tool_call_id)?));
        if *status == ToolStatus::Error {
            s.push_str(", status='error'");
        }
    }
    if let Some(n) = &m.name {
        s.push_str(&format!(", name={}", quoted(n)?));
    }
    s.push_str(extra);
    s.push_str(&format!(", id={})", quoted(&m.id)?));
    Ok(s)
}

fn capitalised(s: &str) -> String {
    match s {
        "ai" => "Ai".into(),
        s => {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    }
}

/// A message class's `#[pymethods]`: its constructor and its other methods.
///
/// The constructor's signature is the one langchain-core's messages share: `content`,
/// then the class's own keywords (each defaulting to `None`), then the keywords every
/// message takes (`id`, `name`, `additional_kwargs`, `response_metadata`), the rest
/// gathered in `kwargs`. A macro because `#[pymethods]` reads a `#[new]` method's
/// parameters and signature as written, so a function cannot hand them over.
/// `new(common, kwargs, own…) { body }` names what the body is given: the shared
/// keywords as a [`Common`], the unknown ones, and each of the class's own keywords.
macro_rules! message_pymethods {
    (
        impl $class:ident {
            $(#[$attr:meta])*
            new($common:ident, $kwargs:ident $(, $own:ident)*) $body:block
            $($methods:tt)*
        }
    ) => {
        #[pymethods]
        impl $class {
            $(#[$attr])*
            #[new]
            #[pyo3(signature = (content = None, *, $($own = None,)* id = None, name = None,
                                additional_kwargs = None, response_metadata = None, **kwargs))]
            #[allow(clippy::too_many_arguments)]
            fn new(
                content: Option<&Bound<'_, PyAny>>,
                $($own: Option<&Bound<'_, PyAny>>,)*
                id: Option<String>,
                name: Option<String>,
                additional_kwargs: Option<&Bound<'_, PyAny>>,
                response_metadata: Option<&Bound<'_, PyAny>>,
                kwargs: Option<&Bound<'_, PyDict>>,
            ) -> PyResult<PyClassInitializer<Self>> {
                let $common = $crate::bindings::messages::Common {
                    content,
                    id,
                    name,
                    additional_kwargs,
                    response_metadata,
                };
                let $kwargs = kwargs;
                $body
            }

            $($methods)*
        }
    };
}
pub(super) use message_pymethods;

/// A message class with only the fields every message has, and its constructor.
macro_rules! plain_message {
    ($(#[$doc:meta])* $class:ident, $name:literal, $kind:expr) => {
        $(#[$doc])*
        #[pyclass(extends = PyMessage, name = $name, module = "ironloop.messages")]
        pub struct $class;

        message_pymethods! {
            impl $class {
                new(common, kwargs) {
                    check_kwargs($name, kwargs)?;
                    Ok(PyClassInitializer::from(base($kind, common)?).add_subclass($class))
                }
            }
        }
    };
}

plain_message!(
    /// A message from the user.
    PyHumanMessage,
    "HumanMessage",
    MessageKind::Human
);
plain_message!(
    /// Instructions for the model.
    PySystemMessage,
    "SystemMessage",
    MessageKind::System
);

/// The result of a tool call.
#[pyclass(extends = PyMessage, name = "ToolMessage", module = "ironloop.messages")]
pub struct PyToolMessage;

#[pymethods]
impl PyToolMessage {
    #[new]
    #[pyo3(signature = (content = None, *, tool_call_id, name = None, status = "success",
                        artifact = None, id = None, additional_kwargs = None,
                        response_metadata = None, **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        content: Option<&Bound<'_, PyAny>>,
        tool_call_id: String,
        name: Option<String>,
        status: &str,
        artifact: Option<&Bound<'_, PyAny>>,
        id: Option<String>,
        additional_kwargs: Option<&Bound<'_, PyAny>>,
        response_metadata: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        check_kwargs("ToolMessage", kwargs)?;
        let kind = MessageKind::Tool {
            tool_call_id,
            status: status_from_str(status)?,
            artifact: match artifact.filter(|a| !a.is_none()) {
                Some(a) => Some(value_from_py(a, "ToolMessage artifact")?),
                None => None,
            },
        };
        let common = Common {
            content,
            id,
            name,
            additional_kwargs,
            response_metadata,
        };
        Ok(PyClassInitializer::from(base(kind, common)?).add_subclass(PyToolMessage))
    }

    #[getter]
    fn tool_call_id(slf: PyRef<'_, Self>) -> String {
        match &slf.as_super().inner.kind {
            MessageKind::Tool { tool_call_id, .. } => tool_call_id.clone(),
            _ => String::new(),
        }
    }

    #[getter]
    fn status(slf: PyRef<'_, Self>) -> &'static str {
        match &slf.as_super().inner.kind {
            MessageKind::Tool { status, .. } => status.as_str(),
            _ => "success",
        }
    }

    #[getter]
    fn artifact<'py>(slf: PyRef<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &slf.as_super().inner.kind {
            MessageKind::Tool {
                artifact: Some(a), ..
            } => value_to_py(py, a),
            _ => Ok(py.None().into_bound(py)),
        }
    }
}

/// Tells the `add_messages` reducer to remove the message with this id.
#[pyclass(extends = PyMessage, name = "RemoveMessage", module = "ironloop.messages")]
pub struct PyRemoveMessage;

#[pymethods]
impl PyRemoveMessage {
    #[new]
    #[pyo3(signature = (*, id))]
    fn new(id: String) -> PyClassInitializer<Self> {
        PyClassInitializer::from(PyMessage {
            inner: Arc::new(Message::remove(id)),
        })
        .add_subclass(PyRemoveMessage)
    }
}

pub fn messages_to_py<'py>(py: Python<'py>, ms: &[Arc<Message>]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for m in ms {
        list.append(message_to_py(py, m.clone())?)?;
    }
    Ok(list)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(coerce::_coerce_message, m)?)?;
    m.add_function(wrap_pyfunction!(coerce::_coerce_messages, m)?)?;
    m.add_function(wrap_pyfunction!(
        super::lc_messages::_use_langchain_messages,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        super::lc_messages::_choose_messages_on_first_use,
        m
    )?)?;
    m.add_class::<PyMessage>()?;
    m.add_class::<PyHumanMessage>()?;
    m.add_class::<PySystemMessage>()?;
    m.add_class::<PyAIMessage>()?;
    m.add_class::<PyToolMessage>()?;
    m.add_class::<PyRemoveMessage>()?;
    m.add_class::<super::chunks::PyAIMessageChunk>()?;
    Ok(())
}
