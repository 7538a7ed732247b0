//! `get_runtime()` inside a running task, made here: every agent hook node asks for
//! its task's `Runtime` once per step, and in Python the look-ups of four context
//! variables, the object made and its `_of` set were a large part of a hook step's
//! own work (W10, BENCHMARKS.md). `ironloop/runtime.py`'s `_TaskRuntime` keeps the
//! rest: its fields are made when first read, from `_of`.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyFloat, PyTuple};

use super::env::var_get;
use super::helpers::helpers;

/// What `ironloop/runtime.py` hands over once (see [`_install_task_runtime`]).
struct Parts {
    /// `runtime._scope`: the running graph's `(context, store, config)`.
    scope: Py<PyAny>,
    /// `_runtime.attempt_var`: the attempt of a node run under a retry policy.
    attempt: Py<PyAny>,
    /// `_runtime.call_progress`: the progress of the `@task` call being made.
    progress: Py<PyAny>,
    /// `object.__new__`, and the class it makes (`runtime._TaskRuntime`).
    new: Py<PyAny>,
    cls: Py<PyAny>,
    /// `_TaskRuntime._of.__set__`: sets the slot `_of`.
    set_of: Py<PyAny>,
}

static PARTS: PyOnceLock<Parts> = PyOnceLock::new();

/// The last runtime made and its `_of`: a task that asks again (a hook, then its
/// tools) gets the same object, as `get_runtime` gave before. Holding them keeps the
/// scope and scratchpad alive, so `is` never matches new ones at a reused address.
static LAST: Mutex<Option<(Py<PyAny>, Py<PyTuple>)>> = Mutex::new(None);

/// Called once by `ironloop/runtime.py` with what [`_task_runtime`] reads and makes.
#[pyfunction]
pub fn _install_task_runtime(
    py: Python<'_>,
    scope: Py<PyAny>,
    attempt: Py<PyAny>,
    progress: Py<PyAny>,
    new: Py<PyAny>,
    cls: Py<PyAny>,
    set_of: Py<PyAny>,
) {
    let _ = PARTS.set(
        py,
        Parts {
            scope,
            attempt,
            progress,
            new,
            cls,
            set_of,
        },
    );
}

/// The running task's `Runtime`, as `get_runtime()` gives it in a task: the last one
/// made while the run's scope, the task's scratchpad, its attempt and its `@task`
/// call's progress are the same objects, else a new `_TaskRuntime` with only those
/// (and the time it was asked for) in its `_of`. `None` outside a run or outside a
/// task (a router): `get_runtime` answers those itself.
#[pyfunction]
pub fn _task_runtime(py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
    let Some(p) = PARTS.get(py) else {
        return Ok(None);
    };
    let Some(scope) = var_get(p.scope.bind(py))? else {
        return Ok(None);
    };
    let Some(scratch) = var_get(helpers(py)?.task_var.bind(py))? else {
        return Ok(None);
    };
    let none = || py.None().into_bound(py);
    let attempt = var_get(p.attempt.bind(py))?.unwrap_or_else(none);
    let progress = var_get(p.progress.bind(py))?.unwrap_or_else(none);
    let keys = [&scope, &scratch, &attempt, &progress];
    {
        let last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((runtime, of)) = last.as_ref() {
            let of = of.bind(py);
            let same = keys
                .iter()
                .enumerate()
                .all(|(i, k)| of.get_item(i).is_ok_and(|v| v.is(*k)));
            if same {
                return Ok(Some(runtime.clone_ref(py)));
            }
        }
    }
    // `time.time()`: when the runtime was asked for (its `node_first_attempt_time`).
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let of = PyTuple::new(
        py,
        [
            scope,
            scratch,
            attempt,
            progress,
            PyFloat::new(py, now).into_any(),
        ],
    )?;
    let runtime = p.new.bind(py).call1((p.cls.bind(py),))?;
    p.set_of.bind(py).call1((&runtime, &of))?;
    let made = (runtime.clone().unbind(), of.unbind());
    let old = LAST.lock().unwrap_or_else(|e| e.into_inner()).replace(made);
    // Dropped once the lock is released: freeing the last task's scratchpad may run
    // Python code, which may ask for a runtime.
    drop(old);
    Ok(Some(runtime.unbind()))
}
