//! How a [`CheckpointRecord`] is stored: the text every saver keeps per record.
//!
//! # Format 2 (written since the compact encoding)
//!
//! A JSON array, without what the store keeps beside it or what can be derived:
//!
//! ```text
//! [tag, step, source, created_at, writes, next, metadata(, snapshot)]
//! ```
//!
//! - `tag` is [`TAG`] (`2`), or [`TAG_SNAPSHOT`] (`3`) when the record holds a
//!   snapshot, which is then the last element: a store tells a record with a snapshot
//!   by the text's first three bytes ([`SNAPSHOT_PREFIX`]) without parsing it.
//! - The record's `id` and `parent_id` are not in the text: every saver keeps them
//!   beside it (columns, or the in-memory entry) and hands them to [`decode`].
//! - `writes`: `[node, channel, value]` each.
//! - `next`: a task whose id is the engine's own (`{record id}:{i}:{node}`) is its
//!   node's name, or `[node, arg]` for a `Send`'s; any other is `[id, node, arg]`.
//! - `metadata`: the engine's metadata ends with `source`, `step` and `parents: {}`
//!   repeating the record's own: then only the keys before them are stored, as an
//!   object, and put back on reading. Any other metadata is stored whole, wrapped in a
//!   one-element array.
//!
//! Values (writes, task arguments, metadata, snapshots) are the same JSON as before.
//!
//! # Format 1 (records written before)
//!
//! The whole record as a JSON object (`{"id": ...}`, or `{"snapshot": ...}` first when
//! it holds one): read as it is, so stores written by earlier versions load
//! unchanged, chains mixing both formats included. Nothing rewrites them.

use serde_json::{json, Map, Value};

use super::{CheckpointRecord, TaskRecord, Write};

/// The first element of a format-2 record without a snapshot.
pub const TAG: u64 = 2;
/// The first element of a format-2 record holding a snapshot.
pub const TAG_SNAPSHOT: u64 = 3;

/// How the text of a format-2 record holding a snapshot starts.
pub const SNAPSHOT_PREFIX: &str = "[3,";
/// How the text of a format-1 record holding a snapshot starts (and no other record's:
/// every other format-1 record starts with `{"id":`).
pub const SNAPSHOT_PREFIX_V1: &str = "{\"snapshot\":";

/// Whether the stored text `text` holds a snapshot, without parsing it.
pub fn has_snapshot(text: &str) -> bool {
    text.starts_with(SNAPSHOT_PREFIX) || text.starts_with(SNAPSHOT_PREFIX_V1)
}

/// The stored text of `record` (format 2). Deterministic: the same record always gives
/// the same text, which is how a store tells a retried `put` from a conflicting one.
pub fn encode(record: &CheckpointRecord) -> serde_json::Result<String> {
    let writes: Vec<Value> = record
        .writes
        .iter()
        .map(|w| json!([w.node, w.channel, w.value]))
        .collect();
    let next: Vec<Value> = record
        .next
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if t.id == engine_task_id(&record.id, i, &t.node) {
                match &t.arg {
                    None => Value::String(t.node.clone()),
                    Some(a) => json!([t.node, a]),
                }
            } else {
                json!([t.id, t.node, t.arg])
            }
        })
        .collect();
    let mut out = vec![
        json!(if record.snapshot.is_some() {
            TAG_SNAPSHOT
        } else {
            TAG
        }),
        json!(record.step),
        json!(record.source),
        json!(record.created_at),
        Value::Array(writes),
        Value::Array(next),
        compact_metadata(record),
    ];
    if let Some(s) = &record.snapshot {
        out.push(s.clone());
    }
    serde_json::to_string(&Value::Array(out))
}

/// Whether two stored records of id `id`, each a text and a parent, are the same
/// record: the same text, or (a record stored in format 1 put again in format 2) the
/// same content. How a store tells a retried `put` from a conflicting one.
pub fn same(id: &str, a: (&str, Option<&str>), b: (&str, Option<&str>)) -> bool {
    if a == b {
        return true;
    }
    a.1 == b.1
        && a.0.starts_with('{') != b.0.starts_with('{')
        && matches!(
            (decode(a.0, id, a.1), decode(b.0, id, b.1)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// The record `id` (child of `parent_id`) from its stored text, in either format.
/// The error says what is wrong with the text; callers name the store and thread.
pub fn decode(text: &str, id: &str, parent_id: Option<&str>) -> Result<CheckpointRecord, String> {
    let record = decode_any(text, id, parent_id)?;
    // A time no calendar can show (a corrupted number) would fail later, far from here.
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

fn decode_any(text: &str, id: &str, parent_id: Option<&str>) -> Result<CheckpointRecord, String> {
    if text.starts_with('{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Array(mut items) = v else {
        return Err("not a checkpoint record (neither an object nor an array)".into());
    };
    let tag = items.first().and_then(Value::as_u64);
    let snapshot = match tag {
        Some(TAG) if items.len() == 7 => None,
        Some(TAG_SNAPSHOT) if items.len() == 8 => items.pop(),
        _ => {
            return Err(format!(
                "a record of format {:?} with {} fields, this ironloop reads formats 1 and 2 \
                 (upgrade ironloop)",
                items.first(),
                items.len()
            ))
        }
    };
    let mut it = items.into_iter().skip(1);
    let mut next_item = |what: &str| it.next().ok_or_else(|| format!("no {what}"));
    let step = next_item("step")?
        .as_i64()
        .ok_or("the step is not an integer")?;
    let source = match next_item("source")? {
        Value::String(s) => s,
        _ => return Err("the source is not a string".into()),
    };
    let created_at = next_item("created_at")?
        .as_f64()
        .ok_or("created_at is not a number")?;
    let writes = match next_item("writes")? {
        Value::Array(ws) => ws
            .into_iter()
            .map(|w| match w {
                Value::Array(w) if w.len() == 3 => {
                    let mut w = w.into_iter();
                    let (node, channel, value) = (w.next(), w.next(), w.next());
                    match (node, channel, value) {
                        (Some(Value::String(node)), Some(Value::String(channel)), Some(value)) => {
                            Ok(Write {
                                node,
                                channel,
                                value,
                            })
                        }
                        _ => Err("a write is not [node, channel, value]".to_owned()),
                    }
                }
                _ => Err("a write is not [node, channel, value]".to_owned()),
            })
            .collect::<Result<Vec<_>, _>>()?,
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
        snapshot,
        id: id.to_owned(),
        parent_id: parent_id.map(str::to_owned),
        step,
        source,
        writes,
        next,
        created_at,
        metadata,
    })
}

/// The id the engine gives the `i`-th task of the step after checkpoint `id`.
fn engine_task_id(id: &str, i: usize, node: &str) -> String {
    format!("{id}:{i}:{node}")
}

/// A task of `next` from its stored form (see the module docs).
fn task(id: &str, i: usize, t: Value) -> Result<TaskRecord, String> {
    let bad = || "a next task is not node, [node, arg] or [id, node, arg]".to_owned();
    match t {
        Value::String(node) => Ok(TaskRecord {
            id: engine_task_id(id, i, &node),
            node,
            arg: None,
        }),
        Value::Array(a) if a.len() == 2 => {
            let mut a = a.into_iter();
            match (a.next(), a.next()) {
                (Some(Value::String(node)), Some(arg)) => Ok(TaskRecord {
                    id: engine_task_id(id, i, &node),
                    node,
                    arg: Some(arg),
                }),
                _ => Err(bad()),
            }
        }
        Value::Array(a) if a.len() == 3 => {
            let mut a = a.into_iter();
            match (a.next(), a.next(), a.next()) {
                (Some(Value::String(tid)), Some(Value::String(node)), Some(arg)) => {
                    Ok(TaskRecord {
                        id: tid,
                        node,
                        arg: (!arg.is_null()).then_some(arg),
                    })
                }
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// The metadata as stored: the keys before the engine's trailing `source`, `step`,
/// `parents: {}` when they repeat the record (an object), else `[metadata]`.
fn compact_metadata(record: &CheckpointRecord) -> Value {
    if let Value::Object(m) = &record.metadata {
        let n = m.len();
        if n >= 3 {
            let tail: Vec<(&String, &Value)> = m.iter().skip(n - 3).collect();
            let derived = tail[0].0 == "source"
                && tail[0].1.as_str() == Some(record.source.as_str())
                && tail[1].0 == "step"
                && tail[1].1.as_i64() == Some(record.step)
                && tail[1].1.is_i64()
                && tail[2].0 == "parents"
                && tail[2].1.as_object().is_some_and(Map::is_empty);
            if derived {
                let rest: Map<String, Value> = m
                    .iter()
                    .take(n - 3)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                // A key repeated in the rest would make `insert` on reading move it.
                if !rest.contains_key("source")
                    && !rest.contains_key("step")
                    && !rest.contains_key("parents")
                {
                    return Value::Object(rest);
                }
            }
        }
    }
    Value::Array(vec![record.metadata.clone()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> CheckpointRecord {
        CheckpointRecord {
            snapshot: None,
            id: id.into(),
            parent_id: Some("p".into()),
            step: 4,
            source: "loop".into(),
            writes: vec![Write {
                node: "b".into(),
                channel: "messages".into(),
                value: json!([{"id": "m1", "content": "hi", "type": "ai"}]),
            }],
            next: vec![
                TaskRecord {
                    id: format!("{id}:0:a"),
                    node: "a".into(),
                    arg: None,
                },
                TaskRecord {
                    id: format!("{id}:1:w"),
                    node: "w".into(),
                    arg: Some(json!({"x": 1})),
                },
                TaskRecord {
                    id: "other".into(),
                    node: "a".into(),
                    arg: None,
                },
            ],
            created_at: 1_795_418_839.542_807,
            metadata: json!({"user": "u", "source": "loop", "step": 4, "parents": {}}),
        }
    }

    fn round_trip(r: &CheckpointRecord) -> String {
        let text = encode(r).unwrap();
        let back = decode(&text, &r.id, r.parent_id.as_deref()).unwrap();
        assert_eq!(&back, r, "{text}");
        // Metadata keys keep their order (Python sees a dict).
        assert_eq!(
            serde_json::to_string(&back.metadata).unwrap(),
            serde_json::to_string(&r.metadata).unwrap()
        );
        text
    }

    #[test]
    fn records_round_trip_without_their_derivable_parts() {
        let r = record("c1");
        let text = round_trip(&r);
        assert!(text.starts_with("[2,4,\"loop\","), "{text}");
        assert!(!text.contains("c1") && !text.contains("\"p\""), "{text}");
        assert!(
            text.contains(r#""a",["w",{"x":1}],["other","a",null]"#),
            "{text}"
        );
        assert!(text.contains(r#"{"user":"u"}"#), "{text}");
        assert!(!has_snapshot(&text));
    }

    #[test]
    fn metadata_that_does_not_repeat_the_record_is_kept_whole() {
        for metadata in [
            json!({"step": 4, "nested": {"k": [1, null, true]}}),
            json!({"source": "loop", "step": 5, "parents": {}}),
            json!({"source": "loop", "step": 4, "parents": {"": "x"}}),
            json!({"step": 4, "source": "loop", "parents": {}}),
            json!({"source": "input", "x": 1, "source2": 0, "step": 4, "parents": {}}),
            json!({"source": "loop", "step": 4.0, "parents": {}}),
            Value::Null,
            json!([1]),
        ] {
            let mut r = record("c1");
            r.metadata = metadata;
            round_trip(&r);
        }
    }

    #[test]
    fn snapshots_are_tagged_and_last() {
        let mut r = record("c2");
        r.snapshot = Some(json!({"v": 1, "values": {"count": 3}}));
        let text = round_trip(&r);
        assert!(has_snapshot(&text) && text.ends_with(r#"{"v":1,"values":{"count":3}}]"#));
        r.snapshot = Some(json!(5));
        assert!(has_snapshot(&round_trip(&r)));
    }

    #[test]
    fn format_1_records_still_load() {
        let r = record("c1");
        let v1 = serde_json::to_string(&r).unwrap();
        assert_eq!(decode(&v1, "ignored", None).unwrap(), r);
        let mut s = r.clone();
        s.snapshot = Some(json!({"v": 1}));
        let v1 = serde_json::to_string(&s).unwrap();
        assert!(has_snapshot(&v1));
        assert_eq!(decode(&v1, "c1", Some("p")).unwrap(), s);
    }

    #[test]
    fn a_record_is_the_same_in_both_formats() {
        let r = record("c1");
        let (v1, v2) = (serde_json::to_string(&r).unwrap(), encode(&r).unwrap());
        assert!(same("c1", (&v1, Some("p")), (&v2, Some("p"))));
        assert!(same("c1", (&v2, Some("p")), (&v2, Some("p"))));
        assert!(!same("c1", (&v2, Some("p")), (&v2, Some("q"))));
        let mut other = r.clone();
        other.step = 5;
        let o2 = encode(&other).unwrap();
        assert!(!same("c1", (&v1, Some("p")), (&o2, Some("p"))));
        assert!(!same("c1", (&v2, Some("p")), (&o2, Some("p"))));
    }

    #[test]
    fn unreadable_texts_say_why() {
        for (text, want) in [
            ("[9,1]", "format"),
            ("[2,1,\"loop\",0.0,[],[],{}]x", "trailing"),
            ("[2,\"x\",\"loop\",0.0,[],[],{}]", "step"),
            ("[2,1,\"loop\",0.0,[[1,2,3]],[],{}]", "write"),
            ("[2,1,\"loop\",0.0,[],[7],{}]", "next task"),
            ("[2,1,\"loop\",0.0,[],[],5]", "metadata"),
            ("7", "neither"),
        ] {
            let e = decode(text, "c", None).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
