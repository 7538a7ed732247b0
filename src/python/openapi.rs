//! `ironloop.openapi`: an OpenAPI description as `NativeTool`s (see
//! [`crate::sources::openapi`]). Reading, fetching and parsing the spec happen with
//! the GIL released; the tools' calls never enter Python.

use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use super::args::Timeout;
use super::errors::Class;
use super::native_tool::NativeTool;
use super::runtime::block_on;
use crate::sources::openapi::{
    ClientAuth, ClientCredentials, Credential, OpenApiOptions, OpenApiToolset,
    DEFAULT_MAX_SPEC_BYTES, DEFAULT_MAX_SPEC_NODES,
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

/// The limits of one spec: `(max_spec_bytes, max_spec_nodes)`.
type SpecLimits = (usize, usize);

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

fn options(
    base_url: Option<String>,
    headers: Option<Vec<(String, String)>>,
    timeout: Option<Timeout>,
    max_output_bytes: usize,
    (max_spec_bytes, max_spec_nodes): SpecLimits,
    credentials: Option<Vec<RawCredential>>,
    allowed_hosts: Option<Vec<String>>,
) -> PyResult<OpenApiOptions> {
    for (name, v) in [
        ("max_output_bytes", max_output_bytes),
        ("max_spec_bytes", max_spec_bytes),
        ("max_spec_nodes", max_spec_nodes),
    ] {
        if v == 0 {
            return Err(Class::InvalidArgument.new_err(format!("{name} must be at least 1")));
        }
    }
    Ok(OpenApiOptions {
        base_url,
        headers: headers.unwrap_or_default(),
        timeout: timeout.map(|t| t.0),
        max_output_bytes,
        spec_url: None,
        max_spec_bytes,
        max_spec_nodes,
        credentials: credentials
            .unwrap_or_default()
            .into_iter()
            .map(credential)
            .collect::<PyResult<_>>()?,
        allowed_hosts: allowed_hosts.unwrap_or_default(),
    })
}

/// The tools of a spec given as text (`kind="str"`), a file path (`"file"`) or a URL
/// (`"url"`, fetched from Rust; Ctrl-C interrupts the fetch).
#[pyfunction]
#[pyo3(signature = (kind, source, *, base_url = None, headers = None, timeout = None,
                    max_output_bytes = 65536, max_spec_bytes = DEFAULT_MAX_SPEC_BYTES,
                    max_spec_nodes = DEFAULT_MAX_SPEC_NODES, credentials = None,
                    allowed_hosts = None))]
#[allow(clippy::too_many_arguments)]
fn _openapi_toolset(
    py: Python<'_>,
    kind: &str,
    source: String,
    base_url: Option<String>,
    headers: Option<Vec<(String, String)>>,
    timeout: Option<Timeout>,
    max_output_bytes: usize,
    max_spec_bytes: usize,
    max_spec_nodes: usize,
    credentials: Option<Vec<RawCredential>>,
    allowed_hosts: Option<Vec<String>>,
) -> PyResult<Made> {
    let limits = (max_spec_bytes, max_spec_nodes);
    let options = options(
        base_url,
        headers,
        timeout,
        max_output_bytes,
        limits,
        credentials,
        allowed_hosts,
    )?;
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
#[pyo3(signature = (url, *, base_url = None, headers = None, timeout = None,
                    max_output_bytes = 65536, max_spec_bytes = DEFAULT_MAX_SPEC_BYTES,
                    max_spec_nodes = DEFAULT_MAX_SPEC_NODES, credentials = None,
                    allowed_hosts = None))]
#[allow(clippy::too_many_arguments)]
fn _openapi_toolset_from_url_async<'py>(
    py: Python<'py>,
    url: String,
    base_url: Option<String>,
    headers: Option<Vec<(String, String)>>,
    timeout: Option<Timeout>,
    max_output_bytes: usize,
    max_spec_bytes: usize,
    max_spec_nodes: usize,
    credentials: Option<Vec<RawCredential>>,
    allowed_hosts: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let limits = (max_spec_bytes, max_spec_nodes);
    let options = options(
        base_url,
        headers,
        timeout,
        max_output_bytes,
        limits,
        credentials,
        allowed_hosts,
    )?;
    crate::python::awaitable::future_into_py(py, async move {
        made(OpenApiToolset::from_url(&url, options).await?)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_openapi_toolset, m)?)?;
    m.add_function(wrap_pyfunction!(_openapi_toolset_from_url_async, m)?)?;
    Ok(())
}
