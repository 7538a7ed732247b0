//! Runs in progress on a thread, in this process: LangGraph's multitask strategies.
//!
//! A root run on a thread of a checkpointer holds the thread's *turn* until it ends
//! (its saves included). A second run on the same thread and checkpointer, from
//! another thread or task of this process, follows its `multitask_strategy`:
//!
//! - `Reject` (the default): fails at once with [`GraphError::Busy`].
//! - `Enqueue`: waits for its turn (runs queue in arrival order), then runs on the
//!   state the earlier runs left.
//! - `Interrupt`: steers the run holding the turn — it starts no new tool call and
//!   ends at the end of its step (calls it did not start are answered as skipped,
//!   see `Run::answer_skipped`), its progress saved — then runs.
//! - `Rollback`: stops the run holding the turn at once (it fails with
//!   [`GraphError::RolledBack`]) and runs from the checkpoint that run started from,
//!   so the thread goes on as if it had never run.
//!
//! Runs in other processes are not seen here: the checkpointer's one-writer rule
//! (`put_next`) still fails the second of two such runs with a conflict.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::executor::Steer;
use crate::graph::error::GraphError;

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

    fn start(&self) -> Option<Option<String>> {
        self.start.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A thread of one checkpointer (the saver's address and the thread key).
type Key = (usize, String);

#[derive(Default)]
struct Entry {
    /// Held by the running run; waiting runs queue on it (tokio's lock is fair).
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Runs holding or waiting for the turn.
    users: usize,
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
        let (lock, current) = {
            let mut map = active();
            let e = map.entry(key.clone()).or_default();
            if e.users > 0 && strategy == Multitask::Reject {
                return Err(GraphError::Busy(thread.to_owned()));
            }
            e.users += 1;
            (e.turn.clone(), e.current.clone())
        };
        let stop = Arc::new(Stop {
            steer: Steer::default(),
            halt: cancel.child_token(),
            rolled_back: AtomicBool::new(false),
            start: Mutex::new(None),
        });
        let mut turn = Turn {
            key,
            stop,
            replaced: None,
            guard: None,
        };
        match (strategy, current) {
            (Multitask::Interrupt, Some(c)) => c.steer.set(),
            (Multitask::Rollback, Some(c)) => {
                c.rolled_back.store(true, Ordering::Release);
                c.halt.cancel();
                turn.replaced = Some(c);
            }
            _ => {}
        }
        turn.guard = Some(lock.lock_owned().await);
        if let Some(e) = active().get_mut(&turn.key) {
            e.current = Some(turn.stop.clone());
        }
        Ok(turn)
    }

    /// `Rollback`: where the stopped run started — `Some(Some(id))` a checkpoint,
    /// `Some(None)` an empty thread; `None` when this run replaced nothing.
    pub fn replaced_start(&self) -> Option<Option<String>> {
        self.replaced.as_ref().and_then(|s| s.start())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut map = active();
        if let Some(e) = map.get_mut(&self.key) {
            if e.current
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &self.stop))
            {
                e.current = None;
            }
            e.users -= 1;
            if e.users == 0 {
                map.remove(&self.key);
            }
        }
        // The guard goes after the entry is updated: the next run then finds itself
        // the current one.
        self.guard.take();
    }
}
