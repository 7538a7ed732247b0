//! Wakes a run polled on an asyncio loop's thread ([`super::on_loop::LoopRun`]) from
//! another thread without taking the GIL.
//!
//! `call_soon_threadsafe` needs the GIL: the runtime's worker (a model's HTTP answer
//! came) or the SQLite saver's thread (a checkpoint was written) took it, appended the
//! poll to the loop's queue and wrote to the loop's wake-up socket; the loop's thread,
//! woken by that write, then waited for the GIL the waking thread still held. Two
//! threads passing the GIL back and forth for every wake: context switches, and
//! ~4–5 wakes a served agent run. Here a loop watches one socket of ours
//! (`add_reader`): a wake queues the run in Rust and writes one byte, no GIL; the
//! loop's reader callback polls every queued run.
//!
//! One per loop, found through a weak reference in the loop's `_ironloop_waker`
//! attribute: the loop's reader (its selector) holds the callback, so a closed loop
//! drops it, its sockets and any run still queued (as a poll queued on a closed loop
//! went with the loop's queue). A loop that takes no attribute or no reader (one
//! without `add_reader`) is woken by `call_soon_threadsafe` as before.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use super::on_loop::LoopRun;

/// A loop's wake-up socket pair and the runs woken since its last pass.
pub struct LoopWaker {
    /// The end the loop reads (its reader callback drains it).
    rx: UnixStream,
    /// The end a waking thread writes a byte to.
    tx: UnixStream,
    queue: Mutex<Vec<Arc<LoopRun>>>,
}

impl LoopWaker {
    /// Queues `run` for the loop's next pass. Any thread, no GIL.
    pub fn wake(&self, run: Arc<LoopRun>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let first = queue.is_empty();
        queue.push(run);
        drop(queue);
        // Only the first run of a pass writes: the loop takes the whole queue once
        // it reads. A full socket (never, at a byte a pass) has a byte for it already.
        if first {
            let _ = (&self.tx).write(&[1]);
        }
    }

    /// The waker of `event_loop` (running on this thread), made and registered with
    /// the loop the first time; `None` for a loop that cannot have one.
    pub fn of(event_loop: &Bound<'_, PyAny>) -> Option<Arc<LoopWaker>> {
        let py = event_loop.py();
        let name = pyo3::intern!(py, "_ironloop_waker");
        if let Ok(found) = event_loop.getattr(name) {
            if found.is_none() {
                return None; // tried before: this loop has no reader for it
            }
            if let Ok(drain) = found.call0() {
                if let Ok(drain) = drain.cast::<Drain>() {
                    return Some(drain.get().0.clone());
                }
            }
        }
        let waker = Self::new().ok()?;
        let fd = waker.rx.as_raw_fd();
        let drain = Bound::new(py, Drain(waker.clone())).ok()?;
        let weak = PyWeakrefReference::new(&drain).ok()?;
        event_loop.setattr(name, weak).ok()?;
        let added = event_loop.call_method1(pyo3::intern!(py, "add_reader"), (fd, drain));
        if added.is_err() {
            // Not asked again for every run: this loop is woken the usual way.
            let _ = event_loop.setattr(name, py.None());
            return None;
        }
        Some(waker)
    }

    fn new() -> std::io::Result<Arc<Self>> {
        let (rx, tx) = UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(Arc::new(LoopWaker {
            rx,
            tx,
            queue: Mutex::new(Vec::new()),
        }))
    }

    /// Reads every byte written so far (before the queue is taken: a wake after the
    /// read writes again, so no queued run waits for a byte that was read).
    fn drain_socket(&self) {
        let mut buf = [0u8; 64];
        loop {
            match (&self.rx).read(&mut buf) {
                Ok(n) if n == buf.len() => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                _ => return, // drained (`WouldBlock`), or nothing more to read
            }
        }
    }
}

/// The loop's reader callback: polls each run woken since the last pass, in the
/// order they were woken.
#[pyclass(weakref, frozen)]
pub struct Drain(Arc<LoopWaker>);

#[pymethods]
impl Drain {
    fn __call__(&self, py: Python<'_>) {
        self.0.drain_socket();
        let runs = std::mem::take(&mut *self.0.queue.lock().unwrap_or_else(|p| p.into_inner()));
        for run in runs {
            run.poll(py);
        }
    }
}
