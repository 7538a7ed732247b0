//! langchain-core's message classes as the messages Python code sees.
//!
//! When langchain-core is installed, `ironloop.messages` re-exports its classes and
//! tells the glue so once ([`_use_langchain_messages`]), when a message class is first
//! needed: importing langchain-core takes ~130 ms, which `import ironloop` and a graph
//! that never handles a message should not pay. `ironloop.messages` registers the
//! function that makes the choice ([`_choose_messages_on_first_use`]), and the glue
//! calls it before it makes or reads its first message. From then on the
//! one function that turns a core message into Python ([`to_py`], behind
//! `message_to_py`) builds a langchain-core object once per message and keeps it in
//! the message's host slot, and the function that reads a message from Python
//! (`message_from_py`) keeps the langchain-core object it was given in that slot. So
//! a message crosses into Python once, a history of 3,000 messages costs the same per
//! step as one of 10, and a node that returns a message gets that very object back,
//! as under LangGraph. Without langchain-core nothing is set and ironloop's own
//! classes (`messages.rs`) are what Python sees.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyType};

use super::convert::{content_to_py, metadata_to_py, value_to_py};
use super::lc_construct::{kwargs, Fields, Template};
use super::lc_match::{held, Held};
use crate::host_slot::HostSlot;
use crate::message::{Message, MessageKind};
use crate::message_chunk::AiChunk;

/// langchain-core's classes, as `ironloop.messages` handed them over.
pub struct Lc {
    base: Py<PyType>,
    chunk_base: Py<PyType>,
    /// The classes of whole messages, for a type check without `isinstance` (a
    /// pydantic class's `isinstance` goes through `ABCMeta`; a history of messages is
    /// checked one by one).
    exact: Vec<Py<PyType>>,
    human: Template,
    system: Template,
    ai: Template,
    ai_chunk: Py<PyAny>,
    tool: Template,
    remove: Py<PyAny>,
}

/// Set once per process by `ironloop.messages`; `None` inside means "own classes".
static LC: OnceLock<Option<Lc>> = OnceLock::new();

/// `ironloop.messages`'s function that makes the choice (it calls
/// [`_use_langchain_messages`]), for the glue to call on its first need.
static CHOOSE: OnceLock<Py<PyAny>> = OnceLock::new();

/// The host object a message keeps: its langchain-core twin.
struct HostObj(Py<PyAny>);

/// langchain-core's classes when they are the message classes of this process. The
/// first call makes the choice if Python code has not made it yet.
pub fn active() -> Option<&'static Lc> {
    match LC.get() {
        Some(chosen) => chosen.as_ref(),
        None => choose_now(),
    }
}

/// Asks `ironloop.messages` to choose the classes now. Should its function fail (a
/// langchain-core that raises something other than `ImportError` while importing),
/// the error is reported as unraisable and the process keeps ironloop's own classes,
/// as it would without langchain-core.
#[cold]
fn choose_now() -> Option<&'static Lc> {
    if let Some(choose) = CHOOSE.get() {
        Python::attach(|py| {
            if let Err(e) = choose.call0(py) {
                e.write_unraisable(py, None);
                let _ = LC.set(None);
            }
        });
    }
    LC.get().and_then(Option::as_ref)
}

/// Registers `ironloop.messages`'s function that chooses the message classes, called
/// on the glue's first need of them (see the module's doc).
#[pyfunction]
pub fn _choose_messages_on_first_use(choose: Py<PyAny>) {
    let _ = CHOOSE.set(choose);
}

/// Chooses the message classes of this process: langchain-core's (a dict of its
/// classes by name) or, with `None`, ironloop's own. Called once by
/// `ironloop.messages` at import; a second call with another choice is refused, as
/// objects of the first kind may exist already.
#[pyfunction]
pub fn _use_langchain_messages(classes: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let wanted = classes.is_some();
    if LC.get().is_none() {
        let read = classes.map(read_classes).transpose()?;
        let _ = LC.set(read);
    }
    let chosen = LC.get().expect("the choice was just made");
    if chosen.is_some() != wanted {
        return Err(PyRuntimeError::new_err(
            "ironloop's message classes were chosen already in this process (at the first \
             `import ironloop.messages`); they cannot change while messages exist",
        ));
    }
    Ok(())
}

fn read_classes(d: &Bound<'_, PyDict>) -> PyResult<Lc> {
    let get = |k: &str| -> PyResult<Py<PyAny>> {
        d.get_item(k)?
            .map(Bound::unbind)
            .ok_or_else(|| PyRuntimeError::new_err(format!("missing message class {k}")))
    };
    let py = d.py();
    let ty = |k: &str| -> PyResult<Py<PyType>> {
        Ok(get(k)?.bind(py).cast::<PyType>()?.clone().unbind())
    };
    let template = |k: &str, tool: bool| -> PyResult<Template> {
        let sample = PyDict::new(py);
        sample.set_item(intern!(py, "content"), "")?;
        if tool {
            sample.set_item(intern!(py, "tool_call_id"), "")?;
        }
        Template::new(get(k)?, &sample)
    };
    // `AIMessage` at `AI_INDEX`; the classes of an agent's history first (a history
    // is checked message by message, each class compared in turn).
    let names = [
        "AIMessage",
        "ToolMessage",
        "HumanMessage",
        "SystemMessage",
        "RemoveMessage",
    ];
    Ok(Lc {
        base: ty("BaseMessage")?,
        chunk_base: ty("BaseMessageChunk")?,
        exact: names.iter().map(|k| ty(k)).collect::<PyResult<_>>()?,
        human: template("HumanMessage", false)?,
        system: template("SystemMessage", false)?,
        ai: template("AIMessage", false)?,
        ai_chunk: get("AIMessageChunk")?,
        tool: template("ToolMessage", true)?,
        remove: get("RemoveMessage")?,
    })
}

/// `obj.__dict__` (where a langchain-core message keeps its pydantic fields), read
/// without an attribute look-up (through the class' `__mro__` to the `__dict__`
/// descriptor): a history's messages are read one by one at every model call.
pub fn instance_dict<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    // SAFETY: the GIL is held (`obj` proves it); `PyObject_GenericGetDict` returns a new
    // reference, or NULL with an exception set (an object without a `__dict__`).
    let d = unsafe {
        Bound::from_owned_ptr_or_err(
            obj.py(),
            pyo3::ffi::PyObject_GenericGetDict(obj.as_ptr(), std::ptr::null_mut()),
        )?
    };
    Ok(d.cast_into::<PyDict>()?)
}

/// Where `AIMessage` is in [`Lc`]'s `exact` classes.
const AI_INDEX: usize = 0;

/// What [`Lc::classify`] finds an object to be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum LcKind {
    /// A whole message (`AIMessage`, `ToolMessage`, ...).
    Whole,
    /// A streamed piece (`AIMessageChunk`, ...), which a messages channel keeps as the
    /// whole message it stands for.
    Chunk,
}

impl Lc {
    /// Whether `obj`'s class is one of langchain-core's whole-message classes itself:
    /// a pointer comparison per class, where `isinstance` on a pydantic class goes
    /// through `ABCMeta` (a history is checked message by message at every step).
    fn is_exact(&self, obj: &Bound<'_, PyAny>) -> bool {
        let t = obj.get_type_ptr();
        self.exact
            .iter()
            .any(|c| std::ptr::eq(t, c.as_ptr().cast()))
    }

    /// Whether `obj`'s class is langchain-core's `AIMessage` itself (`Some(true)`) or
    /// another of its whole-message classes (`Some(false)`); `None` for anything else
    /// (a subclass, a chunk, ironloop's own), which needs a real look.
    pub fn exact_ai(&self, obj: &Bound<'_, PyAny>) -> Option<bool> {
        let t = obj.get_type_ptr();
        let i = self
            .exact
            .iter()
            .position(|c| std::ptr::eq(t, c.as_ptr().cast()))?;
        Some(i == AI_INDEX)
    }

    /// Whether `obj` is a langchain-core message, and which kind; `None` for anything
    /// else.
    pub fn classify(&self, obj: &Bound<'_, PyAny>) -> PyResult<Option<LcKind>> {
        if self.is_exact(obj) {
            return Ok(Some(LcKind::Whole));
        }
        let py = obj.py();
        if !obj.is_instance(self.base.bind(py))? {
            return Ok(None);
        }
        Ok(Some(if obj.is_instance(self.chunk_base.bind(py))? {
            LcKind::Chunk
        } else {
            LcKind::Whole
        }))
    }

    /// Whether `obj` is a langchain-core message (chunks included).
    pub fn is_message(&self, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.classify(obj)?.is_some())
    }

    /// The langchain-core object of `m`: the one kept in its slot, made and kept on
    /// first use.
    pub fn to_py<'py>(&self, py: Python<'py>, m: &Message) -> PyResult<Bound<'py, PyAny>> {
        let host = m.host.get_or_try_init(|| {
            let obj = self.build(py, m)?.unbind();
            Ok::<_, PyErr>(Arc::new(HostObj(obj)) as Arc<dyn Any + Send + Sync>)
        })?;
        match host.downcast_ref::<HostObj>() {
            Some(h) => Ok(h.0.bind(py).clone()),
            None => self.build(py, m),
        }
    }

    /// A streamed piece as a langchain-core `AIMessageChunk` (never cached: a chunk is
    /// handed out once).
    pub fn chunk_to_py<'py>(&self, py: Python<'py>, c: &AiChunk) -> PyResult<Bound<'py, PyAny>> {
        let mut fields = common(py, &c.message)?;
        // The chunk's calls are what its fragments parse to: langchain-core derives them.
        ai_usage(py, &c.message, &mut fields)?;
        let frags = PyList::empty(py);
        for f in &c.tool_call_chunks {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "name"), &f.name)?;
            d.set_item(intern!(py, "args"), &f.args)?;
            d.set_item(intern!(py, "id"), &f.id)?;
            d.set_item(intern!(py, "index"), f.index)?;
            d.set_item(intern!(py, "type"), intern!(py, "tool_call_chunk"))?;
            frags.append(d)?;
        }
        fields.push((intern!(py, "tool_call_chunks"), frags.into_any()));
        self.ai_chunk.bind(py).call((), Some(&kwargs(py, &fields)?))
    }

    fn build<'py>(&self, py: Python<'py>, m: &Message) -> PyResult<Bound<'py, PyAny>> {
        let mut fields = common(py, m)?;
        let template = match &m.kind {
            MessageKind::Human => &self.human,
            MessageKind::System => &self.system,
            MessageKind::Ai { .. } => {
                ai_calls(py, m, &mut fields)?;
                ai_usage(py, m, &mut fields)?;
                &self.ai
            }
            MessageKind::Tool {
                tool_call_id,
                status,
                artifact,
            } => {
                let id = PyString::new(py, tool_call_id).into_any();
                fields.push((intern!(py, "tool_call_id"), id));
                let status = PyString::new(py, status.as_str()).into_any();
                fields.push((intern!(py, "status"), status));
                if let Some(a) = artifact {
                    fields.push((intern!(py, "artifact"), value_to_py(py, a)?));
                }
                &self.tool
            }
            MessageKind::Remove => {
                let kw = PyDict::new(py);
                kw.set_item(intern!(py, "id"), &m.id)?;
                return self.remove.bind(py).call((), Some(&kw));
            }
        };
        template.make(py, &fields)
    }
}

/// The fields every message class takes.
fn common<'py>(py: Python<'py>, m: &Message) -> PyResult<Fields<'py>> {
    let mut fields: Fields<'py> = Vec::with_capacity(10);
    fields.push((intern!(py, "content"), content_to_py(py, &m.content)?));
    fields.push((intern!(py, "id"), PyString::new(py, &m.id).into_any()));
    if let Some(n) = &m.name {
        fields.push((intern!(py, "name"), PyString::new(py, n).into_any()));
    }
    // Always new dicts, even empty: an object made from a template shares nothing.
    fields.push((
        intern!(py, "additional_kwargs"),
        metadata_to_py(py, &m.additional_kwargs)?,
    ));
    fields.push((
        intern!(py, "response_metadata"),
        metadata_to_py(py, &m.response_metadata)?,
    ));
    Ok(fields)
}

/// An AI message's calls, valid and invalid, in langchain-core's dict shapes.
fn ai_calls<'py>(py: Python<'py>, m: &Message, fields: &mut Fields<'py>) -> PyResult<()> {
    let MessageKind::Ai {
        tool_calls,
        invalid_tool_calls,
        ..
    } = &m.kind
    else {
        return Ok(());
    };
    let calls = PyList::empty(py);
    for c in tool_calls {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "name"), &c.name)?;
        d.set_item(intern!(py, "args"), value_to_py(py, &c.arguments)?)?;
        d.set_item(intern!(py, "id"), &c.id)?;
        d.set_item(intern!(py, "type"), intern!(py, "tool_call"))?;
        calls.append(d)?;
    }
    fields.push((intern!(py, "tool_calls"), calls.into_any()));
    let invalid = PyList::empty(py);
    for c in invalid_tool_calls {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "name"), &c.name)?;
        d.set_item(intern!(py, "args"), &c.args)?;
        d.set_item(intern!(py, "id"), &c.id)?;
        d.set_item(intern!(py, "error"), &c.error)?;
        d.set_item(intern!(py, "type"), intern!(py, "invalid_tool_call"))?;
        invalid.append(d)?;
    }
    fields.push((intern!(py, "invalid_tool_calls"), invalid.into_any()));
    Ok(())
}

/// An AI message's usage, in langchain-core's dict shape, when it has one.
fn ai_usage<'py>(py: Python<'py>, m: &Message, fields: &mut Fields<'py>) -> PyResult<()> {
    if let MessageKind::Ai { usage: Some(u), .. } = &m.kind {
        let usage = value_to_py(py, &u.to_langchain())?;
        fields.push((intern!(py, "usage_metadata"), usage));
    }
    Ok(())
}

/// `m` with `obj` (the langchain-core object it was read from, whose fields are
/// `fields`) kept as its Python object; a langchain-core message without an id gets
/// the one `m` was given (as LangGraph's `add_messages` sets `m.id` on the object it
/// was handed).
pub fn keep(
    obj: &Bound<'_, PyAny>,
    fields: &Bound<'_, PyDict>,
    mut m: Message,
) -> PyResult<Message> {
    let py = obj.py();
    let id = fields.get_item(intern!(py, "id"))?;
    if id.is_none_or(|id| id.is_none()) {
        obj.setattr(intern!(py, "id"), &m.id)?;
    }
    m.host = HostSlot::with(Arc::new(HostObj(obj.clone().unbind())));
    Ok(m)
}

/// How many handed-out objects [`hand_out`] remembers: a node hands back the one or
/// two it was just given (a model's answer, a tool's message), so a few suffice, and
/// the ones never handed back are let go soon.
const HANDED_OUT: usize = 8;

/// A langchain-core object made for Python code that usually hands it straight back
/// (a model's answer, a tool node's result), with the message it was made of.
struct Handed {
    obj: Py<PyAny>,
    msg: Arc<Message>,
}

/// The objects [`hand_out`] remembers, newest last (the GIL is held around every use).
static HANDED: std::sync::Mutex<Vec<Handed>> = std::sync::Mutex::new(Vec::new());

/// `m` as the Python object handed to code that usually hands it straight back: a
/// model's answer (`_coerce_message`), a tool node's result. The object is remembered
/// with `m`, so that [`handed_back`] takes it back as `m` itself while its fields
/// still hold `m` (`lc_match`): reading a langchain-core message field by field costs
/// more than making it, and an agent round hands back one or two such objects.
pub fn hand_out<'py>(py: Python<'py>, m: Arc<Message>) -> PyResult<Bound<'py, PyAny>> {
    let Some(lc) = active() else {
        return super::messages::own_message_to_py(py, m);
    };
    // Only an object made now: one made before is no answer handed straight back.
    let fresh = m.host.get().is_none();
    let obj = lc.to_py(py, &m)?;
    if fresh {
        remember(&obj, m)?;
    }
    Ok(obj)
}

/// Remembers `obj`, made of `m` just now (see [`hand_out`]), when it is of one of
/// langchain-core's own classes (whose fields `lc_match` knows).
pub fn remember(obj: &Bound<'_, PyAny>, m: Arc<Message>) -> PyResult<()> {
    if active().is_none_or(|lc| !lc.is_exact(obj)) {
        return Ok(());
    }
    let entry = Handed {
        obj: obj.clone().unbind(),
        msg: m,
    };
    let evicted = {
        let mut handed = HANDED.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = (handed.len() >= HANDED_OUT).then(|| handed.remove(0));
        handed.push(entry);
        oldest
    };
    // Dropped outside the lock: dropping objects may run Python code.
    drop(evicted);
    Ok(())
}

/// The message of a handed-out object that comes back still holding it (see
/// [`hand_out`]), forgotten then; `None` for any other object, which is read field by
/// field. An object whose id was taken away since (a tool node's result has none
/// until a graph gives it one, as LangGraph's) gets a fresh id, set on it too.
pub fn handed_back(obj: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Message>>> {
    let found = {
        let mut handed = HANDED.lock().unwrap_or_else(|p| p.into_inner());
        match handed.iter().rposition(|h| h.obj.as_ptr() == obj.as_ptr()) {
            Some(i) => handed.remove(i),
            None => return Ok(None),
        }
    };
    if !is_exact(obj) {
        return Ok(None);
    }
    let py = obj.py();
    match held(&instance_dict(obj)?, &found.msg) {
        Held::Same => Ok(Some(found.msg)),
        Held::Differs => Ok(None),
        Held::NoId => {
            let mut m = (*found.msg).clone();
            m.id = crate::message::new_id();
            // As `keep` (and LangGraph's `add_messages`): the object gets the id; what
            // pydantic's `__setattr__` does for a field of langchain-core's own classes
            // ("id" is in its fields set: the object was made here with one, see
            // `hand_out`), without its Python frames.
            instance_dict(obj)?.set_item(intern!(py, "id"), &m.id)?;
            m.host = HostSlot::with(Arc::new(HostObj(obj.clone().unbind())));
            Ok(Some(Arc::new(m)))
        }
    }
}

/// Whether `obj`'s class is one of langchain-core's whole-message classes itself (not
/// a subclass), when those are this process's classes.
pub fn is_exact(obj: &Bound<'_, PyAny>) -> bool {
    active().is_some_and(|lc| lc.is_exact(obj))
}
