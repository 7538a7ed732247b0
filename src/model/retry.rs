//! Model calls' retries: which failures are worth another attempt, and what the
//! provider asks to wait. The backoff itself is [`crate::retry::Backoff`], shared with
//! node and middleware retries.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::retry::{random_unit, Backoff, Jitter};

/// How a model call retries: up to `max_retries` more attempts after the first,
/// waiting `initial_backoff × 2ⁿ` (capped at `max_backoff`, with random jitter of up
/// to half of it) — or exactly what the provider's `Retry-After` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is returned.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Default::default()
        }
    }

    /// The wait before retry number `attempt` (0 for the first retry), or `None` when
    /// the provider asked for a wait longer than `max_retry_after`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(ra) = retry_after {
            return (ra <= self.max_retry_after).then_some(ra);
        }
        let backoff = Backoff {
            initial: self.initial_backoff.as_secs_f64(),
            factor: 2.0,
            max: self.max_backoff.as_secs_f64(),
            max_retries: u32::MAX,
            jitter: Jitter::Equal,
        };
        // `attempt` is below `u32::MAX`, so the schedule always has a wait.
        let secs = backoff.wait(attempt, random_unit())?;
        Some(Duration::try_from_secs_f64(secs).unwrap_or(self.max_backoff))
    }
}

/// Statuses worth retrying: 408 (timeout), 409 (conflict / lock), 429 (rate limit)
/// and every 5xx (including Anthropic's 529 "overloaded").
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `Retry-After` in
/// seconds (integer or decimal) or as an HTTP date.
pub fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let v = get("retry-after")?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(v)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the
/// form RFC 9110 requires senders to use.
fn parse_http_date(s: &str) -> Option<u64> {
    let rest = s.split_once(", ")?.1;
    let mut parts = rest.split_whitespace();
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if parts.next()? != "GMT" || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days)
        .ok()
        .map(|d| d * 86_400 + h * 3600 + m * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn backoff_grows_with_jitter_and_honours_retry_after() {
        let p = RetryPolicy::default();
        for attempt in 0..6 {
            let d = p.delay(attempt, None).unwrap();
            let base = (Duration::from_millis(500) * 2u32.pow(attempt)).min(p.max_backoff);
            assert!(d >= base / 2 && d <= base, "{attempt}: {d:?}");
        }
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(p.delay(0, Some(Duration::from_secs(3600))), None);
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(500)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        // In the past: no wait.
        assert_eq!(parse_retry_after(&h), Some(Duration::ZERO));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("garbage"), None);
    }

    #[test]
    fn which_statuses_retry() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!retryable_status(s), "{s}");
        }
    }
}
