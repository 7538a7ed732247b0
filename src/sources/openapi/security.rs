//! OpenAPI `securitySchemes`: credentials given per scheme name, applied to the
//! operations whose `security` requirements name that scheme.
//!
//! Why per scheme name: a spec says *how* each operation authenticates (an API key
//! in a header, a bearer token, OAuth2…), so the user should only have to say *with
//! what*; the same toolset may mix schemes (a public read, a key-protected write).
//!
//! Decisions worth knowing:
//! - An operation's `security` (else the spec's) lists alternatives; the first whose
//!   schemes all have credentials is used. An empty alternative (`{}`) or `security:
//!   []` means no authentication. An operation none of whose alternatives can be met
//!   is still a tool (its `headers` may authenticate it) and is logged.
//! - A credential naming a scheme the spec does not declare, or of the wrong kind for
//!   it, is a construction error: a typo must not silently send unauthenticated calls.
//! - OAuth2 supports the client-credentials flow: the token is fetched from the
//!   flow's `tokenUrl` (client authentication by HTTP Basic, or in the form body),
//!   cached per set of scopes until shortly before `expires_in`, and shared by
//!   concurrent calls (one fetch). A 401 drops the cached token, so the next call
//!   fetches a new one; the call itself is not retried (operations need not be
//!   idempotent).
//! - Every credential, and every token fetched, is scrubbed from results and errors.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION};
use serde_json::Value;
use tokio::sync::Mutex;

use super::{encode, error_chain, status_line, OpenApiError};
use crate::secrets::Secrets;

/// How the client authenticates itself to an OAuth2 token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// `client_secret_basic` (RFC 6749 §2.3.1's recommended form).
    #[default]
    Basic,
    /// `client_secret_post`: `client_id` and `client_secret` in the form body.
    Post,
}

/// An OAuth2 client-credentials grant.
#[derive(Clone)]
pub struct ClientCredentials {
    pub client_id: String,
    pub client_secret: String,
    /// The scopes to ask for; `None`: the scopes the operation's requirement lists.
    pub scopes: Option<Vec<String>>,
    /// Overrides the flow's `tokenUrl`.
    pub token_url: Option<String>,
    pub auth: ClientAuth,
}

/// A credential for one security scheme, keyed by the scheme's name.
#[derive(Clone)]
pub enum Credential {
    /// An `apiKey`'s value, or an HTTP `bearer` token.
    Secret(String),
    /// HTTP `basic`.
    Basic { username: String, password: String },
    /// OAuth2's client-credentials flow.
    ClientCredentials(ClientCredentials),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::Secret(_) => "Credential::Secret([redacted])",
            Credential::Basic { .. } => "Credential::Basic([redacted])",
            Credential::ClientCredentials(_) => "Credential::ClientCredentials([redacted])",
        })
    }
}

impl Credential {
    fn kind(&self) -> &'static str {
        match self {
            Credential::Secret(_) => "a secret string",
            Credential::Basic { .. } => "a username and password",
            Credential::ClientCredentials(_) => "OAuth2 client credentials",
        }
    }

    /// The strings a result or error must never show.
    pub(super) fn secrets(&self) -> Vec<String> {
        match self {
            Credential::Secret(s) => vec![s.clone()],
            Credential::Basic { username, password } => {
                vec![password.clone(), basic_value(username, password)]
            }
            Credential::ClientCredentials(c) => vec![
                c.client_secret.clone(),
                basic_value(
                    &encode(&c.client_id, false),
                    &encode(&c.client_secret, false),
                ),
            ],
        }
    }
}

fn basic_value(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

fn sensitive(value: &str, scheme: &str) -> Result<HeaderValue, OpenApiError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        OpenApiError::Config(format!(
            "the credential for security scheme {scheme:?} is not a valid header value \
             (no line breaks or control characters)"
        ))
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// What one scheme adds to a request.
pub(super) enum Apply {
    Header(HeaderName, HeaderValue),
    /// A query parameter, already percent-encoded.
    Query(String),
    /// A `name=value` cookie, the value percent-encoded.
    Cookie(String),
    OAuth2(TokenSource),
}

/// The schemes an operation authenticates with, and the scopes each asks for.
#[derive(Clone, Default)]
pub(super) struct OpAuth(pub Vec<(Arc<Apply>, Vec<String>)>);

/// The toolset's schemes that have credentials.
pub(super) struct Security {
    schemes: HashMap<String, Arc<Apply>>,
}

impl Security {
    /// Matches `credentials` to the spec's `components.securitySchemes`.
    /// `token_base` resolves a relative `tokenUrl`.
    pub(super) fn new(
        root: &Value,
        credentials: &[(String, Credential)],
        token_base: Option<&str>,
    ) -> Result<Self, OpenApiError> {
        let declared = root
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object);
        let mut schemes = HashMap::new();
        for (name, cred) in credentials {
            let Some(mut scheme) = declared.and_then(|d| d.get(name)) else {
                let mut known: Vec<&str> = declared
                    .map(|d| d.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                known.sort_unstable();
                return Err(OpenApiError::Config(format!(
                    "credentials name the security scheme {name:?}, which the spec does not \
                     declare (components.securitySchemes has {known:?})"
                )));
            };
            if let Some(Value::String(r)) = scheme.get("$ref") {
                let pointer = r.strip_prefix('#').unwrap_or(r);
                scheme = root.pointer(pointer).ok_or_else(|| {
                    OpenApiError::Invalid(format!(
                        "security scheme {name:?}: $ref {r:?} points at nothing"
                    ))
                })?;
            }
            let apply = apply_for(name, scheme, cred, token_base)?;
            schemes.insert(name.clone(), Arc::new(apply));
        }
        Ok(Security { schemes })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.schemes.is_empty()
    }

    /// The schemes for an operation with `security` `requirement` (the operation's or
    /// the spec's); `Err` names the alternatives none of which has credentials.
    pub(super) fn for_operation(&self, requirement: Option<&Value>) -> Result<OpAuth, String> {
        let Some(Value::Array(alternatives)) = requirement else {
            return Ok(OpAuth::default());
        };
        if alternatives.is_empty() {
            return Ok(OpAuth::default());
        }
        let mut wanted = Vec::new();
        for alt in alternatives {
            let Some(alt) = alt.as_object() else { continue };
            let names: Vec<&String> = alt.keys().collect();
            if names.iter().all(|n| self.schemes.contains_key(*n)) {
                let chosen = alt
                    .iter()
                    .map(|(n, scopes)| {
                        let scopes = scopes
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default();
                        (self.schemes[n].clone(), scopes)
                    })
                    .collect();
                return Ok(OpAuth(chosen));
            }
            wanted.push(
                names
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" + "),
            );
        }
        Err(wanted.join(" or "))
    }
}

fn apply_for(
    name: &str,
    scheme: &Value,
    cred: &Credential,
    token_base: Option<&str>,
) -> Result<Apply, OpenApiError> {
    let field = |k: &str| scheme.get(k).and_then(Value::as_str).unwrap_or("");
    let wrong = |wants: &str| {
        OpenApiError::Config(format!(
            "security scheme {name:?} ({}) needs {wants}, but its credential is {}",
            describe(scheme),
            cred.kind()
        ))
    };
    match field("type") {
        "apiKey" => {
            let Credential::Secret(value) = cred else {
                return Err(wrong("a secret string (the key)"));
            };
            let key = field("name");
            if key.is_empty() {
                return Err(OpenApiError::Invalid(format!(
                    "security scheme {name:?} is an apiKey without a `name`"
                )));
            }
            match field("in") {
                "header" => {
                    let header = HeaderName::from_bytes(key.as_bytes()).map_err(|_| {
                        OpenApiError::Invalid(format!(
                            "security scheme {name:?}: {key:?} is not a valid header name"
                        ))
                    })?;
                    Ok(Apply::Header(header, sensitive(value, name)?))
                }
                "query" => Ok(Apply::Query(format!(
                    "{}={}",
                    encode(key, false),
                    encode(value, false)
                ))),
                "cookie" => Ok(Apply::Cookie(format!("{key}={}", encode(value, false)))),
                other => Err(OpenApiError::Invalid(format!(
                    "security scheme {name:?}: an apiKey `in` must be header, query or \
                     cookie, not {other:?}"
                ))),
            }
        }
        "http" => match (field("scheme").to_ascii_lowercase().as_str(), cred) {
            ("bearer", Credential::Secret(token)) => Ok(Apply::Header(
                AUTHORIZATION,
                sensitive(&format!("Bearer {token}"), name)?,
            )),
            ("bearer", _) => Err(wrong("a secret string (the token)")),
            ("basic", Credential::Basic { username, password }) => Ok(Apply::Header(
                AUTHORIZATION,
                sensitive(&format!("Basic {}", basic_value(username, password)), name)?,
            )),
            ("basic", _) => Err(wrong("a username and password")),
            (other, _) => Err(OpenApiError::Config(format!(
                "security scheme {name:?} uses HTTP {other:?} authentication; ironloop \
                 supports bearer and basic (pass the header yourself with headers=)"
            ))),
        },
        "oauth2" => {
            let Credential::ClientCredentials(c) = cred else {
                return Err(wrong(
                    "OAuth2 client credentials (client_id, client_secret)",
                ));
            };
            let flow_url = scheme
                .pointer("/flows/clientCredentials/tokenUrl")
                .and_then(Value::as_str);
            let url = match (&c.token_url, flow_url) {
                (Some(u), _) => u.clone(),
                (None, Some(u)) => u.to_string(),
                (None, None) => {
                    return Err(OpenApiError::Config(format!(
                        "security scheme {name:?} has no clientCredentials flow (the only \
                         OAuth2 flow ironloop can run without a person); pass token_url \
                         to use one anyway"
                    )))
                }
            };
            let url = match (reqwest::Url::parse(&url), token_base) {
                (Ok(u), _) => u,
                (Err(_), Some(base)) => reqwest::Url::parse(base)
                    .and_then(|b| b.join(&url))
                    .map_err(|e| {
                        OpenApiError::Config(format!(
                            "security scheme {name:?}: cannot resolve the token URL {url:?}: {e}"
                        ))
                    })?,
                (Err(e), None) => {
                    return Err(OpenApiError::Config(format!(
                        "security scheme {name:?}: the token URL {url:?} is not absolute \
                         ({e}) and there is no base URL to resolve it against; pass token_url"
                    )))
                }
            };
            Ok(Apply::OAuth2(TokenSource {
                scheme: name.to_string(),
                url: url.to_string(),
                grant: c.clone(),
                cache: Mutex::new(HashMap::new()),
            }))
        }
        "openIdConnect" | "mutualTLS" => Err(OpenApiError::Config(format!(
            "security scheme {name:?} is {}, which ironloop does not support; pass the \
             credential as a header with headers=",
            field("type")
        ))),
        other => Err(OpenApiError::Invalid(format!(
            "security scheme {name:?} has an unknown type {other:?}"
        ))),
    }
}

fn describe(scheme: &Value) -> String {
    let f = |k: &str| scheme.get(k).and_then(Value::as_str).unwrap_or("?");
    match f("type") {
        "apiKey" => format!("an API key in the {} {:?}", f("in"), f("name")),
        "http" => format!("HTTP {}", f("scheme")),
        other => other.to_string(),
    }
}

struct Token {
    value: HeaderValue,
    /// When to fetch a new one; `None`: until the server refuses it.
    refresh_at: Option<Instant>,
}

/// An OAuth2 client-credentials token, fetched on first use and cached per scope set.
pub(super) struct TokenSource {
    scheme: String,
    url: String,
    grant: ClientCredentials,
    cache: Mutex<HashMap<Vec<String>, Token>>,
}

impl TokenSource {
    fn scopes(&self, required: &[String]) -> Vec<String> {
        let mut s = self
            .grant
            .scopes
            .clone()
            .unwrap_or_else(|| required.to_vec());
        s.sort();
        s.dedup();
        s
    }

    /// The `Authorization` value for a call needing `required` scopes; new tokens are
    /// added to `secrets` (so a server echoing one cannot show it).
    pub(super) async fn authorization(
        &self,
        client: &reqwest::Client,
        required: &[String],
        timeout: Duration,
        secrets: &std::sync::RwLock<Secrets>,
    ) -> Result<HeaderValue, String> {
        let scopes = self.scopes(required);
        // Held across the fetch: concurrent calls wait for one token, not fetch many.
        let mut cache = self.cache.lock().await;
        if let Some(t) = cache.get(&scopes) {
            if t.refresh_at.is_none_or(|at| Instant::now() < at) {
                return Ok(t.value.clone());
            }
        }
        let (token, lifetime) = self.fetch(client, &scopes, timeout, secrets).await?;
        {
            let mut s = secrets.write().unwrap_or_else(|e| e.into_inner());
            *s = s.extended([token.clone()]);
        }
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            format!(
                "the token endpoint of security scheme {:?} returned an access token that \
                 is not a valid header value",
                self.scheme
            )
        })?;
        value.set_sensitive(true);
        let refresh_at = lifetime.map(|l| Instant::now() + l.saturating_sub(margin(l)));
        cache.insert(
            scopes,
            Token {
                value: value.clone(),
                refresh_at,
            },
        );
        Ok(value)
    }

    /// Forgets the token for `required` (the server refused it).
    pub(super) async fn invalidate(&self, required: &[String]) {
        self.cache.lock().await.remove(&self.scopes(required));
    }

    async fn fetch(
        &self,
        client: &reqwest::Client,
        scopes: &[String],
        timeout: Duration,
        secrets: &std::sync::RwLock<Secrets>,
    ) -> Result<(String, Option<Duration>), String> {
        let g = &self.grant;
        let mut form = vec![("grant_type", "client_credentials".to_string())];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let mut rb = client
            .post(&self.url)
            .header(ACCEPT, "application/json")
            .timeout(timeout);
        match g.auth {
            ClientAuth::Basic => {
                // RFC 6749 §2.3.1: both parts form-encoded before Basic encoding.
                let v = basic_value(
                    &encode(&g.client_id, false),
                    &encode(&g.client_secret, false),
                );
                let mut h = HeaderValue::from_str(&format!("Basic {v}"))
                    .map_err(|_| "the client credentials are not valid in a header".to_string())?;
                h.set_sensitive(true);
                rb = rb.header(AUTHORIZATION, h);
            }
            ClientAuth::Post => {
                form.push(("client_id", g.client_id.clone()));
                form.push(("client_secret", g.client_secret.clone()));
            }
        }
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v, false)))
            .collect::<Vec<_>>()
            .join("&");
        let redact = |t: &str| secrets.read().unwrap_or_else(|e| e.into_inner()).redact(t);
        let fail = |why: String| {
            redact(&format!(
                "could not get an OAuth2 token for security scheme {:?} from {}: {why}",
                self.scheme, self.url
            ))
        };
        let resp = rb
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(|e| fail(error_chain(&e)))?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(|e| fail(error_chain(&e)))?;
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
        if !status.is_success() {
            return Err(fail(format!("HTTP {}: {text}", status_line(status))));
        }
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| fail(format!("the response is not JSON ({e})")))?;
        let token = match v.get("access_token") {
            Some(Value::String(t)) if !t.is_empty() => t.clone(),
            _ => return Err(fail("the response has no access_token".into())),
        };
        let lifetime = match v.get("expires_in") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.parse::<f64>().ok(),
            _ => None,
        }
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(1e9)));
        Ok((token, lifetime))
    }
}

/// How long before expiry a token is replaced: a call must not start with a token
/// that expires on the way.
fn margin(lifetime: Duration) -> Duration {
    (lifetime / 10).min(Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({"components": {"securitySchemes": {
            "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "qkey": {"type": "apiKey", "in": "query", "name": "api key"},
            "bearer": {"type": "http", "scheme": "bearer"},
            "basic": {"type": "http", "scheme": "Basic"},
            "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://x/.well-known"},
            "oauth": {"type": "oauth2", "flows": {"clientCredentials": {
                "tokenUrl": "/oauth/token", "scopes": {"read": ""}}}},
        }}})
    }

    fn secret(s: &str) -> Credential {
        Credential::Secret(s.into())
    }

    #[test]
    fn credentials_are_matched_to_declared_schemes() {
        let err = Security::new(&spec(), &[("kye".into(), secret("abc"))], None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("\"kye\"") && err.contains("\"key\""), "{err}");
        let basic = Credential::Basic {
            username: "u".into(),
            password: "p".into(),
        };
        let err = Security::new(&spec(), &[("key".into(), basic)], None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("needs a secret string"), "{err}");
        assert!(!err.contains('p') || !err.contains("\"p\""), "{err}");
        let err = Security::new(&spec(), &[("oidc".into(), secret("abc"))], None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("does not support"), "{err}");
        let cc = Credential::ClientCredentials(ClientCredentials {
            client_id: "id".into(),
            client_secret: "s3cret".into(),
            scopes: None,
            token_url: None,
            auth: ClientAuth::Basic,
        });
        let err = Security::new(&spec(), &[("oauth".into(), cc.clone())], None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("not absolute"), "{err}");
        let s = Security::new(
            &spec(),
            &[("oauth".into(), cc)],
            Some("https://api.example.com/v1/"),
        )
        .unwrap();
        let Apply::OAuth2(t) = &*s.schemes["oauth"] else {
            panic!()
        };
        assert_eq!(t.url, "https://api.example.com/oauth/token");
    }

    #[test]
    fn the_first_alternative_with_credentials_is_chosen() {
        let s = Security::new(
            &spec(),
            &[
                ("qkey".into(), secret("a b&c")),
                ("bearer".into(), secret("tok")),
            ],
            None,
        )
        .unwrap();
        let req = json!([{"key": [], "bearer": []}, {"qkey": []}]);
        let auth = s.for_operation(Some(&req)).unwrap();
        assert_eq!(auth.0.len(), 1);
        assert!(matches!(&*auth.0[0].0, Apply::Query(q) if q == "api%20key=a%20b%26c"));
        let none = s.for_operation(Some(&json!([{"key": []}, {"basic": []}])));
        assert_eq!(none.err().unwrap(), "key or basic");
        assert!(s.for_operation(Some(&json!([]))).unwrap().0.is_empty());
        assert!(s.for_operation(None).unwrap().0.is_empty());
    }

    #[test]
    fn secrets_include_encoded_forms() {
        let b = Credential::Basic {
            username: "user".into(),
            password: "pass-word".into(),
        };
        let s = b.secrets();
        assert!(s.contains(&"pass-word".to_string()));
        assert!(s.contains(&basic_value("user", "pass-word")));
        assert_eq!(format!("{b:?}"), "Credential::Basic([redacted])");
    }

    #[test]
    fn margins() {
        assert_eq!(margin(Duration::from_secs(3600)), Duration::from_secs(30));
        assert_eq!(margin(Duration::from_secs(10)), Duration::from_secs(1));
    }
}
