//! Retry with backoff, written once: how long to wait before each retry and when to
//! stop. Model calls ([`crate::model::RetryPolicy`]), node `RetryPolicy`s and the
//! `ToolRetryMiddleware` / `ModelRetryMiddleware` all take their waits from
//! [`Backoff`]; they differ only in the numbers and the jitter their API promises
//! (LangGraph's, LangChain's, and the providers' equal jitter), which is data here.
//!
//! The random draw is an argument rather than drawn inside, so that a caller whose
//! users fix it (LangGraph's tests patch `random.uniform`) draws it where they expect,
//! and so that the schedule itself is a pure function the tests can pin.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;

/// How a wait is spread so that clients that failed together do not retry together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// The computed wait, exactly.
    None,
    /// Plus up to one second (LangGraph's node `RetryPolicy`: `+ random.uniform(0, 1)`).
    UpToOneSecond,
    /// Within ±25% of the wait (LangChain's retry middleware).
    Quarter,
    /// Half fixed, half random (the model clients: AWS's "equal jitter").
    Equal,
}

/// A backoff setting a caller gave that no schedule can follow.
#[derive(Debug, Error, PartialEq)]
#[error("{name} must be >= 0 (got {value})")]
pub struct InvalidBackoff {
    /// The setting, by the name the caller's API gives it.
    pub name: String,
    /// What it was given.
    pub value: f64,
}

/// Exponential backoff: retry `n` (0 for the first retry) waits
/// `initial × factor^n` seconds, at most `max`, spread by `jitter`; a `factor` of 0
/// waits `initial` every time. After `max_retries` retries the failure is final.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The wait before the first retry, in seconds.
    pub initial: f64,
    /// How much each wait grows over the one before (0: constant waits).
    pub factor: f64,
    /// The longest wait, in seconds, before jitter.
    pub max: f64,
    /// How many retries follow the first attempt.
    pub max_retries: u32,
    pub jitter: Jitter,
}

impl Backoff {
    /// A backoff whose numbers are checked: none may be negative or NaN (an infinite
    /// `max` is no cap). `names` are the caller's names for `initial`, `factor` and
    /// `max`, so the error speaks its API.
    pub fn checked(
        initial: f64,
        factor: f64,
        max: f64,
        max_retries: u32,
        jitter: Jitter,
        names: [&str; 3],
    ) -> Result<Backoff, InvalidBackoff> {
        for (name, value) in names.into_iter().zip([initial, factor, max]) {
            if value.is_nan() || value < 0.0 {
                return Err(InvalidBackoff {
                    name: name.to_owned(),
                    value,
                });
            }
        }
        Ok(Backoff {
            initial,
            factor,
            max,
            max_retries,
            jitter,
        })
    }

    /// The wait in seconds before retry `retry` (0-based), or `None` when the retries
    /// are spent. `unit` is a random number in [0, 1) for the jitter (unused without).
    pub fn wait(&self, retry: u32, unit: f64) -> Option<f64> {
        if retry >= self.max_retries {
            return None;
        }
        let grown = if self.factor == 0.0 {
            self.initial
        } else {
            // `powf`, as Python's `**` on floats: the same waits to the last bit.
            self.initial * self.factor.powf(f64::from(retry))
        };
        let base = grown.min(self.max);
        Some(match self.jitter {
            Jitter::None => base,
            Jitter::UpToOneSecond => base + unit,
            Jitter::Quarter if base > 0.0 => (base + base * 0.25 * (2.0 * unit - 1.0)).max(0.0),
            Jitter::Quarter => base,
            Jitter::Equal => base / 2.0 + base / 2.0 * unit,
        })
    }
}

/// A number in [0, 1) from the standard library's per-process random keys: enough to
/// spread retries, with no random-number crate for it.
pub fn random_unit() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff(jitter: Jitter) -> Backoff {
        Backoff {
            initial: 0.5,
            factor: 2.0,
            max: 3.0,
            max_retries: 4,
            jitter,
        }
    }

    #[test]
    fn waits_grow_to_the_cap_and_stop_after_the_last_retry() {
        let b = backoff(Jitter::None);
        let waits: Vec<_> = (0..5).map(|n| b.wait(n, 0.7)).collect();
        assert_eq!(waits, [Some(0.5), Some(1.0), Some(2.0), Some(3.0), None]);
        let constant = Backoff { factor: 0.0, ..b };
        assert_eq!(constant.wait(3, 0.0), Some(0.5));
    }

    #[test]
    fn each_jitter_stays_in_its_range() {
        assert_eq!(backoff(Jitter::UpToOneSecond).wait(0, 0.05), Some(0.55));
        assert_eq!(backoff(Jitter::Quarter).wait(1, 0.0), Some(0.75));
        assert_eq!(backoff(Jitter::Quarter).wait(1, 1.0), Some(1.25));
        assert_eq!(backoff(Jitter::Equal).wait(2, 0.0), Some(1.0));
        assert_eq!(backoff(Jitter::Equal).wait(2, 1.0), Some(2.0));
        let zero = Backoff {
            initial: 0.0,
            ..backoff(Jitter::Quarter)
        };
        assert_eq!(zero.wait(0, 0.0), Some(0.0));
        for _ in 0..100 {
            let u = random_unit();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }

    #[test]
    fn negative_settings_are_refused_by_their_callers_name() {
        let names = ["initial_delay", "backoff_factor", "max_delay"];
        let err = Backoff::checked(0.1, -1.0, 1.0, 2, Jitter::None, names).unwrap_err();
        assert_eq!(err.to_string(), "backoff_factor must be >= 0 (got -1)");
        assert!(Backoff::checked(f64::NAN, 1.0, 1.0, 2, Jitter::None, names).is_err());
        let uncapped = Backoff::checked(1.0, 2.0, f64::INFINITY, 2, Jitter::None, names);
        assert_eq!(uncapped.unwrap().wait(1, 0.0), Some(2.0));
    }
}
