//! Whether a saver may do its I/O on the thread that awaits it.
//!
//! A saver whose store blocks (SQLite) keeps its own thread, so that an async caller
//! on a tokio worker never blocks. But a thread that drives a run by hand (a sync
//! Python `invoke`, see the glue's `runtime::drive_inline`) waits for every save
//! anyway: handing the save to the saver's thread and parking until it is woken costs
//! two thread switches per durable step and nothing in return. Such a thread marks
//! itself with [`BlockingCaller::enter`] for as long as it drives; a saver that sees
//! [`may_block`] does the work right there. Tokio's threads are never marked.

use std::cell::Cell;

thread_local! {
    static MAY_BLOCK: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is one that waits for its saves anyway (see the module
/// docs): a saver may block it instead of handing the work to another thread.
pub fn may_block() -> bool {
    MAY_BLOCK.with(Cell::get)
}

/// Marks the current thread as one that may block on a saver's I/O, until dropped.
///
/// ```
/// use ironloop::checkpoint::caller::{may_block, BlockingCaller};
/// assert!(!may_block());
/// {
///     let _mark = BlockingCaller::enter();
///     assert!(may_block());
/// }
/// assert!(!may_block());
/// ```
#[must_use = "the mark lasts as long as the guard"]
pub struct BlockingCaller {
    before: bool,
    /// Not `Send`: the mark belongs to the thread that made it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl BlockingCaller {
    pub fn enter() -> BlockingCaller {
        BlockingCaller {
            before: MAY_BLOCK.with(|m| m.replace(true)),
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for BlockingCaller {
    fn drop(&mut self) {
        MAY_BLOCK.with(|m| m.set(self.before));
    }
}
