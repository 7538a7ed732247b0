//! [`RmcpSession`]: the [`McpSession`] of the official Rust SDK (`rmcp`), over a
//! child's stdio or streamable HTTP; its client handler ([`Handler`]) and the
//! notices it shares with the session (progress routes, `tools/list_changed`).

use std::collections::HashMap;
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

use super::{
    child, http_client, limits, message_limit, shorten, HttpServer, Limits, McpCallResult,
    McpError, McpSession, McpToolInfo, StdioServer, CLOSE_TIMEOUT, MAX_RESTARTS,
};
use crate::secrets::Secrets;
use crate::tool::ToolContext;

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
    /// Swapped for a new one when the session is opened again.
    peer: RwLock<rmcp::Peer<RoleClient>>,
    /// The running client; taken by `close()`. Dropping it cancels the session,
    /// which closes the transport (and kills a stdio server).
    client: tokio::sync::Mutex<Option<Client>>,
    closed: AtomicBool,
    notices: Arc<Notices>,
    /// How to open the session again when its transport closed (a stdio server that
    /// exited, an HTTP connection that dropped).
    reopen: Reopen,
    limits: Limits,
    restarts: Mutex<Vec<Instant>>,
    /// What its errors must not show: header values, the URL's password and query
    /// values, a stdio server's environment values.
    secrets: Secrets,
}

/// Where the session's server is, to open the session again.
enum Reopen {
    Stdio(StdioServer),
    Http(HttpServer),
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

fn http_label(server: &HttpServer, secrets: &Secrets) -> String {
    format!("`{}`", secrets.redact(&shorten(&server.url, 120)))
}

fn http_secrets(server: &HttpServer) -> Secrets {
    server_secrets(
        server.headers.iter().map(|(_, v)| v.as_str()),
        Some(&server.url),
    )
}

impl RmcpSession {
    /// Spawns the server and does the handshake, within `limits.connect`.
    pub async fn stdio(server: &StdioServer, limits: Limits) -> Result<Self, McpError> {
        let notices = Arc::new(Notices::default());
        let secrets = server_secrets(server.env.iter().map(|(_, v)| v.as_str()), None);
        let (client, pid) = Self::spawn(server, limits, notices.clone())
            .await
            .map_err(|e| e.redact(&secrets))?;
        let reopen = Reopen::Stdio(server.clone());
        Ok(Self::from_client(
            client,
            server.label(),
            pid,
            notices,
            secrets,
            reopen,
            limits,
        ))
    }

    async fn spawn(
        server: &StdioServer,
        limits: Limits,
        notices: Arc<Notices>,
    ) -> Result<(Client, Option<u32>), McpError> {
        let label = server.label();
        let connect_err = |reason: String| McpError::Connect {
            server: label.clone(),
            reason,
        };
        let transport = child::ChildProcess::start(server, limits.message_bytes, label.clone())
            .await
            .map_err(|e| {
                connect_err(match e.kind() {
                    std::io::ErrorKind::NotFound => {
                        format!("command {:?} not found: {e}", server.command)
                    }
                    _ => format!("cannot start it: {e}"),
                })
            })?;
        let pid = transport.id();
        let stdout = transport.notes();
        // On timeout the handshake is dropped, and with it the transport, which kills
        // the process.
        let client = tokio::time::timeout(limits.connect, Handler(notices).serve(transport))
            .await
            .map_err(|_| connect_err(limits::stdio_handshake_timeout(limits.connect, &stdout)))?
            .map_err(|e| connect_err(format!("the initialize handshake failed: {e}")))?;
        Ok((client, pid))
    }

    /// Connects over streamable HTTP and does the handshake, within `limits.connect`.
    /// `limits.message_bytes` bounds each SSE event read from it.
    pub async fn http(server: &HttpServer, limits: Limits) -> Result<Self, McpError> {
        let secrets = http_secrets(server);
        let notices = Arc::new(Notices::default());
        let client = Self::connect_http(server, limits, &secrets, notices.clone()).await?;
        let label = http_label(server, &secrets);
        let reopen = Reopen::Http(server.clone());
        Ok(Self::from_client(
            client, label, None, notices, secrets, reopen, limits,
        ))
    }

    async fn connect_http(
        server: &HttpServer,
        limits: Limits,
        secrets: &Secrets,
        notices: Arc<Notices>,
    ) -> Result<Client, McpError> {
        use reqwest::header::{HeaderName, HeaderValue};
        let label = http_label(server, secrets);
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
        config.max_sse_event_size = limits.message_bytes;
        let http = http_client::default_client()
            .map_err(|e| connect_err(format!("cannot build the HTTP client: {e}")))?;
        let client = http_client::BoundedHttpClient::new(http, limits.message_bytes);
        let transport = StreamableHttpClientTransport::with_client(client, config);
        tokio::time::timeout(limits.connect, Handler(notices).serve(transport))
            .await
            .map_err(|_| connect_err(limits::http_handshake_timeout(limits.connect)))?
            .map_err(|e| connect_err(format!("the initialize handshake failed: {e}")))
    }

    fn from_client(
        client: Client,
        label: String,
        pid: Option<u32>,
        notices: Arc<Notices>,
        secrets: Secrets,
        reopen: Reopen,
        limits: Limits,
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
            reopen,
            limits,
            restarts: Mutex::new(Vec::new()),
            secrets,
        }
    }

    fn peer(&self) -> rmcp::Peer<RoleClient> {
        self.peer.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `fut`, a request named `request`, within the session's request limit.
    async fn bounded<T>(
        &self,
        request: &str,
        fut: impl std::future::Future<Output = Result<T, McpError>>,
    ) -> Result<T, McpError> {
        limits::bounded(&self.name, request, self.limits.request, fut).await
    }

    /// The request `method` that `call` makes of the live peer, within the request
    /// limit ([`Self::bounded`]); the SDK's error said as this server's.
    async fn ask<T, Fut>(
        &self,
        method: &str,
        call: impl FnOnce(rmcp::Peer<RoleClient>) -> Fut,
    ) -> Result<T, McpError>
    where
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        self.bounded(method, async {
            let peer = self.live_peer().await?;
            call(peer).await.map_err(|e| self.error(e))
        })
        .await
    }

    /// A listing request's items (`method`, made by `call`), as JSON.
    async fn listed<T: serde::Serialize, Fut>(
        &self,
        method: &str,
        call: impl FnOnce(rmcp::Peer<RoleClient>) -> Fut,
    ) -> Result<Vec<Value>, McpError>
    where
        Fut: std::future::Future<Output = Result<Vec<T>, ServiceError>>,
    {
        Ok(self.ask(method, call).await?.iter().map(wire).collect())
    }

    /// The live peer: a session whose transport closed (a stdio server that exited,
    /// an HTTP connection that dropped; not closed by us) is opened again, within
    /// [`MAX_RESTARTS`] a minute.
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
        let mut client = self.client.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed());
        }
        // Another call may have reopened it while this one waited for the lock.
        let peer = self.peer();
        if !peer.is_transport_closed() {
            return Ok(peer);
        }
        let n = {
            let mut times = self.recent_restarts();
            if times.len() >= MAX_RESTARTS {
                log::warn!(
                    "the MCP server {} is gone again; its session was opened again \
                     {MAX_RESTARTS} times in the last minute, so it stays closed",
                    self.name
                );
                return Err(closed());
            }
            times.push(Instant::now());
            times.len()
        };
        let (fresh, pid) = match &self.reopen {
            Reopen::Stdio(server) => {
                log::warn!(
                    "the MCP server {} exited; starting it again (restart {n} of at most \
                     {MAX_RESTARTS} a minute)",
                    self.name
                );
                Self::spawn(server, self.limits, self.notices.clone()).await
            }
            Reopen::Http(server) => {
                log::warn!(
                    "the connection to the MCP server {} dropped; opening a new session \
                     (reconnection {n} of at most {MAX_RESTARTS} a minute)",
                    self.name
                );
                let notices = self.notices.clone();
                Self::connect_http(server, self.limits, &self.secrets, notices)
                    .await
                    .map(|c| (c, None))
            }
        }
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
            // The SDK's text names its transport's Rust type: say what it means.
            ServiceError::TransportSend(e) => McpError::Protocol {
                server,
                reason: format!(
                    "the request could not be sent: the server may have exited or \
                     restarted, and the next request opens a new session ({})",
                    e.error
                ),
            },
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
            .ask(
                "tools/list",
                |peer| async move { peer.list_all_tools().await },
            )
            .await?;
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
        self.listed("resources/list", |peer| async move {
            peer.list_all_resources().await
        })
        .await
    }

    async fn read_resource(&self, uri: &str) -> Result<Vec<Value>, McpError> {
        let params = ReadResourceRequestParams::new(uri);
        let read = self
            .ask("resources/read", |peer| async move {
                peer.read_resource(params).await
            })
            .await?;
        Ok(read.contents.iter().map(wire).collect())
    }

    async fn list_prompts(&self) -> Result<Vec<Value>, McpError> {
        self.listed("prompts/list", |peer| async move {
            peer.list_all_prompts().await
        })
        .await
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, McpError> {
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        let got = self
            .ask("prompts/get", |peer| async move {
                peer.get_prompt(params).await
            })
            .await?;
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

    /// Closed by `close()`, or gone and past its reopenings (see `live_peer`).
    fn is_closed(&self) -> bool {
        if self.closed.load(Ordering::SeqCst) {
            return true;
        }
        self.peer().is_transport_closed() && self.recent_restarts().len() >= MAX_RESTARTS
    }
}
