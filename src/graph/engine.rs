//! The step loop: LangGraph's super-steps, in Rust.
//!
//! A step runs every task triggered by the previous one, concurrently. Their writes
//! are invisible to each other and applied through the channels' reducers when the
//! step ends; then edges, routers, `goto`s and `Send`s decide the next step's tasks,
//! and the step is checkpointed as a delta (its writes and its next tasks).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Value};

use super::channel::{Channel, ChannelKind, Reducer};
use super::error::GraphError;
use super::messages::MessageList;
use super::spec::{Goto, GraphSpec, NodeFailure, NodeOutput, TaskContext, END, START};
use super::state::StateView;
use super::stream::{modes, StreamEvent, StreamSink};
use super::value::Val;
use crate::checkpoint::{
    now_secs, CheckpointRecord, Checkpointer, PendingWrite, TaskRecord, Write,
};
use crate::message::Message;

/// Turns checkpointed JSON back into channel values (the host's objects, say).
pub trait ValueCodec: Send + Sync {
    fn decode(&self, channel: &str, value: Value) -> Result<Val, GraphError>;
}

/// Keeps JSON as JSON: for graphs whose state is JSON.
pub struct JsonCodec;

impl ValueCodec for JsonCodec {
    fn decode(&self, _channel: &str, value: Value) -> Result<Val, GraphError> {
        Ok(Val::Json(value))
    }
}

/// An interrupt surfaced to the caller.
#[derive(Debug, Clone)]
pub struct InterruptInfo {
    pub id: String,
    pub value: Val,
    pub node: String,
    pub task_id: String,
}

/// What a run starts from.
pub enum RunInput {
    /// New input, written to the state as if by `START`.
    Values(Vec<(String, Val)>),
    /// `Command(resume=...)`: one value for the single interrupted task, or values by
    /// interrupt id.
    Resume(Resume),
    /// `None`: continue from the checkpoint (after a crash or an `interrupt_before`).
    Continue,
}

pub enum Resume {
    One(Val),
    ById(Vec<(String, Val)>),
}

#[derive(Clone)]
pub struct RunOptions {
    pub thread_id: Option<String>,
    pub checkpoint_id: Option<String>,
    pub recursion_limit: usize,
    pub cancel: tokio_util::sync::CancellationToken,
    pub stream: Option<StreamSink>,
    pub host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The caller drives the run on its own thread and can run one task inline.
    pub inline: bool,
    pub metadata: Value,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            thread_id: None,
            checkpoint_id: None,
            recursion_limit: 100,
            cancel: Default::default(),
            stream: None,
            host: None,
            inline: false,
            metadata: Value::Null,
        }
    }
}

pub struct RunResult {
    pub state: StateView,
    pub interrupts: Vec<InterruptInfo>,
    pub checkpoint_id: Option<String>,
    pub next: Vec<String>,
}

/// A saved state, as `get_state` shows it.
pub struct Snapshot {
    pub state: StateView,
    pub record: CheckpointRecord,
    pub parent: Option<CheckpointRecord>,
    pub pending: Vec<PendingWrite>,
}

#[derive(Clone, Debug)]
struct Task {
    id: String,
    node: String,
    arg: Option<Val>,
}

/// Join barriers: a hidden channel holding the sources seen so far.
struct JoinReducer;

impl Reducer for JoinReducer {
    fn reduce(&self, _c: &str, current: Option<Val>, update: Val) -> Result<Val, GraphError> {
        let mut seen = match current {
            Some(Val::Json(Value::Array(a))) => a,
            _ => Vec::new(),
        };
        match update {
            Val::Json(Value::Null) => seen.clear(),
            Val::Json(v) if !seen.contains(&v) => seen.push(v),
            _ => {}
        }
        Ok(Val::Json(Value::Array(seen)))
    }
}

/// A compiled graph: the spec plus what the loop needs to find things fast.
pub struct Graph {
    spec: Arc<GraphSpec>,
    names: Arc<Vec<String>>,
    chan_index: Arc<HashMap<String, usize>>,
    kinds: Vec<ChannelKind>,
    node_index: HashMap<String, usize>,
    edges_from: HashMap<String, Vec<String>>,
    branches_from: HashMap<String, Vec<usize>>,
    joins_from: HashMap<String, Vec<usize>>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    codec: Arc<dyn ValueCodec>,
    interrupt_before: HashSet<String>,
    interrupt_after: HashSet<String>,
}

fn join_channel(i: usize) -> String {
    format!("__join__:{i}")
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Graph {
    /// Checks the wiring and prepares the graph.
    pub fn compile(
        spec: GraphSpec,
        checkpointer: Option<Arc<dyn Checkpointer>>,
        codec: Arc<dyn ValueCodec>,
        interrupt_before: Vec<String>,
        interrupt_after: Vec<String>,
    ) -> Result<Self, GraphError> {
        let all: Vec<String> = interrupt_before
            .iter()
            .chain(&interrupt_after)
            .cloned()
            .collect();
        spec.validate(&all)?;
        let mut names: Vec<String> = spec.channels.iter().map(|(n, _)| n.clone()).collect();
        let mut kinds: Vec<ChannelKind> = spec.channels.iter().map(|(_, k)| k.clone()).collect();
        let mut joins_from: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, (srcs, _)) in spec.joins.iter().enumerate() {
            names.push(join_channel(i));
            kinds.push(ChannelKind::Reducer(Arc::new(JoinReducer)));
            for s in srcs {
                joins_from.entry(s.clone()).or_default().push(i);
            }
        }
        let chan_index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let mut edges_from: HashMap<String, Vec<String>> = HashMap::new();
        for (a, b) in &spec.edges {
            edges_from.entry(a.clone()).or_default().push(b.clone());
        }
        let mut branches_from: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, b) in spec.branches.iter().enumerate() {
            branches_from.entry(b.source.clone()).or_default().push(i);
        }
        let expand = |v: Vec<String>| -> HashSet<String> {
            if v.iter().any(|n| n == "*") {
                spec.nodes.iter().map(|n| n.name.clone()).collect()
            } else {
                v.into_iter().collect()
            }
        };
        let interrupt_before = expand(interrupt_before);
        let interrupt_after = expand(interrupt_after);
        Ok(Graph {
            node_index: spec.node_index(),
            spec: Arc::new(spec),
            names: Arc::new(names),
            chan_index: Arc::new(chan_index),
            kinds,
            edges_from,
            branches_from,
            joins_from,
            checkpointer,
            codec,
            interrupt_before,
            interrupt_after,
        })
    }

    pub fn spec(&self) -> &GraphSpec {
        &self.spec
    }

    pub fn checkpointer(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.checkpointer.as_ref()
    }

    pub fn channel_kind(&self, name: &str) -> Option<&ChannelKind> {
        self.chan_index.get(name).map(|&i| &self.kinds[i])
    }

    fn fresh_channels(&self) -> Vec<Channel> {
        self.kinds.iter().cloned().map(Channel::new).collect()
    }

    fn view(&self, chans: &[Channel]) -> StateView {
        StateView {
            names: self.names.clone(),
            index: self.chan_index.clone(),
            values: Arc::new(chans.iter().map(|c| c.value.clone()).collect()),
            versions: Arc::new(chans.iter().map(|c| c.version).collect()),
        }
    }

    fn decode(&self, channel: &str, v: Value) -> Result<Val, GraphError> {
        match self.channel_kind(channel) {
            Some(ChannelKind::Messages) => {
                let ms: Vec<Message> = serde_json::from_value(v).map_err(|e| {
                    GraphError::Checkpoint(format!("bad messages in channel {channel:?}: {e}"))
                })?;
                Ok(Val::Messages(MessageList::from_messages(
                    ms.into_iter().map(Arc::new),
                )))
            }
            // The engine's own channels (join barriers) hold JSON, whatever the host.
            _ if channel.starts_with("__") => Ok(Val::Json(v)),
            _ => self.codec.decode(channel, v),
        }
    }

    fn encode(channel: &str, v: &Val) -> Result<Value, GraphError> {
        v.to_json().map_err(|reason| GraphError::Serialize {
            channel: channel.to_owned(),
            type_name: v.type_name(),
            reason,
        })
    }

    /// Applies writes (in order) to the channels; unknown channels are an error.
    fn apply(&self, chans: &mut [Channel], writes: Vec<(String, Val)>) -> Result<(), GraphError> {
        let mut grouped: Vec<Vec<Val>> = vec![Vec::new(); chans.len()];
        for (c, v) in writes {
            let i = *self.chan_index.get(&c).ok_or_else(|| {
                GraphError::InvalidUpdate(format!(
                    "write to unknown channel {c:?}; the state has: {}",
                    self.names
                        .iter()
                        .filter(|n| !n.starts_with("__"))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            grouped[i].push(v);
        }
        for (i, ws) in grouped.into_iter().enumerate() {
            if !ws.is_empty() {
                chans[i].apply(&self.names[i], ws)?;
            }
        }
        Ok(())
    }

    fn replay(&self, chain: &[CheckpointRecord]) -> Result<Vec<Channel>, GraphError> {
        let mut chans = self.fresh_channels();
        for r in chain {
            self.apply_record(&mut chans, r)?;
        }
        Ok(chans)
    }

    fn apply_record(&self, chans: &mut [Channel], r: &CheckpointRecord) -> Result<(), GraphError> {
        let writes = r
            .writes
            .iter()
            .map(|w| Ok((w.channel.clone(), self.decode(&w.channel, w.value.clone())?)))
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.apply(chans, writes)
    }

    fn decode_tasks(&self, next: &[TaskRecord]) -> Result<Vec<Task>, GraphError> {
        next.iter()
            .map(|t| {
                Ok(Task {
                    id: t.id.clone(),
                    node: t.node.clone(),
                    arg: match &t.arg {
                        Some(a) => Some(self.codec.decode("__send__", a.clone())?),
                        None => None,
                    },
                })
            })
            .collect()
    }

    /// The tasks that follow `node` (or `START`), given the state after its step.
    fn successors(
        &self,
        node: &str,
        goto: &[Goto],
        view: &StateView,
        ctx: &TaskContext,
        out: &mut Vec<(String, Option<Val>)>,
    ) -> Result<(), GraphError> {
        let mut push = |g: &Goto| match g {
            Goto::Node(n) if n == END => Ok(()),
            Goto::Node(n) => {
                if !self.node_index.contains_key(n) {
                    return Err(GraphError::InvalidUpdate(format!(
                        "node {node:?} routed to unknown node {n:?}"
                    )));
                }
                out.push((n.clone(), None));
                Ok(())
            }
            Goto::Send(n, arg) => {
                if !self.node_index.contains_key(n) {
                    return Err(GraphError::InvalidUpdate(format!(
                        "node {node:?} sent to unknown node {n:?}"
                    )));
                }
                out.push((n.clone(), Some(arg.clone())));
                Ok(())
            }
            Goto::End => Ok(()),
        };
        for g in goto {
            push(g)?;
        }
        for t in self.edges_from.get(node).into_iter().flatten() {
            push(&Goto::Node(t.clone()))?;
        }
        for &b in self.branches_from.get(node).into_iter().flatten() {
            let gotos = self.spec.branches[b].router.route(view, ctx)?;
            for g in &gotos {
                push(g)?;
            }
        }
        Ok(())
    }

    /// Builds the next step's tasks: plain triggers are de-duplicated (a node runs
    /// once per step however many edges lead to it); `Send`s each make a task.
    fn make_tasks(step_id: &str, triggers: Vec<(String, Option<Val>)>) -> Vec<Task> {
        let mut seen = HashSet::new();
        let mut tasks = Vec::new();
        for (node, arg) in triggers {
            if arg.is_none() && !seen.insert(node.clone()) {
                continue;
            }
            let i = tasks.len();
            tasks.push(Task {
                id: format!("{step_id}:{i}:{node}"),
                node,
                arg,
            });
        }
        tasks
    }

    fn records(tasks: &[Task]) -> Result<Vec<TaskRecord>, GraphError> {
        tasks
            .iter()
            .map(|t| {
                Ok(TaskRecord {
                    id: t.id.clone(),
                    node: t.node.clone(),
                    arg: match &t.arg {
                        Some(a) => Some(Self::encode("__send__", a)?),
                        None => None,
                    },
                })
            })
            .collect()
    }

    fn ctx_for(&self, task: &Task, step: i64, opts: &RunOptions, resume: Vec<Val>) -> TaskContext {
        TaskContext {
            task_id: task.id.clone(),
            node: task.node.clone(),
            step,
            resume,
            cancel: opts.cancel.child_token(),
            inline: false,
            stream: opts.stream.clone(),
            host: opts.host.clone(),
        }
    }

    fn cp_err(e: crate::checkpoint::CheckpointError) -> GraphError {
        GraphError::Checkpoint(e.0)
    }

    /// Loads a thread's state at `checkpoint_id` (or its latest).
    pub async fn load(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<Snapshot>, GraphError> {
        let Some(cp) = &self.checkpointer else {
            return Err(GraphError::Config(
                "this graph has no checkpointer: compile it with checkpointer=MemorySaver() \
                 (or SqliteSaver) to keep and read state"
                    .into(),
            ));
        };
        let Some(record) = cp
            .get(thread_id, checkpoint_id)
            .await
            .map_err(Self::cp_err)?
        else {
            return match checkpoint_id {
                Some(id) => Err(GraphError::Config(format!(
                    "thread {thread_id:?} has no checkpoint {id:?}"
                ))),
                None => Ok(None),
            };
        };
        let chain = cp
            .chain(thread_id, &record.id)
            .await
            .map_err(Self::cp_err)?;
        let chans = self.replay(&chain)?;
        let pending = cp
            .pending_writes(thread_id, &record.id)
            .await
            .map_err(Self::cp_err)?;
        let parent = chain.len().checked_sub(2).map(|i| chain[i].clone());
        Ok(Some(Snapshot {
            state: self.view(&chans),
            record,
            parent,
            pending,
        }))
    }

    /// Every checkpoint of a thread with its state, newest first.
    pub async fn history(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<Snapshot>, GraphError> {
        let Some(cp) = &self.checkpointer else {
            return Err(GraphError::Config("this graph has no checkpointer".into()));
        };
        let records = cp
            .list(thread_id, limit, before)
            .await
            .map_err(Self::cp_err)?;
        let mut memo: HashMap<String, (Vec<Channel>, CheckpointRecord)> = HashMap::new();
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            let chain = cp.chain(thread_id, &r.id).await.map_err(Self::cp_err)?;
            // Start from the newest ancestor already replayed.
            let start = chain.iter().rposition(|c| memo.contains_key(&c.id));
            let mut chans = match start {
                Some(i) => memo[&chain[i].id].0.clone(),
                None => self.fresh_channels(),
            };
            for c in &chain[start.map(|i| i + 1).unwrap_or(0)..] {
                self.apply_record(&mut chans, c)?;
                memo.insert(c.id.clone(), (chans.clone(), c.clone()));
            }
            let pending = cp
                .pending_writes(thread_id, &r.id)
                .await
                .map_err(Self::cp_err)?;
            let parent = r
                .parent_id
                .as_ref()
                .and_then(|p| memo.get(p).map(|m| m.1.clone()));
            out.push(Snapshot {
                state: self.view(&chans),
                record: r,
                parent,
                pending,
            });
        }
        Ok(out)
    }

    /// `update_state`: applies `writes` as if node `as_node` had made them, and saves a
    /// new checkpoint whose next tasks are what follows that node.
    pub async fn update_state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        writes: Vec<(String, Val)>,
        as_node: Option<String>,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<String, GraphError> {
        let cp = self
            .checkpointer
            .clone()
            .ok_or_else(|| GraphError::Config("update_state needs a checkpointer".into()))?;
        let snap = self.load(thread_id, checkpoint_id).await?;
        let (mut chans, parent) = match &snap {
            Some(s) => {
                let chain = cp
                    .chain(thread_id, &s.record.id)
                    .await
                    .map_err(Self::cp_err)?;
                (self.replay(&chain)?, Some(s.record.clone()))
            }
            None => (self.fresh_channels(), None),
        };
        let as_node = match as_node {
            Some(n) => n,
            None => parent
                .as_ref()
                .and_then(|p| p.writes.last().map(|w| w.node.clone()))
                .filter(|n| self.node_index.contains_key(n))
                .unwrap_or_else(|| START.to_owned()),
        };
        if as_node != START && as_node != END && !self.node_index.contains_key(&as_node) {
            return Err(GraphError::InvalidUpdate(format!(
                "update_state: as_node {as_node:?} is not a node of this graph"
            )));
        }
        let encoded = writes
            .iter()
            .map(|(c, v)| {
                Ok(Write {
                    node: as_node.clone(),
                    channel: c.clone(),
                    value: Self::encode(c, v)?,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.apply(&mut chans, writes)?;
        let view = self.view(&chans);
        let id = new_id();
        let mut triggers = Vec::new();
        if as_node != END {
            let opts = RunOptions {
                host,
                ..Default::default()
            };
            let t = Task {
                id: id.clone(),
                node: as_node.clone(),
                arg: None,
            };
            let ctx = self.ctx_for(&t, 0, &opts, Vec::new());
            self.successors(&as_node, &[], &view, &ctx, &mut triggers)?;
        }
        let next = Self::make_tasks(&id, triggers);
        let record = CheckpointRecord {
            id: id.clone(),
            parent_id: parent.as_ref().map(|p| p.id.clone()),
            step: parent.as_ref().map(|p| p.step + 1).unwrap_or(-1),
            source: "update".into(),
            writes: encoded,
            next: Self::records(&next)?,
            created_at: now_secs(),
            metadata: json!({"source": "update"}),
        };
        cp.put(thread_id, record).await.map_err(Self::cp_err)?;
        Ok(id)
    }

    /// Runs the graph until no task is left, an interrupt, or an error.
    pub async fn run(&self, input: RunInput, opts: RunOptions) -> Result<RunResult, GraphError> {
        let cp = match (&self.checkpointer, &opts.thread_id) {
            (Some(cp), Some(_)) => Some(cp.clone()),
            (Some(_), None) => {
                return Err(GraphError::Config(
                    "this graph has a checkpointer: pass a thread id, e.g. \
                     config={\"configurable\": {\"thread_id\": \"1\"}}"
                        .into(),
                ))
            }
            _ => None,
        };
        let thread = opts.thread_id.clone().unwrap_or_default();
        let encode_writes = cp.is_some();

        // Where the run starts.
        let (mut chans, mut parent): (Vec<Channel>, Option<CheckpointRecord>) = match &cp {
            Some(cp) => match cp
                .get(&thread, opts.checkpoint_id.as_deref())
                .await
                .map_err(Self::cp_err)?
            {
                Some(r) => {
                    let chain = cp.chain(&thread, &r.id).await.map_err(Self::cp_err)?;
                    (self.replay(&chain)?, Some(r))
                }
                None if opts.checkpoint_id.is_some() => {
                    return Err(GraphError::Config(format!(
                        "thread {thread:?} has no checkpoint {:?}",
                        opts.checkpoint_id
                    )))
                }
                None => (self.fresh_channels(), None),
            },
            None => (self.fresh_channels(), None),
        };
        let mut step = parent.as_ref().map(|p| p.step).unwrap_or(-2);
        let mut pending: HashMap<String, Vec<PendingWrite>> = HashMap::new();
        let mut resume: HashMap<String, Vec<Val>> = HashMap::new();
        let mut skip_before = false;
        // A run from an older checkpoint forks: its checkpoints branch off there.
        let forked = opts.checkpoint_id.is_some();

        let mut next: Vec<Task> = match input {
            RunInput::Values(writes) => {
                let encoded = if encode_writes {
                    writes
                        .iter()
                        .map(|(c, v)| {
                            Ok(Write {
                                node: START.into(),
                                channel: c.clone(),
                                value: Self::encode(c, v)?,
                            })
                        })
                        .collect::<Result<Vec<_>, GraphError>>()?
                } else {
                    Vec::new()
                };
                self.apply(&mut chans, writes)?;
                step += 1;
                let view = self.view(&chans);
                let id = new_id();
                let mut triggers = Vec::new();
                let start = Task {
                    id: id.clone(),
                    node: START.into(),
                    arg: None,
                };
                let ctx = self.ctx_for(&start, step, &opts, Vec::new());
                self.successors(START, &[], &view, &ctx, &mut triggers)?;
                let tasks = Self::make_tasks(&id, triggers);
                if let Some(cp) = &cp {
                    let record = CheckpointRecord {
                        id: id.clone(),
                        parent_id: parent.as_ref().map(|p| p.id.clone()),
                        step,
                        source: "input".into(),
                        writes: encoded,
                        next: Self::records(&tasks)?,
                        created_at: now_secs(),
                        metadata: meta(&opts.metadata, "input", step),
                    };
                    cp.put(&thread, record.clone())
                        .await
                        .map_err(Self::cp_err)?;
                    parent = Some(record);
                }
                if let Some(s) = &opts.stream {
                    s.emit(modes::VALUES, || StreamEvent::Values(view.clone()));
                }
                tasks
            }
            RunInput::Continue | RunInput::Resume(_) => {
                let (Some(cp), Some(p)) = (&cp, &parent) else {
                    return Err(GraphError::Config(
                        "nothing to resume: resuming (invoke(None) or Command(resume=...)) \
                         needs a checkpointer and a thread with a checkpoint"
                            .into(),
                    ));
                };
                for w in cp
                    .pending_writes(&thread, &p.id)
                    .await
                    .map_err(Self::cp_err)?
                {
                    pending.entry(w.task_id.clone()).or_default().push(w);
                }
                for (task, ws) in &pending {
                    for w in ws.iter().filter(|w| w.channel == "__resume__") {
                        resume
                            .entry(task.clone())
                            .or_default()
                            .push(self.codec.decode("__resume__", w.value.clone())?);
                    }
                }
                if let RunInput::Resume(r) = input {
                    self.resume_into(cp.as_ref(), &thread, p, r, &mut pending, &mut resume)
                        .await?;
                }
                skip_before = true;
                self.decode_tasks(&p.next)?
            }
        };

        let start_step = step;
        let mut interrupts: Vec<InterruptInfo> = Vec::new();
        while !next.is_empty() {
            if opts.cancel.is_cancelled() {
                return Err(GraphError::Cancelled);
            }
            if !skip_before {
                if let Some(t) = next
                    .iter()
                    .find(|t| self.interrupt_before.contains(&t.node))
                {
                    interrupts.push(InterruptInfo {
                        id: format!("before:{}", t.id),
                        value: Val::Json(Value::Null),
                        node: t.node.clone(),
                        task_id: t.id.clone(),
                    });
                    break;
                }
            }
            skip_before = false;
            if (step - start_step) as usize >= opts.recursion_limit {
                return Err(GraphError::Recursion(opts.recursion_limit));
            }
            step += 1;
            let view = self.view(&chans);
            let step_id = parent.as_ref().map(|p| p.id.clone()).unwrap_or_else(new_id);

            // Run the tasks (reusing the writes of tasks that finished before a crash).
            let mut outputs: Vec<Option<NodeOutput>> = vec![None; next.len()];
            let mut failures: Vec<(usize, GraphError)> = Vec::new();
            let mut to_run = Vec::new();
            for (i, t) in next.iter().enumerate() {
                match pending.get(&t.id) {
                    Some(ws) if ws.iter().any(|w| w.channel == "__interrupt__") => {
                        let w = ws.iter().find(|w| w.channel == "__interrupt__").unwrap();
                        interrupts.push(InterruptInfo {
                            id: t.id.clone(),
                            value: self.codec.decode("__interrupt__", w.value.clone())?,
                            node: t.node.clone(),
                            task_id: t.id.clone(),
                        });
                    }
                    Some(ws) if ws.iter().any(|w| w.channel == "__done__") => {
                        outputs[i] = Some(self.output_from_pending(ws)?);
                    }
                    _ => to_run.push(i),
                }
            }
            if let Some(s) = &opts.stream {
                for &i in &to_run {
                    let t = &next[i];
                    s.emit(modes::DEBUG, || StreamEvent::DebugTask {
                        step,
                        id: t.id.clone(),
                        node: t.node.clone(),
                        input: t.arg.clone(),
                    });
                }
            }
            let multi = next.len() > 1;
            let inline = opts.inline && to_run.len() == 1;
            let mut running: FuturesUnordered<_> = to_run
                .iter()
                .map(|&i| {
                    let t = &next[i];
                    let node = &self.spec.nodes[self.node_index[&t.node]];
                    let mut ctx = self.ctx_for(
                        t,
                        step,
                        &opts,
                        resume.get(&t.id).cloned().unwrap_or_default(),
                    );
                    ctx.inline = inline;
                    let fut = node.runner.run(view.clone(), t.arg.clone(), ctx);
                    async move { (i, fut.await) }
                })
                .collect();
            while let Some((i, r)) = running.next().await {
                let t = &next[i];
                match r {
                    Ok(mut out) => {
                        for &j in self.joins_from.get(&t.node).into_iter().flatten() {
                            out.writes
                                .push((join_channel(j), Val::Json(Value::String(t.node.clone()))));
                        }
                        if let (Some(cp), true, Some(p)) = (&cp, multi, &parent) {
                            let ws = Self::pending_of(t, &out)?;
                            cp.put_writes(&thread, &p.id, ws)
                                .await
                                .map_err(Self::cp_err)?;
                        }
                        if let Some(s) = &opts.stream {
                            s.emit(modes::DEBUG, || StreamEvent::DebugTaskResult {
                                step,
                                id: t.id.clone(),
                                node: t.node.clone(),
                                writes: out
                                    .writes
                                    .iter()
                                    .filter(|(c, _)| !c.starts_with("__"))
                                    .cloned()
                                    .collect(),
                                error: None,
                                interrupts: vec![],
                            });
                        }
                        outputs[i] = Some(out);
                    }
                    Err(NodeFailure::Interrupt(value)) => {
                        if let Some(s) = &opts.stream {
                            s.emit(modes::DEBUG, || StreamEvent::DebugTaskResult {
                                step,
                                id: t.id.clone(),
                                node: t.node.clone(),
                                writes: vec![],
                                error: None,
                                interrupts: vec![value.clone()],
                            });
                        }
                        if let (Some(cp), Some(p)) = (&cp, &parent) {
                            let w = PendingWrite {
                                task_id: t.id.clone(),
                                node: t.node.clone(),
                                channel: "__interrupt__".into(),
                                value: Self::encode("__interrupt__", &value)?,
                            };
                            cp.put_writes(&thread, &p.id, vec![w])
                                .await
                                .map_err(Self::cp_err)?;
                        }
                        interrupts.push(InterruptInfo {
                            id: t.id.clone(),
                            value,
                            node: t.node.clone(),
                            task_id: t.id.clone(),
                        });
                    }
                    Err(NodeFailure::Error(e)) => {
                        if let Some(s) = &opts.stream {
                            s.emit(modes::DEBUG, || StreamEvent::DebugTaskResult {
                                step,
                                id: t.id.clone(),
                                node: t.node.clone(),
                                writes: vec![],
                                error: Some(e.to_string()),
                                interrupts: vec![],
                            });
                        }
                        failures.push((i, e))
                    }
                }
            }
            drop(running);
            // The first task to fail is the run's failure, as in LangGraph.
            if let Some((_, e)) = failures.into_iter().next() {
                return Err(e);
            }
            if !interrupts.is_empty() {
                // Sort by task order for a stable result.
                let order: HashMap<&str, usize> = next
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (t.id.as_str(), i))
                    .collect();
                interrupts.sort_by_key(|x| order.get(x.task_id.as_str()).copied().unwrap_or(0));
                if let Some(s) = &opts.stream {
                    let i = interrupts.clone();
                    s.emit(modes::UPDATES, || StreamEvent::Interrupt(i));
                }
                break;
            }

            // Apply the step's writes, in task order.
            let mut writes = Vec::new();
            let mut encoded = Vec::new();
            for (t, out) in next.iter().zip(&outputs) {
                let out = out.as_ref().expect("every task has output here");
                for (c, v) in &out.writes {
                    if encode_writes {
                        encoded.push(Write {
                            node: t.node.clone(),
                            channel: c.clone(),
                            value: Self::encode(c, v)?,
                        });
                    }
                    writes.push((c.clone(), v.clone()));
                }
            }
            self.apply(&mut chans, writes)?;
            let view = self.view(&chans);
            if let Some(s) = &opts.stream {
                for (t, out) in next.iter().zip(&outputs) {
                    let out = out.as_ref().unwrap();
                    s.emit(modes::UPDATES, || StreamEvent::Updates {
                        node: t.node.clone(),
                        update: out.update.clone(),
                    });
                }
                s.emit(modes::VALUES, || StreamEvent::Values(view.clone()));
            }

            // What runs next.
            let new_id = new_id();
            let mut triggers = Vec::new();
            let mut engine_writes = Vec::new();
            for (t, out) in next.iter().zip(&outputs) {
                let out = out.as_ref().unwrap();
                let ctx = self.ctx_for(t, step, &opts, Vec::new());
                self.successors(&t.node, &out.goto, &view, &ctx, &mut triggers)?;
            }
            for (j, (srcs, target)) in self.spec.joins.iter().enumerate() {
                let ch = join_channel(j);
                if let Some(Val::Json(Value::Array(seen))) = view.get(&ch) {
                    let all = srcs
                        .iter()
                        .all(|s| seen.contains(&Value::String(s.clone())));
                    if all && next.iter().any(|t| srcs.contains(&t.node)) {
                        if target != END {
                            triggers.push((target.clone(), None));
                        }
                        engine_writes.push((ch, Val::Json(Value::Null)));
                    }
                }
            }
            for (c, v) in &engine_writes {
                if encode_writes {
                    encoded.push(Write {
                        node: "__engine__".into(),
                        channel: c.clone(),
                        value: Self::encode(c, v)?,
                    });
                }
            }
            self.apply(&mut chans, engine_writes)?;
            let ran: Vec<String> = next.iter().map(|t| t.node.clone()).collect();
            next = Self::make_tasks(&new_id, triggers);
            if let Some(cp) = &cp {
                let record = CheckpointRecord {
                    id: new_id.clone(),
                    parent_id: parent.as_ref().map(|p| p.id.clone()),
                    step,
                    source: if forked && parent.is_none() {
                        "fork"
                    } else {
                        "loop"
                    }
                    .into(),
                    writes: encoded,
                    next: Self::records(&next)?,
                    created_at: now_secs(),
                    metadata: meta(&opts.metadata, "loop", step),
                };
                cp.put(&thread, record.clone())
                    .await
                    .map_err(Self::cp_err)?;
                parent = Some(record);
            } else {
                parent = None;
                let _ = step_id;
            }
            if let Some(s) = &opts.stream {
                let parent_id = parent.as_ref().and_then(|p| p.parent_id.clone());
                s.emit(modes::DEBUG, || StreamEvent::DebugCheckpoint {
                    step,
                    checkpoint_id: parent.as_ref().map(|p| p.id.clone()),
                    parent_id,
                    state: self.view(&chans),
                    next: next.iter().map(|t| t.node.clone()).collect(),
                    metadata: meta(&opts.metadata, "loop", step),
                });
            }
            pending.clear();
            resume.clear();
            if let Some(n) = ran.iter().find(|n| self.interrupt_after.contains(*n)) {
                if !next.is_empty() {
                    interrupts.push(InterruptInfo {
                        id: format!("after:{new_id}"),
                        value: Val::Json(Value::Null),
                        node: n.clone(),
                        task_id: new_id.clone(),
                    });
                    break;
                }
            }
        }
        Ok(RunResult {
            state: self.view(&chans),
            interrupts,
            checkpoint_id: parent.map(|p| p.id),
            next: next.into_iter().map(|t| t.node).collect(),
        })
    }

    async fn resume_into(
        &self,
        cp: &dyn Checkpointer,
        thread: &str,
        parent: &CheckpointRecord,
        r: Resume,
        pending: &mut HashMap<String, Vec<PendingWrite>>,
        resume: &mut HashMap<String, Vec<Val>>,
    ) -> Result<(), GraphError> {
        let interrupted: Vec<String> = pending
            .iter()
            .filter(|(_, ws)| ws.iter().any(|w| w.channel == "__interrupt__"))
            .map(|(t, _)| t.clone())
            .collect();
        let assigned: Vec<(String, Val)> = match r {
            Resume::One(v) => match interrupted.len() {
                0 => {
                    return Err(GraphError::Config(
                        "Command(resume=...) but the thread is not paused on an interrupt()".into(),
                    ))
                }
                1 => vec![(interrupted[0].clone(), v)],
                n => {
                    return Err(GraphError::Config(format!(
                        "{n} interrupts are pending: resume them by id with \
                         Command(resume={{interrupt.id: value, ...}})"
                    )))
                }
            },
            Resume::ById(m) => {
                for (id, _) in &m {
                    if !interrupted.contains(id) {
                        return Err(GraphError::Config(format!(
                            "no pending interrupt has id {id:?}; pending: {interrupted:?}"
                        )));
                    }
                }
                m
            }
        };
        for (task, v) in assigned {
            let node = parent
                .next
                .iter()
                .find(|t| t.id == task)
                .map(|t| t.node.clone())
                .unwrap_or_default();
            let w = PendingWrite {
                task_id: task.clone(),
                node,
                channel: "__resume__".into(),
                value: Self::encode("__resume__", &v)?,
            };
            cp.put_writes(thread, &parent.id, vec![w])
                .await
                .map_err(Self::cp_err)?;
            resume.entry(task.clone()).or_default().push(v);
            if let Some(ws) = pending.get_mut(&task) {
                ws.retain(|w| w.channel != "__interrupt__");
            }
        }
        Ok(())
    }

    fn pending_of(t: &Task, out: &NodeOutput) -> Result<Vec<PendingWrite>, GraphError> {
        let mut ws = Vec::with_capacity(out.writes.len() + 2);
        for (c, v) in &out.writes {
            ws.push(PendingWrite {
                task_id: t.id.clone(),
                node: t.node.clone(),
                channel: c.clone(),
                value: Self::encode(c, v)?,
            });
        }
        for g in &out.goto {
            let value = match g {
                Goto::Node(n) => json!({"node": n}),
                Goto::Send(n, a) => json!({"node": n, "arg": Self::encode("__send__", a)?}),
                Goto::End => json!({"node": END}),
            };
            ws.push(PendingWrite {
                task_id: t.id.clone(),
                node: t.node.clone(),
                channel: "__goto__".into(),
                value,
            });
        }
        ws.push(PendingWrite {
            task_id: t.id.clone(),
            node: t.node.clone(),
            channel: "__done__".into(),
            value: Value::Null,
        });
        Ok(ws)
    }

    fn output_from_pending(&self, ws: &[PendingWrite]) -> Result<NodeOutput, GraphError> {
        let mut out = NodeOutput::default();
        for w in ws {
            match w.channel.as_str() {
                "__done__" | "__resume__" | "__interrupt__" => {}
                "__goto__" => {
                    let node = w.value["node"].as_str().unwrap_or(END).to_owned();
                    out.goto.push(match w.value.get("arg") {
                        Some(a) => Goto::Send(node, self.codec.decode("__send__", a.clone())?),
                        None => Goto::Node(node),
                    });
                }
                c => out
                    .writes
                    .push((c.to_owned(), self.decode(c, w.value.clone())?)),
            }
        }
        // Join markers were saved with the task's writes: a restored task counts for
        // its joins like one that ran.
        Ok(out)
    }
}

fn meta(user: &Value, source: &str, step: i64) -> Value {
    let mut m = match user {
        Value::Object(o) => o.clone(),
        _ => Default::default(),
    };
    m.insert("source".into(), json!(source));
    m.insert("step".into(), json!(step));
    Value::Object(m)
}
