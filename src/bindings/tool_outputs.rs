//! What a ToolNode makes of its tools' returns beyond one message each: a `Command`,
//! and LangGraph's list return (`[Command(...), ToolMessage(...)]` from one call),
//! checked and flattened in call order, then combined as LangGraph's ToolNode
//! combines them (`_validate_tool_command_list`, `_combine_tool_outputs`).

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::coerce::message_from_py;
use super::lc_messages;
use super::messages::message_to_py;
use super::toolnode::command_class;
use crate::error::HostError;
use crate::executor::ToolResult;
use crate::message::Message;
use crate::tool::ToolError;

/// One output of a tools step, in call order: a tool message, or a `Command` a tool
/// returned (alone, or as an item of a list return).
pub enum StepOutput {
    /// `made`: the node made the message (of the tool's result or failure); else the
    /// tool returned it.
    Message {
        msg: Arc<Message>,
        made: bool,
    },
    Command(Py<PyAny>),
}

/// Whether `obj` is a tool message (ironloop's or langchain-core's): its `type`.
fn is_tool_message(obj: &Bound<'_, PyAny>) -> bool {
    obj.getattr(intern!(obj.py(), "type"))
        .and_then(|t| t.extract::<String>())
        .is_ok_and(|t| t == "tool")
}

/// Whether `m` answers the call `id`.
fn answers(m: &Bound<'_, PyAny>, id: &str) -> bool {
    is_tool_message(m)
        && m.getattr(intern!(m.py(), "tool_call_id"))
            .and_then(|t| t.extract::<String>())
            .is_ok_and(|t| t == id)
}

/// The items of a list return: `Some` when `obj` is a non-empty list of `Command`s and
/// tool messages only (anything else is an ordinary result, its text).
pub fn list_return<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
    let Ok(list) = obj.cast::<PyList>() else {
        return Ok(None);
    };
    if list.is_empty() {
        return Ok(None);
    }
    let command = command_class(obj.py())?;
    let mut items = Vec::with_capacity(list.len());
    for item in list.iter() {
        if !(item.is_instance(command)? || is_tool_message(&item)) {
            return Ok(None);
        }
        items.push(item);
    }
    Ok(Some(items))
}

/// How many messages of a list return answer the call `id`: tool messages at the top
/// level or in a `Command`'s `update[key]`.
fn answers_in(items: &[Bound<'_, PyAny>], id: &str, key: &str) -> PyResult<usize> {
    let py = match items.first() {
        Some(i) => i.py(),
        None => return Ok(0),
    };
    let command = command_class(py)?;
    let mut n = 0;
    for item in items {
        if item.is_instance(command)? {
            let update = item.getattr(intern!(py, "update"))?;
            if let Ok(d) = update.cast::<PyDict>() {
                if let Some(msgs) = d.get_item(key)? {
                    if let Ok(l) = msgs.cast::<PyList>() {
                        n += l.iter().filter(|m| answers(m, id)).count();
                    }
                }
            }
        } else if answers(item, id) {
            n += 1;
        }
    }
    Ok(n)
}

/// A list return of the call `r` as step outputs, or the error that it does not
/// answer the call exactly once (a `ValueError`, handled by `handle_tool_errors` as
/// any failure of the tool is).
pub fn flatten_list(
    items: Vec<Bound<'_, PyAny>>,
    r: &ToolResult,
    key: &str,
) -> PyResult<Result<Vec<StepOutput>, ToolError>> {
    let n = answers_in(&items, &r.tool_call_id, key)?;
    if n != 1 {
        let text = format!(
            "tool {:?} returned a list with {n} messages bound to tool_call_id {:?}; a \
             list return needs exactly one ToolMessage answering the call (at the top \
             level or in a Command's update[{key:?}])",
            r.name, r.tool_call_id
        );
        let err = PyValueError::new_err(text.clone());
        return Ok(Err(ToolError::Failed {
            tool: r.name.clone(),
            message: format!("ValueError: {text}"),
            raised: Some(HostError::new(err)),
        }));
    }
    let command = command_class(items[0].py())?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(if item.is_instance(command)? {
            StepOutput::Command(item.unbind())
        } else {
            StepOutput::Message {
                msg: message_from_py(&item)?,
                made: false,
            }
        });
    }
    Ok(Ok(out))
}

/// A step's outputs as the graph applies them: the tool messages, then the commands.
pub fn split(outputs: Vec<StepOutput>) -> (Vec<Arc<Message>>, Vec<Py<PyAny>>) {
    let mut msgs = Vec::with_capacity(outputs.len());
    let mut commands = Vec::new();
    for o in outputs {
        match o {
            StepOutput::Message { msg, .. } => msgs.push(msg),
            StepOutput::Command(c) => commands.push(c),
        }
    }
    (msgs, commands)
}

/// Whether `c` is `Command(graph=PARENT, goto=[Send, ...])`: such commands of a step
/// are merged into one, as LangGraph's ToolNode does.
fn parent_sends<'py>(c: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = c.py();
    let h = super::helpers::helpers(py)?;
    let parent = command_class(py)?.getattr(intern!(py, "PARENT"))?;
    if !c.getattr(intern!(py, "graph"))?.eq(parent)? {
        return Ok(None);
    }
    let goto = c.getattr(intern!(py, "goto"))?;
    let Ok(list) = goto.cast::<PyList>() else {
        return Ok(None);
    };
    for s in list.iter() {
        if !s.is_instance(h.send.bind(py))? {
            return Ok(None);
        }
    }
    Ok(Some(list.clone()))
}

/// A standalone ToolNode's output (LangGraph's `_combine_tool_outputs`): with no
/// `Command`, `{key: [...]}` (a bare list for a list input); else, in call order,
/// each `Command` and each message as `{key: [message]}` (`[message]`), the parent
/// commands that only send merged into one at the end.
pub fn combine<'py>(
    py: Python<'py>,
    outputs: Vec<StepOutput>,
    list_in: bool,
    key: &str,
) -> PyResult<Py<PyAny>> {
    let wrap = |msgs: Vec<Bound<'py, PyAny>>| -> PyResult<Bound<'py, PyAny>> {
        let list = PyList::new(py, msgs)?;
        if list_in {
            return Ok(list.into_any());
        }
        let d = PyDict::new(py);
        d.set_item(key, list)?;
        Ok(d.into_any())
    };
    if !outputs.iter().any(|o| matches!(o, StepOutput::Command(_))) {
        let msgs = outputs
            .iter()
            .filter_map(|o| match o {
                StepOutput::Message { msg, made } => Some(output_message(py, msg, *made)),
                StepOutput::Command(_) => None,
            })
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(wrap(msgs)?.unbind());
    }
    let all = PyList::empty(py);
    let mut sends: Option<Bound<'py, PyList>> = None;
    for o in outputs {
        match o {
            StepOutput::Message { msg, made } => {
                all.append(wrap(vec![output_message(py, &msg, made)?])?)?
            }
            StepOutput::Command(c) => {
                let c = c.into_bound(py);
                match parent_sends(&c)? {
                    Some(goto) => match &sends {
                        Some(s) => goto.iter().try_for_each(|g| s.append(g))?,
                        None => sends = Some(PyList::new(py, goto.iter())?),
                    },
                    None => all.append(c)?,
                }
            }
        }
    }
    if let Some(goto) = sends {
        let command = command_class(py)?;
        let kw = PyDict::new(py);
        kw.set_item("graph", command.getattr(intern!(py, "PARENT"))?)?;
        kw.set_item("goto", goto)?;
        all.append(command.call((), Some(&kw))?)?;
    }
    Ok(all.into_any().unbind())
}

/// A message of a standalone ToolNode's output. As LangGraph's, a langchain-core
/// message the node made has no id until a graph's `add_messages` gives it one;
/// ironloop's own messages always carry theirs.
pub(crate) fn output_message<'py>(
    py: Python<'py>,
    msg: &Arc<Message>,
    made: bool,
) -> PyResult<Bound<'py, PyAny>> {
    // Made now (never handed out before): remembered once its id is taken away, as
    // the interceptors of a tools node usually hand it straight back (`hand_out`).
    let fresh = made && msg.host.get().is_none();
    let obj = message_to_py(py, msg.clone())?;
    if made && lc_messages::active().is_some() {
        if lc_messages::is_exact(&obj) {
            // What pydantic's `__setattr__` does for a field of langchain-core's own
            // classes ("id" is in the fields set already), without its Python frames.
            lc_messages::instance_dict(&obj)?.set_item(intern!(py, "id"), py.None())?;
        } else {
            obj.setattr(intern!(py, "id"), py.None())?;
        }
        if fresh {
            lc_messages::remember(&obj, msg.clone())?;
        }
    }
    Ok(obj)
}
