//! What errors, results, `repr` and logs must never show: API keys, the values of
//! headers the user added (often a second key), and what a base URL can carry (a
//! password, query values such as `?key=...`). One scrubber for the model clients
//! and the OpenAPI tools.

use std::sync::Arc;

/// The secrets to scrub. A provider's error body may echo a key changed: upper- or
/// lower-cased, without its `sk-` prefix, or only its last characters. So matching
/// ignores ASCII case, and for a key (a credential) any run of [`FRAGMENT`] or more
/// of its characters is scrubbed too: the text is read once through a window of
/// [`FRAGMENT`] bytes looked up in the set of the keys' windows, which keeps the cost
/// linear in the text whatever the number of keys.
#[derive(Clone, Default)]
pub struct Secrets(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// Every secret, ASCII-lowercased, longest first (so a secret that contains
    /// another is replaced whole).
    whole: Vec<String>,
    /// Each [`FRAGMENT`]-byte window of each key, ASCII-lowercased, as a number.
    windows: foldhash::HashSet<u64>,
    /// The keys as given (what [`Secrets::extended`] builds on).
    keys: Vec<String>,
    values: Vec<String>,
}

/// The shortest key that is scrubbed.
const MIN_KEY: usize = 4;
/// The shortest other value (a header's, a URL's) that is scrubbed.
const MIN_VALUE: usize = 8;
/// The shortest piece of a key that is scrubbed on its own: long enough that a
/// random key's piece does not turn up in ordinary text (8 characters of a key are
/// some 40 bits of it), short enough to catch the tail a provider shows.
pub const FRAGMENT: usize = 8;

fn window(bytes: &[u8]) -> u64 {
    let mut w = [0u8; FRAGMENT];
    w.copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

impl Secrets {
    /// `keys` (credentials: scrubbed from 4 characters, and by any 8-character piece)
    /// and `values` (what may hold one: scrubbed whole, from 8 characters).
    pub fn new(
        keys: impl IntoIterator<Item = String>,
        values: impl IntoIterator<Item = String>,
    ) -> Self {
        let keys: Vec<String> = keys.into_iter().filter(|k| k.len() >= MIN_KEY).collect();
        let values: Vec<String> = values
            .into_iter()
            .filter(|v| v.len() >= MIN_VALUE)
            .collect();
        let mut whole: Vec<String> = keys
            .iter()
            .chain(&values)
            .map(|s| s.to_ascii_lowercase())
            .collect();
        whole.sort_by_key(|s| std::cmp::Reverse(s.len()));
        whole.dedup();
        let windows = keys
            .iter()
            .flat_map(|k| {
                let lower = k.to_ascii_lowercase().into_bytes();
                lower.windows(FRAGMENT).map(window).collect::<Vec<_>>()
            })
            .collect();
        Secrets(Arc::new(Inner {
            whole,
            windows,
            keys,
            values,
        }))
    }

    /// These secrets and `keys` (credentials learnt later, such as a fetched token).
    pub fn extended(&self, keys: impl IntoIterator<Item = String>) -> Self {
        Secrets::new(
            self.0.keys.iter().cloned().chain(keys),
            self.0.values.iter().cloned(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.whole.is_empty()
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

    /// The byte ranges of `text` that show a secret or a piece of a key, merged
    /// and widened to character boundaries, in order.
    fn found(&self, text: &str) -> Vec<(usize, usize)> {
        if self.is_empty() {
            return Vec::new();
        }
        // ASCII lowercasing keeps every byte where it was.
        let lower = text.to_ascii_lowercase();
        let mut hits: Vec<(usize, usize)> = Vec::new();
        for s in &self.0.whole {
            hits.extend(
                lower
                    .match_indices(s.as_str())
                    .map(|(i, m)| (i, i + m.len())),
            );
        }
        if !self.0.windows.is_empty() {
            let bytes = lower.as_bytes();
            for (i, w) in bytes.windows(FRAGMENT).enumerate() {
                if self.0.windows.contains(&window(w)) {
                    hits.push((i, i + FRAGMENT));
                }
            }
        }
        hits.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (mut a, mut b) in hits {
            while !text.is_char_boundary(a) {
                a -= 1;
            }
            while !text.is_char_boundary(b) {
                b += 1;
            }
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        merged
    }

    fn redact_whole(&self, text: &str) -> String {
        let found = self.found(text);
        if found.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (a, b) in found {
            out.push_str(&text[at..a]);
            out.push_str("[redacted]");
            at = b;
        }
        out.push_str(&text[at..]);
        out
    }

    /// `text` with the start of a secret at its very end replaced.
    fn redact_tail(&self, text: &str) -> String {
        let lower = text.to_ascii_lowercase();
        let cut = self.0.whole.iter().find_map(|s| {
            (MIN_KEY..s.len())
                .rev()
                .filter(|&n| s.is_char_boundary(n))
                .find(|&n| lower.ends_with(&s[..n]))
                .map(|n| text.len() - n)
        });
        match cut {
            Some(at) => format!("{}[redacted]", &text[..at]),
            None => text.to_owned(),
        }
    }

    /// Whether `text` holds a secret or a piece of a key (a header value to mark
    /// sensitive).
    pub fn in_text(&self, text: &str) -> bool {
        !self.found(text).is_empty()
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

    const KEY: &str = "sk-proj-Zq8vR2mXw4LpT7yN0bKc";

    #[test]
    fn scrubs_case_variants_and_pieces_of_a_key() {
        let s = Secrets::new([KEY.to_owned()], []);
        let body = KEY.strip_prefix("sk-").unwrap();
        let tail = &KEY[KEY.len() - 12..];
        for shown in [
            KEY.to_uppercase(),
            KEY.to_lowercase(),
            body.to_owned(),
            tail.to_owned(),
            KEY[5..13].to_owned(),
        ] {
            let text = format!("{{\"error\": \"Incorrect API key provided: {shown}.\"}}");
            let out = s.redact(&text);
            assert!(!out.contains(&shown), "{shown} left in {out}");
            assert_eq!(
                out,
                "{\"error\": \"Incorrect API key provided: [redacted].\"}"
            );
            assert!(s.in_text(&text));
        }
        // Seven characters of the key are not enough to be a piece of it.
        let seven = &KEY[KEY.len() - 7..];
        assert_eq!(s.redact(&format!("id {seven}")), format!("id {seven}"));
        // Pieces that overlap or touch are one redaction, and text around them stays.
        let two = format!("a {} b {} é", &KEY[3..15], &KEY[10..20]);
        assert_eq!(s.redact(&two), "a [redacted] b [redacted] é");
    }

    #[test]
    fn values_are_scrubbed_whole_in_any_case() {
        let s = Secrets::new([], ["header-value-123".to_owned()]);
        assert_eq!(s.redact("x HEADER-VALUE-123 y"), "x [redacted] y");
        // A value is not scrubbed by pieces: it may be an ordinary word.
        assert_eq!(s.redact("header-value"), "header-value");
    }

    #[test]
    fn scanning_a_large_body_stays_linear() {
        let s = Secrets::new([KEY.to_owned()], []);
        let mut text = "lorem ipsum dolor ".repeat(200_000);
        text.push_str(&KEY[4..].to_uppercase());
        let started = std::time::Instant::now();
        let out = s.redact(&text);
        assert!(out.ends_with("[redacted]"));
        // 3.6 MB: a quadratic scan would take minutes.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
