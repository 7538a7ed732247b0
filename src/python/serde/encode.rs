//! Python values as checkpoint JSON, in one pass over the objects (the forms are in
//! `crate::graph::tagged`).
//!
//! Exact `dict`, `list`, `str`, `int`, `float`, `bool` and `None` are read through the
//! C API with no Python call; a message is serialised from the Rust value it wraps.
//! Only an enum, dataclass or pydantic model costs a Python call (its value, its
//! fields, `model_dump(mode="json")`), once per object, not per element.

use std::fmt;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple, PyType,
};
use serde_json::{Map, Value};

use super::super::messages::PyMessage;
use crate::graph::tagged::{self, is_reserved_key, tagged, MESSAGE_KEY};

/// How deep a value may nest, counting the JSON containers of its tagged forms: below
/// serde_json's limit of 128 for reading text back, with room for the record around
/// it. Deeper (or self-containing) values are refused instead of overflowing the stack.
pub const MAX_DEPTH: usize = 120;

/// The Python objects the encoder tests against, looked up once.
struct Kinds {
    enum_type: Py<PyAny>,
    fields: Py<PyAny>,
}

static KINDS: PyOnceLock<Kinds> = PyOnceLock::new();

fn kinds(py: Python<'_>) -> PyResult<&'static Kinds> {
    KINDS.get_or_try_init(py, || {
        Ok(Kinds {
            enum_type: py.import("enum")?.getattr("Enum")?.unbind(),
            fields: py.import("dataclasses")?.getattr("fields")?.unbind(),
        })
    })
}

/// Why a value could not be encoded, and where in it (innermost segment first).
struct Failure {
    reason: String,
    path: Vec<String>,
}

impl Failure {
    fn new(reason: impl Into<String>) -> Self {
        Failure {
            reason: reason.into(),
            path: Vec::new(),
        }
    }

    fn at(mut self, segment: impl FnOnce() -> String) -> Self {
        self.path.push(segment());
        self
    }
}

impl From<PyErr> for Failure {
    fn from(e: PyErr) -> Self {
        Failure::new(super::super::exiting::attach(|py| e.value(py).to_string()))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        if !self.path.is_empty() {
            f.write_str(" (at value")?;
            for s in self.path.iter().rev() {
                f.write_str(s)?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// `obj` as checkpoint JSON, or why it has none (naming the type and where it is).
pub fn encode(obj: &Bound<'_, PyAny>) -> Result<Value, String> {
    let kinds = kinds(obj.py()).map_err(|e| e.to_string())?;
    Encoder { kinds }.value(obj, 0).map_err(|f| f.to_string())
}

struct Encoder {
    kinds: &'static Kinds,
}

type Out = Result<Value, Failure>;

impl Encoder {
    fn value(&self, obj: &Bound<'_, PyAny>, depth: usize) -> Out {
        if obj.is_none() {
            return Ok(Value::Null);
        }
        if let Ok(s) = obj.cast_exact::<PyString>() {
            return string(s);
        }
        if let Ok(b) = obj.cast_exact::<PyBool>() {
            return Ok(Value::Bool(b.is_true()));
        }
        if let Ok(i) = obj.cast_exact::<PyInt>() {
            return int(i);
        }
        if let Ok(f) = obj.cast_exact::<PyFloat>() {
            return Ok(tagged::float(f.value()));
        }
        // Past here `obj` is a container: one level more.
        if depth >= MAX_DEPTH {
            return Err(Failure::new(format!(
                "it nests deeper than {MAX_DEPTH} levels (or contains itself)"
            )));
        }
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            return self.dict(d, depth + 1);
        }
        if let Ok(l) = obj.cast_exact::<PyList>() {
            return self.items(l.iter(), depth + 1).map(Value::Array);
        }
        if let Ok(m) = obj.cast::<PyMessage>() {
            return message(&m.borrow().inner);
        }
        // A langchain-core message (the classes Python code sees when it is installed)
        // is read as the message it is, not as a pydantic model: it loads back as a
        // message, whatever the graph's allowlist.
        if let Some(lc) = super::super::lc_messages::active() {
            if lc.is_message(obj)? {
                return message(&*super::super::coerce::message_from_py(obj)?);
            }
        }
        // A tagged form is two levels: its object and the array of items.
        let seq = |kind: &str, items: Vec<Value>| tagged(kind, "items", Value::Array(items));
        if let Ok(t) = obj.cast_exact::<PyTuple>() {
            return Ok(seq("tuple", self.items(t.iter(), depth + 2)?));
        }
        if let Ok(s) = obj.cast_exact::<PySet>() {
            return Ok(seq("set", self.items(s.iter(), depth + 2)?));
        }
        if let Ok(s) = obj.cast_exact::<PyFrozenSet>() {
            return Ok(seq("frozenset", self.items(s.iter(), depth + 2)?));
        }
        self.object(obj, depth)
    }

    fn items<'py>(
        &self,
        items: impl ExactSizeIterator<Item = Bound<'py, PyAny>>,
        depth: usize,
    ) -> Result<Vec<Value>, Failure> {
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.enumerate() {
            out.push(
                self.value(&v, depth)
                    .map_err(|f| f.at(|| format!("[{i}]")))?,
            );
        }
        Ok(out)
    }

    /// A dict: an object, or the escaped form once a key is reserved or not text.
    fn dict(&self, d: &Bound<'_, PyDict>, depth: usize) -> Out {
        let mut map = Map::with_capacity(d.len());
        let mut iter = d.iter();
        while let Some((k, v)) = iter.next() {
            match key_of(&k)? {
                Value::String(s) if !is_reserved_key(&s) => {
                    let v = self.entry(&k, &v, depth)?;
                    map.insert(s, v);
                }
                key => {
                    // Escape: the pairs so far, this one and the rest.
                    let mut pairs: Vec<Value> = map
                        .into_iter()
                        .map(|(k, v)| pair(Value::String(k), v))
                        .collect();
                    pairs.push(pair(key, self.entry(&k, &v, depth + 2)?));
                    for (k, v) in iter {
                        let key = key_of(&k)?;
                        pairs.push(pair(key, self.entry(&k, &v, depth + 2)?));
                    }
                    return Ok(tagged("dict", "items", Value::Array(pairs)));
                }
            }
        }
        Ok(Value::Object(map))
    }

    fn entry(&self, k: &Bound<'_, PyAny>, v: &Bound<'_, PyAny>, depth: usize) -> Out {
        self.value(v, depth).map_err(|f| {
            f.at(|| format!("[{}]", k.repr().map(|r| r.to_string()).unwrap_or_default()))
        })
    }

    /// What is neither plain data nor a built-in collection: an enum, a dataclass, a
    /// pydantic model (typed, by name), or a dict / list subclass (as plain data).
    fn object(&self, obj: &Bound<'_, PyAny>, depth: usize) -> Out {
        let py = obj.py();
        let ty = obj.get_type();
        if obj.is_instance(self.kinds.enum_type.bind(py))? {
            let v = self.value(&obj.getattr(intern!(py, "value"))?, depth + 1)?;
            return Ok(tagged(&type_path(&ty)?, "value", v));
        }
        if ty.hasattr(intern!(py, "__dataclass_fields__"))? && !obj.is_instance_of::<PyType>() {
            let mut fields = Map::new();
            for f in self.kinds.fields.bind(py).call1((obj,))?.try_iter()? {
                let name: String = f?.getattr(intern!(py, "name"))?.extract()?;
                let v = self
                    .value(&obj.getattr(name.as_str())?, depth + 2)
                    .map_err(|e| e.at(|| format!(".{name}")))?;
                fields.insert(name, v);
            }
            return Ok(tagged(
                &type_path(&ty)?,
                "value",
                escaped_if_reserved(fields),
            ));
        }
        if ty.hasattr(intern!(py, "model_validate"))? && obj.hasattr(intern!(py, "model_dump"))? {
            let kw = PyDict::new(py);
            kw.set_item(intern!(py, "mode"), intern!(py, "json"))?;
            let dump = obj.call_method(intern!(py, "model_dump"), (), Some(&kw))?;
            let v = self.value(&dump, depth + 1)?;
            return Ok(tagged(&type_path(&ty)?, "value", v));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            return self.dict(d, depth + 1);
        }
        if let Ok(l) = obj.cast::<PyList>() {
            return self.items(l.iter(), depth + 1).map(Value::Array);
        }
        Err(Failure::new(format!(
            "{} is not a type a checkpoint holds: use dict, list, str, int, float, bool, \
             None, tuple, set, frozenset, messages, enums, dataclasses or pydantic models",
            qualified_name(&ty)
        )))
    }
}

fn pair(k: Value, v: Value) -> Value {
    Value::Array(vec![k, v])
}

/// An object of fields, escaped as a dict is when a field's name is reserved.
fn escaped_if_reserved(fields: Map<String, Value>) -> Value {
    if !fields.keys().any(|k| is_reserved_key(k)) {
        return Value::Object(fields);
    }
    let pairs = fields
        .into_iter()
        .map(|(k, v)| pair(Value::String(k), v))
        .collect();
    tagged("dict", "items", Value::Array(pairs))
}

/// A dict key: text (any `str`, subclasses read as `str`), else refused.
fn key_of(k: &Bound<'_, PyAny>) -> Out {
    match k.cast::<PyString>() {
        Ok(s) => string(s),
        Err(_) => Err(Failure::new(format!(
            "dict keys must be str to be checkpointed, got a {} key {}",
            qualified_name(&k.get_type()),
            k.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// A string: JSON text, or (lone surrogates in it) the tagged form keeping them.
fn string(s: &Bound<'_, PyString>) -> Out {
    if let Ok(t) = s.to_str() {
        return Ok(Value::String(t.to_owned()));
    }
    let py = s.py();
    let bytes = s.call_method1(intern!(py, "encode"), ("utf-8", "surrogatepass"))?;
    let pieces = tagged::wtf8_pieces(bytes.cast::<PyBytes>().map_err(PyErr::from)?.as_bytes())
        .ok_or_else(|| Failure::new("a str that Python could not encode"))?;
    Ok(tagged::str_form(&pieces))
}

/// An int: a JSON number when it fits in 64 bits, else the tagged hexadecimal form.
fn int(i: &Bound<'_, PyInt>) -> Out {
    if let Ok(v) = i.extract::<i64>() {
        return Ok(Value::from(v));
    }
    if let Ok(v) = i.extract::<u64>() {
        return Ok(Value::from(v));
    }
    let py = i.py();
    let hex = py
        .import(intern!(py, "builtins"))?
        .call_method1(intern!(py, "hex"), (i,))?;
    Ok(tagged("int", "value", Value::String(hex.extract()?)))
}

/// `module:qualname`, the name a typed value is stored under.
fn type_path(ty: &Bound<'_, PyType>) -> PyResult<String> {
    Ok(format!("{}:{}", ty.module()?, ty.qualname()?))
}

fn qualified_name(ty: &Bound<'_, PyType>) -> String {
    ty.fully_qualified_name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A message in its checkpoint form, `{MESSAGE_KEY: its JSON}`.
fn message(m: &crate::message::Message) -> Result<Value, Failure> {
    let v = serde_json::to_value(m).map_err(|e| Failure::new(e.to_string()))?;
    let mut map = Map::with_capacity(1);
    map.insert(MESSAGE_KEY.to_owned(), v);
    Ok(Value::Object(map))
}
