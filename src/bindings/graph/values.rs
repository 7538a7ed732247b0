//! Values as Python sees them: Python objects in channels, checkpoint decoding, and
//! the state dict a node receives (with its message lists kept between steps).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use super::super::coerce::message_from_py;
use super::super::convert::value_to_py;
use super::super::exiting::attach;
use super::super::helpers::helpers;
use super::super::messages::message_to_py;
use super::super::serde::{self as checkpoint_json, Allowlist};
use super::super::toolnode::command_class;
use crate::checkpoint::{CheckpointError, Piece};
use crate::graph::{
    parse_text, Goto, GraphError, HostValue, MessageList, NodeOutput, StateView, TimeoutPolicy,
    Val, ValueCodec, ROOT, START,
};
use crate::message::Message;

// ---------------------------------------------------------------------------------
// Values

/// A Python object in a channel, with its checkpoint JSON once it was encoded (or the
/// JSON it was loaded from): a value is encoded once however many checkpoints hold
/// it, as a tree for the writes that hold it and as text in pieces for the snapshots
/// and the state cache (each made once, the text from the tree when there is one). The
/// channel's version says when it changed: a new version is a new `PyObj`. A
/// checkpoint holds a value as it was written: changing the object in place
/// afterwards, without writing it again, changes no checkpoint (as in LangGraph, where
/// a channel is saved once per version).
pub struct PyObj {
    obj: Py<PyAny>,
    json: OnceLock<Arc<Value>>,
    text: OnceLock<Arc<[Piece]>>,
}

impl PyObj {
    pub fn new(obj: Py<PyAny>) -> Self {
        PyObj {
            obj,
            json: OnceLock::new(),
            text: OnceLock::new(),
        }
    }

    /// An object decoded from `json`, which is then its checkpoint JSON.
    fn loaded(obj: Py<PyAny>, json: Arc<Value>) -> Self {
        PyObj {
            obj,
            json: OnceLock::from(json),
            text: OnceLock::new(),
        }
    }

    /// An object decoded from `text`, which is then its checkpoint text.
    fn loaded_text(obj: Py<PyAny>, text: Arc<[Piece]>) -> Self {
        PyObj {
            obj,
            json: OnceLock::new(),
            text: OnceLock::from(text),
        }
    }
}

impl HostValue for PyObj {
    fn to_json(&self) -> Result<Arc<Value>, String> {
        if let Some(j) = self.json.get() {
            return Ok(j.clone());
        }
        if let Some(t) = self.text.get() {
            // Loaded from text: parsed for the caller, not kept twice.
            return serde_json::from_str(&Piece::joined(t))
                .map(Arc::new)
                .map_err(|e| e.to_string());
        }
        let v = attach(|py| checkpoint_json::encode(self.obj.bind(py)))?;
        Ok(self.json.get_or_init(|| Arc::new(v)).clone())
    }

    fn to_pieces(&self) -> Result<Arc<[Piece]>, String> {
        if let Some(t) = self.text.get() {
            return Ok(t.clone());
        }
        let text: Arc<[Piece]> = match self.json.get() {
            Some(j) => Arc::from([Piece::from(
                serde_json::to_string(&**j).map_err(|e| e.to_string())?,
            )]),
            None => attach(|py| checkpoint_json::encode_pieces(self.obj.bind(py)))?.into(),
        };
        Ok(self.text.get_or_init(|| text).clone())
    }

    fn type_name(&self) -> String {
        attach(|py| {
            let t = self.obj.bind(py).get_type();
            t.fully_qualified_name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub(crate) fn host(obj: Bound<'_, PyAny>) -> Val {
    Val::Host(Arc::new(PyObj::new(obj.unbind())))
}

/// The Python object of a value (messages as a fresh list).
pub(super) fn val_to_py<'py>(py: Python<'py>, v: &Val) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Val::Host(h) => match h.as_any().downcast_ref::<PyObj>() {
            Some(o) => Ok(o.obj.bind(py).clone()),
            None => value_to_py(py, &*h.to_json().map_err(PyValueError::new_err)?),
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

/// Decodes checkpointed JSON into Python objects (messages revived, types restored
/// from the graph's allowlist); each keeps the JSON it came from.
pub(super) struct PyCodec {
    pub(super) allow: Allowlist,
}

impl PyCodec {
    /// The Python object of checkpointed `value`.
    fn object(&self, channel: &str, value: &Value) -> Result<Py<PyAny>, GraphError> {
        attach(|py| checkpoint_json::decode(py, value, &self.allow).map(Bound::unbind)).map_err(
            |e: PyErr| {
                GraphError::Checkpoint(CheckpointError::serialization(format!(
                    "cannot decode the checkpointed value of {channel:?}: {e}"
                )))
            },
        )
    }
}

impl ValueCodec for PyCodec {
    fn decode(&self, channel: &str, value: Value) -> Result<Val, GraphError> {
        let obj = self.object(channel, &value)?;
        Ok(Val::Host(Arc::new(PyObj::loaded(obj, Arc::new(value)))))
    }

    fn decode_text(&self, channel: &str, text: Arc<[Piece]>) -> Result<Val, GraphError> {
        let obj = self.object(channel, &parse_text(channel, &Piece::joined(&text))?)?;
        Ok(Val::Host(Arc::new(PyObj::loaded_text(obj, text))))
    }
}

pub(super) fn messages_val(obj: &Bound<'_, PyAny>) -> PyResult<Val> {
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
pub(super) struct MsgCache {
    pub(super) list: Py<PyList>,
    pub(super) len: usize,
    pub(super) generation: u64,
    pub(super) last: Option<Arc<Message>>,
}

pub(super) struct Shared {
    /// The state is one bare value (the root channel): updates are that value.
    pub(super) root: bool,
    pub(super) messages_channels: HashSet<String>,
    pub(super) channels: HashSet<String>,
    pub(super) caches: Mutex<HashMap<String, MsgCache>>,
    pub(super) store: Option<Py<PyAny>>,
}

/// Locks `m` with the GIL held, releasing the GIL while another thread holds the lock:
/// the holder may need the GIL back (making a message's Python object can release it),
/// so waiting for the lock with the GIL held deadlocked a run's node against a stream
/// reading the same state (the event loop and the run both stalled).
fn lock_detached<'a, T: Send>(py: Python<'_>, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
    loop {
        match m.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(TryLockError::WouldBlock) => py.detach(|| drop(m.lock())),
        }
    }
}

impl Shared {
    /// The messages list for a node, reusing the cached Python objects.
    pub(super) fn messages_list<'py>(
        &self,
        py: Python<'py>,
        ch: &str,
        l: &MessageList,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut caches = lock_detached(py, &self.caches);
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
    pub(super) fn state_dict<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
    ) -> PyResult<Bound<'py, PyDict>> {
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

    /// The state as Python shows it: the bare value of a root view (`None` while it
    /// is empty), else a dict.
    pub(super) fn state_value<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
    ) -> PyResult<Bound<'py, PyAny>> {
        match view.root() {
            Some(Some(Val::Messages(l))) => self.messages_list(py, ROOT, l),
            Some(Some(v)) => val_to_py(py, v),
            Some(None) => Ok(py.None().into_bound(py)),
            None => Ok(self.state_dict(py, view)?.into_any()),
        }
    }

    /// What a node (or router) receives: the state value, or the object its
    /// dataclass / pydantic schema (`factory`) makes from the dict.
    pub(super) fn node_input<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
        factory: &Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = self.state_value(py, view)?;
        match factory {
            Some(f) if v.cast::<PyDict>().is_ok() => f.bind(py).call1((v,)),
            _ => Ok(v),
        }
    }

    /// A value written to channel `k`, as the channel holds it.
    fn channel_val(&self, k: &str, v: &Bound<'_, PyAny>) -> PyResult<Val> {
        if self.messages_channels.contains(k) {
            messages_val(v)
        } else {
            Ok(host(v.clone()))
        }
    }

    /// A dict-like value as `(key, value)` pairs: a dict's items, or the fields of a
    /// dataclass or pydantic object (`as_update`) that are channels of the graph.
    fn pairs<'py>(
        &self,
        py: Python<'py>,
        node: &str,
        upd: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let (d, fields) = match upd.cast::<PyDict>() {
            Ok(d) => (d.clone(), false),
            Err(_) => {
                let conv = helpers(py)?.as_update.bind(py);
                (conv.call1((upd, node))?.cast_into::<PyDict>()?, true)
            }
        };
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let k: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "node {node:?} returned an update with a non-str key"
                ))
            })?;
            if !fields || self.channels.contains(&k) {
                out.push((k, v));
            }
        }
        Ok(out)
    }

    /// The writes of a run's input. The core keeps those to the input schema's keys.
    pub(super) fn input_writes(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(String, Val)>> {
        self.update_pairs(py, START, input)?
            .into_iter()
            .map(|(k, v)| {
                let val = self.channel_val(&k, &v)?;
                Ok((k, val))
            })
            .collect()
    }

    /// The `(key, value)` pairs of an update (a run's input, a node's return value):
    /// the value itself in a root graph, else a dict-like value's items.
    fn update_pairs<'py>(
        &self,
        py: Python<'py>,
        node: &str,
        upd: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Pair<'py>>> {
        if self.root {
            return Ok(vec![(ROOT.to_owned(), upd.clone())]);
        }
        self.pairs(py, node, upd)
    }

    /// The pairs of `Command(update=...)`: a dict or a list of `(key, value)` pairs
    /// name their keys (also in a root graph); anything else is an update as a node
    /// returns it.
    fn command_pairs<'py>(
        &self,
        py: Python<'py>,
        node: &str,
        upd: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Pair<'py>>> {
        if upd.cast::<PyDict>().is_ok() {
            return self.pairs(py, node, upd);
        }
        if upd.cast::<PyList>().is_ok() || upd.cast::<PyTuple>().is_ok() {
            let named: Option<Vec<Pair<'py>>> = upd
                .try_iter()?
                .map(|kv| kv.ok().and_then(|kv| kv.extract().ok()))
                .collect();
            if let Some(named) = named {
                return Ok(named);
            }
        }
        self.update_pairs(py, node, upd)
    }

    /// The writes of a node's return value as LangGraph's `updates` stream shows
    /// them (its `map_output_updates`): nothing as `None`; in a root graph the value
    /// written, or the list of them when there are several; else one dict of the
    /// writes, or, when a key is written more than once, one `{key: value}` dict per
    /// write, in order.
    pub(super) fn shown_update<'py>(
        &self,
        py: Python<'py>,
        written: Vec<Pair<'py>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let one_or_list = |mut items: Vec<Bound<'py, PyAny>>| -> PyResult<_> {
            Ok(match items.len() {
                0 => None,
                1 => items.pop(),
                _ => Some(PyList::new(py, items)?.into_any()),
            })
        };
        if self.root {
            return one_or_list(written.into_iter().map(|(_, v)| v).collect());
        }
        let mut seen = HashSet::new();
        if written.iter().all(|(k, _)| seen.insert(k.as_str())) {
            if written.is_empty() {
                return Ok(None);
            }
            return Ok(Some(written.into_py_dict(py)?.into_any()));
        }
        let dicts = written
            .into_iter()
            .map(|kv| Ok([kv].into_py_dict(py)?.into_any()))
            .collect::<PyResult<Vec<_>>>()?;
        one_or_list(dicts)
    }

    pub(super) fn goto_from(
        &self,
        py: Python<'_>,
        g: &Bound<'_, PyAny>,
        out: &mut Vec<Goto>,
    ) -> PyResult<()> {
        if g.is_none() {
            return Ok(());
        }
        if let Ok(s) = g.cast::<PyString>() {
            let s = s.to_str()?;
            out.push(Goto::to(s));
            return Ok(());
        }
        if g.is_instance(send_class(py)?)? {
            out.push(send_goto(g)?);
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

    /// A node's return value as writes and routing. Returns the pairs written, as
    /// Python values, for the `updates` stream ([`Shared::shown_update`]); a key that
    /// is not a channel of the graph is dropped, as LangGraph drops it: a node may
    /// return more than the state holds (a model's `usage_metadata`, a subgraph's own
    /// keys) and only the state's keys are written.
    pub(super) fn output<'py>(
        &self,
        py: Python<'py>,
        node: &str,
        r: &Bound<'py, PyAny>,
        out: &mut NodeOutput,
    ) -> PyResult<Vec<Pair<'py>>> {
        let pairs = self.written_pairs(py, node, r, &mut out.goto)?;
        for (k, v) in &pairs {
            out.writes.push((k.clone(), self.channel_val(k, v)?));
        }
        Ok(pairs)
    }

    /// [`Shared::output`] for a caller that does not show the update: the keys move
    /// into the writes instead of being copied.
    pub(super) fn write_output(
        &self,
        py: Python<'_>,
        node: &str,
        r: &Bound<'_, PyAny>,
        out: &mut NodeOutput,
    ) -> PyResult<()> {
        for (k, v) in self.written_pairs(py, node, r, &mut out.goto)? {
            let val = self.channel_val(&k, &v)?;
            out.writes.push((k, val));
        }
        Ok(())
    }

    /// The pairs of a node's return value that are channels of the graph (see
    /// [`Shared::output`]); its routing goes to `goto`.
    fn written_pairs<'py>(
        &self,
        py: Python<'py>,
        node: &str,
        r: &Bound<'py, PyAny>,
        goto: &mut Vec<Goto>,
    ) -> PyResult<Vec<Pair<'py>>> {
        let mut pairs = Vec::new();
        self.returned(py, node, r, &mut pairs, goto)?;
        pairs.retain(|(k, _)| self.channels.contains(k));
        Ok(pairs)
    }

    /// The `(key, value)` pairs and routing of a node's return value.
    fn returned<'py>(
        &self,
        py: Python<'py>,
        node: &str,
        r: &Bound<'py, PyAny>,
        pairs: &mut Vec<Pair<'py>>,
        goto: &mut Vec<Goto>,
    ) -> PyResult<()> {
        if r.is_none() {
            return Ok(());
        }
        if r.is_instance(command_class(py)?)? {
            let g = r.getattr("graph")?;
            if !g.is_none() {
                let h = helpers(py)?;
                if g.extract::<String>().ok().as_deref() != Some("__parent__") {
                    return Err(PyValueError::new_err(format!(
                        "node {node:?} returned Command(graph={}): the only graph a command \
                         can name is Command.PARENT",
                        g.repr()?
                    )));
                }
                // The parent's node that runs this graph takes the command as its result.
                let kw = PyDict::new(py);
                kw.set_item("update", r.getattr("update")?)?;
                kw.set_item("goto", r.getattr("goto")?)?;
                let cmd = h.command.bind(py).call((), Some(&kw))?;
                return Err(PyErr::from_value(h.parent_command.bind(py).call1((cmd,))?));
            }
            let upd = r.getattr("update")?;
            if !upd.is_none() {
                pairs.extend(self.command_pairs(py, node, &upd)?);
            }
            self.goto_from(py, &r.getattr("goto")?, goto)?;
            return Ok(());
        }
        // A list of updates and `Command`s; in a root graph a list is the value unless
        // it holds a `Command` (LangGraph's rule).
        let is_list = r.cast::<PyList>().is_ok() || r.cast::<PyTuple>().is_ok();
        if is_list && (!self.root || holds_command(py, r)?) {
            for item in r.try_iter()? {
                self.returned(py, node, &item?, pairs, goto)?;
            }
            return Ok(());
        }
        let more = self.update_pairs(py, node, r)?;
        // The usual return value, one update: its pairs are the list, not copied into it.
        if pairs.is_empty() {
            *pairs = more;
        } else {
            pairs.extend(more);
        }
        Ok(())
    }
}

/// A key written and its value, as the node gave it.
pub(super) type Pair<'py> = (String, Bound<'py, PyAny>);

fn holds_command(py: Python<'_>, list: &Bound<'_, PyAny>) -> PyResult<bool> {
    let command = command_class(py)?;
    for item in list.try_iter()? {
        if item?.is_instance(command)? {
            return Ok(true);
        }
    }
    Ok(false)
}

pub(super) fn send_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    Ok(helpers(py)?.send.bind(py))
}

/// A `Send` (`s`, an instance of [`send_class`]) as the engine's goto: its node, its
/// argument and its own timeout (`Send(timeout=)`, coerced to a `TimeoutPolicy` in
/// seconds by `Send` itself, or `None`).
pub(super) fn send_goto(s: &Bound<'_, PyAny>) -> PyResult<Goto> {
    let node: String = s.getattr(intern!(s.py(), "node"))?.extract()?;
    let timeout = s.getattr(intern!(s.py(), "timeout"))?;
    let timeout = if timeout.is_none() {
        None
    } else {
        let (run, idle, heartbeat_only): (Option<f64>, Option<f64>, bool) = timeout
            .call_method0(intern!(s.py(), "_engine"))?
            .extract()?;
        Some(TimeoutPolicy::from_secs(run, idle, heartbeat_only))
    };
    Ok(Goto::Send(
        node,
        host(s.getattr(intern!(s.py(), "arg"))?),
        timeout,
    ))
}
