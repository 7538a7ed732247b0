//! What errors, results, `repr` and logs must never show: API keys, the values of
//! headers the user added (often a second key), and what a base URL can carry (a
//! password, query values such as `?key=...`). One scrubber for the model clients
//! and the OpenAPI tools.

use std::sync::Arc;

/// The strings to scrub, longest first (so a secret that contains another is replaced
/// whole). Short values are left alone: replacing every `1` of `?v=1` would garble the
/// messages without hiding anything.
#[derive(Clone, Default)]
pub struct Secrets(Arc<[String]>);

/// The shortest key that is scrubbed.
const MIN_KEY: usize = 4;
/// The shortest other value (a header's, a URL's) that is scrubbed.
const MIN_VALUE: usize = 8;

impl Secrets {
    /// `keys` (credentials: scrubbed from 4 characters) and `values` (what may hold
    /// one: scrubbed from 8).
    pub fn new(
        keys: impl IntoIterator<Item = String>,
        values: impl IntoIterator<Item = String>,
    ) -> Self {
        let mut all: Vec<String> = keys.into_iter().filter(|k| k.len() >= MIN_KEY).collect();
        all.extend(values.into_iter().filter(|v| v.len() >= MIN_VALUE));
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all.dedup();
        Secrets(all.into())
    }

    /// These secrets and `keys` (credentials learnt later, such as a fetched token).
    pub fn extended(&self, keys: impl IntoIterator<Item = String>) -> Self {
        Secrets::new(self.0.iter().cloned().chain(keys), [])
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret replaced by `[redacted]`, also the start of one that a
    /// shortened text (ending in `…`) cut off.
    pub fn redact(&self, text: &str) -> String {
        let out = self.redact_whole(text);
        match out.strip_suffix('…') {
            Some(body) => format!("{}…", self.redact_tail(body)),
            None => out,
        }
    }

    /// `text`, which was cut at its end (a body read up to a limit), with every
    /// secret replaced, also the start of one the cut left at its end.
    pub fn redact_cut(&self, text: &str) -> String {
        self.redact_tail(&self.redact_whole(text))
    }

    fn redact_whole(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in self.0.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "[redacted]");
            }
        }
        out
    }

    /// `text` with the start of a secret at its very end replaced.
    fn redact_tail(&self, text: &str) -> String {
        let cut = self.0.iter().find_map(|s| {
            (MIN_KEY..s.len())
                .rev()
                .filter(|&n| s.is_char_boundary(n))
                .find(|&n| text.ends_with(&s[..n]))
                .map(|n| text.len() - n)
        });
        match cut {
            Some(at) => format!("{}[redacted]", &text[..at]),
            None => text.to_owned(),
        }
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
    fn scrubs_keys_and_long_values() {
        let s = Secrets::new(
            ["sk-key-123".to_owned()],
            [
                "extra-secret-value",
                "1",
                "hunter2hunter2",
                "query-secret-1",
            ]
            .map(str::to_owned),
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
        assert_eq!(s.redact_cut("key: sk-key"), "key: [redacted]");
        assert_eq!(s.redact_cut("plain text"), "plain text");
        assert!(!s.in_text("nothing here"));
    }
}
