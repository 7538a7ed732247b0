//! Questions a graph nested in a task asked, and the answers handed down to it.
//!
//! A subgraph whose parallel tasks pause on `interrupt()`s pauses its parent's task on
//! all of them: LangGraph surfaces each question with its own id (made from the
//! nested task's namespace, see [`super::interrupt_id`]), and `Command(resume={id:
//! value, ...})` answers them one by one, whichever graph asked. So the parent task's
//! interrupt write keeps every nested question with its id, and its answer write the
//! answers by id, which the task's next run hands to the nested graph as its own
//! `Command(resume={id: value})` (see [`super::Nest::answers`]).
//!
//! Both writes hold `{"__ironloop_nested__": [[id, value], ...]}`, each value encoded
//! as the pending write's own would be. The key is reserved (see
//! [`super::tagged::is_reserved_key`]): the host's encoder escapes a dict of the
//! user's with such a key, so a question or answer of the user never reads as this.

use std::sync::Arc;

use serde_json::Value;

use super::codec::{encode, ValueCodec};
use super::engine::{Graph, Task};
use super::error::GraphError;
use super::pending::{asked_again_idx, interrupt_idx, question_id, question_order};
use super::reserved::Reserved;
use super::value::Val;
use crate::checkpoint::{Checkpointer, PendingWrite};

/// The one key of a nested questions (or answers) write.
const NESTED_KEY: &str = "__ironloop_nested__";

/// `qs` (id, value) as the value of a pending write on `channel`.
pub(super) fn encode_nested(channel: &str, qs: &[(String, Val)]) -> Result<Arc<Value>, GraphError> {
    let items = qs
        .iter()
        .map(|(id, v)| {
            let v = Arc::unwrap_or_clone(encode(channel, v)?);
            Ok(Value::Array(vec![Value::String(id.clone()), v]))
        })
        .collect::<Result<Vec<_>, GraphError>>()?;
    let mut m = serde_json::Map::with_capacity(1);
    m.insert(NESTED_KEY.to_owned(), Value::Array(items));
    Ok(Arc::new(Value::Object(m)))
}

/// The ids and encoded values a pending write's `value` keeps, when it is a nested
/// one (see [`encode_nested`]).
pub(super) fn nested_of(value: &Value) -> Option<Vec<(&str, &Value)>> {
    let Value::Object(m) = value else {
        return None;
    };
    let Some(Value::Array(items)) = m.get(NESTED_KEY).filter(|_| m.len() == 1) else {
        return None;
    };
    items
        .iter()
        .map(|item| match item.as_array().map(Vec::as_slice) {
            Some([Value::String(id), v]) => Some((id.as_str(), v)),
            _ => None,
        })
        .collect()
}

/// The ids of a nested write's questions (none for another write).
fn nested_ids(value: &Value) -> Vec<String> {
    nested_of(value)
        .into_iter()
        .flatten()
        .map(|(id, _)| id.to_owned())
        .collect()
}

/// A nested write's (id, value) pairs, decoded by `codec` as values of `channel`;
/// `None` for another write.
pub(super) fn decode_nested(
    codec: &dyn ValueCodec,
    channel: &str,
    value: &Value,
) -> Result<Option<Vec<(String, Val)>>, GraphError> {
    let Some(items) = nested_of(value) else {
        return Ok(None);
    };
    items
        .into_iter()
        .map(|(id, v)| Ok((id.to_owned(), codec.decode(channel, v.clone())?)))
        .collect::<Result<Vec<_>, GraphError>>()
        .map(Some)
}

/// The ids of the questions `w` (an `interrupt()` write of task `task`, in a run in
/// namespace `ns`) holds: its own, or the nested graph's it keeps.
pub(super) fn question_ids(ns: &str, task: &str, w: &PendingWrite) -> Vec<String> {
    match nested_of(&w.value) {
        Some(_) => nested_ids(&w.value),
        None => vec![question_id(ns, task, w)],
    }
}

/// The questions `w` (an `interrupt()` write of task `task`, in a run in namespace
/// `ns`) asks, with their ids, decoded by `codec`: its own, or the nested graph's it
/// keeps.
pub fn questions(
    codec: &dyn ValueCodec,
    ns: &str,
    task: &str,
    w: &PendingWrite,
) -> Result<Vec<(String, Val)>, GraphError> {
    let channel = Reserved::Interrupt.as_str();
    Ok(match decode_nested(codec, channel, &w.value)? {
        Some(qs) => qs,
        None => vec![(
            question_id(ns, task, w),
            codec.decode(channel, (*w.value).clone())?,
        )],
    })
}

/// The questions `qs` (id, value) of a graph nested in task `t`, paused at its `k`-th
/// question, as a pending write: at the `k`-th question's place, unless the step's
/// saved writes (`cp`, thread `thread`, checkpoint `parent_id`) hold other questions
/// there already (the nested graph's state was updated or replayed since, so its tasks
/// and their ids changed): then as those asked again, so that the new ids are the ones
/// answered (`put_writes` keeps the first write of a key, as LangGraph's replaces it).
pub(super) async fn interrupt_write(
    (cp, thread, parent_id): (&dyn Checkpointer, &str, &str),
    t: &Task,
    k: usize,
    qs: &[(String, Val)],
) -> Result<PendingWrite, GraphError> {
    let channel = Reserved::Interrupt.as_str();
    let saved = cp
        .pending_writes(thread, parent_id)
        .await
        .map_err(Graph::cp_err)?;
    let asked: Vec<&PendingWrite> = saved
        .iter()
        .filter(|w| w.task_id == t.id && w.channel == channel)
        .filter(|w| question_order(w.idx).0 == k)
        .collect();
    let ids: Vec<&str> = qs.iter().map(|(id, _)| id.as_str()).collect();
    let idx = match asked.iter().max_by_key(|w| question_order(w.idx)) {
        None => interrupt_idx(k),
        Some(w) if nested_ids(&w.value) == ids => w.idx,
        Some(_) => asked_again_idx(k, asked.len() - 1),
    };
    Ok(PendingWrite {
        task_id: t.id.clone(),
        idx,
        node: t.node.clone(),
        channel: channel.into(),
        value: encode_nested(channel, qs)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::JsonCodec;
    use serde_json::json;

    #[test]
    fn nested_writes_round_trip() {
        let qs = vec![
            ("a1".to_owned(), Val::Json(json!("A"))),
            ("b2".to_owned(), Val::Json(json!({"q": [1, 2]}))),
        ];
        let w = encode_nested("__interrupt__", &qs).unwrap();
        assert_eq!(nested_ids(&w), ["a1", "b2"]);
        let back = decode_nested(&JsonCodec, "__interrupt__", &w)
            .unwrap()
            .unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].0, "b2");
        assert_eq!(back[1].1.as_json(), Some(&json!({"q": [1, 2]})));
    }

    #[test]
    fn other_values_are_not_nested() {
        for v in [
            json!("A"),
            json!({"__ironloop_nested__": "x"}),
            json!({"__ironloop_nested__": [], "other": 1}),
            json!({"__ironloop_nested__": [["id"]]}),
        ] {
            assert!(nested_of(&v).is_none(), "{v}");
            assert!(nested_ids(&v).is_empty());
        }
    }
}
