//! `ironloop.mcp`: the tools of an MCP server as `NativeTool`s. The session, the
//! calls and the server's process live in Rust ([`crate::sources::mcp`]); a call
//! made by `ToolNode` / `create_react_agent` never enters Python.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use super::args::{size_limit, Timeout};
use super::awaitable::wait_or_await;
use super::native_tool::NativeTool;
use super::runtime::block_on_uncancelled;
use crate::sources::mcp::{HttpServer, McpError, McpToolset, McpToolsetOptions, StdioServer};
use serde_json::{Map, Value};

use super::convert::value_from_py;

/// An open session with one MCP server and its tools (see `ironloop.mcp.McpToolset`).
#[pyclass(name = "_McpToolset", module = "ironloop._ironloop", frozen)]
pub struct PyMcpToolset {
    set: Arc<McpToolset>,
    /// The same objects on every access, until the server changes its tools.
    tools: Mutex<Vec<Py<NativeTool>>>,
}

fn options(
    prefix: Option<String>,
    timeout: Option<Timeout>,
    max_message_bytes: &Bound<'_, PyAny>,
    connect_timeout: Option<Timeout>,
) -> PyResult<McpToolsetOptions> {
    let max_message_bytes = size_limit(max_message_bytes, "max_message_bytes")?;
    Ok(McpToolsetOptions {
        prefix,
        timeout: timeout.map(|t| t.0),
        max_message_bytes: Some(max_message_bytes),
        connect_timeout: connect_timeout.map(|t| t.0),
    })
}

enum Spec {
    Stdio(StdioServer),
    Http(HttpServer),
}

async fn open(spec: Spec, opts: McpToolsetOptions) -> Result<McpToolset, McpError> {
    match spec {
        Spec::Stdio(s) => McpToolset::stdio(s, opts).await,
        Spec::Http(s) => McpToolset::http(s, opts).await,
    }
}

impl PyMcpToolset {
    fn new(py: Python<'_>, set: McpToolset) -> PyResult<Self> {
        let tools = Self::wrap(py, &set)?;
        Ok(PyMcpToolset {
            set: Arc::new(set),
            tools: Mutex::new(tools),
        })
    }

    fn wrap(py: Python<'_>, set: &McpToolset) -> PyResult<Vec<Py<NativeTool>>> {
        set.tools()
            .into_iter()
            .map(|t| Py::new(py, NativeTool::new(t)?))
            .collect()
    }

    /// Runs `f(session)` to completion with the GIL released (sync), or as an
    /// awaitable (async), and gives its JSON result to Python.
    fn request<'py, F, Fut>(
        &self,
        py: Python<'py>,
        asynchronous: bool,
        f: F,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(Arc<McpToolset>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Value, McpError>> + Send + 'static,
    {
        wait_or_await(py, asynchronous, f(self.set.clone()), |py, v| {
            Ok(pythonize::pythonize(py, &v)?)
        })
    }

    /// Opens the session with the GIL released (sync), or as an awaitable (async).
    fn connect(
        py: Python<'_>,
        spec: Spec,
        opts: McpToolsetOptions,
        asynchronous: bool,
    ) -> PyResult<Bound<'_, PyAny>> {
        wait_or_await(py, asynchronous, open(spec, opts), |py, set| {
            Ok(Bound::new(py, Self::new(py, set)?)?.into_any())
        })
    }
}

fn stdio_spec(
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
) -> Spec {
    Spec::Stdio(StdioServer {
        command,
        args,
        env,
        cwd,
    })
}

#[pymethods]
impl PyMcpToolset {
    /// Starts `command args...` and opens a session over its stdio (with
    /// `asynchronous`, as an awaitable).
    #[staticmethod]
    #[pyo3(signature = (command, args, env, cwd, prefix, timeout, max_message_bytes,
        connect_timeout = None, *, asynchronous = false))]
    // The Python signature's parameters, one by one.
    #[allow(clippy::too_many_arguments)]
    fn stdio<'py>(
        py: Python<'py>,
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
        prefix: Option<String>,
        timeout: Option<Timeout>,
        max_message_bytes: &Bound<'py, PyAny>,
        connect_timeout: Option<Timeout>,
        asynchronous: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = options(prefix, timeout, max_message_bytes, connect_timeout)?;
        Self::connect(py, stdio_spec(command, args, env, cwd), opts, asynchronous)
    }

    /// Opens a session with the streamable-HTTP endpoint `url` (with `asynchronous`,
    /// as an awaitable).
    #[staticmethod]
    #[pyo3(signature = (url, headers, prefix, timeout, max_message_bytes,
        connect_timeout = None, *, asynchronous = false))]
    #[allow(clippy::too_many_arguments)]
    fn http<'py>(
        py: Python<'py>,
        url: String,
        headers: Vec<(String, String)>,
        prefix: Option<String>,
        timeout: Option<Timeout>,
        max_message_bytes: &Bound<'py, PyAny>,
        connect_timeout: Option<Timeout>,
        asynchronous: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = options(prefix, timeout, max_message_bytes, connect_timeout)?;
        let spec = Spec::Http(HttpServer { url, headers });
        Self::connect(py, spec, opts, asynchronous)
    }

    /// The server's tools: the same objects on every access, listed again after the
    /// server sent `notifications/tools/list_changed`.
    #[getter]
    fn tools(&self, py: Python<'_>) -> PyResult<Vec<Py<NativeTool>>> {
        let set = self.set.clone();
        let changed = !self.set.session().is_closed()
            && block_on_uncancelled(py, async move { set.refresh().await })??;
        let mut tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        if changed {
            *tools = Self::wrap(py, &self.set)?;
        }
        Ok(tools.iter().map(|t| t.clone_ref(py)).collect())
    }

    /// `resources/list`: the server's resources as dicts (`uri`, `name`, `mimeType`…).
    #[pyo3(signature = (*, asynchronous = false))]
    fn list_resources<'py>(
        &self,
        py: Python<'py>,
        asynchronous: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.request(py, asynchronous, |set| async move {
            Ok(Value::Array(set.session().list_resources().await?))
        })
    }

    /// `resources/read`: the contents of `uri` as dicts (`uri`, `text` or `blob`…).
    #[pyo3(signature = (uri, *, asynchronous = false))]
    fn read_resource<'py>(
        &self,
        py: Python<'py>,
        uri: String,
        asynchronous: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.request(py, asynchronous, move |set| async move {
            Ok(Value::Array(set.session().read_resource(&uri).await?))
        })
    }

    /// `prompts/list`: the server's prompts as dicts (`name`, `description`, `arguments`).
    #[pyo3(signature = (*, asynchronous = false))]
    fn list_prompts<'py>(
        &self,
        py: Python<'py>,
        asynchronous: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.request(py, asynchronous, |set| async move {
            Ok(Value::Array(set.session().list_prompts().await?))
        })
    }

    /// `prompts/get`: `{"description", "messages"}` for prompt `name` with `arguments`.
    #[pyo3(signature = (name, arguments = None, *, asynchronous = false))]
    fn get_prompt<'py>(
        &self,
        py: Python<'py>,
        name: String,
        arguments: Option<&Bound<'py, PyAny>>,
        asynchronous: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arguments = match arguments.filter(|a| !a.is_none()) {
            None => Map::new(),
            Some(a) => match value_from_py(a, "prompt arguments")? {
                Value::Object(m) => m,
                _ => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "prompt arguments must be a dict of str to str",
                    ))
                }
            },
        };
        self.request(py, asynchronous, move |set| async move {
            set.session().get_prompt(&name, arguments).await
        })
    }

    /// The server's announced name and its command or URL.
    #[getter]
    fn server(&self) -> &str {
        self.set.session().server_name()
    }

    /// The process id of a stdio server, None over HTTP.
    #[getter]
    fn pid(&self) -> Option<u32> {
        self.set.session().pid()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.set.session().is_closed()
    }

    /// Ends the session (and a stdio server's process); waits for it.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let set = self.set.clone();
        block_on_uncancelled(py, async move { set.close().await })?.map_err(PyErr::from)
    }

    /// Like `close`, as an awaitable.
    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let set = self.set.clone();
        crate::bindings::awaitable::future_into_py(py, async move { Ok(set.close().await?) })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMcpToolset>()?;
    // The default `max_message_bytes`, defined once in the core: `ironloop.mcp`'s
    // `MAX_MESSAGE_BYTES` is this.
    m.add(
        "_MCP_MAX_MESSAGE_BYTES",
        crate::sources::mcp::DEFAULT_MAX_MESSAGE_BYTES,
    )
}
