//! Calls a task makes while it runs: LangGraph's functional API, where an
//! `@entrypoint` (one node) calls `@task`s and waits for their futures.
//!
//! A call's result is saved as a pending write of the step ([`Reserved::Return`],
//! keyed by the call's id, which the host derives from the task's id and the call's
//! place among the task's calls) as soon as the call returns. When the step runs the
//! task again — resumed after an `interrupt()`, or continued after a crash — the
//! task's calls find their saved results and are not made again. The step's
//! checkpoint makes them obsolete, as it does every pending write.
//!
//! A call that paused on `interrupt()` ran again once resumed, and took some of its
//! task's resume values; its saved result says how many (`answers`), so that a later
//! attempt, which skips the call, gives the next `interrupt()` the value after them.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::super::codec::encode;
use super::super::engine::Graph;
use super::super::error::GraphError;
use super::super::reserved::Reserved;
use super::super::value::Val;
use super::saves::Saves;
use crate::checkpoint::PendingWrite;

/// What a task's calls find and where they save: see the module docs. Cheap to clone.
#[derive(Clone, Default)]
pub struct Calls {
    /// The results saved by calls of an earlier attempt of this step, by call id.
    saved: Arc<HashMap<String, Saved>>,
    /// Where results are saved: `None` in a run without a checkpointer.
    sink: Option<Sink>,
}

/// A call's saved result, and how many resume values its `interrupt()`s took.
#[derive(Clone, Debug)]
pub struct Saved {
    pub value: Val,
    pub answers: usize,
}

impl Saved {
    /// From a [`Reserved::Return`] pending write's value.
    pub(in crate::graph) fn decode(graph: &Graph, v: &Value) -> Result<Saved, GraphError> {
        let channel = Reserved::Return.as_str();
        Ok(Saved {
            value: graph.codec.decode(channel, v["value"].clone())?,
            answers: v["answers"].as_u64().unwrap_or(0) as usize,
        })
    }
}

#[derive(Clone)]
struct Sink {
    saves: Arc<Saves>,
    /// The checkpoint the step's pending writes are saved against.
    parent_id: String,
}

impl Calls {
    pub(super) fn new(
        saved: Arc<HashMap<String, Saved>>,
        saves: Option<Arc<Saves>>,
        parent_id: Option<&str>,
    ) -> Calls {
        let sink = match (saves, parent_id) {
            (Some(saves), Some(p)) => Some(Sink {
                saves,
                parent_id: p.to_owned(),
            }),
            _ => None,
        };
        Calls { saved, sink }
    }

    /// The result call `id` saved in an earlier attempt of the step, if it finished.
    pub fn saved(&self, id: &str) -> Option<&Saved> {
        self.saved.get(id)
    }

    /// Whether results are saved (the run has a checkpointer).
    pub fn durable(&self) -> bool {
        self.sink.is_some()
    }

    /// Saves what call `id` (of a task called `name`) returned, having taken
    /// `answers` resume values. Under the default durability this returns once the
    /// write is stored, so a crash after it does not make the call again.
    pub async fn record(
        &self,
        id: &str,
        name: &str,
        value: &Val,
        answers: usize,
    ) -> Result<(), GraphError> {
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        let w = PendingWrite {
            task_id: id.to_owned(),
            idx: 0,
            node: name.to_owned(),
            channel: Reserved::Return.as_str().into(),
            value: Arc::new(
                json!({"value": encode(Reserved::Return.as_str(), value)?, "answers": answers}),
            ),
        };
        sink.saves.writes(&sink.parent_id, vec![w], false).await
    }
}
