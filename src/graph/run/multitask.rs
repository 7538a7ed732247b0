//! Runs in progress on a thread, in this process: LangGraph's multitask strategies.
//!
//! A root run on a thread of a checkpointer holds the thread's *turn* until it ends
//! (its saves included). A second run on the same thread and checkpointer, from
//! another thread or task of this process, follows its `multitask_strategy`:
//!
//! - `Reject` (the default): fails at once with [`GraphError::Busy`] — unless every
//!   run on the thread was cancelled and is only ending: it then waits for them.
//! - `Enqueue`: waits for its turn (runs queue in arrival order), then runs on the
//!   state the earlier runs left.
//! - `Interrupt`: steers the run holding the turn — it starts no new tool call and
//!   ends at the end of its step (calls it did not start are answered as skipped,
//!   see `Run::answer_skipped`), its progress saved — then runs.
//! - `Rollback`: stops the run holding the turn at once (it fails with
//!   [`GraphError::RolledBack`]) and runs from the checkpoint that run started from,
//!   so the thread goes on as if it had never run.
//!
//! Runs of other processes (and of other saver objects on the same store) are seen
//! through the thread's **run lease** in the store (see `checkpoint::lease`), which a
//! run takes once it holds its turn here ([`Turn::lease`]) and keeps until it ends:
//!
//! - `Reject`: fails at once with [`GraphError::BusyElsewhere`].
//! - `Enqueue`: waits until the lease is free (it polls, every 5 ms growing to
//!   100 ms), then runs. Runs of several processes waiting for one thread do not keep
//!   their arrival order: whichever polls first after the lease is released runs.
//! - `Interrupt` / `Rollback`: ask the holder to stop
//!   ([`Checkpointer::ask_stop`]), then wait as `Enqueue` does. The holder sees the
//!   ask within [`WATCH_EVERY`](crate::checkpoint::lease::WATCH_EVERY) (a task of its
//!   own, [`watch`], awaiting [`Asks::wait`]) and stops as it would for a run of its
//!   own process; a rolled-back holder deletes its own progress before it lets
//!   the lease go ([`Stop::discards_itself`]), so the new run starts from where it
//!   started.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::checkpoint::lease::Asks;
use crate::checkpoint::{AskGuard, Checkpointer, RunLease, StopAsk};
use crate::executor::Steer;
use crate::graph::error::GraphError;
use crate::graph::Graph;

/// The longest a `Reject` run waits for cancelled runs on its thread to end.
const LEAVING_WAIT: Duration = Duration::from_secs(2);

/// The longest a run waiting for a lease held elsewhere sleeps between tries.
const POLL_AT_MOST: Duration = Duration::from_millis(100);

/// What a run does when its thread has a run in progress (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Multitask {
    #[default]
    Reject,
    Enqueue,
    Interrupt,
    Rollback,
}

impl Multitask {
    /// LangGraph's names: `"reject"`, `"enqueue"`, `"interrupt"`, `"rollback"`.
    pub fn parse(s: &str) -> Option<Multitask> {
        match s {
            "reject" => Some(Multitask::Reject),
            "enqueue" => Some(Multitask::Enqueue),
            "interrupt" => Some(Multitask::Interrupt),
            "rollback" => Some(Multitask::Rollback),
            _ => None,
        }
    }
}

/// How a run holding the turn is told to stop early.
pub(super) struct Stop {
    /// Set by an `Interrupt` run: start nothing new, end at the end of the step.
    pub steer: Steer,
    /// Cancelled by a `Rollback` run: stop now. A child of the caller's token.
    pub halt: CancellationToken,
    rolled_back: AtomicBool,
    /// A run of another process asked this one to roll back: it deletes its own
    /// progress before it lets the thread's lease go.
    discards_itself: AtomicBool,
    /// The checkpoint the run started from (`None`: the thread had none); set once
    /// the run has opened.
    start: Mutex<Option<Option<String>>>,
}

impl Stop {
    pub fn rolled_back(&self) -> bool {
        self.rolled_back.load(Ordering::Acquire)
    }

    pub fn set_start(&self, checkpoint_id: Option<String>) {
        *self.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(checkpoint_id);
    }

    pub fn start(&self) -> Option<Option<String>> {
        self.start.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether a run of another process rolled this one back (see the field).
    pub fn discards_itself(&self) -> bool {
        self.discards_itself.load(Ordering::Acquire)
    }

    /// Stops the run now; its caller gets `RolledBack`.
    fn roll_back(&self) {
        self.rolled_back.store(true, Ordering::Release);
        self.halt.cancel();
    }
}

/// A thread of one checkpointer (the saver's address and the thread key).
type Key = (usize, String);

#[derive(Default)]
struct Entry {
    /// Held by the running run; waiting runs queue on it (tokio's lock is fair).
    turn: Arc<tokio::sync::Mutex<()>>,
    /// The stops of the runs holding or waiting for the turn.
    users: Vec<Arc<Stop>>,
    /// The stop of the run holding the turn.
    current: Option<Arc<Stop>>,
}

static ACTIVE: LazyLock<Mutex<HashMap<Key, Entry>>> = LazyLock::new(Default::default);

fn active() -> std::sync::MutexGuard<'static, HashMap<Key, Entry>> {
    ACTIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A run's place on its thread: holding the turn once [`Turn::take`] returns, and
/// given up (the next waiting run let in) when dropped, also while still waiting.
pub(super) struct Turn {
    key: Key,
    pub stop: Arc<Stop>,
    /// `Rollback`: the run it stopped, whose starting checkpoint this run starts from.
    replaced: Option<Arc<Stop>>,
    guard: Option<OwnedMutexGuard<()>>,
    /// The thread's run lease in the store, once taken ([`Turn::lease`]).
    lease: Option<RunLease>,
    /// Ends the task that watches the lease for asks from other processes.
    watching: Option<CancellationToken>,
}

impl Turn {
    /// Waits for the turn on `thread` of the saver at `saver`, under `strategy`;
    /// `cancel` is the caller's token (a `Rollback` cancels the run's child of it).
    pub async fn take(
        saver: usize,
        thread: &str,
        strategy: Multitask,
        cancel: &CancellationToken,
    ) -> Result<Turn, GraphError> {
        let key = (saver, thread.to_owned());
        let stop = Arc::new(Stop {
            steer: Steer::default(),
            halt: cancel.child_token(),
            rolled_back: AtomicBool::new(false),
            discards_itself: AtomicBool::new(false),
            start: Mutex::new(None),
        });
        let (lock, current, leaving) = {
            let mut map = active();
            let e = map.entry(key.clone()).or_default();
            // A run that was cancelled (its caller's task cancelled, an abandoned
            // stream) is on its way out: its future is dropped a moment later on
            // another thread. A new run waits for it instead of being refused.
            let busy = e.users.iter().any(|u| !u.halt.is_cancelled());
            if busy && strategy == Multitask::Reject {
                return Err(GraphError::Busy(thread.to_owned()));
            }
            let leaving = strategy == Multitask::Reject && !e.users.is_empty();
            e.users.push(stop.clone());
            (e.turn.clone(), e.current.clone(), leaving)
        };
        let mut turn = Turn {
            key,
            stop,
            replaced: None,
            guard: None,
            lease: None,
            watching: None,
        };
        match (strategy, current) {
            (Multitask::Interrupt, Some(c)) => c.steer.set(),
            (Multitask::Rollback, Some(c)) => {
                c.roll_back();
                turn.replaced = Some(c);
            }
            _ => {}
        }
        turn.guard = Some(if leaving {
            // A cancelled run driven by a sync caller ends only when that caller drops
            // it (an abandoned `stream()` iterator still referenced): not waited for
            // for ever.
            tokio::time::timeout(LEAVING_WAIT, lock.lock_owned())
                .await
                .map_err(|_| GraphError::Busy(thread.to_owned()))?
        } else {
            lock.lock_owned().await
        });
        if let Some(e) = active().get_mut(&turn.key) {
            e.current = Some(turn.stop.clone());
        }
        Ok(turn)
    }

    /// Takes `thread`'s run lease in `cp` under `strategy` (see the module docs), once
    /// the run holds its turn here. Waiting ends with [`GraphError::Cancelled`] when
    /// the run is cancelled.
    pub async fn lease(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
        strategy: Multitask,
    ) -> Result<(), GraphError> {
        let mut wait = Duration::from_millis(5);
        let mut asking: Option<AskGuard> = None;
        loop {
            if let Some(lease) = cp.try_lease(thread).await.map_err(Graph::cp_err)? {
                if let Some(asks) = lease.asks() {
                    self.watching = Some(watch(asks, self.stop.clone()));
                }
                self.lease = Some(lease);
                return Ok(());
            }
            let ask = match strategy {
                Multitask::Reject => return Err(GraphError::BusyElsewhere(thread.to_owned())),
                Multitask::Enqueue => None,
                Multitask::Interrupt => Some(StopAsk::Interrupt),
                Multitask::Rollback => Some(StopAsk::Rollback),
            };
            if let (Some(ask), None) = (ask, &asking) {
                asking = cp.ask_stop(thread, ask).await.map_err(Graph::cp_err)?;
            }
            tokio::select! {
                _ = self.stop.halt.cancelled() => return Err(GraphError::Cancelled),
                _ = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(POLL_AT_MOST);
        }
    }

    /// Ends the turn: the lease is released first (awaited, so that a run another
    /// process starts once this run has returned finds the thread free), then the
    /// next run of this process is let in.
    pub async fn end(mut self) {
        self.stop_watching();
        if let Some(lease) = self.lease.take() {
            lease.release().await;
        }
    }

    fn stop_watching(&mut self) {
        if let Some(w) = self.watching.take() {
            w.cancel();
        }
    }

    /// `Rollback`: where the stopped run started — `Some(Some(id))` a checkpoint,
    /// `Some(None)` an empty thread; `None` when this run replaced nothing.
    pub fn replaced_start(&self) -> Option<Option<String>> {
        self.replaced.as_ref().and_then(|s| s.start())
    }
}

/// Stops the run of `stop` as a run of another process asks (through the lease), as
/// an ask from this process would: a task of its own, since the run's own task may be
/// busy in a tool for as long as it takes (a sync tool run inline). Ends once it has
/// stopped the run, or when the returned token is cancelled (the run ended).
fn watch(asks: Arc<dyn Asks>, stop: Arc<Stop>) -> CancellationToken {
    let done = CancellationToken::new();
    let ended = done.clone();
    tokio::spawn(async move {
        let ask = tokio::select! {
            _ = ended.cancelled() => return,
            ask = asks.wait() => ask,
        };
        match ask {
            StopAsk::Interrupt => stop.steer.set(),
            StopAsk::Rollback => {
                stop.discards_itself.store(true, Ordering::Release);
                stop.roll_back();
            }
        }
    });
    done
}

impl Drop for Turn {
    fn drop(&mut self) {
        // The lease first, as in `end` (a drop releases it, or starts releasing it).
        self.stop_watching();
        self.lease.take();
        let mut map = active();
        if let Some(e) = map.get_mut(&self.key) {
            if e.current
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &self.stop))
            {
                e.current = None;
            }
            e.users.retain(|u| !Arc::ptr_eq(u, &self.stop));
            if e.users.is_empty() {
                map.remove(&self.key);
            }
        }
        // The guard goes after the entry is updated: the next run then finds itself
        // the current one.
        self.guard.take();
    }
}
