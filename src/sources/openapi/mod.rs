//! OpenAPI tool sources: one [`Tool`] per operation of an OpenAPI 3.0 or 3.1
//! description, executed over HTTP from Rust.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ironloop::sources::openapi::OpenApiError> {
//! use ironloop::sources::openapi::{OpenApiOptions, OpenApiToolset};
//! let spec = std::fs::read_to_string("petstore.yaml").unwrap();
//! let options = OpenApiOptions {
//!     base_url: Some("http://127.0.0.1:8080/v1".into()),
//!     headers: vec![("Authorization".into(), "Bearer secret".into())],
//!     ..Default::default()
//! };
//! let toolset = OpenApiToolset::from_str(&spec, options)?;
//! let registry = ironloop::ToolRegistry::new();
//! for tool in toolset.tools() {
//!     registry.register(tool).unwrap();
//! }
//! # Ok(()) }
//! ```
//!
//! How a spec becomes tools (decisions worth knowing):
//! - The spec is JSON or YAML (YAML 1.2, so `no` and `on` stay strings), read into a
//!   `serde_json::Value` and walked directly: what the tools need — `paths`,
//!   operations, `parameters`, `requestBody`, `components`, `$ref`, `servers` — has the
//!   same shape in 3.0 and 3.1. Swagger 2.0 is refused with a message saying so.
//! - Local `$ref`s (`#/components/...`, any JSON pointer into the document) are
//!   resolved — for path items, parameters, request bodies and schemas — and inlined,
//!   so every tool's schema stands alone. A reference met again inside its own
//!   expansion (a recursive schema) becomes a plain `{"type": ..., "description":
//!   "recursive ..."}` stub. A reference to another document is an error naming it:
//!   bundle the spec first.
//! - Schemas are made valid JSON Schema 2020-12 (the dialect the executor checks
//!   arguments with): 3.0's `nullable: true` becomes a `"null"` type, boolean
//!   `exclusiveMinimum` / `exclusiveMaximum` become numeric, `example` becomes
//!   `examples`; `xml`, `externalDocs`, `discriminator`, `$id`, `$schema` and `$defs`
//!   are dropped; `readOnly` properties are removed from request bodies (the server
//!   sets them).
//! - Tool name: `operationId`, with characters outside `[a-zA-Z0-9_-]` replaced by `_`
//!   (runs of `_` made one); without one, `<method>_<path>` (`get_pets_petId`); over 64
//!   characters, cut with a hash of the whole added ([`crate::tool::name::sanitize`]);
//!   a name taken by an earlier operation gets `_2`, `_3`… Description: summary and description (cut
//!   to 1,024 characters, the OpenAI limit), else `GET /path`.
//! - Arguments: one property per path / query / header / cookie parameter (its
//!   location in the description; a name outside `[a-zA-Z0-9_.-]` or taken by another
//!   parameter is renamed, the real name kept for the request), plus `body` for the
//!   request body; `required` as the spec says (path parameters always). Header
//!   parameters named `Accept`, `Content-Type` or `Authorization` are ignored, as the
//!   OpenAPI specification says. Unknown arguments are refused.
//! - Request bodies: JSON media types (`application/json`, `*+json`, `*/*`), form
//!   (`application/x-www-form-urlencoded`), `multipart/form-data` and `text/*`. A
//!   multipart body is an object: scalars become text parts, arrays of scalars
//!   repeated parts, objects JSON parts (OpenAPI's default encodings, or the
//!   `encoding`'s `contentType`); a property of `format: binary` (or with
//!   `contentMediaType`) is a file part whose content is the argument's text (a model
//!   writes text, not bytes). An operation whose required body has none of these
//!   (`application/octet-stream`, images) is skipped and listed in
//!   [`OpenApiToolset::skipped`].
//! - Base URL: [`OpenApiOptions::base_url`], else the operation's, path item's or
//!   spec's first `servers[].url` (variables at their defaults), a relative one
//!   resolved against the spec's URL ([`OpenApiToolset::from_url`]); without a spec
//!   URL, OpenAPI's default server `/` means "same place as the spec". No usable base
//!   URL is an error at construction.
//! - Parameters are serialised by their `style` / `explode` (defaults: `form` +
//!   explode for query and cookie, `simple` for path and header; `deepObject`,
//!   `spaceDelimited`, `pipeDelimited`, `label` and `matrix` too): arrays in a query
//!   are repeated keys by default; path values are percent-encoded.
//! - A call's result is `HTTP <status> <reason>\n<body>`, a JSON body re-written
//!   compactly, any body cut to [`OpenApiOptions::max_output_bytes`] with a note; the
//!   artifact is `{"status", "content_type", "body"}` (the body parsed when JSON). A
//!   non-2xx status is a [`ToolError::Failed`] whose message is that same text, so the
//!   model reads the status and the server's explanation.
//! - Calls are not retried (an operation may not be idempotent). The time limit
//!   ([`OpenApiOptions::timeout`], also the tool's [`Tool::timeout`]) covers sending
//!   and reading the body; `ctx.cancel` aborts the request.
//! - Security: [`OpenApiOptions::credentials`] gives a [`Credential`] per
//!   `components.securitySchemes` name — API keys (header, query, cookie), HTTP bearer
//!   and basic, OAuth2 client credentials (token fetched, cached, refreshed); each
//!   operation uses the first of its `security` alternatives that has them all (see
//!   the `security` module).
//! - Secrets: the values of [`OpenApiOptions::headers`] whose names look like
//!   credentials (`Authorization`, `Cookie`, anything with `key`, `token`, `secret`,
//!   `auth`, `password`, `session`, `signature`, `credential`) are marked sensitive and
//!   replaced by `[redacted]` wherever they would appear in a result or an error —
//!   including a body that echoes them; so are all [`OpenApiOptions::credentials`]
//!   and the OAuth2 tokens fetched with them.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, COOKIE};
use reqwest::Method;
use serde_json::{json, Map, Value};
use thiserror::Error;

mod doc;
mod http;
mod operation;
mod request;
mod security;
pub use security::{ClientAuth, ClientCredentials, Credential};

use self::doc::*;
use self::http::*;
use self::operation::*;
pub use self::request::OpenApiTool;
use self::request::*;
use self::security::{Apply, OpAuth, Security};
use super::yaml::YamlLimits;
use crate::error::error_chain;
use crate::message::Content;
use crate::model::http::client_builder;
use crate::secrets::Secrets;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// The default time limit of one call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default cap on the text of one result.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// The most a spec fetched by [`OpenApiToolset::from_url`] may weigh.
/// The default [`OpenApiOptions::max_spec_bytes`].
pub const DEFAULT_MAX_SPEC_BYTES: usize = 32 << 20;
/// The default [`OpenApiOptions::max_spec_nodes`] (large public specs hold a few
/// hundred thousand).
pub const DEFAULT_MAX_SPEC_NODES: usize = 1_000_000;
/// The deepest nesting a spec may have (serde_json's own limit for JSON text).
const MAX_SPEC_DEPTH: usize = 128;
/// How many bytes of a response are ever read; past this the rest is not awaited.
const MAX_READ_BYTES: usize = 64 << 20;
/// Inlining stops this deep (a stub stands in), whatever the references.
const MAX_SCHEMA_DEPTH: usize = 48;
/// How many `$ref`s one operation's schema may expand before stubs stand in (a spec
/// whose references fan out would otherwise inline to an enormous schema).
const REF_BUDGET: usize = 400;
/// The OpenAI limit on a function's description.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Why a spec could not become tools.
#[derive(Debug, Error)]
pub enum OpenApiError {
    #[error("cannot read the OpenAPI spec {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot fetch the OpenAPI spec from {url}: {message}")]
    Fetch { url: String, message: String },
    #[error("the OpenAPI spec is not valid JSON or YAML: {0}")]
    Parse(String),
    #[error("invalid OpenAPI spec: {0}")]
    Invalid(String),
    /// A problem with the options (a bad header, no base URL).
    #[error("{0}")]
    Config(String),
}

/// How the tools reach the API.
#[derive(Debug, Clone)]
pub struct OpenApiOptions {
    /// The URL the operations' paths are appended to (e.g. `https://api.example.com/v1`);
    /// when `None`, the spec's `servers` decide.
    pub base_url: Option<String>,
    /// Headers sent with every call (and with the fetch of [`OpenApiToolset::from_url`]):
    /// authentication, typically. Credential-like values never appear in results or
    /// errors.
    pub headers: Vec<(String, String)>,
    /// The time limit of one call (sending and reading the response).
    pub timeout: Option<Duration>,
    /// The most text one result carries; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// Where the spec came from, to resolve relative server URLs against
    /// ([`OpenApiToolset::from_url`] sets it).
    pub spec_url: Option<String>,
    /// The largest spec text accepted (read, fetched or given), in bytes.
    pub max_spec_bytes: usize,
    /// The most nodes a YAML spec may hold once its aliases are expanded: a few
    /// hundred bytes of anchors that refer to anchors ("billion laughs") would
    /// otherwise expand to gigabytes.
    pub max_spec_nodes: usize,
    /// Credentials for the spec's `components.securitySchemes`, by scheme name.
    pub credentials: Vec<(String, Credential)>,
    /// Hosts requests may go to besides the hosts of the operations' base URLs (the
    /// spec's servers, or `base_url`) and of the URL the spec was fetched from. A
    /// redirect to any other host is refused: a spec from the network, or the API
    /// itself, must not send the toolset's credentials elsewhere.
    pub allowed_hosts: Vec<String>,
}

impl Default for OpenApiOptions {
    fn default() -> Self {
        OpenApiOptions {
            base_url: None,
            headers: Vec::new(),
            timeout: Some(DEFAULT_TIMEOUT),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            spec_url: None,
            max_spec_bytes: DEFAULT_MAX_SPEC_BYTES,
            max_spec_nodes: DEFAULT_MAX_SPEC_NODES,
            credentials: Vec::new(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// The tools of one OpenAPI description.
pub struct OpenApiToolset {
    title: String,
    version: String,
    base_url: Option<String>,
    tools: Vec<Arc<OpenApiTool>>,
    skipped: Vec<String>,
}

impl std::fmt::Debug for OpenApiToolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiToolset")
            .field("title", &self.title)
            .field("base_url", &self.base_url)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl OpenApiToolset {
    /// Tools from the text of a spec (JSON or YAML).
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, options: OpenApiOptions) -> Result<Self, OpenApiError> {
        Self::from_value(parse_spec(text, &options)?, options)
    }

    /// Tools from a spec file (JSON or YAML).
    pub fn from_file(
        path: impl AsRef<Path>,
        options: OpenApiOptions,
    ) -> Result<Self, OpenApiError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| OpenApiError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_str(&text, options)
    }

    /// Tools from a spec fetched over HTTP (with `options.headers`); relative server
    /// URLs in it are resolved against `url` (after redirects).
    pub async fn from_url(url: &str, mut options: OpenApiOptions) -> Result<Self, OpenApiError> {
        let http = Http::new(&options)?;
        let fetch_err = |message: String| OpenApiError::Fetch {
            url: http.redact(url),
            message: http.redact(&message),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(fetch_err(
                "the URL must start with http:// or https://".into(),
            ));
        }
        http.allow_host_of(url);
        let timeout = options.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let request = http
            .client
            .get(url)
            .headers(http.headers.clone())
            .header(
                ACCEPT,
                "application/json, application/yaml, text/yaml, */*;q=0.5",
            )
            .timeout(timeout)
            .send();
        let mut resp = request.await.map_err(|e| fetch_err(error_chain(&e)))?;
        let status = resp.status();
        let final_url = resp.url().to_string();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| fetch_err(error_chain(&e)))? {
            body.extend_from_slice(&chunk);
            if body.len() > options.max_spec_bytes {
                return Err(fetch_err(format!(
                    "the spec is larger than max_spec_bytes ({} bytes); raise it to \
                     accept a larger spec",
                    options.max_spec_bytes
                )));
            }
        }
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            return Err(fetch_err(format!(
                "HTTP {}: {}",
                status_line(status),
                cut_chars(&text, 300)
            )));
        }
        http.allow_host_of(&final_url);
        options.spec_url.get_or_insert(final_url);
        Self::from_value_with(parse_spec(&text, &options)?, options, http)
    }

    /// Tools from a spec already parsed into JSON.
    pub fn from_value(spec: Value, options: OpenApiOptions) -> Result<Self, OpenApiError> {
        let http = Http::new(&options)?;
        Self::from_value_with(spec, options, http)
    }

    fn from_value_with(
        spec: Value,
        options: OpenApiOptions,
        http: Http,
    ) -> Result<Self, OpenApiError> {
        let Value::Object(root) = &spec else {
            return Err(OpenApiError::Invalid(
                "the document is not an object".into(),
            ));
        };
        check_version(root)?;
        let info = root.get("info");
        let text_of = |k: &str| {
            info.and_then(|i| i.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (title, version) = (text_of("title"), text_of("version"));
        let doc = Doc { root: &spec };
        let explicit_base = match &options.base_url {
            Some(b) => Some(check_base(b)?),
            None => None,
        };
        let spec_base = match &explicit_base {
            Some(b) => Some(b.clone()),
            None => doc.server_base(root.get("servers"), "the spec", true, &options)?,
        };
        let token_base = options.spec_url.as_deref().or(spec_base.as_deref());
        let security = Security::new(&spec, &options.credentials, token_base)?;
        let shared = Arc::new(Shared {
            http,
            timeout: options.timeout,
            max_output_bytes: options.max_output_bytes.max(1),
        });
        let mut tools = Vec::new();
        let mut skipped = Vec::new();
        let mut names = HashSet::new();
        let paths = match root.get("paths") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err(OpenApiError::Invalid("`paths` is not an object".into())),
        };
        for (path, item) in &paths {
            let item = doc.deref(item, &format!("path {path}"))?;
            let Some(item) = item.as_object() else {
                continue;
            };
            let path_base = match &explicit_base {
                Some(b) => Some(b.clone()),
                None => doc
                    .server_base(item.get("servers"), path, false, &options)?
                    .or_else(|| spec_base.clone()),
            };
            for (key, op) in item {
                let Some(method) = http_method(key) else {
                    continue;
                };
                let Some(op) = op.as_object() else {
                    continue;
                };
                let here = format!("{} {path}", method.as_str());
                let base = match &explicit_base {
                    Some(b) => b.clone(),
                    None => match doc.server_base(op.get("servers"), &here, false, &options)? {
                        Some(b) => b,
                        None => path_base.clone().ok_or_else(|| {
                            OpenApiError::Config(format!(
                                "no base URL for {here}: the spec has no `servers` entry \
                                 (and no URL it was fetched from); pass base_url"
                            ))
                        })?,
                    },
                };
                // The operation's requirement replaces the spec's (OpenAPI 3).
                let requirement = op.get("security").or_else(|| root.get("security"));
                shared.http.allow_host_of(&base);
                match build_operation(&doc, &method, path, item, op, &here)? {
                    Built::Skip(why) => {
                        log::warn!("openapi: skipping {here}: {why}");
                        skipped.push(format!("{here}: {why}"));
                    }
                    Built::Op(mut op) => {
                        op.name = crate::tool::name::unique(&op.name, &mut names);
                        let auth = op_auth(&security, requirement, &here);
                        tools.push(Arc::new(OpenApiTool {
                            def: ToolDefinition::new(
                                op.name.clone(),
                                op.description.clone(),
                                op.parameters.clone(),
                            ),
                            method: method.clone(),
                            path: path.clone(),
                            base,
                            params: op.params,
                            body: op.body,
                            auth,
                            shared: shared.clone(),
                        }));
                    }
                }
            }
        }
        Ok(OpenApiToolset {
            title,
            version,
            base_url: spec_base,
            tools,
            skipped,
        })
    }

    /// The tools, in the spec's order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools
            .iter()
            .map(|t| t.clone() as Arc<dyn Tool>)
            .collect()
    }

    /// The tools with their HTTP details.
    pub fn operations(&self) -> &[Arc<OpenApiTool>] {
        &self.tools
    }

    /// The base URL the operations use unless they name their own servers.
    pub fn base_url(&self) -> Option<&str> {
        self.base_url.as_deref()
    }

    /// `info.title`.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// `info.version`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Operations that did not become tools, each as `METHOD /path: why`.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }
}

/// Only OpenAPI 3.0 and 3.1 documents are read; a Swagger 2.0 one, or a document
/// without a version, is refused with what to do.
fn check_version(root: &Map<String, Value>) -> Result<(), OpenApiError> {
    match root.get("openapi") {
        Some(Value::String(v)) if v.starts_with("3.") => Ok(()),
        Some(v) => Err(OpenApiError::Invalid(format!(
            "unsupported `openapi` version {v}: 3.0 and 3.1 are supported"
        ))),
        None if root.contains_key("swagger") => Err(OpenApiError::Invalid(
            "this is a Swagger 2.0 document; only OpenAPI 3.0 and 3.1 are supported \
                 (convert it, e.g. with swagger2openapi)"
                .into(),
        )),
        None => Err(OpenApiError::Invalid(
            "no `openapi` version field: is this an OpenAPI document?".into(),
        )),
    }
}

/// The credentials an operation is called with: those its security requirement
/// (`requirement`, the operation's or the spec's) names, else none (with a warning
/// when some credentials were given, but not the ones it needs).
fn op_auth(security: &Security, requirement: Option<&Value>, here: &str) -> OpAuth {
    match security.for_operation(requirement) {
        Ok(auth) => auth,
        Err(wanted) => {
            if !security.is_empty() {
                log::warn!(
                    "openapi: {here} needs credentials for {wanted}, and \
                     none were given: it is called without them"
                );
            }
            OpAuth::default()
        }
    }
}

/// Parses JSON (when the text starts with `{`) or YAML into a JSON value, within the
/// options' size and node limits and [`MAX_SPEC_DEPTH`] levels of nesting.
pub fn parse_spec(text: &str, options: &OpenApiOptions) -> Result<Value, OpenApiError> {
    if text.len() > options.max_spec_bytes {
        return Err(OpenApiError::Parse(format!(
            "the spec is {} bytes, more than max_spec_bytes ({}); raise it to accept a \
             larger spec",
            text.len(),
            options.max_spec_bytes
        )));
    }
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') {
        // serde_json refuses nesting deeper than 128 levels by itself.
        return serde_json::from_str(t).map_err(|e| OpenApiError::Parse(format!("JSON: {e}")));
    }
    let limits = YamlLimits {
        max_nodes: options.max_spec_nodes,
        max_depth: MAX_SPEC_DEPTH,
    };
    super::yaml::to_json(t, limits).map_err(OpenApiError::Parse)
}

fn http_method(key: &str) -> Option<Method> {
    Some(match key {
        "get" => Method::GET,
        "put" => Method::PUT,
        "post" => Method::POST,
        "delete" => Method::DELETE,
        "options" => Method::OPTIONS,
        "head" => Method::HEAD,
        "patch" => Method::PATCH,
        "trace" => Method::TRACE,
        _ => return None,
    })
}

fn check_base(url: &str) -> Result<String, OpenApiError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(OpenApiError::Config(format!(
            "base_url must start with http:// or https://, got {url:?}"
        )));
    }
    reqwest::Url::parse(url)
        .map_err(|e| OpenApiError::Config(format!("base_url {url:?} is not a valid URL: {e}")))?;
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised() {
        assert_eq!(sanitize("pets.list/all", 64), "pets_list_all");
        assert_eq!(sanitize("get_/pets/{petId}", 64), "get_pets_petId");
        assert_eq!(sanitize("!!!", 64), "operation");
        assert_eq!(sanitize(&"a".repeat(100), 64).len(), 64);
    }

    #[test]
    fn encoding() {
        assert_eq!(encode("a b/c?d", false), "a%20b%2Fc%3Fd");
        assert_eq!(encode("é", false), "%C3%A9");
        assert_eq!(encode("a/b", true), "a/b");
        assert_eq!(
            percent_decode("/paths/~1pets%7BpetId%7D"),
            "/paths/~1pets{petId}"
        );
        assert_eq!(cut_chars("abcdef", 4), "abc…");
        assert_eq!(cut_chars("abcd", 4), "abcd");
    }

    #[test]
    fn placeholders() {
        assert_eq!(path_placeholders("/a/{x}/b/{y}.{z}"), vec!["x", "y", "z"]);
    }

    #[test]
    fn render_truncates_with_a_note() {
        let r = render_body(b"0123456789", 10, true, "text/plain", 4);
        assert_eq!(r.text, "0123\n[truncated: 6 bytes omitted]");
        let r = render_body(br#"{"a": 1}"#, 8, true, "application/json", 100);
        assert_eq!(r.text, r#"{"a": 1}"#);
        assert_eq!(r.value, Some(json!({"a": 1})));
        let r = render_body(&[0xff, 0xfe, 0], 3, true, "image/png", 100);
        assert_eq!(r.text, "[binary body: 3 bytes, image/png]");
    }
}
