//! MCP tool sources: the tools of a [Model Context Protocol] server as ironloop tools.
//!
//! An [`McpToolset`] opens **one** long-lived session per server — a child process
//! spoken to over its stdin/stdout ([`McpToolset::stdio`]) or a streamable-HTTP
//! endpoint ([`McpToolset::http`]) — does the `initialize` handshake once, lists the
//! server's tools and hands them out as `Arc<dyn Tool>`s. Every call of every one of
//! them is a `tools/call` request on that shared session: calls in flight at the same
//! time are multiplexed over it (JSON-RPC ids), never a process per call.
//!
//! The tools behave like any other under the [`Executor`](crate::Executor):
//!
//! * the tool's `inputSchema` is its `parameters` (arguments are validated before the
//!   request is sent); an optional prefix (`prefix__tool`) keeps names of several
//!   servers apart;
//! * a result with `isError: true` is [`ToolError::Failed`] carrying the result's text;
//!   a JSON-RPC error, a closed connection or an unsupported response is
//!   [`ToolError::Failed`] naming the server and the tool;
//! * content blocks become text: text blocks joined by newlines, embedded text
//!   resources as their text, images / audio / blobs / links as a short note;
//!   `structuredContent` is kept as the output's artifact (and is the text when the
//!   result has no content blocks);
//! * a timeout or a cancelled run ([`ToolContext::cancel`]) drops the request, and the
//!   SDK tells the server with `notifications/cancelled`; the session stays usable.
//!
//! [`McpToolset::close`] ends the session: for stdio the child's stdin is closed, then
//! (if it has not exited within a few seconds) it gets `SIGTERM`, then `SIGKILL`. The
//! child runs in a process group of its own, so launchers (`npx`, `uvx`, `sh -c`)
//! take their children with them. Dropping the last handle without `close()` does the
//! same in the background (the SDK kills the process when its transport is dropped).
//!
//! Beyond tools: resources and prompts ([`McpSession::list_resources`],
//! [`McpSession::read_resource`], [`McpSession::list_prompts`],
//! [`McpSession::get_prompt`]) in wire form; a server's progress notifications for a
//! call reach that call's [`ToolContext::progress`]; `notifications/tools/list_changed`
//! makes [`McpToolset::tools`] list the tools again; a stdio server that exited is
//! started again on the next call (at most [`MAX_RESTARTS`] times a minute, each
//! logged), while the call that was in flight when it died fails as before.
//!
//! The SDK (`rmcp`, pinned to one major version) stays behind the small
//! [`McpSession`] trait: the tools only see `list_tools` / `call_tool` / `close`, and
//! a test or another transport can implement it.
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, GetPromptRequestParams, Implementation,
    NumberOrString, ProgressNotificationParam, ProgressToken, ReadResourceRequestParams,
    ServerResult,
};
use rmcp::service::RunningService;
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};

mod child;
mod http_client;
mod message_limit;

pub use message_limit::DEFAULT_MAX_MESSAGE_BYTES;

use crate::message::Content;
use crate::secrets::Secrets;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// How long `close()` waits for the session (and a stdio server's process) to end
/// before it gives up waiting; the process is killed in any case.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a stdio server that exited is started again within a minute; past that
/// the session stays closed (a server that keeps dying is broken, not unlucky).
pub const MAX_RESTARTS: usize = 3;

/// Why an MCP operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or reached, or the handshake failed.
    #[error("cannot connect to the MCP server {server}: {reason}")]
    Connect { server: String, reason: String },
    /// The server answered a request with a JSON-RPC error.
    #[error("the MCP server {server} returned an error: {message} (code {code})")]
    Server {
        server: String,
        code: i32,
        message: String,
    },
    /// The connection is gone (closed by us, or the server exited).
    #[error(
        "the MCP server {server} is not connected (the session is closed or the server exited)"
    )]
    Closed { server: String },
    /// The request was cancelled by the caller.
    #[error("the request to the MCP server {server} was cancelled")]
    Cancelled { server: String },
    /// Anything else the SDK reported (transport errors, unexpected responses).
    #[error("MCP server {server}: {reason}")]
    Protocol { server: String, reason: String },
    /// The server's answer was over the message size limit and was not read.
    #[error(
        "the MCP server {server} sent {}, over the limit of {limit} bytes, and it was not \
         read; if its results are this large, raise the limit (`max_message_bytes`)",
        match bytes { Some(b) => format!("a message of {b} bytes"), None => "a message".into() }
    )]
    TooLarge {
        server: String,
        /// The message's size, when it was counted (over stdio).
        bytes: Option<u64>,
        limit: usize,
    },
}

impl McpError {
    /// This error with every one of `secrets` replaced in its texts.
    pub(crate) fn redact(self, secrets: &Secrets) -> Self {
        if secrets.is_empty() {
            return self;
        }
        let r = |t: String| secrets.redact(&t);
        match self {
            McpError::Connect { server, reason } => McpError::Connect {
                server: r(server),
                reason: r(reason),
            },
            McpError::Server {
                server,
                code,
                message,
            } => McpError::Server {
                server: r(server),
                code,
                message: r(message),
            },
            McpError::Closed { server } => McpError::Closed { server: r(server) },
            McpError::Cancelled { server } => McpError::Cancelled { server: r(server) },
            McpError::Protocol { server, reason } => McpError::Protocol {
                server: r(server),
                reason: r(reason),
            },
            McpError::TooLarge {
                server,
                bytes,
                limit,
            } => McpError::TooLarge {
                server: r(server),
                bytes,
                limit,
            },
        }
    }
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The `inputSchema` (a JSON Schema object).
    pub input_schema: Value,
}

/// The result of a `tools/call`, in wire form.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpCallResult {
    /// The content blocks, as the protocol writes them (`{"type": "text", ...}`).
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

/// One session with one MCP server: what [`McpToolset`]'s tools need of it.
///
/// Implementations must allow concurrent `call_tool`s (they are multiplexed over the
/// one session), and dropping a `call_tool` future — or cancelling `cancel` — must
/// abandon that request (telling the server when the protocol allows).
#[async_trait]
pub trait McpSession: Send + Sync {
    /// A short name of the server for messages: its announced name, else the command
    /// or URL.
    fn server_name(&self) -> &str;

    /// The process id of a stdio server (the leader of its process group).
    fn pid(&self) -> Option<u32> {
        None
    }

    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError>;

    /// Whether the server said its tools changed (`notifications/tools/list_changed`)
    /// since the last call of this method.
    fn take_tools_changed(&self) -> bool {
        false
    }

    /// `resources/list`, every page: the resources in wire form
    /// (`{"uri", "name", "mimeType", ...}`).
    async fn list_resources(&self) -> Result<Vec<Value>, McpError> {
        Err(self.unsupported("resources"))
    }

    /// `resources/read`: the resource's contents in wire form (`{"uri", "text"}` or
    /// `{"uri", "blob"}`).
    async fn read_resource(&self, _uri: &str) -> Result<Vec<Value>, McpError> {
        Err(self.unsupported("resources"))
    }

    /// `prompts/list`, every page, in wire form (`{"name", "description", "arguments"}`).
    async fn list_prompts(&self) -> Result<Vec<Value>, McpError> {
        Err(self.unsupported("prompts"))
    }

    /// `prompts/get`: `{"description", "messages": [{"role", "content"}, ...]}`.
    async fn get_prompt(
        &self,
        _name: &str,
        _arguments: Map<String, Value>,
    ) -> Result<Value, McpError> {
        Err(self.unsupported("prompts"))
    }

    #[doc(hidden)]
    fn unsupported(&self, what: &str) -> McpError {
        McpError::Protocol {
            server: self.server_name().to_owned(),
            reason: format!("this session does not offer {what}"),
        }
    }

    /// Calls `name`; `ctx.cancel` abandons the request, and the server's progress
    /// notifications for it go to `ctx.progress`.
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<McpCallResult, McpError>;

    /// Ends the session (and a stdio server's process). Idempotent; calls made
    /// afterwards fail with [`McpError::Closed`].
    async fn close(&self) -> Result<(), McpError>;

    fn is_closed(&self) -> bool;
}

/// A server run as a child process, spoken to over its stdin / stdout.
#[derive(Debug, Clone, Default)]
pub struct StdioServer {
    pub command: String,
    pub args: Vec<String>,
    /// Set on top of the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl StdioServer {
    pub fn new(command: impl Into<String>) -> Self {
        StdioServer {
            command: command.into(),
            ..Default::default()
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    fn label(&self) -> String {
        let mut s = self.command.clone();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        format!("`{}`", shorten(&s, 120))
    }
}

/// A server reached over streamable HTTP.
#[derive(Debug, Clone, Default)]
pub struct HttpServer {
    pub url: String,
    /// Sent with every request (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
}

impl HttpServer {
    pub fn new(url: impl Into<String>) -> Self {
        HttpServer {
            url: url.into(),
            headers: Vec::new(),
        }
    }

    pub fn header(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
}

/// Options of a toolset.
#[derive(Debug, Clone, Default)]
pub struct McpToolsetOptions {
    /// Tools are named `prefix__tool` (the server still sees `tool`).
    pub prefix: Option<String>,
    /// A per-call time limit for every tool of the server; the executor's default
    /// applies when `None`.
    pub timeout: Option<Duration>,
    /// The largest message read from the server, in bytes
    /// ([`DEFAULT_MAX_MESSAGE_BYTES`] when `None`): a result over it fails its call
    /// at once with [`McpError::TooLarge`], and is never held in memory whole.
    pub max_message_bytes: Option<usize>,
}

impl McpToolsetOptions {
    fn message_limit(&self) -> usize {
        self.max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES)
    }
}

/// The tools of one MCP server, sharing one session.
pub struct McpToolset {
    session: Arc<dyn McpSession>,
    options: McpToolsetOptions,
    tools: Mutex<Vec<Arc<dyn Tool>>>,
}

impl fmt::Debug for McpToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolset")
            .field("server", &self.session.server_name())
            .field(
                "tools",
                &self
                    .tools()
                    .iter()
                    .map(|t| t.definition().name.clone())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpToolset {
    /// Starts `server` as a child process, does the handshake and lists its tools.
    /// Must be called inside a tokio runtime (the session lives on it).
    pub async fn stdio(server: StdioServer, options: McpToolsetOptions) -> Result<Self, McpError> {
        let session = RmcpSession::stdio(&server, options.message_limit()).await?;
        Self::from_session(Arc::new(session), options).await
    }

    /// Connects to a streamable-HTTP server, does the handshake and lists its tools.
    /// Must be called inside a tokio runtime.
    pub async fn http(server: HttpServer, options: McpToolsetOptions) -> Result<Self, McpError> {
        let session = RmcpSession::http(&server, options.message_limit()).await?;
        Self::from_session(Arc::new(session), options).await
    }

    /// The tools of an open session. The session is closed again if listing fails.
    pub async fn from_session(
        session: Arc<dyn McpSession>,
        options: McpToolsetOptions,
    ) -> Result<Self, McpError> {
        let listed = match session.list_tools().await {
            Ok(l) => l,
            Err(e) => {
                let _ = session.close().await;
                return Err(e);
            }
        };
        let tools = Self::wrap(&session, &options, listed);
        Ok(McpToolset {
            session,
            options,
            tools: Mutex::new(tools),
        })
    }

    fn wrap(
        session: &Arc<dyn McpSession>,
        options: &McpToolsetOptions,
        listed: Vec<McpToolInfo>,
    ) -> Vec<Arc<dyn Tool>> {
        let prefix = options.prefix.as_deref().filter(|p| !p.is_empty());
        listed
            .into_iter()
            .map(|info| {
                Arc::new(McpTool::new(info, prefix, options.timeout, session.clone()))
                    as Arc<dyn Tool>
            })
            .collect()
    }

    /// The server's tools as last listed.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Lists the tools again if the server said they changed since the last listing;
    /// `true` when the list was replaced. Tools handed out before stay usable (a
    /// call of one the server removed gets the server's error).
    pub async fn refresh(&self) -> Result<bool, McpError> {
        if !self.session.take_tools_changed() {
            return Ok(false);
        }
        let listed = self.session.list_tools().await?;
        log::info!(
            "the MCP server {} changed its tools; listed {} now",
            self.session.server_name(),
            listed.len()
        );
        let tools = Self::wrap(&self.session, &self.options, listed);
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools;
        Ok(true)
    }

    pub fn session(&self) -> &Arc<dyn McpSession> {
        &self.session
    }

    /// Ends the session; the tools then fail with an error naming the server.
    pub async fn close(&self) -> Result<(), McpError> {
        self.session.close().await
    }
}

/// One server tool, forwarding its calls to the shared session.
pub struct McpTool {
    definition: ToolDefinition,
    /// The name the server knows it by (without the prefix).
    remote: String,
    timeout: Option<Duration>,
    session: Arc<dyn McpSession>,
}

impl McpTool {
    pub fn new(
        info: McpToolInfo,
        prefix: Option<&str>,
        timeout: Option<Duration>,
        session: Arc<dyn McpSession>,
    ) -> Self {
        let name = match prefix {
            Some(p) => format!("{p}__{}", info.name),
            None => info.name.clone(),
        };
        let description = info
            .description
            .filter(|d| !d.trim().is_empty())
            .or(info.title)
            .unwrap_or_default();
        let parameters = match info.input_schema {
            Value::Object(mut o) => {
                o.entry("type").or_insert_with(|| Value::from("object"));
                Value::Object(o)
            }
            _ => serde_json::json!({"type": "object"}),
        };
        McpTool {
            definition: ToolDefinition::new(name, description, parameters),
            remote: info.name,
            timeout,
            session,
        }
    }

    /// The tool's name on the server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    fn failed(&self, message: String) -> ToolError {
        ToolError::failed(self.definition.name.clone(), message)
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::InvalidArgs {
                    tool: self.definition.name.clone(),
                    reason: format!("the arguments must be a JSON object, got {other}"),
                })
            }
        };
        let server = self.session.server_name();
        match self.session.call_tool(&self.remote, arguments, &ctx).await {
            Ok(r) if r.is_error => {
                let text = result_text(&r);
                Err(self.failed(if text.trim().is_empty() {
                    format!(
                        "the MCP server {server} reported an error for tool `{}`",
                        self.remote
                    )
                } else {
                    text
                }))
            }
            Ok(r) => Ok(ToolOutput {
                content: Content::Text(result_text(&r)),
                artifact: r.structured_content,
                ..Default::default()
            }),
            Err(McpError::Cancelled { .. }) => {
                Err(ToolError::cancelled(self.definition.name.clone()))
            }
            Err(McpError::Server { code, message, .. }) => Err(self.failed(format!(
                "the MCP server {server} returned an error for tool `{}`: {message} (code {code})",
                self.remote
            ))),
            Err(McpError::Closed { .. }) => Err(self.failed(format!(
                "the MCP server {server} is not connected (the session is closed or the \
                 server exited); tool `{}` cannot run",
                self.remote
            ))),
            Err(
                e @ (McpError::Connect { .. }
                | McpError::Protocol { .. }
                | McpError::TooLarge { .. }),
            ) => Err(self.failed(format!("tool `{}`: {e}", self.remote))),
        }
    }
}

/// The text the model reads for a result: its content blocks, one after the other.
pub fn result_text(r: &McpCallResult) -> String {
    if r.content.is_empty() {
        return match &r.structured_content {
            Some(v) => ToolOutput::json(v.clone()).content.text(),
            None => String::new(),
        };
    }
    r.content
        .iter()
        .map(block_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn block_text(b: &Value) -> String {
    let s = |k: &str| b.get(k).and_then(Value::as_str);
    let data_len = |v: Option<&str>| v.map_or(0, |d| d.len() / 4 * 3);
    match s("type") {
        Some("text") => s("text").unwrap_or_default().to_string(),
        Some(kind @ ("image" | "audio")) => format!(
            "[{kind}: {}, about {} bytes]",
            s("mimeType").unwrap_or("unknown type"),
            data_len(s("data"))
        ),
        Some("resource") => {
            let r = b.get("resource").cloned().unwrap_or(Value::Null);
            let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
            match r.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => format!(
                    "[resource {uri}: {}, about {} bytes]",
                    r.get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("binary"),
                    data_len(r.get("blob").and_then(Value::as_str))
                ),
            }
        }
        Some("resource_link") => format!(
            "[resource link: {}{}]",
            s("uri").unwrap_or("?"),
            s("name").map(|n| format!(" ({n})")).unwrap_or_default()
        ),
        _ => ToolOutput::json(b.clone()).content.text(),
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Installs rustls' `ring` provider as the process default, once (reqwest is built
/// without a provider of its own; see `model::http`).
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

type Client = RunningService<RoleClient, Handler>;

/// What the server says between responses, as the session's client handler sees it.
#[derive(Default)]
pub struct Notices {
    /// Progress token → the context of the call it belongs to.
    progress: Mutex<HashMap<String, ToolContext>>,
    tools_changed: AtomicBool,
    server: RwLock<String>,
}

/// The session's client handler: the SDK owns it, the session shares its notices.
pub struct Handler(Arc<Notices>);

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        client_config()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = token_key(&params.progress_token);
        let ctx = self
            .0
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&token)
            .cloned();
        if let Some(ctx) = ctx {
            let mut payload = Map::new();
            payload.insert("progress".into(), params.progress.into());
            if let Some(t) = params.total {
                payload.insert("total".into(), t.into());
            }
            if let Some(m) = params.message {
                payload.insert("message".into(), m.into());
            }
            ctx.progress(Value::Object(payload));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        log::info!(
            "the MCP server {} says its tools changed",
            self.0.server.read().unwrap_or_else(|p| p.into_inner())
        );
        self.0.tools_changed.store(true, Ordering::SeqCst);
    }
}

fn token_key(t: &ProgressToken) -> String {
    match &t.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

/// Sends `notifications/cancelled` for a request nobody will read the answer of.
struct Abandoned {
    peer: Option<rmcp::Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let params = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("request abandoned by the caller".into()),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}

/// Removes a call's progress route when the call ends, however it ends.
///
/// The SDK hands each notification to its own task, so progress a server sends just
/// before its result may be delivered just after it: the route stays open for
/// [`PROGRESS_GRACE`] more, then goes.
struct ProgressRoute {
    notices: Arc<Notices>,
    token: String,
}

const PROGRESS_GRACE: Duration = Duration::from_millis(500);

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        let (notices, token) = (self.notices.clone(), std::mem::take(&mut self.token));
        let remove = move || {
            notices
                .progress
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&token);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep(PROGRESS_GRACE).await;
                    remove();
                });
            }
            Err(_) => remove(),
        }
    }
}

/// [`McpSession`] on the official Rust SDK (`rmcp`).
pub struct RmcpSession {
    name: String,
    /// The process id of a stdio server (0: none); changes when it is restarted.
    pid: AtomicU32,
    /// Swapped for a new one when a stdio server is restarted.
    peer: RwLock<rmcp::Peer<RoleClient>>,
    /// The running client; taken by `close()`. Dropping it cancels the session,
    /// which closes the transport (and kills a stdio server).
    client: tokio::sync::Mutex<Option<Client>>,
    closed: AtomicBool,
    notices: Arc<Notices>,
    /// How to start a stdio server again (and its message size limit); `None` over
    /// HTTP.
    stdio: Option<(StdioServer, usize)>,
    restarts: Mutex<Vec<Instant>>,
    /// What its errors must not show: header values, the URL's password and query
    /// values, a stdio server's environment values.
    secrets: Secrets,
}

/// The strings an MCP server's errors must not show. A header value's last word is
/// a secret of its own (the token of `Bearer <token>`), since a server may echo it
/// alone.
fn server_secrets<'a>(values: impl IntoIterator<Item = &'a str>, url: Option<&str>) -> Secrets {
    let mut all: Vec<String> = Vec::new();
    for v in values {
        all.push(v.to_owned());
        if let Some(last) = v.split_whitespace().last() {
            all.push(last.to_owned());
        }
    }
    if let Some(u) = url.and_then(|u| reqwest::Url::parse(u).ok()) {
        all.extend(u.password().map(str::to_owned));
        all.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
    }
    Secrets::new([], all)
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("ironloop", env!("CARGO_PKG_VERSION")),
    )
}

impl RmcpSession {
    /// Spawns the server and does the handshake.
    /// `max_message_bytes` bounds each message read from it.
    pub async fn stdio(server: &StdioServer, max_message_bytes: usize) -> Result<Self, McpError> {
        let notices = Arc::new(Notices::default());
        let secrets = server_secrets(server.env.iter().map(|(_, v)| v.as_str()), None);
        let (client, pid) = Self::spawn(server, max_message_bytes, notices.clone())
            .await
            .map_err(|e| e.redact(&secrets))?;
        let mut session = Self::from_client(client, server.label(), pid, notices, secrets);
        session.stdio = Some((server.clone(), max_message_bytes));
        Ok(session)
    }

    async fn spawn(
        server: &StdioServer,
        max_message_bytes: usize,
        notices: Arc<Notices>,
    ) -> Result<(Client, Option<u32>), McpError> {
        use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
        let label = server.label();
        let connect_err = |reason: String| McpError::Connect {
            server: label.clone(),
            reason,
        };
        let mut cmd = tokio::process::Command::new(&server.command);
        cmd.args(&server.args);
        for (k, v) in &server.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &server.cwd {
            cmd.current_dir(dir);
        }
        let mut wrap = CommandWrap::from(cmd);
        wrap.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let transport = child::ChildProcess::spawn(wrap, max_message_bytes, label.clone())
            .map_err(|e| {
                connect_err(match e.kind() {
                    std::io::ErrorKind::NotFound => {
                        format!("command {:?} not found: {e}", server.command)
                    }
                    _ => format!("cannot start it: {e}"),
                })
            })?;
        let pid = transport.id();
        let client = Handler(notices)
            .serve(transport)
            .await
            .map_err(|e| connect_err(format!("the initialize handshake failed: {e}")))?;
        Ok((client, pid))
    }

    /// Connects over streamable HTTP and does the handshake.
    /// `max_message_bytes` bounds each SSE event read from it.
    pub async fn http(server: &HttpServer, max_message_bytes: usize) -> Result<Self, McpError> {
        use reqwest::header::{HeaderName, HeaderValue};
        let secrets = server_secrets(
            server.headers.iter().map(|(_, v)| v.as_str()),
            Some(&server.url),
        );
        let label = format!("`{}`", secrets.redact(&shorten(&server.url, 120)));
        let connect_err = |reason: String| McpError::Connect {
            server: label.clone(),
            reason: secrets.redact(&reason),
        };
        if !(server.url.starts_with("http://") || server.url.starts_with("https://")) {
            return Err(connect_err(
                "the URL must start with http:// or https://".into(),
            ));
        }
        let mut headers = HashMap::new();
        for (k, v) in &server.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| connect_err(format!("invalid header name {k:?}")))?;
            let mut value = HeaderValue::from_str(v).map_err(|_| {
                // The value may be a secret: name the header only.
                connect_err(format!(
                    "the value of header {k:?} is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        install_crypto_provider();
        let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .custom_headers(headers);
        config.max_sse_event_size = max_message_bytes;
        let http = http_client::default_client()
            .map_err(|e| connect_err(format!("cannot build the HTTP client: {e}")))?;
        let client = http_client::BoundedHttpClient::new(http, max_message_bytes);
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let notices = Arc::new(Notices::default());
        let client = Handler(notices.clone())
            .serve(transport)
            .await
            .map_err(|e| connect_err(format!("the initialize handshake failed: {e}")))?;
        Ok(Self::from_client(client, label, None, notices, secrets))
    }

    fn from_client(
        client: Client,
        label: String,
        pid: Option<u32>,
        notices: Arc<Notices>,
        secrets: Secrets,
    ) -> Self {
        let announced = client
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|s| s.name.clone()))
            .filter(|n| !n.trim().is_empty());
        let name = match announced {
            Some(n) => format!("`{}` ({label})", shorten(&n, 60)),
            None => label,
        };
        *notices.server.write().unwrap_or_else(|p| p.into_inner()) = name.clone();
        RmcpSession {
            name,
            pid: AtomicU32::new(pid.unwrap_or(0)),
            peer: RwLock::new(client.peer().clone()),
            client: tokio::sync::Mutex::new(Some(client)),
            closed: Default::default(),
            notices,
            stdio: None,
            restarts: Mutex::new(Vec::new()),
            secrets,
        }
    }

    fn peer(&self) -> rmcp::Peer<RoleClient> {
        self.peer.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live peer: a stdio server that exited (not closed by us) is started again,
    /// within [`MAX_RESTARTS`] a minute.
    async fn live_peer(&self) -> Result<rmcp::Peer<RoleClient>, McpError> {
        let closed = || McpError::Closed {
            server: self.name.clone(),
        };
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed());
        }
        let peer = self.peer();
        if !peer.is_transport_closed() {
            return Ok(peer);
        }
        let Some((server, max_message_bytes)) = &self.stdio else {
            return Err(closed());
        };
        let mut client = self.client.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed());
        }
        // Another call may have restarted it while this one waited for the lock.
        let peer = self.peer();
        if !peer.is_transport_closed() {
            return Ok(peer);
        }
        let n = {
            let mut times = self.recent_restarts();
            if times.len() >= MAX_RESTARTS {
                log::warn!(
                    "the MCP server {} exited again; it was restarted {MAX_RESTARTS} times in \
                     the last minute, so it stays down",
                    self.name
                );
                return Err(closed());
            }
            times.push(Instant::now());
            times.len()
        };
        log::warn!(
            "the MCP server {} exited; starting it again (restart {n} of at most \
             {MAX_RESTARTS} a minute)",
            self.name
        );
        let (fresh, pid) = Self::spawn(server, *max_message_bytes, self.notices.clone())
            .await
            .map_err(|e| e.redact(&self.secrets))?;
        let peer = fresh.peer().clone();
        *self.peer.write().unwrap_or_else(|p| p.into_inner()) = peer.clone();
        self.pid.store(pid.unwrap_or(0), Ordering::SeqCst);
        // The old client's transport is already closed; dropping it frees the rest.
        *client = Some(fresh);
        Ok(peer)
    }

    /// The restarts of the last minute (older ones forgotten), locked: the
    /// [`MAX_RESTARTS`] budget is a sliding window.
    fn recent_restarts(&self) -> std::sync::MutexGuard<'_, Vec<Instant>> {
        let mut times = self.restarts.lock().unwrap_or_else(|p| p.into_inner());
        times.retain(|t| t.elapsed() < Duration::from_secs(60));
        times
    }

    fn error(&self, e: ServiceError) -> McpError {
        self.error_unredacted(e).redact(&self.secrets)
    }

    fn error_unredacted(&self, e: ServiceError) -> McpError {
        let server = self.name.clone();
        match e {
            ServiceError::McpError(d) => match message_limit::refused(d.data.as_ref()) {
                Some((bytes, limit)) => McpError::TooLarge {
                    server,
                    bytes,
                    limit,
                },
                None => McpError::Server {
                    server,
                    code: d.code.0,
                    message: d.message.to_string(),
                },
            },
            ServiceError::TransportClosed => {
                log::warn!("the MCP server {server} closed the connection");
                McpError::Closed { server }
            }
            ServiceError::Cancelled { .. } => McpError::Cancelled { server },
            _ if self.is_closed() => McpError::Closed { server },
            other => McpError::Protocol {
                server,
                reason: other.to_string(),
            },
        }
    }
}

fn wire<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
#[async_trait]
impl McpSession for RmcpSession {
    fn server_name(&self) -> &str {
        &self.name
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::SeqCst)).filter(|p| *p != 0)
    }

    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let tools = self
            .live_peer()
            .await?
            .list_all_tools()
            .await
            .map_err(|e| self.error(e))?;
        Ok(tools
            .into_iter()
            .map(|t| McpToolInfo {
                name: t.name.to_string(),
                title: t.title.clone(),
                description: t.description.as_ref().map(|d| d.to_string()),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    fn take_tools_changed(&self) -> bool {
        self.notices.tools_changed.swap(false, Ordering::SeqCst)
    }

    async fn list_resources(&self) -> Result<Vec<Value>, McpError> {
        let peer = self.live_peer().await?;
        let listed = peer.list_all_resources().await.map_err(|e| self.error(e))?;
        Ok(listed.iter().map(wire).collect())
    }

    async fn read_resource(&self, uri: &str) -> Result<Vec<Value>, McpError> {
        let peer = self.live_peer().await?;
        let read = peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| self.error(e))?;
        Ok(read.contents.iter().map(wire).collect())
    }

    async fn list_prompts(&self) -> Result<Vec<Value>, McpError> {
        let peer = self.live_peer().await?;
        let listed = peer.list_all_prompts().await.map_err(|e| self.error(e))?;
        Ok(listed.iter().map(wire).collect())
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, McpError> {
        let peer = self.live_peer().await?;
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        let got = peer.get_prompt(params).await.map_err(|e| self.error(e))?;
        Ok(wire(&got))
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<McpCallResult, McpError> {
        let peer = self.live_peer().await?;
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = Some(arguments);
        // The SDK gives every request a progress token of its own; the handle says
        // which, so the server's progress for this call is routed to its context.
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.error(e))?;
        let _route = ctx.progress.as_ref().map(|_| {
            let token = token_key(&handle.progress_token);
            self.notices
                .progress
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(token.clone(), ctx.clone());
            ProgressRoute {
                notices: self.notices.clone(),
                token,
            }
        });
        // Dropped before the response (cancellation, the executor's timeout), the
        // guard tells the server with `notifications/cancelled`.
        let mut abandoned = Abandoned {
            peer: Some(peer.clone()),
            id: handle.id.clone(),
        };
        let response = tokio::select! {
            r = handle.await_response() => r.map_err(|e| self.error(e)),
            _ = ctx.cancel.cancelled() => {
                Err(McpError::Cancelled { server: self.name.clone() })
            }
        };
        if response.is_ok() {
            abandoned.peer = None;
        }
        let response = match response? {
            ServerResult::CallToolResult(r) => CallToolResponse::Complete(r),
            ServerResult::InputRequiredResult(r) => CallToolResponse::InputRequired(r),
            _ => {
                return Err(McpError::Protocol {
                    server: self.name.clone(),
                    reason: "the server answered tools/call with something other than a \
                             tool result"
                        .into(),
                })
            }
        };
        match response {
            CallToolResponse::Complete(r) => Ok(McpCallResult {
                content: r.content.iter().map(wire).collect(),
                structured_content: r.structured_content,
                is_error: r.is_error.unwrap_or(false),
            }),
            CallToolResponse::InputRequired(_) => Err(McpError::Protocol {
                server: self.name.clone(),
                reason: "the server asked the client for input (elicitation / sampling), \
                         which ironloop does not provide"
                    .into(),
            }),
            _ => Err(McpError::Protocol {
                server: self.name.clone(),
                reason: "the server answered with a task or another response ironloop \
                         does not support"
                    .into(),
            }),
        }
    }

    async fn close(&self) -> Result<(), McpError> {
        self.closed.store(true, Ordering::SeqCst);
        let client = self.client.lock().await.take();
        if let Some(mut client) = client {
            match client.close_with_timeout(CLOSE_TIMEOUT).await {
                Ok(_) => {}
                Err(e) => {
                    return Err(McpError::Protocol {
                        server: self.name.clone(),
                        reason: format!("closing the session failed: {e}"),
                    })
                }
            }
        }
        Ok(())
    }

    /// Closed by `close()`, or a server that exited and cannot be started again
    /// (HTTP, or a stdio server past its restarts).
    fn is_closed(&self) -> bool {
        if self.closed.load(Ordering::SeqCst) {
            return true;
        }
        if !self.peer().is_transport_closed() {
            return false;
        }
        match &self.stdio {
            None => true,
            Some(_) => self.recent_restarts().len() >= MAX_RESTARTS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    #[test]
    fn content_blocks_become_text() {
        let r = McpCallResult {
            content: vec![
                json!({"type": "text", "text": "a"}),
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
                json!({"type": "resource", "resource": {"uri": "file:///x", "text": "body"}}),
                json!({"type": "resource", "resource": {"uri": "file:///y", "blob": "AAAAAAAA"}}),
                json!({"type": "resource_link", "uri": "file:///z", "name": "z"}),
            ],
            structured_content: None,
            is_error: false,
        };
        assert_eq!(
            result_text(&r),
            "a\n[image: image/png, about 3 bytes]\nbody\n\
             [resource file:///y: binary, about 6 bytes]\n[resource link: file:///z (z)]"
        );
        let s = McpCallResult {
            structured_content: Some(json!({"result": 5})),
            ..Default::default()
        };
        assert_eq!(result_text(&s), r#"{"result": 5}"#);
    }

    /// A session that answers from a closure, recording the names it was asked for.
    struct Fake {
        calls: Mutex<Vec<String>>,
        closed: std::sync::atomic::AtomicBool,
    }

    #[async_trait]
    impl McpSession for Fake {
        fn server_name(&self) -> &str {
            "`fake`"
        }
        async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
            Ok(vec![McpToolInfo {
                name: "echo".into(),
                title: Some("Echo".into()),
                description: None,
                input_schema: json!({"properties": {"x": {"type": "string"}}}),
            }])
        }
        async fn call_tool(
            &self,
            name: &str,
            arguments: Map<String, Value>,
            ctx: &ToolContext,
        ) -> Result<McpCallResult, McpError> {
            self.calls.lock().unwrap().push(name.to_string());
            match arguments.get("x").and_then(Value::as_str) {
                Some("boom") => Ok(McpCallResult {
                    content: vec![json!({"type": "text", "text": "it broke"})],
                    is_error: true,
                    ..Default::default()
                }),
                Some("rpc") => Err(McpError::Server {
                    server: "`fake`".into(),
                    code: -32602,
                    message: "bad params".into(),
                }),
                Some("hang") => {
                    ctx.cancel.cancelled().await;
                    Err(McpError::Cancelled {
                        server: "`fake`".into(),
                    })
                }
                x => Ok(McpCallResult {
                    content: vec![json!({"type": "text", "text": x.unwrap_or("")})],
                    structured_content: Some(json!({"x": x})),
                    is_error: false,
                }),
            }
        }
        async fn close(&self) -> Result<(), McpError> {
            self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }
        fn is_closed(&self) -> bool {
            self.closed.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[tokio::test]
    async fn tools_forward_to_the_session_and_map_errors() {
        let fake = Arc::new(Fake {
            calls: Mutex::new(Vec::new()),
            closed: Default::default(),
        });
        let set = McpToolset::from_session(
            fake.clone(),
            McpToolsetOptions {
                prefix: Some("srv".into()),
                timeout: Some(Duration::from_secs(2)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let tool = set.tools()[0].clone();
        let def = tool.definition();
        assert_eq!(def.name, "srv__echo");
        assert_eq!(def.description, "Echo");
        assert_eq!(def.parameters["type"], "object");
        assert_eq!(tool.timeout(), Some(Duration::from_secs(2)));

        let ctx = ToolContext::new("1", "srv__echo");
        let out = tool.call(json!({"x": "hi"}), ctx.clone()).await.unwrap();
        assert_eq!(out.content.text(), "hi");
        assert_eq!(out.artifact, Some(json!({"x": "hi"})));
        assert_eq!(*fake.calls.lock().unwrap(), vec!["echo".to_string()]);

        let e = tool
            .call(json!({"x": "boom"}), ctx.clone())
            .await
            .unwrap_err();
        assert_eq!(e, ToolError::failed("srv__echo", "it broke"));
        let e = tool
            .call(json!({"x": "rpc"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("`fake`") && e.to_string().contains("bad params"),
            "{e}"
        );
        let hang = ToolContext::new("2", "srv__echo");
        let cancel = hang.cancel.clone();
        let call = tool.call(json!({"x": "hang"}), hang);
        cancel.cancel();
        assert_eq!(call.await.unwrap_err(), ToolError::cancelled("srv__echo"));
        set.close().await.unwrap();
        assert!(set.session().is_closed());
    }
}
