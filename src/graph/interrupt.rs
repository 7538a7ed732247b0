//! Interrupts surfaced to the caller, and the ids of static ones.
//!
//! A node's `interrupt()` is identified by its task id. A pause before or after a
//! node (`interrupt_before` / `interrupt_after`) gets an id made from a prefix and the
//! task (before) or checkpoint (after) it belongs to; the host tells them apart by it.

use super::value::Val;

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
    /// A node's `interrupt(value)` in task `task_id`.
    pub(crate) fn node(task_id: &str, node: &str, value: Val) -> Self {
        InterruptInfo {
            id: task_id.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            InterruptInfo::node("t1", "a", Val::Json(1.into())).kind(),
            InterruptKind::Node
        );
    }
}
