//! A compiled graph: the spec plus the indexes the step loop needs, and the
//! operations on channels and tasks the loop (`run.rs`) and the state tools
//! (`history.rs`) share.

use super::{NameMap, NameSet};
use std::sync::Arc;

use serde_json::{json, Value};

use super::channel::{Channel, ChannelKind, Reducer};
use super::codec::{encode, ValueCodec};
use super::error::GraphError;
use super::guard::TimeoutPolicy;
use super::messages::MessageList;
use super::reserved::{is_hidden, join_channel, Reserved, Source, DEFER_CHANNEL, ENGINE_NODE};
use super::run::RunOptions;
use super::spec::{Goto, GraphSpec, TaskContext, END};
use super::state::{Projection, StateView};
use super::state_cache::StateCache;
use super::value::Val;
use crate::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, TaskRecord, Write};
use crate::message::Message;

/// A node to run in a step, with its `Send` argument if it has one.
#[derive(Clone, Debug)]
pub(super) struct Task {
    /// `<checkpoint id>:<index>:<node>`: unique, and stable across a resume.
    pub id: String,
    pub node: String,
    pub arg: Option<Val>,
    /// A `Send`'s own timeout, which times the task instead of its node's.
    pub timeout: Option<TimeoutPolicy>,
}

/// What makes a task of the next step: its node, and a `Send`'s argument and timeout.
pub(super) type Trigger = (String, Option<Val>, Option<TimeoutPolicy>);

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
    pub(super) spec: Arc<GraphSpec>,
    /// Channel names: the spec's, then one hidden channel per join barrier.
    names: Arc<Vec<String>>,
    chan_index: Arc<NameMap<usize>>,
    kinds: Vec<ChannelKind>,
    pub(super) node_index: NameMap<usize>,
    edges_from: NameMap<Vec<String>>,
    branches_from: NameMap<Vec<usize>>,
    /// The joins each node is a source of.
    pub(super) joins_from: NameMap<Vec<usize>>,
    /// The deferred nodes (`add_node(defer=True)`), held in [`DEFER_CHANNEL`].
    deferred: NameSet,
    /// What each node (by index) and each router sees of the state, when not all of it.
    node_reads: Vec<Option<Projection>>,
    branch_reads: Vec<Option<Projection>>,
    /// The channels the input may write, when not all of them.
    input: Option<NameSet>,
    /// The channels a run returns, when not all of them.
    output: Option<Projection>,
    pub(super) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(super) codec: Arc<dyn ValueCodec>,
    pub(super) interrupt_before: NameSet,
    pub(super) interrupt_after: NameSet,
    /// The latest channels of the threads run lately (see `state_cache`).
    pub(super) state_cache: StateCache,
}

/// Breakpoint names as a set: `"*"` stands for every node of `spec`.
fn expand_breakpoints(spec: &GraphSpec, names: Vec<String>) -> NameSet {
    if names.iter().any(|n| n == "*") {
        spec.nodes.iter().map(|n| n.name.clone()).collect()
    } else {
        names.into_iter().collect()
    }
}

/// A new checkpoint id: a UUID of version 7, which orders by the time it was made
/// (those made by one process in the order made), as LangGraph's are. A SQLite file
/// finds such ids without an index of its own (see `checkpoint::sqlite`).
pub(super) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A task's id, `<checkpoint id>:<index>:<node>` (LangGraph's task path), written
/// without `format!`'s machinery: every task of every step has one.
fn task_id(step_id: &str, i: usize, node: &str) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let index = std::str::from_utf8(&digits[at..]).unwrap_or("0");
    let mut id = String::with_capacity(step_id.len() + index.len() + node.len() + 2);
    id.push_str(step_id);
    id.push(':');
    id.push_str(index);
    id.push(':');
    id.push_str(node);
    id
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
        let mut joins_from: NameMap<Vec<usize>> = NameMap::default();
        for (i, (srcs, _)) in spec.joins.iter().enumerate() {
            names.push(join_channel(i));
            kinds.push(ChannelKind::Reducer(Arc::new(JoinReducer)));
            for s in srcs {
                joins_from.entry(s.clone()).or_default().push(i);
            }
        }
        let deferred: NameSet = spec
            .nodes
            .iter()
            .filter(|n| n.defer)
            .map(|n| n.name.clone())
            .collect();
        if !deferred.is_empty() {
            names.push(DEFER_CHANNEL.to_owned());
            kinds.push(ChannelKind::LastValue);
        }
        let chan_index: NameMap<usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let project = |l: &Option<Vec<String>>| l.as_ref().map(|l| Projection::new(&chan_index, l));
        let node_reads: Vec<_> = spec.nodes.iter().map(|n| project(&n.reads)).collect();
        let node_index = spec.node_index();
        // A router sees what its own schema names, else what its source node sees.
        let branch_reads = spec
            .branches
            .iter()
            .map(|b| match &b.reads {
                Some(_) => project(&b.reads),
                None => node_index
                    .get(&b.source)
                    .and_then(|&i| node_reads[i].clone()),
            })
            .collect();
        let input = spec.input.as_ref().map(|l| l.iter().cloned().collect());
        let output = project(&spec.output);
        let mut edges_from: NameMap<Vec<String>> = NameMap::default();
        for (a, b) in &spec.edges {
            edges_from.entry(a.clone()).or_default().push(b.clone());
        }
        let mut branches_from: NameMap<Vec<usize>> = NameMap::default();
        for (i, b) in spec.branches.iter().enumerate() {
            branches_from.entry(b.source.clone()).or_default().push(i);
        }
        let interrupt_before = expand_breakpoints(&spec, interrupt_before);
        let interrupt_after = expand_breakpoints(&spec, interrupt_after);
        Ok(Graph {
            node_index,
            node_reads,
            branch_reads,
            input,
            output,
            spec: Arc::new(spec),
            names: Arc::new(names),
            chan_index: Arc::new(chan_index),
            kinds,
            edges_from,
            branches_from,
            joins_from,
            deferred,
            checkpointer,
            codec,
            interrupt_before,
            interrupt_after,
            state_cache: StateCache::default(),
        })
    }

    /// A run's own `interrupt_before` / `interrupt_after` (LangGraph's run keywords,
    /// which replace the compiled ones): node names, `"*"` for every node. Checked
    /// here, so a misspelt name fails the call instead of never pausing.
    pub fn breakpoints(&self, names: Vec<String>) -> Result<NameSet, GraphError> {
        if let Some(n) = names
            .iter()
            .find(|n| *n != "*" && !self.node_index.contains_key(*n))
        {
            return Err(GraphError::Config(format!(
                "interrupt node `{n}` not found: interrupt_before / interrupt_after name \
                 nodes of the graph ({}) or \"*\"",
                self.spec
                    .nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(expand_breakpoints(&self.spec, names))
    }

    pub fn spec(&self) -> &GraphSpec {
        &self.spec
    }

    pub fn checkpointer(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.checkpointer.as_ref()
    }

    /// The channels' names, the join barriers' hidden ones last.
    pub(super) fn names(&self) -> &[String] {
        &self.names
    }

    /// The channels' kinds, in the order of [`names`](Self::names).
    pub(super) fn kinds(&self) -> &[ChannelKind] {
        &self.kinds
    }

    pub fn channel_kind(&self, name: &str) -> Option<&ChannelKind> {
        self.chan_index.get(name).map(|&i| &self.kinds[i])
    }

    /// What node `i` sees of `view`.
    pub(super) fn node_view(&self, i: usize, view: &StateView) -> StateView {
        match &self.node_reads[i] {
            Some(p) => view.project(p),
            None => view.clone(),
        }
    }

    /// The input's writes to the channels the input may write; the rest is dropped.
    pub(super) fn input_writes(&self, writes: Vec<(String, Val)>) -> Vec<(String, Val)> {
        writes
            .into_iter()
            .filter(|(c, _)| match &self.input {
                Some(keys) => keys.contains(c),
                None => self.chan_index.contains_key(c) && !is_hidden(c),
            })
            .collect()
    }

    /// Whether one of `writes` goes to a channel the run's result shows.
    pub(super) fn writes_output<'a>(&self, mut writes: impl Iterator<Item = &'a str>) -> bool {
        writes.any(|c| match &self.output {
            Some(p) => p.contains(c),
            None => !is_hidden(c),
        })
    }

    /// What a run returns of `view`: the output channels.
    pub(super) fn output_view(&self, view: &StateView) -> StateView {
        match &self.output {
            Some(p) => view.project(p),
            None => view.clone(),
        }
    }

    pub(super) fn fresh_channels(&self) -> Vec<Channel> {
        self.kinds.iter().cloned().map(Channel::new).collect()
    }

    pub(super) fn view(&self, chans: &[Channel]) -> StateView {
        StateView {
            names: self.names.clone(),
            index: self.chan_index.clone(),
            values: Arc::new(chans.iter().map(|c| c.value.clone()).collect()),
            versions: Arc::new(chans.iter().map(|c| c.version).collect()),
        }
    }

    pub(super) fn decode(&self, channel: &str, v: Value) -> Result<Val, GraphError> {
        match self.channel_kind(channel) {
            Some(ChannelKind::Messages) => {
                let ms: Vec<Message> = serde_json::from_value(v).map_err(|e| {
                    GraphError::Checkpoint(CheckpointError::serialization(format!(
                        "bad messages in channel {channel:?}: {e}"
                    )))
                })?;
                Ok(Val::Messages(MessageList::from_messages(
                    ms.into_iter().map(Arc::new),
                )))
            }
            // The engine's own channels (join barriers) hold JSON, whatever the host.
            _ if is_hidden(channel) => Ok(Val::Json(v)),
            _ => self.codec.decode(channel, v),
        }
    }

    /// Applies writes (in order) to the channels; unknown channels are an error.
    pub(super) fn apply(
        &self,
        chans: &mut [Channel],
        writes: Vec<(String, Val)>,
    ) -> Result<(), GraphError> {
        // A step of nodes that wrote nothing (an agent's hook returning `None`), and
        // most steps' join resets: nothing to group.
        if writes.is_empty() {
            return Ok(());
        }
        let mut grouped: Vec<Vec<Val>> = vec![Vec::new(); chans.len()];
        for (c, v) in writes {
            let i = *self.chan_index.get(&c).ok_or_else(|| {
                GraphError::InvalidUpdate(format!(
                    "write to unknown channel {c:?}; the state has: {}",
                    self.names
                        .iter()
                        .filter(|n| !is_hidden(n))
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

    /// The channels after the stored records of `chain` (a thread's records, oldest
    /// first), each applied with [`Graph::apply_stored`].
    pub(super) fn replay(
        &self,
        thread_id: &str,
        chain: &[CheckpointRecord],
    ) -> Result<Vec<Channel>, GraphError> {
        let mut chans = self.fresh_channels();
        for r in chain {
            self.apply_stored(thread_id, &mut chans, r)?;
        }
        Ok(chans)
    }

    /// [`Graph::apply_record`] for a record read back from a store: a record that
    /// decodes but does not fit this graph (a channel it does not have, a value its
    /// channel refuses) was damaged or written by another graph, so it is a
    /// [`CheckpointError`] naming the thread and the checkpoint, not an error of the
    /// run's own updates.
    pub(super) fn apply_stored(
        &self,
        thread_id: &str,
        chans: &mut [Channel],
        r: &CheckpointRecord,
    ) -> Result<(), GraphError> {
        let applied = match &r.snapshot {
            Some(snapshot) => snapshot
                .json()
                .map_err(GraphError::Checkpoint)
                .and_then(|s| self.apply_snapshot(thread_id, chans, r, &s)),
            None => self.apply_record(chans, r),
        };
        applied.map_err(|e| match e {
            GraphError::Checkpoint(_) => e,
            other => GraphError::Checkpoint(CheckpointError::serialization(format!(
                "checkpoint {:?} of thread {thread_id:?} does not fit this graph ({other}): \
                 the stored record was damaged or written by a different graph; load an \
                 older checkpoint_id, or delete the thread",
                r.id
            ))),
        })
    }

    pub(super) fn apply_record(
        &self,
        chans: &mut [Channel],
        r: &CheckpointRecord,
    ) -> Result<(), GraphError> {
        let writes = r
            .writes
            .iter()
            .map(|w| {
                Ok((
                    w.channel.clone(),
                    self.decode(&w.channel, (*w.value).clone())?,
                ))
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.apply(chans, writes)
    }

    pub(super) fn decode_tasks(&self, next: &[TaskRecord]) -> Result<Vec<Task>, GraphError> {
        next.iter()
            .map(|t| {
                Ok(Task {
                    id: t.id.clone(),
                    node: t.node.clone(),
                    arg: match &t.arg {
                        Some(a) => Some(self.codec.decode(Reserved::Send.as_str(), a.clone())?),
                        None => None,
                    },
                    timeout: t.timeout.as_ref().and_then(TimeoutPolicy::from_json),
                })
            })
            .collect()
    }

    /// Whether conditional edges leave `node`.
    pub(super) fn has_branches(&self, node: &str) -> bool {
        self.branches_from.contains_key(node)
    }

    /// The tasks that follow `node` (or `START`), given the state after its step.
    /// Async for the routers whose decision is awaited (`Router::route_later`).
    /// `ctx` makes the context routers run in: only a node with conditional edges
    /// needs one (a task's context holds a cancellation token and the run's handles,
    /// ~1 k instructions a step to make for nothing).
    pub(super) async fn successors(
        &self,
        node: &str,
        goto: &[Goto],
        view: &StateView,
        ctx: impl FnOnce() -> TaskContext,
        out: &mut Vec<Trigger>,
    ) -> Result<(), GraphError> {
        let mut push = |g: &Goto| match g {
            Goto::Node(n) if n == END => Ok(()),
            Goto::Node(n) => {
                if !self.node_index.contains_key(n) {
                    return Err(GraphError::InvalidUpdate(format!(
                        "node {node:?} routed to unknown node {n:?}"
                    )));
                }
                out.push((n.clone(), None, None));
                Ok(())
            }
            Goto::Send(n, arg, timeout) => {
                if !self.node_index.contains_key(n) {
                    return Err(GraphError::InvalidUpdate(format!(
                        "node {node:?} sent to unknown node {n:?}"
                    )));
                }
                out.push((n.clone(), Some(arg.clone()), *timeout));
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
        let branches = self.branches_from.get(node).map_or(&[][..], Vec::as_slice);
        let ctx = match branches {
            [] => return Ok(()),
            _ => ctx(),
        };
        let ctx = &ctx;
        for &b in branches {
            let router = &self.spec.branches[b].router;
            let projected;
            let view = match &self.branch_reads[b] {
                Some(p) => {
                    projected = view.project(p);
                    &projected
                }
                None => view,
            };
            let gotos = match router.route_later(view, ctx) {
                Some(later) => later.await?,
                None => router.route(view, ctx)?,
            };
            for g in &gotos {
                push(g)?;
            }
        }
        Ok(())
    }

    /// Fires the joins whose sources have all run, given the state after a step
    /// whose tasks were `ran`: their targets join `triggers` (a join into `END` just
    /// ends). Returns the writes that reset their barriers.
    pub(super) fn fire_joins(
        &self,
        ran: &[Task],
        view: &StateView,
        triggers: &mut Vec<Trigger>,
    ) -> Vec<(String, Val)> {
        let mut resets = Vec::new();
        for (j, (srcs, target)) in self.spec.joins.iter().enumerate() {
            let ch = join_channel(j);
            let Some(Val::Json(Value::Array(seen))) = view.get(&ch) else {
                continue;
            };
            let all = srcs
                .iter()
                .all(|s| seen.contains(&Value::String(s.clone())));
            if all && ran.iter().any(|t| srcs.contains(&t.node)) {
                if target != END {
                    triggers.push((target.clone(), None, None));
                }
                resets.push((ch, Val::Json(Value::Null)));
            }
        }
        resets
    }

    /// Holds back the deferred nodes among `triggers` while other tasks are due, and
    /// releases every held one when nothing else is: LangGraph runs a deferred node
    /// (a summary after fan-outs of any length) once the run has nothing else to do.
    /// The held names live in a hidden channel, so a checkpoint (an interrupt, a
    /// crash) keeps them. Returns the channel's write when what is held changed.
    pub(super) fn hold_deferred(
        &self,
        view: &StateView,
        triggers: &mut Vec<Trigger>,
    ) -> Option<(String, Val)> {
        if self.deferred.is_empty() {
            return None;
        }
        let before: Vec<String> = match view.get(DEFER_CHANNEL) {
            Some(Val::Json(Value::Array(a))) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let mut held = before.clone();
        // A `Send` to a deferred node is a task of its own, run when sent.
        triggers.retain(|(n, arg, _)| {
            let defer = arg.is_none() && self.deferred.contains(n);
            if defer && !held.contains(n) {
                held.push(n.clone());
            }
            !defer
        });
        if triggers.is_empty() {
            triggers.extend(held.drain(..).map(|n| (n, None, None)));
        }
        (held != before).then(|| {
            let v = if held.is_empty() {
                Value::Null
            } else {
                json!(held)
            };
            (DEFER_CHANNEL.to_owned(), Val::Json(v))
        })
    }

    /// A write the engine makes itself, for a checkpoint.
    pub(super) fn engine_write(channel: &str, v: &Val) -> Result<Write, GraphError> {
        Ok(Write {
            node: ENGINE_NODE.into(),
            channel: channel.to_owned(),
            value: encode(channel, v)?,
            new_task: false,
        })
    }

    /// Builds the next step's tasks in the order LangGraph's `get_state` shows them
    /// (its `next` and `tasks`; a `Send` task's path index counts them): the `Send`s
    /// first, in the order they were sent (each makes a task), then the nodes
    /// triggered by edges in the graph's order of nodes, each once (a node runs once
    /// per step however many edges lead to it).
    pub(super) fn make_tasks(&self, step_id: &str, triggers: Vec<Trigger>) -> Vec<Task> {
        // One trigger (most steps): already in order, no partition to make.
        let ordered = if triggers.len() < 2 {
            triggers
        } else {
            let (mut sends, mut pulls): (Vec<_>, Vec<_>) =
                triggers.into_iter().partition(|(_, arg, _)| arg.is_some());
            let rank = |n: &str| self.node_index.get(n).copied().unwrap_or(usize::MAX);
            pulls.sort_by(|a, b| (rank(&a.0), &a.0).cmp(&(rank(&b.0), &b.0)));
            pulls.dedup_by(|a, b| a.0 == b.0);
            sends.append(&mut pulls);
            sends
        };
        ordered
            .into_iter()
            .enumerate()
            .map(|(i, (node, arg, timeout))| Task {
                id: task_id(step_id, i, &node),
                node,
                arg,
                timeout,
            })
            .collect()
    }

    /// The tasks of `next` (a checkpoint's) as the tasks of checkpoint `id`, in the
    /// same order: a fork or a copy of a checkpoint runs them again under its own id.
    pub(super) fn renumbered(
        &self,
        id: &str,
        next: &[TaskRecord],
    ) -> Result<Vec<Task>, GraphError> {
        let tasks = self.decode_tasks(next)?;
        let triggers = tasks.into_iter().map(|t| (t.node, t.arg, t.timeout));
        Ok(self.make_tasks(id, triggers.collect()))
    }

    pub(super) fn records(tasks: &[Task]) -> Result<Vec<TaskRecord>, GraphError> {
        tasks
            .iter()
            .map(|t| {
                Ok(TaskRecord {
                    id: t.id.clone(),
                    node: t.node.clone(),
                    arg: match &t.arg {
                        Some(a) => Some(Arc::unwrap_or_clone(encode(Reserved::Send.as_str(), a)?)),
                        None => None,
                    },
                    timeout: t.timeout.map(|p| p.to_json()),
                })
            })
            .collect()
    }

    pub(super) fn ctx_for(
        &self,
        task: &Task,
        step: i64,
        opts: &RunOptions,
        resume: Vec<Val>,
    ) -> TaskContext {
        TaskContext {
            task_id: task.id.clone(),
            node: task.node.clone(),
            step,
            push: task.arg.is_some(),
            resume,
            cancel: opts.cancel.child_token(),
            steer: opts.steer.clone(),
            inline: false,
            stream: opts.stream.clone(),
            host: opts.host.clone(),
            nest: self.nest_for(task, opts),
            calls: super::Calls::default(),
            remaining_steps: opts.recursion_limit as i64,
            progress: None,
            failed: None,
        }
    }

    /// The checkpointer lent to graphs run inside `task` (see [`super::Nest`]).
    fn nest_for(&self, task: &Task, opts: &RunOptions) -> Option<super::Nest> {
        let saver = match &opts.lent {
            Some(l) => l.saver.clone(),
            None => self.checkpointer.clone()?,
        };
        Some(super::Nest {
            saver,
            thread_id: opts.thread_id.clone()?,
            checkpoint_ns: crate::checkpoint::child_ns(&opts.checkpoint_ns, &task.node, &task.id),
            answer_waiting: false,
            answers: Vec::new(),
            replay: opts.replay.clone(),
            parents: opts.parents.clone(),
        })
    }

    pub(super) fn cp_err(e: CheckpointError) -> GraphError {
        GraphError::Checkpoint(e)
    }
}

/// A checkpoint's metadata: the run's own (`config["metadata"]`), plus where the
/// checkpoint comes from and its step.
pub(super) fn meta(user: &Value, source: Source, step: i64) -> Value {
    let mut m = match user {
        Value::Object(o) => o.clone(),
        _ => Default::default(),
    };
    m.insert("source".into(), json!(source.as_str()));
    m.insert("step".into(), json!(step));
    // The checkpoints of enclosing graphs, by namespace (none yet: no namespaces).
    m.entry("parents").or_insert_with(|| json!({}));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::task_id;

    #[test]
    fn a_task_id_reads_as_its_format() {
        for i in [0, 7, 10, 99, 123, usize::MAX] {
            assert_eq!(
                task_id("1f0-ab", i, "hook.before_model"),
                format!("1f0-ab:{i}:hook.before_model")
            );
        }
    }
}
