//! Checkpoint JSON back into Python values, in one pass, restoring types only from
//! the graph's allowlist.
//!
//! A stored `module:qualname` is a key into [`Allowlist`], never something to import:
//! a type the graph did not allow (or one that cannot be rebuilt from its data any
//! more, its fields changed, say) loads as its plain data with a
//! `CheckpointTypeWarning`, so no stored value can run code at load, and none can
//! make a thread unloadable.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::helpers::helpers;
use super::super::messages::message_to_py;
use crate::graph::tagged::{pieces_of, tag_of, wtf8_bytes, Tag};
use crate::message::Message;

/// The types a graph restores from a checkpoint, by the `module:qualname` they are
/// stored under: the classes its state schema names and those the user registered
/// (`compile(serde_allowlist=...)`), and ironloop's own [`CONTROL_TYPES`]. A name
/// registered without its class (a `(module, qualname)` pair) is found in a module
/// already imported, never imported.
#[derive(Default)]
pub struct Allowlist {
    types: HashMap<String, Option<Py<PyAny>>>,
}

/// ironloop's control-flow values, which every graph restores: a `Send` waiting for
/// its step is checkpointed, and its argument may hold any of them (LangGraph's
/// `Send("n", Command(goto=Send(...)))`). Their module is imported with ironloop.
const CONTROL_TYPES: [&str; 4] = [
    "ironloop.types:Send",
    "ironloop.types:Command",
    "ironloop.types:Interrupt",
    "ironloop.types:Overwrite",
];

impl Allowlist {
    /// From `{ "module:qualname": class or None }`.
    pub fn from_py(d: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut types = HashMap::new();
        for (k, v) in d.into_iter().flat_map(|d| d.iter()) {
            types.insert(k.extract()?, (!v.is_none()).then(|| v.unbind()));
        }
        Ok(Allowlist { types })
    }

    /// The class stored as `path`, if the graph allows it.
    fn class<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.types.get(path) {
            None if CONTROL_TYPES.contains(&path) => imported(py, path),
            None => Ok(None),
            Some(Some(cls)) => Ok(Some(cls.bind(py).clone())),
            Some(None) => imported(py, path),
        }
    }
}

/// The class `module:qualname` if its module is already imported (`sys.modules`).
fn imported<'py>(py: Python<'py>, path: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (module, qualname) = path.split_once(':').unwrap_or((path, ""));
    let modules = py
        .import(intern!(py, "sys"))?
        .getattr(intern!(py, "modules"))?;
    let Some(mut obj) = modules.cast::<PyDict>()?.get_item(module)? else {
        return Ok(None);
    };
    for part in qualname.split('.') {
        match obj.getattr(part) {
            Ok(o) => obj = o,
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(obj))
}

/// The Python value of checkpoint JSON.
pub fn decode<'py>(py: Python<'py>, v: &Value, allow: &Allowlist) -> PyResult<Bound<'py, PyAny>> {
    Decoder {
        allow,
        warned: HashSet::new(),
    }
    .value(py, v)
}

struct Decoder<'a> {
    allow: &'a Allowlist,
    /// The types warned about in this value (one warning each).
    warned: HashSet<String>,
}

/// `dataclasses.fields` and `enum.Enum`, looked up once.
static RESTORE: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn malformed(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "a checkpointed {what} is malformed: the record was modified or written by a \
         newer ironloop; upgrade ironloop or load an older checkpoint"
    ))
}

impl Decoder<'_> {
    fn value<'py>(&mut self, py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        Ok(match v {
            Value::Null => py.None().into_bound(py),
            Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    i.into_pyobject(py)?.into_any()
                } else if let Some(u) = n.as_u64() {
                    u.into_pyobject(py)?.into_any()
                } else {
                    n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
                }
            }
            Value::String(s) => PyString::new(py, s).into_any(),
            Value::Array(items) => PyList::new(py, self.items(py, items)?)?.into_any(),
            Value::Object(map) => match tag_of(map) {
                None => self.dict(py, map)?.into_any(),
                Some(tag) => self.tagged(py, tag)?,
            },
        })
    }

    fn items<'py>(&mut self, py: Python<'py>, items: &[Value]) -> PyResult<Vec<Bound<'py, PyAny>>> {
        items.iter().map(|v| self.value(py, v)).collect()
    }

    fn dict<'py>(
        &mut self,
        py: Python<'py>,
        map: &Map<String, Value>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in map {
            d.set_item(PyString::new(py, k), self.value(py, v)?)?;
        }
        Ok(d)
    }

    fn tagged<'py>(&mut self, py: Python<'py>, tag: Tag<'_>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match tag {
            Tag::Message(fields) => {
                let m = Message::deserialize(fields).map_err(|e| {
                    PyValueError::new_err(format!("a checkpointed message is malformed: {e}"))
                })?;
                message_to_py(py, Arc::new(m))?
            }
            Tag::Tuple(items) => PyTuple::new(py, self.items(py, items)?)?.into_any(),
            Tag::Set(items) => PySet::new(py, self.items(py, items)?)?.into_any(),
            Tag::FrozenSet(items) => PyFrozenSet::new(py, self.items(py, items)?)?.into_any(),
            Tag::Float(f) => f.into_pyobject(py)?.into_any(),
            Tag::Int(hex) => py.get_type::<PyInt>().call1((hex, 16))?,
            Tag::Str(parts) => str_of(py, parts)?.into_any(),
            Tag::Dict(pairs) => {
                let d = PyDict::new(py);
                for p in pairs {
                    let [k, v] = p.as_array().map(Vec::as_slice).unwrap_or_default() else {
                        return Err(malformed("dict"));
                    };
                    let k = self.value(py, k)?;
                    if k.cast::<PyString>().is_err() {
                        return Err(malformed("dict"));
                    }
                    d.set_item(k, self.value(py, v)?)?;
                }
                d.into_any()
            }
            Tag::Type { path, value } => {
                let data = self.value(py, value)?;
                self.typed(py, path, data)?
            }
        })
    }

    /// A value stored as a `path` object: that object when the graph allows the type
    /// and its data still makes one, else the data, with a warning.
    fn typed<'py>(
        &mut self,
        py: Python<'py>,
        path: &str,
        data: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let why = match self.allow.class(py, path)? {
            Some(cls) => match restore(py, &cls, &data) {
                Ok(Some(obj)) => return Ok(obj),
                Ok(None) => {
                    format!("the allowlist's {path} is not an enum, dataclass or pydantic model")
                }
                Err(e) => format!("{path} could not be rebuilt from its data: {e}"),
            },
            None if self.allow.types.contains_key(path) => format!(
                "{path} is allowed by name, but its module is not imported: import it \
                 before loading the thread"
            ),
            None => format!(
                "{path} is not in this graph's allowlist: name it in the state schema or \
                 pass compile(..., serde_allowlist=[{}]) if you trust it",
                path.rsplit([':', '.']).next().unwrap_or(path)
            ),
        };
        if self.warned.insert(path.to_owned()) {
            let msg = format!(
                "a checkpointed value of type {path} was loaded as plain data ({}): {why}",
                data.get_type().name()?
            );
            let category = helpers(py)?.type_warning.bind(py);
            let msg = CString::new(msg).unwrap_or_default();
            PyErr::warn(py, category, &msg, 1)?;
        }
        Ok(data)
    }
}

/// `cls` rebuilt from `data` (`None` if `cls` is not a kind the encoder types).
fn restore<'py>(
    py: Python<'py>,
    cls: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (fields, enum_type) = RESTORE.get_or_try_init(py, || -> PyResult<_> {
        Ok((
            py.import("dataclasses")?.getattr("fields")?.unbind(),
            py.import("enum")?.getattr("Enum")?.unbind(),
        ))
    })?;
    let Ok(ty) = cls.cast::<pyo3::types::PyType>() else {
        return Ok(None);
    };
    if cls.is(helpers(py)?.send.bind(py)) {
        let d = data.cast::<PyDict>()?;
        let field = |name: &str| {
            d.get_item(name)?
                .ok_or_else(|| PyValueError::new_err(format!("no {name:?} field")))
        };
        return Ok(Some(cls.call1((field("node")?, field("arg")?))?));
    }
    if ty.is_subclass(enum_type.bind(py))? {
        return Ok(Some(cls.call1((data,))?));
    }
    if ty.hasattr(intern!(py, "__dataclass_fields__"))? {
        let d = data.cast::<PyDict>()?;
        // Fields made by `__init__` are passed to it; the others (`init=False`) are set
        // after, as the object held them.
        let (init, later) = (PyDict::new(py), PyDict::new(py));
        for f in fields.bind(py).call1((cls,))?.try_iter()? {
            let f = f?;
            let name = f.getattr(intern!(py, "name"))?;
            if let Some(v) = d.get_item(&name)? {
                let target = if f.getattr(intern!(py, "init"))?.is_truthy()? {
                    &init
                } else {
                    &later
                };
                target.set_item(name, v)?;
            }
        }
        let obj = cls.call((), Some(&init))?;
        let setattr = py
            .import(intern!(py, "builtins"))?
            .getattr(intern!(py, "object"))?
            .getattr(intern!(py, "__setattr__"))?;
        for (k, v) in later.iter() {
            setattr.call1((&obj, k, v))?;
        }
        return Ok(Some(obj));
    }
    if ty.hasattr(intern!(py, "model_validate"))? {
        return Ok(Some(
            cls.call_method1(intern!(py, "model_validate"), (data,))?,
        ));
    }
    Ok(None)
}

/// A string stored with its lone surrogates (`parts`).
fn str_of<'py>(py: Python<'py>, parts: &[Value]) -> PyResult<Bound<'py, PyString>> {
    let pieces = pieces_of(parts).ok_or_else(|| malformed("string"))?;
    let bytes = PyBytes::new(py, &wtf8_bytes(&pieces));
    Ok(bytes
        .call_method1(intern!(py, "decode"), ("utf-8", "surrogatepass"))?
        .cast_into::<PyString>()?)
}
