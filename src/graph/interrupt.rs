//! Interrupts surfaced to the caller, and the ids of static ones.
//!
//! A node's `interrupt()` is identified as LangGraph identifies it (see
//! [`interrupt_id`]), so that an id a LangGraph program computes, or saved, names the
//! same question. A pause before or after a node (`interrupt_before` /
//! `interrupt_after`) gets an id made from a prefix and the task (before) or
//! checkpoint (after) it belongs to; the host tells them apart by it.

use xxhash_rust::xxh3::xxh3_128;

use super::value::Val;
use crate::checkpoint::child_ns;

const BEFORE: &str = "before:";
const AFTER: &str = "after:";

/// An interrupt surfaced to the caller.
#[derive(Debug, Clone)]
pub struct InterruptInfo {
    pub id: String,
    pub value: Val,
    pub node: String,
    pub task_id: String,
}

/// What paused the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptKind {
    /// A node called `interrupt(value)`; resuming delivers a value to it.
    Node,
    /// `interrupt_before`: the node has not run yet.
    Before,
    /// `interrupt_after`: the node ran and its step was checkpointed.
    After,
}

impl InterruptKind {
    /// The kind of the interrupt with id `id`.
    pub fn of(id: &str) -> InterruptKind {
        if id.starts_with(BEFORE) {
            InterruptKind::Before
        } else if id.starts_with(AFTER) {
            InterruptKind::After
        } else {
            InterruptKind::Node
        }
    }
}

impl InterruptInfo {
    /// A node's `interrupt(value)` in task `task_id`, asked with `answered` of its
    /// questions answered, in a run whose namespace is `run_ns`.
    pub(crate) fn node(
        run_ns: &str,
        task_id: &str,
        node: &str,
        answered: usize,
        value: Val,
    ) -> Self {
        InterruptInfo {
            id: interrupt_id(&child_ns(run_ns, node, task_id), answered),
            value,
            node: node.to_owned(),
            task_id: task_id.to_owned(),
        }
    }

    /// A pause before task `task_id` of `node` runs.
    pub(crate) fn before(task_id: &str, node: &str) -> Self {
        InterruptInfo {
            id: format!("{BEFORE}{task_id}"),
            value: Val::Json(serde_json::Value::Null),
            node: node.to_owned(),
            task_id: task_id.to_owned(),
        }
    }

    /// A pause after `node` ran, in the step checkpointed as `checkpoint_id` (which
    /// also stands as the task id).
    pub(crate) fn after(checkpoint_id: &str, node: &str) -> Self {
        InterruptInfo {
            id: format!("{AFTER}{checkpoint_id}"),
            value: Val::Json(serde_json::Value::Null),
            node: node.to_owned(),
            task_id: checkpoint_id.to_owned(),
        }
    }

    pub fn kind(&self) -> InterruptKind {
        InterruptKind::of(&self.id)
    }
}

/// The id of the question a task asks with `answered` of its questions answered
/// already, the task's checkpoint namespace being `task_ns` (`node:task_id`, below its
/// run's): LangGraph's, the xxh3-128 digest of the namespace, with `|<answered>`
/// appended past the first question. A task's second question gets an id of its own
/// (an answer to the first cannot be taken for it), and the same question asked again
/// after a crash or a retry gets the same id.
pub fn interrupt_id(task_ns: &str, answered: usize) -> String {
    let key = if answered == 0 {
        task_ns.to_owned()
    } else {
        format!("{task_ns}|{answered}")
    };
    format!("{:032x}", xxh3_128(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values are LangGraph's (`xxhash.xxh3_128_hexdigest`).
    #[test]
    fn node_ids_are_langgraphs() {
        assert_eq!(
            interrupt_id("ask:t1", 0),
            "e13053d3c1fd028fdf900de20cc1afcb"
        );
        assert_eq!(
            interrupt_id("ask:t1", 1),
            "a54f2b70f2c0b76eada5b2d60d1568d8"
        );
        assert_eq!(
            InterruptInfo::node("", "t1", "ask", 0, Val::Json(1.into())).id,
            interrupt_id("ask:t1", 0)
        );
    }

    #[test]
    fn ids_tell_the_kinds_apart() {
        assert_eq!(InterruptInfo::before("t1", "a").id, "before:t1");
        assert_eq!(InterruptInfo::after("c1", "a").id, "after:c1");
        assert_eq!(
            InterruptInfo::before("t1", "a").kind(),
            InterruptKind::Before
        );
        assert_eq!(InterruptInfo::after("c1", "a").kind(), InterruptKind::After);
        assert_eq!(
            InterruptInfo::node("", "t1", "a", 0, Val::Json(1.into())).kind(),
            InterruptKind::Node
        );
    }
}
