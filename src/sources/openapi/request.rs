//! [`OpenApiTool`]: one operation as a tool — its arguments serialised into a request by
//! their style, sent within the time limit, and the response rendered as the result.

use super::*;

pub(super) struct Shared {
    pub(super) http: Http,
    pub(super) timeout: Option<Duration>,
    pub(super) max_output_bytes: usize,
}

/// One operation as a tool.
pub struct OpenApiTool {
    pub(super) def: ToolDefinition,
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) base: String,
    pub(super) params: Vec<Param>,
    pub(super) body: Option<Body>,
    pub(super) auth: OpAuth,
    pub(super) shared: Arc<Shared>,
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
pub(super) fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 reserved characters, kept by `allowReserved`.
pub(super) fn reserved(b: u8) -> bool {
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

pub(super) fn encode(s: &str, keep_reserved: bool) -> String {
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
pub(super) fn scalar(v: &Value) -> String {
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

    pub(super) fn invalid(&self, reason: String) -> ToolError {
        ToolError::InvalidArgs {
            tool: self.def.name.clone(),
            reason,
        }
    }

    /// `(url, headers, body)` for a call with `args`.
    #[allow(clippy::type_complexity)]
    pub(super) fn prepare(
        &self,
        args: &Value,
    ) -> Result<(String, HeaderMap, Option<Payload>), ToolError> {
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

    /// The `Authorization` header of the operation's OAuth2 credentials (a token
    /// fetched, or the one cached).
    async fn authorize(&self, headers: &mut HeaderMap) -> Result<(), ToolError> {
        let (shared, http) = (&self.shared, &self.shared.http);
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
        Ok(())
    }

    pub(super) async fn send(
        &self,
        url: String,
        mut headers: HeaderMap,
        body: Option<Payload>,
    ) -> Result<ToolOutput, ToolError> {
        let shared = &self.shared;
        let http = &shared.http;
        self.authorize(&mut headers).await?;
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
        let (mut bytes, mut total, complete) = read_capped(&mut resp, keep).await.map_err(fail)?;
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

/// A response's body, its first `keep` bytes kept: the bytes, how many came, and
/// whether it was read to its end (reading stops past `MAX_READ_BYTES`).
async fn read_capped(
    resp: &mut reqwest::Response,
    keep: usize,
) -> Result<(Vec<u8>, usize, bool), reqwest::Error> {
    let mut bytes = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = resp.chunk().await? {
        total += chunk.len();
        if bytes.len() < keep {
            let room = keep - bytes.len();
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        if total > MAX_READ_BYTES {
            return Ok((bytes, total, false));
        }
    }
    Ok((bytes, total, true))
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
pub(super) fn serialize_simple(v: &Value, explode: bool, enc: impl Fn(&str) -> String) -> String {
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

pub(super) fn serialize_path(name: &str, v: &Value, style: Style, explode: bool) -> String {
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

pub(super) fn serialize_query(p: &Param, v: &Value, out: &mut Vec<String>) {
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
pub(super) fn form_body(v: &Value) -> String {
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

pub(super) struct Rendered {
    /// What the model reads (already cut to the limit).
    pub(super) text: String,
    /// The body parsed, when it is JSON and was read whole.
    pub(super) value: Option<Value>,
    /// The body's text (for the artifact when not JSON).
    pub(super) raw: String,
}

pub(super) fn render_body(
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

pub(super) fn status_line(status: reqwest::StatusCode) -> String {
    match status.canonical_reason() {
        Some(r) => format!("{} {r}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// At most `max` characters of `s`, with `…` when cut.
pub(super) fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(1)) {
        Some((i, _)) if s[i..].chars().count() > 1 => format!("{}…", &s[..i]),
        _ => s.to_string(),
    }
}
