//! Conditional edges and reducers written in Python.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::super::aio::{run_async, AsyncResult, MakeCoro};
use super::super::env::PyRunEnv;
use super::super::exiting::attach;
use super::super::helpers::helpers;
use super::nodes::{has_callbacks, node_error};
use super::task::{call_in, call_in_task, task_context};
use super::values::{host, send_class, send_goto, val_to_py, Shared};
use crate::graph::{Goto, GraphError, LaterRoute, Reducer, Router, StateView, TaskContext, Val};

// ---------------------------------------------------------------------------------
// Routers and reducers

pub(super) struct PyRouter {
    /// The branch's name (its function's), for error messages.
    pub(super) name: String,
    pub(super) path: Py<PyAny>,
    pub(super) path_map: Option<Py<PyDict>>,
    /// Makes the function's input from the state dict (a dataclass / pydantic schema).
    pub(super) factory: Option<Py<PyAny>>,
    pub(super) shared: Arc<Shared>,
    /// An `async def` routing function: awaited on the caller's loop in an async run
    /// (`route_later`); refused in a sync one, as LangGraph does.
    pub(super) is_async: bool,
}

pub(super) fn map_goto(
    py: Python<'_>,
    map: &Option<Py<PyDict>>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Goto> {
    if let Some(m) = map {
        let m = m.bind(py);
        let target = m.get_item(key)?.ok_or_else(|| {
            PyValueError::new_err(format!(
                "the routing function returned {}, which is not in its path_map (keys: {})",
                key.repr().map(|r| r.to_string()).unwrap_or_default(),
                m.keys().repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        let t: String = target.extract()?;
        return Ok(Goto::to(t));
    }
    let t: String = key.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "a routing function must return a node name, END, Send(...) or a list of them; got {}",
            key.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    Ok(Goto::to(t))
}

impl Router for PyRouter {
    fn name(&self) -> &str {
        &self.name
    }

    fn route(&self, view: &StateView, ctx: &TaskContext) -> Result<Vec<Goto>, GraphError> {
        attach(|py| -> PyResult<Vec<Goto>> {
            let input = self.shared.node_input(py, view, &self.factory)?;
            // An async one is reached only when no event loop runs the run
            // (`route_later` takes the others): awaited under `aupdate_state`, else
            // LangGraph's error (a cold path: the helper is looked up here).
            let (func, args) = if self.is_async {
                let awaited = py.import("ironloop._runtime")?.getattr("route_awaited")?;
                let args = (self.path.bind(py), self.name.as_str(), input).into_pyobject(py)?;
                (awaited, args)
            } else {
                (self.path.bind(py).clone(), PyTuple::new(py, [input])?)
            };
            let r = match ctx.host.clone().and_then(|h| h.downcast::<PyRunEnv>().ok()) {
                Some(env) => {
                    let func = traced(py, &env, &self.name, func)?;
                    call_in_task(py, &env, ctx, &func, args, None)?
                }
                None => func.call1(args)?,
            };
            // A name (a `str`) is the common answer: asking it for `__await__` would
            // build and drop an `AttributeError` at every step.
            if !r.is_instance_of::<PyString>() && r.hasattr("__await__")? {
                if r.hasattr("close")? {
                    r.call_method0("close")?; // no "never awaited" warning
                }
                return Err(PyTypeError::new_err(
                    "the routing function returned an awaitable but is not an `async def` \
                     function: declare it `async def` (awaited under ainvoke / astream), or \
                     return the node name, END, Send(...) or list itself",
                ));
            }
            gotos(py, &self.path_map, r)
        })
        .map_err(|e| attach(|py| route_error(py, ctx, e)))
    }

    fn route_later(&self, view: &StateView, ctx: &TaskContext) -> Option<LaterRoute> {
        if !self.is_async {
            return None;
        }
        let env = ctx.host.clone()?.downcast::<PyRunEnv>().ok()?;
        if !env.caller_loop {
            return None; // a sync run: `route` says what to do
        }
        let (view, ctx) = (view.clone(), ctx.clone());
        let (path, path_map, factory) = attach(|py| {
            (
                self.path.clone_ref(py),
                self.path_map.as_ref().map(|m| m.clone_ref(py)),
                self.factory.as_ref().map(|f| f.clone_ref(py)),
            )
        });
        let (shared, name) = (self.shared.clone(), self.name.clone());
        Some(Box::pin(async move {
            let (env2, ctx2) = (env.clone(), ctx.clone());
            // Called on the loop thread: the function is called in the task's context
            // (as a sync router is) and its coroutine runs in that context.
            let make: MakeCoro = Box::new(move |py| {
                let input = shared.node_input(py, &view, &factory)?;
                let (context, _) = task_context(py, &env2, &ctx2)?;
                let func = traced(py, &env2, &name, path.bind(py).clone())?;
                let coro = call_in(py, &context, &func, PyTuple::new(py, [input])?, None)?;
                Ok((coro.unbind(), Some(context.unbind())))
            });
            let ctx3 = ctx.clone();
            let routed = run_async(&env, make, move |py, r| match r {
                AsyncResult::Done(r) => r
                    .and_then(|r| gotos(py, &path_map, r))
                    .map_err(|e| route_error(py, &ctx3, e)),
                AsyncResult::Cancelled => Err(GraphError::Cancelled),
            });
            // A sibling failed or the run was stopped: dropping the call cancels the
            // coroutine's asyncio task.
            let r = tokio::select! {
                r = routed => r,
                _ = ctx.cancel.cancelled() => return Err(GraphError::Cancelled),
            };
            r.unwrap_or_else(|e| Err(ctx.node_error(e, None)))
        }))
    }
}

/// The routing function `func` (of the conditional edge `name`) or, when the run
/// reports to LangChain callbacks, `func` wrapped to report its call as a chain run
/// under its node's, as LangGraph's (see `ironloop/_callbacks.py`): made only then.
fn traced<'py>(
    py: Python<'py>,
    env: &PyRunEnv,
    name: &str,
    func: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if !has_callbacks(py, env)? {
        return Ok(func);
    }
    helpers(py)?.router_call.bind(py).call1((name, func))
}

/// The gotos a routing function's answer `r` stands for: a node name, `END`, a `Send`
/// or a list of them, names through `path_map` when there is one.
fn gotos(
    py: Python<'_>,
    path_map: &Option<Py<PyDict>>,
    r: Bound<'_, PyAny>,
) -> PyResult<Vec<Goto>> {
    let items: Vec<Bound<'_, PyAny>> = if r.cast::<PyList>().is_ok() || r.cast::<PyTuple>().is_ok()
    {
        r.try_iter()?.collect::<PyResult<_>>()?
    } else {
        vec![r]
    };
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        if i.is_instance(send_class(py)?)? {
            out.push(send_goto(&i)?);
        } else {
            out.push(map_goto(py, path_map, &i)?);
        }
    }
    Ok(out)
}

pub(super) fn route_error(py: Python<'_>, ctx: &TaskContext, e: PyErr) -> GraphError {
    let message = format!("routing after {:?} failed: {}", ctx.node, e.value(py));
    node_error(py, ctx, message, e)
}

/// A reducer written in Python; `initial` makes the channel's starting value (the
/// field's type, e.g. `list`), called once per run.
pub(super) struct PyReducer {
    pub(super) func: Py<PyAny>,
    pub(super) initial: Option<Py<PyAny>>,
}

impl Reducer for PyReducer {
    fn initial(&self) -> Option<Val> {
        let f = self.initial.as_ref()?;
        // The schema reader checked that it can be called; should it fail after all,
        // the channel starts empty, as LangGraph's does when its type cannot be made.
        attach(|py| f.bind(py).call0().ok().map(host))
    }

    fn overwrite(&self, update: &Val) -> Option<Val> {
        let Val::Host(_) = update else { return None };
        attach(|py| -> Option<Val> {
            let v = val_to_py(py, update).ok()?;
            let h = helpers(py).ok()?;
            let found = h.overwritten.bind(py).call1((v,)).ok()?;
            if found.is_none() {
                return None;
            }
            found.get_item(0).ok().map(host)
        })
    }

    fn reduce(&self, channel: &str, current: Option<Val>, update: Val) -> Result<Val, GraphError> {
        attach(|py| -> PyResult<Val> {
            let cur = match &current {
                Some(c) => val_to_py(py, c)?,
                None => return Ok(update.clone()),
            };
            let upd = val_to_py(py, &update)?;
            Ok(host(self.func.bind(py).call1((cur, upd))?))
        })
        .map_err(|e| {
            GraphError::InvalidUpdate(format!("the reducer of channel {channel:?} failed: {e}"))
        })
    }
}
