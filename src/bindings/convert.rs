//! Conversions between Python objects and the core's values: JSON values, content,
//! tool calls, usage. Whole messages are converted in `messages.rs`, next to their
//! classes, with these pieces (so `messages` uses `convert`, never the reverse).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyMapping, PySequence, PyString,
    PyTuple, PyTzInfo,
};

use super::helpers::helpers;
use serde_json::Value;

use crate::message::{Content, ContentPart, InvalidToolCall, ToolStatus, Usage};
use crate::tool::ToolCall;

/// A JSON value as a Python object (dict, list, str, int, float, bool, None).
pub fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// How deep a Python value may nest to become JSON: serde_json's limit for JSON
/// text, so a value given as a dict and the same value given as JSON text stop at the
/// same depth. A deeper value, or one that contains itself, is refused with an error
/// instead of overflowing the stack.
pub const MAX_JSON_DEPTH: usize = 128;

/// A Python object as a JSON value; a `TypeError` says which type could not be
/// converted and where it was meant to go.
pub fn value_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    json_from_py(obj).map_err(|e| {
        let ty = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!(
            "{what} must be JSON-serialisable (dict, list, str, int, float, bool, None); \
             got a value of type {ty}: {e}"
        ))
    })
}

/// A Python object as a JSON value, or why it is not one: dicts with str keys, lists,
/// tuples and other sequences, str, int, float (NaN and infinities become null, as
/// serde_json makes them), bool and None, nested at most [`MAX_JSON_DEPTH`] deep.
pub fn json_from_py(obj: &Bound<'_, PyAny>) -> Result<Value, String> {
    json_at(obj, 0)
}

/// `obj` inside `depth` containers.
fn json_at(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, String> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(
            s.to_str().map_err(|e| e.to_string())?.to_owned(),
        ));
    }
    // `bool` before `int`: a Python bool is an int.
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        if let Ok(v) = i.extract::<i64>() {
            return Ok(Value::from(v));
        }
        if let Ok(v) = i.extract::<u64>() {
            return Ok(Value::from(v));
        }
        return Err(format!("the integer {i} does not fit in 64 bits"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    // Past here, `obj` is a container: one level more.
    if depth >= MAX_JSON_DEPTH {
        return Err(format!(
            "it nests deeper than {MAX_JSON_DEPTH} levels (or contains itself)"
        ));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                format!(
                    "a dict key is a {}, not a str",
                    k.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                )
            })?;
            map.insert(
                key.to_str().map_err(|e| e.to_string())?.to_owned(),
                json_at(&v, depth + 1)?,
            );
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l.iter().map(|v| json_at(&v, depth + 1)).collect();
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().map(|v| json_at(&v, depth + 1)).collect();
    }
    if let Ok(m) = obj.cast::<PyMapping>() {
        let d = PyDict::new(obj.py());
        for item in m.items().map_err(|e| e.to_string())?.iter() {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                item.extract().map_err(|e: PyErr| e.to_string())?;
            d.set_item(k, v).map_err(|e| e.to_string())?;
        }
        return json_at(d.as_any(), depth);
    }
    if obj.cast::<PyBytes>().is_err() {
        if let Ok(seq) = obj.cast::<PySequence>() {
            let items = seq.to_list().map_err(|e| e.to_string())?;
            return json_at(items.as_any(), depth);
        }
    }
    Err(format!(
        "a {} is not JSON",
        obj.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    ))
}

pub fn content_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Content> {
    if obj.is_none() {
        return Ok(Content::default());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Content::Text(s.to_str()?.to_owned()));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let mut parts = Vec::with_capacity(list.len());
        for item in list.iter() {
            if let Ok(s) = item.cast::<PyString>() {
                // A bare string part stays a string (as in langchain-core).
                parts.push(ContentPart::Json {
                    value: Value::String(s.to_str()?.to_owned()),
                });
                continue;
            }
            let v = value_from_py(&item, "a content part")?;
            parts.push(ContentPart::from_value(v));
        }
        return Ok(Content::Parts(parts));
    }
    let ty = obj.get_type().name()?.to_string();
    Err(PyTypeError::new_err(format!(
        "message content must be a str or a list of content parts (str or dict); got {ty}"
    )))
}

pub fn content_to_py<'py>(py: Python<'py>, c: &Content) -> PyResult<Bound<'py, PyAny>> {
    match c {
        Content::Text(s) => Ok(PyString::new(py, s).into_any()),
        Content::Parts(parts) => {
            let list = PyList::empty(py);
            for p in parts {
                list.append(value_to_py(py, &p.to_value())?)?;
            }
            Ok(list.into_any())
        }
    }
}

/// `ts` (seconds since the epoch) as an ISO 8601 string in UTC, as `datetime` writes it
/// (`StateSnapshot.created_at`, the debug stream's timestamps).
pub fn iso_utc(py: Python<'_>, ts: f64) -> PyResult<Bound<'_, PyAny>> {
    let utc = PyTzInfo::utc(py)?;
    PyDateTime::from_timestamp(py, ts, Some(&utc))?.call_method0(intern!(py, "isoformat"))
}

/// A tool call as Python sees it: an `ironloop.messages.ToolCall`, i.e. a dict
/// `{"name", "args", "id", "type": "tool_call"}` with attribute access too.
pub fn tool_call_to_py<'py>(py: Python<'py>, c: &ToolCall) -> PyResult<Bound<'py, PyAny>> {
    let cls = helpers(py)?.tool_call.bind(py);
    let kw = PyDict::new(py);
    kw.set_item(intern!(py, "name"), &c.name)?;
    kw.set_item(intern!(py, "args"), value_to_py(py, &c.arguments)?)?;
    kw.set_item(intern!(py, "id"), &c.id)?;
    cls.call((), Some(&kw))
}

/// `d[key]`, with a missing key and `None` both `None`. On paths taken per message or
/// per call, pass an interned key (`intern!(py, "name")`): a `&str` key is made into a
/// new Python string, and hashed, at every look-up.
pub fn get_item<'py, K>(d: &Bound<'py, PyDict>, key: K) -> PyResult<Option<Bound<'py, PyAny>>>
where
    K: IntoPyObject<'py>,
{
    Ok(d.get_item(key)?.filter(|v| !v.is_none()))
}

/// A tool call from a langchain-shaped dict (`name`, `args`, `id`) or an OpenAI-shaped
/// one (`{"id", "function": {"name", "arguments"}}`).
pub fn tool_call_from_py(obj: &Bound<'_, PyAny>) -> PyResult<ToolCall> {
    let d = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(
            "a tool call must be a dict {'name': ..., 'args': {...}, 'id': ...} or a ToolCall",
        )
    })?;
    let py = d.py();
    let id = match get_item(d, intern!(py, "id"))? {
        Some(v) => v.extract::<String>()?,
        None => format!("call_{}", crate::message::new_id().replace('-', "")),
    };
    if let Some(f) = get_item(d, intern!(py, "function"))? {
        let f = f.cast::<PyDict>()?;
        let name: String = get_item(f, intern!(py, "name"))?
            .ok_or_else(|| PyValueError::new_err("tool call function has no 'name'"))?
            .extract()?;
        let arguments = match get_item(f, intern!(py, "arguments"))? {
            // OpenAI sends arguments as JSON text: parse it so `args` is a dict. Text that
            // is not JSON stays as it is; the executor reports it to the model.
            Some(a) => match value_from_py(&a, "tool call arguments")? {
                Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                v => v,
            },
            None => Value::Object(Default::default()),
        };
        return Ok(ToolCall {
            id,
            name,
            arguments,
        });
    }
    let name: String = get_item(d, intern!(py, "name"))?
        .ok_or_else(|| PyValueError::new_err(format!("tool call {id} has no 'name'")))?
        .extract()?;
    // `arguments` is the key of a message's `model_dump()` (the core's own form).
    let args = match get_item(d, intern!(py, "args"))? {
        Some(a) => Some(a),
        None => get_item(d, intern!(py, "arguments"))?,
    };
    let arguments = match args {
        Some(a) => value_from_py(&a, "tool call args")?,
        None => Value::Object(Default::default()),
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

pub fn tool_calls_from_py(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<ToolCall>> {
    match obj {
        None => Ok(Vec::new()),
        Some(o) if o.is_none() => Ok(Vec::new()),
        // A list (what messages hold) by index: a generic iterator would ask the
        // list's iterator for a length hint through a method call first.
        Some(o) => match o.cast::<PyList>() {
            Ok(l) => l.iter().map(|c| tool_call_from_py(&c)).collect(),
            Err(_) => o.try_iter()?.map(|c| tool_call_from_py(&c?)).collect(),
        },
    }
}

pub fn invalid_tool_calls_from_py(
    obj: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<InvalidToolCall>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(Vec::new());
    };
    let v = value_from_py(o, "invalid_tool_calls")?;
    let items = v.as_array().cloned().unwrap_or_default();
    Ok(items
        .into_iter()
        .map(|i| {
            let s = |k: &str| i.get(k).and_then(Value::as_str).map(str::to_owned);
            InvalidToolCall {
                id: s("id"),
                name: s("name"),
                args: s("args"),
                error: s("error"),
            }
        })
        .collect())
}

pub fn usage_from_py(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Usage>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let v = value_from_py(o, "usage_metadata")?;
    Ok(Some(Usage::from_langchain(&v)))
}

/// `additional_kwargs` / `response_metadata` (named by `what`): a dict of JSON values,
/// or `None` for an empty one.
pub fn metadata_from_py(
    obj: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<serde_json::Map<String, Value>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(serde_json::Map::new());
    };
    if o.cast::<PyMapping>().is_err() {
        let ty = o.get_type().name()?.to_string();
        return Err(PyTypeError::new_err(format!(
            "{what} must be a dict, got a {ty}"
        )));
    }
    match value_from_py(o, what)? {
        Value::Object(m) => Ok(m),
        _ => Err(PyTypeError::new_err(format!("{what} must be a dict"))),
    }
}

/// A metadata map as a Python dict (a new dict: changing it changes no message).
pub fn metadata_to_py<'py>(
    py: Python<'py>,
    m: &serde_json::Map<String, Value>,
) -> PyResult<Bound<'py, PyAny>> {
    if m.is_empty() {
        return Ok(PyDict::new(py).into_any());
    }
    pythonize::pythonize(py, m).map_err(|e| PyValueError::new_err(e.to_string()))
}

pub fn status_from_str(s: &str) -> PyResult<ToolStatus> {
    match s {
        "success" => Ok(ToolStatus::Success),
        "error" => Ok(ToolStatus::Error),
        other => Err(PyValueError::new_err(format!(
            "ToolMessage status must be 'success' or 'error', got {other:?}"
        ))),
    }
}

/// The ways `value` fails `schema` (empty when it conforms), with the core's validator.
#[pyfunction]
pub fn _json_schema_errors(
    schema: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Vec<String>> {
    let schema = value_from_py(schema, "a JSON Schema")?;
    let value = value_from_py(value, "the value to validate")?;
    let v = jsonschema::validator_for(&schema)
        .map_err(|e| PyValueError::new_err(format!("invalid JSON Schema: {e}")))?;
    Ok(v.iter_errors(&value)
        .map(|e| crate::registry::schema_error_text(&e))
        .collect())
}
