//! `astream()`'s source: the run's messages queued for the consumer's event loop.
//!
//! The run (polled on that loop's thread, see `on_loop`) queues each message; a
//! `next()` that finds one queued gets a future finished already, and one that finds
//! none waits for the next message, which the sender hands over with a callback on
//! the loop (`call_soon` from the loop's thread, where the run sends from, else
//! `call_soon_threadsafe`). No task on the runtime per item and no thread woken for
//! it; several messages sent before the loop runs that callback cost one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;

use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;

use super::super::exiting::{call_soon_from, hand_over};
use super::super::on_loop::{future_done, settle};
use super::stream::{GraphStreamShape, Next, StreamMsg};

/// `astream()`'s source: `await next()` gives the next item, or raises StopAsyncIteration.
#[pyclass(name = "_AsyncGraphStream", module = "ironloop._ironloop")]
pub struct AsyncGraphStream {
    mailbox: Arc<Mailbox>,
}

impl AsyncGraphStream {
    /// The stream of the run whose messages go to `mailbox`, shaped by `shape`.
    pub(super) fn new(mailbox: Arc<Mailbox>, shape: GraphStreamShape) -> Self {
        let _ = mailbox.shape.set(shape);
        AsyncGraphStream { mailbox }
    }
}

#[pymethods]
impl AsyncGraphStream {
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.mailbox.next(py)
    }

    fn cancel(&self) {
        if let Some(shape) = self.mailbox.shape.get() {
            shape.cancel.cancel();
        }
    }
}

/// What a run sent and nobody took yet, and the `next()` futures waiting for it.
pub(super) struct Mailbox {
    state: Mutex<MailState>,
    event_loop: Py<PyAny>,
    /// The loop's thread: a message sent from there is handed over with `call_soon`.
    thread: ThreadId,
    /// How messages become items (set once the run has started).
    shape: OnceLock<GraphStreamShape>,
}

#[derive(Default)]
struct MailState {
    messages: VecDeque<StreamMsg>,
    /// `next()` futures waiting for a message, oldest first (a cancelled one is
    /// dropped when its turn comes).
    waiters: VecDeque<Py<PyAny>>,
    /// Every sender is gone: nothing comes after `messages`.
    closed: bool,
    /// A [`Hand`] callback is queued on the loop.
    handing: bool,
    /// How the run ended, once its last message was taken: every later `next()`
    /// answers with it, a consumer whose `next()` was cancelled as well (a sync node
    /// that cannot be stopped may hold a sender long after the run's end was sent).
    ended: Option<PyResult<()>>,
}

/// What a waiting `next()` gets next. Made and taken apart at once, on the stack: a
/// boxed message (clippy's advice) would cost an allocation per item.
#[allow(clippy::large_enum_variant)]
enum Taken {
    Msg(Option<StreamMsg>),
    Ended,
    Nothing,
}

impl Mailbox {
    /// A mailbox for `event_loop`, which runs on this thread, and its sender.
    pub(super) fn new(event_loop: &Bound<'_, PyAny>) -> (Arc<Self>, MailSender) {
        let mailbox = Arc::new(Mailbox {
            state: Mutex::new(MailState::default()),
            event_loop: event_loop.clone().unbind(),
            thread: std::thread::current().id(),
            shape: OnceLock::new(),
        });
        let sender = MailSender(mailbox.clone());
        (mailbox, sender)
    }

    fn lock(&self) -> MutexGuard<'_, MailState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next item: in a finished future when one is queued, else in a future the
    /// next message finishes.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // The waiters a cancelled `next()` left go first (else this one would queue
        // behind them, and nothing may come to clear them).
        self.serve(py);
        let event_loop = self.event_loop.bind(py);
        let fut = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
        loop {
            let taken = {
                let mut st = self.lock();
                // Behind a `next()` still waiting, if any: items go out in order.
                let taken = match st.waiters.is_empty() {
                    true => self.take(&mut st),
                    false => Taken::Nothing,
                };
                match taken {
                    Taken::Nothing => {
                        // Queued under the same lock that saw nothing: a message sent
                        // from now on finds this waiter and hands itself over.
                        st.waiters.push_back(fut.clone().unbind());
                        return Ok(fut);
                    }
                    t => t,
                }
            };
            match self.answer(py, taken)? {
                Next::Item(item) => {
                    fut.call_method1(pyo3::intern!(py, "set_result"), (item,))?;
                    return Ok(fut);
                }
                Next::Skip => {}
                Next::End => return Err(PyStopAsyncIteration::new_err(())),
            }
        }
    }

    /// What the oldest waiter (or a new `next()`, when none waits) gets next.
    fn take(&self, st: &mut MailState) -> Taken {
        if st.ended.is_some() {
            return Taken::Ended;
        }
        match st.messages.pop_front() {
            Some(m) => Taken::Msg(Some(m)),
            None if st.closed => Taken::Msg(None),
            None => Taken::Nothing,
        }
    }

    /// What `taken` means for the consumer; the run's end is kept. Called without the
    /// lock: making an item runs Python, which may let a sender's thread take the GIL
    /// and wait for the lock.
    fn answer(&self, py: Python<'_>, taken: Taken) -> PyResult<Next> {
        let Some(shape) = self.shape.get() else {
            return Ok(Next::Skip);
        };
        let ended = match taken {
            Taken::Msg(Some(StreamMsg::Event(ev))) => {
                return shape.next_item(py, StreamMsg::Event(ev));
            }
            Taken::Msg(Some(StreamMsg::Done(r))) => r.map(drop).map_err(PyErr::from),
            Taken::Msg(None) => Ok(()),
            Taken::Ended | Taken::Nothing => {
                return match self.lock().ended.as_ref() {
                    Some(Ok(())) | None => Ok(Next::End),
                    Some(Err(e)) => Err(e.clone_ref(py)),
                };
            }
        };
        let out = match &ended {
            Ok(()) => Ok(Next::End),
            Err(e) => Err(e.clone_ref(py)),
        };
        self.lock().ended = Some(ended);
        out
    }

    /// Hands queued messages to the waiting `next()`s, oldest first; on the loop's
    /// thread.
    fn serve(&self, py: Python<'_>) {
        loop {
            let waiter = {
                let mut st = self.lock();
                match st.waiters.pop_front() {
                    Some(w) => w,
                    None => {
                        st.handing = false;
                        return;
                    }
                }
            };
            let waiter = waiter.into_bound(py);
            if future_done(&waiter) {
                continue;
            }
            let taken = {
                let mut st = self.lock();
                match self.take(&mut st) {
                    Taken::Nothing => {
                        st.waiters.push_front(waiter.unbind());
                        st.handing = false;
                        return;
                    }
                    t => t,
                }
            };
            let out = match self.answer(py, taken) {
                Ok(Next::Skip) => {
                    self.lock().waiters.push_front(waiter.unbind());
                    continue;
                }
                Ok(Next::Item(item)) => Ok(item),
                Ok(Next::End) => Err(PyStopAsyncIteration::new_err(())),
                Err(e) => Err(e),
            };
            settle(&waiter, out);
        }
    }

    /// Queues a [`Hand`] on the loop (the caller set `handing`).
    fn hand(self: &Arc<Self>) {
        let here = std::thread::current().id() == self.thread;
        let queued = hand_over(|py| {
            let cb = Bound::new(py, Hand(self.clone()))?;
            call_soon_from(self.event_loop.bind(py), cb.as_any(), here)
        });
        if !matches!(queued, Some(Ok(()))) {
            // A closed loop has nobody waiting.
            self.lock().handing = false;
        }
    }

    /// After a message or the close: whether a [`Hand`] must be queued now.
    fn must_hand(st: &mut MailState) -> bool {
        !st.waiters.is_empty() && !std::mem::replace(&mut st.handing, true)
    }
}

/// The loop's callback that hands queued messages to waiting `next()`s.
#[pyclass]
struct Hand(Arc<Mailbox>);

#[pymethods]
impl Hand {
    fn __call__(&self, py: Python<'_>) {
        self.0.serve(py);
    }
}

/// The run's end of a [`Mailbox`]; dropping the last one closes it.
pub(super) struct MailSender(Arc<Mailbox>);

impl MailSender {
    pub(super) fn send(&self, m: StreamMsg) {
        let hand = {
            let mut st = self.0.lock();
            st.messages.push_back(m);
            Mailbox::must_hand(&mut st)
        };
        if hand {
            self.0.hand();
        }
    }
}

impl Drop for MailSender {
    fn drop(&mut self) {
        let hand = {
            let mut st = self.0.lock();
            st.closed = true;
            Mailbox::must_hand(&mut st)
        };
        if hand {
            self.0.hand();
        }
    }
}
