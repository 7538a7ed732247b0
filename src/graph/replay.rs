//! Time travel through subgraphs: which checkpoint a graph run inside a task starts
//! from when its parent run goes back in time (LangGraph's `checkpoint_map` and
//! `ReplayState`).
//!
//! A subgraph keeps its checkpoints under its own namespace, so going back on the
//! parent's thread alone would give the subgraph its *latest* state, written after
//! the point travelled to. LangGraph's rule, kept here:
//! - a config that names a subgraph's checkpoint (with its `checkpoint_map`, the
//!   checkpoint ids of the enclosing graphs by namespace) runs the root graph from
//!   its entry in the map and each subgraph from its own;
//! - otherwise a replaying run's subgraph, the first time it runs, starts from its
//!   latest checkpoint made *before* the parent checkpoint the replay started from
//!   (none: it starts fresh), and later calls (a subgraph in a loop) from its latest.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::engine::Graph;
use super::error::GraphError;
use super::run::RunOptions;
use crate::checkpoint::{CheckpointRecord, Checkpointer};

/// What a replaying run tells the graph runs inside its tasks. Shared by reference
/// with every nested run of one root run, so "first visit" counts across them.
#[derive(Debug, Default)]
pub struct Replay {
    /// Checkpoint ids by namespace (LangGraph's `checkpoint_map`, without the root's
    /// `""` entry, which picked the root run's own checkpoint).
    map: BTreeMap<String, String>,
    /// The root checkpoint the replay started from, when it went back in history.
    before: Option<String>,
    /// The namespaces (task ids removed) whose first run has started.
    visited: Mutex<HashSet<String>>,
}

/// Where a nested run starts, as [`Replay::start_of`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayStart {
    /// At this checkpoint of its namespace, continuing it as it was.
    At(String),
    /// From its latest checkpoint older than this id (none: fresh), with new input.
    Before(String),
    /// As any run: from its latest checkpoint.
    Latest,
}

impl Replay {
    /// A replay from `map` (a config's `checkpoint_map`, root entry `""` included or
    /// not) that went back in history to `before` (`None`: it continues the thread).
    pub fn new(map: BTreeMap<String, String>, before: Option<String>) -> Self {
        let map = map.into_iter().filter(|(ns, _)| !ns.is_empty()).collect();
        Replay {
            map,
            before,
            visited: Mutex::new(HashSet::new()),
        }
    }

    /// Whether it changes anything for nested runs.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && self.before.is_none()
    }

    /// Where the nested run of namespace `ns` starts: the map names it exactly, or
    /// this is the first run of its subgraph (`ns` without task ids) in the replay.
    pub fn start_of(&self, ns: &str) -> ReplayStart {
        let stable = stable_ns(ns);
        let first = self
            .visited
            .lock()
            .map(|mut v| v.insert(stable.clone()))
            .unwrap_or(false);
        if !first {
            return ReplayStart::Latest;
        }
        if let Some(id) = self.map.get(ns) {
            return ReplayStart::At(id.clone());
        }
        match &self.before {
            Some(b) => ReplayStart::Before(b.clone()),
            None => ReplayStart::Latest,
        }
    }
}

impl Replay {
    /// This replay, going back in history to `before` as well.
    fn with_before(&self, before: String) -> Replay {
        Replay::new(self.map.clone(), Some(before))
    }
}

/// Makes a root run that goes back in history a replay, as LangGraph's: one that
/// names a checkpoint (`opts.checkpoint_id`) and does not answer an interrupt. Its
/// subgraphs start from before `start`, the checkpoint it loaded, or, when that one
/// was saved by `update_state` (a fork of history), from before the checkpoint the
/// update forked.
/// Whether the run travels back in time.
pub(super) fn note_replay(
    opts: &mut RunOptions,
    resuming: bool,
    start: Option<&CheckpointRecord>,
) -> bool {
    if opts.lent.is_some() || opts.checkpoint_id.is_none() || resuming {
        return false;
    }
    let Some(start) = start else { return false };
    let before = match start.source.as_str() {
        "update" | "fork" => start.parent_id.clone().unwrap_or_else(|| start.id.clone()),
        _ => start.id.clone(),
    };
    let replay = match &opts.replay {
        Some(r) => r.with_before(before),
        None => Replay::new(BTreeMap::new(), Some(before)),
    };
    opts.replay = Some(Arc::new(replay));
    true
}

/// A nested run's checkpoints record the checkpoints of the runs enclosing it in
/// their metadata's `parents` (LangGraph's), from which their configs get a
/// `checkpoint_map`.
pub(super) fn note_parents(opts: &mut RunOptions) {
    if opts.parents.is_empty() {
        return;
    }
    let parents: serde_json::Map<String, Value> = opts
        .parents
        .iter()
        .map(|(ns, id)| (ns.clone(), Value::String(id.clone())))
        .collect();
    let mut m = match std::mem::take(&mut opts.metadata) {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    m.insert("parents".into(), Value::Object(parents));
    opts.metadata = Value::Object(m);
}

/// For a nested run of a replay told to start before a point (`opts.start_before`):
/// sets `opts.checkpoint_id` to its namespace's latest checkpoint older than that
/// point. `true` when there is none: the run starts fresh.
pub(super) async fn start_before(
    cp: Option<&dyn Checkpointer>,
    thread: &str,
    opts: &mut RunOptions,
) -> Result<bool, GraphError> {
    let (Some(cp), Some(before)) = (cp, opts.start_before.as_deref()) else {
        return Ok(false);
    };
    // Checkpoint ids are UUIDv7s: their text orders them by the time they were made,
    // across namespaces.
    let records = cp.list(thread, None, None).await.map_err(Graph::cp_err)?;
    match records.into_iter().find(|r| r.id.as_str() < before) {
        Some(r) => {
            opts.checkpoint_id = Some(r.id);
            Ok(false)
        }
        None => Ok(true),
    }
}

/// A namespace without its task ids: `a:1|b:2` is `a|b` (node names hold no `:`).
pub fn stable_ns(ns: &str) -> String {
    ns.split('|')
        .map(|part| part.split_once(':').map_or(part, |(node, _)| node))
        .collect::<Vec<_>>()
        .join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_named_namespace_starts_at_its_checkpoint_once() {
        let r = Replay::new(map(&[("", "root"), ("sub", "s1")]), None);
        assert_eq!(r.start_of("sub"), ReplayStart::At("s1".into()));
        // The second call of the same subgraph (a loop) loads its latest.
        assert_eq!(r.start_of("sub"), ReplayStart::Latest);
    }

    #[test]
    fn other_subgraphs_start_from_before_the_replay_point_once() {
        let r = Replay::new(map(&[("sub:t1", "s1")]), Some("p".into()));
        assert_eq!(r.start_of("sub:t1"), ReplayStart::At("s1".into()));
        assert_eq!(r.start_of("other:t"), ReplayStart::Before("p".into()));
        // The same subgraph in a later task (a loop): its latest.
        assert_eq!(r.start_of("other:t2"), ReplayStart::Latest);
    }

    #[test]
    fn a_continuing_run_without_a_map_changes_nothing() {
        let r = Replay::new(map(&[("", "root")]), None);
        assert!(r.is_empty());
        assert_eq!(r.start_of("sub:t"), ReplayStart::Latest);
    }

    #[test]
    fn stable_ns_drops_each_segments_task_id() {
        assert_eq!(stable_ns("a:1|b:2:x"), "a|b");
        assert_eq!(stable_ns("a|b"), "a|b");
    }
}
