//! The engine of `ironloop.models.OpenAIChat` / `AnthropicChat`: one core object per
//! model wrapping the Rust provider; requests are built from Python values with the
//! GIL held, then the HTTP runs on tokio with the GIL released.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use serde_json::{Map, Value};

use super::args::Timeout;
use super::awaitable::wait_or_await;
use super::coerce::message_from_py;
use super::convert::value_from_py;
use super::errors::Class;
use super::messages::message_to_py;
use super::model_stream::ChatStreamPy;
use crate::message::Message;
use crate::model::http::OverHttp;
use crate::model::{
    AnthropicChat, ChatModel, ChatRequest, HttpSettings, ModelError, OpenAIChat, ResponseFormat,
    RetryPolicy,
};
use crate::prebuilt::ModelCall;
use crate::tool::{ToolChoice, ToolDefinition};

/// A model's `timeout` when none is given.
const DEFAULT_TIMEOUT: Timeout = Timeout(Duration::from_secs(60));
/// A model's time limit with `timeout=None`.
const NO_TIMEOUT: Duration = Duration::from_secs(600);

/// A tool for the request: an OpenAI `tools` entry, an Anthropic one, or a bare
/// `{"name", "description", "parameters"}` dict.
fn tool_from_value(v: Value) -> PyResult<ToolDefinition> {
    let bad = || {
        PyTypeError::new_err(
            "a tool must be an OpenAI tools entry {'type': 'function', 'function': {...}}, an \
             Anthropic one {'name', 'description', 'input_schema'}, or a Tool object",
        )
    };
    let (f, params_key) = match v.get("function") {
        Some(f) => (f, "parameters"),
        None if v.get("input_schema").is_some() => (&v, "input_schema"),
        None => (&v, "parameters"),
    };
    let name = f.get("name").and_then(Value::as_str).ok_or_else(bad)?;
    crate::tool::name::check(name)
        .map_err(|e| super::errors::Class::InvalidArgument.new_err(e.to_string()))?;
    let description = f.get("description").and_then(Value::as_str).unwrap_or("");
    let parameters = f
        .get(params_key)
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    Ok(ToolDefinition::new(name, description, parameters))
}

fn tools_from_py(tools: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<ToolDefinition>> {
    let Some(tools) = tools.filter(|t| !t.is_none()) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for t in tools.try_iter()? {
        let t = t?;
        let v = if t.cast::<PyDict>().is_ok() {
            value_from_py(&t, "a tool definition")?
        } else if t.hasattr("to_openai")? {
            value_from_py(&t.call_method0("to_openai")?, "a tool definition")?
        } else {
            return Err(PyTypeError::new_err(format!(
                "cannot use a {} as a tool definition",
                t.get_type().name()?
            )));
        };
        out.push(tool_from_value(v)?);
    }
    Ok(out)
}

/// `tool_choice`: "auto" / "required" / "any" / "none" / a tool name, or the OpenAI or
/// Anthropic dict forms.
fn tool_choice_from_py(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ToolChoice>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = o.cast::<PyString>() {
        return Ok(Some(ToolChoice::parse(s.to_str()?)));
    }
    if o.is_instance_of::<pyo3::types::PyBool>() {
        // langchain: True means "some tool must be called".
        return Ok(Some(if o.is_truthy()? {
            ToolChoice::Required
        } else {
            ToolChoice::Auto
        }));
    }
    let v = value_from_py(o, "tool_choice")?;
    let name = v
        .pointer("/function/name")
        .or_else(|| v.get("name"))
        .and_then(Value::as_str);
    match (v.get("type").and_then(Value::as_str), name) {
        (_, Some(n)) => Ok(Some(ToolChoice::Specific(n.to_owned()))),
        (Some(t), None) => Ok(Some(ToolChoice::parse(t))),
        _ => Err(Class::InvalidArgument.new_err(format!(
            "tool_choice must be 'auto', 'required', 'none', a tool name or a provider dict; \
             got {v}"
        ))),
    }
}

/// `response_format`: a JSON Schema dict, or OpenAI's `{"type": "json_schema",
/// "json_schema": {"name", "schema", "strict"}}`.
fn response_format_from_py(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ResponseFormat>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let v = value_from_py(o, "response_format")?;
    if v.get("type").and_then(Value::as_str) == Some("json_schema") {
        if let Some(js) = v.get("json_schema") {
            let schema = js.get("schema").cloned().unwrap_or(Value::Null);
            let mut f = ResponseFormat::new(schema);
            if let Some(n) = js.get("name").and_then(Value::as_str) {
                f.name = n.to_owned();
            }
            f.strict = js.get("strict").and_then(Value::as_bool).unwrap_or(false);
            return Ok(Some(f));
        }
    }
    if !v.is_object() {
        return Err(PyTypeError::new_err(
            "response_format must be a JSON Schema dict (or a type, converted by ironloop.models)",
        ));
    }
    Ok(Some(ResponseFormat::new(v)))
}

/// The messages of a request: a list of messages (or what `_coerce_message` takes),
/// or one string (a human message).
fn messages_from_py(messages: &Bound<'_, PyAny>) -> PyResult<Vec<Arc<Message>>> {
    if let Ok(s) = messages.cast::<PyString>() {
        return Ok(vec![Arc::new(Message::human(s.to_str()?))]);
    }
    messages.try_iter()?.map(|m| message_from_py(&m?)).collect()
}

/// `stop`: one string or a list of them.
fn stop_from_py(stop: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if stop.is_none() {
        Ok(Vec::new())
    } else if stop.cast::<PyString>().is_ok() {
        Ok(vec![stop.extract::<String>()?])
    } else {
        stop.extract::<Vec<String>>()
    }
}

/// The value of the keyword `name`; a failure says which keyword it was.
fn keyword<'py, T: FromPyObjectOwned<'py>>(name: &str, v: &Bound<'py, PyAny>) -> PyResult<T> {
    v.extract::<T>().map_err(|e| {
        let e: PyErr = e.into();
        super::errors::add_note(v.py(), &e, &format!("while processing '{name}'"));
        e
    })
}

/// The request that `invoke`, `ainvoke` and `stream` take — the one place their
/// arguments are read: `messages`, `tools`, `tool_choice`, and in `options` the
/// keywords `parallel_tool_calls`, `response_format`, `temperature`, `max_tokens`,
/// `stop` and `extra` (a dict of top-level request fields). Any other keyword is a
/// top-level request field too (`top_p`, `seed`...), and overrides `extra`.
fn chat_args(
    messages: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    tool_choice: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<ChatRequest> {
    let mut req = ChatRequest {
        messages: messages_from_py(messages)?,
        tools: tools_from_py(tools)?.into(),
        tool_choice: tool_choice_from_py(tool_choice)?,
        ..Default::default()
    };
    let mut fields = Map::new();
    for (key, v) in options.into_iter().flat_map(|o| o.iter()) {
        let key: String = key.extract()?;
        match key.as_str() {
            "parallel_tool_calls" => req.parallel_tool_calls = keyword(&key, &v)?,
            "response_format" => req.response_format = response_format_from_py(Some(&v))?,
            "temperature" => req.temperature = keyword(&key, &v)?,
            "max_tokens" => req.max_tokens = keyword(&key, &v)?,
            "stop" => req.stop = stop_from_py(&v)?,
            "extra" if v.is_none() => {}
            "extra" => match value_from_py(&v, "extra body fields")? {
                Value::Object(m) => req.extra = m,
                _ => return Err(PyTypeError::new_err("extra body fields must be a dict")),
            },
            _ => {
                let field = value_from_py(&v, "a request field")?;
                fields.insert(key, field);
            }
        }
    }
    req.extra.extend(fields);
    Ok(req)
}

/// The core of an HTTP chat model.
#[pyclass(name = "_ChatModelCore", module = "ironloop._ironloop", frozen)]
pub struct ChatModelCore {
    model: Arc<dyn ChatModel>,
    url: String,
}

impl ChatModelCore {
    /// The model's answer to `req`, to be waited for or awaited (see `invoke`).
    fn answer(&self, req: ChatRequest) -> impl Future<Output = Result<Message, ModelError>> {
        let model = self.model.clone();
        async move { model.invoke(req).await }
    }
}

#[pymethods]
impl ChatModelCore {
    #[new]
    #[pyo3(signature = (provider, model, *, base_url = None, api_key = None, temperature = None,
                        max_tokens = None, timeout = DEFAULT_TIMEOUT, max_retries = 2,
                        parallel_tool_calls = None, headers = None, thinking = None,
                        prompt_caching = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        provider: &str,
        model: String,
        base_url: Option<String>,
        api_key: Option<String>,
        temperature: Option<f64>,
        max_tokens: Option<u32>,
        timeout: Option<Timeout>,
        max_retries: u32,
        parallel_tool_calls: Option<bool>,
        headers: Option<Vec<(String, String)>>,
        thinking: Option<&Bound<'_, PyAny>>,
        prompt_caching: Option<bool>,
    ) -> PyResult<Self> {
        let thinking = match thinking.filter(|t| !t.is_none()) {
            None => None,
            Some(t) => match value_from_py(t, "thinking")? {
                v @ Value::Object(_) => Some(v),
                _ => return Err(PyTypeError::new_err(
                    "thinking must be a dict such as {'type': 'enabled', 'budget_tokens': 2048}",
                )),
            },
        };
        let settings = HttpSettings {
            base_url,
            api_key,
            timeout: timeout.map_or(NO_TIMEOUT, |t| t.0),
            retry: RetryPolicy {
                max_retries,
                ..Default::default()
            },
            headers: headers.unwrap_or_default(),
            temperature,
            max_tokens,
            parallel_tool_calls,
        };
        let (model, url): (Arc<dyn ChatModel>, String) = match provider {
            "openai" if thinking.is_some() || prompt_caching.is_some() => {
                return Err(ModelError::Config(
                    "thinking= and prompt_caching= are AnthropicChat settings; an \
                     OpenAI-compatible server's reasoning comes back by itself \
                     (reasoning_content), and OpenAI caches prompts without being asked"
                        .into(),
                )
                .into())
            }
            "openai" => {
                let m = OpenAIChat::new(model, settings)?;
                let url = m.shown_url();
                (Arc::new(m), url)
            }
            "anthropic" => {
                let m = AnthropicChat::new(model, settings)?
                    .with_thinking(thinking)
                    .with_prompt_caching(prompt_caching.unwrap_or(true));
                let url = m.shown_url();
                (Arc::new(m), url)
            }
            other => {
                return Err(ModelError::Config(format!(
                    "unknown provider {other:?}: use 'openai' or 'anthropic'"
                ))
                .into())
            }
        };
        Ok(ChatModelCore { model, url })
    }

    #[getter]
    fn provider(&self) -> &'static str {
        self.model.provider()
    }

    #[getter]
    fn model(&self) -> &str {
        self.model.model_name()
    }

    /// The endpoint requests are sent to.
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// One response, as an `AIMessage`: waited for with the GIL released, or with
    /// `asynchronous=True` as an awaitable (call it from a running event loop). One
    /// entry for both, as the MCP toolset's requests: the keywords are read once.
    #[pyo3(signature = (messages, tools = None, tool_choice = None, *, asynchronous = false,
                        **options))]
    fn invoke<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        tools: Option<&Bound<'py, PyAny>>,
        tool_choice: Option<&Bound<'py, PyAny>>,
        asynchronous: bool,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let answer = self.answer(chat_args(messages, tools, tool_choice, options)?);
        wait_or_await(py, asynchronous, answer, |py, m| {
            message_to_py(py, Arc::new(m))
        })
    }

    /// Starts a streamed response: iterate it (sync) or await its `anext()` (async).
    /// The HTTP request starts at once, on the runtime.
    #[pyo3(signature = (messages, tools = None, tool_choice = None, **options))]
    fn stream(
        &self,
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<ChatStreamPy> {
        let req = chat_args(messages, tools, tool_choice, options)?;
        Ok(ChatStreamPy::start(self.model.clone(), req))
    }

    fn __repr__(&self) -> String {
        format!(
            "_ChatModelCore(provider={:?}, model={:?}, url={:?})",
            self.model.provider(),
            self.model.model_name(),
            self.url
        )
    }
}

/// The tools of an agent shape as the model's requests carry them: converted once per
/// shape, shared by the [`AgentModel`] of every agent of that shape.
#[pyclass(name = "_ToolDefs", module = "ironloop._ironloop", frozen)]
pub struct ToolDefs(Arc<[ToolDefinition]>);

#[pymethods]
impl ToolDefs {
    /// `tools`: what a model call's `tools=` takes (provider dicts, `Tool`s).
    #[new]
    #[pyo3(signature = (tools = None))]
    fn new(tools: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(ToolDefs(tools_from_py(tools)?.into()))
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }
}

/// One agent's model step as the engine runs it without Python (see
/// `ironloop._agent`): the model, the shape's tools, the system message and the name.
#[pyclass(name = "_AgentModel", module = "ironloop._ironloop", frozen)]
pub struct AgentModel(pub(crate) Arc<ModelCall>);

#[pymethods]
impl AgentModel {
    /// The model step of an agent whose model is `model`, or `None` when the engine
    /// may not make the call itself: `model` is not an instance of `base` (ironloop's
    /// HTTP model class), or its class or the instance has its own version of one of
    /// `call_path` (what a model step goes through in Python). Read for every agent,
    /// as a class may be changed at any time; made here, not in Python, because an
    /// agent per request (W11) paid more for these reads in Python than for the rest
    /// of its model step.
    #[staticmethod]
    #[pyo3(signature = (model, base, call_path, tools, system = None, name = None))]
    fn of(
        model: &Bound<'_, PyAny>,
        base: &Bound<'_, PyType>,
        call_path: &Bound<'_, PyTuple>,
        tools: &ToolDefs,
        system: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<Option<Self>> {
        if !model.is_instance(base)? {
            return Ok(None);
        }
        let py = model.py();
        let cls = model.get_type();
        let own = model.getattr(intern!(py, "__dict__")).ok();
        for attr in call_path.iter() {
            let attr = attr.cast_into::<PyString>()?;
            if !cls.is(base) {
                let (mine, base_one) = (cls.getattr(&attr)?, base.getattr(&attr)?);
                if !mine.is(&base_one) && !mine.eq(&base_one)? {
                    return Ok(None);
                }
            }
            if let Some(own) = &own {
                if own.contains(&attr)? {
                    return Ok(None);
                }
            }
        }
        let core = model.getattr(intern!(py, "_core"))?;
        let core = core.cast::<ChatModelCore>()?.get();
        let system = system
            .filter(|s| !s.is_none())
            .map(message_from_py)
            .transpose()?;
        Ok(Some(AgentModel(Arc::new(ModelCall {
            model: core.model.clone(),
            tools: tools.0.clone(),
            system,
            name,
        }))))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChatModelCore>()?;
    m.add_class::<ToolDefs>()?;
    m.add_class::<AgentModel>()?;
    m.add_class::<ChatStreamPy>()?;
    Ok(())
}
