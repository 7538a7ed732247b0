//! A call whose arguments do not fit its tool, as LangChain reports one: the
//! `ToolInvocationError` text the model reads (`Error invoking tool '<name>' with
//! kwargs <the call's arguments> with error: ...`) and the exception a handler or a
//! `wrap_tool_call` hook is given (`ironloop.errors.ToolInvalidArgsError`, with
//! LangChain's `tool_name`, `tool_kwargs`, `filtered_errors` and `message`).
//!
//! The arguments shown are the call's own, as the model wrote them: injected ones
//! (state, store, runtime) are not in the call, nor in the schema it is checked
//! against, so nothing the model does not control is shown to it.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::Value;

use super::convert::value_to_py;
use super::errors::Class;
use crate::registry::ToolRegistry;
use crate::tool::{ArgError, ToolCall};

/// LangChain's `TOOL_INVOCATION_ERROR_TEMPLATE`, filled in.
fn invocation_text(tool: &str, kwargs: &str, errors: &str) -> String {
    format!(
        "Error invoking tool '{tool}' with kwargs {kwargs} with error:\n {errors}\n \
         Please fix the error and try again."
    )
}

/// The call's arguments as the tool was to get them: a JSON text parsed (providers
/// may stream arguments as text), anything else as it is.
fn arguments(call: &ToolCall) -> Value {
    match &call.arguments {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| call.arguments.clone()),
        Value::Null => Value::Object(Default::default()),
        v => v.clone(),
    }
}

/// An [`ArgError`] as pydantic's `ErrorDetails` dict (`type`, `loc`, `msg`, `input`).
fn error_details<'py>(py: Python<'py>, e: &ArgError) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("type", e.kind.as_str())?;
    let loc = e
        .loc
        .iter()
        .map(|p| value_to_py(py, p))
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("loc", PyTuple::new(py, loc)?)?;
    d.set_item("msg", e.message.as_str())?;
    d.set_item("input", value_to_py(py, &e.input)?)?;
    Ok(d)
}

/// The `ToolInvalidArgsError` for `call`, whose arguments its tool refused with
/// `reason`: its text is what the model reads. The schema's errors are looked up
/// again in `registry` (only on this path: a valid call never builds them); an error
/// the tool itself raised about its arguments (a path leaving the workspace) has none:
/// `reason` is then its one error, about the arguments as a whole.
pub fn invocation_error(
    py: Python<'_>,
    registry: &ToolRegistry,
    call: &ToolCall,
    reason: &str,
) -> PyResult<PyErr> {
    let args = arguments(call);
    let mut errors = registry.arg_errors(&call.name, &args);
    if errors.is_empty() {
        errors.push(ArgError {
            loc: Vec::new(),
            message: reason.to_owned(),
            kind: "invalid_args".to_owned(),
            input: args.clone(),
        });
    }
    let detail = errors
        .iter()
        .map(ArgError::line)
        .collect::<Vec<_>>()
        .join("\n");
    let kwargs = value_to_py(py, &args)?;
    let text = invocation_text(&call.name, &kwargs.repr()?.to_string(), &detail);
    let details = errors
        .iter()
        .map(|e| error_details(py, e))
        .collect::<PyResult<Vec<_>>>()?;
    let err = Class::ToolInvalidArgs.err(py, text);
    let v = err.value(py);
    v.setattr("tool_name", call.name.as_str())?;
    v.setattr("tool_kwargs", kwargs)?;
    v.setattr("filtered_errors", PyList::new(py, details)?)?;
    Ok(err)
}

/// The call of `results`' `index`-th result among `calls`, when it is that call
/// (results come back in call order; the id is checked all the same).
pub fn call_of<'a>(calls: &'a [ToolCall], index: usize, id: &str) -> Option<&'a ToolCall> {
    calls
        .get(index)
        .filter(|c| c.id == id)
        .or_else(|| calls.iter().find(|c| c.id == id))
}
