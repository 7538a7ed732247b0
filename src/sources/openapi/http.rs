//! The HTTP client a toolset's tools share: its headers, the secrets to scrub from
//! results, and the redirect policy that keeps calls on the spec's hosts.

use super::*;

// ---------------------------------------------------------------------------------
// Execution

/// The HTTP client and the toolset's headers, shared by its tools.
pub(super) struct Http {
    pub(super) client: reqwest::Client,
    pub(super) headers: HeaderMap,
    /// Credential values (and their token halves) to scrub from results and errors;
    /// grows when an OAuth2 token is fetched.
    pub(super) secrets: RwLock<Secrets>,
    /// The hosts a redirect may lead to (lowercase): see
    /// [`OpenApiOptions::allowed_hosts`]. Filled as the spec is read.
    pub(super) hosts: Arc<RwLock<HashSet<String>>>,
}

/// The host of `url`, lowercase, if it has one.
pub(super) fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
}

/// Follows a redirect only to an allowed host (and at most 10 of them).
pub(super) fn redirect_policy(hosts: Arc<RwLock<HashSet<String>>>) -> reqwest::redirect::Policy {
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

pub(super) fn is_secret_header(name: &str) -> bool {
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
    pub(super) fn new(options: &OpenApiOptions) -> Result<Self, OpenApiError> {
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
    pub(super) fn allow_host_of(&self, url: &str) {
        if let Some(h) = host_of(url) {
            self.hosts
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(h);
        }
    }

    pub(super) fn redact(&self, text: &str) -> String {
        self.secrets().redact(text)
    }

    pub(super) fn secrets(&self) -> Secrets {
        self.secrets
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
