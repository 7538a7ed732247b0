//! Values as Python sees them: Python objects in channels, checkpoint decoding, and
//! the state dict a node receives (with its message lists kept between steps).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use super::super::convert::value_to_py;
use super::super::errors::Class;
use super::super::helpers::helpers;
use super::super::messages::message_from_py;
use super::super::messages::message_to_py;
use super::super::toolnode::command_class;
use crate::checkpoint::CheckpointError;
use crate::graph::{
    Goto, GraphError, HostValue, MessageList, NodeOutput, StateView, Val, ValueCodec, END,
};
use crate::message::Message;

// ---------------------------------------------------------------------------------
// Values

/// A Python object in a channel.
pub struct PyObj(pub Py<PyAny>);

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
            let enc = helpers(py).map_err(|e| e.to_string())?.encode.bind(py);
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

pub(super) fn host(obj: Bound<'_, PyAny>) -> Val {
    Val::Host(Arc::new(PyObj(obj.unbind())))
}

/// The Python object of a value (messages as a fresh list).
pub(super) fn val_to_py<'py>(py: Python<'py>, v: &Val) -> PyResult<Bound<'py, PyAny>> {
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
pub(super) struct PyCodec;

impl ValueCodec for PyCodec {
    fn decode(&self, _channel: &str, value: Value) -> Result<Val, GraphError> {
        Python::attach(|py| {
            let obj = value_to_py(py, &value)?;
            let dec = helpers(py)?.decode.bind(py);
            Ok(host(dec.call1((obj,))?))
        })
        .map_err(|e: PyErr| {
            GraphError::Checkpoint(CheckpointError::serialization(format!(
                "cannot decode a checkpointed value: {e}"
            )))
        })
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
    /// Builds the node input from a dict (dataclass / pydantic schemas).
    pub(super) state_factory: Option<Py<PyAny>>,
    pub(super) messages_channels: HashSet<String>,
    pub(super) channels: HashSet<String>,
    pub(super) caches: Mutex<HashMap<String, MsgCache>>,
    pub(super) store: Option<Py<PyAny>>,
}

impl Shared {
    /// The messages list for a node, reusing the cached Python objects.
    pub(super) fn messages_list<'py>(
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

    /// What a node receives: the dict, or the schema's object made from it.
    pub(super) fn node_input<'py>(
        &self,
        py: Python<'py>,
        view: &StateView,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = self.state_dict(py, view)?;
        match &self.state_factory {
            Some(f) => f.bind(py).call1((d,)),
            None => Ok(d.into_any()),
        }
    }

    /// Channel writes from a dict-like update.
    pub(super) fn writes_from(
        &self,
        py: Python<'_>,
        node: &str,
        upd: &Bound<'_, PyAny>,
        out: &mut NodeOutput,
    ) -> PyResult<()> {
        let d = match upd.cast::<PyDict>() {
            Ok(d) => d.clone(),
            Err(_) => {
                let conv = helpers(py)?.as_update.bind(py);
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
                return Err(Class::InvalidUpdate.err(
                    py,
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
    pub(super) fn output(
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

pub(super) fn send_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    Ok(helpers(py)?.send.bind(py))
}
