//! The graph as `StateGraph.compile` describes it, in typed pieces: what each channel,
//! node and conditional edge is follows from the Python objects themselves (the
//! reducer, the node object, the routing function), not from tags.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::super::exiting::attach;
use super::super::prebuilt::{after_model_router, is_add_messages, is_tools_condition};
use super::super::toolnode::ToolNodeCore;
use super::nodes::{AgentModelNode, PyNode, ShowsMessages, ToolsNode};
use super::routers::{PyReducer, PyRouter};
use super::values::Shared;
use crate::graph::{
    BranchSpec, ChannelKind, GraphSpec, NodeGuard, NodeRunner, NodeSpec, Router, TimeoutPolicy,
    ROOT,
};
use crate::prebuilt::{messages_channel, ToolsCondition};

/// One state key: `reducer` is `None` (last value wins), `add_messages` (a messages
/// channel, merged in Rust) or any function of two values; `initial` makes the value
/// a reducer starts from.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(super) struct ChannelDesc {
    name: String,
    reducer: Option<Py<PyAny>>,
    initial: Option<Py<PyAny>>,
}

/// Which optional parameters a node function takes.
#[derive(Clone, Copy, Default, FromPyObject)]
#[pyo3(from_item_all)]
pub(super) struct Wants {
    pub(super) config: bool,
    pub(super) store: bool,
    pub(super) writer: bool,
    /// Run by a `Send`, the function is also given the state, as `send_state=` (see
    /// `send_state()`); never set from the description.
    #[pyo3(default)]
    pub(super) send_state: bool,
}

/// One node: `func` is a `ToolNode` (run by the core tool node) or any callable.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(super) struct NodeDesc {
    name: String,
    func: Py<PyAny>,
    is_async: bool,
    wants: Wants,
    /// The async variant of a node that has both (a compiled subgraph).
    afunc: Option<Py<PyAny>>,
    /// The keys of the node's input schema, when they are not all the channels.
    reads: Option<Vec<String>>,
    /// Makes the node's input from the state dict (a dataclass or pydantic schema).
    factory: Option<Py<PyAny>>,
    /// The node that runs in its place when it fails (`add_node(error_handler=)`).
    error_handler: Option<String>,
    /// `(run_timeout, idle_timeout, heartbeat_only)` in seconds (`add_node(timeout=)`).
    timeout: Option<(Option<f64>, Option<f64>, bool)>,
    /// `add_node(defer=True)`.
    defer: bool,
}

/// One conditional edge.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(super) struct BranchDesc {
    source: String,
    /// The branch's name: its function's, or `"condition"` (LangGraph's default).
    name: String,
    path: Py<PyAny>,
    path_map: Option<Py<PyDict>>,
    /// The nodes it may go to, when known (for validation and drawing).
    ends: Option<Vec<String>>,
    /// What the routing function sees and receives, as a node's `reads` / `factory`.
    reads: Option<Vec<String>>,
    factory: Option<Py<PyAny>>,
    /// Whether the routing function is an `async def`.
    is_async: bool,
}

/// The spec's channels and the Python-side state they share.
pub(super) fn channels(
    channels: Vec<ChannelDesc>,
    store: Option<Py<PyAny>>,
) -> (GraphSpec, Arc<Shared>) {
    let mut spec = GraphSpec::default();
    let mut messages_channels = HashSet::new();
    let mut all = HashSet::new();
    attach(|py| {
        for c in channels {
            let kind = match c.reducer {
                None => ChannelKind::LastValue,
                Some(f) if is_add_messages(f.bind(py)) => {
                    messages_channels.insert(c.name.clone());
                    ChannelKind::Messages
                }
                Some(func) => ChannelKind::Reducer(Arc::new(PyReducer {
                    func,
                    initial: c.initial,
                })),
            };
            all.insert(c.name.clone());
            spec.channels.push((c.name, kind));
        }
    });
    // LangGraph's rule: a graph whose only channel is the root one takes and returns
    // bare values.
    let root = matches!(spec.channels.as_slice(), [(name, _)] if name == ROOT);
    let shared = Arc::new(Shared {
        root,
        messages_channels,
        channels: all,
        caches: Mutex::new(HashMap::new()),
        store,
    });
    (spec, shared)
}

impl NodeDesc {
    pub(super) fn into_spec(
        self,
        py: Python<'_>,
        channels: &[(String, ChannelKind)],
        shared: &Arc<Shared>,
    ) -> PyResult<NodeSpec> {
        let tool_node = self
            .func
            .bind(py)
            .getattr(pyo3::intern!(py, "_core"))
            .ok()
            .and_then(|c| c.cast_into::<ToolNodeCore>().ok());
        let wrapped = self
            .func
            .bind(py)
            .getattr(pyo3::intern!(py, "__ironloop_wrapped_tools__"))
            .ok();
        let runner: Arc<dyn NodeRunner> = match (tool_node, wrapped) {
            (None, Some(w)) => self.wrapped_tools(py, &w, channels, shared)?,
            (Some(core), _) => match tool_node_channel(&core.get().messages_key, channels) {
                Some(channel) => Arc::new(ShowsMessages(ToolsNode::new(
                    self.name.clone(),
                    core.unbind(),
                    channel,
                    shared.clone(),
                    self.factory,
                ))),
                // No messages channel (e.g. `messages: list`, last value wins): the
                // ToolNode runs as LangGraph's does, a Python node reading the key
                // from the state and returning its update (`CallRunner`), each call's
                // tool still run by the core.
                None => {
                    let node = self.func.bind(py).call_method1("_runner", (true,))?;
                    let func = node.call_method0("graph_node")?;
                    let afunc = func.getattr("__ironloop_async__")?;
                    Arc::new(ShowsMessages(PyNode {
                        name: self.name.clone(),
                        func: func.unbind(),
                        is_async: false,
                        afunc: Some(afunc.unbind()),
                        wants: self.wants,
                        factory: self.factory,
                        shared: shared.clone(),
                    }))
                }
            },
            (None, None) => {
                let model_node = model_node_channel(self.func.bind(py), channels)?;
                let wants = Wants {
                    send_state: send_state(self.func.bind(py))?,
                    ..self.wants
                };
                let node = ShowsMessages(PyNode {
                    name: self.name.clone(),
                    func: self.func,
                    is_async: self.is_async,
                    afunc: self.afunc,
                    wants,
                    factory: self.factory,
                    shared: shared.clone(),
                });
                match model_node {
                    Some(channel) => Arc::new(AgentModelNode {
                        channel,
                        function: node,
                    }),
                    None => Arc::new(node),
                }
            }
        };
        let timeout = self
            .timeout
            .map(|(run, idle, heartbeat_only)| TimeoutPolicy::from_secs(run, idle, heartbeat_only));
        Ok(NodeSpec {
            name: self.name,
            runner,
            reads: self.reads,
            guard: NodeGuard {
                timeout,
                error_handler: self.error_handler,
            },
            defer: self.defer,
        })
    }
}

impl NodeDesc {
    /// `create_agent`'s tools node with `wrap_tool_call` middleware: a function node
    /// whose `__ironloop_wrapped_tools__` is `(the ToolNode's core, its CallRunner)`.
    /// With a messages channel the engine's tool node runs the chain around each sent
    /// call (`wrapped_tools`), the function kept for what that path does not take;
    /// without one, the function is the node. Chosen here, once.
    fn wrapped_tools(
        &self,
        py: Python<'_>,
        wrapped: &Bound<'_, PyAny>,
        channels: &[(String, ChannelKind)],
        shared: &Arc<Shared>,
    ) -> PyResult<Arc<dyn NodeRunner>> {
        let (core, runner): (Bound<'_, ToolNodeCore>, Bound<'_, PyAny>) = wrapped.extract()?;
        let func = self.func.bind(py);
        let node = PyNode {
            name: self.name.clone(),
            func: self.func.clone_ref(py),
            is_async: self.is_async,
            afunc: self.afunc.as_ref().map(|f| f.clone_ref(py)),
            wants: Wants {
                send_state: send_state(func)?,
                ..self.wants
            },
            factory: self.factory.as_ref().map(|f| f.clone_ref(py)),
            shared: shared.clone(),
        };
        let Some(channel) = tool_node_channel(&core.get().messages_key, channels) else {
            return Ok(Arc::new(ShowsMessages(node)));
        };
        let tools = ToolsNode::new(
            self.name.clone(),
            core.unbind(),
            channel,
            shared.clone(),
            self.factory.as_ref().map(|f| f.clone_ref(py)),
        );
        Ok(Arc::new(ShowsMessages(tools.wrapping(py, &runner, node)?)))
    }
}

/// The messages channel a `ToolNode` with `messages_key` reads and writes: that channel
/// when it is a messages channel (`add_messages`); by default (`"messages"`), the
/// state's messages channel ([`messages_channel`]). `None` when the state has none.
fn tool_node_channel<'a>(key: &str, channels: &'a [(String, ChannelKind)]) -> Option<&'a str> {
    let named = channels
        .iter()
        .find(|(n, k)| n == key && matches!(k, ChannelKind::Messages))
        .map(|(n, _)| n.as_str());
    match key {
        "messages" => named.or_else(|| messages_channel(channels)),
        _ => named,
    }
}

/// The messages channel of an agent's model step: `create_react_agent` marks its
/// model node function with `__ironloop_model_node__`; the engine runs the step
/// itself when the run brings the agent's model (see `AgentModelNode`), over the
/// graph's messages channel ([`messages_channel`], the one the tool node and the
/// routers read too). `None` when the node is not marked or the state has no
/// messages channel: then the function runs.
fn model_node_channel(
    func: &Bound<'_, PyAny>,
    channels: &[(String, ChannelKind)],
) -> PyResult<Option<String>> {
    if func
        .getattr_opt(pyo3::intern!(func.py(), "__ironloop_model_node__"))?
        .is_none()
    {
        return Ok(None);
    }
    Ok(messages_channel(channels).map(str::to_owned))
}

/// Whether the function is marked `__ironloop_send_state__`: a task a `Send` starts
/// gives it the state beside the `Send`'s argument (keyword `send_state`), read from
/// the channels when the task runs. How `create_agent`'s tools node, with
/// `wrap_tool_call` middleware, runs one call per task as LangChain's does (a call's
/// result then survives a sibling's interrupt) without a copy of the state in each
/// `Send`, and so in each checkpoint's pending sends (LangChain's `ToolCallWithContext`).
fn send_state(func: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(func
        .getattr_opt(pyo3::intern!(func.py(), "__ironloop_send_state__"))?
        .is_some_and(|v| v.is_truthy().unwrap_or(false)))
}

impl BranchDesc {
    pub(super) fn into_spec(
        self,
        py: Python<'_>,
        channels: &[(String, ChannelKind)],
        shared: &Arc<Shared>,
    ) -> PyResult<BranchSpec> {
        let router: Arc<dyn Router> = if is_tools_condition(self.path.bind(py)) {
            let path_map = match &self.path_map {
                Some(m) => Some(m.bind(py).extract::<HashMap<String, String>>()?),
                None => None,
            };
            Arc::new(ToolsCondition {
                // No messages channel: the router finds no messages and says so.
                channel: messages_channel(channels).unwrap_or_default().to_owned(),
                path_map,
            })
        } else if let Some(route) = messages_channel(channels)
            .map(|channel| after_model_router(self.path.bind(py), channel))
            .transpose()?
            .flatten()
        {
            Arc::new(route)
        } else {
            Arc::new(PyRouter {
                name: self.name,
                path: self.path,
                path_map: self.path_map,
                factory: self.factory,
                shared: shared.clone(),
                is_async: self.is_async,
            })
        };
        Ok(BranchSpec {
            source: self.source,
            router,
            ends: self.ends,
            reads: self.reads,
        })
    }
}
