//! Pending writes: what the tasks of an unfinished step saved.
//!
//! In a step of several tasks, each task's output is saved as soon as it finishes
//! (as pending writes against the step's parent checkpoint, ending with a
//! [`Reserved::Done`] marker), so that a crash, a failed sibling or an interrupt does
//! not run it again. A task's `interrupt()` is saved the same way, and so is the value
//! a `Command(resume=...)` answers it with. The step's checkpoint makes them obsolete.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::codec::encode;
use super::engine::{Graph, Task};
use super::error::GraphError;
use super::guard::TimeoutPolicy;
use super::interrupt::interrupt_id;
use super::nested::{self, decode_nested, encode_nested, nested_of};
use super::reserved::Reserved;
use super::run::Resume;
use super::spec::{Goto, NodeOutput, END, START};
use super::value::Val;
use crate::checkpoint::{
    child_ns, task_groups, CheckpointRecord, Checkpointer, PendingWrite, TaskRecord, Write,
};

/// The task id of writes no task made (a resume's `update`), as LangGraph's
/// `NULL_TASK_ID`: no task of a step has it.
const NULL_TASK: &str = "00000000-0000-0000-0000-000000000000";

/// The pending writes of the step a run continues, by task.
#[derive(Default)]
pub(super) struct Pending {
    /// Pending writes by task id, in the order they were saved.
    by_task: HashMap<String, Vec<PendingWrite>>,
    /// The values each task's `interrupt()` calls resume with, in order.
    resume: HashMap<String, Vec<Val>>,
    /// The answers by id a task's last answer gave to the questions of a graph nested
    /// in it (see `graph::nested`): its place in `resume` holds `null`.
    nested: HashMap<String, Vec<(String, Val)>>,
    /// What the calls tasks made returned, by call id (see `run::calls`).
    returns: Arc<HashMap<String, super::run::CallSaved>>,
}

/// How a resume's ids are read: the run's namespace, under which each task's
/// question has its id (see [`interrupt_id`]), and whether the resume is checked
/// strictly (see [`super::RunOptions::strict_resume`]).
pub(super) struct Asked<'a> {
    pub ns: &'a str,
    pub strict: bool,
}

/// What a task of the continued step left behind.
pub(super) enum Saved<'a> {
    /// It finished: its writes and gotos.
    Finished(&'a [PendingWrite]),
    /// Nothing that spares running it: it never ran, or it paused on an
    /// `interrupt()` (as LangGraph, a paused task runs again whenever the step is
    /// continued: its answered `interrupt()` calls return their resume values, and an
    /// unanswered one pauses it again).
    Nothing,
}

/// A resume value `assign` gave a task: the id of the question it answers when known,
/// the task's id, the value.
type Assigned = (Option<String>, String, Val);

/// What a `Command(resume=...)` gives one task.
enum Answer {
    /// The value its `interrupt()` returns.
    One(Val),
    /// Answers by id to the questions of a graph nested in it (see `graph::nested`).
    ById(Vec<(String, Val)>),
}

impl Pending {
    /// The pending writes saved against checkpoint `parent_id`.
    pub async fn load(
        graph: &Graph,
        cp: &dyn Checkpointer,
        thread: &str,
        parent_id: &str,
    ) -> Result<Pending, GraphError> {
        let mut p = Pending::default();
        for w in cp
            .pending_writes(thread, parent_id)
            .await
            .map_err(Graph::cp_err)?
        {
            p.by_task.entry(w.task_id.clone()).or_default().push(w);
        }
        let mut returns = HashMap::new();
        for (task, ws) in &p.by_task {
            for w in ws.iter().filter(|w| w.channel == Reserved::Return.as_str()) {
                returns.insert(
                    task.clone(),
                    super::run::CallSaved::decode(graph, &w.value)?,
                );
            }
            // The k-th answer, or the latest answer given again in its place.
            let mut answers: Vec<(usize, usize, &PendingWrite)> = ws
                .iter()
                .filter(|w| w.channel == Reserved::Resume.as_str())
                .map(|w| match replaced_answer(w.idx) {
                    Some((k, j)) => (k, j + 1, w),
                    None => (answer_of(w.idx), 0, w),
                })
                .collect();
            answers.sort_by_key(|(k, j, _)| (*k, *j));
            let mut values: Vec<Val> = Vec::new();
            for (k, _, w) in answers {
                let channel = Reserved::Resume.as_str();
                let v = match decode_nested(graph.codec.as_ref(), channel, &w.value)? {
                    Some(answers) => {
                        p.nested.insert(task.clone(), answers);
                        Val::Json(Value::Null)
                    }
                    None => {
                        p.nested.remove(task);
                        graph.codec.decode(channel, (*w.value).clone())?
                    }
                };
                if k < values.len() {
                    values[k] = v;
                } else {
                    values.push(v);
                }
            }
            p.resume.insert(task.clone(), values);
        }
        p.returns = Arc::new(returns);
        Ok(p)
    }

    /// A replay (LangGraph's time travel) runs the step's tasks again and asks their
    /// questions again: of what they saved, only the run's input (the writes of
    /// `next`'s `START` task) stays.
    pub fn replayed(&mut self, next: &[TaskRecord]) {
        let input: Vec<&str> = next
            .iter()
            .filter(|t| t.node == START)
            .map(|t| t.id.as_str())
            .collect();
        self.by_task.retain(|t, _| input.contains(&t.as_str()));
        self.resume.clear();
        self.nested.clear();
        self.returns = Arc::new(HashMap::new());
    }

    /// All the writes of the step's tasks that finished (their [`Reserved::Done`]
    /// markers included), as saved.
    pub fn finished(&self) -> Vec<PendingWrite> {
        let done = self.by_task.values().filter(|ws| is_finished(ws));
        done.flatten().cloned().collect()
    }

    /// What the calls of the step's tasks returned, by call id.
    pub fn returns(&self) -> Arc<HashMap<String, super::run::CallSaved>> {
        self.returns.clone()
    }

    /// The first of `next` (a checkpoint's tasks) paused on an `interrupt()` that no
    /// resume value answers yet.
    /// Failing that, the first whose answered `interrupt()` did not let it finish (a
    /// resume value its `response_schema` refused): a new answer replaces that one.
    pub fn first_unanswered<'t>(&self, next: &'t [TaskRecord]) -> Option<&'t str> {
        let with = |f: fn(&[PendingWrite]) -> bool| {
            next.iter()
                .find(|t| self.by_task.get(&t.id).is_some_and(|ws| f(ws)))
                .map(|t| t.id.as_str())
        };
        with(|ws| pending_interrupt(ws).is_some()).or_else(|| with(answered_unfinished))
    }

    /// Answers pending interrupts with `Command(resume=...)`: each value is saved (so a
    /// crash does not lose it) and handed to its task, whose interrupt no longer
    /// counts as pending, so the task runs again.
    pub async fn answer(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
        parent: &CheckpointRecord,
        r: Resume,
        asked: Asked<'_>,
    ) -> Result<(), GraphError> {
        // (question id, task id) of the tasks `f` picks: a task that a nested graph's
        // questions paused has one per question (see `graph::nested`).
        let tasks = |f: fn(&[PendingWrite]) -> bool| -> Vec<(String, String)> {
            self.by_task
                .iter()
                .filter(|(_, ws)| f(ws))
                .flat_map(|(t, ws)| {
                    let ids = last_question(ws).map(|w| nested::question_ids(asked.ns, t, w));
                    ids.into_iter().flatten().map(move |q| (q, t.clone()))
                })
                .collect()
        };
        let mut interrupted = tasks(|ws| pending_interrupt(ws).is_some());
        // A task whose last answer did not let it finish (its `response_schema`
        // refused it, the run failed) may be answered again, as LangGraph (which saves
        // no refused answer): by id always, by a lone value when nothing else waits.
        let reanswerable = tasks(answered_unfinished);
        if interrupted.is_empty() || !matches!(r, Resume::One(_)) {
            interrupted.extend(reanswerable);
        }
        interrupted.sort();
        let Some(assigned) = assign(r, interrupted, !parent.next.is_empty(), asked.strict)? else {
            return Ok(());
        };
        for (task, answer) in self.by_task_answered(assigned) {
            self.save_answer(cp, thread, parent, task, answer).await?;
        }
        Ok(())
    }

    /// The answers `assign` gave, by task: a task that a nested graph's questions
    /// paused gets those of its questions' answers by id, any other its one value.
    fn by_task_answered(&self, assigned: Vec<Assigned>) -> Vec<(String, Answer)> {
        let mut out: Vec<(String, Answer)> = Vec::new();
        for (q, task, v) in assigned {
            let nested = self
                .by_task
                .get(&task)
                .and_then(|ws| last_question(ws))
                .is_some_and(|w| nested_of(&w.value).is_some());
            match (q, nested) {
                (Some(q), true) => match out.iter_mut().find(|(t, _)| *t == task) {
                    Some((_, Answer::ById(m))) => m.push((q, v)),
                    _ => out.push((task, Answer::ById(vec![(q, v)]))),
                },
                _ => out.push((task, Answer::One(v))),
            }
        }
        out
    }

    /// Saves `answer` as task `task`'s next resume value (or, answering again, in
    /// place of its last one) and hands it to the task.
    async fn save_answer(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
        parent: &CheckpointRecord,
        task: String,
        answer: Answer,
    ) -> Result<(), GraphError> {
        let node = parent
            .next
            .iter()
            .find(|t| t.id == task)
            .map(|t| t.node.clone())
            .unwrap_or_default();
        let ws = self
            .by_task
            .get(&task)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let k = answers(ws);
        // Answering again: a fresh slot that replaces the last answer on load
        // (`put_writes` keeps the first write of a key, so none is overwritten).
        let again = answered_unfinished(ws).then(|| {
            let last = interrupts(ws) - 1;
            let tries = ws
                .iter()
                .filter(|w| replaced_answer(w.idx).is_some_and(|(k, _)| k == last))
                .count();
            (last, replace_idx(last, tries))
        });
        let channel = Reserved::Resume.as_str();
        let (value, v) = match answer {
            Answer::One(v) => (encode(channel, &v)?, v),
            Answer::ById(m) => {
                let value = encode_nested(channel, &m)?;
                self.nested.insert(task.clone(), m);
                (value, Val::Json(Value::Null))
            }
        };
        let w = PendingWrite {
            task_id: task.clone(),
            idx: again.map_or(resume_idx(k), |(_, idx)| idx),
            node,
            channel: channel.into(),
            value,
        };
        cp.put_writes(thread, &parent.id, vec![w.clone()])
            .await
            .map_err(Graph::cp_err)?;
        let values = self.resume.entry(task.clone()).or_default();
        match again {
            Some((last, _)) if last < values.len() => values[last] = v,
            _ => values.push(v),
        }
        self.by_task.entry(task).or_default().push(w);
        Ok(())
    }

    /// Saves the `update` of a `Command(resume=..., update=...)` against the continued
    /// checkpoint, as LangGraph's writes of no task (`NULL_TASK_ID`), after the ones
    /// earlier resumes of the same step saved: a crash does not lose it, and each
    /// update is applied once, however often the step pauses again.
    pub async fn save_update(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
        parent_id: &str,
        update: Vec<(String, Val)>,
    ) -> Result<(), GraphError> {
        let ws = update
            .iter()
            .map(|(c, v)| Ok((c.clone(), encode(c, v)?)))
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.save_null(cp, thread, parent_id, ws).await
    }

    /// Saves the gotos of a `Command(goto=...)` that continues the step, as
    /// [`Pending::save_update`] saves its update: each is one more task of the step
    /// however often it pauses again (see [`Pending::gotos`]), as LangGraph keeps them
    /// in the step's writes of no task.
    pub async fn save_gotos(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
        parent_id: &str,
        gotos: &[Goto],
    ) -> Result<(), GraphError> {
        let ws = gotos
            .iter()
            .map(|g| Ok((Reserved::Goto.as_str().to_owned(), goto_value(g)?)))
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.save_null(cp, thread, parent_id, ws).await
    }

    /// The gotos the step's continuing commands saved (see [`Pending::save_gotos`]),
    /// in order.
    pub fn gotos(&self, graph: &Graph) -> Result<Vec<Goto>, GraphError> {
        let mut ws: Vec<&PendingWrite> =
            self.by_task.get(NULL_TASK).into_iter().flatten().collect();
        ws.sort_by_key(|w| w.idx);
        ws.into_iter()
            .filter(|w| w.channel == Reserved::Goto.as_str())
            .map(|w| goto_of(graph, &w.value))
            .collect()
    }

    /// Saves `ws` (channel, encoded value) as writes of no task, after the ones saved
    /// before.
    async fn save_null(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
        parent_id: &str,
        update: Vec<(String, Arc<Value>)>,
    ) -> Result<(), GraphError> {
        if update.is_empty() {
            return Ok(());
        }
        let saved = self.by_task.entry(NULL_TASK.into()).or_default();
        let mut ws = Vec::with_capacity(update.len());
        for (channel, value) in update {
            ws.push(PendingWrite {
                task_id: NULL_TASK.into(),
                idx: (saved.len() + ws.len()) as i64,
                node: START.into(),
                channel,
                value,
            });
        }
        cp.put_writes(thread, parent_id, ws.clone())
            .await
            .map_err(Graph::cp_err)?;
        saved.extend(ws);
        Ok(())
    }

    /// The updates resumes of the continued step saved (see [`Pending::save_update`]),
    /// in order: the state the step's tasks run on has them applied.
    pub fn updates(&self, graph: &Graph) -> Result<Vec<(String, Val)>, GraphError> {
        let mut ws: Vec<&PendingWrite> =
            self.by_task.get(NULL_TASK).into_iter().flatten().collect();
        ws.sort_by_key(|w| w.idx);
        ws.into_iter()
            .filter(|w| w.channel != Reserved::Goto.as_str())
            .map(|w| {
                Ok((
                    w.channel.clone(),
                    graph.decode(&w.channel, (*w.value).clone())?,
                ))
            })
            .collect()
    }

    /// What task `task_id` left behind: finished once it saved [`Reserved::Done`]
    /// (whatever it was interrupted by before).
    pub fn saved(&self, task_id: &str) -> Saved<'_> {
        match self.by_task.get(task_id) {
            Some(ws) if is_finished(ws) => Saved::Finished(ws),
            _ => Saved::Nothing,
        }
    }

    /// Whether task `task_id` was answered after its last pause and has not run with
    /// that answer yet (see [`super::Nest::answer_waiting`]).
    pub fn answer_waiting(&self, task_id: &str) -> bool {
        self.by_task
            .get(task_id)
            .is_some_and(|ws| answered_unfinished(ws))
    }

    /// The failure of task `task_id` its node's error handler was to handle and has not
    /// finished handling (see [`handled_write`]), as text.
    pub fn handled_error(&self, task_id: &str) -> Option<String> {
        let ws = self.by_task.get(task_id)?;
        if is_finished(ws) {
            return None;
        }
        ws.iter()
            .find(|w| w.channel == Reserved::Error.as_str() && w.idx == HANDLED_IDX)
            .and_then(|w| w.value.as_str().map(str::to_owned))
    }

    /// The resume values for task `task_id`'s `interrupt()` calls.
    pub fn resume_values(&self, task_id: &str) -> Vec<Val> {
        self.resume.get(task_id).cloned().unwrap_or_default()
    }

    /// The answers by id task `task_id`'s last answer gave to the questions of a graph
    /// nested in it (none when it answered the task's own `interrupt()`).
    pub fn nested_answers(&self, task_id: &str) -> Vec<(String, Val)> {
        self.nested.get(task_id).cloned().unwrap_or_default()
    }

    /// The last question task `task_id` saved (answered or not), as LangGraph lists a
    /// checkpoint's task's interrupts from its pending writes.
    pub fn last_question_of(&self, task_id: &str) -> Option<&PendingWrite> {
        last_question(self.by_task.get(task_id)?)
    }

    /// Forgets everything: called once the step is checkpointed.
    pub fn clear(&mut self) {
        self.by_task.clear();
        self.resume.clear();
        self.nested.clear();
        // A step that saved no call results leaves the empty map shared, not a new
        // one allocated every step.
        if !self.returns.is_empty() {
            self.returns = Arc::default();
        }
    }
}

/// The `interrupt()` a task is paused on: with its k-th call answered by the k-th
/// resume value, the last interrupt when it has more interrupts than answers. A task
/// that finished has none.
fn pending_interrupt(ws: &[PendingWrite]) -> Option<&PendingWrite> {
    if is_finished(ws) || interrupts(ws) <= answers(ws) {
        return None;
    }
    last_question(ws)
}

/// How many `interrupt()` calls a task saved (questions asked again in place of one do
/// not count, see [`asked_again`]).
fn interrupts(ws: &[PendingWrite]) -> usize {
    ws.iter()
        .filter(|w| w.channel == Reserved::Interrupt.as_str() && asked_again(w.idx).is_none())
        .count()
}

/// How many of a task's `interrupt()` calls have an answer (answers given again in
/// place of one do not count).
fn answers(ws: &[PendingWrite]) -> usize {
    ws.iter()
        .filter(|w| w.channel == Reserved::Resume.as_str() && replaced_answer(w.idx).is_none())
        .count()
}

/// Whether a task that is not finished has every `interrupt()` answered: the run that
/// took the last answer failed with it.
fn answered_unfinished(ws: &[PendingWrite]) -> bool {
    let done = ws.iter().any(|w| w.channel == Reserved::Done.as_str());
    !done && interrupts(ws) > 0 && answers(ws) >= interrupts(ws)
}

/// Where the `idx` of answers given again start (far below any `resume_idx`).
const REPLACED: i64 = -(1 << 40);
/// How many times one answer can be given again.
const TRIES: i64 = 1 << 20;

/// The `idx` of the `j`-th answer given again in place of the `k`-th.
fn replace_idx(k: usize, j: usize) -> i64 {
    REPLACED - (k as i64) * TRIES - (j as i64).min(TRIES - 1)
}

/// `(k, j)` of an answer given again (see [`replace_idx`]), `None` for a first answer.
fn replaced_answer(idx: i64) -> Option<(usize, usize)> {
    (idx <= REPLACED).then(|| {
        let off = REPLACED - idx;
        ((off / TRIES) as usize, (off % TRIES) as usize)
    })
}

/// Where the `idx` of questions asked again start: below answers given again, above
/// [`ERROR_IDX`]. Only a nested graph's questions are (see `graph::nested`): a task
/// paused again at its `k`-th question by other questions (the nested graph's state
/// was updated or replayed) keeps the new ones beside the first, whose write
/// `put_writes` keeps.
const ASKED_AGAIN: i64 = -(1 << 45);

/// The `idx` of the `j`-th question asked again in place of the `k`-th.
pub(super) fn asked_again_idx(k: usize, j: usize) -> i64 {
    ASKED_AGAIN - (k as i64) * TRIES - (j as i64).min(TRIES - 1)
}

/// `(k, j)` of a question asked again (see [`asked_again_idx`]), `None` for a first.
fn asked_again(idx: i64) -> Option<(usize, usize)> {
    (idx <= ASKED_AGAIN && idx > ERROR_IDX).then(|| {
        let off = ASKED_AGAIN - idx;
        ((off / TRIES) as usize, (off % TRIES) as usize)
    })
}

/// Where a question write stands among its task's: which question it is, and which
/// time it was asked (0 the first).
pub(super) fn question_order(idx: i64) -> (usize, usize) {
    asked_again(idx).map_or((question_of(idx), 0), |(k, j)| (k, j + 1))
}

/// Which answer a first answer's `idx` is (see [`resume_idx`]).
fn answer_of(idx: i64) -> usize {
    ((-2 - idx) / 2).max(0) as usize
}

/// What a task of a step left in the step's pending writes, as `get_state` reports
/// it (LangGraph's task status).
pub struct TaskStatus<'a> {
    /// It finished (whatever it was interrupted by before).
    pub finished: bool,
    /// The question it asked last (an `interrupt()` write), answered or not.
    pub interrupt: Option<&'a PendingWrite>,
    /// Its channel writes, in order (empty unless finished).
    pub output: Vec<&'a PendingWrite>,
    /// The error it failed the run with, as text (see [`error_write`]).
    pub error: Option<&'a str>,
}

impl<'a> TaskStatus<'a> {
    /// The status of task `task_id` among a step's pending writes.
    pub fn of(task_id: &str, pending: &'a [PendingWrite]) -> TaskStatus<'a> {
        let ws: Vec<&PendingWrite> = pending.iter().filter(|w| w.task_id == task_id).collect();
        let finished = ws.iter().any(|w| w.channel == Reserved::Done.as_str());
        TaskStatus {
            finished,
            interrupt: last_question_of(ws.iter().copied()),
            error: ws
                .iter()
                .find(|w| w.channel == Reserved::Error.as_str())
                .and_then(|w| w.value.as_str()),
            output: ws
                .into_iter()
                .filter(|w| finished && Reserved::parse(&w.channel).is_none())
                .collect(),
        }
    }

    /// The question still waiting for an answer: a finished task has none.
    pub fn pending_interrupt(&self) -> Option<&'a PendingWrite> {
        self.interrupt.filter(|_| !self.finished)
    }
}

/// Whether a task's pending writes `ws` show it finished (its [`Reserved::Done`]
/// marker), whatever it was interrupted by before.
fn is_finished(ws: &[PendingWrite]) -> bool {
    ws.iter().any(|w| w.channel == Reserved::Done.as_str())
}

/// The results of the tasks of `next` (a checkpoint's tasks) that `pending` (what the
/// checkpoint kept, see [`crate::checkpoint::KEPT_WRITES`]) does not show finished, as
/// finished tasks' pending writes, from `child`, the checkpoint that followed (whose
/// save dropped the step's other pending writes): a task ran to it when `child` is the
/// step's own (source `loop`), and its writes are those `child` records for it; an
/// update (LangGraph's `update_state(as_node=)`, a superstep of `bulk_update_state`)
/// stands for the task of the node it is made as, several updates as one node for its
/// tasks in order, as LangGraph's. The tasks of a node that ran several times (`Send`)
/// each have their group of writes (see [`crate::checkpoint::task_groups`]); when a
/// task of such a node wrote nothing, which group is whose cannot be told, and they
/// show no result. A run under durability `"exit"` that continued the step saves one
/// record, steps later, whose writes are not the step's: it tells nothing.
pub(super) fn step_results(
    record: &CheckpointRecord,
    child: &CheckpointRecord,
    pending: &[PendingWrite],
) -> Vec<PendingWrite> {
    let next = &record.next;
    let ran = child.source == "loop";
    if ran && child.step != record.step + 1 {
        return Vec::new();
    }
    let mut groups: HashMap<&str, Vec<&[Write]>> = HashMap::new();
    for g in task_groups(&child.writes) {
        groups.entry(g[0].node.as_str()).or_default().push(g);
    }
    // Each node's tasks in the order their writes were applied (see `write_order`);
    // updates go to them in the step's order, as LangGraph's.
    let mut by_node: Vec<(&str, Vec<&TaskRecord>)> = Vec::new();
    let mut order: Vec<&TaskRecord> = next.iter().collect();
    if ran {
        order.sort_by_key(|t| t.arg.is_some());
    }
    for t in order {
        match by_node.iter_mut().find(|(n, _)| *n == t.node) {
            Some((_, ts)) => ts.push(t),
            None => by_node.push((t.node.as_str(), vec![t])),
        }
    }
    let mut out = Vec::new();
    for (node, tasks) in by_node {
        let gs = groups.remove(node).unwrap_or_default();
        let own: Vec<Option<Vec<&Write>>> = if tasks.len() == 1 {
            vec![Some(gs.iter().flat_map(|g| g.iter()).collect())]
        } else if gs.len() == tasks.len() || !ran {
            let mut gs = gs.into_iter().map(|g| g.iter().collect());
            tasks.iter().map(|_| gs.next()).collect()
        } else if gs.is_empty() {
            tasks.iter().map(|_| Some(Vec::new())).collect()
        } else {
            continue;
        };
        for (t, writes) in tasks.into_iter().zip(own) {
            let Some(writes) = writes else { continue };
            let saved: Vec<PendingWrite> = pending
                .iter()
                .filter(|w| w.task_id == t.id)
                .cloned()
                .collect();
            if is_finished(&saved) || (writes.is_empty() && !ran) {
                continue;
            }
            out.extend(result_writes(t, writes));
        }
    }
    out
}

/// `writes` (a checkpoint's record of what task `t` wrote) as the pending writes of
/// `t` finished.
fn result_writes(t: &TaskRecord, writes: Vec<&Write>) -> Vec<PendingWrite> {
    let write = |idx: usize, channel: &str, value: Arc<Value>| PendingWrite {
        task_id: t.id.clone(),
        idx: idx as i64,
        node: t.node.clone(),
        channel: channel.to_owned(),
        value,
    };
    let mut out: Vec<PendingWrite> = writes
        .iter()
        .enumerate()
        .map(|(i, w)| write(i, &w.channel, w.value.clone()))
        .collect();
    out.push(write(
        out.len(),
        Reserved::Done.as_str(),
        Arc::new(Value::Null),
    ));
    out
}

/// The channel writes of the tasks of `next` (a checkpoint's tasks) that `pending`
/// shows finished, in the order a step applies its tasks' writes (edge-triggered
/// tasks by node name, then `Send` tasks as sent): what a step still under way has
/// produced so far.
pub(super) fn finished_so_far(
    graph: &Graph,
    next: &[TaskRecord],
    pending: &[PendingWrite],
) -> Result<Vec<(String, Val)>, GraphError> {
    let mut done: Vec<(usize, &TaskRecord, Vec<PendingWrite>)> = next
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let ws = pending.iter().filter(|w| w.task_id == t.id).cloned();
            (i, t, ws.collect::<Vec<_>>())
        })
        .filter(|(_, _, ws)| is_finished(ws))
        .collect();
    done.sort_by_cached_key(|(i, t, _)| {
        let sent = t.arg.is_some();
        (sent, if sent { String::new() } else { t.node.clone() }, *i)
    });
    let mut writes = Vec::new();
    for (_, _, ws) in done {
        writes.extend(restore_output(graph, &ws)?.writes);
    }
    Ok(writes)
}

/// The `idx` of a task's `k`-th `interrupt()` (counting from 0). The engine's writes
/// are negative so that they never share a key with a finished task's writes
/// (`0..n`); `put_writes` keeps one write per key, so saving the same one twice (a
/// retried call) stores it once.
pub(super) fn interrupt_idx(k: usize) -> i64 {
    -1 - 2 * k as i64
}

/// The `idx` of the value that answers a task's `k`-th `interrupt()`.
fn resume_idx(k: usize) -> i64 {
    -2 - 2 * k as i64
}

/// A finished task's output as pending writes: its channel writes, one
/// [`Reserved::Goto`] per goto, and the [`Reserved::Done`] marker.
pub(super) fn finished_writes(t: &Task, out: &NodeOutput) -> Result<Vec<PendingWrite>, GraphError> {
    let mut ws = Vec::with_capacity(out.writes.len() + out.goto.len() + 1);
    let write = |ws: &Vec<PendingWrite>, channel: &str, value: Arc<Value>| PendingWrite {
        task_id: t.id.clone(),
        idx: ws.len() as i64,
        node: t.node.clone(),
        channel: channel.to_owned(),
        value,
    };
    for (c, v) in &out.writes {
        ws.push(write(&ws, c, encode(c, v)?));
    }
    for g in &out.goto {
        ws.push(write(&ws, Reserved::Goto.as_str(), goto_value(g)?));
    }
    ws.push(write(&ws, Reserved::Done.as_str(), Arc::new(Value::Null)));
    Ok(ws)
}

/// A task's `interrupt(value)` as a pending write: its `k`-th (the task ran with `k`
/// resume values).
pub(super) fn interrupt_write(t: &Task, k: usize, value: &Val) -> Result<PendingWrite, GraphError> {
    Ok(PendingWrite {
        task_id: t.id.clone(),
        idx: interrupt_idx(k),
        node: t.node.clone(),
        channel: Reserved::Interrupt.as_str().into(),
        value: encode(Reserved::Interrupt.as_str(), value)?,
    })
}

/// Where a task's [`Reserved::Error`] write is kept: one per task (`put_writes` keeps
/// the first write of a key, so a task that fails again keeps its first error, as a
/// step's record), far below the `idx` of answers given again (see [`replace_idx`]).
const ERROR_IDX: i64 = -(1 << 50);

/// The error `text` task `t` failed the run with, as a pending write: LangGraph saves
/// one (`ERROR`), which `get_state` shows as the task's `error`, in the current status
/// and in the history alike.
pub(super) fn error_write(t: &Task, text: String) -> PendingWrite {
    error_at(t, ERROR_IDX, text)
}

/// Where a task's failure its node's error handler is to handle is kept: beside
/// [`ERROR_IDX`], so that a handler that fails the run too keeps both.
const HANDLED_IDX: i64 = ERROR_IDX - 1;

/// The error `text` task `t` failed with, which its node's error handler is to handle,
/// as a pending write: a run that stops before the handler finished resumes with the
/// handler, not the node (LangGraph's `ERROR_SOURCE_NODE`).
pub(super) fn handled_write(t: &Task, text: String) -> PendingWrite {
    error_at(t, HANDLED_IDX, text)
}

fn error_at(t: &Task, idx: i64, text: String) -> PendingWrite {
    PendingWrite {
        task_id: t.id.clone(),
        idx,
        node: t.node.clone(),
        channel: Reserved::Error.as_str().into(),
        value: Arc::new(Value::String(text)),
    }
}

/// A goto as a [`Reserved::Goto`] pending write keeps it.
fn goto_value(g: &Goto) -> Result<Arc<Value>, GraphError> {
    Ok(Arc::new(match g {
        Goto::Node(n) => json!({"node": n}),
        Goto::Send(n, a, None) => json!({"node": n, "arg": encode(Reserved::Send.as_str(), a)?}),
        Goto::Send(n, a, Some(t)) => json!({
            "node": n,
            "arg": encode(Reserved::Send.as_str(), a)?,
            "timeout": t.to_json(),
        }),
        Goto::End => json!({"node": END}),
    }))
}

/// The goto a [`Reserved::Goto`] pending write keeps (see [`goto_value`]).
fn goto_of(graph: &Graph, value: &Value) -> Result<Goto, GraphError> {
    let node = value["node"].as_str().unwrap_or(END).to_owned();
    Ok(match value.get("arg") {
        Some(a) => Goto::Send(
            node,
            graph.codec.decode(Reserved::Send.as_str(), a.clone())?,
            value.get("timeout").and_then(TimeoutPolicy::from_json),
        ),
        None => Goto::Node(node),
    })
}

/// The output of a finished task, back from its pending writes. Its join markers were
/// saved with its writes, so a restored task counts for its joins like one that ran.
pub(super) fn restore_output(graph: &Graph, ws: &[PendingWrite]) -> Result<NodeOutput, GraphError> {
    let mut out = NodeOutput::default();
    for w in ws {
        match Reserved::parse(&w.channel) {
            Some(Reserved::Goto) => out.goto.push(goto_of(graph, &w.value)?),
            Some(
                Reserved::Done
                | Reserved::Resume
                | Reserved::Interrupt
                | Reserved::Return
                | Reserved::Error,
            ) => {}
            // A channel write (`__send__` names no pending write, so it would be one too).
            Some(Reserved::Send) | None => out.writes.push((
                w.channel.clone(),
                graph.decode(&w.channel, (*w.value).clone())?,
            )),
        }
    }
    Ok(out)
}

/// The id of the question `w` (an `interrupt()` write) that task `task` of a run in
/// namespace `ns` asked: LangGraph's (see [`interrupt_id`]).
pub(super) fn question_id(ns: &str, task: &str, w: &PendingWrite) -> String {
    interrupt_id(&child_ns(ns, &w.node, task), question_of(w.idx))
}

/// A task's last `interrupt()` write, if it saved one.
pub(super) fn last_question(ws: &[PendingWrite]) -> Option<&PendingWrite> {
    last_question_of(ws.iter())
}

/// The last of the question writes among `ws` (the latest question, as last asked).
fn last_question_of<'a>(ws: impl Iterator<Item = &'a PendingWrite>) -> Option<&'a PendingWrite> {
    ws.filter(|w| w.channel == Reserved::Interrupt.as_str())
        .max_by_key(|w| question_order(w.idx))
}

/// Which of its task's questions an `interrupt()` write's `idx` is (see
/// [`interrupt_idx`]).
fn question_of(idx: i64) -> usize {
    ((-1 - idx) / 2).max(0) as usize
}

/// The error of one resume value while `n` interrupts are pending: LangGraph's own
/// sentence first (programs and LangGraph's tests match on it), then how to answer.
fn ambiguous_resume(n: usize) -> String {
    format!(
        "When there are multiple pending interrupts, you must specify the interrupt id \
         when resuming. {n} interrupts are pending: resume them by id with \
         Command(resume={{interrupt.id: value, ...}}) (ids in get_state(config).interrupts)"
    )
}

/// Which task each resume value answers, and which of its questions when known
/// (`interrupted`: the (question id, task id) of the tasks that may be answered,
/// sorted); `None` when there is nothing to answer
/// and the run just continues (paused at a static breakpoint: `next` is not empty).
/// Not `strict` (LangGraph's default), ids that are not pending are ignored and one
/// value for several questions is a plain `RuntimeError`.
fn assign(
    r: Resume,
    interrupted: Vec<(String, String)>,
    paused_at_breakpoint: bool,
    strict: bool,
) -> Result<Option<Vec<Assigned>>, GraphError> {
    let task_of = |id: &str| {
        interrupted
            .iter()
            .find(|(q, _)| q == id)
            .map(|(_, t)| t.clone())
    };
    let pending_ids = || interrupted.iter().map(|(q, _)| q.clone()).collect();
    Ok(Some(match r {
        Resume::Task(task, v) => vec![(None, task, v)],
        Resume::One(_) if interrupted.len() > 1 && !strict => {
            return Err(GraphError::AmbiguousResume(ambiguous_resume(
                interrupted.len(),
            )))
        }
        Resume::ById(m) if !strict => m
            .into_iter()
            .filter_map(|(id, v)| Some((task_of(&id)?, id, v)))
            .map(|(t, id, v)| (Some(id), t, v))
            .collect(),
        Resume::One(v) => match interrupted.len() {
            // Paused at a static breakpoint (`interrupt_before` / `after`): resuming
            // continues, as LangGraph (the value has no interrupt to answer).
            0 if paused_at_breakpoint => return Ok(None),
            0 => {
                return Err(GraphError::Config(
                    "Command(resume=...) but the thread is not paused: it has no task \
                     left to run"
                        .into(),
                ))
            }
            1 => {
                let (q, t) = interrupted[0].clone();
                vec![(Some(q), t, v)]
            }
            n => {
                return Err(GraphError::UnknownInterrupt {
                    message: ambiguous_resume(n),
                    reason: "ambiguous",
                    interrupt_ids: Vec::new(),
                    pending_ids: pending_ids(),
                })
            }
        },
        Resume::ById(m) if m.is_empty() => {
            return Err(GraphError::UnknownInterrupt {
                message: "The resume map names no interrupt: resume with \
                          Command(resume={interrupt.id: value, ...})"
                    .into(),
                reason: "empty_map",
                interrupt_ids: Vec::new(),
                pending_ids: pending_ids(),
            })
        }
        Resume::ById(m) => {
            let mut unknown: Vec<String> = m
                .iter()
                .map(|(id, _)| id.clone())
                .filter(|id| task_of(id).is_none())
                .collect();
            unknown.sort();
            if let Some(first) = unknown.first() {
                let interrupted: Vec<String> = pending_ids();
                return Err(GraphError::UnknownInterrupt {
                    message: format!(
                        "Unknown or already-consumed interrupt: {first} (answered \
                         already, or not this thread's); resume an interrupt still \
                         pending, by id: {interrupted:?} (get_state(config).interrupts)"
                    ),
                    reason: "not_pending",
                    interrupt_ids: unknown,
                    pending_ids: pending_ids(),
                });
            }
            m.into_iter()
                .filter_map(|(id, v)| Some((task_of(&id)?, id, v)))
                .map(|(t, id, v)| (Some(id), t, v))
                .collect()
        }
    }))
}
