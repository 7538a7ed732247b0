//! Starting a step's tasks under their nodes' guards (see [`crate::graph::NodeGuard`]):
//! a timeout bounds each attempt, and a failed task whose node has an error handler is
//! followed, in the same step, by a task of that handler in its place.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio_util::sync::CancellationToken;

use super::calls::{Calls, Saved as CallSaved};
use super::Run;
use crate::graph::engine::Task;
use crate::graph::error::GraphError;
use crate::graph::guard::{within, Failed, Progress};
use crate::graph::pending;
use crate::graph::spec::{NodeFailure, NodeOutput};
use crate::graph::state::StateView;

/// A running task: its index in the step, and its node's future (under the node's
/// guards when it has any). Ends with the index and how the task ended. The node's
/// future stays where its runner boxed it: a task without a timeout or a permit to
/// wait for is not boxed a second time, nor its context moved into another future.
pub(super) struct TaskRun<'g> {
    i: usize,
    fut: BoxFuture<'g, Result<NodeOutput, NodeFailure>>,
}

impl Future for TaskRun<'_> {
    type Output = (usize, Result<NodeOutput, NodeFailure>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.fut.as_mut().poll(cx).map(|r| (this.i, r))
    }
}

/// A step's running tasks. A step of one task (most steps: an agent's model, tools
/// and hook steps) awaits its future itself: no `FuturesUnordered`, whose queue and
/// per-task allocations cost such a step more than polling its one future. A task
/// pushed into a step of one (an error handler in the failed task's place) joins a
/// `FuturesUnordered` then.
pub(super) enum Running<'g> {
    One(Option<TaskRun<'g>>),
    Many(FuturesUnordered<TaskRun<'g>>),
}

impl<'g> FromIterator<TaskRun<'g>> for Running<'g> {
    fn from_iter<I: IntoIterator<Item = TaskRun<'g>>>(tasks: I) -> Self {
        let mut tasks = tasks.into_iter();
        match (tasks.next(), tasks.next()) {
            (first, None) => Running::One(first),
            (Some(a), Some(b)) => Running::Many([a, b].into_iter().chain(tasks).collect()),
            (None, Some(_)) => unreachable!("an iterator yields nothing after its end"),
        }
    }
}

impl<'g> Running<'g> {
    pub(super) fn push(&mut self, task: TaskRun<'g>) {
        match self {
            Running::One(slot) => match slot.take() {
                None => *slot = Some(task),
                Some(running) => *self = Running::Many([running, task].into_iter().collect()),
            },
            Running::Many(all) => all.push(task),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            Running::One(slot) => slot.is_none(),
            Running::Many(all) => all.is_empty(),
        }
    }

    /// The next task to finish (`None` when none runs). Dropped before it ends (a step
    /// timeout), the task keeps running here.
    async fn next(&mut self) -> Option<(usize, Result<NodeOutput, NodeFailure>)> {
        match self {
            Running::One(slot) => {
                let task = slot.as_mut()?;
                let done = task.await;
                *slot = None;
                Some(done)
            }
            Running::Many(all) => all.next().await,
        }
    }
}

/// The next of a step's tasks to finish, or [`GraphError::StepTimeout`] once
/// `deadline` (the step's start plus `limit`, LangGraph's `step_timeout`) passes first.
pub(super) async fn next_within<'g>(
    running: &mut Running<'g>,
    deadline: Option<(tokio::time::Instant, std::time::Duration)>,
) -> Result<Option<(usize, Result<NodeOutput, NodeFailure>)>, GraphError> {
    match deadline {
        None => Ok(running.next().await),
        Some((at, limit)) => tokio::time::timeout_at(at, running.next())
            .await
            .map_err(|_| GraphError::StepTimeout(limit.as_secs_f64())),
    }
}

/// What every task of a step shares.
pub(super) struct StepShared {
    pub view: StateView,
    pub returns: Arc<HashMap<String, CallSaved>>,
    /// Cancelled when a task fails, in a step of several tasks.
    pub cancel: Option<CancellationToken>,
    pub inline: bool,
    /// `max_concurrency`'s permits, when the step has more tasks than it allows.
    pub permits: Option<Arc<tokio::sync::Semaphore>>,
}

impl<'g> Run<'g> {
    /// Starts task `i` of the step (`failed`: it handles that failure, see
    /// [`Run::handler_for`]), bounded by its node's timeout.
    pub(super) fn start_task(
        &self,
        i: usize,
        step: &StepShared,
        failed: Option<Arc<Failed>>,
    ) -> TaskRun<'g> {
        let graph = self.graph;
        let t = &self.next[i];
        let n = graph.node_index[&t.node];
        let resume = self.pending.resume_values(&t.id);
        let mut ctx = graph.ctx_for(t, self.step, &self.opts, resume);
        if let Some(nest) = ctx.nest.as_mut() {
            nest.answer_waiting = self.pending.answer_waiting(&t.id);
            if nest.answer_waiting {
                nest.answers = self.pending.nested_answers(&t.id);
            }
            if let Some(p) = &self.parent {
                nest.parents
                    .insert(self.opts.checkpoint_ns.clone(), p.id.clone());
            }
        }
        let spec = &graph.spec.nodes[n];
        // A `Send`'s own timeout times its task instead of the node's (LangGraph 1.2).
        let timeout = t.timeout.or(spec.guard.timeout);
        // A task run on the caller's thread could not be timed: it runs on the pool.
        ctx.inline = step.inline && timeout.is_none();
        ctx.remaining_steps = self.start_step + self.opts.recursion_limit as i64 + 1 - self.step;
        ctx.calls = Calls::new(
            step.returns.clone(),
            self.saves.clone(),
            self.parent.as_ref().map(|p| p.id.as_str()),
        );
        if let Some(c) = &step.cancel {
            ctx.cancel = c.child_token();
        }
        ctx.failed = failed;
        if let Some(p) = timeout.filter(|p| p.idle.is_some()) {
            ctx.progress = Some(Progress::new(p.heartbeat_only));
        }
        let progress = ctx.progress.clone();
        let (node_view, arg) = (graph.node_view(n, &step.view), t.arg.clone());
        let permits = step.permits.clone();
        if timeout.is_none() && permits.is_none() {
            let fut = spec.runner.run(node_view, arg, ctx);
            return TaskRun { i, fut };
        }
        let fut = Box::pin(async move {
            // The node's future is made once the task holds its permit, so nothing of it
            // runs before (and its timeout starts then).
            let _permit = match permits {
                Some(p) => p.acquire_owned().await.ok(),
                None => None,
            };
            let fut = spec.runner.run(node_view, arg, ctx);
            match timeout {
                Some(policy) => within(fut, policy, progress, &spec.name).await,
                None => fut.await,
            }
        });
        TaskRun { i, fut }
    }

    /// When task `i` failed with `error` and its node has an error handler: puts the
    /// handler's task in its place (same input, its own id) and returns the failure it
    /// is to handle. A cancellation is no failure of the node's, and a handler's own
    /// failure is not handled again.
    pub(super) fn handler_for(&mut self, i: usize, error: &GraphError) -> Option<Arc<Failed>> {
        if matches!(error, GraphError::Cancelled | GraphError::Drained(_)) {
            return None;
        }
        let t = &self.next[i];
        let n = self.graph.node_index[&t.node];
        let handler = self.graph.spec.nodes[n].guard.error_handler.clone()?;
        let failed = Failed {
            node: t.node.clone(),
            error: error.clone(),
        };
        // `<checkpoint id>:<index>:<node>` as every task id, with the handler's name.
        let prefix = t.id.rsplit_once(':').map_or(t.id.as_str(), |(p, _)| p);
        self.next[i] = Task {
            id: format!("{prefix}:{handler}"),
            node: handler,
            arg: t.arg.clone(),
            timeout: None,
        };
        Some(Arc::new(failed))
    }

    /// Task `i` failed with `error`: when its node has an error handler, the handler
    /// takes its place (see [`Run::handler_for`]), the failure saved first, so that a
    /// run that stops in the handler resumes with the handler, not the node, as
    /// LangGraph's.
    pub(super) async fn hand_over(
        &mut self,
        i: usize,
        error: &GraphError,
    ) -> Result<Option<Arc<Failed>>, GraphError> {
        let t = self.next[i].clone();
        let Some(failed) = self.handler_for(i, error) else {
            return Ok(None);
        };
        if let (Some(saves), Some(p)) = (&self.saves, &self.parent) {
            let w = pending::handled_write(&t, error.shown());
            saves.writes(&p.id, vec![w], false).await?;
        }
        Ok(Some(failed))
    }

    /// For each of `to_run`: the failure its error handler is to handle, when an
    /// earlier run saved one (see [`Run::hand_over`]); the handler then takes the
    /// task's place. The failure comes back as its text (the exception was not kept).
    pub(super) fn handed_over(&mut self, to_run: &[usize]) -> Vec<Option<Arc<Failed>>> {
        to_run
            .iter()
            .map(|&i| {
                let t = &self.next[i];
                let message = self.pending.handled_error(&t.id)?;
                let e = GraphError::Node {
                    node: t.node.clone(),
                    task_id: t.id.clone(),
                    message,
                    host: None,
                };
                self.handler_for(i, &e)
            })
            .collect()
    }
}
