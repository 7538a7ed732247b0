//! Reading a record back from its stored text, in any format (the module docs of
//! [`super`] describe them), its derivable parts put back.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{
    shared, verify, FORMAT_3_LEN, SOURCES, TAG, TAG_4, TAG_4_SNAPSHOT, TAG_5_SHARED, TAG_SNAPSHOT,
};
use crate::checkpoint::{CheckpointRecord, Snapshot, TaskRecord, Write};

/// The record `id` (child of `parent_id`) from its stored text, in any format.
/// The error says what is wrong with the text; callers name the store and thread.
pub fn decode(text: &str, id: &str, parent_id: Option<&str>) -> Result<CheckpointRecord, String> {
    in_calendar(decode_any(text, id, parent_id, Check::Checksum)?)
}

/// A format-4 record whose authentication code in place of the checksum the caller
/// checked ([`super::seal`]).
pub(in crate::checkpoint) fn decode_authenticated(
    text: &str,
    id: &str,
    parent_id: Option<&str>,
) -> Result<CheckpointRecord, String> {
    in_calendar(decode_any(text, id, parent_id, Check::Done)?)
}

/// What checks the last element of a format-3 or -4 record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// It is the checksum, checked here.
    Checksum,
    /// The caller checked it (a key's code): only format 4 has one.
    Done,
}

/// `record`, unless its creation time is one no calendar can show (a corrupted number),
/// which would fail later, far from here.
fn in_calendar(record: CheckpointRecord) -> Result<CheckpointRecord, String> {
    if !(0.0..MAX_CREATED_AT).contains(&record.created_at) {
        return Err(format!(
            "created_at {} is not a time between 1970 and 9999",
            record.created_at
        ));
    }
    Ok(record)
}

/// Seconds since the epoch at the start of year 10000.
const MAX_CREATED_AT: f64 = 253_402_300_800.0;

/// The record in `text`, any format, checked as `check` says (its creation time aside).
fn decode_any(
    text: &str,
    id: &str,
    parent_id: Option<&str>,
    check: Check,
) -> Result<CheckpointRecord, String> {
    if check == Check::Done && !matches!(text.get(..3), Some("[4," | "[5," | "[8,")) {
        return Err("only a format-4 or -5 record carries an authentication code".into());
    }
    if text.starts_with('{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Array(mut items) = v else {
        return Err("not a checkpoint record (neither an object nor an array)".into());
    };
    let tag = items.first().and_then(Value::as_u64);
    let format_4 = matches!(tag, Some(TAG_4 | TAG_4_SNAPSHOT | TAG_5_SHARED));
    let snapshot = match (tag, items.len()) {
        (Some(TAG | TAG_SNAPSHOT), FORMAT_3_LEN) => {
            verify(text, id, parent_id)?;
            items.pop(); // the checksum
            match (tag, items.pop()) {
                (Some(TAG), Some(Value::Null)) => None,
                (Some(TAG_SNAPSHOT), Some(s)) if !s.is_null() => Some(s),
                _ => return Err("the tag does not say whether there is a snapshot".into()),
            }
        }
        (Some(TAG), 7) => None,
        (Some(TAG_SNAPSHOT), 8) => items.pop(),
        (Some(TAG_4), 7 | 8) | (Some(TAG_4_SNAPSHOT | TAG_5_SHARED), 8 | 9) => {
            if check == Check::Checksum {
                verify(text, id, parent_id)?;
            }
            items.pop(); // the checksum
            let snapshot = match tag {
                Some(TAG_4_SNAPSHOT) => items.pop(),
                Some(TAG_5_SHARED) => items.pop().map(shared::join).transpose()?,
                _ => None,
            };
            // No metadata element: the engine's metadata with no other key.
            if items.len() == 6 {
                items.push(Value::Object(Map::new()));
            }
            snapshot
        }
        _ => {
            return Err(format!(
                "a record of format {:?} with {} fields, this ironloop reads formats 1 to 5 \
                 (upgrade ironloop)",
                items.first(),
                items.len()
            ))
        }
    };
    let mut record = fields(items, format_4, id)?;
    record.snapshot = snapshot.map(Snapshot::Json);
    record.parent_id = parent_id.map(str::to_owned);
    Ok(record)
}

/// The record of `id` from the elements of its array (format 2 to 4, tag first,
/// without the snapshot and the checksum): no snapshot and no parent yet.
fn fields(items: Vec<Value>, format_4: bool, id: &str) -> Result<CheckpointRecord, String> {
    let mut it = items.into_iter().skip(1);
    let mut next_item = |what: &str| it.next().ok_or_else(|| format!("no {what}"));
    let step = next_item("step")?
        .as_i64()
        .ok_or("the step is not an integer")?;
    let source = source(next_item("source")?, format_4)?;
    let created_at = next_item("created_at")?
        .as_f64()
        .ok_or("created_at is not a number")?;
    let writes = match next_item("writes")? {
        Value::Array(ws) if format_4 => write_groups(ws)?,
        Value::Array(ws) => ws.into_iter().map(write).collect::<Result<Vec<_>, _>>()?,
        _ => return Err("the writes are not a list".into()),
    };
    let next = match next_item("next")? {
        Value::Array(ts) => ts
            .into_iter()
            .enumerate()
            .map(|(i, t)| task(id, i, t))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("the next tasks are not a list".into()),
    };
    let metadata = match next_item("metadata")? {
        Value::Object(mut m) => {
            m.insert("source".into(), json!(source));
            m.insert("step".into(), json!(step));
            m.insert("parents".into(), json!({}));
            Value::Object(m)
        }
        Value::Array(mut whole) if whole.len() == 1 => whole.pop().unwrap_or_default(),
        _ => return Err("the metadata is neither an object nor [metadata]".into()),
    };
    Ok(CheckpointRecord {
        snapshot: None,
        id: id.to_owned(),
        parent_id: None,
        step,
        source,
        writes,
        next,
        created_at,
        metadata,
    })
}

/// A record's source: a string before format 4, then an index into [`SOURCES`] or
/// `[source]`.
fn source(v: Value, format_4: bool) -> Result<String, String> {
    Ok(match (format_4, v) {
        (false, Value::String(s)) => s,
        (false, _) => return Err("the source is not a string".into()),
        (true, Value::Number(n)) => n
            .as_u64()
            .and_then(|i| SOURCES.get(usize::try_from(i).ok()?))
            .map(|s| (*s).to_owned())
            .ok_or("the source is not one of the engine's")?,
        (true, Value::Array(a)) => match <[Value; 1]>::try_from(a) {
            Ok([Value::String(s)]) => s,
            _ => return Err("the source is not [source]".into()),
        },
        (true, _) => return Err("the source is neither a number nor [source]".into()),
    })
}

/// Format 4's writes: groups of one node's, `[node, channel, value, ...]`; a group
/// of the same node as the one before is another task's ([`Write::new_task`]).
fn write_groups(groups: Vec<Value>) -> Result<Vec<Write>, String> {
    let mut out: Vec<Write> = Vec::with_capacity(groups.len());
    for g in groups {
        let bad = || "a group of writes is not [node, channel, value, ...]".to_owned();
        let Value::Array(g) = g else {
            return Err(bad());
        };
        if g.len() < 3 || g.len() % 2 == 0 {
            return Err(bad());
        }
        let mut g = g.into_iter();
        let Some(Value::String(node)) = g.next() else {
            return Err(bad());
        };
        let mut new_task = out.last().is_some_and(|w| w.node == node);
        while let (Some(channel), Some(value)) = (g.next(), g.next()) {
            let Value::String(channel) = channel else {
                return Err(bad());
            };
            out.push(Write {
                node: node.clone(),
                channel,
                value: Arc::new(value),
                new_task,
            });
            new_task = false;
        }
    }
    Ok(out)
}

/// A write of formats 2 and 3: `[node, channel, value]`.
fn write(w: Value) -> Result<Write, String> {
    let bad = || "a write is not [node, channel, value]".to_owned();
    let Value::Array(w) = w else {
        return Err(bad());
    };
    match <[Value; 3]>::try_from(w) {
        Ok([Value::String(node), Value::String(channel), value]) => Ok(Write {
            node,
            channel,
            value: Arc::new(value),
            new_task: false,
        }),
        _ => Err(bad()),
    }
}

/// The id the engine gives the `i`-th task of the step after checkpoint `id`.
pub(super) fn engine_task_id(id: &str, i: usize, node: &str) -> String {
    format!("{id}:{i}:{node}")
}

/// A task of `next` from its stored form (see the module docs).
fn task(id: &str, i: usize, t: Value) -> Result<TaskRecord, String> {
    let bad = || {
        "a next task is not node, [node, arg], [id, node, arg] or [id, node, arg, timeout]"
            .to_owned()
    };
    match t {
        Value::String(node) => Ok(TaskRecord {
            id: engine_task_id(id, i, &node),
            node,
            arg: None,
            timeout: None,
        }),
        Value::Array(a) if a.len() == 2 => {
            let mut a = a.into_iter();
            match (a.next(), a.next()) {
                (Some(Value::String(node)), Some(arg)) => Ok(TaskRecord {
                    id: engine_task_id(id, i, &node),
                    node,
                    arg: Some(arg),
                    timeout: None,
                }),
                _ => Err(bad()),
            }
        }
        Value::Array(a) if a.len() == 3 || a.len() == 4 => {
            let mut a = a.into_iter();
            match (a.next(), a.next(), a.next(), a.next()) {
                (Some(Value::String(tid)), Some(Value::String(node)), Some(arg), timeout) => {
                    Ok(TaskRecord {
                        id: tid,
                        node,
                        arg: (!arg.is_null()).then_some(arg),
                        timeout: timeout.filter(|t| !t.is_null()),
                    })
                }
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}
