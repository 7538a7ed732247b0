//! The step loop: LangGraph's super-steps, in Rust.
//!
//! A step runs every task triggered by the previous one, concurrently. Their writes
//! are invisible to each other and applied through the channels' reducers when the
//! step ends; then edges, routers, `goto`s and `Send`s decide the next step's tasks,
//! and the step is checkpointed as a delta (its writes and its next tasks).
//!
//! [`Run`] holds a run's state between steps; its phases are its methods:
//! [`Run::prepare`] (start from input, or continue / resume from a checkpoint),
//! [`Run::run_tasks`], [`Run::commit`], and the `emit_*` methods for the stream
//! (in `emit.rs`).

use std::sync::Arc;

use serde_json::Value;

use super::channel::Channel;
use super::codec::encode;
use super::engine::{meta, new_id, Graph, Task};
use super::error::GraphError;
use super::interrupt::InterruptInfo;
use super::pending::{self, Asked, Pending};
use super::replay;
use super::reserved::{is_hidden, Source};
use super::spec::{NodeOutput, START};
use super::state::StateView;
use super::value::Val;
use crate::checkpoint::{
    now_secs, thread_key, CheckpointError, CheckpointRecord, Checkpointer, PendingWrite, Write,
};

mod breakpoints;
mod calls;
mod direct;
mod emit;
mod exit;
mod fork;
mod guarded;
mod multitask;
mod saves;
mod tasks;
mod types;

pub use calls::Calls;
pub(super) use calls::Saved as CallSaved;
pub use multitask::Multitask;
pub use saves::Durability;
pub use types::{Lent, Resume, RunInput, RunOptions, RunResult, StepObserver};

impl Graph {
    /// Runs the graph until no task is left, an interrupt, or an error.
    pub async fn run(
        &self,
        input: RunInput,
        mut opts: RunOptions,
    ) -> Result<RunResult, GraphError> {
        // Held until the run's saves are done, so the next run sees them.
        let turn = self.take_turn(&mut opts).await?;
        let result = self.run_in_turn(input, opts, turn.as_ref()).await;
        if let Some(t) = turn {
            t.end().await;
        }
        result
    }

    /// [`Graph::run`] once the run holds its thread's turn (and lease), if it takes one.
    async fn run_in_turn(
        &self,
        input: RunInput,
        opts: RunOptions,
        turn: Option<&multitask::Turn>,
    ) -> Result<RunResult, GraphError> {
        let mut run = Run::open(self, opts).await?;
        if let Some(t) = turn {
            t.stop.set_start(run.parent.as_ref().map(|p| p.id.clone()));
        }
        let mut result = run.drive(input).await;
        // However the run ended, what it has not saved yet is saved (see `saves`):
        // under durability "exit", its one checkpoint (see `exit`).
        if let Err(e) = run.save_at_exit(result.is_err()) {
            result = result.and(Err(e));
        }
        if let Some(saves) = &run.saves {
            let saved = saves.finish().await;
            result = result.and(saved);
        }
        if let Some(t) = turn.filter(|t| t.stop.rolled_back()) {
            result = Err(GraphError::RolledBack(
                run.opts.thread_id.clone().unwrap_or_default(),
            ));
            if t.stop.discards_itself() {
                self.discard_run(&run.thread, t.stop.start()).await?;
            }
        }
        if run.cp.is_some() {
            match (&result, &run.parent) {
                // The channels are the state at the run's last checkpoint: kept for the
                // thread's next run. Not when they hold resume updates no checkpoint
                // has yet (the step paused again): its next run applies them anew.
                (Ok(()), Some(p)) if run.updates.is_empty() => {
                    self.cache_state(&run.thread, &p.id, &run.chans, run.since_snapshot)
                }
                // A failed step may have changed the channels without a checkpoint.
                _ => self.state_cache.forget(&run.thread),
            }
        }
        result?;
        Ok(run.finish())
    }
}

impl Graph {
    /// A root run on a thread of this graph's checkpointer waits for the thread's turn
    /// under its `multitask_strategy` (see `multitask`); the run's cancel token and
    /// steer flag become the turn's, and a `rollback` run starts where the run it
    /// stopped started. `None` for runs the registry does not see (no checkpointer or
    /// thread, a subgraph's run in its parent's thread).
    async fn take_turn(
        &self,
        opts: &mut RunOptions,
    ) -> Result<Option<multitask::Turn>, GraphError> {
        let (Some(cp), Some(thread), None, true) = (
            &self.checkpointer,
            &opts.thread_id,
            &opts.lent,
            opts.checkpoint_ns.is_empty(),
        ) else {
            return Ok(None);
        };
        let saver = Arc::as_ptr(cp) as *const () as usize;
        let mut turn = multitask::Turn::take(saver, thread, opts.multitask, &opts.cancel).await?;
        turn.lease(cp.as_ref(), thread, opts.multitask).await?;
        opts.cancel = turn.stop.halt.clone();
        opts.steer = Some(turn.stop.steer.clone());
        match turn.replaced_start() {
            Some(Some(id)) if opts.checkpoint_id.is_none() => {
                Graph::drop_abandoned(cp.as_ref(), thread, &id).await?;
                opts.checkpoint_id = Some(id);
            }
            // The stopped run started the thread: nothing of it stays.
            Some(None) => cp.delete_thread(thread).await.map_err(Graph::cp_err)?,
            _ => {}
        }
        Ok(Some(turn))
    }
}

impl Graph {
    /// A run that a run of another process rolled back deletes what it saved, before
    /// it lets the thread's lease go: the checkpoints after `start` (where it
    /// started; `Some(None)`: it started the thread, which goes whole).
    async fn discard_run(
        &self,
        thread: &str,
        start: Option<Option<String>>,
    ) -> Result<(), GraphError> {
        let Some(cp) = &self.checkpointer else {
            return Ok(());
        };
        match start {
            Some(Some(id)) => Graph::drop_abandoned(cp.as_ref(), thread, &id).await,
            Some(None) => cp.delete_thread(thread).await.map_err(Graph::cp_err),
            None => Ok(()),
        }
    }
}

impl Graph {
    /// A rolled-back run's checkpoints leave the thread's history, as LangGraph's
    /// server deletes the run: the chain from the thread's latest checkpoint back to
    /// `start`, where that run started (the run held the thread's turn, so they are
    /// its). Its subgraphs' checkpoints stay under their namespaces, out of the
    /// thread's history; pending writes it saved on `start` itself stay too (they may
    /// be an earlier pause's, which it could not be told apart from).
    async fn drop_abandoned(
        cp: &dyn crate::checkpoint::Checkpointer,
        thread: &str,
        start: &str,
    ) -> Result<(), GraphError> {
        let Some(latest) = cp.get(thread, None).await.map_err(Graph::cp_err)? else {
            return Ok(());
        };
        if latest.id == start {
            return Ok(());
        }
        let chain = cp.chain(thread, &latest.id).await.map_err(Graph::cp_err)?;
        let Some(at) = chain.iter().position(|r| r.id == start) else {
            return Ok(()); // the latest does not descend from `start`: not the run's
        };
        let ids = chain[at + 1..].iter().map(|r| r.id.clone()).collect();
        cp.delete_checkpoints(thread, ids)
            .await
            .map_err(Graph::cp_err)
    }
}

impl Run<'_> {
    /// The step loop, from `input` to the end, a pause or an error.
    async fn drive(&mut self, input: RunInput) -> Result<(), GraphError> {
        let run = self;
        run.note_start_messages();
        run.prepare(input).await?;
        let mut input_step = run.next.iter().any(|t| t.node == START);
        while !run.next.is_empty() {
            if run.opts.cancel.is_cancelled() {
                return Err(GraphError::Cancelled);
            }
            // A run that continues from a pause before these tasks runs them.
            if !std::mem::take(&mut run.skip_before) && run.pause_before() {
                break;
            }
            // Drained: the step just taken was the last (its checkpoint is saved).
            if let Some(reason) = run.opts.drain.as_ref().and_then(|d| d.reason()) {
                return Err(GraphError::Drained(reason));
            }
            if (run.step - run.start_step) as usize >= run.opts.recursion_limit {
                return Err(GraphError::Recursion(run.opts.recursion_limit));
            }
            run.step += 1;
            let observer = run.opts.observer.clone();
            if let Some(o) = &observer {
                let nodes: Vec<&str> = run.next.iter().map(|t| t.node.as_str()).collect();
                o.step_started(run.step, &nodes);
            }
            let taken = run.take_step().await;
            if let Some(o) = &observer {
                o.step_ended(run.step, taken.as_ref().err());
            }
            if !taken? {
                break;
            }
            if std::mem::take(&mut input_step) {
                run.note_start_messages();
            }
            if run.opts.live {
                yield_once().await;
            }
        }
        Ok(())
    }

    /// One super-step: its tasks, their commit, and the pauses after it. False when
    /// the run stops here (an interrupt, a pause, a steer).
    async fn take_step(&mut self) -> Result<bool, GraphError> {
        let Some(outputs) = self.run_tasks().await? else {
            return Ok(false);
        };
        let pause_after = self.node_to_pause_after();
        let checkpoint_id = self.commit(outputs).await?;
        if self.pause_after(pause_after, &checkpoint_id) {
            return Ok(false);
        }
        if self.steered() {
            self.answer_skipped().await?;
            return Ok(false);
        }
        Ok(true)
    }

    /// A newer run on the thread steers this one (`multitask_strategy="interrupt"`):
    /// it stops at the end of the step under way, its progress saved.
    fn steered(&self) -> bool {
        self.opts.steer.as_ref().is_some_and(|s| s.is_set())
    }

    /// Before a steered run stops: when its next step is tool nodes only, that step
    /// runs with the steer flag set, so every call the model asked for and that was
    /// not started gets an error result saying it was skipped (the conversation stays
    /// valid for the model). Other next tasks are left, as any new input leaves them.
    async fn answer_skipped(&mut self) -> Result<(), GraphError> {
        let graph = self.graph;
        let all_tools = !self.next.is_empty()
            && self.next.iter().all(|t| {
                graph
                    .node_index
                    .get(&t.node)
                    .is_some_and(|&n| graph.spec.nodes[n].runner.answers_when_steered())
            });
        if !all_tools {
            return Ok(());
        }
        self.step += 1;
        if let Some(outputs) = self.run_tasks().await? {
            self.commit(outputs).await?;
        }
        Ok(())
    }
}

/// One run of a graph: the loop's state between steps.
struct Run<'g> {
    graph: &'g Graph,
    opts: RunOptions,
    /// Where the run saves checkpoints: the graph's checkpointer, given a thread.
    cp: Option<Arc<dyn Checkpointer>>,
    thread: String,
    /// How the run's checkpoints and writes reach `cp` (its `durability`).
    saves: Option<Arc<saves::Saves>>,
    chans: Vec<Channel>,
    /// The last step taken: the input's is -1, a new thread's state is at -2.
    step: i64,
    /// The step the run started at, for the recursion limit.
    start_step: i64,
    /// The latest checkpoint: the next one's parent, and the one the current step's
    /// pending writes are saved against. Always `None` without a checkpointer.
    parent: Option<CheckpointRecord>,
    /// The pending writes of the step the run continues; empty after a step.
    pending: Pending,
    /// The tasks of the next step.
    next: Vec<Task>,
    /// Why the run paused, if it did.
    interrupts: Vec<InterruptInfo>,
    /// Skip `interrupt_before` for the next step: the run continues from that pause.
    skip_before: bool,
    /// The run's input: the output of the `START` task of its first step.
    input: Option<NodeOutput>,
    /// The next checkpoint branches off an older one (the run started at a given
    /// `checkpoint_id`): saved with `put`, not as the thread's next (`put_next`).
    fork: bool,
    /// How many records of the thread's chain follow its nearest snapshot: the next
    /// checkpoint holds one when it is due (see `snapshot`).
    since_snapshot: usize,
    /// Whether the run has something to return: it continues a thread, or it wrote
    /// one of the output channels (as LangGraph, whose `invoke` returns `None` when
    /// no step of a new run touched them).
    has_output: bool,
    /// Under durability `"exit"`: what the run's one save needs (see `exit`).
    exit: Option<exit::AtExit>,
    /// The `update`s of `Command(resume=...)`s of the step the run continues: in the
    /// state already, in its checkpoint's writes once it commits.
    updates: Vec<(String, Val)>,
    /// The run travels back in time: its first step's tasks run again (see `fork`).
    replaying: bool,
    /// What a paused run returns: its state with the writes of the paused step's
    /// finished tasks applied (see `show_finished_at_pause`).
    shown_at_pause: Option<StateView>,
}

/// Prepare: where the run starts.
impl<'g> Run<'g> {
    /// The run's checkpointer (an error if the graph has one but no thread is given)
    /// and the state at the checkpoint it starts from (a new thread's is empty).
    async fn open(graph: &'g Graph, mut opts: RunOptions) -> Result<Run<'g>, GraphError> {
        let own = opts.lent.as_ref().map(|l| l.saver.clone());
        let cp = match (own.or_else(|| graph.checkpointer.clone()), &opts.thread_id) {
            (Some(cp), Some(_)) => Some(cp),
            (Some(_), None) => {
                return Err(GraphError::Config(
                    "this graph has a checkpointer: pass a thread id, e.g. \
                     config={\"configurable\": {\"thread_id\": \"1\"}}"
                        .into(),
                ))
            }
            _ => None,
        };
        let thread = thread_key(
            opts.thread_id.as_deref().unwrap_or_default(),
            &opts.checkpoint_ns,
        );
        let fresh = replay::start_before(cp.as_deref(), &thread, &mut opts).await?;
        let (chans, since_snapshot, parent) = match &cp {
            Some(_) if fresh => (graph.fresh_channels(), 0, None),
            Some(cp) => match cp
                .get(&thread, opts.checkpoint_id.as_deref())
                .await
                .map_err(Graph::cp_err)?
            {
                Some(r) => {
                    let loaded = graph.state_at(cp.as_ref(), &thread, &r, false).await?;
                    (loaded.chans, loaded.since_snapshot, Some(r))
                }
                None => {
                    if let Some(id) = &opts.checkpoint_id {
                        return Err(GraphError::Checkpoint(CheckpointError::not_found(
                            &thread, id,
                        )));
                    }
                    (graph.fresh_channels(), 0, None)
                }
            },
            None => (graph.fresh_channels(), 0, None),
        };
        let step = parent.as_ref().map(|p| p.step).unwrap_or(-2);
        // A run from a given checkpoint branches off the thread's history, unless that
        // checkpoint is the thread's latest: then it continues the thread as a run
        // without one does (as LangGraph).
        let fork = match (&cp, &parent, &opts.checkpoint_id) {
            (Some(cp), Some(p), Some(_)) => cp
                .get(&thread, None)
                .await
                .map_err(Graph::cp_err)?
                .is_none_or(|latest| latest.id != p.id),
            _ => opts.checkpoint_id.is_some(),
        } || opts.start_before.is_some();
        replay::note_parents(&mut opts);
        let saves = cp.as_ref().map(|cp| {
            Arc::new(saves::Saves::new(
                cp.clone(),
                thread.clone(),
                opts.durability,
            ))
        });
        let exit = (saves.is_some() && opts.durability == Durability::Exit)
            .then(|| exit::AtExit::new(parent.as_ref().map(|p| p.id.clone())));
        Ok(Run {
            graph,
            opts,
            cp,
            thread,
            chans,
            step,
            start_step: step,
            parent,
            pending: Pending::default(),
            next: Vec::new(),
            interrupts: Vec::new(),
            skip_before: false,
            input: None,
            fork,
            since_snapshot,
            has_output: false,
            saves,
            exit,
            updates: Vec::new(),
            replaying: false,
            shown_at_pause: None,
        })
    }

    /// Sets the first step's tasks from the input; the recursion limit counts steps
    /// from here.
    async fn prepare(&mut self, input: RunInput) -> Result<(), GraphError> {
        let travels = self.travels(&input);
        let input = self.nested_input(input).await?;
        if travels && matches!(input, RunInput::Continue) {
            self.start_branch().await?;
        }
        match input {
            RunInput::Values(writes) => {
                let out = NodeOutput {
                    writes,
                    ..Default::default()
                };
                self.start_from_input(out).await?
            }
            RunInput::Command(out) if self.command_continues(travels) => {
                self.continue_with_command(out).await?
            }
            RunInput::Command(out) => self.start_from_input(out).await?,
            RunInput::Continue => self.continue_from_checkpoint(None).await?,
            RunInput::Resume(r, update) => self.continue_from_checkpoint(Some((r, update))).await?,
        }
        self.start_step = self.step;
        Ok(())
    }

    /// A subgraph's run in a task that ran it before (paused on an `interrupt()` in it,
    /// or crashed): it continues its namespace's latest checkpoint instead of starting
    /// again, and its pending `interrupt()`s get the parent task's answers by id, or
    /// the first of them the last of its resume values. Any other run's input is
    /// `input`.
    async fn nested_input(&mut self, input: RunInput) -> Result<RunInput, GraphError> {
        let (Some(lent), Some(cp), Some(parent)) = (&self.opts.lent, &self.cp, &self.parent) else {
            return Ok(input);
        };
        // A replay's subgraph at its state from before the replay point takes its
        // input anew, as LangGraph's (which clears its `RESUMING` flag then).
        if parent.next.is_empty() || self.opts.start_before.is_some() {
            return Ok(input);
        }
        // Answers by id to this run's questions, as its parent task's question showed
        // them (see `graph::nested`): a resume map of its own.
        if !lent.answers.is_empty() {
            return Ok(RunInput::Resume(
                Resume::ById(lent.answers.clone()),
                Vec::new(),
            ));
        }
        let pending = Pending::load(self.graph, cp.as_ref(), &self.thread, &parent.id).await?;
        Ok(
            match (lent.resume.last(), pending.first_unanswered(&parent.next)) {
                (Some(v), Some(task)) => {
                    RunInput::Resume(Resume::Task(task.to_owned(), v.clone()), Vec::new())
                }
                _ => RunInput::Continue,
            },
        )
    }

    /// New input, as LangGraph takes it: a checkpoint with source `input` holds the
    /// state before it and one task, `START`, whose output is the input (saved as its
    /// pending writes, so a crash before the next step loses nothing). The first step
    /// runs that task like any other: its writes are applied and `START`'s edges and
    /// routers give the next tasks.
    async fn start_from_input(&mut self, out: NodeOutput) -> Result<(), GraphError> {
        let mut out = out;
        out.writes = self.graph.input_writes(out.writes);
        self.has_output |= self
            .graph
            .writes_output(out.writes.iter().map(|(c, _)| c.as_str()));
        if self.graph.spec.direct_input {
            return self.start_direct(out).await;
        }
        self.step += 1;
        let id = new_id();
        self.next = self.graph.make_tasks(&id, vec![(START.into(), None, None)]);
        // The input is saved as the pending writes of the input checkpoint, in one
        // batch with it (one transaction): never an input checkpoint without its input
        // (a resumed run would start from nothing), and one commit, not two; under
        // durability "sync" the batch waits for the first step's checkpoint and goes
        // in its transaction (see `Saves::record`).
        let input = match &self.saves {
            Some(_) => pending::finished_writes(&self.next[0], &out)?,
            None => Vec::new(),
        };
        // Held for the first step's save, unless a stream shows the input checkpoint
        // (whose reader may look it up at once: it must be in the store by then).
        let hold = !self
            .opts
            .stream
            .as_ref()
            .is_some_and(|s| s.wants(super::stream::modes::DEBUG));
        self.checkpoint(id, Source::Input, Vec::new(), input, hold)
            .await?;
        self.emit_checkpoint(Source::Input);
        self.input = Some(out);
        Ok(())
    }

    /// `None` or `Command(resume=...)`: the checkpoint's next tasks run, except those
    /// its pending writes show finished (or still paused on an `interrupt()`).
    async fn continue_from_checkpoint(
        &mut self,
        resume: Option<(Resume, Vec<(String, Val)>)>,
    ) -> Result<(), GraphError> {
        let (Some(cp), Some(parent)) = (&self.cp, &self.parent) else {
            return Err(GraphError::Config(
                "nothing to resume: resuming (invoke(None) or Command(resume=...)) \
                 needs a checkpointer and a thread with a checkpoint"
                    .into(),
            ));
        };
        self.pending = Pending::load(self.graph, cp.as_ref(), &self.thread, &parent.id).await?;
        if self.replaying {
            self.pending.replayed(&parent.next);
        } else if let Some(x) = &mut self.exit {
            x.continues(self.pending.finished());
        }
        if let Some((r, update)) = resume {
            // As LangGraph: not when resuming a checkpoint a later one superseded
            // (the run forks), whose finished tasks may ask again while their
            // answers look given.
            let strict = self.opts.strict_resume && !self.replaying && !self.fork;
            let asked = Asked {
                ns: &self.opts.checkpoint_ns,
                strict,
            };
            self.pending
                .answer(cp.as_ref(), &self.thread, parent, r, asked)
                .await?;
            self.pending
                .save_update(cp.as_ref(), &self.thread, &parent.id, update)
                .await?;
        }
        // The updates of this and earlier resumes of the step, before its tasks run;
        // its checkpoint records them ahead of the tasks' writes (see `apply_writes`).
        let updates = self.pending.updates(self.graph)?;
        self.graph.apply(&mut self.chans, updates.clone())?;
        self.updates = updates;
        // The run paused before these tasks (or crashed running them).
        self.skip_before = true;
        self.has_output = true;
        self.next = self.graph.decode_tasks(&parent.next)?;
        self.add_saved_gotos()?;
        // As LangGraph, a resumed run's `values` stream starts from the state it resumes,
        // and its `debug` stream from the checkpoint it resumes.
        self.emit_values(&self.graph.view(&self.chans));
        self.emit_resumed_checkpoint()
    }

    /// The run's result, wherever it stopped.
    fn finish(self) -> RunResult {
        let state = self.graph.view(&self.chans);
        let shown = self.shown_at_pause.as_ref().unwrap_or(&state);
        RunResult {
            output: self.has_output.then(|| self.graph.output_view(shown)),
            state,
            interrupts: self.interrupts,
            checkpoint_id: self.parent.map(|p| p.id),
            next: self.next.into_iter().map(|t| t.node).collect(),
        }
    }
}

/// Pauses: `interrupt_before` / `interrupt_after`.
impl Run<'_> {
    /// Pauses before the step if one of its tasks' nodes is in `interrupt_before`.
    fn pause_before(&mut self) -> bool {
        let before = (self.opts.interrupt_before.as_ref()).unwrap_or(&self.graph.interrupt_before);
        let Some(t) = self.next.iter().find(|t| before.contains(&t.node)) else {
            return false;
        };
        let info = InterruptInfo::before(&t.id, &t.node);
        self.emit_breakpoint(&info);
        self.interrupts.push(info);
        true
    }

    /// The first node of the step about to be committed that is in `interrupt_after`.
    fn node_to_pause_after(&self) -> Option<String> {
        let after = (self.opts.interrupt_after.as_ref()).unwrap_or(&self.graph.interrupt_after);
        if after.is_empty() {
            return None;
        }
        self.next
            .iter()
            .find(|t| after.contains(&t.node))
            .map(|t| t.node.clone())
    }

    /// Pauses after `node`'s step, checkpointed as `checkpoint_id`, unless the run is
    /// over anyway.
    fn pause_after(&mut self, node: Option<String>, checkpoint_id: &str) -> bool {
        match node {
            Some(node) if !self.next.is_empty() => {
                let info = InterruptInfo::after(checkpoint_id, &node);
                self.emit_breakpoint(&info);
                self.interrupts.push(info);
                true
            }
            _ => false,
        }
    }
}

/// Commit: the step's writes become the next state, and the next tasks.
impl Run<'_> {
    /// Applies the step's writes, picks the next tasks and checkpoints the step.
    /// Returns the new checkpoint's id (the next tasks' ids start with it, with or
    /// without a checkpointer).
    async fn commit(&mut self, mut outputs: Vec<NodeOutput>) -> Result<String, GraphError> {
        // As LangGraph, a step that wrote no state key has no `values` chunk.
        let wrote_state = outputs
            .iter()
            .any(|o| o.writes.iter().any(|(c, _)| !is_hidden(c)));
        let own_views = self.own_views(&outputs)?;
        // Under durability "exit" the state at the last checkpoint is what the run
        // saves: a step that fails before its checkpoint leaves it as it was.
        let before = self.exit.is_some().then(|| self.chans.clone());
        let restore = |run: &mut Self, e: GraphError| {
            if let Some(b) = &before {
                run.chans = b.clone();
            }
            e
        };
        let mut saved = self
            .apply_writes(&mut outputs)
            .map_err(|e| restore(self, e))?;
        let view = self.graph.view(&self.chans);
        if wrote_state {
            self.emit_values(&view);
        }
        let id = new_id();
        let triggers = match self.route(&outputs, &view, &own_views, &mut saved).await {
            Ok(t) => t,
            Err(e) => return Err(restore(self, e)),
        };
        self.next = self.graph.make_tasks(&id, triggers);
        self.checkpoint(id.clone(), Source::Loop, saved, Vec::new(), false)
            .await?;
        self.emit_checkpoint(Source::Loop);
        self.pending.clear();
        Ok(id)
    }

    /// Applies the tasks' writes through the reducers in LangGraph's order: tasks
    /// triggered by edges sorted by node name, then `Send` tasks in the order they were
    /// sent (never completion order, nor `add_node` order, so reducers see the same order
    /// every time). Moves the writes out of `outputs`; returns them encoded for the
    /// checkpoint when there is one.
    fn apply_writes(&mut self, outputs: &mut [NodeOutput]) -> Result<Vec<Write>, GraphError> {
        let mut saved = self.per_step_writes();
        // A run without a checkpointer keeps no write: nothing to note of them.
        let keeps = saved.is_some() || self.exit.is_some();
        let order = self.write_order();
        // Resume updates first (see `continue_from_checkpoint`): recorded, but already
        // applied to the state the tasks ran on.
        let mut writes = std::mem::take(&mut self.updates);
        let applied = writes.len();
        writes.reserve(outputs.iter().map(|o| o.writes.len()).sum());
        // Each write's node and task (`None`: a resume's update).
        let mut nodes: Vec<(&str, Option<usize>)> = Vec::new();
        if keeps {
            nodes.resize(applied, (START, None));
        }
        for i in order {
            let (t, out) = (&self.next[i], &mut outputs[i]);
            if keeps {
                nodes.extend(std::iter::repeat_n(
                    (t.node.as_str(), Some(i)),
                    out.writes.len(),
                ));
            }
            writes.append(&mut out.writes);
        }
        let mut before: Option<(&str, Option<usize>)> = None;
        for ((c, v), (node, task)) in writes.iter().zip(nodes) {
            let new_task = before.is_some_and(|(n, t)| n == node && t != task);
            keep_write(
                &mut self.exit,
                self.graph,
                &mut saved,
                (node, c, v),
                new_task,
            )?;
            before = Some((node, task));
        }
        // Without resume updates the writes are all the tasks': no copy of them.
        let writes = match applied {
            0 => writes,
            _ => writes.split_off(applied),
        };
        self.has_output |= self
            .graph
            .writes_output(writes.iter().map(|(c, _)| c.as_str()));
        self.graph.apply(&mut self.chans, writes)?;
        Ok(saved.unwrap_or_default())
    }

    /// Where an applied write is encoded for the checkpoint that saves it: `Some` when
    /// each step saves its own writes, `None` without a checkpointer or under
    /// durability "exit", where nothing is encoded per step (see `exit`).
    fn per_step_writes(&self) -> Option<Vec<Write>> {
        (self.cp.is_some() && self.exit.is_none()).then(Vec::new)
    }

    /// The order the step's tasks' writes are applied in (see `apply_writes`).
    fn write_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.next.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            let key = |i: usize| {
                let t = &self.next[i];
                (
                    t.arg.is_some(),
                    if t.arg.is_some() { "" } else { t.node.as_str() },
                    i,
                )
            };
            key(a).cmp(&key(b))
        });
        order
    }

    /// What each task's conditional edges read, as in LangGraph: the state before
    /// the step with only that task's writes applied. `None` where the state after the
    /// step is the same thing (a step of one task) or no router reads it.
    fn own_views(&self, outputs: &[NodeOutput]) -> Result<Vec<Option<StateView>>, GraphError> {
        if self.next.len() == 1 {
            return Ok(Vec::new());
        }
        self.next
            .iter()
            .zip(outputs)
            .map(|(t, out)| {
                if !self.graph.has_branches(&t.node) {
                    return Ok(None);
                }
                let mut chans = self.chans.clone();
                self.graph.apply(&mut chans, out.writes.clone())?;
                Ok(Some(self.graph.view(&chans)))
            })
            .collect()
    }

    /// The next step's triggers: each task's gotos, edges and routers (reading the
    /// state after the step, or `own_views`), then the joins whose sources have all
    /// run, which are reset by a write of the engine's (added to `saved`).
    async fn route(
        &mut self,
        outputs: &[NodeOutput],
        view: &StateView,
        own_views: &[Option<StateView>],
        saved: &mut Vec<Write>,
    ) -> Result<Vec<super::engine::Trigger>, GraphError> {
        let mut triggers = Vec::new();
        // In the order the tasks' writes apply: so are LangGraph's `Send`s ordered.
        for i in self.write_order() {
            let (t, out) = (&self.next[i], &outputs[i]);
            let ctx = || self.graph.ctx_for(t, self.step, &self.opts, Vec::new());
            let view = own_views.get(i).and_then(Option::as_ref).unwrap_or(view);
            self.graph
                .successors(&t.node, &out.goto, view, ctx, &mut triggers)
                .await?;
        }
        let mut resets = self.graph.fire_joins(&self.next, view, &mut triggers);
        resets.extend(self.graph.hold_deferred(view, &mut triggers));
        if self.cp.is_some() && self.exit.is_none() {
            for (c, v) in &resets {
                saved.push(Graph::engine_write(c, v)?);
            }
        }
        self.graph.apply(&mut self.chans, resets)?;
        Ok(triggers)
    }

    /// Saves the step (its `writes` and the next tasks) as a checkpoint whose parent
    /// is the previous one; nothing without a checkpointer.
    async fn checkpoint(
        &mut self,
        id: String,
        source: Source,
        writes: Vec<Write>,
        pending: Vec<PendingWrite>,
        hold: bool,
    ) -> Result<(), GraphError> {
        if self.exit.is_some() {
            return self.checkpoint_at_exit(id, source, pending).await;
        }
        let Some(saves) = &self.saves else {
            return Ok(());
        };
        let (snapshot, since) = self
            .graph
            .snapshot_for_next(self.since_snapshot, &self.chans)?;
        let record = CheckpointRecord {
            snapshot,
            id,
            parent_id: self.parent.as_ref().map(|p| p.id.clone()),
            step: self.step,
            source: source.as_str().into(),
            writes,
            next: Graph::records(&self.next)?,
            created_at: now_secs(),
            metadata: meta(&self.opts.metadata, source, self.step),
        };
        // What the run keeps of it as the next step's parent: its id, step and next
        // tasks. Its writes and snapshot go to the saver, uncopied (a step's messages
        // can be most of a record).
        let head = CheckpointRecord {
            snapshot: None,
            id: record.id.clone(),
            parent_id: record.parent_id.clone(),
            step: record.step,
            source: record.source.clone(),
            writes: Vec::new(),
            next: record.next.clone(),
            created_at: record.created_at,
            metadata: Value::Null,
        };
        // Every step but a fork's first must follow the thread's latest checkpoint: a
        // second run advancing the thread at the same time gets a conflict.
        saves
            .record(pending, record, std::mem::take(&mut self.fork), hold)
            .await?;
        self.since_snapshot = since;
        self.parent = Some(head);
        Ok(())
    }
}

/// Pending once, woken at once: whoever drives the run (see [`RunOptions::live`])
/// gets to take what the run sent before it goes on.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}

/// Keeps one applied write for the save that records it: durability "exit" notes it
/// for its one save at the end, and `saved` (see [`Run::per_step_writes`]) gets it
/// encoded as a write of the step's checkpoint. One rule for a step's writes and a
/// `direct_input` graph's input.
fn keep_write(
    exit: &mut Option<exit::AtExit>,
    graph: &Graph,
    saved: &mut Option<Vec<Write>>,
    (node, channel, v): (&str, &String, &Val),
    new_task: bool,
) -> Result<(), GraphError> {
    if let Some(x) = exit {
        x.wrote(graph, node, channel, v);
    }
    if let Some(saved) = saved {
        saved.push(Write {
            node: node.to_owned(),
            channel: channel.clone(),
            value: encode(channel, v)?,
            new_task,
        });
    }
    Ok(())
}
