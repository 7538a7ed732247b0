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

mod security;
pub use security::{ClientAuth, ClientCredentials, Credential};

use self::security::{Apply, OpAuth, Security};
use super::yaml::YamlLimits;
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
        match root.get("openapi") {
            Some(Value::String(v)) if v.starts_with("3.") => {}
            Some(v) => {
                return Err(OpenApiError::Invalid(format!(
                    "unsupported `openapi` version {v}: 3.0 and 3.1 are supported"
                )))
            }
            None if root.contains_key("swagger") => {
                return Err(OpenApiError::Invalid(
                    "this is a Swagger 2.0 document; only OpenAPI 3.0 and 3.1 are supported \
                     (convert it, e.g. with swagger2openapi)"
                        .into(),
                ))
            }
            None => {
                return Err(OpenApiError::Invalid(
                    "no `openapi` version field: is this an OpenAPI document?".into(),
                ))
            }
        }
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
                        let auth = match security.for_operation(requirement) {
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
                        };
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

// ---------------------------------------------------------------------------------
// The document: references and schemas

struct Doc<'a> {
    root: &'a Value,
}

struct SchemaWalk {
    /// The references being expanded, outermost first.
    stack: Vec<String>,
    budget: usize,
    depth: usize,
}

impl<'a> Doc<'a> {
    /// The value a local reference points at.
    fn lookup(&self, r: &str, at: &str) -> Result<&'a Value, OpenApiError> {
        let Some(fragment) = r.strip_prefix('#') else {
            return Err(OpenApiError::Invalid(format!(
                "{at}: $ref {r:?} points outside this document; only local references \
                 (\"#/components/...\") are supported — bundle the spec into one file first"
            )));
        };
        let pointer = percent_decode(fragment);
        self.root.pointer(&pointer).ok_or_else(|| {
            OpenApiError::Invalid(format!(
                "{at}: $ref {r:?} points at nothing in the document"
            ))
        })
    }

    /// Follows `$ref`s from `v` (a path item, parameter or request body) to an object.
    fn deref(&self, mut v: &'a Value, at: &str) -> Result<&'a Value, OpenApiError> {
        let mut seen: Vec<&str> = Vec::new();
        while let Some(Value::String(r)) = v.get("$ref") {
            if seen.contains(&r.as_str()) {
                return Err(OpenApiError::Invalid(format!(
                    "{at}: $ref {r:?} refers to itself"
                )));
            }
            seen.push(r);
            v = self.lookup(r, at)?;
        }
        Ok(v)
    }

    /// The first server URL of `servers`, variables at their defaults, resolved
    /// against the spec's URL when relative. `None` when there are no servers (or only
    /// OpenAPI's default `/` and no spec URL to resolve it against).
    /// `top` marks the spec's own `servers`, whose absence means OpenAPI's default
    /// server `/`; an operation's or path item's absent `servers` defer to it.
    fn server_base(
        &self,
        servers: Option<&Value>,
        at: &str,
        top: bool,
        options: &OpenApiOptions,
    ) -> Result<Option<String>, OpenApiError> {
        let first = servers.and_then(Value::as_array).and_then(|a| a.first());
        let Some(server) = first else {
            return Ok(match &options.spec_url {
                Some(spec_url) if top => Some(resolve(spec_url, "/")?),
                _ => None,
            });
        };
        let mut url = server
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("/")
            .to_string();
        if let Some(Value::Object(vars)) = server.get("variables") {
            for (name, var) in vars {
                let default = match var.get("default") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => continue,
                };
                url = url.replace(&format!("{{{name}}}"), &default);
            }
        }
        if url.contains('{') {
            return Err(OpenApiError::Config(format!(
                "{at}: the server URL {url:?} has a variable without a default; pass base_url"
            )));
        }
        if url.starts_with("http://") || url.starts_with("https://") {
            return Ok(Some(url));
        }
        match &options.spec_url {
            Some(spec_url) => Ok(Some(resolve(spec_url, &url)?)),
            None => Err(OpenApiError::Config(format!(
                "{at}: the server URL {url:?} is relative and the spec was not fetched from \
                 a URL to resolve it against; pass base_url (e.g. \"https://host{}\")",
                if url.starts_with('/') {
                    url.as_str()
                } else {
                    "/"
                }
            ))),
        }
    }

    /// `v` as a self-contained JSON Schema 2020-12 (see the module docs).
    fn schema(&self, v: &Value, w: &mut SchemaWalk, at: &str) -> Result<Value, OpenApiError> {
        let Value::Object(m) = v else {
            return Ok(v.clone());
        };
        if w.depth >= MAX_SCHEMA_DEPTH {
            return Ok(json!({"description": "(nested too deeply to show)"}));
        }
        if let Some(Value::String(r)) = m.get("$ref") {
            let target = self.lookup(r, at)?;
            let short = r.rsplit('/').next().unwrap_or(r);
            if w.stack.iter().any(|s| s == r) || w.budget == 0 {
                let mut stub = Map::new();
                if let Some(t) = target.get("type") {
                    stub.insert("type".into(), t.clone());
                }
                let why = if w.budget == 0 {
                    format!("a {short} (not expanded: the schema is too large)")
                } else {
                    format!("a {short} (recursive: the same structure as the enclosing {short})")
                };
                stub.insert("description".into(), Value::String(why));
                return Ok(Value::Object(stub));
            }
            w.budget -= 1;
            w.stack.push(r.clone());
            w.depth += 1;
            let resolved = self.schema(target, w, at);
            w.stack.pop();
            w.depth -= 1;
            let mut resolved = resolved?;
            let siblings: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| k.as_str() != "$ref")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if siblings.is_empty() {
                return Ok(resolved);
            }
            let nullable = siblings.get("nullable") == Some(&Value::Bool(true));
            let sib = self.schema(&Value::Object(siblings), w, at)?;
            let annotations_only = sib.as_object().is_some_and(|s| {
                s.keys().all(|k| {
                    matches!(
                        k.as_str(),
                        "description"
                            | "title"
                            | "default"
                            | "examples"
                            | "deprecated"
                            | "readOnly"
                            | "writeOnly"
                            | "type"
                    )
                })
            });
            return Ok(match (&mut resolved, sib) {
                (Value::Object(o), Value::Object(s)) if annotations_only => {
                    for (k, v) in s {
                        if k != "type" {
                            o.insert(k, v);
                        }
                    }
                    if nullable {
                        make_nullable(o);
                    }
                    resolved
                }
                (_, sib) => json!({"allOf": [resolved, sib]}),
            });
        }
        w.depth += 1;
        let out = self.schema_object(m, w, at);
        w.depth -= 1;
        out.map(Value::Object)
    }

    fn schema_object(
        &self,
        m: &Map<String, Value>,
        w: &mut SchemaWalk,
        at: &str,
    ) -> Result<Map<String, Value>, OpenApiError> {
        let mut out = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" => {
                    if let Value::Object(props) = v {
                        let mut o = Map::new();
                        for (pk, pv) in props {
                            o.insert(pk.clone(), self.schema(pv, w, at)?);
                        }
                        out.insert(k.clone(), Value::Object(o));
                    }
                }
                "additionalProperties"
                | "items"
                | "additionalItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => {
                    let s = match v {
                        Value::Array(a) if k == "items" => {
                            // Draft-4-style tuple `items` → `prefixItems`.
                            let items = a
                                .iter()
                                .map(|i| self.schema(i, w, at))
                                .collect::<Result<Vec<_>, _>>()?;
                            out.insert("prefixItems".into(), Value::Array(items));
                            continue;
                        }
                        other => self.schema(other, w, at)?,
                    };
                    out.insert(k.clone(), s);
                }
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    if let Value::Array(a) = v {
                        let items = a
                            .iter()
                            .map(|i| self.schema(i, w, at))
                            .collect::<Result<Vec<_>, _>>()?;
                        out.insert(k.clone(), Value::Array(items));
                    }
                }
                "example" => {
                    if !m.contains_key("examples") {
                        out.insert("examples".into(), Value::Array(vec![v.clone()]));
                    }
                }
                "examples" => {
                    if v.is_array() {
                        out.insert(k.clone(), v.clone());
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => match v {
                    // 3.0 (draft 4): a flag on `minimum` / `maximum`.
                    Value::Bool(true) => {
                        let bound = if k == "exclusiveMinimum" {
                            "minimum"
                        } else {
                            "maximum"
                        };
                        if let Some(b) = m.get(bound) {
                            out.insert(k.clone(), b.clone());
                        }
                    }
                    Value::Bool(false) => {}
                    other => {
                        out.insert(k.clone(), other.clone());
                    }
                },
                "nullable" | "xml" | "externalDocs" | "discriminator" | "$id" | "$schema"
                | "$defs" | "definitions" | "$anchor" | "$dynamicAnchor" | "$comment" => {}
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        for (flag, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if m.get(flag) == Some(&Value::Bool(true)) && out.contains_key(flag) {
                out.remove(bound);
            }
        }
        if m.get("nullable") == Some(&Value::Bool(true)) {
            make_nullable(&mut out);
        }
        // The server sets read-only properties: the model must not be asked for them.
        let read_only: Vec<String> = match out.get("properties") {
            Some(Value::Object(props)) => props
                .iter()
                .filter(|(_, s)| s.get("readOnly") == Some(&Value::Bool(true)))
                .map(|(k, _)| k.clone())
                .collect(),
            _ => Vec::new(),
        };
        if !read_only.is_empty() {
            if let Some(Value::Object(props)) = out.get_mut("properties") {
                for k in &read_only {
                    props.remove(k);
                }
            }
            if let Some(Value::Array(req)) = out.get_mut("required") {
                req.retain(|r| !r.as_str().is_some_and(|r| read_only.iter().any(|k| k == r)));
            }
        }
        Ok(out)
    }
}

/// Lets `null` through a schema (3.0's `nullable: true`).
fn make_nullable(o: &mut Map<String, Value>) {
    let null = Value::String("null".into());
    match o.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            o.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(a)) if !a.contains(&null) => a.push(null),
        _ => {}
    }
    if let Some(Value::Array(e)) = o.get_mut("enum") {
        if !e.contains(&Value::Null) {
            e.push(Value::Null);
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn resolve(spec_url: &str, server: &str) -> Result<String, OpenApiError> {
    let base = reqwest::Url::parse(spec_url)
        .map_err(|e| OpenApiError::Config(format!("the spec URL {spec_url:?} is invalid: {e}")))?;
    base.join(server).map(|u| u.to_string()).map_err(|e| {
        OpenApiError::Config(format!(
            "cannot resolve the server URL {server:?} against {spec_url:?}: {e}"
        ))
    })
}

// ---------------------------------------------------------------------------------
// Operations

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Form,
    Simple,
    Label,
    Matrix,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

#[derive(Debug, Clone)]
struct Param {
    /// The argument's name (the property in the tool's schema).
    prop: String,
    /// The name on the wire.
    name: String,
    location: Location,
    style: Style,
    explode: bool,
    /// `content` instead of `schema`: the value is sent as JSON text.
    json: bool,
    /// `allowReserved`: reserved characters are sent unencoded in a query.
    allow_reserved: bool,
}

#[derive(Debug, Clone)]
enum BodyKind {
    Json,
    Form,
    Text,
    Multipart(Multipart),
}

/// How a `multipart/form-data` body's properties become parts.
#[derive(Debug, Clone, Default)]
struct Multipart {
    /// Properties sent as files (`format: binary`, `contentMediaType`): the
    /// argument's text is the file's content, the property name its file name.
    files: HashSet<String>,
    /// `encoding.<property>.contentType` from the spec (the first, when it lists
    /// several), checked to be a MIME type.
    content_types: std::collections::HashMap<String, String>,
}

/// One part of a multipart body, ready to send.
#[derive(Debug)]
struct PartSpec {
    name: String,
    data: Vec<u8>,
    file_name: Option<String>,
    content_type: Option<String>,
}

/// A request body: bytes with the Content-Type already set, or multipart parts.
enum Payload {
    Bytes(Vec<u8>),
    Multipart(Vec<PartSpec>),
}

fn is_mime(ct: &str) -> bool {
    reqwest::multipart::Part::text("").mime_str(ct).is_ok()
}

impl Multipart {
    /// The parts of `body` (an object): scalars as text parts, arrays of scalars as
    /// repeated parts, objects and arrays of objects as JSON parts (OpenAPI's default
    /// encodings), file properties as file parts.
    fn parts(&self, body: &Value) -> Result<Vec<PartSpec>, String> {
        let Value::Object(o) = body else {
            return Err("a multipart/form-data body must be an object of its fields".into());
        };
        let json_ct = || Some("application/json".to_string());
        let mut out = Vec::new();
        for (name, v) in o {
            let ct = self.content_types.get(name).cloned();
            let file = self.files.contains(name);
            let mut part = |data: Vec<u8>, ct: Option<String>| {
                out.push(PartSpec {
                    name: name.clone(),
                    data,
                    file_name: file.then(|| name.clone()),
                    content_type: ct.or_else(|| file.then(|| "application/octet-stream".into())),
                });
            };
            let as_json = |v: &Value| serde_json::to_vec(v).expect("a Value always serialises");
            match v {
                Value::Null => {}
                Value::Object(_) => part(as_json(v), ct.or_else(json_ct)),
                Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()) => {
                    part(as_json(v), ct.or_else(json_ct))
                }
                Value::Array(a) => {
                    for x in a {
                        part(scalar(x).into_bytes(), ct.clone());
                    }
                }
                other => part(scalar(other).into_bytes(), ct),
            }
        }
        Ok(out)
    }

    /// Learns the files and encodings from the resolved body schema and the media
    /// object, and says in the schema how a file is given.
    fn learn(&mut self, schema: &mut Value, media: &Value, here: &str) {
        if let Some(Value::Object(enc)) = media.get("encoding") {
            for (k, e) in enc {
                let Some(ct) = e.get("contentType").and_then(Value::as_str) else {
                    continue;
                };
                let first = ct.split(',').next().unwrap_or("").trim();
                if is_mime(first) && !first.contains('*') {
                    self.content_types.insert(k.clone(), first.to_string());
                } else {
                    log::warn!(
                        "openapi: {here}: encoding.{k}.contentType {ct:?} is not a MIME \
                         type; the part is sent with the default"
                    );
                }
            }
        }
        let Some(Value::Object(props)) = schema.get_mut("properties") else {
            return;
        };
        for (k, p) in props.iter_mut() {
            let Value::Object(p) = p else { continue };
            let binary = p.get("format").and_then(Value::as_str) == Some("binary")
                || p.contains_key("contentMediaType");
            if !binary {
                continue;
            }
            self.files.insert(k.clone());
            let note = "(sent as a file: this text is its content)";
            let text = match p.get("description").and_then(Value::as_str) {
                Some(d) if !d.trim().is_empty() => format!("{} {note}", d.trim()),
                _ => note.to_string(),
            };
            p.insert("description".into(), Value::String(text));
        }
    }
}

fn multipart_form(parts: Vec<PartSpec>) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for p in parts {
        let mut part = match p.content_type {
            // Every content type here passed `is_mime` (or is one of ours).
            Some(ct) if is_mime(&ct) => reqwest::multipart::Part::bytes(p.data)
                .mime_str(&ct)
                .expect("checked by is_mime"),
            _ => reqwest::multipart::Part::bytes(p.data),
        };
        if let Some(f) = p.file_name {
            part = part.file_name(f);
        }
        form = form.part(p.name, part);
    }
    form
}

#[derive(Debug, Clone)]
struct Body {
    content_type: String,
    kind: BodyKind,
}

struct Operation {
    name: String,
    description: String,
    parameters: Value,
    params: Vec<Param>,
    body: Option<Body>,
}

enum Built {
    Op(Box<Operation>),
    Skip(String),
}

fn build_operation(
    doc: &Doc<'_>,
    method: &Method,
    path: &str,
    item: &Map<String, Value>,
    op: &Map<String, Value>,
    here: &str,
) -> Result<Built, OpenApiError> {
    let str_of = |k: &str| {
        op.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("")
    };
    let raw_name = match str_of("operationId") {
        "" => format!("{}_{path}", method.as_str().to_ascii_lowercase()),
        id => id.to_string(),
    };
    // Runs of `_` made one here; the length rule (cut, hash) is the shared one.
    let name = crate::tool::name::sanitize(&sanitize(&raw_name, usize::MAX));

    let mut description = String::new();
    if op.get("deprecated") == Some(&Value::Bool(true)) {
        description.push_str("(Deprecated) ");
    }
    let (summary, long) = (str_of("summary"), str_of("description"));
    description.push_str(summary);
    if !long.is_empty() && long != summary {
        if !summary.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(long);
    }
    if summary.is_empty() && long.is_empty() {
        description.push_str(&format!("{} {path}", method.as_str()));
    }
    let description = cut_chars(&description, MAX_DESCRIPTION_CHARS);

    // Path-level parameters, overridden by the operation's (same name and location).
    let mut raw: Vec<(String, String, &Map<String, Value>)> = Vec::new();
    for list in [item.get("parameters"), op.get("parameters")] {
        let Some(Value::Array(list)) = list else {
            continue;
        };
        for p in list {
            let p = doc.deref(p, here)?;
            let Some(p) = p.as_object() else { continue };
            let (Some(n), Some(l)) = (
                p.get("name").and_then(Value::as_str),
                p.get("in").and_then(Value::as_str),
            ) else {
                log::warn!("openapi: {here}: a parameter without `name` / `in` is ignored");
                continue;
            };
            raw.retain(|(rn, rl, _)| !(rn == n && rl == l));
            raw.push((n.to_string(), l.to_string(), p));
        }
    }

    let mut taken: HashSet<String> = HashSet::new();
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut params = Vec::new();

    // The request body first: it owns the `body` argument.
    let mut body = None;
    let mut body_schema = None;
    if let Some(rb) = op.get("requestBody") {
        let rb = doc.deref(rb, here)?;
        let body_required = rb.get("required") == Some(&Value::Bool(true));
        let content = rb.get("content").and_then(Value::as_object);
        match content.and_then(choose_media) {
            Some((content_type, mut kind, media)) => {
                let mut walk = SchemaWalk {
                    stack: Vec::new(),
                    budget: REF_BUDGET,
                    depth: 0,
                };
                let mut s = match media.get("schema") {
                    Some(s) => doc.schema(s, &mut walk, here)?,
                    None => match kind {
                        BodyKind::Text => json!({"type": "string"}),
                        _ => json!({}),
                    },
                };
                if let BodyKind::Multipart(m) = &mut kind {
                    m.learn(&mut s, media, here);
                }
                if let (Some(d), Value::Object(o)) =
                    (rb.get("description").and_then(Value::as_str), &mut s)
                {
                    o.insert("description".into(), Value::String(d.to_string()));
                }
                taken.insert("body".into());
                if body_required {
                    required.push(Value::String("body".into()));
                }
                body_schema = Some(s);
                body = Some(Body { content_type, kind });
            }
            None => {
                let types: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
                if body_required {
                    return Ok(Built::Skip(format!(
                        "its request body is required and none of its media types {types:?} \
                         is supported (JSON, form, multipart, text)"
                    )));
                }
            }
        }
    }

    for (pname, loc, p) in &raw {
        let location = match loc.as_str() {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            other => {
                log::warn!("openapi: {here}: parameter {pname:?} in {other:?} is ignored");
                continue;
            }
        };
        if location == Location::Header
            && ["accept", "content-type", "authorization"]
                .contains(&pname.to_ascii_lowercase().as_str())
        {
            continue;
        }
        let mut walk = SchemaWalk {
            stack: Vec::new(),
            budget: REF_BUDGET,
            depth: 0,
        };
        let (schema, json_content) = match (p.get("schema"), p.get("content")) {
            (Some(s), _) => (doc.schema(s, &mut walk, here)?, false),
            (None, Some(Value::Object(c))) => match c.values().next().and_then(|m| m.get("schema"))
            {
                Some(s) => (doc.schema(s, &mut walk, here)?, true),
                None => (json!({}), true),
            },
            _ => (json!({"type": "string"}), false),
        };
        let mut schema = match schema {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        let prop = unique_prop(pname, location, &mut taken);
        let mut note = format!("({} parameter", location.as_str());
        if &prop != pname {
            note.push_str(&format!(" {pname:?}"));
        }
        note.push(')');
        let text = match p
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| schema.get("description").and_then(Value::as_str))
        {
            Some(d) if !d.trim().is_empty() => format!("{} {note}", d.trim()),
            _ => note,
        };
        schema.insert("description".into(), Value::String(text));
        if p.get("deprecated") == Some(&Value::Bool(true)) {
            schema.insert("deprecated".into(), Value::Bool(true));
        }
        if let Some(ex) = p.get("example") {
            schema
                .entry("examples")
                .or_insert_with(|| Value::Array(vec![ex.clone()]));
        }
        let style = match p.get("style").and_then(Value::as_str) {
            Some("form") => Style::Form,
            Some("simple") => Style::Simple,
            Some("label") => Style::Label,
            Some("matrix") => Style::Matrix,
            Some("spaceDelimited") => Style::SpaceDelimited,
            Some("pipeDelimited") => Style::PipeDelimited,
            Some("deepObject") => Style::DeepObject,
            _ => match location {
                Location::Query | Location::Cookie => Style::Form,
                Location::Path | Location::Header => Style::Simple,
            },
        };
        let explode = match p.get("explode") {
            Some(Value::Bool(b)) => *b,
            _ => style == Style::Form,
        };
        if location == Location::Path || p.get("required") == Some(&Value::Bool(true)) {
            required.push(Value::String(prop.clone()));
        }
        properties.insert(prop.clone(), Value::Object(schema));
        params.push(Param {
            prop,
            name: pname.clone(),
            location,
            style,
            explode,
            json: json_content,
            allow_reserved: p.get("allowReserved") == Some(&Value::Bool(true)),
        });
    }

    // A `{placeholder}` of the path no parameter declares: ask for it anyway.
    for placeholder in path_placeholders(path) {
        if params
            .iter()
            .any(|p| p.location == Location::Path && p.name == placeholder)
        {
            continue;
        }
        let prop = unique_prop(&placeholder, Location::Path, &mut taken);
        properties.insert(
            prop.clone(),
            json!({"type": "string", "description": "(path parameter)"}),
        );
        required.push(Value::String(prop.clone()));
        params.push(Param {
            prop,
            name: placeholder,
            location: Location::Path,
            style: Style::Simple,
            explode: false,
            json: false,
            allow_reserved: false,
        });
    }

    if let Some(s) = body_schema {
        properties.insert("body".into(), s);
    }
    let mut parameters = Map::new();
    parameters.insert("type".into(), "object".into());
    parameters.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        parameters.insert("required".into(), Value::Array(required));
    }
    parameters.insert("additionalProperties".into(), Value::Bool(false));
    Ok(Built::Op(Box::new(Operation {
        name,
        description,
        parameters: Value::Object(parameters),
        params,
        body,
    })))
}

/// The media type a request body is sent as: JSON first, then form, then text.
fn choose_media(content: &Map<String, Value>) -> Option<(String, BodyKind, &Value)> {
    let essence = |k: &str| {
        k.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let json_like = |e: &str| {
        e == "application/json"
            || e.ends_with("+json")
            || e.ends_with("/json")
            || e == "*/*"
            || e == "application/*"
    };
    let pick = |pred: &dyn Fn(&str) -> bool| content.iter().find(|(k, _)| pred(&essence(k)));
    if let Some((k, v)) = pick(&|e| e == "application/json") {
        return Some((k.clone(), BodyKind::Json, v));
    }
    if let Some((k, v)) = pick(&json_like) {
        let e = essence(k);
        let ct = if e.contains('*') {
            "application/json".into()
        } else {
            k.clone()
        };
        return Some((ct, BodyKind::Json, v));
    }
    if let Some((k, v)) = pick(&|e| e == "application/x-www-form-urlencoded") {
        return Some((k.clone(), BodyKind::Form, v));
    }
    if let Some((k, v)) = pick(&|e| e == "multipart/form-data") {
        return Some((k.clone(), BodyKind::Multipart(Multipart::default()), v));
    }
    if let Some((k, v)) = pick(&|e| e.starts_with("text/") && !e.contains('*')) {
        return Some((k.clone(), BodyKind::Text, v));
    }
    None
}

fn path_placeholders(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(i) = rest.find('{') {
        let Some(j) = rest[i..].find('}') else { break };
        let name = &rest[i + 1..i + j];
        if !name.is_empty() && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
        rest = &rest[i + j + 1..];
    }
    out
}

/// `[a-zA-Z0-9_-]{1,max}`: other characters become `_`, runs of `_` one.
fn sanitize(raw: &str, max: usize) -> String {
    let mut s = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && s.ends_with('_') {
            continue;
        }
        s.push(c);
    }
    let s = s.trim_matches('_');
    let mut s = if s.is_empty() {
        "operation".to_string()
    } else {
        s.to_string()
    };
    s.truncate(max);
    s
}

/// A property name for a parameter: its own when it fits `[a-zA-Z0-9_.-]{1,64}` and is
/// free, else a sanitised one, then one with the location, then a number.
fn unique_prop(name: &str, location: Location, taken: &mut HashSet<String>) -> String {
    let fits = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    let base = if fits {
        name.to_string()
    } else {
        sanitize(name, 56)
    };
    let mut candidate = base.clone();
    if taken.contains(&candidate) {
        candidate = format!("{base}_{}", location.as_str());
    }
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

// ---------------------------------------------------------------------------------
// Execution

/// The HTTP client and the toolset's headers, shared by its tools.
struct Http {
    client: reqwest::Client,
    headers: HeaderMap,
    /// Credential values (and their token halves) to scrub from results and errors;
    /// grows when an OAuth2 token is fetched.
    secrets: RwLock<Secrets>,
    /// The hosts a redirect may lead to (lowercase): see
    /// [`OpenApiOptions::allowed_hosts`]. Filled as the spec is read.
    hosts: Arc<RwLock<HashSet<String>>>,
}

/// The host of `url`, lowercase, if it has one.
fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
}

/// Follows a redirect only to an allowed host (and at most 10 of them).
fn redirect_policy(hosts: Arc<RwLock<HashSet<String>>>) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let host = attempt
            .url()
            .host_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let allowed = hosts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&host);
        if !allowed {
            let e = format!(
                "the server redirected to host `{host}`, which is not a host of the spec's \
                 servers, of base_url or of the spec's URL; the redirect was not followed \
                 (pass allowed_hosts=[\"{host}\"] to allow it)"
            );
            attempt.error(e)
        } else if attempt.previous().len() >= 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "authorization",
        "cookie",
        "key",
        "token",
        "secret",
        "password",
        "session",
        "signature",
        "credential",
        "auth",
    ]
    .iter()
    .any(|w| n.contains(w))
}

impl Http {
    fn new(options: &OpenApiOptions) -> Result<Self, OpenApiError> {
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        for (k, v) in &options.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| OpenApiError::Config(format!("invalid header name {k:?}")))?;
            let secret = is_secret_header(k);
            let mut value = HeaderValue::from_str(v).map_err(|_| {
                // The value may be a credential: name the header only.
                OpenApiError::Config(format!(
                    "the value of header {k:?} is not a valid header value"
                ))
            })?;
            if secret {
                value.set_sensitive(true);
                for s in std::iter::once(v.as_str()).chain(v.split_once(' ').map(|(_, t)| t.trim()))
                {
                    secrets.push(s.to_string());
                }
            }
            headers.append(name, value);
        }
        for (_, c) in &options.credentials {
            secrets.extend(c.secrets());
        }
        let secrets = RwLock::new(Secrets::new(secrets, []));
        let hosts: HashSet<String> = options
            .allowed_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        let hosts = Arc::new(RwLock::new(hosts));
        let client = client_builder()
            .redirect(redirect_policy(hosts.clone()))
            .connect_timeout(
                options
                    .timeout
                    .unwrap_or(DEFAULT_TIMEOUT)
                    .min(Duration::from_secs(30)),
            )
            .build()
            .map_err(|e| OpenApiError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Http {
            client,
            headers,
            secrets,
            hosts,
        })
    }

    /// Lets redirects lead to `url`'s host.
    fn allow_host_of(&self, url: &str) {
        if let Some(h) = host_of(url) {
            self.hosts
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(h);
        }
    }

    fn redact(&self, text: &str) -> String {
        self.secrets().redact(text)
    }

    fn secrets(&self) -> Secrets {
        self.secrets
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

struct Shared {
    http: Http,
    timeout: Option<Duration>,
    max_output_bytes: usize,
}

/// One operation as a tool.
pub struct OpenApiTool {
    def: ToolDefinition,
    method: Method,
    path: String,
    base: String,
    params: Vec<Param>,
    body: Option<Body>,
    auth: OpAuth,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OpenApiTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiTool")
            .field("name", &self.def.name)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// Characters sent as they are in a URL component (RFC 3986 "unreserved").
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 reserved characters, kept by `allowReserved`.
fn reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

fn encode(s: &str, keep_reserved: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if unreserved(b) || (keep_reserved && reserved(b)) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A scalar's text on the wire (strings as they are, the rest as JSON).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl OpenApiTool {
    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The path template, as in the spec (`/pets/{petId}`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The base URL this operation is sent to.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn invalid(&self, reason: String) -> ToolError {
        ToolError::InvalidArgs {
            tool: self.def.name.clone(),
            reason,
        }
    }

    /// `(url, headers, body)` for a call with `args`.
    #[allow(clippy::type_complexity)]
    fn prepare(&self, args: &Value) -> Result<(String, HeaderMap, Option<Payload>), ToolError> {
        let empty = Map::new();
        let args = args.as_object().unwrap_or(&empty);
        let mut path = self.path.clone();
        let mut query: Vec<String> = Vec::new();
        let mut headers = HeaderMap::new();
        let mut cookies: Vec<String> = Vec::new();
        for p in &self.params {
            let v = match args.get(&p.prop) {
                None | Some(Value::Null) => {
                    if p.location == Location::Path {
                        return Err(self.invalid(format!("missing path parameter {:?}", p.prop)));
                    }
                    continue;
                }
                Some(v) => v,
            };
            let v = if p.json {
                Value::String(v.to_string())
            } else {
                v.clone()
            };
            match p.location {
                Location::Path => {
                    let text = serialize_path(&p.name, &v, p.style, p.explode);
                    path = path.replace(&format!("{{{}}}", p.name), &text);
                }
                Location::Query => serialize_query(p, &v, &mut query),
                Location::Header => {
                    let text = serialize_simple(&v, p.explode, |s| s.to_string());
                    let name = HeaderName::from_bytes(p.name.as_bytes()).map_err(|_| {
                        self.invalid(format!("{:?} is not a valid header name", p.name))
                    })?;
                    let value = HeaderValue::from_str(&text).map_err(|_| {
                        self.invalid(format!(
                            "the value of header parameter {:?} is not a valid header value \
                             (no line breaks or control characters)",
                            p.prop
                        ))
                    })?;
                    headers.insert(name, value);
                }
                Location::Cookie => {
                    let text = serialize_simple(&v, p.explode, |s| encode(s, false));
                    cookies.push(format!("{}={text}", p.name));
                }
            }
        }
        for (apply, _) in &self.auth.0 {
            match &**apply {
                Apply::Header(name, value) => {
                    headers.insert(name.clone(), value.clone());
                }
                Apply::Query(q) => query.push(q.clone()),
                Apply::Cookie(c) => cookies.push(c.clone()),
                Apply::OAuth2(_) => {} // fetched when the call is sent
            }
        }
        if !cookies.is_empty() {
            let mut value = HeaderValue::from_str(&cookies.join("; "))
                .map_err(|_| self.invalid("a cookie value is not valid".into()))?;
            value.set_sensitive(
                self.auth
                    .0
                    .iter()
                    .any(|(a, _)| matches!(**a, Apply::Cookie(_))),
            );
            headers.insert(COOKIE, value);
        }
        let (base, base_query) = match self.base.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (self.base.as_str(), None),
        };
        let mut url = String::with_capacity(base.len() + path.len() + 32);
        url.push_str(base.trim_end_matches('/'));
        if !path.starts_with('/') {
            url.push('/');
        }
        url.push_str(&path);
        let all_query: Vec<&str> = base_query
            .into_iter()
            .filter(|q| !q.is_empty())
            .chain(query.iter().map(String::as_str))
            .collect();
        if !all_query.is_empty() {
            url.push('?');
            url.push_str(&all_query.join("&"));
        }
        let body = match (&self.body, args.get("body")) {
            (
                Some(Body {
                    kind: BodyKind::Multipart(m),
                    ..
                }),
                Some(v),
            ) => {
                // reqwest writes the Content-Type, with its boundary.
                Some(Payload::Multipart(
                    m.parts(v).map_err(|why| self.invalid(why))?,
                ))
            }
            (Some(b), Some(v)) => {
                headers.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_str(&b.content_type)
                        .unwrap_or(HeaderValue::from_static("application/json")),
                );
                Some(Payload::Bytes(match &b.kind {
                    BodyKind::Json => serde_json::to_vec(v).expect("a Value always serialises"),
                    BodyKind::Text => scalar(v).into_bytes(),
                    BodyKind::Form | BodyKind::Multipart(_) => form_body(v).into_bytes(),
                }))
            }
            _ => None,
        };
        Ok((url, headers, body))
    }

    async fn send(
        &self,
        url: String,
        mut headers: HeaderMap,
        body: Option<Payload>,
    ) -> Result<ToolOutput, ToolError> {
        let shared = &self.shared;
        let http = &shared.http;
        for (apply, scopes) in &self.auth.0 {
            if let Apply::OAuth2(source) = &**apply {
                let timeout = shared.timeout.unwrap_or(DEFAULT_TIMEOUT);
                let value = source
                    .authorization(&http.client, scopes, timeout, &http.secrets)
                    .await
                    .map_err(|why| ToolError::failed(self.def.name.clone(), why))?;
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
        }
        let secrets = http.secrets();
        let mut rb = http
            .client
            .request(self.method.clone(), &url)
            .headers(http.headers.clone())
            .headers(headers);
        if !http.headers.contains_key(ACCEPT) {
            rb = rb.header(ACCEPT, "application/json, */*;q=0.5");
        }
        match body {
            Some(Payload::Bytes(b)) => rb = rb.body(b),
            Some(Payload::Multipart(parts)) => rb = rb.multipart(multipart_form(parts)),
            None => {}
        }
        if let Some(t) = shared.timeout {
            rb = rb.timeout(t);
        }
        let fail = |e: reqwest::Error| {
            if e.is_timeout() {
                ToolError::Timeout {
                    tool: self.def.name.clone(),
                    seconds: shared.timeout.unwrap_or_default().as_secs_f64(),
                }
            } else {
                ToolError::failed(
                    self.def.name.clone(),
                    http.redact(&format!(
                        "{} {url}: the request failed: {}",
                        self.method,
                        error_chain(&e)
                    )),
                )
            }
        };
        let mut resp = rb.send().await.map_err(fail)?;
        let status = resp.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            for (apply, scopes) in &self.auth.0 {
                if let Apply::OAuth2(source) = &**apply {
                    source.invalidate(scopes).await;
                }
            }
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let keep = shared.max_output_bytes.saturating_mul(4).max(1 << 20);
        let mut bytes = Vec::new();
        let mut total = 0usize;
        let mut complete = true;
        while let Some(chunk) = resp.chunk().await.map_err(fail)? {
            total += chunk.len();
            if bytes.len() < keep {
                let room = keep - bytes.len();
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            if total > MAX_READ_BYTES {
                complete = false;
                break;
            }
        }
        // Scrubbed before the body is cut for the model (`max_output_bytes`): a
        // secret cut in half would not be found afterwards.
        if !secrets.is_empty() {
            if let Ok(t) = std::str::from_utf8(&bytes) {
                let r = if bytes.len() < total {
                    secrets.redact_cut(t)
                } else {
                    secrets.redact(t)
                };
                total = total - bytes.len() + r.len();
                bytes = r.into_bytes();
            }
        }
        let rendered = render_body(
            &bytes,
            total,
            complete && bytes.len() == total,
            &content_type,
            shared.max_output_bytes,
        );
        let line = format!("HTTP {}", status_line(status));
        let text = if rendered.text.is_empty() {
            line
        } else {
            format!("{line}\n{}", rendered.text)
        };
        let text = http.redact(&text);
        if !status.is_success() {
            return Err(ToolError::failed(self.def.name.clone(), text));
        }
        let body = match rendered.value {
            Some(v) if secrets.is_empty() => v,
            Some(v) => serde_json::from_str(&http.redact(&v.to_string())).unwrap_or(v),
            None => Value::String(http.redact(&rendered.raw)),
        };
        Ok(ToolOutput {
            content: Content::Text(text),
            artifact: Some(json!({
                "status": status.as_u16(),
                "content_type": content_type,
                "body": body,
            })),
            ..Default::default()
        })
    }
}

#[async_trait]
impl Tool for OpenApiTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (url, headers, body) = self.prepare(&args)?;
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => Err(ToolError::cancelled(self.def.name.clone())),
            r = self.send(url, headers, body) => r,
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.shared.timeout
    }
}

/// `simple` style: arrays and objects comma-joined (objects as `k=v` when exploded).
fn serialize_simple(v: &Value, explode: bool, enc: impl Fn(&str) -> String) -> String {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|i| enc(&scalar(i)))
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(o) => o
            .iter()
            .map(|(k, i)| {
                if explode {
                    format!("{}={}", enc(k), enc(&scalar(i)))
                } else {
                    format!("{},{}", enc(k), enc(&scalar(i)))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        other => enc(&scalar(other)),
    }
}

fn serialize_path(name: &str, v: &Value, style: Style, explode: bool) -> String {
    let enc = |s: &str| encode(s, false);
    match style {
        Style::Label => {
            let sep = if explode { "." } else { "," };
            let body = match v {
                Value::Array(a) => a
                    .iter()
                    .map(|i| enc(&scalar(i)))
                    .collect::<Vec<_>>()
                    .join(sep),
                _ => serialize_simple(v, explode, enc).replace(',', sep),
            };
            format!(".{body}")
        }
        Style::Matrix => match (v, explode) {
            (Value::Array(a), true) => a
                .iter()
                .map(|i| format!(";{name}={}", enc(&scalar(i))))
                .collect(),
            (Value::Object(o), true) => o
                .iter()
                .map(|(k, i)| format!(";{}={}", enc(k), enc(&scalar(i))))
                .collect(),
            _ => format!(";{name}={}", serialize_simple(v, false, enc)),
        },
        _ => serialize_simple(v, explode, enc),
    }
}

fn serialize_query(p: &Param, v: &Value, out: &mut Vec<String>) {
    let enc = |s: &str| encode(s, p.allow_reserved);
    let key = encode(&p.name, false);
    match (v, p.style) {
        (Value::Object(o), Style::DeepObject) => {
            for (k, i) in o {
                out.push(format!(
                    "{key}%5B{}%5D={}",
                    encode(k, false),
                    enc(&scalar(i))
                ));
            }
        }
        (Value::Array(a), Style::Form) if p.explode => {
            for i in a {
                out.push(format!("{key}={}", enc(&scalar(i))));
            }
        }
        (Value::Object(o), Style::Form) if p.explode => {
            for (k, i) in o {
                out.push(format!("{}={}", encode(k, false), enc(&scalar(i))));
            }
        }
        (Value::Array(a), Style::SpaceDelimited | Style::PipeDelimited) => {
            let sep = if p.style == Style::SpaceDelimited {
                "%20"
            } else {
                "|"
            };
            let joined = a
                .iter()
                .map(|i| enc(&scalar(i)))
                .collect::<Vec<_>>()
                .join(sep);
            out.push(format!("{key}={joined}"));
        }
        _ => out.push(format!("{key}={}", serialize_simple(v, false, enc))),
    }
}

/// `application/x-www-form-urlencoded` from an object (arrays as repeated keys,
/// nested objects as JSON text).
fn form_body(v: &Value) -> String {
    let enc = |s: &str| encode(s, false);
    match v {
        Value::Object(o) => {
            let mut parts = Vec::new();
            for (k, i) in o {
                match i {
                    Value::Null => {}
                    Value::Array(a) => {
                        for x in a {
                            parts.push(format!("{}={}", enc(k), enc(&scalar(x))));
                        }
                    }
                    other => parts.push(format!("{}={}", enc(k), enc(&scalar(other)))),
                }
            }
            parts.join("&")
        }
        other => scalar(other),
    }
}

struct Rendered {
    /// What the model reads (already cut to the limit).
    text: String,
    /// The body parsed, when it is JSON and was read whole.
    value: Option<Value>,
    /// The body's text (for the artifact when not JSON).
    raw: String,
}

fn render_body(
    bytes: &[u8],
    total: usize,
    complete: bool,
    content_type: &str,
    max: usize,
) -> Rendered {
    let ct = content_type.to_ascii_lowercase();
    let looks_json = ct.contains("json")
        || (!ct.starts_with("text/html")
            && matches!(
                bytes.iter().find(|b| !b.is_ascii_whitespace()),
                Some(b'{' | b'[')
            ));
    let value = if complete && looks_json && !bytes.is_empty() {
        serde_json::from_slice::<Value>(bytes).ok()
    } else {
        None
    };
    let (full, raw) = match &value {
        Some(v @ (Value::Object(_) | Value::Array(_))) => {
            (ToolOutput::json(v.clone()).content.text(), String::new())
        }
        Some(v) => (v.to_string(), String::new()),
        None => {
            let text = match std::str::from_utf8(bytes) {
                Ok(s) => s.to_string(),
                // A body cut inside a character: keep the valid start.
                Err(e) if !complete && e.error_len().is_none() => {
                    String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned()
                }
                Err(_) => {
                    let ct = if content_type.is_empty() {
                        "no content type"
                    } else {
                        content_type
                    };
                    let s = format!("[binary body: {total} bytes, {ct}]");
                    return Rendered {
                        text: s.clone(),
                        value: None,
                        raw: s,
                    };
                }
            };
            (text.clone(), text)
        }
    };
    let mut cut = full.len().min(max);
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    let shown_from_body = if value.is_some() { None } else { Some(cut) };
    let omitted = match shown_from_body {
        // Raw text: what was not shown of what arrived.
        Some(shown) => total.saturating_sub(shown),
        None => full.len() - cut,
    };
    let mut text = full[..cut].to_string();
    if omitted > 0 {
        let more = if complete { "" } else { "more than " };
        text.push_str(&format!("\n[truncated: {more}{omitted} bytes omitted]"));
    }
    Rendered { text, value, raw }
}

fn status_line(status: reqwest::StatusCode) -> String {
    match status.canonical_reason() {
        Some(r) => format!("{} {r}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !message.contains(&t) {
            message.push_str(": ");
            message.push_str(&t);
        }
        src = s.source();
    }
    message
}

/// At most `max` characters of `s`, with `…` when cut.
fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(1)) {
        Some((i, _)) if s[i..].chars().count() > 1 => format!("{}…", &s[..i]),
        _ => s.to_string(),
    }
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
