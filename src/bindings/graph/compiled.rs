//! `_GraphCore`: the compiled graph object `CompiledStateGraph` drives.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};
use tokio_util::sync::CancellationToken;

use super::super::env::PyRunEnv;
use super::super::exiting::attach;
use super::super::helpers::helpers;
use super::super::models::AgentModel;
use super::super::runtime::{
    block_on, can_drive_inline, cancel_with, drive_inline, wait_for, Watched,
};
use super::super::serde::Allowlist;
use super::astream::{AsyncGraphStream, Mailbox};
use super::describe::{self, BranchDesc, ChannelDesc, NodeDesc};
use super::options::PyRunOptions;
use super::run::{config_str, GraphCore, RunCall, StreamDriver, ThreadAt};
use super::savers::checkpointer_from;
use super::stream::GraphStream;
use super::values::PyCodec;
use crate::graph::{modes, Graph, GraphError, NodeOutput, StateUpdate};
use crate::prebuilt::ModelCall;

#[pymethods]
impl GraphCore {
    #[new]
    #[pyo3(signature = (*, channels, nodes, edges, joins, branches, checkpointer=None,
                        interrupt_before=Vec::new(), interrupt_after=Vec::new(), store=None,
                        input_keys=None, output_keys=None, serde_allowlist=None,
                        direct_input=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        channels: Vec<ChannelDesc>,
        nodes: Vec<NodeDesc>,
        edges: Vec<(String, String)>,
        joins: Vec<(Vec<String>, String)>,
        branches: Vec<BranchDesc>,
        checkpointer: Option<Bound<'_, PyAny>>,
        interrupt_before: Vec<String>,
        interrupt_after: Vec<String>,
        store: Option<Py<PyAny>>,
        input_keys: Option<Vec<String>>,
        output_keys: Option<Vec<String>>,
        serde_allowlist: Option<Bound<'_, PyDict>>,
        direct_input: bool,
    ) -> PyResult<Self> {
        let (mut spec, shared) = describe::channels(channels, store);
        spec.input = input_keys;
        spec.output = output_keys;
        spec.direct_input = direct_input;
        for n in nodes {
            spec.nodes.push(n.into_spec(py, &spec.channels, &shared)?);
        }
        spec.edges = edges;
        spec.joins = joins;
        for b in branches {
            spec.branches
                .push(b.into_spec(py, &spec.channels, &shared)?);
        }
        // `False` (LangGraph's "no checkpoints, not even the parent's"), else a saver.
        let unsaved = checkpointer
            .as_ref()
            .is_some_and(|c| c.is_instance_of::<PyBool>() && !c.is_truthy().unwrap_or(true));
        let stateful = checkpointer
            .as_ref()
            .is_some_and(|c| c.is_instance_of::<PyBool>() && c.is_truthy().unwrap_or(false));
        let cp = match checkpointer {
            Some(c) if !c.is_none() && !unsaved && !stateful => Some(checkpointer_from(py, &c)?),
            _ => None,
        };
        let codec = Arc::new(PyCodec {
            allow: Allowlist::from_py(serde_allowlist.as_ref())?,
        });
        let graph = Graph::compile(spec, cp, codec.clone(), interrupt_before, interrupt_after)
            .map_err(PyErr::from)?;
        Ok(GraphCore {
            graph: Arc::new(graph),
            shared,
            codec,
            unsaved,
            stateful,
        })
    }

    /// `agent`: the model step of the agent running this graph, which the engine may
    /// run without Python (see `ironloop._shapes.BoundCore`).
    #[pyo3(signature = (input, config=None, *, options=None, agent=None))]
    fn invoke<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        config: Option<&Bound<'py, PyAny>>,
        options: Option<PyRef<'py, PyRunOptions>>,
        agent: Option<PyRef<'py, AgentModel>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = options.as_deref();
        let call = RunCall {
            input,
            config,
            event_loop: None,
            agent: model_call(agent),
        };
        let mut s = self.setup(py, call, options, None)?;
        let nested = s.opts.lent.is_some();
        let graph = self.graph.clone();
        let r = if can_drive_inline() {
            s.opts.inline = true;
            let cancel = s.opts.cancel.clone();
            drive_inline(py, graph.run(s.input, s.opts), &cancel)?
        } else {
            let cancel = s.opts.cancel.clone();
            block_on(py, async move { graph.run(s.input, s.opts).await }, cancel)?
        };
        self.output(py, r, nested)
    }

    /// `stopped`: an `asyncio.Event` set once the run has ended or, cancelled, has
    /// handed its tasks' cancellations to the loop (see [`Watched`]).
    #[pyo3(signature = (input, config, event_loop, *, options=None, agent=None, stopped=None))]
    #[allow(clippy::too_many_arguments)]
    fn ainvoke<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        config: Option<&Bound<'py, PyAny>>,
        event_loop: Py<PyAny>,
        options: Option<PyRef<'py, PyRunOptions>>,
        agent: Option<PyRef<'py, AgentModel>>,
        stopped: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stopped = stopped.map(|e| (e, event_loop.clone_ref(py)));
        let lp = event_loop.bind(py).clone();
        let (options, agent) = (options.as_deref(), model_call(agent));
        let call = RunCall {
            input,
            config,
            event_loop: Some(event_loop),
            agent,
        };
        let s = self.setup(py, call, options, None)?;
        let nested = s.opts.lent.is_some();
        let graph = self.graph.clone();
        let (shared, codec) = (self.shared.clone(), self.codec.clone());
        let (unsaved, stateful) = (self.unsaved, self.stateful);
        let cancel = s.opts.cancel.clone();
        // Polled on the caller's loop (see `on_loop`).
        let fut = crate::bindings::on_loop::future_into_py(&lp, async move {
            let guard = s.opts.cancel.clone().drop_guard();
            let r = Watched::new(graph.run(s.input, s.opts), stopped).await;
            guard.disarm();
            attach(|py| {
                let core = GraphCore {
                    graph,
                    shared,
                    codec,
                    unsaved,
                    stateful,
                };
                core.output(py, r, nested).map(Bound::unbind)
            })
        })?;
        cancel_with(&fut, cancel)?;
        Ok(fut)
    }

    /// `options`: the stream modes and `subgraphs` among them.
    #[pyo3(signature = (input, config, options, event_loop=None, *, agent=None))]
    fn stream(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyAny>>,
        options: PyRef<'_, PyRunOptions>,
        event_loop: Option<Py<PyAny>>,
        agent: Option<PyRef<'_, AgentModel>>,
    ) -> PyResult<Py<PyAny>> {
        let agent = model_call(agent);
        let (bits, subgraphs) = (options.modes, options.subgraphs);
        let start = |py, event_loop, send, driver| {
            let call = RunCall {
                input,
                config,
                event_loop,
                agent: agent.clone(),
            };
            self.start_stream(py, call, &options, send, driver)
        };
        if let Some(lp) = event_loop {
            // Driven on the consumer's loop, its items queued there (see `on_loop`).
            let (mailbox, tx) = Mailbox::new(lp.bind(py));
            let send = Box::new(move |m| tx.send(m));
            let driver = StreamDriver::Loop(lp.clone_ref(py));
            let (shape, _) = start(py, Some(lp), send, driver)?;
            let st = AsyncGraphStream::new(mailbox, shape);
            return Ok(Bound::new(py, st)?.into_any().unbind());
        }
        // Driven by the thread that pulls the items, as `invoke` drives its run, unless
        // this thread drives a run already (a stream started inside a node).
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = Arc::new(futures::task::AtomicWaker::new());
        let wake = sent.clone();
        let send = Box::new(move |m| {
            drop(tx.send(m));
            wake.wake();
        });
        let driver = if can_drive_inline() {
            StreamDriver::Caller {
                tasks_here: bits & modes::FROM_TASKS == 0 && !subgraphs,
            }
        } else {
            StreamDriver::Runtime
        };
        let (shape, run) = start(py, None, send, driver)?;
        let st = GraphStream {
            rx: Mutex::new(rx),
            shape,
            done: false,
            run: Mutex::new(run),
            sent,
        };
        Ok(Bound::new(py, st)?.into_any().unbind())
    }

    /// `saver`: where a subgraph's checkpoints are (its parent's checkpointer), for a
    /// config naming its `checkpoint_ns`.
    #[pyo3(signature = (config, saver=None))]
    fn get_state<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        saver: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let at = ThreadAt::from_config(config, "get_state")?;
        let id = config_str(config, "checkpoint_id")?;
        let (graph, cp, key) = (self.graph.clone(), self.saver(py, saver)?, at.key());
        let snap = wait_for(
            py,
            async move {
                match cp {
                    Some(cp) => graph.load_from(cp.as_ref(), &key, id.as_deref()).await,
                    None => graph.load(&key, id.as_deref()).await,
                }
            },
            CancellationToken::new(),
        )?
        .map_err(PyErr::from)?;
        match snap {
            Some(s) => self.snapshot_to_py(py, &at, s),
            None => helpers(py)?.state_snapshot.bind(py).call1((
                PyDict::new(py),
                PyTuple::empty(py),
                at.config(py, None)?,
                py.None(),
                py.None(),
                py.None(),
                PyTuple::empty(py),
                PyTuple::empty(py),
            )),
        }
    }

    #[pyo3(signature = (config, limit=None, before=None, saver=None))]
    fn get_state_history<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        limit: Option<usize>,
        before: Option<&Bound<'py, PyAny>>,
        saver: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let at = ThreadAt::from_config(config, "get_state_history")?;
        let before = match before {
            Some(b) => config_str(b, "checkpoint_id")?,
            None => None,
        };
        let (graph, cp, key) = (self.graph.clone(), self.saver(py, saver)?, at.key());
        let snaps = wait_for(
            py,
            async move {
                match cp {
                    Some(cp) => {
                        graph
                            .history_from(cp.as_ref(), &key, limit, before.as_deref())
                            .await
                    }
                    None => graph.history(&key, limit, before.as_deref()).await,
                }
            },
            CancellationToken::new(),
        )?
        .map_err(PyErr::from)?;
        let out = PyList::empty(py);
        for s in snaps {
            out.append(self.snapshot_to_py(py, &at, s)?)?;
        }
        Ok(out)
    }

    #[pyo3(signature = (config, values, as_node=None))]
    fn update_state<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        values: &Bound<'py, PyAny>,
        as_node: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let update = self.state_update(py, values, as_node)?;
        self.apply_updates(py, config, "update_state", vec![vec![update]], None)
    }

    /// `bulk_update_state`: `supersteps` is a list of lists of `(values, as_node)`
    /// pairs, each inner list saved as one checkpoint.
    /// With `saver`, the graph is a subgraph whose checkpoints (under `config`'s
    /// `checkpoint_ns`) its parent keeps in that saver.
    #[pyo3(signature = (config, supersteps, saver=None))]
    fn bulk_update_state<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        supersteps: Vec<Vec<(Bound<'py, PyAny>, Option<String>)>>,
        saver: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let supersteps = supersteps
            .into_iter()
            .map(|step| {
                step.into_iter()
                    .map(|(values, as_node)| self.state_update(py, &values, as_node))
                    .collect::<PyResult<Vec<_>>>()
            })
            .collect::<PyResult<Vec<_>>>()?;
        let saver = self.saver(py, saver)?;
        self.apply_updates(py, config, "bulk_update_state", supersteps, saver)
    }

    /// Node names, for drawing.
    fn node_names(&self) -> Vec<String> {
        self.graph
            .spec()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect()
    }
}

/// The engine's handle on an agent's model step.
fn model_call(agent: Option<PyRef<'_, AgentModel>>) -> Option<Arc<ModelCall>> {
    agent.map(|a| a.0.clone())
}

impl GraphCore {
    /// One update of `update_state`: `values` as the writes `as_node` would make.
    fn state_update(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        as_node: Option<String>,
    ) -> PyResult<StateUpdate> {
        let mut out = NodeOutput::default();
        if values.is_none() && as_node.as_deref() == Some(crate::graph::INPUT_NODE) {
            return Err(GraphError::InvalidUpdate(
                "update_state as \"__input__\" got no input (values=None): pass the input, \
                 a dict of the graph's input keys ({} for none)"
                    .into(),
            )
            .into());
        }
        if !values.is_none() {
            let name = as_node.as_deref().unwrap_or("update_state");
            self.shared.write_output(py, name, values, &mut out)?;
        }
        Ok(StateUpdate {
            writes: out.writes,
            goto: out.goto,
            as_node,
        })
    }

    /// Saves `supersteps` on the thread `config` names; returns the last checkpoint's
    /// config.
    fn apply_updates<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyAny>,
        what: &str,
        supersteps: Vec<Vec<StateUpdate>>,
        saver: Option<Arc<dyn crate::checkpoint::Checkpointer>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let at = ThreadAt::from_config(config, what)?;
        if !at.checkpoint_ns.is_empty() && saver.is_none() {
            return Err(PyValueError::new_err(format!(
                "{what}: checkpoint_ns {:?} names a subgraph's checkpoint; call \
                 {what} on the graph that contains that subgraph (the root graph), \
                 which passes it to the subgraph",
                at.checkpoint_ns
            )));
        }
        let id = config_str(config, "checkpoint_id")?;
        let graph = self.graph.clone();
        let env = PyRunEnv::capture(py, None, None, None, None, None, None)?;
        let host_env: Arc<dyn std::any::Any + Send + Sync> = env.clone();
        let key = at.key();
        let new_id = wait_for(
            py,
            async move {
                match saver {
                    Some(cp) => {
                        graph
                            .bulk_update_state_in(
                                cp,
                                &key,
                                id.as_deref(),
                                supersteps,
                                Some(host_env),
                            )
                            .await
                    }
                    None => {
                        graph
                            .bulk_update_state(&key, id.as_deref(), supersteps, Some(host_env))
                            .await
                    }
                }
            },
            CancellationToken::new(),
        )?
        .map_err(PyErr::from)?;
        at.config(py, Some(&new_id))
    }

    /// The checkpointer a `saver` argument names (`None`: the graph's own).
    fn saver(
        &self,
        py: Python<'_>,
        saver: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Arc<dyn crate::checkpoint::Checkpointer>>> {
        saver
            .filter(|s| !s.is_none())
            .map(|s| checkpointer_from(py, s))
            .transpose()
    }
}
