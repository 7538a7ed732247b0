//! The record format's round trips, checksums and refusals.

use serde_json::{json, Value};

use super::decode::engine_task_id;
use super::encode::{is_engine_task_id, metadata, MapPrefix, Metadata, Next};
use super::*;
use crate::checkpoint::{CheckpointRecord, Piece, Run, Snapshot, TaskRecord, Write};

/// `record`'s `next` as a JSON tree (what format 3 stores too).
fn encode_next(record: &CheckpointRecord) -> Vec<Value> {
    serde_json::from_str(&serde_json::to_string(&Next(record)).unwrap()).unwrap()
}

/// `record`'s metadata as formats 3 and 4 store it, as a JSON tree.
fn compact_metadata(record: &CheckpointRecord) -> Value {
    match metadata(record) {
        Metadata::Derived(n) => serde_json::to_value(MapPrefix(&record.metadata, n)).unwrap(),
        Metadata::Whole => Value::Array(vec![record.metadata.clone()]),
    }
}

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
            value: json!([{"id": "m1", "content": "hi", "type": "ai"}]).into(),
            new_task: false,
        }],
        next: vec![
            TaskRecord {
                id: format!("{id}:0:a"),
                node: "a".into(),
                arg: None,
                timeout: None,
            },
            TaskRecord {
                id: format!("{id}:1:w"),
                node: "w".into(),
                arg: Some(json!({"x": 1})),
                timeout: None,
            },
            TaskRecord {
                id: "other".into(),
                node: "a".into(),
                arg: None,
                timeout: None,
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
    assert!(text.starts_with("[4,4,1,"), "{text}");
    assert!(!text.contains("c1") && !text.contains("\"p\""), "{text}");
    assert!(
        text.contains(r#""a",["w",{"x":1}],["other","a",null]"#),
        "{text}"
    );
    assert!(text.contains(r#"{"user":"u"}"#), "{text}");
    assert!(!has_snapshot(&text));
}

#[test]
fn a_sends_own_timeout_travels_with_its_task() {
    let mut r = record("c1");
    r.next.push(TaskRecord {
        id: "c1:3:w".into(),
        node: "w".into(),
        arg: Some(json!({"x": 2})),
        timeout: Some(json!({"run_timeout": null, "idle_timeout": 0.05})),
    });
    let text = round_trip(&r);
    assert!(
        text.contains(r#"["c1:3:w","w",{"x":2},{"run_timeout":null,"idle_timeout":0.05}]"#),
        "{text}"
    );
}

#[test]
fn format_4_shortens_the_fixed_parts() {
    // W4m's record: node `a` writes two channels, the metadata is the engine's.
    let mut r = record("c1");
    r.metadata = json!({"source": "loop", "step": 4, "parents": {}});
    r.writes = vec![
        Write {
            node: "a".into(),
            channel: "count".into(),
            value: json!(4).into(),
            new_task: false,
        },
        Write {
            node: "a".into(),
            channel: "messages".into(),
            value: json!([{"id": "m1"}]).into(),
            new_task: false,
        },
    ];
    r.next.truncate(1);
    let text = round_trip(&r);
    let crc = checksum("c1", Some("p"), text.rsplit_once(',').unwrap().0);
    assert_eq!(
        text,
        format!(
            r#"[4,4,1,1795418839.542807,[["a","count",4,"messages",[{{"id":"m1"}}]]],["a"],{crc}]"#
        )
    );
    // 19 bytes fewer than format 3 wrote before the checksum (`"loop"` for `1`,
    // `],["a"`, `,{},null`).
    let body = |t: &str| t.rsplit_once(',').unwrap().0.len();
    assert_eq!(body(&format_3(&r)) - body(&text), 19, "{}", format_3(&r));
    // Writes of a node that come back later stay in their order.
    for (i, node) in ["b", "a", "a"].into_iter().enumerate() {
        r.writes.push(Write {
            node: node.into(),
            channel: format!("c{i}"),
            value: json!(i).into(),
            new_task: false,
        });
    }
    let text = round_trip(&r);
    assert!(
        text.contains(r#"]],["b","c0",0],["a","c1",1,"c2",2]],"#),
        "{text}"
    );
    // Another task of the same node right after (two `Send`s to it): a group of its
    // own, read back as such.
    r.writes.last_mut().unwrap().new_task = true;
    let text = round_trip(&r);
    assert!(
        text.contains(r#"["b","c0",0],["a","c1",1],["a","c2",2]],"#),
        "{text}"
    );
    let groups: Vec<usize> = crate::checkpoint::task_groups(&r.writes)
        .map(<[Write]>::len)
        .collect();
    assert_eq!(groups, [2, 1, 1, 1]);
    r.writes.last_mut().unwrap().new_task = false;
    // Sources the engine does not write, and every one it does.
    for source in ["input", "loop", "update", "fork", "", "1"] {
        r.source = source.into();
        r.metadata = json!({"source": source, "step": 4, "parents": {}});
        let text = round_trip(&r);
        match SOURCES.iter().position(|s| *s == source) {
            Some(i) => assert!(text.starts_with(&format!("[4,4,{i},")), "{text}"),
            None => assert!(text.starts_with(&format!("[4,4,[\"{source}\"],")), "{text}"),
        }
    }
}

#[test]
fn only_the_engines_own_task_ids_are_left_out() {
    for (task_id, i, node, engine) in [
        ("c1:0:a", 0, "a", true),
        ("c1:10:a", 10, "a", true),
        ("c1:3:a:b", 3, "a:b", true),
        ("c1:03:a", 3, "a", false),
        ("c1:00:a", 0, "a", false),
        ("c1:+3:a", 3, "a", false),
        ("c1::a", 0, "a", false),
        ("c1:1:a", 10, "a", false),
        ("c1:10:a", 1, "a", false),
        ("c1:1:ab", 1, "a", false),
        ("c2:1:a", 1, "a", false),
        ("c1:1", 1, "", false),
    ] {
        assert_eq!(
            is_engine_task_id(task_id, "c1", i, node),
            engine,
            "{task_id} {i} {node}"
        );
        assert_eq!(engine, task_id == engine_task_id("c1", i, node));
    }
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
fn snapshots_are_tagged_and_before_the_checksum() {
    let mut r = record("c2");
    r.snapshot = Some(json!({"v": 1, "values": {"count": 3}}).into());
    let text = round_trip(&r);
    let crc = checksum("c2", Some("p"), text.rsplit_once(',').unwrap().0);
    assert!(has_snapshot(&text) && text.starts_with(SNAPSHOT_PREFIX_4));
    assert!(
        text.ends_with(&format!(
            r#"{{"user":"u"}},{{"v":1,"values":{{"count":3}}}},{crc}]"#
        )),
        "{text}"
    );
    // Without metadata of its own, and a snapshot that is JSON's null.
    r.metadata = json!({"source": "loop", "step": 4, "parents": {}});
    for s in [json!(5), Value::Null] {
        r.snapshot = Some(s.into());
        assert!(has_snapshot(&round_trip(&r)));
    }
    r.snapshot = None;
    let text = round_trip(&r);
    let crc = checksum("c2", Some("p"), text.rsplit_once(',').unwrap().0);
    assert!(
        text.ends_with(&format!(r#"["other","a",null]],{crc}]"#)),
        "{text}"
    );
    assert!(!has_snapshot(&text));
}

#[test]
fn a_snapshot_in_pieces_is_stored_as_its_json() {
    let mut r = record("c2");
    r.snapshot = Some(json!({"v": 1, "values": {"a": [1, "x"]}}).into());
    let whole = encode(&r).unwrap();
    let piece = Piece::from;
    r.snapshot = Some(Snapshot::Pieces(vec![
        Run::from([piece(r#"{"v":1,"values":{"a":"#)]),
        Run::from([piece(r#"[1,"#), piece(r#""x"]"#)]),
        Run::from([piece("}}")]),
    ]));
    assert_eq!(encode(&r).unwrap(), whole);
    assert_eq!(decode(&whole, "c2", Some("p")).unwrap(), r);
}

#[test]
fn a_record_kept_in_parts_is_its_text_with_the_pieces_shared() {
    let mut r = record("c3");
    let piece = Piece::from;
    let value = piece(r#"[1,"é"]"#);
    let run = Run::from([value.clone()]);
    r.snapshot = Some(Snapshot::Pieces(vec![
        Run::from([piece(r#"{"v":1,"values":{"a":"#)]),
        run.clone(),
        Run::from([piece("}}")]),
    ]));
    let whole = encode(&r).unwrap();
    let parted = encode_parted(&r).unwrap();
    let pieces = parted.pieces.as_ref().unwrap();
    assert!(Piece::shares(&pieces.parts[1][0], &value));
    assert!(
        std::sync::Arc::ptr_eq(&pieces.parts[1], &run),
        "the run is shared whole"
    );
    assert_eq!(parted.joined(), whole);
    assert_eq!(pieces.len() + parted.text.len(), whole.len());
    assert_eq!(decode(&parted.joined(), "c3", Some("p")).unwrap(), r);
    // No pieces: one text, as `encode` writes it.
    r.snapshot = Some(json!({"v": 1}).into());
    let parted = encode_parted(&r).unwrap();
    assert!(parted.pieces.is_none());
    assert_eq!(parted.text, encode(&r).unwrap());
    r.snapshot = None;
    assert_eq!(encode_parted(&r).unwrap().joined(), encode(&r).unwrap());
}

/// `record` as format 3 wrote it (9 elements, a checksum last).
fn format_3(r: &CheckpointRecord) -> String {
    let writes: Vec<Value> = r
        .writes
        .iter()
        .map(|w| json!([w.node, w.channel, w.value]))
        .collect();
    let next = encode_next(r);
    let tag = if r.snapshot.is_some() {
        TAG_SNAPSHOT
    } else {
        TAG
    };
    let out = json!([
        tag,
        r.step,
        r.source,
        r.created_at,
        writes,
        next,
        compact_metadata(r),
        serde_json::to_value(&r.snapshot).unwrap()
    ]);
    let mut text = serde_json::to_string(&out).unwrap();
    text.pop();
    let crc = checksum(&r.id, r.parent_id.as_deref(), &text);
    format!("{text},{crc}]")
}

#[test]
fn format_3_records_still_load() {
    let mut r = record("c1");
    for snapshot in [None, Some(json!({"v": 1}).into())] {
        r.snapshot = snapshot;
        let v3 = format_3(&r);
        assert!(
            v3.starts_with(if r.snapshot.is_some() {
                "[3,4,\"loop\","
            } else {
                "[2,4,\"loop\","
            }),
            "{v3}"
        );
        assert_eq!(has_snapshot(&v3), r.snapshot.is_some());
        assert_eq!(decode(&v3, "c1", Some("p")).unwrap(), r);
        assert!(same(
            "c1",
            (&v3, Some("p")),
            (&encode(&r).unwrap(), Some("p"))
        ));
        assert!(decode(&v3, "c1", Some("q"))
            .unwrap_err()
            .contains("checksum"));
    }
}

/// `record` as format 2 (7 elements, 8 with a snapshot; no checksum) wrote it.
fn format_2(r: &CheckpointRecord) -> String {
    let Value::Array(mut items) = serde_json::from_str(&format_3(r)).unwrap() else {
        unreachable!()
    };
    items.pop();
    if items.last() == Some(&Value::Null) {
        items.pop();
    }
    serde_json::to_string(&items).unwrap()
}

#[test]
fn format_2_records_still_load() {
    let r = record("c1");
    let v2 = format_2(&r);
    assert!(v2.ends_with(r#"{"user":"u"}]"#), "{v2}");
    assert_eq!(decode(&v2, "c1", Some("p")).unwrap(), r);
    let mut s = r.clone();
    s.snapshot = Some(json!({"v": 1}).into());
    let v2 = format_2(&s);
    assert!(has_snapshot(&v2) && v2.ends_with(r#"{"v":1}]"#), "{v2}");
    assert_eq!(decode(&v2, "c1", Some("p")).unwrap(), s);
    assert!(same(
        "c1",
        (&v2, Some("p")),
        (&encode(&s).unwrap(), Some("p"))
    ));
}

#[test]
fn every_changed_byte_is_an_error() {
    let mut with_snapshot = record("c1");
    with_snapshot.snapshot = Some(json!({"v": 1, "values": {"n": 3}}).into());
    let mut engine_metadata = record("c1");
    engine_metadata.metadata = json!({"source": "loop", "step": 4, "parents": {}});
    let mut both = engine_metadata.clone();
    both.snapshot = with_snapshot.snapshot.clone();
    let mut other_source = record("c1");
    other_source.source = "fork".into();
    let records = [
        record("c1"),
        with_snapshot,
        engine_metadata,
        both,
        other_source,
    ];
    let texts = records
        .iter()
        .map(|r| encode(r).unwrap())
        .chain(records[..2].iter().map(format_3));
    for text in texts {
        let mut changes = 0;
        for i in 0..text.len() {
            for b in 0u8..128 {
                let mut bytes = text.clone().into_bytes();
                if bytes[i] == b {
                    continue;
                }
                bytes[i] = b;
                let changed = String::from_utf8(bytes).unwrap();
                let e = decode(&changed, "c1", Some("p"))
                    .expect_err(&format!("byte {i} set to {b}: {changed}"));
                assert!(!e.is_empty());
                changes += 1;
            }
            // Cut short, or a byte left out.
            assert!(decode(&text[..i], "c1", Some("p")).is_err());
            let (a, b) = (&text[..i], &text[i + 1..]);
            assert!(
                decode(&format!("{a}{b}"), "c1", Some("p")).is_err(),
                "{a}{b}"
            );
        }
        assert!(changes > 100 * 127, "{changes}");
        // The ids beside the text are checked too.
        for (id, parent) in [("c2", Some("p")), ("c1", Some("q")), ("c1", None)] {
            let e = decode(&text, id, parent).unwrap_err();
            assert!(e.contains("checksum does not match"), "{e}");
        }
        // Nor can it pass for a record of another format by a change of its tag
        // (format 2's have no checksum), nor by cutting off its checksum.
        for tag in ["[2,", "[3,", "[4,", "[5,"] {
            let other_tag = format!("{tag}{}", &text[3..]);
            if other_tag != text {
                assert!(decode(&other_tag, "c1", Some("p")).is_err(), "{other_tag}");
            }
            if text.starts_with("[4,") || text.starts_with("[5,") {
                let (body, _) = text.rsplit_once(',').unwrap();
                let cut = format!("{tag}{}]", &body[3..]);
                assert!(decode(&cut, "c1", Some("p")).is_err(), "{cut}");
            }
        }
    }
}

#[test]
fn format_1_records_still_load() {
    let r = record("c1");
    let v1 = serde_json::to_string(&r).unwrap();
    assert_eq!(decode(&v1, "ignored", None).unwrap(), r);
    let mut s = r.clone();
    s.snapshot = Some(json!({"v": 1}).into());
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
        (
            "[2,1,\"loop\",0.0,[],[],{},null,1]",
            "checksum does not match",
        ),
        ("[2,1,\"loop\",0.0,[],[],{},null,01]", "number"),
        (
            "[2,1,\"loop\",0.0,[],[],{},null,\"1\"]",
            "not a number as written",
        ),
        (
            "[2,1,\"loop\",0.0,[],[],{},null, 1]",
            "not a number as written",
        ),
    ] {
        let e = decode(text, "c", None).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
}
