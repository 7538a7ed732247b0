//! A provider's streamed response for Python (`_ChatStream`, what
//! `_ChatModelCore.stream` returns): a task on the runtime reads the provider's
//! stream into a channel, and the Python side takes `AIMessageChunk`s from it.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;

use super::chunks::chunk_to_user_py as chunk_to_py_object;
use super::exiting::attach;
use super::messages::message_to_py;
use super::runtime::{block_on_uncancelled, finished_future, runtime};
use crate::message::{Content, ContentPart, Message, MessageKind};
use crate::message_chunk::{AiChunk, ToolCallChunk};
use crate::model::{ChatChunk, ChatModel, ChatRequest, ModelError};

/// What the pump hands to the Python side.
enum Pumped {
    Text {
        id: String,
        text: String,
    },
    /// A reasoning block's piece: a chunk whose content is that block.
    Reasoning {
        id: String,
        block: Value,
    },
    /// A tool call's fragment: a chunk with that one `tool_call_chunks` entry.
    ToolCall {
        id: String,
        fragment: ToolCallChunk,
    },
    /// The whole message, the part of its text not streamed as `Text` before, and
    /// whether its tool calls were streamed as fragments already.
    Done {
        message: Box<Message>,
        tail: String,
        calls_streamed: bool,
    },
    Error(ModelError),
}

/// Reads the provider's stream into the channel; stops when the Python side drops
/// the receiver.
async fn pump(model: Arc<dyn ChatModel>, req: ChatRequest, tx: mpsc::Sender<Pumped>) {
    let mut stream = tokio::select! {
        s = model.stream(req) => match s {
            Ok(s) => s,
            Err(e) => {
                let _ = tx.send(Pumped::Error(e)).await;
                return;
            }
        },
        _ = tx.closed() => return,
    };
    let id = stream.id().to_owned();
    let mut streamed = String::new();
    let mut calls_streamed = false;
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            _ = tx.closed() => return,
        };
        let out = match item {
            None => return,
            Some(Err(e)) => Pumped::Error(e),
            Some(Ok(ChatChunk::Text(text))) => {
                streamed.push_str(&text);
                Pumped::Text {
                    id: id.clone(),
                    text,
                }
            }
            Some(Ok(ChatChunk::Reasoning(block))) => Pumped::Reasoning {
                id: id.clone(),
                block,
            },
            Some(Ok(ChatChunk::ToolCallDelta {
                index,
                id: call_id,
                name,
                arguments,
            })) => {
                calls_streamed = true;
                Pumped::ToolCall {
                    id: id.clone(),
                    fragment: ToolCallChunk {
                        name,
                        args: Some(arguments),
                        id: call_id,
                        index: i64::try_from(index).ok(),
                    },
                }
            }
            Some(Ok(ChatChunk::Done(message))) => {
                let full = message.content.text();
                let tail = full
                    .strip_prefix(streamed.as_str())
                    .unwrap_or("")
                    .to_owned();
                Pumped::Done {
                    message,
                    tail,
                    calls_streamed,
                }
            }
        };
        let end = matches!(out, Pumped::Done { .. } | Pumped::Error(_));
        if tx.send(out).await.is_err() || end {
            return;
        }
    }
}

/// An AI message chunk with the stream's `id`.
fn piece(id: String, content: Content, fragments: Vec<ToolCallChunk>) -> AiChunk {
    let mut m = Message::ai(content, Vec::new());
    m.id = id;
    AiChunk::new(m, fragments)
}

/// The chunk of a pumped item, or `None` at the end.
fn chunk_to_py(
    py: Python<'_>,
    item: Option<Pumped>,
    last: &Mutex<Option<Arc<Message>>>,
) -> PyResult<Option<Py<PyAny>>> {
    let chunk = match item {
        None => return Ok(None),
        Some(Pumped::Error(e)) => return Err(e.into()),
        Some(Pumped::Text { id, text }) => piece(id, Content::Text(text), Vec::new()),
        Some(Pumped::Reasoning { id, block }) => piece(
            id,
            Content::Parts(vec![ContentPart::Json { value: block }]),
            Vec::new(),
        ),
        Some(Pumped::ToolCall { id, fragment }) => piece(id, Content::default(), vec![fragment]),
        Some(Pumped::Done {
            message,
            tail,
            calls_streamed,
        }) => {
            // The last chunk: the text not streamed yet and the usage; the tool calls
            // only if no fragment carried them (then as whole-call fragments), so
            // that the chunks add up to the message.
            let mut chunk = Message::clone(&message);
            chunk.content = Content::Text(tail);
            debug_assert!(matches!(chunk.kind, MessageKind::Ai { .. }));
            if calls_streamed {
                if let MessageKind::Ai {
                    tool_calls,
                    invalid_tool_calls,
                    ..
                } = &mut chunk.kind
                {
                    tool_calls.clear();
                    invalid_tool_calls.clear();
                }
            }
            *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(*message));
            AiChunk::new(chunk, Vec::new())
        }
    };
    Ok(Some(chunk_to_py_object(py, chunk)?.unbind()))
}

/// Streams `req` to `model` from this task, handing each chunk, as the
/// `AIMessageChunk` a `_ChatStream` yields, to `each` (the chunks queued by then
/// under one hold of the GIL); then the provider's whole message. A model error, or
/// an error of `each`, ends the stream (and its request).
pub(crate) async fn stream_chunks(
    model: Arc<dyn ChatModel>,
    req: ChatRequest,
    mut each: impl FnMut(Bound<'_, PyAny>) -> PyResult<()> + Send,
) -> PyResult<Arc<Message>> {
    let (tx, mut rx) = mpsc::channel::<Pumped>(64);
    // Owns the receiver: when reading stops early, the pump sees it closed and stops.
    let reading = async move {
        let last = Mutex::new(None);
        while let Some(first) = rx.recv().await {
            let ended = attach(|py| -> PyResult<bool> {
                let mut item = Some(first);
                loop {
                    match chunk_to_py(py, item.take(), &last)? {
                        Some(c) => each(c.into_bound(py))?,
                        None => return Ok(true),
                    }
                    match rx.try_recv() {
                        Ok(next) => item = Some(next),
                        Err(mpsc::error::TryRecvError::Empty) => return Ok(false),
                        Err(mpsc::error::TryRecvError::Disconnected) => return Ok(true),
                    }
                }
            })?;
            if ended {
                break;
            }
        }
        Ok::<_, PyErr>(last.into_inner().unwrap_or_else(|p| p.into_inner()))
    };
    let ((), last) = tokio::join!(pump(model, req, tx), reading);
    last?
        .ok_or_else(|| ModelError::Config("the stream ended without a final message".into()).into())
}

/// A streamed response: `AIMessageChunk`s sharing one id, whose sum is the whole
/// message: text and reasoning pieces, tool-call fragments as they arrive, and a
/// last chunk with the usage. `final_message` is the provider's whole message once
/// it ended.
#[pyclass(name = "_ChatStream", module = "ironloop._ironloop", frozen)]
pub struct ChatStreamPy {
    rx: Arc<tokio::sync::Mutex<mpsc::Receiver<Pumped>>>,
    last: Arc<Mutex<Option<Arc<Message>>>>,
}

impl ChatStreamPy {
    /// Sends the request on the runtime at once; the stream reads its chunks.
    pub fn start(model: Arc<dyn ChatModel>, req: ChatRequest) -> Self {
        let (tx, rx) = mpsc::channel::<Pumped>(64);
        runtime().spawn(pump(model, req, tx));
        ChatStreamPy {
            rx: Arc::new(tokio::sync::Mutex::new(rx)),
            last: Arc::new(Mutex::new(None)),
        }
    }
}

#[pymethods]
impl ChatStreamPy {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let rx = self.rx.clone();
        let item = block_on_uncancelled(py, async move { rx.lock().await.recv().await })?;
        match chunk_to_py(py, item, &self.last)? {
            Some(c) => Ok(c),
            None => Err(PyStopIteration::new_err(())),
        }
    }

    /// An awaitable of the next chunk, `None` at the end.
    fn anext<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // A chunk queued already (they arrive in bursts) comes back in a finished
        // future; only an empty queue waits on the runtime.
        if let Ok(mut queued) = self.rx.try_lock() {
            let item = match queued.try_recv() {
                Ok(item) => Some(Some(item)),
                Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
                Err(mpsc::error::TryRecvError::Empty) => None,
            };
            drop(queued);
            if let Some(item) = item {
                return finished_future(py, chunk_to_py(py, item, &self.last)?);
            }
        }
        let rx = self.rx.clone();
        let last = self.last.clone();
        crate::bindings::awaitable::future_into_py(py, async move {
            let item = rx.lock().await.recv().await;
            attach(|py| chunk_to_py(py, item, &last))
        })
    }

    /// The whole message (text, tool calls, usage) once the stream has ended.
    #[getter]
    fn final_message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let m = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        m.map(|m| message_to_py(py, m)).transpose()
    }

    /// Reads the rest of the stream and returns the whole message.
    fn collect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        loop {
            let rx = self.rx.clone();
            let item = block_on_uncancelled(py, async move { rx.lock().await.recv().await })?;
            if chunk_to_py(py, item, &self.last)?.is_none() {
                break;
            }
        }
        match self.final_message(py)? {
            Some(m) => Ok(m),
            None => {
                Err(ModelError::Config("the stream ended without a final message".into()).into())
            }
        }
    }
}
