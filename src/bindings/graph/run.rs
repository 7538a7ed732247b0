//! One run from Python: reading `config`, starting it, and turning its result,
//! snapshots and failures into Python values.

use std::collections::BTreeMap;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::super::convert::{iso_utc, value_from_py, value_to_py};
use super::super::env::PyRunEnv;
use super::super::helpers::helpers;
use super::super::toolnode::command_class;
use super::options::{durability_name, PyRunOptions};
use super::stream::{GraphStreamShape, InlineRun, StreamMsg, StreamSend};
use super::task::TaskScratch;
use super::values::{host, val_to_py, PyCodec, Shared};
use crate::checkpoint::thread_key;
use crate::graph::{
    is_hidden, modes, questions, Graph, GraphError, InterruptInfo, InterruptKind, Multitask,
    NodeOutput, Replay, Reserved, Resume, RunInput, RunOptions, RunResult, Snapshot, StreamSink,
    TaskStatus, Val, ValueCodec, ROOT, START,
};
use crate::prebuilt::ModelCall;

// ---------------------------------------------------------------------------------
// The compiled graph

#[pyclass(name = "_GraphCore", module = "ironloop._ironloop", frozen)]
pub struct GraphCore {
    pub(super) graph: Arc<Graph>,
    pub(super) shared: Arc<Shared>,
    /// The graph's codec (its allowlist), also for what the glue decodes itself.
    pub(super) codec: Arc<PyCodec>,
    /// Compiled with `checkpointer=False`: as LangGraph's, a subgraph that keeps no
    /// checkpoints at all, not even in the checkpointer its parent would lend it, so
    /// each call starts afresh.
    pub(super) unsaved: bool,
    /// Compiled with `checkpointer=True`: a subgraph whose checkpoints, in the saver
    /// its parent lends, form one history per node of the parent, so each call
    /// continues where the last one left the subgraph's state.
    pub(super) stateful: bool,
}

/// What an entry point (`invoke`, `ainvoke`, `stream`) was handed for a run, as
/// [`GraphCore::setup`] and [`GraphCore::start_stream`] both read it: one value
/// instead of the same five parameters written down at each.
pub(super) struct RunCall<'a, 'py> {
    pub(super) input: &'a Bound<'py, PyAny>,
    pub(super) config: Option<&'a Bound<'py, PyAny>>,
    /// The caller's event loop (an async entry point's).
    pub(super) event_loop: Option<Py<PyAny>>,
    pub(super) agent: Option<Arc<ModelCall>>,
}

/// What a Python call passes for a run.
pub(super) struct RunSetup {
    pub(super) input: RunInput,
    pub(super) opts: RunOptions,
}

/// The scratchpad of the task this call runs in, if it runs in one.
fn parent_task<'py>(py: Python<'py>) -> PyResult<Option<Bound<'py, TaskScratch>>> {
    let var = helpers(py)?.task_var.bind(py);
    let cur = var.call_method1(intern!(py, "get"), (py.None(),))?;
    Ok(cur.cast_into::<TaskScratch>().ok())
}

/// The config a nested run's nodes see: the caller's, with the thread and namespace its
/// parent lent it in `configurable` (as LangGraph's subgraph nodes see them).
fn lent_config<'py>(
    py: Python<'py>,
    cfg: &Bound<'py, PyAny>,
    opts: &RunOptions,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(thread_id) = &opts.thread_id else {
        return Ok(cfg.clone());
    };
    let lent = [
        ("thread_id", thread_id.as_str()),
        ("checkpoint_ns", opts.checkpoint_ns.as_str()),
    ];
    with_configurable(py, cfg, &lent)
}

/// A copy of `cfg` with `items` set in its `configurable`.
fn with_configurable<'py>(
    py: Python<'py>,
    cfg: &Bound<'py, PyAny>,
    items: &[(&str, &str)],
) -> PyResult<Bound<'py, PyAny>> {
    let out = match cfg.cast::<PyDict>() {
        Ok(d) => d.copy()?,
        Err(_) => PyDict::new(py),
    };
    let conf = match out.get_item("configurable")? {
        Some(c) => match c.cast::<PyDict>() {
            Ok(c) => c.copy()?,
            Err(_) => PyDict::new(py),
        },
        None => PyDict::new(py),
    };
    for (k, v) in items {
        conf.set_item(k, v)?;
    }
    out.set_item("configurable", conf)?;
    Ok(out.into_any())
}

/// Where LangGraph's config carries a run's durability (its `CONFIG_KEY_DURABILITY`):
/// a run sets it for the subgraphs its nodes run, which take it when not given one.
const DURABILITY_KEY: &str = "__pregel_durability";

/// `cfg["configurable"][key]`, when `cfg` and its `configurable` are dicts that have
/// it.
pub(super) fn configurable_item<'py>(
    cfg: &Bound<'py, PyAny>,
    key: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Ok(d) = cfg.cast::<PyDict>() else {
        return Ok(None);
    };
    let Some(c) = d.get_item("configurable")? else {
        return Ok(None);
    };
    match c.cast::<PyDict>() {
        Ok(c) => c.get_item(key),
        Err(_) => Ok(None),
    }
}

pub(super) fn config_str(cfg: &Bound<'_, PyAny>, key: &str) -> PyResult<Option<String>> {
    match configurable_item(cfg, key)? {
        Some(v) if !v.is_none() => Ok(Some(v.str()?.to_string())),
        _ => Ok(None),
    }
}

/// `config["configurable"]["checkpoint_map"]`: LangGraph's checkpoint ids of a
/// subgraph checkpoint's enclosing graphs (and its own) by namespace; empty without.
pub(super) fn checkpoint_map(cfg: &Bound<'_, PyAny>) -> PyResult<BTreeMap<String, String>> {
    let conf = cfg
        .cast::<PyDict>()
        .ok()
        .and_then(|d| d.get_item("configurable").ok().flatten());
    let Some(map) = conf.and_then(|c| c.get_item("checkpoint_map").ok()) else {
        return Ok(BTreeMap::new());
    };
    if map.is_none() {
        return Ok(BTreeMap::new());
    }
    map.extract().map_err(|_| {
        PyTypeError::new_err(
            "config[\"configurable\"][\"checkpoint_map\"] must map namespaces to checkpoint \
             ids (str to str), as get_state(config, subgraphs=True) gives it",
        )
    })
}

/// A root run given a subgraph's checkpoint config (its `checkpoint_ns`, as
/// `get_state(subgraphs=True).tasks[i].state.config` or a subgraph's
/// `update_state` gives it): as LangGraph's, the root graph runs from the
/// checkpoint the config's `checkpoint_map` names for it (`""`; without one, from its
/// latest) and each subgraph from the one named for its namespace.
fn subgraph_address(cfg: &Bound<'_, PyAny>, opts: &mut RunOptions) -> PyResult<()> {
    match config_str(cfg, "checkpoint_ns")? {
        Some(ns) if !ns.is_empty() => {}
        _ => return Ok(()),
    }
    let map = checkpoint_map(cfg)?;
    opts.checkpoint_id = map.get("").cloned();
    opts.replay = Some(Arc::new(Replay::new(map, None)));
    Ok(())
}

impl GraphCore {
    /// What a run's `input` asks for: continue (`None`), a `Command` (resume values, or
    /// START's writes and routes), or new values.
    fn run_input(&self, py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<RunInput> {
        let run_input = if input.is_none() {
            RunInput::Continue
        } else if input.is_instance(command_class(py)?)? {
            let resume = input.getattr("resume")?;
            if resume.is_none() {
                // `Command(update=..., goto=...)` as new input: START's writes and routes.
                let mut out = NodeOutput::default();
                self.shared.write_output(py, START, input, &mut out)?;
                RunInput::Command(out)
            } else {
                RunInput::Resume(self.resume_values(&resume)?, self.resume_update(py, input)?)
            }
        } else {
            RunInput::Values(self.shared.input_writes(py, input)?)
        };
        Ok(run_input)
    }

    /// The values of `Command(resume=...)`: by interrupt id, or one value.
    fn resume_values(&self, resume: &Bound<'_, PyAny>) -> PyResult<Resume> {
        if let Ok(d) = resume.cast::<PyDict>() {
            // {interrupt_id: value} when several interrupts are pending; as in
            // LangGraph's strict resume, a map whose keys all look like ids (none:
            // an empty map) is one, so an unknown id is refused, not taken as a value.
            let ids_look_like_interrupts = d.keys().iter().all(|k| {
                k.extract::<String>()
                    .is_ok_and(|s| looks_like_interrupt_id(&s))
            });
            if ids_look_like_interrupts {
                let mut m = Vec::new();
                for (k, v) in d.iter() {
                    m.push((k.extract()?, host(v)));
                }
                return Ok(Resume::ById(m));
            }
        }
        Ok(Resume::One(host(resume.clone())))
    }

    /// The writes of a resuming `Command`'s `update`, applied before the resumed
    /// tasks run, as LangGraph.
    fn resume_update(
        &self,
        py: Python<'_>,
        cmd: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(String, Val)>> {
        if cmd.getattr("update")?.is_none() {
            return Ok(Vec::new());
        }
        let mut out = NodeOutput::default();
        self.shared.write_output(py, START, cmd, &mut out)?;
        Ok(out.writes)
    }

    pub(super) fn setup(
        &self,
        py: Python<'_>,
        call: RunCall<'_, '_>,
        options: Option<&PyRunOptions>,
        stream: Option<StreamSink>,
    ) -> PyResult<RunSetup> {
        let RunCall {
            input,
            config,
            event_loop,
            agent,
        } = call;
        // A run inside a task (a subgraph, a sub-agent): the how-manieth of the task's
        // runs it is, as LangGraph numbers a task's subgraph calls.
        let parent = parent_task(py)?;
        let call = parent
            .as_ref()
            .map_or(0, |sc| sc.borrow().next_subgraph_call());
        let stream = self.stream_around(config, stream, parent.as_ref(), call)?;
        let mut opts = RunOptions {
            stream,
            in_task: parent.is_some(),
            ..Default::default()
        };
        let cfg = match config {
            Some(c) if !c.is_none() => c.clone(),
            _ => PyDict::new(py).into_any(),
        };
        if !cfg.is_none() && cfg.cast::<PyDict>().is_err() {
            return Err(PyTypeError::new_err(
                "config must be a dict, e.g. {\"configurable\": {\"thread_id\": \"1\"}}",
            ));
        }
        opts.thread_id = config_str(&cfg, "thread_id")?;
        // LangGraph's switch of strict resume; ironloop's default is on.
        opts.strict_resume = config_str(&cfg, STRICT_RESUME_KEY)?.as_deref() != Some("False");
        opts.checkpoint_id = config_str(&cfg, "checkpoint_id")?;
        if let Some(d) = config_str(&cfg, DURABILITY_KEY)? {
            opts.durability = crate::graph::options::durability(&d)?;
        }
        let mut cfg = cfg;
        if let Some(o) = options {
            o.apply(&self.graph, &mut opts)?;
            if let Some(d) = o.durability {
                cfg = with_configurable(py, &cfg, &[(DURABILITY_KEY, durability_name(d))])?;
            }
        }
        // A subgraph inside a task of a run with checkpoints keeps its own there, even
        // one compiled with a checkpointer of its own: as in LangGraph, the outer run's
        // checkpointer wins when no thread is given (`lend` does nothing outside such
        // a task, and the graph's own checkpointer then asks for a thread).
        if opts.thread_id.is_none() && !self.unsaved {
            if let Some(sc) = &parent {
                sc.borrow().lend(py, &mut opts, self.stateful, call);
                cfg = lent_config(py, &cfg, &opts)?;
            }
        }
        if opts.lent.is_none() {
            subgraph_address(&cfg, &mut opts)?;
        }
        config_options(&cfg, &mut opts)?;
        opts.drain = super::control::drain_of(&cfg)?;
        let run_input = self.run_input(py, input)?;
        let env = PyRunEnv::capture(
            py,
            event_loop,
            None,
            self.shared.store.as_ref().map(|s| s.clone_ref(py)),
            None,
            Some(cfg.unbind()),
            agent,
        )?;
        opts.observer = env.step_observer(py);
        opts.host = Some(env);
        Ok(RunSetup {
            input: run_input,
            opts,
        })
    }

    /// Where a run streams: to its own caller (`stream`, a `stream()` call) and, run
    /// inside a task of a run streaming subgraph events (a subgraph, a sub-agent, a
    /// graph a node invokes or streams), to that run's stream too, under the task's
    /// namespace, as in LangGraph. A graph a node runs on a thread of its own
    /// (`{"configurable": {"thread_id": ...}}`) is no subgraph: as in LangGraph, only
    /// what its nodes' LangChain models and tools report (`messages`, `tools`) reaches
    /// the run around it, at that run's level.
    fn stream_around(
        &self,
        config: Option<&Bound<'_, PyAny>>,
        stream: Option<StreamSink>,
        parent: Option<&Bound<'_, TaskScratch>>,
        call: usize,
    ) -> PyResult<Option<StreamSink>> {
        let Some(task) = parent else {
            return Ok(stream);
        };
        let own_thread = match config {
            Some(c) => {
                config_str(c, "thread_id")?.is_some()
                    && config_str(c, "checkpoint_ns")?.is_none_or(|ns| ns.is_empty())
            }
            None => false,
        };
        let task = task.borrow();
        let around = if own_thread {
            task.stream
                .clone()
                .filter(|s| s.subgraphs)
                .and_then(|s| s.only(modes::MESSAGES | modes::TOOLS))
        } else {
            task.nested_sink(self.stateful, call)
        };
        Ok(match (stream, around) {
            (Some(own), Some(around)) => Some(own.tee(around)),
            (own, around) => own.or(around),
        })
    }

    /// Starts a run whose events (and then its result) go to `send`; returns how to
    /// shape them for Python. Driven by the caller, the run is not started but
    /// returned, for the thread that pulls its items to drive (see [`GraphStream`]).
    pub(super) fn start_stream(
        &self,
        py: Python<'_>,
        call: RunCall<'_, '_>,
        options: &PyRunOptions,
        send: StreamSend,
        driver: StreamDriver,
    ) -> PyResult<(GraphStreamShape, Option<InlineRun>)> {
        let send: Arc<dyn Fn(StreamMsg) + Send + Sync> = Arc::from(send);
        let events = send.clone();
        let sink = StreamSink {
            modes: options.modes,
            subgraphs: options.subgraphs,
            send: Arc::new(move |ev| events(StreamMsg::Event(ev))),
            seen: Default::default(),
        };
        let mut s = self.setup(py, call, Some(options), Some(sink))?;
        let driven = matches!(driver, StreamDriver::Caller { .. });
        s.opts.inline = matches!(driver, StreamDriver::Caller { tasks_here: true });
        s.opts.live = driven;
        let thread = s.opts.thread_id.clone().unwrap_or_default();
        let cancel = s.opts.cancel.clone();
        let (graph, stop) = (self.graph.clone(), cancel.clone());
        let run = async move {
            let run = graph.run(s.input, s.opts);
            tokio::pin!(run);
            let r = tokio::select! {
                r = &mut run => r,
                // Cancelled (the consumer closed the stream): the run winds down on its
                // own, its async nodes cancelled and the writes of the finished ones
                // saved before its end is sent, as LangGraph's stream ends only then; a
                // run that waits for a sync node (nothing stops one) is dropped after
                // `WIND_DOWN`, and the node's output with it.
                _ = stop.cancelled() => tokio::time::timeout(WIND_DOWN, &mut run)
                    .await
                    .unwrap_or(Err(GraphError::Cancelled)),
            };
            send(StreamMsg::Done(r));
        };
        let run: Option<InlineRun> = match driver {
            StreamDriver::Caller { .. } => Some(Box::pin(run)),
            StreamDriver::Runtime => {
                super::super::runtime::runtime().spawn(run);
                None
            }
            StreamDriver::Loop(lp) => {
                super::super::on_loop::LoopRun::start(lp.bind(py), run)?;
                None
            }
        };
        let shape = GraphStreamShape {
            shared: self.shared.clone(),
            wanted: options.modes,
            single: options.single,
            thread,
            subgraphs: options.subgraphs,
            cancel,
        };
        Ok((shape, run))
    }

    /// What a run returns to Python. A `nested` run (a subgraph in a task of a run
    /// that keeps checkpoints) that stopped at one of its static breakpoints raises
    /// `GraphInterrupt` with `breakpoint` set instead, as LangGraph's subgraph raises
    /// a bare one: the task pauses, and resuming it continues the subgraph.
    pub(super) fn output<'py>(
        &self,
        py: Python<'py>,
        r: Result<RunResult, GraphError>,
        nested: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = r.map_err(PyErr::from)?;
        let paused = !r.interrupts.is_empty()
            && r.interrupts.iter().all(|i| i.kind() != InterruptKind::Node);
        if nested && paused {
            let e = helpers(py)?.graph_interrupt.bind(py).call1(((),))?;
            e.setattr("breakpoint", true)?;
            return Err(PyErr::from_value(e));
        }
        let asked: Vec<InterruptInfo> = (r.interrupts.iter())
            .filter(|i| i.kind() == InterruptKind::Node)
            .cloned()
            .collect();
        if nested && !asked.is_empty() {
            return Err(super::nodes::nested_pause(py, &asked)?);
        }
        let out = match &r.output {
            Some(v) => self.shared.state_value(py, v)?,
            None => py.None().into_bound(py),
        };
        // Only `interrupt()`s show: a pause at `interrupt_before` / `after` does not.
        let interrupts = interrupts_to_py(py, &r.interrupts)?;
        if interrupts.is_empty() {
            return Ok(out);
        }
        // As LangGraph: the interrupts join a dict result, or stand alone.
        let d = match out.cast_into::<PyDict>() {
            Ok(d) => d,
            Err(_) => PyDict::new(py),
        };
        d.set_item(Reserved::Interrupt.as_str(), PyList::new(py, interrupts)?)?;
        Ok(d.into_any())
    }

    pub(super) fn snapshot_to_py<'py>(
        &self,
        py: Python<'py>,
        thread: &ThreadAt,
        s: Snapshot,
    ) -> PyResult<Bound<'py, PyAny>> {
        let values = self.shared.state_value(py, &s.state)?;
        snapshot(py, thread, &s, values, self)
    }
}

/// The `Interrupt` objects of the `interrupt()` calls among `is` (a pause at
/// `interrupt_before` / `after` has none).
pub(super) fn interrupts_to_py<'py>(
    py: Python<'py>,
    is: &[InterruptInfo],
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let cls = helpers(py)?.interrupt.bind(py);
    is.iter()
        .filter(|i| i.kind() == InterruptKind::Node)
        .map(|i| cls.call1((val_to_py(py, &i.value)?, &i.id)))
        .collect()
}

/// A thread, or a subgraph's namespace in one, as a config names it.
pub(super) struct ThreadAt {
    pub(super) thread_id: String,
    pub(super) checkpoint_ns: String,
}

impl ThreadAt {
    /// `config["configurable"]`'s `thread_id` (required, `what` needs it) and
    /// `checkpoint_ns`.
    pub(super) fn from_config(config: &Bound<'_, PyAny>, what: &str) -> PyResult<ThreadAt> {
        let thread_id = config_str(config, "thread_id")?.ok_or_else(|| {
            PyValueError::new_err(format!(
                "{what} needs config={{\"configurable\": {{\"thread_id\": ...}}}}"
            ))
        })?;
        Ok(ThreadAt {
            thread_id,
            checkpoint_ns: config_str(config, "checkpoint_ns")?.unwrap_or_default(),
        })
    }

    /// Where its checkpoints are stored.
    pub(super) fn key(&self) -> String {
        thread_key(&self.thread_id, &self.checkpoint_ns)
    }

    /// The config of its checkpoint `id` (or of the thread, without one).
    pub(super) fn config<'py>(
        &self,
        py: Python<'py>,
        id: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let c = PyDict::new(py);
        c.set_item("thread_id", &self.thread_id)?;
        c.set_item("checkpoint_ns", &self.checkpoint_ns)?;
        if let Some(id) = id {
            c.set_item("checkpoint_id", id)?;
        }
        let d = PyDict::new(py);
        d.set_item("configurable", c)?;
        Ok(d)
    }
}

impl ThreadAt {
    /// The config of its checkpoint `id`, whose metadata is `meta`. A subgraph's
    /// carries LangGraph's `checkpoint_map`: the checkpoints of the enclosing graphs
    /// the checkpoint was made under (its metadata's `parents`), and itself, so that
    /// running the root graph with this config goes back to them all.
    pub(super) fn mapped_config<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        meta: &serde_json::Value,
    ) -> PyResult<Bound<'py, PyDict>> {
        let c = self.config(py, Some(id))?;
        if self.checkpoint_ns.is_empty() {
            return Ok(c);
        }
        let map = PyDict::new(py);
        if let Some(parents) = meta.get("parents").and_then(|p| p.as_object()) {
            for (ns, pid) in parents {
                if let Some(pid) = pid.as_str() {
                    map.set_item(ns, pid)?;
                }
            }
        }
        map.set_item(&self.checkpoint_ns, id)?;
        c.get_item("configurable")?
            .ok_or_else(|| PyValueError::new_err("config without configurable"))?
            .set_item("checkpoint_map", map)?;
        Ok(c)
    }
}

pub(super) fn snapshot<'py>(
    py: Python<'py>,
    thread: &ThreadAt,
    s: &Snapshot,
    values: Bound<'py, PyAny>,
    core: &GraphCore,
) -> PyResult<Bound<'py, PyAny>> {
    let h = helpers(py)?;
    let r = &s.record;
    let interrupt_cls = h.interrupt.bind(py);
    let task_cls = h.pregel_task.bind(py);
    let decode = |channel: &str, w: &crate::checkpoint::PendingWrite| {
        core.codec
            .decode(channel, (*w.value).clone())
            .map_err(PyErr::from)
    };
    let mut all_interrupts = Vec::new();
    let mut tasks = Vec::new();
    let mut next = Vec::new();
    let mut pushed = 0;
    for t in &r.next {
        let status = TaskStatus::of(&t.id, &s.pending);
        // As LangGraph: the current status lists what is still to run and to answer;
        // the record of a step, every task and every question asked in it.
        let shown = if s.live {
            status.pending_interrupt()
        } else {
            status.interrupt
        };
        let mut its = Vec::new();
        if let Some(w) = shown {
            // Its own question, or those of a graph nested in it, each with its id.
            let qs = questions(core.codec.as_ref(), &thread.checkpoint_ns, &t.id, w)?;
            for (id, v) in qs {
                let i = interrupt_cls.call1((val_to_py(py, &v)?, id))?;
                all_interrupts.push(i.clone());
                its.push(i);
            }
        }
        if !(s.live && status.finished) {
            next.push(t.node.as_str());
        }
        let kw = PyDict::new(py);
        kw.set_item("interrupts", PyTuple::new(py, its)?)?;
        // As LangGraph: the error the task failed the run with, as text.
        kw.set_item("error", status.error)?;
        // LangGraph's task paths: an edge's task pulls its node, a `Send`'s is pushed
        // (the how-manieth `Send` of the step it is).
        if t.arg.is_some() {
            kw.set_item("path", ("__pregel_push", pushed, false))?;
            pushed += 1;
        } else {
            kw.set_item("path", ("__pregel_pull", &t.node))?;
        }
        if status.finished {
            let writes = status
                .output
                .iter()
                .filter(|w| !is_hidden(&w.channel))
                .map(|w| Ok((w.channel.clone(), decode(&w.channel, w)?)))
                .collect::<PyResult<Vec<_>>>()?;
            let result = super::stream::task_result(py, &writes)?;
            // A state that is one value (`StateGraph(int)`) shows what the task wrote
            // to it, bare (nothing: `None`), as LangGraph's.
            match s.state.root() {
                Some(_) => kw.set_item("result", result.get_item(ROOT)?)?,
                None => kw.set_item("result", result)?,
            }
        }
        tasks.push(task_cls.call((&t.id, &t.node), Some(&kw))?);
    }
    let metadata = value_to_py(py, &r.metadata)?;
    let created = iso_utc(py, r.created_at)?;
    let parent_config = match s
        .parent
        .as_ref()
        .map(|p| p.id.as_str())
        .or(r.parent_id.as_deref())
    {
        Some(p) => thread.mapped_config(py, p, &r.metadata)?.into_any(),
        None => py.None().into_bound(py),
    };
    h.state_snapshot.bind(py).call1((
        values,
        PyTuple::new(py, next)?,
        thread.mapped_config(py, &r.id, &r.metadata)?,
        metadata,
        created,
        parent_config,
        PyTuple::new(py, tasks)?,
        PyTuple::new(py, all_interrupts)?,
    ))
}

/// The `configurable` key of LangGraph's strict resume (its
/// `CONFIG_KEY_STRICT_RESUME`): `False` turns it off (see `RunOptions::strict_resume`).
const STRICT_RESUME_KEY: &str = "__pregel_strict_resume";

/// Whether a resume map's key names an interrupt: LangGraph's form, 32 hex digits
/// (an xxh3-128 digest, see [`crate::graph::interrupt_id`]), as its
/// `is_xxh3_128_hexdigest`; an unknown one is then refused rather than taken for an
/// answer.
fn looks_like_interrupt_id(key: &str) -> bool {
    key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The run options a LangGraph config carries beside `configurable`: `recursion_limit`,
/// `metadata` and `multitask_strategy`, each checked.
/// The keys of `configurable` a checkpoint's metadata never takes (LangGraph's
/// `EXCLUDED_METADATA_KEYS`): where the checkpoint is, not what the run was given.
const NOT_METADATA: [&str; 4] = [
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "checkpoint_map",
];

/// Adds the run's `configurable` scalars (str, int, float, bool) to its checkpoints'
/// metadata, as LangGraph's savers do (`get_checkpoint_metadata`), so a checkpoint
/// says what it was run with (a user id, a model name); `config["metadata"]` wins,
/// and internal (`__`) keys and where-keys ([`NOT_METADATA`]) stay out.
fn configurable_metadata(d: &Bound<'_, PyDict>, opts: &mut RunOptions) -> PyResult<()> {
    let Some(Ok(c)) = d.get_item("configurable")?.map(|c| c.cast_into::<PyDict>()) else {
        return Ok(());
    };
    let mut m = match std::mem::take(&mut opts.metadata) {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    for (k, v) in c.iter() {
        let Ok(k) = k.extract::<String>() else {
            continue;
        };
        if k.starts_with("__") || NOT_METADATA.contains(&k.as_str()) || m.contains_key(&k) {
            continue;
        }
        let scalar = v.is_instance_of::<pyo3::types::PyString>()
            || v.is_instance_of::<pyo3::types::PyBool>()
            || v.is_instance_of::<pyo3::types::PyInt>()
            || v.is_instance_of::<pyo3::types::PyFloat>();
        if scalar {
            m.insert(k, value_from_py(&v, "config configurable")?);
        }
    }
    opts.metadata = serde_json::Value::Object(m);
    Ok(())
}

fn config_options(cfg: &Bound<'_, PyAny>, opts: &mut RunOptions) -> PyResult<()> {
    if let Ok(d) = cfg.cast::<PyDict>() {
        if let Some(r) = d.get_item("recursion_limit")? {
            let n: i64 = r
                .extract()
                .map_err(|_| PyTypeError::new_err("recursion_limit must be an int"))?;
            if n < 1 {
                return Err(PyValueError::new_err(format!(
                    "recursion_limit must be at least 1, got {n}"
                )));
            }
            opts.recursion_limit = n as usize;
        }
        if let Some(m) = d.get_item("max_concurrency")? {
            if !m.is_none() {
                let n: i64 = m.extract().map_err(|_| {
                    PyTypeError::new_err("max_concurrency must be an int (or None: no limit)")
                })?;
                if n < 1 {
                    return Err(PyValueError::new_err(format!(
                        "max_concurrency must be at least 1 (or None: no limit), got {n}"
                    )));
                }
                opts.max_concurrency = Some(n as usize);
            }
        }
        if let Some(m) = d.get_item("metadata")? {
            opts.metadata = value_from_py(&m, "config metadata")?;
        }
        configurable_metadata(d, opts)?;
        // LangGraph's run option, kept in the config (see `Multitask`).
        if let Some(m) = d.get_item("multitask_strategy")? {
            let name: Option<String> = m.extract().ok();
            opts.multitask = name.as_deref().and_then(Multitask::parse).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "multitask_strategy must be 'reject', 'enqueue', 'interrupt' or \
                         'rollback', got {}",
                    m.repr().map(|r| r.to_string()).unwrap_or_default()
                ))
            })?;
        }
    }
    Ok(())
}

/// How long a cancelled stream's run may take to wind down (see `start_stream`).
const WIND_DOWN: std::time::Duration = std::time::Duration::from_millis(100);

/// Who drives a streamed run.
pub(super) enum StreamDriver {
    /// The runtime: a sync stream started on a thread that drives a run already
    /// (inside a node).
    Runtime,
    /// The consumer's event loop, on its thread (an async stream: see `on_loop`).
    Loop(Py<PyAny>),
    /// The thread that pulls the items, as LangGraph's generator: the run takes its
    /// next step only once the caller has taken the last one's events, so a caller
    /// that stops (or raises) while reading a step's events stops the run before the
    /// next. `tasks_here`: a step's only task runs on that thread too, which is right
    /// only when no event comes from inside a running task (the `FROM_TASKS` modes and
    /// subgraphs' events, which such a task would hold back until it returns); else
    /// tasks run on the pool and their events reach the caller as they are sent.
    Caller { tasks_here: bool },
}
