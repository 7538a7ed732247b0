//! Tools written in Rust (`Arc<dyn Tool>`) as Python objects: the built-in workspace
//! tools, and whatever else the crate makes. A `NativeTool` looks like an ironloop
//! `Tool` (`.name`, `.description`, `.parameters`, `.return_direct`, `.timeout`,
//! `.to_openai()`, `.to_anthropic()`); `ToolNode` registers it as the Rust tool
//! itself, so no call of it enters Python. Called directly (`tool(**args)`,
//! `tool.invoke(args)`, `await tool.ainvoke(args)`) it runs through a one-tool
//! executor — arguments checked against the schema, its timeout applied — with the
//! GIL released, and raises the typed `ironloop.errors.ToolError` on failure.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use serde_json::Value;

use super::args::{size_limit, Timeout};
use super::convert::{value_from_py, value_to_py};
use super::errors::WorkspaceError;
use super::exiting::attach;
use super::runtime::block_on;
use crate::executor::{Executor, RunContext};
use crate::message::new_id;
use crate::registry::ToolRegistry;
use crate::sources::workspace::{workspace_tools, WorkspaceOptions};
use crate::tool::{CallTracer, Tool, ToolCall, ToolError, ToolOutput};

/// The call tracer of a tool invoked directly (`tool.invoke(...)`) inside a traced
/// run's node or tool: its span goes under what is current there.
fn direct_call_tracer(py: Python<'_>) -> PyResult<Option<Arc<dyn CallTracer>>> {
    let Some(trace) = super::tracing::current_trace(py)? else {
        return Ok(None);
    };
    let context = py.import("contextvars")?.call_method0("copy_context")?;
    Ok(Some(Arc::new(super::tracing::PyCallTracer {
        trace,
        context: context.unbind(),
    })))
}

#[pyclass(name = "NativeTool", module = "ironloop._ironloop", frozen)]
pub struct NativeTool {
    pub(crate) tool: Arc<dyn Tool>,
    /// A one-tool executor for direct calls.
    executor: Executor,
}

impl NativeTool {
    pub fn new(tool: Arc<dyn Tool>) -> PyResult<Self> {
        let registry = Arc::new(ToolRegistry::new());
        registry.register(tool.clone()).map_err(PyErr::from)?;
        Ok(NativeTool {
            tool,
            executor: Executor::new(registry),
        })
    }

    fn call_for(&self, input: Option<&Bound<'_, PyAny>>) -> PyResult<ToolCall> {
        let args = match input {
            None => Value::Object(Default::default()),
            Some(i) if i.is_none() => Value::Object(Default::default()),
            Some(i) if i.cast::<PyDict>().is_ok() => value_from_py(i, "tool arguments")?,
            Some(i) => {
                return Err(PyTypeError::new_err(format!(
                    "tool {:?}: the arguments must be a dict, got {}",
                    self.tool.definition().name,
                    i.get_type().name()?
                )))
            }
        };
        Ok(ToolCall::new(
            new_id(),
            self.tool.definition().name.clone(),
            args,
        ))
    }
}

/// What a direct call returns: the artifact when the tool kept a JSON value, else
/// the text the model would read.
fn result_to_py(py: Python<'_>, outcome: Result<ToolOutput, ToolError>) -> PyResult<Py<PyAny>> {
    match outcome {
        Ok(out) => match &out.artifact {
            Some(v) => Ok(value_to_py(py, v)?.unbind()),
            None => Ok(PyString::new(py, &out.content.text()).into_any().unbind()),
        },
        Err(e) => Err(e.into()),
    }
}

#[pymethods]
impl NativeTool {
    #[getter]
    fn name(&self) -> &str {
        &self.tool.definition().name
    }

    #[getter]
    fn description(&self) -> &str {
        &self.tool.definition().description
    }

    /// The arguments' JSON Schema (a new dict on each access).
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.tool.definition().parameters)
    }

    #[getter]
    fn args_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.parameters(py)
    }

    #[getter]
    fn return_direct(&self) -> bool {
        false
    }

    /// The per-call time limit in seconds, or None.
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.tool.timeout().map(|d| d.as_secs_f64())
    }

    fn to_openai<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.tool.definition().to_openai())
    }

    fn to_anthropic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.tool.definition().to_anthropic())
    }

    /// This tool as a LangChain `StructuredTool` (needs langchain-core); its calls run
    /// in Rust through `invoke` / `ainvoke`.
    fn to_langchain<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("ironloop._langchain")?
            .call_method1("to_langchain_tool", (slf,))
    }

    /// Runs the tool with `args` (a dict) and returns its result; raises
    /// `ironloop.errors.ToolError` (a subclass per kind) when it fails.
    #[pyo3(signature = (input = None, config = None))]
    fn invoke(
        &self,
        py: Python<'_>,
        input: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = config;
        let calls = [self.call_for(input)?];
        let exec = self.executor.clone();
        let run = RunContext {
            tracer: direct_call_tracer(py)?,
            ..Default::default()
        };
        let cancel = run.cancel.clone();
        let mut results = block_on(py, async move { exec.execute(&calls, &run).await }, cancel)?;
        let r = results.pop().expect("one result per call");
        result_to_py(py, r.outcome)
    }

    /// Like `invoke`, as an awaitable; cancelling it cancels the call.
    #[pyo3(signature = (input = None, config = None))]
    fn ainvoke<'py>(
        &self,
        py: Python<'py>,
        input: Option<&Bound<'py, PyAny>>,
        config: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = config;
        let calls = [self.call_for(input)?];
        let exec = self.executor.clone();
        let tracer = direct_call_tracer(py)?;
        crate::bindings::awaitable::future_into_py(py, async move {
            let run = RunContext {
                tracer,
                ..Default::default()
            };
            let guard = run.cancel.clone().drop_guard();
            let mut results = exec.execute(&calls, &run).await;
            guard.disarm();
            let r = results.pop().expect("one result per call");
            attach(|py| result_to_py(py, r.outcome))
        })
    }

    /// `tool(path="a.txt")` (or `tool({"path": "a.txt"})`) is
    /// `tool.invoke({"path": "a.txt"})`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        match (args.len(), kwargs) {
            (0, kw) => self.invoke(py, kw.map(|k| k.as_any()), None),
            (1, None) => self.invoke(py, Some(&args.get_item(0)?), None),
            _ => Err(PyTypeError::new_err(format!(
                "tool {:?} takes its arguments as keywords (or one dict), e.g. \
                 tool(path=\"a.txt\")",
                self.tool.definition().name
            ))),
        }
    }

    fn __repr__(&self) -> String {
        format!("NativeTool(name='{}')", self.tool.definition().name)
    }
}

/// The workspace tools for `root`, as `NativeTool`s (see `ironloop.tools.workspace`).
#[pyfunction]
#[pyo3(signature = (root, *, allow_bash, bash_timeout, max_bash_timeout, max_output_bytes,
                    timeout = None, env = Vec::new()))]
fn _workspace_tools(
    root: std::path::PathBuf,
    allow_bash: bool,
    bash_timeout: &Bound<'_, PyAny>,
    max_bash_timeout: &Bound<'_, PyAny>,
    max_output_bytes: &Bound<'_, PyAny>,
    timeout: Option<Timeout>,
    env: Vec<(String, String)>,
) -> PyResult<Vec<NativeTool>> {
    let options = WorkspaceOptions {
        allow_bash,
        bash_timeout: Timeout::required(bash_timeout, "bash_timeout")?.0,
        max_bash_timeout: Timeout::required(max_bash_timeout, "max_bash_timeout")?.0,
        max_output_bytes: size_limit(max_output_bytes, "max_output_bytes")?,
        timeout: timeout.map(|t| t.0),
        bash_env: env,
        ..Default::default()
    };
    let tools = workspace_tools(&root, options).map_err(WorkspaceError)?;
    tools.into_iter().map(NativeTool::new).collect()
}

/// Raises `InvalidArgumentError` (a `ValueError`) when `name` is not a tool name the
/// model providers accept (`crate::tool::name`): what `Tool(...)` checks at definition.
#[pyfunction]
fn _check_tool_name(name: &Bound<'_, PyString>) -> PyResult<()> {
    let refused = match name.to_str() {
        Ok(n) => crate::tool::name::check(n).err(),
        // Not valid Unicode: a lone surrogate, which no provider's JSON can carry.
        Err(e) => {
            let py = name.py();
            let at = e
                .value(py)
                .getattr("start")
                .and_then(|v| v.extract::<usize>())
                .unwrap_or(0);
            // Each lone surrogate shown as one U+FFFD (UTF-16 round trip).
            let shown: String = name
                .call_method1("encode", ("utf-16", "surrogatepass"))?
                .call_method1("decode", ("utf-16", "replace"))?
                .extract()?;
            Some(crate::tool::name::refused(
                &shown,
                format!("it contains a lone surrogate at position {at}"),
            ))
        }
    };
    match refused {
        None => Ok(()),
        Some(e) => Err(super::errors::Class::InvalidArgument.new_err(e.to_string())),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeTool>()?;
    m.add_function(wrap_pyfunction!(_check_tool_name, m)?)?;
    m.add_function(wrap_pyfunction!(_workspace_tools, m)?)?;
    // The environment allow-list of the workspace's `bash`, which ShellToolMiddleware's
    // sessions use too (python/ironloop/middleware/shell_tool.py): one list, here.
    m.add(
        "_BASH_ENV_ALLOWED",
        crate::sources::workspace::BASH_ENV_ALLOWED.to_vec(),
    )?;
    Ok(())
}
