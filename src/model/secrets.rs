//! What a model's errors, `repr` and logs must never show: its API key, the values of
//! the headers the user added (`default_headers`, often a second key), and what a base
//! URL can carry (a password, query values such as `?key=...`).

use std::sync::Arc;

/// The strings to scrub, longest first (so a secret that contains another is replaced
/// whole). Short values are left alone: replacing every `1` of `?v=1` would garble the
/// messages without hiding anything.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Arc<[String]>);

/// The shortest API key that is scrubbed.
const MIN_KEY: usize = 4;
/// The shortest header or URL value that is scrubbed.
const MIN_VALUE: usize = 8;

impl Secrets {
    pub fn new(key: Option<&str>, headers: &[(String, String)], url: &str) -> Self {
        let mut all: Vec<String> = Vec::new();
        if let Some(k) = key.filter(|k| k.len() >= MIN_KEY) {
            all.push(k.to_owned());
        }
        let mut values: Vec<String> = headers.iter().map(|(_, v)| v.clone()).collect();
        if let Ok(u) = reqwest::Url::parse(url) {
            values.extend(u.password().map(str::to_owned));
            values.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
        }
        all.extend(values.into_iter().filter(|v| v.len() >= MIN_VALUE));
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all.dedup();
        Secrets(all.into())
    }

    /// `text` with every secret replaced by `[redacted]`, also the start of one that a
    /// shortened text (ending in `…`, see `model::shorten`) cut off.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in self.0.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "[redacted]");
            }
        }
        if let Some(body) = out.strip_suffix('…') {
            let cut = self.0.iter().find_map(|s| {
                (MIN_KEY..s.len())
                    .rev()
                    .filter(|&n| s.is_char_boundary(n))
                    .find(|&n| body.ends_with(&s[..n]))
                    .map(|n| body.len() - n)
            });
            if let Some(at) = cut {
                out = format!("{}[redacted]…", &body[..at]);
            }
        }
        out
    }

    /// Whether `text` holds a secret (a header value to mark sensitive).
    pub fn in_text(&self, text: &str) -> bool {
        self.0.iter().any(|s| text.contains(s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_the_key_headers_and_url_secrets() {
        let s = Secrets::new(
            Some("sk-key-123"),
            &[
                ("x-extra".into(), "extra-secret-value".into()),
                ("v".into(), "1".into()),
            ],
            "https://user:hunter2hunter2@host/v1?key=query-secret-1&v=1",
        );
        let text = "sk-key-123 extra-secret-value hunter2hunter2 query-secret-1 v=1";
        assert_eq!(
            s.redact(text),
            "[redacted] [redacted] [redacted] [redacted] v=1"
        );
        assert!(s.in_text("Bearer sk-key-123"));
        // Cut by shortening, the start of a secret is scrubbed too.
        assert_eq!(
            s.redact("auth: Bearer sk-key-1…"),
            "auth: Bearer [redacted]…"
        );
        assert_eq!(s.redact("abc…"), "abc…");
        // Endpoints keep a base URL's query at the end.
        assert_eq!(
            crate::model::http::endpoint("https://h/v1/?api-version=1", "/chat/completions"),
            "https://h/v1/chat/completions?api-version=1"
        );
        assert!(!s.in_text("nothing here"));
    }
}
