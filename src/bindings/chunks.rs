//! `AIMessageChunk` for Python: a streamed piece of an AI message, as langchain-core's
//! (the joining rules live in the core, `crate::message_chunk`). The HTTP models'
//! `stream()` and `stream_mode="messages"` yield them; `chunk + chunk` joins them.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::ai_message::{AiFields, PyAIMessage};
use super::convert::get_item;
use super::messages::{message_pymethods, repr_of, PyMessage};
use crate::message::Message;
use crate::message_chunk::{AiChunk, ToolCallChunk};

/// A piece of an AI message as it streams: its text, reasoning blocks and
/// tool-call fragments (`tool_call_chunks`) so far; its `tool_calls` are what the
/// fragments parse to. `chunk + chunk` joins two pieces (text appended, fragments
/// with one `index` joined, usage added), so the sum of a stream's chunks is its
/// whole message.
#[pyclass(extends = PyAIMessage, name = "AIMessageChunk", module = "ironloop.messages")]
pub struct PyAIMessageChunk {
    chunks: Vec<ToolCallChunk>,
}

/// The object a stream hands Python code for a chunk: a langchain-core
/// `AIMessageChunk` when those are this process's message classes
/// (`lc_messages.rs`), else ironloop's own.
pub fn chunk_to_user_py(py: Python<'_>, c: AiChunk) -> PyResult<Bound<'_, PyAny>> {
    match super::lc_messages::active() {
        Some(lc) => lc.chunk_to_py(py, &c),
        None => chunk_to_py(py, c),
    }
}

/// The Python object of a chunk, of ironloop's own class.
pub fn chunk_to_py(py: Python<'_>, c: AiChunk) -> PyResult<Bound<'_, PyAny>> {
    Ok(Bound::new(py, initializer(c))?.into_any())
}

fn initializer(c: AiChunk) -> PyClassInitializer<PyAIMessageChunk> {
    PyClassInitializer::from(PyMessage {
        inner: Arc::new(c.message),
    })
    .add_subclass(PyAIMessage)
    .add_subclass(PyAIMessageChunk {
        chunks: c.tool_call_chunks,
    })
}

/// A fragment from its dict form `{"name", "args", "id", "index"}` (any may be
/// missing or `None`).
fn fragment_from_py(obj: &Bound<'_, PyAny>) -> PyResult<ToolCallChunk> {
    let d = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(
            "a tool call chunk must be a dict {'name': ..., 'args': '...', 'id': ..., 'index': ...}",
        )
    })?;
    let text = |k: &str| -> PyResult<Option<String>> {
        get_item(d, k)?.map(|v| v.extract::<String>()).transpose()
    };
    Ok(ToolCallChunk {
        name: text("name")?,
        args: text("args")?,
        id: text("id")?,
        index: get_item(d, "index")?
            .map(|v| v.extract::<i64>())
            .transpose()?,
    })
}

impl PyAIMessageChunk {
    /// The chunk this object holds.
    fn value(slf: &PyRef<'_, Self>) -> AiChunk {
        AiChunk {
            message: Message::clone(&slf.as_super().as_super().inner),
            tool_call_chunks: slf.chunks.clone(),
        }
    }
}

message_pymethods! {
    impl PyAIMessageChunk {
        /// Takes `AIMessage`'s keywords and `tool_call_chunks`; with fragments, the tool
        /// calls are what they parse to, so `tool_calls` / `invalid_tool_calls` may not be
        /// given beside them.
        new(common, kwargs, tool_call_chunks, tool_calls, invalid_tool_calls, usage_metadata) {
            let fields =
                AiFields::new(common, kwargs, tool_calls, invalid_tool_calls, usage_metadata);
            let chunks = match tool_call_chunks.filter(|c| !c.is_none()) {
                Some(cs) => cs
                    .try_iter()?
                    .map(|c| fragment_from_py(&c?))
                    .collect::<PyResult<Vec<_>>>()?,
                None => Vec::new(),
            };
            if !chunks.is_empty() && fields.has_calls() {
                return Err(PyValueError::new_err(
                    "AIMessageChunk takes tool_call_chunks or tool_calls / invalid_tool_calls, \
                     not both: its calls are what its chunks parse to",
                ));
            }
            let message = fields.message("AIMessageChunk")?;
            Ok(initializer(AiChunk::new(message, chunks)))
        }

        /// The tool-call fragments, as langchain-core's `ToolCallChunk` dicts
        /// `{"name", "args", "id", "index", "type": "tool_call_chunk"}`.
        #[getter]
        fn tool_call_chunks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
            let list = PyList::empty(py);
            for c in &self.chunks {
                let d = PyDict::new(py);
                d.set_item("name", &c.name)?;
                d.set_item("args", &c.args)?;
                d.set_item("id", &c.id)?;
                d.set_item("index", c.index)?;
                d.set_item("type", "tool_call_chunk")?;
                list.append(d)?;
            }
            Ok(list)
        }

        /// `"AIMessageChunk"`, as langchain-core.
        #[getter]
        fn r#type(&self) -> &'static str {
            "AIMessageChunk"
        }

        /// `self + other` for another chunk or a list of them.
        fn __add__(slf: PyRef<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            let py = slf.py();
            let mut joined = Self::value(&slf);
            let others: Vec<Bound<'_, PyAny>> =
                if other.cast::<PyList>().is_ok() || other.cast::<PyTuple>().is_ok() {
                    other.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![other.clone()]
                };
            for o in &others {
                let Ok(o) = o.cast::<PyAIMessageChunk>() else {
                    return Ok(py.NotImplemented());
                };
                joined = joined
                    .join(&Self::value(&o.borrow()))
                    .map_err(PyErr::from)?;
            }
            Ok(chunk_to_py(py, joined)?.unbind())
        }

        /// A chunk with some fields replaced (see `BaseMessage.model_copy`).
        #[pyo3(signature = (update = None, deep = false))]
        fn model_copy<'py>(
            slf: PyRef<'py, Self>,
            update: Option<&Bound<'py, PyDict>>,
            deep: bool,
        ) -> PyResult<Bound<'py, PyAny>> {
            let _ = deep;
            let message = slf.as_super().as_super().copied(update)?;
            let c = AiChunk {
                message,
                tool_call_chunks: slf.chunks.clone(),
            };
            chunk_to_py(slf.py(), c)
        }

        fn __repr__(slf: PyRef<'_, Self>) -> PyResult<String> {
            let py = slf.py();
            let extra = if slf.chunks.is_empty() {
                String::new()
            } else {
                format!(", tool_call_chunks={}", slf.tool_call_chunks(py)?.repr()?)
            };
            repr_of(
                py,
                &slf.as_super().as_super().inner,
                "AIMessageChunk",
                &extra,
            )
        }

        /// Equal to a chunk with the same fields and fragments; to other messages as an
        /// `AIMessage` is.
        fn __eq__(slf: PyRef<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            let py = slf.py();
            let fragments_too = match other.cast::<PyAIMessageChunk>() {
                Ok(o) => o.borrow().chunks == slf.chunks,
                Err(_) => true,
            };
            Ok(match slf.as_super().as_super().equals(other)? {
                Some(eq) => pyo3::types::PyBool::new(py, eq && fragments_too)
                    .to_owned()
                    .into_any()
                    .unbind(),
                None => py.NotImplemented(),
            })
        }
    }
}
