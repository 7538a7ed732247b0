//! The thread pool that runs sync Python tools.
//!
//! Sized for I/O-bound work (a tool that sleeps or waits on the network holds a
//! thread, not the CPU), so it grows on demand up to [`MAX_THREADS`]. A worker that
//! holds the GIL keeps running queued jobs before giving it up: thousands of quick
//! calls then cost one GIL hand-over, not one each, while a call that blocks
//! (`time.sleep`, I/O) releases the GIL inside Python and lets the next worker run.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use pyo3::Python;

use super::exiting::attach;

/// Upper bound on worker threads (the `IRONLOOP_MAX_TOOL_THREADS` variable overrides).
pub const MAX_THREADS: usize = 256;
const IDLE_EXIT: Duration = Duration::from_secs(30);

pub type Job = Box<dyn FnOnce(Python<'_>) + Send>;

struct State {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
}

pub struct Pool {
    state: Mutex<State>,
    ready: Condvar,
    max: usize,
}

impl Pool {
    /// The process-wide pool.
    pub fn global() -> &'static Pool {
        static POOL: OnceLock<Pool> = OnceLock::new();
        POOL.get_or_init(|| {
            let max = std::env::var("IRONLOOP_MAX_TOOL_THREADS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n: &usize| n > 0)
                .unwrap_or(MAX_THREADS);
            Pool {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    threads: 0,
                    idle: 0,
                }),
                ready: Condvar::new(),
                max,
            }
        })
    }

    pub fn submit(&'static self, job: Job) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.queue.push_back(job);
        // Wake an idle worker only for jobs beyond those the idle ones will take.
        if st.idle >= st.queue.len() {
            self.ready.notify_one();
        } else if st.threads < self.max {
            st.threads += 1;
            drop(st);
            let spawned = std::thread::Builder::new()
                .name("ironloop-tool".into())
                .spawn(move || self.work());
            if spawned.is_err() {
                // No thread could be made: the queued job waits for an existing worker.
                self.state.lock().unwrap_or_else(|p| p.into_inner()).threads -= 1;
                self.ready.notify_one();
            }
        } else {
            self.ready.notify_one();
        }
    }

    fn next(&self) -> Option<Job> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(j) = st.queue.pop_front() {
                return Some(j);
            }
            st.idle += 1;
            let (guard, timeout) = self
                .ready
                .wait_timeout(st, IDLE_EXIT)
                .unwrap_or_else(|p| p.into_inner());
            st = guard;
            st.idle -= 1;
            if timeout.timed_out() && st.queue.is_empty() {
                st.threads -= 1;
                return None;
            }
        }
    }

    fn try_next(&self) -> Option<Job> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .queue
            .pop_front()
    }

    fn work(&self) {
        super::thread_state::keep();
        while let Some(job) = self.next() {
            attach(|py| {
                job(py);
                while let Some(j) = self.try_next() {
                    j(py);
                }
            });
        }
        super::thread_state::release();
    }
}
