//! What guards a node's task where the run loop runs it, for every kind of node
//! (host functions, the engine's own tool and model nodes, subgraphs): LangGraph 1.2's
//! node timeouts (`TimeoutPolicy`), node error handlers (`add_node(error_handler=)`)
//! and cooperative draining (`RunControl.request_drain()`).
//!
//! They live in the loop, not in a wrapper around host functions, so a node the engine
//! runs natively is held to them as a Python function is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::error::GraphError;
use super::spec::{NodeFailure, NodeOutput};

/// How long one attempt of a node may take (LangGraph's `TimeoutPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeoutPolicy {
    /// Wall-clock cap of the attempt, never refreshed.
    pub run: Option<Duration>,
    /// Longest stretch without progress (see [`Progress`]).
    pub idle: Option<Duration>,
    /// Only explicit heartbeats count as progress (LangGraph's `refresh_on="heartbeat"`);
    /// otherwise stream output the node writes counts too.
    pub heartbeat_only: bool,
}

impl TimeoutPolicy {
    /// A policy from seconds (the host's `TimeoutPolicy`, coerced): `run_timeout`,
    /// `idle_timeout`, and whether only heartbeats refresh the idle one.
    pub fn from_secs(run: Option<f64>, idle: Option<f64>, heartbeat_only: bool) -> TimeoutPolicy {
        TimeoutPolicy {
            run: run.map(Duration::from_secs_f64),
            idle: idle.map(Duration::from_secs_f64),
            heartbeat_only,
        }
    }

    /// As a checkpoint keeps it (a `Send`'s timeout, travelling with its task in the
    /// checkpoint's `next` and in a continued step's saved gotos): LangGraph's fields.
    pub fn to_json(&self) -> Value {
        json!({
            "run_timeout": self.run.map(|d| d.as_secs_f64()),
            "idle_timeout": self.idle.map(|d| d.as_secs_f64()),
            "refresh_on": if self.heartbeat_only { "heartbeat" } else { "auto" },
        })
    }

    /// Back from [`TimeoutPolicy::to_json`]; `None` for anything else.
    pub fn from_json(v: &Value) -> Option<TimeoutPolicy> {
        let secs = |k: &str| v.get(k).and_then(Value::as_f64).filter(|s| *s > 0.0);
        let p = TimeoutPolicy::from_secs(
            secs("run_timeout"),
            secs("idle_timeout"),
            v.get("refresh_on").and_then(Value::as_str) == Some("heartbeat"),
        );
        (p.run.is_some() || p.idle.is_some()).then_some(p)
    }
}

/// What a node declared besides its function: its timeout and its error handler.
#[derive(Clone, Debug, Default)]
pub struct NodeGuard {
    pub timeout: Option<TimeoutPolicy>,
    /// The node run instead when this one fails (a node of the same graph, reached by no
    /// edge): it gets the failed task's input and [`TaskContext::failed`](super::TaskContext).
    pub error_handler: Option<String>,
}

/// The progress of a task under an idle timeout: when it last showed some. Shared
/// with what the task does (its stream writes, its heartbeats), which touch it.
#[derive(Debug)]
pub struct Progress {
    start: Instant,
    /// Milliseconds after `start` of the last sign of progress.
    last_ms: AtomicU64,
    heartbeat_only: bool,
}

impl Progress {
    pub fn new(heartbeat_only: bool) -> Arc<Progress> {
        Arc::new(Progress {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            heartbeat_only,
        })
    }

    /// The task showed progress of its own accord (a stream write): counted unless
    /// only heartbeats count.
    pub fn signal(&self) {
        if !self.heartbeat_only {
            self.heartbeat();
        }
    }

    /// The task said it is alive (`runtime.heartbeat()`).
    pub fn heartbeat(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Why a task failed, for the error handler that runs in its place (LangGraph's
/// `NodeError`).
#[derive(Clone, Debug)]
pub struct Failed {
    pub node: String,
    pub error: GraphError,
}

/// A run's drain flag (LangGraph's `RunControl`): once requested, with its reason,
/// the run finishes the step under way and stops before the next one
/// ([`GraphError::Drained`]), its progress saved as at any step's end.
#[derive(Debug, Default)]
pub struct Drain(Mutex<Option<String>>);

impl Drain {
    pub fn request(&self, reason: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
    }

    pub fn reason(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// `fut`, one attempt of task `node`, failed with [`GraphError::Timeout`] when it
/// outlives `policy`. Dropping the attempt stops it where it can stop (an async host
/// function's coroutine is cancelled; the engine's nodes stop at their next await).
pub async fn within<F>(
    fut: F,
    policy: TimeoutPolicy,
    progress: Option<Arc<Progress>>,
    node: &str,
) -> Result<NodeOutput, NodeFailure>
where
    F: std::future::Future<Output = Result<NodeOutput, NodeFailure>>,
{
    let start = Instant::now();
    let run_deadline = policy.run.map(|d| start + d);
    // The idle deadline as progress now stands.
    let idle_deadline = || {
        let last = progress.as_ref().map_or(start, |p| p.last().max(start));
        policy.idle.map(|d| last + d)
    };
    tokio::pin!(fut);
    loop {
        let wake = match (run_deadline, idle_deadline()) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return fut.await,
        };
        tokio::select! {
            biased;
            r = &mut fut => return r,
            _ = tokio::time::sleep_until(wake) => {}
        }
        let now = Instant::now();
        let kind = if run_deadline.is_some_and(|d| now >= d) {
            "run"
        } else if idle_deadline().is_some_and(|d| now >= d) {
            "idle"
        } else {
            continue; // progress was made meanwhile: wait again
        };
        return Err(NodeFailure::Error(GraphError::Timeout {
            node: node.to_owned(),
            kind,
            elapsed: now.duration_since(start).as_secs_f64(),
            run_timeout: policy.run.map(|d| d.as_secs_f64()),
            idle_timeout: policy.idle.map(|d| d.as_secs_f64()),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_policies_round_trip_as_json() {
        let p = TimeoutPolicy::from_secs(None, Some(0.05), true);
        assert_eq!(TimeoutPolicy::from_json(&p.to_json()), Some(p));
        let q = TimeoutPolicy::from_secs(Some(2.0), None, false);
        assert_eq!(TimeoutPolicy::from_json(&q.to_json()), Some(q));
        assert_eq!(
            TimeoutPolicy::from_json(&json!({"run_timeout": null})),
            None
        );
        assert_eq!(TimeoutPolicy::from_json(&json!("2")), None);
    }
}
