//! A Python thread state kept for the whole life of a Rust thread.
//!
//! `Python::attach` on a thread without a Python thread state makes one and deletes it
//! again on the way out (`PyGILState_Ensure` / `PyGILState_Release`): a fresh
//! `PyThreadState`, a fresh frame-stack chunk (mmap'd on the first Python call) and its
//! munmap — with the TLB shootdown that goes with it — every time. The runtime's
//! workers and the sync-tool pool attach for every tool call, every model-message
//! conversion and every callback into an event loop; measured on W7 (1,000 concurrent
//! conversations over HTTP), making and deleting thread states was about a fifth of
//! the process's CPU. So those threads make their thread state once, when they start
//! ([`keep`]), and delete it when they end ([`release`]); an attach in between only
//! takes the GIL.

use std::cell::Cell;

use pyo3::ffi;

thread_local! {
    /// Whether this thread holds a thread state made by [`keep`].
    static KEPT: Cell<bool> = const { Cell::new(false) };
}

/// Gives the calling thread a Python thread state that outlives each `Python::attach`.
/// Leaves the GIL released. Does nothing when the interpreter is not running or the
/// thread has a kept state already.
pub fn keep() {
    if KEPT.with(Cell::get) {
        return;
    }
    // SAFETY: the interpreter is initialised (checked first; reading the flag needs no
    // GIL). Ensure makes this thread's state and takes the GIL (gilstate counter 1);
    // SaveThread releases the GIL and leaves the state (and the counter) in place, so
    // later Ensure / Release pairs (every `Python::attach`) never reach 0 and delete it.
    unsafe {
        if ffi::Py_IsInitialized() == 0 {
            return;
        }
        ffi::PyGILState_Ensure();
        ffi::PyEval_SaveThread();
    }
    KEPT.with(|k| k.set(true));
}

/// Deletes the thread state [`keep`] made, as the thread ends.
pub fn release() {
    if !KEPT.with(|k| k.replace(false)) {
        return;
    }
    // SAFETY: this thread has the state `keep` made (counter 1) and no GIL. Ensure
    // takes the GIL (counter 2; pyo3's wrapper parks the thread instead of unwinding
    // it if the interpreter is finalizing); the first Release keeps the GIL (counter
    // 1), the second clears and deletes the state and releases the GIL (counter 0).
    unsafe {
        if ffi::Py_IsInitialized() == 0 {
            return;
        }
        ffi::PyGILState_Ensure();
        ffi::PyGILState_Release(ffi::PyGILState_STATE::PyGILState_LOCKED);
        ffi::PyGILState_Release(ffi::PyGILState_STATE::PyGILState_UNLOCKED);
    }
}
