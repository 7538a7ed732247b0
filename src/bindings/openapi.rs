//! `ironloop.openapi`: an OpenAPI description as `NativeTool`s (see
//! [`crate::sources::openapi`]). Reading, fetching and parsing the spec happen with
//! the GIL released; the tools' calls never enter Python.

use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use super::args::{size_limit, Timeout};
use super::errors::Class;
use super::native_tool::NativeTool;
use super::runtime::block_on;
use crate::sources::openapi::{
    ClientAuth, ClientCredentials, Credential, OpenApiOptions, OpenApiToolset,
    DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SPEC_BYTES, DEFAULT_MAX_SPEC_NODES, DEFAULT_TIMEOUT,
};

/// What `OpenApiToolset` is made from: `(tools, base_url, title, version, skipped)`.
type Made = (Vec<NativeTool>, Option<String>, String, String, Vec<String>);

fn made(ts: OpenApiToolset) -> PyResult<Made> {
    let tools = ts
        .tools()
        .into_iter()
        .map(NativeTool::new)
        .collect::<PyResult<Vec<_>>>()?;
    Ok((
        tools,
        ts.base_url().map(str::to_string),
        ts.title().to_string(),
        ts.version().to_string(),
        ts.skipped().to_vec(),
    ))
}

/// One credential as `ironloop.sources.openapi` normalises it: `(scheme, kind,
/// fields)`, kind `"secret"`, `"basic"` or `"client_credentials"`.
type RawCredential = (String, String, Vec<(String, String)>);

fn credential((scheme, kind, fields): RawCredential) -> PyResult<(String, Credential)> {
    let get = |k: &str| {
        fields
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    };
    let need = |k: &str| {
        get(k).ok_or_else(|| {
            Class::InvalidArgument.new_err(format!(
                "the credential for security scheme {scheme:?} needs {k:?}"
            ))
        })
    };
    let c = match kind.as_str() {
        "secret" => Credential::Secret(need("value")?),
        "basic" => Credential::Basic {
            username: need("username")?,
            password: need("password")?,
        },
        "client_credentials" => Credential::ClientCredentials(ClientCredentials {
            client_id: need("client_id")?,
            client_secret: need("client_secret")?,
            scopes: get("scopes").map(|s| s.split_whitespace().map(str::to_string).collect()),
            token_url: get("token_url"),
            auth: match get("auth_method").as_deref() {
                None | Some("basic") => ClientAuth::Basic,
                Some("post") => ClientAuth::Post,
                Some(other) => {
                    return Err(Class::InvalidArgument.new_err(format!(
                        "auth_method of security scheme {scheme:?} must be 'basic' or \
                         'post', got {other:?}"
                    )))
                }
            },
        }),
        other => {
            return Err(Class::InvalidArgument.new_err(format!(
                "unknown credential kind {other:?} for security scheme {scheme:?}"
            )))
        }
    };
    Ok((scheme, c))
}

/// The options every `OpenApiToolset` constructor takes, as
/// `ironloop.sources.openapi` checks them and passes them on: a dict with every key
/// (the defaults are filled in from [`_openapi_defaults`] on the Python side).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct RawOptions {
    base_url: Option<String>,
    headers: Option<Vec<(String, String)>>,
    /// Checked by [`Timeout::optional`] (its error, not a field-extraction one).
    timeout: Py<PyAny>,
    /// The size limits, checked by [`size_limit`] (its error, naming the option).
    max_output_bytes: Py<PyAny>,
    max_spec_bytes: Py<PyAny>,
    max_spec_nodes: Py<PyAny>,
    credentials: Option<Vec<RawCredential>>,
    allowed_hosts: Option<Vec<String>>,
}

impl RawOptions {
    fn into_options(self, py: Python<'_>) -> PyResult<OpenApiOptions> {
        let timeout = Timeout::optional(self.timeout.bind(py), "timeout")?;
        Ok(OpenApiOptions {
            base_url: self.base_url,
            headers: self.headers.unwrap_or_default(),
            timeout: timeout.map(|t| t.0),
            max_output_bytes: size_limit(self.max_output_bytes.bind(py), "max_output_bytes")?,
            spec_url: None,
            max_spec_bytes: size_limit(self.max_spec_bytes.bind(py), "max_spec_bytes")?,
            max_spec_nodes: size_limit(self.max_spec_nodes.bind(py), "max_spec_nodes")?,
            credentials: self
                .credentials
                .unwrap_or_default()
                .into_iter()
                .map(credential)
                .collect::<PyResult<_>>()?,
            allowed_hosts: self.allowed_hosts.unwrap_or_default(),
        })
    }
}

/// The core's defaults for the options that have one, so Python states none of its
/// own: `{"timeout", "max_output_bytes", "max_spec_bytes", "max_spec_nodes"}`.
#[pyfunction]
fn _openapi_defaults() -> (f64, usize, usize, usize) {
    (
        DEFAULT_TIMEOUT.as_secs_f64(),
        DEFAULT_MAX_OUTPUT_BYTES,
        DEFAULT_MAX_SPEC_BYTES,
        DEFAULT_MAX_SPEC_NODES,
    )
}

/// The tools of a spec given as text (`kind="str"`), a file path (`"file"`) or a URL
/// (`"url"`, fetched from Rust; Ctrl-C interrupts the fetch).
#[pyfunction]
fn _openapi_toolset(
    py: Python<'_>,
    kind: &str,
    source: String,
    options: RawOptions,
) -> PyResult<Made> {
    let options = options.into_options(py)?;
    let ts = match kind {
        "str" => py.detach(|| OpenApiToolset::from_str(&source, options)),
        "file" => py.detach(|| OpenApiToolset::from_file(&source, options)),
        "url" => block_on(
            py,
            async move { OpenApiToolset::from_url(&source, options).await },
            CancellationToken::new(),
        )?,
        other => {
            return Err(Class::InvalidArgument.new_err(format!(
                "kind must be 'str', 'file' or 'url', got {other:?}"
            )))
        }
    }?;
    made(ts)
}

/// `_openapi_toolset("url", ...)` as an awaitable: the event loop runs on while the
/// spec is fetched; cancelling the awaitable abandons the fetch.
#[pyfunction]
fn _openapi_toolset_from_url_async(
    py: Python<'_>,
    url: String,
    options: RawOptions,
) -> PyResult<Bound<'_, PyAny>> {
    let options = options.into_options(py)?;
    crate::bindings::awaitable::future_into_py(py, async move {
        made(OpenApiToolset::from_url(&url, options).await?)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_openapi_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(_openapi_toolset, m)?)?;
    m.add_function(wrap_pyfunction!(_openapi_toolset_from_url_async, m)?)?;
    Ok(())
}
