//! Detectors of personal data in text (email addresses, credit card numbers, IP and
//! MAC addresses, URLs), for `ironloop.middleware.PIIMiddleware`. They find what
//! LangChain 1.5's detectors find (the same patterns and checks: Luhn for cards, a
//! parse for IPv4 addresses, a host for URLs) so a rule behaves the same on either,
//! but run here: a middleware that scans every message of every turn should not cost
//! a Python regex pass per type per message.
//!
//! Offsets are in characters (Unicode scalar values), as Python's `str` indexes, not
//! bytes.

use std::net::Ipv4Addr;
use std::sync::LazyLock;

use regex::Regex;

/// One detected value: the matched text and its character span `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiiMatch {
    pub value: String,
    pub start: usize,
    pub end: usize,
}

/// The built-in kinds, by the names LangChain gives them.
pub const KINDS: &[&str] = &["email", "credit_card", "ip", "mac_address", "url"];

/// A kind that is not one of [`KINDS`].
#[derive(Debug, thiserror::Error)]
#[error("unknown PII type {0:?}: the built-in detectors are {KINDS:?}; give a custom detector (a regex or a function) for other types")]
pub struct UnknownKind(pub String);

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a built-in PII pattern compiles")
}

static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,}\b"));
static CARD: LazyLock<Regex> = LazyLock::new(|| re(r"\b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b"));
static IPV4: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b"));
static MAC: LazyLock<Regex> = LazyLock::new(|| re(r"\b([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b"));
static URL_SCHEME: LazyLock<Regex> = LazyLock::new(|| re(r#"https?://[^\s<>"{}|\\^`\[\]]+"#));
static URL_BARE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:www\.)?[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+(?:/[^\s]*)?",
    )
});

/// The matches of the built-in detector `kind` in `text`, in order.
pub fn detect(kind: &str, text: &str) -> Result<Vec<PiiMatch>, UnknownKind> {
    let spans: Vec<(usize, usize)> = match kind {
        "email" => spans(&EMAIL, text, |_| true),
        "credit_card" => spans(&CARD, text, passes_luhn),
        "ip" => spans(&IPV4, text, |s| s.parse::<Ipv4Addr>().is_ok()),
        "mac_address" => spans(&MAC, text, |_| true),
        "url" => urls(text),
        other => return Err(UnknownKind(other.to_owned())),
    };
    Ok(to_chars(text, spans))
}

fn spans(re: &Regex, text: &str, keep: impl Fn(&str) -> bool) -> Vec<(usize, usize)> {
    re.find_iter(text)
        .filter(|m| keep(m.as_str()))
        .map(|m| (m.start(), m.end()))
        .collect()
}

/// The Luhn checksum over the digits of `number`, which must hold 13 to 19 digits.
fn passes_luhn(number: &str) -> bool {
    let digits: Vec<u32> = number.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2 == 1, d * 2) {
            (true, v) if v > 9 => v - 9,
            (true, v) => v,
            (false, _) => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// URLs with an http(s) scheme and a host, then scheme-less ones that start with
/// `www.` or have a path (a bare `example.com` in prose is not taken for a URL) and do
/// not overlap a URL already found.
fn urls(text: &str) -> Vec<(usize, usize)> {
    let mut found = spans(&URL_SCHEME, text, |u| {
        let rest = u.split_once("://").map_or("", |(_, r)| r);
        rest.split(['/', '?', '#'])
            .next()
            .is_some_and(|host| !host.is_empty())
    });
    let scheme_count = found.len();
    for m in URL_BARE.find_iter(text) {
        let (s, e) = (m.start(), m.end());
        let overlaps = found[..scheme_count]
            .iter()
            .any(|&(a, b)| (a <= s && s < b) || (a < e && e <= b));
        let url = m.as_str();
        let host = url.split(['/', '?', '#']).next().unwrap_or("");
        if !overlaps && (url.contains('/') || url.starts_with("www.")) && host.contains('.') {
            found.push((s, e));
        }
    }
    found
}

/// Byte spans (ascending within each detector pass) as character spans with values.
fn to_chars(text: &str, spans: Vec<(usize, usize)>) -> Vec<PiiMatch> {
    let char_at = |byte: usize| text[..byte].chars().count();
    spans
        .into_iter()
        .map(|(s, e)| PiiMatch {
            value: text[s..e].to_owned(),
            start: char_at(s),
            end: char_at(e),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(kind: &str, text: &str) -> Vec<String> {
        detect(kind, text)
            .unwrap()
            .into_iter()
            .map(|m| m.value)
            .collect()
    }

    /// A detector's kind, a text, and what LangChain's detector finds in it.
    const FOUND: &[(&str, &str, &[&str])] = &[
        (
            "email",
            "write to a.b+c@example.co.uk now",
            &["a.b+c@example.co.uk"],
        ),
        (
            "credit_card",
            "card 4532-0151-1283-0366 ok",
            &["4532-0151-1283-0366"],
        ),
        // Fails Luhn.
        ("credit_card", "card 1234 5678 9012 3456", &[]),
        ("ip", "from 192.168.1.1 and 999.1.1.1", &["192.168.1.1"]),
        // Leading zeros are refused.
        ("ip", "01.2.3.4", &[]),
        (
            "mac_address",
            "mac 00:1A:2b:3C:4d:5E.",
            &["00:1A:2b:3C:4d:5E"],
        ),
        (
            "url",
            "see https://x.org/a?b=1, www.y.com and z.net/p but not w.com",
            &["https://x.org/a?b=1,", "www.y.com", "z.net/p"],
        ),
        ("url", "http:///nohost", &[]),
    ];

    #[test]
    fn each_detector_finds_what_langchain_finds() {
        for &(kind, text, found) in FOUND {
            assert_eq!(values(kind, text), found, "{kind} in {text:?}");
        }
    }

    #[test]
    fn offsets_are_characters_and_unknown_kinds_are_refused() {
        let m = &detect("email", "héllo → a@b.io").unwrap()[0];
        assert_eq!((m.start, m.end), (8, 14));
        assert!(detect("ssn", "x")
            .unwrap_err()
            .to_string()
            .contains("credit_card"));
    }
}
