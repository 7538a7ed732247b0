//! Messages stored once per thread, in the saver's message table (see the `checkpoint`
//! module docs): how a record's writes and a snapshot refer to them, and how a load
//! reads them back.
//!
//! - A write to a messages channel is stored as `{"$m": [lo, hi]}`: its messages are
//!   the rows with keys `lo..=hi` (one row per message, in order), added by the record
//!   that holds the write ([`CheckpointRecord::messages`]).
//! - A snapshot holds, per messages channel, the key ranges of the rows the channel's
//!   messages are (`[[lo, hi], ...]`, in the channel's order: one range while the
//!   history is only appended to), and the next free key.
//! - Keys increase along a chain. A run knows which row each message of its channels
//!   is (by message id: a messages channel holds one message per id, the last one
//!   written with it) and takes new keys after the chain's last; a run that branches
//!   off an older checkpoint takes them after the thread's last
//!   ([`Checkpointer::last_message_key`]), so two branches never share a key.
//!
//! A write whose value is not such a reference (records written before the message
//! table) is read as it was.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::channel::{Channel, ChannelKind};
use super::engine::Graph;
use super::error::GraphError;
use super::value::Val;
use crate::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, MessageRow, Write};

/// The key of a reference to message rows, in a write's value.
const REF: &str = "$m";

/// Which row each message of a run's messages channels is, and the next free key.
#[derive(Clone, Default, Debug)]
pub(crate) struct MessageKeys {
    pub next: i64,
    /// By channel index: message id to the key of its row.
    by_id: HashMap<usize, imbl::HashMap<String, i64>>,
}

impl MessageKeys {
    fn note(&mut self, chan: usize, id: &str, key: i64) {
        self.by_id
            .entry(chan)
            .or_default()
            .insert(id.to_owned(), key);
        self.next = self.next.max(key + 1);
    }
}

/// The range `(lo, hi)` a write's value refers to, if it is a reference.
fn reference(v: &Value) -> Option<(i64, i64)> {
    let r = v
        .as_object()
        .filter(|o| o.len() == 1)?
        .get(REF)?
        .as_array()?;
    match r.as_slice() {
        [lo, hi] => Some((lo.as_i64()?, hi.as_i64()?)),
        _ => None,
    }
}

/// Consecutive keys as inclusive ranges, in order.
fn ranges(keys: impl IntoIterator<Item = i64>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for k in keys {
        match out.last_mut() {
            Some((_, hi)) if *hi + 1 == k => *hi = k,
            _ => out.push((k, k)),
        }
    }
    out
}

impl Graph {
    /// The indexes of the messages channels.
    fn messages_channel(&self, name: &str) -> Option<usize> {
        let i = self.names().iter().position(|n| n == name)?;
        matches!(self.kinds()[i], ChannelKind::Messages).then_some(i)
    }

    /// Moves the messages of `writes` (to messages channels) into rows with new keys,
    /// leaving references in their place; returns the rows, for the record to store.
    pub(super) fn message_rows(
        &self,
        writes: &mut [Write],
        keys: &mut MessageKeys,
    ) -> Result<Vec<MessageRow>, GraphError> {
        let mut rows = Vec::new();
        for w in writes.iter_mut() {
            let Some(chan) = self.messages_channel(&w.channel) else {
                continue;
            };
            let Value::Array(items) = &w.value else {
                continue;
            };
            if items.is_empty() {
                continue;
            }
            let lo = keys.next;
            for m in items {
                let key = keys.next;
                if let Some(id) = m.get("id").and_then(Value::as_str) {
                    keys.note(chan, id, key);
                }
                keys.next = key + 1;
                let text = serde_json::to_string(m).map_err(|e| {
                    GraphError::Checkpoint(CheckpointError::serialization(format!(
                        "cannot serialise a message written to {:?}: {e}",
                        w.channel
                    )))
                })?;
                rows.push((key, text));
            }
            w.value = json!({ REF: [lo, keys.next - 1] });
        }
        Ok(rows)
    }

    /// What a snapshot holds for the messages channels: `{"m": {channel: ranges},
    /// "mnext": key}`. A message whose row the run does not know (one a record written
    /// before the message table holds inline) gets a row now, in `rows`: from this
    /// snapshot on, the thread loads without reading its chain.
    pub(super) fn message_refs(
        &self,
        chans: &[Channel],
        keys: &mut MessageKeys,
        rows: &mut Vec<MessageRow>,
    ) -> Result<Value, GraphError> {
        let mut m = Map::new();
        for (i, (name, c)) in self.names().iter().zip(chans).enumerate() {
            if !matches!(self.kinds()[i], ChannelKind::Messages) {
                continue;
            }
            let Some(Val::Messages(list)) = &c.value else {
                continue;
            };
            let mut ks = Vec::with_capacity(list.len());
            for msg in list.iter() {
                let known = keys.by_id.get(&i).and_then(|ids| ids.get(&msg.id)).copied();
                let key = match known {
                    Some(k) => k,
                    None => {
                        let key = keys.next;
                        let text = serde_json::to_string(&**msg).map_err(|e| {
                            GraphError::Checkpoint(CheckpointError::serialization(format!(
                                "cannot serialise a message of {name:?}: {e}"
                            )))
                        })?;
                        rows.push((key, text));
                        keys.note(i, &msg.id, key);
                        key
                    }
                };
                ks.push(key);
            }
            m.insert(name.clone(), json!(ranges(ks)));
        }
        Ok(json!({"m": m, "mnext": keys.next}))
    }

    /// A run that branches off an older checkpoint takes its keys after every key of
    /// the thread (another branch may hold those after its own chain's).
    pub(super) async fn keys_for_branch(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        keys: &mut MessageKeys,
    ) -> Result<(), GraphError> {
        if !self.has_messages() {
            return Ok(());
        }
        if let Some(last) = cp
            .last_message_key(thread_id)
            .await
            .map_err(Graph::cp_err)?
        {
            keys.next = keys.next.max(last + 1);
        }
        Ok(())
    }

    /// Reads the rows the writes of `records` refer to and puts their messages back in
    /// place (records written before the message table have none); notes their keys
    /// in `keys`, in the records' order.
    pub(super) async fn inline_messages(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        records: &mut [CheckpointRecord],
        keys: &mut MessageKeys,
    ) -> Result<(), GraphError> {
        let wanted: Vec<(i64, i64)> = records
            .iter()
            .flat_map(|r| r.writes.iter())
            .filter(|w| self.messages_channel(&w.channel).is_some())
            .filter_map(|w| reference(&w.value))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let rows = self.read_rows(cp, thread_id, &wanted).await?;
        for r in records.iter_mut() {
            for w in r.writes.iter_mut() {
                let Some(chan) = self.messages_channel(&w.channel) else {
                    continue;
                };
                let Some((lo, hi)) = reference(&w.value) else {
                    continue;
                };
                let mut items = Vec::with_capacity((hi - lo + 1).max(0) as usize);
                for key in lo..=hi {
                    let m = row(&rows, thread_id, &r.id, key)?;
                    if let Some(id) = m.get("id").and_then(Value::as_str) {
                        keys.note(chan, id, key);
                    }
                    items.push(m.clone());
                }
                keys.next = keys.next.max(hi + 1);
                w.value = Value::Array(items);
            }
        }
        Ok(())
    }

    /// The messages channels' values a snapshot refers to, decoded into `chans`, and
    /// their keys in `keys`; false when the snapshot holds no references for one of
    /// them (written before the message table, or without known rows).
    pub(super) async fn restore_messages(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        record: &CheckpointRecord,
        chans: &mut [Channel],
        keys: &mut MessageKeys,
    ) -> Result<bool, GraphError> {
        let Some(snapshot) = &record.snapshot else {
            return Ok(false);
        };
        let (Some(Value::Object(refs)), Some(next)) = (
            snapshot.get("m"),
            snapshot.get("mnext").and_then(Value::as_i64),
        ) else {
            return Ok(false);
        };
        let mut wanted: Vec<(usize, Vec<(i64, i64)>)> = Vec::new();
        for (i, name) in self.names().iter().enumerate() {
            if !matches!(self.kinds()[i], ChannelKind::Messages) {
                continue;
            }
            let Some(rs) = refs.get(name) else {
                // A channel with no value there holds the empty list.
                if chans[i].version == 0 {
                    continue;
                }
                return Ok(false);
            };
            let rs: Option<Vec<(i64, i64)>> = rs.as_array().and_then(|a| {
                a.iter()
                    .map(|r| match r.as_array().map(Vec::as_slice) {
                        Some([lo, hi]) => Some((lo.as_i64()?, hi.as_i64()?)),
                        _ => None,
                    })
                    .collect()
            });
            let Some(rs) = rs else {
                return Err(GraphError::Checkpoint(CheckpointError::serialization(
                    format!(
                        "the snapshot in checkpoint {:?} of thread {thread_id:?} refers to the \
                     messages of {name:?} in a form this ironloop cannot read; it was \
                     modified by hand: load an older checkpoint_id",
                        record.id
                    ),
                )));
            };
            wanted.push((i, rs));
        }
        let all: Vec<(i64, i64)> = wanted.iter().flat_map(|(_, r)| r.iter().copied()).collect();
        let rows = self.read_rows(cp, thread_id, &all).await?;
        for (i, rs) in wanted {
            let mut items = Vec::new();
            for (lo, hi) in rs {
                for key in lo..=hi {
                    let m = row(&rows, thread_id, &record.id, key)?;
                    if let Some(id) = m.get("id").and_then(Value::as_str) {
                        keys.note(i, id, key);
                    }
                    items.push(m.clone());
                }
            }
            let version = chans[i].version;
            chans[i].value = Some(self.decode(&self.names()[i], Value::Array(items))?);
            chans[i].version = version;
        }
        keys.next = keys.next.max(next);
        Ok(true)
    }

    /// The rows of `ranges`, parsed, by key.
    async fn read_rows(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        ranges: &[(i64, i64)],
    ) -> Result<HashMap<i64, Value>, GraphError> {
        let rows = cp
            .messages(thread_id, ranges)
            .await
            .map_err(Graph::cp_err)?;
        rows.into_iter()
            .map(|(k, text)| {
                let v = serde_json::from_str(&text).map_err(|e| {
                    GraphError::Checkpoint(CheckpointError::serialization(format!(
                        "message {k} of thread {thread_id:?} cannot be read ({e}); the \
                         store was modified by hand"
                    )))
                })?;
                Ok((k, v))
            })
            .collect()
    }
}

/// Row `key`, which checkpoint `id` of `thread_id` refers to.
fn row<'a>(
    rows: &'a HashMap<i64, Value>,
    thread_id: &str,
    id: &str,
    key: i64,
) -> Result<&'a Value, GraphError> {
    rows.get(&key).ok_or_else(|| {
        GraphError::Checkpoint(CheckpointError::storage(format!(
            "checkpoint {id:?} of thread {thread_id:?} refers to message {key}, which the \
             store does not have; the store was modified outside ironloop"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_keys_make_one_range() {
        assert_eq!(ranges([1, 2, 3, 7, 8, 5]), [(1, 3), (7, 8), (5, 5)]);
        assert_eq!(ranges([]), []);
        assert_eq!(reference(&json!({"$m": [4, 9]})), Some((4, 9)));
        assert_eq!(reference(&json!({"$m": [4, 9], "x": 1})), None);
        assert_eq!(reference(&json!([{"$m": [4, 9]}])), None);
    }
}
