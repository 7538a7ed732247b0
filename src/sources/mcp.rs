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
//!   servers apart; the name is made to fit what the providers accept
//!   (`^[a-zA-Z0-9_-]{1,64}$`: other characters become `_`, a name over 64 is cut and
//!   given a short hash, a clash numbered `_2`, `_3`… in the server's order; see
//!   [`crate::tool::name`]), and the server is still called by its own name;
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
//! Nothing waits without a limit (see [`limits`]): starting the server and the
//! handshake get `connect_timeout` ([`DEFAULT_CONNECT_TIMEOUT`]), and a server that
//! stays silent, prints logs on stdout or one huge line fails within it with an error
//! saying what it printed; every request after it gets `timeout`
//! ([`DEFAULT_TIMEOUT`]), a tool call as the tool's own timeout.
//!
//! [`McpToolset::close`] ends the session: for stdio the child's stdin is closed, then
//! (if it has not exited within a few seconds) it gets `SIGTERM`, then `SIGKILL`. The
//! child runs in a process group of its own, so launchers (`npx`, `uvx`, `sh -c`)
//! take their children with them. Dropping the last handle without `close()` does the
//! same in the background (the SDK kills the process when its transport is dropped).
//! On Linux the child also dies with this process, however it ends (`kill -9`
//! included): see `child.rs`.
//!
//! Beyond tools: resources and prompts ([`McpSession::list_resources`],
//! [`McpSession::read_resource`], [`McpSession::list_prompts`],
//! [`McpSession::get_prompt`]) in wire form; a server's progress notifications for a
//! call reach that call's [`ToolContext::progress`]; `notifications/tools/list_changed`
//! makes [`McpToolset::tools`] list the tools again; a stdio server that exited is
//! started again on the next call, and an HTTP session whose SDK connection ended
//! (its worker quit) is opened again (at most [`MAX_RESTARTS`] times a minute, each
//! logged), while the call that was in flight when it went fails as before. (An HTTP
//! server that went down and came back is rejoined by the SDK itself: it opens a new
//! session when the old one's id is refused with a 404.)
//!
//! The SDK (`rmcp`, pinned to one major version) stays behind the small
//! [`McpSession`] trait: the tools only see `list_tools` / `call_tool` / `close`, and
//! a test or another transport can implement it.
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

mod child;
mod http_client;
mod limits;
mod message_limit;
mod rmcp_session;

pub use limits::{Limits, DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT};
pub use message_limit::DEFAULT_MAX_MESSAGE_BYTES;
pub use rmcp_session::{Handler, Notices, RmcpSession};

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
    /// The server did not answer a request within the session's time limit.
    #[error(
        "the MCP server {server} did not answer {request} within {}; it may be stuck or \
         overloaded: check the server, or raise the toolset's `timeout`",
        limits::seconds(*after)
    )]
    Timeout {
        server: String,
        request: String,
        after: Duration,
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
            McpError::Timeout {
                server,
                request,
                after,
            } => McpError::Timeout {
                server: r(server),
                request,
                after,
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
    /// The time limit of every request after the handshake: each tool call (as the
    /// tools' timeout, which the executor enforces), `tools/list`, resources and
    /// prompts. [`DEFAULT_TIMEOUT`] when `None`.
    pub timeout: Option<Duration>,
    /// The time limit of starting (or reaching) the server and its `initialize`
    /// handshake, together. [`DEFAULT_CONNECT_TIMEOUT`] when `None`.
    pub connect_timeout: Option<Duration>,
    /// The largest message read from the server, in bytes
    /// ([`DEFAULT_MAX_MESSAGE_BYTES`] when `None`): a result over it fails its call
    /// at once with [`McpError::TooLarge`], and is never held in memory whole.
    pub max_message_bytes: Option<usize>,
}

impl McpToolsetOptions {
    /// The session's limits, defaults filled in.
    pub fn limits(&self) -> Limits {
        Limits {
            message_bytes: self.max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
            connect: self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            request: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
        }
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
        let session = RmcpSession::stdio(&server, options.limits()).await?;
        Self::from_session(Arc::new(session), options).await
    }

    /// Connects to a streamable-HTTP server, does the handshake and lists its tools.
    /// Must be called inside a tokio runtime.
    pub async fn http(server: HttpServer, options: McpToolsetOptions) -> Result<Self, McpError> {
        let session = RmcpSession::http(&server, options.limits()).await?;
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

    /// The listed tools as ironloop tools, named as the providers accept (see
    /// [`McpTool::new`]), names made unique in the server's order.
    fn wrap(
        session: &Arc<dyn McpSession>,
        options: &McpToolsetOptions,
        listed: Vec<McpToolInfo>,
    ) -> Vec<Arc<dyn Tool>> {
        let prefix = options.prefix.as_deref().filter(|p| !p.is_empty());
        let limit = Some(options.limits().request);
        let mut taken = std::collections::HashSet::new();
        listed
            .into_iter()
            .map(|info| {
                let mut tool = McpTool::new(info, prefix, limit, session.clone());
                let unique = crate::tool::name::unique(&tool.definition.name, &mut taken);
                if unique != tool.definition.name {
                    log::info!(
                        "the MCP server {} lists two tools named {:?} once made to fit the \
                         providers' rule; the later one ({:?}) is {unique:?}",
                        session.server_name(),
                        tool.definition.name,
                        tool.remote,
                    );
                }
                tool.definition.name = unique;
                Arc::new(tool) as Arc<dyn Tool>
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
    /// The tool `info` of `session`, named `prefix__name` (or `name`) made to fit
    /// the providers' rule ([`crate::tool::name::sanitize`]: other characters become
    /// `_`, a name over 64 characters is cut and given a hash); the server is always
    /// called with its own name.
    pub fn new(
        info: McpToolInfo,
        prefix: Option<&str>,
        timeout: Option<Duration>,
        session: Arc<dyn McpSession>,
    ) -> Self {
        let wanted = match prefix {
            Some(p) => format!("{p}__{}", info.name),
            None => info.name.clone(),
        };
        let name = crate::tool::name::sanitize(&wanted);
        if name != wanted {
            log::info!(
                "the MCP server {}'s tool {wanted:?} is named {name:?} for the model (tool \
                 names must match {})",
                session.server_name(),
                crate::tool::name::NAME_RULE
            );
        }
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
                | McpError::TooLarge { .. }
                | McpError::Timeout { .. }),
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

    /// A session that lists `tools` and answers a call by its `x` argument (the
    /// tool's own name when there is none), recording the names it was asked for.
    struct Fake {
        tools: Vec<McpToolInfo>,
        calls: Mutex<Vec<String>>,
        closed: std::sync::atomic::AtomicBool,
    }

    impl Fake {
        fn new(tools: Vec<McpToolInfo>) -> Fake {
            Fake {
                tools,
                calls: Mutex::new(Vec::new()),
                closed: Default::default(),
            }
        }

        /// A session that lists only tools with the given names.
        fn listing(names: &[&str]) -> Fake {
            Fake::new(
                names
                    .iter()
                    .map(|n| McpToolInfo {
                        name: (*n).into(),
                        title: None,
                        description: None,
                        input_schema: json!({}),
                    })
                    .collect(),
            )
        }
    }

    #[async_trait]
    impl McpSession for Fake {
        fn server_name(&self) -> &str {
            "`fake`"
        }
        async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
            Ok(self.tools.clone())
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
                    content: vec![json!({"type": "text", "text": x.unwrap_or(name)})],
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
        let fake = Arc::new(Fake::new(vec![McpToolInfo {
            name: "echo".into(),
            title: Some("Echo".into()),
            description: None,
            input_schema: json!({"properties": {"x": {"type": "string"}}}),
        }]));
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

    #[tokio::test]
    async fn server_names_are_made_to_fit_and_the_server_sees_its_own() {
        let long = Box::leak(format!("{}.x", "n".repeat(70)).into_boxed_str());
        let names = vec!["files.read", "files read", "files_read", "ok-name", long];
        let set = McpToolset::from_session(
            Arc::new(Fake::listing(&names)),
            McpToolsetOptions::default(),
        )
        .await
        .unwrap();
        let tools = set.tools();
        let given: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
        assert_eq!(
            given[..4],
            ["files_read", "files_read_2", "files_read_3", "ok-name"]
        );
        assert_eq!(given[4].len(), 64);
        for name in &given {
            assert_eq!(crate::tool::name::check(name), Ok(()), "{name}");
        }
        // Every tool calls the server by the name the server gave it.
        for (tool, original) in tools.iter().zip(&names) {
            let ctx = ToolContext::new("1", tool.definition().name.clone());
            let out = tool.call(json!({}), ctx).await.unwrap();
            assert_eq!(out.content.text(), *original);
        }
        // The same listing gives the same names (no order- or run-dependent hash).
        let again = McpToolset::from_session(
            Arc::new(Fake::listing(&names)),
            McpToolsetOptions::default(),
        )
        .await
        .unwrap();
        let again: Vec<String> = again
            .tools()
            .iter()
            .map(|t| t.definition().name.clone())
            .collect();
        assert_eq!(again, given);
        // A tool call has a time limit even when the toolset sets none.
        assert_eq!(tools[0].timeout(), Some(DEFAULT_TIMEOUT));
    }
}
