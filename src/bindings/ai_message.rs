//! `AIMessage` for Python, and the keywords its constructor shares with
//! `AIMessageChunk`'s (`chunks.rs`): both read them with one helper, [`AiFields`].

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::{
    invalid_tool_calls_from_py, tool_call_to_py, tool_calls_from_py, usage_from_py,
};
use super::messages::{build, check_kwargs, message_pymethods, Common, PyMessage};
use crate::message::{Message, MessageKind};

/// The keywords `AIMessage(...)` and `AIMessageChunk(...)` both take, as their
/// constructors received them (`kwargs`: the ones no parameter named).
pub(super) struct AiFields<'a, 'py> {
    pub common: Common<'a, 'py>,
    pub tool_calls: Option<&'a Bound<'py, PyAny>>,
    pub invalid_tool_calls: Option<&'a Bound<'py, PyAny>>,
    pub usage_metadata: Option<&'a Bound<'py, PyAny>>,
    pub kwargs: Option<&'a Bound<'py, PyDict>>,
}

impl<'a, 'py> AiFields<'a, 'py> {
    /// The fields in the order the constructors' macro ([`message_pymethods`]) hands
    /// them over.
    pub fn new(
        common: Common<'a, 'py>,
        kwargs: Option<&'a Bound<'py, PyDict>>,
        tool_calls: Option<&'a Bound<'py, PyAny>>,
        invalid_tool_calls: Option<&'a Bound<'py, PyAny>>,
        usage_metadata: Option<&'a Bound<'py, PyAny>>,
    ) -> Self {
        AiFields {
            common,
            tool_calls,
            invalid_tool_calls,
            usage_metadata,
            kwargs,
        }
    }

    /// Whether `tool_calls` or `invalid_tool_calls` were given (not `None`).
    pub fn has_calls(&self) -> bool {
        let given = |o: Option<&Bound<'_, PyAny>>| o.is_some_and(|o| !o.is_none());
        given(self.tool_calls) || given(self.invalid_tool_calls)
    }

    /// The AI message these make; `cls` names the constructor in errors (an unknown
    /// keyword, a field of the wrong type).
    pub fn message(self, cls: &str) -> PyResult<Message> {
        check_kwargs(cls, self.kwargs)?;
        let kind = MessageKind::Ai {
            tool_calls: tool_calls_from_py(self.tool_calls)?,
            invalid_tool_calls: invalid_tool_calls_from_py(self.invalid_tool_calls)?,
            usage: usage_from_py(self.usage_metadata)?,
        };
        build(kind, self.common)
    }
}

/// A message from the model, possibly with tool calls.
#[pyclass(extends = PyMessage, subclass, name = "AIMessage", module = "ironloop.messages")]
pub struct PyAIMessage;

message_pymethods! {
    impl PyAIMessage {
        new(common, kwargs, tool_calls, invalid_tool_calls, usage_metadata) {
            let fields =
                AiFields::new(common, kwargs, tool_calls, invalid_tool_calls, usage_metadata);
            let message = fields.message("AIMessage")?;
            Ok(PyClassInitializer::from(PyMessage {
                inner: Arc::new(message),
            })
            .add_subclass(PyAIMessage))
        }

        /// The tool calls, as `ToolCall` dicts `{"name", "args", "id", "type"}`.
        #[getter]
        fn tool_calls(slf: PyRef<'_, Self>) -> PyResult<Bound<'_, PyList>> {
            let py = slf.py();
            let list = PyList::empty(py);
            for c in slf.as_super().inner.tool_calls() {
                list.append(tool_call_to_py(py, c)?)?;
            }
            Ok(list)
        }

        #[getter]
        fn invalid_tool_calls<'py>(
            slf: PyRef<'py, Self>,
            py: Python<'py>,
        ) -> PyResult<Bound<'py, PyList>> {
            let list = PyList::empty(py);
            if let MessageKind::Ai {
                invalid_tool_calls, ..
            } = &slf.as_super().inner.kind
            {
                for c in invalid_tool_calls {
                    let d = PyDict::new(py);
                    d.set_item("id", &c.id)?;
                    d.set_item("name", &c.name)?;
                    d.set_item("args", &c.args)?;
                    d.set_item("error", &c.error)?;
                    d.set_item("type", "invalid_tool_call")?;
                    list.append(d)?;
                }
            }
            Ok(list)
        }

        #[getter]
        fn usage_metadata<'py>(
            slf: PyRef<'py, Self>,
            py: Python<'py>,
        ) -> PyResult<Option<Bound<'py, PyDict>>> {
            if let MessageKind::Ai { usage: Some(u), .. } = &slf.as_super().inner.kind {
                let d = pythonize::pythonize(py, &u.to_langchain())?.cast_into::<PyDict>()?;
                return Ok(Some(d));
            }
            Ok(None)
        }
    }
}
