//! Time to live: an item written with a TTL (minutes) expires that long after its
//! last write — or its last read, when reads refresh it. An expired item is never
//! returned, whatever the sweep has done; the sweep only reclaims the space.

use std::sync::Weak;
use std::time::Duration;

use super::StoreBackend;

/// When an item with `ttl_minutes` written or refreshed at `now` expires.
pub fn expires_at(ttl_minutes: Option<f64>, now: f64) -> Option<f64> {
    ttl_minutes.map(|m| deadline(m, now))
}

/// When an item with a TTL of `minutes` written or refreshed at `now` expires.
pub fn deadline(minutes: f64, now: f64) -> f64 {
    now + minutes * 60.0
}

/// Whether an item expiring at `at` has expired at `now`.
pub fn expired(at: Option<f64>, now: f64) -> bool {
    at.is_some_and(|t| t <= now)
}

/// Sweeps `store` every `every` on the current tokio runtime until the store is
/// dropped (or the handle aborted). A failed sweep is logged and retried at the
/// next tick: expired items stay unreadable meanwhile.
pub fn spawn_sweeper(
    store: Weak<dyn StoreBackend>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(s) = store.upgrade() else { return };
            match s.sweep().await {
                Ok(n) if n > 0 => log::debug!("store TTL sweep deleted {n} expired items"),
                Ok(_) => {}
                Err(super::StoreError::Closed) => return,
                Err(e) => log::warn!("store TTL sweep failed (retried next time): {e}"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_minutes_after_the_write() {
        assert_eq!(expires_at(Some(1.5), 100.0), Some(190.0));
        assert_eq!(expires_at(None, 100.0), None);
        assert!(expired(Some(190.0), 190.0));
        assert!(!expired(Some(190.0), 189.9));
        assert!(!expired(None, 1e12));
    }
}
