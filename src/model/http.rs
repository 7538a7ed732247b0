//! The HTTP half shared by the providers: one `reqwest` client per model, a POST with
//! retries, errors that name the provider and the status but never the key.

use std::sync::{Arc, Once, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use serde::Serialize;
use serde_json::Value;

use super::limits::{read_body, BodyError};
use super::retry::{parse_retry_after, RetryPolicy};
use super::{error_detail, shorten, ChatRequest, ModelError};
use crate::secrets::Secrets;

/// Installs rustls' `ring` provider as the process default, once (reqwest is built
/// without a provider of its own, to keep the aws-lc-rs C build out).
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another library installed one first: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The TLS setup every client shares, made once: what reqwest builds for each client
/// by itself (rustls on `ring`, TLS 1.2 and 1.3, the platform's verifier, HTTP/1.1
/// by ALPN), whose verifier reads and parses the system's root certificates each
/// time — ~75 ms of every model or OpenAPI toolset made in a debug build. `None` when
/// it cannot be made (no root certificates): each client then builds its own and
/// reports the error itself.
fn shared_tls() -> Option<rustls::ClientConfig> {
    static TLS: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    TLS.get_or_init(|| {
        install_crypto_provider();
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone()).ok()?;
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .ok()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Some(tls)
    })
    .clone()
}

/// A `reqwest` client builder with the crate's TLS setup (rustls with `ring`, made
/// once: [`shared_tls`]) and user agent: the one HTTP stack the crate's clients
/// (models, OpenAPI tools) share.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    let builder =
        reqwest::Client::builder().user_agent(concat!("ironloop/", env!("CARGO_PKG_VERSION")));
    match shared_tls() {
        Some(tls) => builder.tls_backend_preconfigured(tls),
        None => builder,
    }
}

/// What a model's errors must not show: its key, the user's header values, and the
/// base URL's password and query values.
pub(crate) fn model_secrets(key: Option<&str>, headers: &[(String, String)], url: &str) -> Secrets {
    let mut values: Vec<String> = headers.iter().map(|(_, v)| v.clone()).collect();
    if let Ok(u) = reqwest::Url::parse(url) {
        values.extend(u.password().map(str::to_owned));
        values.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
    }
    Secrets::new(key.map(str::to_owned), values)
}

/// `base` (an API root, perhaps with a query such as Azure's `?api-version=`) with
/// `path` appended to its path, its query kept at the end.
pub(crate) fn endpoint(base: &str, path: &str) -> String {
    let (root, query) = match base.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (base, None),
    };
    let root = root.trim_end_matches('/');
    match query {
        Some(q) => format!("{root}{path}?{q}"),
        None => format!("{root}{path}"),
    }
}

/// A client whose requests all go through one [`Transport`]: the endpoint it shows is
/// the transport's.
pub(crate) trait OverHttp {
    fn transport(&self) -> &Transport;

    /// The endpoint as it may be shown: secrets in it (a `?key=`) scrubbed.
    fn shown_url(&self) -> String {
        self.transport().shown_url()
    }

    /// The `Debug` of a client over HTTP: its type `name`, its `model` and the scrubbed
    /// endpoint (a `?key=` in a base URL must not reach a log); never its key nor its
    /// headers.
    fn debug_client(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        name: &str,
        model: &str,
    ) -> std::fmt::Result {
        f.debug_struct(name)
            .field("model", &model)
            .field("url", &self.shown_url())
            .finish()
    }
}

/// A chat client's request body, serialised straight from the request: a JSON tree
/// built first cloned every message of the history for every request. Public for the
/// request benchmarks (`benches/model.rs`).
pub trait ChatBody {
    /// The body of `req`, streamed or not.
    fn body<'a>(&'a self, req: &'a ChatRequest, stream: bool) -> impl Serialize + 'a;

    /// The request body for `req`, as a JSON tree, for tests (requests send
    /// [`ChatBody::body`], which serialises to the same JSON).
    #[cfg(test)]
    fn request_body(&self, req: &ChatRequest, stream: bool) -> Value {
        serde_json::to_value(self.body(req, stream)).unwrap_or_default()
    }
}

pub(crate) struct Transport {
    pub provider: &'static str,
    client: reqwest::Client,
    url: String,
    /// `url` parsed once: reqwest parsed a `&str` again for every request.
    endpoint: reqwest::Url,
    headers: HeaderMap,
    secrets: Secrets,
    pub timeout: Duration,
    retry: RetryPolicy,
}

impl Transport {
    /// `secrets` (the API key, the user's header values, the URL's) are scrubbed from
    /// every error; a header whose value holds one is marked sensitive.
    pub fn new(
        provider: &'static str,
        url: String,
        headers: Vec<(String, String)>,
        secrets: Secrets,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, ModelError> {
        install_crypto_provider();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ModelError::Config(format!(
                "{provider}: base_url must start with http:// or https://, got {url:?}"
            )));
        }
        // Not shown: secrets in a URL that does not parse are not known to `secrets`.
        let endpoint = reqwest::Url::parse(&url).map_err(|e| {
            ModelError::Config(format!(
                "{provider}: base_url is not a valid URL ({e}); pass one like \
                 \"https://api.example.com/v1\""
            ))
        })?;
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
                ModelError::Config(format!("{provider}: invalid header name {k:?}"))
            })?;
            let sensitive = secrets.in_text(&v);
            let mut value = HeaderValue::from_str(&v).map_err(|_| {
                // The value may be the key: name the header only.
                ModelError::Config(format!(
                    "{provider}: the value of header {k:?} is not a valid header value"
                ))
            })?;
            value.set_sensitive(sensitive);
            map.insert(name, value);
        }
        let client = client_builder()
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| {
                ModelError::Config(format!("{provider}: cannot build the HTTP client: {e}"))
            })?;
        Ok(Transport {
            provider,
            client,
            url,
            endpoint,
            headers: map,
            secrets,
            timeout,
            retry,
        })
    }

    /// A model client's transport: its secrets are the key, the values of the
    /// settings' headers and the URL's own; the settings give the time limit and the
    /// retry policy.
    pub fn for_model(
        provider: &'static str,
        url: String,
        headers: Vec<(String, String)>,
        key: Option<&str>,
        settings: &super::HttpSettings,
    ) -> Result<Self, ModelError> {
        let secrets = model_secrets(key, &settings.headers, &url);
        Self::new(
            provider,
            url,
            headers,
            secrets,
            settings.timeout,
            settings.retry,
        )
    }

    /// The URL as it may be shown (in `repr`, in errors): its secrets scrubbed.
    pub fn shown_url(&self) -> String {
        self.secrets.redact(&self.url)
    }

    pub fn secrets(&self) -> Secrets {
        self.secrets.clone()
    }

    pub fn redact(&self, e: ModelError) -> ModelError {
        e.redact(&self.secrets)
    }

    fn transport_error(&self, e: reqwest::Error) -> ModelError {
        if e.is_timeout() {
            return ModelError::Timeout {
                provider: self.provider,
                after: self.timeout,
            };
        }
        let e = self.redact(ModelError::Connection {
            provider: self.provider,
            message: crate::error::error_chain(&e),
        });
        log::warn!("{e}");
        e
    }

    /// The error for a response with a failure status.
    async fn status_error(&self, resp: reqwest::Response) -> ModelError {
        let status = resp.status().as_u16();
        let retry_after = parse_retry_after(resp.headers());
        let body = match tokio::time::timeout(self.timeout, read_body(resp)).await {
            Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        // Scrubbed before anything cuts it short: a secret cut in half is not found.
        let (kind, message) = error_detail(&self.secrets.redact(&body));
        self.redact(ModelError::Api {
            provider: self.provider,
            status,
            kind,
            message,
            retry_after,
        })
    }

    /// Runs `attempt` with a POST of `body` (encoded once, its bytes sent again by each
    /// retry) until it succeeds, fails for good, or the retries run out.
    async fn with_retries<T, F, Fut>(
        &self,
        body: &impl serde::Serialize,
        mut attempt: F,
    ) -> Result<T, ModelError>
    where
        F: FnMut(reqwest::RequestBuilder) -> Fut,
        Fut: std::future::Future<Output = Result<T, ModelError>>,
    {
        let payload = self.encode(body)?;
        let mut n = 0;
        loop {
            match attempt(self.post(payload.clone())).await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retryable() && n < self.retry.max_retries => {
                    let Some(wait) = self.retry.delay(n, e.retry_after()) else {
                        return Err(e);
                    };
                    log::info!(
                        "{} — retry {} of {} in {:.2}s",
                        e,
                        n + 1,
                        self.retry.max_retries,
                        wait.as_secs_f64()
                    );
                    tokio::time::sleep(wait).await;
                    n += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The request body's JSON bytes (sent again as they are by each retry).
    fn encode(&self, body: &impl serde::Serialize) -> Result<Bytes, ModelError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ModelError::Config(format!("{}: cannot encode the request: {e}", self.provider))
        })?;
        Ok(Bytes::from(bytes))
    }

    /// A POST of `payload` to the endpoint, with the client's headers.
    fn post(&self, payload: Bytes) -> reqwest::RequestBuilder {
        self.client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .body(payload)
    }

    /// POSTs `body` and returns the JSON response, with retries.
    pub async fn post_json(&self, body: &impl serde::Serialize) -> Result<Value, ModelError> {
        self.post_parsed(body, |bytes| serde_json::from_slice::<Value>(bytes))
            .await
    }

    /// [`Transport::post_json`], the response's bytes read by `parse` (a parse error
    /// says the response is not JSON).
    pub async fn post_parsed<T>(
        &self,
        body: &impl serde::Serialize,
        parse: impl Fn(&[u8]) -> serde_json::Result<T>,
    ) -> Result<T, ModelError> {
        let parse = &parse;
        self.with_retries(body, |post| async move {
            let resp = post
                .timeout(self.timeout)
                .send()
                .await
                .map_err(|e| self.transport_error(e))?;
            let resp = self.succeeded(resp).await?;
            let bytes = read_body(resp).await.map_err(|e| match e {
                BodyError::Transport(e) => self.transport_error(e),
                too_large => ModelError::Response {
                    provider: self.provider,
                    message: too_large.to_string(),
                },
            })?;
            parse(&bytes).map_err(|e| {
                self.redact(ModelError::Response {
                    provider: self.provider,
                    message: format!(
                        "the response is not JSON ({e}): {}",
                        shorten(&self.secrets.redact(&String::from_utf8_lossy(&bytes)), 300)
                    ),
                })
            })
        })
        .await
    }

    /// POSTs `body` and returns the response once its status is a success (the body
    /// not read yet), with retries before that point.
    pub async fn post_stream(
        &self,
        body: &impl serde::Serialize,
    ) -> Result<reqwest::Response, ModelError> {
        self.with_retries(body, |post| async move {
            let send = post
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .send();
            let resp = tokio::time::timeout(self.timeout, send)
                .await
                .map_err(|_| ModelError::Timeout {
                    provider: self.provider,
                    after: self.timeout,
                })?
                .map_err(|e| self.transport_error(e))?;
            self.succeeded(resp).await
        })
        .await
    }

    /// `resp` when its status is a success, else the error its status and body say.
    async fn succeeded(&self, resp: reqwest::Response) -> Result<reqwest::Response, ModelError> {
        if resp.status().is_success() {
            Ok(resp)
        } else {
            Err(self.status_error(resp).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_the_query_and_secrets_come_from_the_url() {
        assert_eq!(
            endpoint("https://h/v1/?api-version=1", "/chat/completions"),
            "https://h/v1/chat/completions?api-version=1"
        );
        let s = model_secrets(
            Some("sk-key-123"),
            &[("x-extra".into(), "extra-secret-value".into())],
            "https://user:hunter2hunter2@host/v1?key=query-secret-1&v=1",
        );
        assert_eq!(
            s.redact("sk-key-123 extra-secret-value hunter2hunter2 query-secret-1 v=1"),
            "[redacted] [redacted] [redacted] [redacted] v=1"
        );
    }

    #[test]
    fn an_endpoint_that_is_no_url_is_refused_when_the_model_is_made() {
        let url = "http://[bad/v1/chat/completions?key=query-secret-1";
        let err = Transport::new(
            "openai",
            url.into(),
            vec![],
            model_secrets(Some("sk-key-123"), &[], url),
            Duration::from_secs(1),
            RetryPolicy::default(),
        )
        .err()
        .expect("a URL with a broken host is refused")
        .to_string();
        assert!(
            err.contains("base_url is not a valid URL (invalid IPv6 address)"),
            "{err}"
        );
        assert!(!err.contains("query-secret-1"), "{err}");
    }
}
