//! Runs the tool calls of one AI message.
//!
//! Guarantees, whatever the strategy: exactly one result per call, in call order
//! (not completion order); a call that fails — unknown tool, arguments that are not
//! a JSON object or fail the schema, an error, a panic, a timeout, cancellation, a
//! before hook's veto — yields an error result and never costs its siblings theirs.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::message::{Content, Message, MessageKind, ToolStatus};
use crate::registry::ToolRegistry;
use crate::tool::{
    CallEvent, CallEvents, CallSpan, CallTracer, ChildRun, ProgressFn, ToolCall, ToolContext,
    ToolError, ToolOutput,
};

/// How the calls of one message are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One after another, in call order.
    Sequential,
    /// All at once, at most `max_concurrency` in flight when set. Calls start in
    /// call order on the task running `execute`; a call that has to wait continues
    /// on a task of its own (see `run_concurrently`).
    Parallel { max_concurrency: Option<usize> },
    /// Groups of `size` at once (started as `Parallel` starts them); a group starts
    /// when the previous one is done.
    Batched { size: usize },
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::Parallel {
            max_concurrency: None,
        }
    }
}

/// What a before hook decides about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeAction {
    Proceed,
    /// The call is not run; the model gets a `Blocked` error with this reason.
    Skip(String),
}

/// Observes (and may veto) calls. Hooks run on the executor's tasks: keep them quick.
pub trait Hooks: Send + Sync {
    fn before(&self, _call: &ToolCall) -> BeforeAction {
        BeforeAction::Proceed
    }
    /// Sees every outcome, including skipped, unknown, invalid and timed-out calls.
    fn after(&self, _call: &ToolCall, _outcome: &Result<ToolOutput, ToolError>) {}
}

/// The result of one call.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub name: String,
    pub outcome: Result<ToolOutput, ToolError>,
    /// The call's [`REASONING_FOR_CALL`] meta-field, when its arguments carried one (a
    /// string): the model's reason for the call, kept on the call's tool message.
    pub reasoning: Option<String>,
}

/// The call meta-field in which a model says why it made a call (the Agent/Tool
/// spec's `_reasoningForCall`). It is the tool's business to leave it out of what it
/// runs (ironloop's call-field wrapper does); the executor copies it, under the same
/// key, to the `response_metadata` of the call's tool message.
pub const REASONING_FOR_CALL: &str = "_reasoningForCall";

/// Where a tool message's `response_metadata` names the run its call started (a
/// sub-agent's; yoagent's name for it), so a UI can nest that run under the call.
pub const CHILD_LOOP_ID: &str = "child_loop_id";

/// The [`REASONING_FOR_CALL`] of `call`: nothing copied when absent. A call's few
/// arguments are scanned rather than looked up: comparing a handful of keys (their
/// lengths first) costs less than hashing the key, and every call pays this.
pub fn call_reasoning(call: &ToolCall) -> Option<String> {
    let args = call.arguments.as_object()?;
    let found = if args.len() <= 8 {
        args.iter()
            .find(|(k, _)| k.as_str() == REASONING_FOR_CALL)
            .map(|(_, v)| v)
    } else {
        args.get(REASONING_FOR_CALL)
    };
    found?.as_str().map(str::to_owned)
}

/// The text an error result carries for the model.
pub fn error_text(e: &ToolError) -> String {
    format!("Error: {e}\n Please fix your mistakes.")
}

impl ToolResult {
    /// The tool message the model sees for this result.
    pub fn to_message(&self) -> Message {
        self.clone().into_message()
    }

    /// [`Self::to_message`], moving the result's id, name and content into the message
    /// instead of copying them (a tools step of 10,000 calls makes 10,000 messages).
    pub fn into_message(self) -> Message {
        let (content, status, artifact, child) = match self.outcome {
            Ok(out) => (
                out.content,
                ToolStatus::Success,
                out.artifact,
                out.child_run,
            ),
            Err(e) => (Content::Text(error_text(&e)), ToolStatus::Error, None, None),
        };
        let mut m = Message::tool(content, self.tool_call_id, self.name, status);
        if let MessageKind::Tool { artifact: a, .. } = &mut m.kind {
            *a = artifact;
        }
        if let Some(c) = child {
            m.response_metadata
                .insert(CHILD_LOOP_ID.to_owned(), Value::String(c));
        }
        if let Some(r) = self.reasoning {
            m.response_metadata
                .insert(REASONING_FOR_CALL.to_owned(), Value::String(r));
        }
        m
    }

    /// Puts the call's reasoning, if any, in `m`'s `response_metadata`.
    pub fn keep_reasoning(&self, m: &mut Message) {
        if let Some(r) = &self.reasoning {
            m.response_metadata
                .insert(REASONING_FOR_CALL.to_owned(), Value::String(r.clone()));
        }
    }
}

/// What one run hands to every call.
#[derive(Clone, Default)]
pub struct RunContext {
    /// Cancel this to cancel every in-flight call of the run.
    pub cancel: CancellationToken,
    pub progress: Option<ProgressFn>,
    pub state: Option<Arc<Value>>,
    pub host: Option<Arc<dyn Any + Send + Sync>>,
    /// The caller drives the run on its own thread (a sync host call): a call may then
    /// run on that thread instead of being handed to another (see
    /// `ToolContext::inline`).
    pub inline: bool,
    /// Set when the run must start no new call (a new input steers it,
    /// `multitask_strategy="interrupt"`): calls not started by then are answered
    /// with a `Skipped` error; calls under way finish.
    pub steer: Option<Steer>,
    /// Watches every call's start, updates and end (the `tools` stream mode).
    pub events: Option<CallEvents>,
    /// Makes a span per call when the run is traced.
    pub tracer: Option<Arc<dyn CallTracer>>,
    /// Every call of the run waits only for work done elsewhere (a host's thread pool
    /// or event loop), never computes on the runtime: a call that has to wait is then
    /// polled by the task running `execute` instead of being spawned as a task of its
    /// own (see `run_concurrently`), which saves a task, its scheduling and a wake-up
    /// of another worker per call. Ignored under `max_concurrency`.
    pub local: bool,
}

/// A run's "start nothing new" flag: set by a newer run on the same thread that
/// steers it; read before each call starts (an atomic load, no lock).
#[derive(Clone, Default, Debug)]
pub struct Steer(Arc<AtomicBool>);

impl Steer {
    pub fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Why a call was skipped when its run was steered.
pub const STEERED: &str = "a new user message arrived before this call started, so it was \
                           skipped; the conversation continues with that message";

struct Shared {
    registry: Arc<ToolRegistry>,
    hooks: Vec<Arc<dyn Hooks>>,
    default_timeout: Option<Duration>,
}

/// Executes tool calls through a registry. Cloning is cheap.
#[derive(Clone)]
pub struct Executor {
    shared: Arc<Shared>,
    strategy: Strategy,
    run_timeout: Option<Duration>,
}

impl Executor {
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Executor {
            shared: Arc::new(Shared {
                registry,
                hooks: Vec::new(),
                default_timeout: None,
            }),
            strategy: Strategy::default(),
            run_timeout: None,
        }
    }

    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.shared.registry
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    pub fn with_strategy(mut self, s: Strategy) -> Self {
        self.strategy = s;
        self
    }

    pub fn with_hook(mut self, h: Arc<dyn Hooks>) -> Self {
        self.shared_mut().hooks.push(h);
        self
    }

    /// A time limit for each call of a tool that sets none of its own.
    pub fn with_default_timeout(mut self, t: Duration) -> Self {
        self.shared_mut().default_timeout = Some(t);
        self
    }

    /// A time limit for all the calls of one `execute` together.
    pub fn with_run_timeout(mut self, t: Duration) -> Self {
        self.run_timeout = Some(t);
        self
    }

    fn shared_mut(&mut self) -> &mut Shared {
        if Arc::get_mut(&mut self.shared).is_none() {
            let s = &self.shared;
            self.shared = Arc::new(Shared {
                registry: s.registry.clone(),
                hooks: s.hooks.clone(),
                default_timeout: s.default_timeout,
            });
        }
        Arc::get_mut(&mut self.shared).expect("unique after copy")
    }

    /// Runs `calls` and returns one result per call, in call order.
    pub async fn execute(&self, calls: &[ToolCall], run: &RunContext) -> Vec<ToolResult> {
        if calls.is_empty() {
            return Vec::new();
        }
        let sem = match self.strategy {
            Strategy::Parallel {
                max_concurrency: Some(n),
            } => Some(Arc::new(Semaphore::new(n.max(1)))),
            _ => None,
        };
        let env = Arc::new(CallEnv {
            shared: self.shared.clone(),
            progress: run.progress.clone(),
            state: run.state.clone(),
            host: run.host.clone(),
            deadline: self.run_timeout.map(|t| (Instant::now() + t, t)),
            inline: run.inline && !self.any_limit(calls),
            alone: calls.len() == 1 || matches!(self.strategy, Strategy::Sequential),
            local: run.local && sem.is_none(),
            sem,
            // One token per call (its `ctx.cancel`), independent of the run's: the
            // calls never touch the run's token, whose lock every call of a large
            // message would contend for. This future watches the run's token once
            // and cancels the calls' tokens when it fires.
            tokens: calls.iter().map(|_| CancellationToken::new()).collect(),
            cancelled: AtomicBool::new(false),
            steer: run.steer.clone(),
            events: run.events.clone(),
            tracer: run.tracer.clone(),
        });
        if run.cancel.is_cancelled() {
            env.cancel_all();
        }
        let work = self.dispatch(calls, &env, &run.cancel);
        tokio::pin!(work);
        tokio::select! {
            biased;
            out = &mut work => out,
            _ = run.cancel.cancelled() => {
                env.cancel_all();
                work.await
            }
        }
    }

    /// Whether a call of `calls` runs under a time limit (its tool's, the executor's
    /// default or the run's). Then no call of them runs on the driving thread: a
    /// call there cannot be timed out, and while it runs nothing polls the timers of
    /// its siblings either, whose limits would then be seen only once it returned.
    fn any_limit(&self, calls: &[ToolCall]) -> bool {
        self.run_timeout.is_some()
            || self.shared.default_timeout.is_some()
            || self
                .shared
                .registry
                .any_timeout(calls.iter().map(|c| c.name.as_str()))
    }

    /// `cancel` is the run's token: read between sequential calls, where a call that
    /// ran inline (sync code on the caller's thread) gave `execute` no chance to see
    /// it fire (one call at a time: nobody contends for its lock).
    async fn dispatch(
        &self,
        calls: &[ToolCall],
        env: &Arc<CallEnv>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        match self.strategy {
            Strategy::Sequential => {
                let mut out = Vec::with_capacity(calls.len());
                for (i, c) in calls.iter().enumerate() {
                    if i > 0 && !env.run_cancelled() && cancel.is_cancelled() {
                        env.cancel_all();
                    }
                    let outcome = run_one(env, i, c, c.arguments.clone()).await;
                    out.push(ToolResult {
                        tool_call_id: c.id.clone(),
                        name: c.name.clone(),
                        outcome,
                        reasoning: call_reasoning(c),
                    });
                }
                out
            }
            Strategy::Parallel { .. } => run_concurrently(calls, 0, env).await,
            Strategy::Batched { size } => {
                let size = size.max(1);
                let mut out = Vec::with_capacity(calls.len());
                for (k, chunk) in calls.chunks(size).enumerate() {
                    out.extend(run_concurrently(chunk, k * size, env).await);
                }
                out
            }
        }
    }
}

/// Runs `calls` (the calls `first..` of the message) all at once, within
/// `env.sem`'s bound, and returns their results in call order.
///
/// Each call starts on this task: it is polled once right here, and only a call
/// that then has to wait (I/O, a timer, a thread, the Python event loop) is spawned
/// as a task of its own, to finish concurrently on any worker. A call that is done
/// at once (a quick tool, and every call refused before it runs: unknown tool, bad
/// arguments, blocked, cancelled) so costs no task. A tool that computes for long
/// without awaiting runs that computation on this task, one call after another:
/// such a tool should move it to `tokio::task::spawn_blocking`. With
/// [`RunContext::local`] a call that has to wait stays on this task, polled (when
/// woken) beside the other waiting calls.
async fn run_concurrently(calls: &[ToolCall], first: usize, env: &Arc<CallEnv>) -> Vec<ToolResult> {
    let mut done: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
    let mut waiting = AbortOnDrop(Vec::new());
    // Dropped with this future (a cancelled run): the calls in it are dropped too.
    let mut local = FuturesUnordered::new();
    // Without hooks nobody reads a call's arguments after the tool has them, so the
    // call's own copy hands them over instead of copying them again.
    let take_args = env.shared.hooks.is_empty();
    let mut spare = None;
    for (i, c) in calls.iter().enumerate() {
        let permit = match &env.sem {
            Some(s) => Some(
                s.clone()
                    .acquire_owned()
                    .await
                    .expect("semaphore never closed"),
            ),
            None => None,
        };
        let call = owned_call(env.clone(), first + i, c.clone(), take_args, permit);
        // The box of a call that was done at once is reused for the next call: a step
        // of quick calls makes one allocation for their futures, not one each.
        let mut fut = boxed_in(&mut spare, call);
        match futures::poll!(fut.as_mut()) {
            Poll::Ready(r) => {
                done.push(Some(r));
                spare = Some(fut);
            }
            Poll::Pending => {
                done.push(None);
                if env.local {
                    local.push(async move { (i, fut.await) });
                } else {
                    waiting.0.push((i, tokio::spawn(fut)));
                }
            }
        }
    }
    while let Some((i, r)) = local.next().await {
        done[i] = Some(r);
    }
    for (i, handle) in waiting.0.iter_mut() {
        let call = &calls[*i];
        let r = handle.await.unwrap_or_else(|e| {
            let tool = call.name.clone();
            let outcome = if e.is_cancelled() {
                Err(ToolError::cancelled(tool))
            } else {
                Err(ToolError::failed(tool, "the call's task panicked"))
            };
            ToolResult {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                outcome,
                reasoning: call_reasoning(call),
            }
        });
        done[*i] = Some(r);
    }
    waiting.0.clear();
    done.into_iter()
        .map(|r| r.expect("every call has its result"))
        .collect()
}

/// `fut` in `spare`'s box (taken), or in a new one.
fn boxed_in<F: Future>(spare: &mut Option<Pin<Box<F>>>, fut: F) -> Pin<Box<F>> {
    match spare.take() {
        Some(mut b) => {
            b.as_mut().set(fut);
            b
        }
        None => Box::pin(fut),
    }
}

/// One call as a future that owns what it uses, so that it can become a task.
async fn owned_call(
    env: Arc<CallEnv>,
    index: usize,
    mut call: ToolCall,
    take_args: bool,
    _permit: Option<OwnedSemaphorePermit>,
) -> ToolResult {
    let reasoning = call_reasoning(&call);
    let args = if take_args {
        std::mem::take(&mut call.arguments)
    } else {
        call.arguments.clone()
    };
    let outcome = run_one(&env, index, &call, args).await;
    ToolResult {
        tool_call_id: call.id,
        name: call.name,
        outcome,
        reasoning,
    }
}

/// What every call of one `execute` shares.
struct CallEnv {
    shared: Arc<Shared>,
    progress: Option<ProgressFn>,
    state: Option<Arc<Value>>,
    host: Option<Arc<dyn Any + Send + Sync>>,
    /// When the run's time is up, and the run's whole limit (for the error).
    deadline: Option<(Instant, Duration)>,
    /// Calls may run on the driving thread (see `RunContext::inline`): off when any
    /// call of the message has a time limit (see `Executor::any_limit`).
    inline: bool,
    /// No call waits behind another (see `ToolContext::alone`).
    alone: bool,
    /// Calls that wait are polled here, not spawned (see [`RunContext::local`]).
    local: bool,
    /// `Parallel { max_concurrency: Some(_) }`'s permits.
    sem: Option<Arc<Semaphore>>,
    /// Each call's `ctx.cancel`, by call index.
    tokens: Vec<CancellationToken>,
    /// Set when the run is cancelled, before the calls' tokens are.
    cancelled: AtomicBool,
    /// See [`RunContext::steer`].
    steer: Option<Steer>,
    events: Option<CallEvents>,
    tracer: Option<Arc<dyn CallTracer>>,
}

impl CallEnv {
    fn cancel_all(&self) {
        // The flag first: a call that has not started must see the run as cancelled
        // even if a sibling's cancellation frees its turn at once.
        self.cancelled.store(true, Ordering::SeqCst);
        for t in &self.tokens {
            t.cancel();
        }
    }

    fn run_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// Aborts spawned calls when `execute` is dropped before they finish, so a cancelled
/// run leaves nothing running behind it.
struct AbortOnDrop(Vec<(usize, JoinHandle<ToolResult>)>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for (_, h) in &self.0 {
            h.abort();
        }
    }
}

/// Arguments as the tool receives them: an object. A string is parsed (providers
/// stream arguments as text; an empty string means no arguments).
fn normalize_args(tool: &str, args: Value) -> Result<Value, ToolError> {
    let args = match args {
        Value::Null => return Ok(Value::Object(Map::new())),
        Value::String(s) if s.trim().is_empty() => return Ok(Value::Object(Map::new())),
        Value::String(s) => serde_json::from_str(&s).map_err(|e| ToolError::InvalidArgs {
            tool: tool.to_owned(),
            reason: format!("arguments are not valid JSON ({e}): {s}"),
        })?,
        v => v,
    };
    match args {
        Value::Object(_) => Ok(args),
        other => Err(ToolError::InvalidArgs {
            tool: tool.to_owned(),
            reason: format!(
                "arguments must be a JSON object, got {}",
                crate::tool::json_kind(&other)
            ),
        }),
    }
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// A call's span until the call ends: given back to the tracer with the outcome, or,
/// when the call's future is dropped before it ends (its run cancelled or dropped),
/// with a `Cancelled` outcome, so that no span is left open.
struct SpanGuard<'a> {
    tracer: &'a dyn CallTracer,
    call: &'a ToolCall,
    span: Option<CallSpan>,
}

impl SpanGuard<'_> {
    fn end(mut self, outcome: &Result<ToolOutput, ToolError>) {
        if let Some(span) = self.span.take() {
            self.tracer.ended(span, self.call, outcome);
        }
    }
}

impl Drop for SpanGuard<'_> {
    fn drop(&mut self) {
        if let Some(span) = self.span.take() {
            let outcome = Err(ToolError::cancelled(self.call.name.clone()));
            self.tracer.ended(span, self.call, &outcome);
        }
    }
}

/// Runs call `index` and shows its outcome to the after hooks. `args` is the call's
/// arguments, handed over by the caller (copied or moved out of its own copy).
async fn run_one(
    env: &CallEnv,
    index: usize,
    call: &ToolCall,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let started = env.events.as_ref().map(|ev| {
        // The label is only looked up for whoever watches the calls.
        let entry = env.shared.registry.resolve(&call.name).ok();
        let label = entry.as_ref().and_then(|e| e.tool.label());
        ev(CallEvent::Start {
            call,
            args: &args,
            label,
        });
        Instant::now()
    });
    let span = env.tracer.as_deref().map(|tracer| SpanGuard {
        tracer,
        call,
        span: tracer.started(call),
    });
    let call_span = span.as_ref().and_then(|g| g.span.clone());
    // A panicking hook costs its call, never the whole message.
    let outcome = AssertUnwindSafe(async {
        let outcome = call_outcome(env, index, call, args, call_span).await;
        for h in &env.shared.hooks {
            h.after(call, &outcome);
        }
        outcome
    })
    .catch_unwind()
    .await
    .unwrap_or_else(|p| {
        Err(ToolError::failed(
            call.name.clone(),
            format!("a hook panicked: {}", panic_message(&*p)),
        ))
    });
    if let Some(g) = span {
        g.end(&outcome);
    }
    if let (Some(ev), Some(t0)) = (&env.events, started) {
        ev(CallEvent::End {
            call,
            outcome: &outcome,
            duration: t0.elapsed(),
        });
    }
    outcome
}

/// `r` with the run the call said it started (`ToolContext::set_child_run`), unless
/// the tool put one on its output itself.
fn with_child_run(
    r: Result<ToolOutput, ToolError>,
    child_run: &ChildRun,
) -> Result<ToolOutput, ToolError> {
    r.map(|mut out| {
        if out.child_run.is_none() {
            out.child_run = child_run.get().cloned();
        }
        out
    })
}

/// Cancels a call's token when the call ends without the tool's own result (timeout,
/// cancellation, panic, or the `execute` future dropped), so that work the tool left
/// running (e.g. on a blocking thread) is told to stop.
struct CancelUnlessDone<'a> {
    token: &'a CancellationToken,
    done: bool,
}

impl Drop for CancelUnlessDone<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.token.cancel();
        }
    }
}

async fn call_outcome(
    env: &CallEnv,
    index: usize,
    call: &ToolCall,
    args: Value,
    span: Option<CallSpan>,
) -> Result<ToolOutput, ToolError> {
    let name = &call.name;
    let cancelled = || Err(ToolError::cancelled(name.clone()));
    if env.run_cancelled() {
        return cancelled();
    }
    if env.steer.as_ref().is_some_and(Steer::is_set) {
        return Err(ToolError::Skipped {
            tool: name.clone(),
            reason: STEERED.into(),
        });
    }
    let shared = &*env.shared;
    for h in &shared.hooks {
        if let BeforeAction::Skip(reason) = h.before(call) {
            return Err(ToolError::Blocked {
                tool: name.clone(),
                reason: format!("skipped by a before hook: {reason}"),
            });
        }
    }
    let entry = shared.registry.resolve(name)?;
    let args = normalize_args(name, args)?;
    entry.validate(&args)?;

    let limit = entry.tool.timeout().or(shared.default_timeout);
    // The effective limit is the tool's own or what is left of the run's, whichever
    // ends first; the error reports the limit that was hit.
    let remaining = env
        .deadline
        .map(|(d, total)| (d.saturating_duration_since(Instant::now()), total));
    let (limit, reported) = match (limit, remaining) {
        (Some(l), Some((r, total))) if r < l => (Some(r), total.as_secs_f64()),
        (None, Some((r, total))) => (Some(r), total.as_secs_f64()),
        (l, _) => (l, l.map(|d| d.as_secs_f64()).unwrap_or(0.0)),
    };
    if limit == Some(Duration::ZERO) {
        return Err(ToolError::Timeout {
            tool: name.clone(),
            seconds: reported,
        });
    }

    let token = &env.tokens[index];
    let ctx = ToolContext {
        tool_call_id: call.id.clone(),
        tool_name: name.clone(),
        cancel: token.clone(),
        progress: env.progress.clone(),
        state: env.state.clone(),
        host: env.host.clone(),
        // Never a call with a time limit: one that runs on the driving thread cannot
        // be timed out (`env.inline` is off for a message with any such call).
        inline: env.inline && limit.is_none(),
        alone: env.alone,
        events: env.events.clone(),
        span,
        label: entry.tool.label().map(Arc::from),
        child_run: ChildRun::default(),
    };
    let child_run = ctx.child_run.clone();
    let panicked = |p: Box<dyn Any + Send>| {
        Err(ToolError::failed(
            name.clone(),
            format!("panicked: {}", panic_message(&*p)),
        ))
    };
    // A tool whose `call` panics before it returns its future is isolated too.
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call(args, ctx))) {
        Ok(fut) => AssertUnwindSafe(fut).catch_unwind(),
        Err(p) => return panicked(p),
    };
    // Boxed so that a call without a limit does not carry a timer in its state.
    let sleep = limit.map(|l| Box::pin(tokio::time::sleep(l)));
    let timeout = async {
        match sleep {
            Some(s) => s.await,
            None => std::future::pending().await,
        }
    };
    let mut guard = CancelUnlessDone { token, done: false };
    // The tool first, so that a tool that is done at once never registers with its
    // token or timer.
    tokio::select! {
        biased;
        r = fut => match r {
            // Once the run is cancelled the call is reported cancelled, even if the
            // tool noticed (through `ctx.cancel`) and returned something of its own.
            _ if env.run_cancelled() => cancelled(),
            Ok(r) => {
                guard.done = true;
                with_child_run(r, &child_run)
            }
            Err(p) => panicked(p),
        },
        _ = token.cancelled() => cancelled(),
        _ = timeout => Err(ToolError::Timeout { tool: name.clone(), seconds: reported }),
    }
}
