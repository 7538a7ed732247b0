//! Rust `log` records → Python's `logging`, under the `ironloop.*` loggers.
//!
//! A record's target is its module path (`ironloop::model::http`), which
//! `pyo3-log` maps to the logger `ironloop.model.http`, so
//! `logging.getLogger("ironloop")` configures them all. Each logger's effective
//! level is cached on the Rust side, so a disabled record costs a cached compare
//! and never takes the GIL. The cache is dropped whenever Python's own logging
//! drops its level cache (`Logger.setLevel`, `logging.disable`, `dictConfig`, …):
//! `ironloop/_logs.py` hooks that and calls [`_reset_log_cache`].

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3_log::{Caching, Logger, ResetHandle};

static RESET: OnceLock<ResetHandle> = OnceLock::new();

/// Installs the bridge once per process. Another `log` logger installed first in
/// this extension's copy of `log` cannot happen (the copy is private to it), but if
/// it did, Rust records would simply keep going there.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if RESET.get().is_none() {
        let logger =
            Logger::new(m.py(), Caching::LoggersAndLevels)?.filter(log::LevelFilter::Debug);
        if let Ok(handle) = logger.install() {
            let _ = RESET.set(handle);
        }
    }
    m.add_function(wrap_pyfunction!(_reset_log_cache, m)?)?;
    Ok(())
}

/// Forgets the cached loggers and levels, so the next record reads Python's
/// current configuration.
#[pyfunction]
fn _reset_log_cache() {
    if let Some(handle) = RESET.get() {
        handle.reset();
    }
}
