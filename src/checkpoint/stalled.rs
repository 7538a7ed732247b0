//! Stalled threads: runs that stopped mid-step (a crashed worker), and claiming them.
//!
//! A thread is **stalled** when
//!
//! 1. its latest checkpoint has tasks left to run (the run did not finish),
//! 2. none of those tasks waits on an unanswered `interrupt()` (a pause waits for a
//!    person, not for a worker),
//! 3. nothing of it was saved for `stale_after`: no checkpoint, and no pending write of
//!    its latest checkpoint (a live run saves every step, each finished task of a
//!    step of several, and the answer to an interrupt before it runs the task again),
//! 4. and no live claim holds it.
//!
//! A fleet resumes such a thread with `invoke(None, config)`. To keep two workers from
//! resuming the same thread, a worker *claims* stalled threads: the claim is a row per
//! thread (owner, expiry) written in the same transaction that checks the conditions
//! above, so of two workers claiming at once exactly one gets each thread. A claim
//! expires after its lease; by then the claimer's run has saved steps (condition 3
//! holds the thread), or the claimer died too and the thread is stalled again.
//!
//! What a checkpoint cannot tell apart from a crash: a run whose node raised, and a
//! pause at a static breakpoint (`interrupt_before` / `interrupt_after`), also leave
//! tasks to run. Such threads are listed as well; `stale_after` must exceed the longest
//! step a live run takes (its saves are its heartbeat).

use std::collections::HashMap;
use std::time::Duration;

use super::{CheckpointError, PendingWrite, Result};

use crate::graph::Reserved;

/// The engine's pending-write channels that say how a task of an unfinished step
/// ended (see `graph::pending`).
const DONE: &str = Reserved::Done.as_str();
const INTERRUPT: &str = Reserved::Interrupt.as_str();
const RESUME: &str = Reserved::Resume.as_str();

/// Whether a task of the step these pending writes belong to waits on an
/// `interrupt()` nobody answered: it did not finish, and it saved more interrupts than
/// resume values. The same rule as the engine's `pending_interrupt`.
pub(crate) fn awaits_answer(writes: &[PendingWrite]) -> bool {
    let mut by_task: HashMap<&str, (bool, usize, usize)> = HashMap::new();
    for w in writes {
        let e = by_task.entry(w.task_id.as_str()).or_default();
        match w.channel.as_str() {
            DONE => e.0 = true,
            INTERRUPT => e.1 += 1,
            RESUME => e.2 += 1,
            _ => {}
        }
    }
    by_task
        .values()
        .any(|&(done, interrupts, answers)| !done && interrupts > answers)
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// [`awaits_answer`] as an SQL condition (PostgreSQL and SQLite): true when the
/// pending writes in table `writes` of checkpoint `checkpoint` of thread `thread`
/// hold an unanswered interrupt.
pub(crate) fn awaits_answer_sql(writes: &str, thread: &str, checkpoint: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM {writes} pw \
           WHERE pw.thread_id = {thread} AND pw.checkpoint_id = {checkpoint} \
           AND pw.channel IN ('{DONE}', '{INTERRUPT}', '{RESUME}') \
           GROUP BY pw.task_id \
           HAVING count(*) FILTER (WHERE pw.channel = '{DONE}') = 0 \
             AND count(*) FILTER (WHERE pw.channel = '{INTERRUPT}') \
               > count(*) FILTER (WHERE pw.channel = '{RESUME}'))"
    )
}

/// What [`Checkpointer::claim_stalled`](super::Checkpointer::claim_stalled) asks for,
/// checked once (by [`Claim::new`]) before a saver's [`claim`](super::Checkpointer::claim)
/// stores it: `owner` claims up to `limit` threads idle for `stale_after`, for `lease`.
#[derive(Debug, Clone)]
pub struct Claim {
    pub owner: String,
    pub stale_after: Duration,
    pub lease: Duration,
    pub limit: usize,
}

impl Claim {
    /// The claim, once its owner and durations are checked; the error says what to
    /// pass instead.
    pub fn new(owner: &str, stale_after: Duration, lease: Duration, limit: usize) -> Result<Self> {
        check_claim(owner, stale_after, lease)?;
        Ok(Claim {
            owner: owner.to_owned(),
            stale_after,
            lease,
            limit,
        })
    }
}

/// Checks a claim's owner and durations; the error says what to pass instead.
fn check_claim(owner: &str, stale_after: Duration, lease: Duration) -> Result<()> {
    if owner.is_empty() {
        return Err(CheckpointError::storage(
            "claim_stalled: owner must name the worker (e.g. its host and pid), got an \
             empty string",
        ));
    }
    if lease.is_zero() || stale_after.is_zero() {
        return Err(CheckpointError::storage(
            "claim_stalled: stale_after and lease must be longer than 0 s (a lease of 0 \
             would let another worker claim the thread at once)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn w(task: &str, channel: &str) -> PendingWrite {
        PendingWrite {
            task_id: task.into(),
            idx: 0,
            node: "n".into(),
            channel: channel.into(),
            value: Value::Null.into(),
        }
    }

    #[test]
    fn an_unanswered_interrupt_waits_and_an_answered_or_finished_one_does_not() {
        assert!(!awaits_answer(&[]));
        assert!(awaits_answer(&[w("a", INTERRUPT)]));
        assert!(!awaits_answer(&[w("a", INTERRUPT), w("a", RESUME)]));
        assert!(awaits_answer(&[
            w("a", INTERRUPT),
            w("a", RESUME),
            w("a", INTERRUPT)
        ]));
        assert!(!awaits_answer(&[w("a", INTERRUPT), w("a", DONE)]));
        assert!(awaits_answer(&[w("a", DONE), w("b", INTERRUPT)]));
        assert!(!awaits_answer(&[w("a", "x"), w("a", DONE)]));
    }
}
