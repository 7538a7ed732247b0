//! Format 5: a snapshot whose pieces repeat, stored once each ([`super::shared`]).

use serde_json::{json, Value};

use super::*;
use crate::checkpoint::{join_runs, CheckpointRecord, Piece, Run, Snapshot};

/// A record holding the snapshot `{"v":1,"values":{"docs":[doc, doc, ...]}}`, `doc`
/// (one piece of about 1.2 KB with quotes, a backslash and non-ASCII text to escape) held
/// `n` times: the same piece shared when `shared`, else a copy each time; the commas
/// between them a piece of their own each (as the engine's writer leaves them).
fn with_docs(n: usize, shared: bool) -> CheckpointRecord {
    let doc = format!(
        "{{\"text\":\"{}\",\"path\":\"a\\\\b\",\"n\":[1,2.5,null]}}",
        "é \\\"x\\\" ".repeat(120)
    );
    let one = Piece::from(doc.as_str());
    let mut runs = vec![Run::from([Piece::from(r#"{"v":1,"values":{"docs":["#)])];
    for i in 0..n {
        let doc = if shared {
            one.clone()
        } else {
            Piece::from(doc.as_str())
        };
        let comma = (i > 0).then(|| Piece::from(","));
        runs.push(comma.into_iter().chain([doc]).collect());
    }
    runs.push(Run::from([Piece::from("]}}")]));
    let mut r = CheckpointRecord {
        snapshot: Some(Snapshot::Pieces(runs)),
        id: "c1".into(),
        parent_id: Some("p".into()),
        step: 3,
        source: "loop".into(),
        writes: Vec::new(),
        next: Vec::new(),
        created_at: 1_795_418_839.5,
        metadata: json!({"source": "loop", "step": 3, "parents": {}}),
    };
    r.next.push(crate::checkpoint::TaskRecord {
        id: "c1:0:a".into(),
        node: "a".into(),
        arg: None,
        timeout: None,
    });
    r
}

/// The snapshot's JSON as format 4 stores it (its pieces joined).
fn joined(r: &CheckpointRecord) -> String {
    match &r.snapshot {
        Some(Snapshot::Pieces(p)) => join_runs(p),
        _ => unreachable!(),
    }
}

#[test]
fn a_piece_held_many_times_is_stored_once() {
    let r = with_docs(200, true);
    let text = encode(&r).unwrap();
    let back = decode(&text, "c1", Some("p")).unwrap();
    assert_eq!(back, r);
    let parsed: Value = serde_json::from_str(&joined(&r)).unwrap();
    assert_eq!(back.snapshot.unwrap().json().unwrap().as_ref(), &parsed);
    assert!(
        text.starts_with("[8,3,1,1795418839.5,[],[\"a\"],["),
        "{text:.80}"
    );
    assert!(has_snapshot(&text));
    // The text holds the document once (escaped), not 200 times as format 4 does.
    let doc_len = joined(&with_docs(1, true)).len();
    assert!(joined(&r).len() > 190 * doc_len);
    assert!(text.len() < 2 * doc_len + 1200, "{} bytes", text.len());
    // The table: the glue and the document the first time, numbers after.
    let items: Value = serde_json::from_str(&text).unwrap();
    let table = items[6].as_array().unwrap();
    assert!(table[0].is_string() && table[1].is_string() && table[2].is_string());
    assert_eq!(table[3], json!(1));
    assert_eq!(table[4], json!(2));
    assert_eq!(table.iter().filter(|v| v.is_string()).count(), 4);
    // The checksum covers it as any record's.
    let (body, crc) = text.rsplit_once(',').unwrap();
    assert_eq!(
        crc.trim_end_matches(']'),
        checksum("c1", Some("p"), body).to_string()
    );
}

#[test]
fn pieces_are_told_equal_by_their_bytes() {
    // The same text whether the document is one piece shared or a copy each time: the
    // same record always gives the same text.
    let (shared, copied) = (with_docs(50, true), with_docs(50, false));
    assert_eq!(encode(&shared).unwrap(), encode(&copied).unwrap());
    assert!(same(
        "c1",
        (&encode(&shared).unwrap(), Some("p")),
        (&encode_parted(&copied).unwrap().joined(), Some("p"))
    ));
}

#[test]
fn a_snapshot_that_repeats_little_stays_in_format_4() {
    // Twice: the repeat saves less than format 5's threshold.
    for n in [1, 2] {
        let r = with_docs(n, true);
        let text = encode(&r).unwrap();
        assert!(text.starts_with(SNAPSHOT_PREFIX_4), "{text:.40}");
        assert!(text.contains(&joined(&r)));
        assert_eq!(decode(&text, "c1", Some("p")).unwrap(), r);
    }
    // Enough repeats: format 5, whatever the keyed stores do around it.
    let r = with_docs(5, true);
    assert!(encode(&r).unwrap().starts_with(SNAPSHOT_PREFIX_5));
    // What a saver keeping records in memory holds is format 4, the pieces shared.
    let parted = encode_parted(&r).unwrap();
    assert!(parted.text.starts_with(SNAPSHOT_PREFIX_4));
    assert_eq!(decode(&parted.joined(), "c1", Some("p")).unwrap(), r);
}

/// `r`'s text with the snapshot element replaced by `table` and a valid checksum.
fn with_table(r: &CheckpointRecord, table: &str) -> String {
    let head = r#"[8,3,1,1795418839.5,[],["a"],"#;
    assert!(encode(r).unwrap().starts_with(head));
    let body = format!("{head}{table}");
    let crc = checksum(&r.id, r.parent_id.as_deref(), &body);
    format!("{body},{crc}]")
}

#[test]
fn a_table_that_does_not_join_into_json_is_an_error() {
    let r = with_docs(10, true);
    for (table, want) in [
        (r#"["{\"v\":1}",1]"#, "not met before"),
        (r#"[0]"#, "not met before"),
        (r#"["{\"v\":1}",-1]"#, "not met before"),
        (r#"["{\"v\":1}",0.5]"#, "not met before"),
        (r#"["{\"v\":",null]"#, "neither a piece nor a number"),
        (r#"{"a":1}"#, "not a list"),
        (r#"["{\"v\":",0]"#, "do not join into JSON"),
        (r#"[]"#, "do not join into JSON"),
    ] {
        let text = with_table(&r, table);
        let e = decode(&text, "c1", Some("p")).unwrap_err();
        assert!(e.contains(want), "{table}: {e}");
    }
    // A table that joins into JSON reads back as it.
    let ok = with_table(&r, r#"["[","1,",1,"2]"]"#);
    let back = decode(&ok, "c1", Some("p")).unwrap();
    assert_eq!(
        back.snapshot.unwrap().json().unwrap().as_ref(),
        &json!([1, 1, 2])
    );
}

#[test]
fn a_changed_byte_of_a_format_5_record_is_an_error() {
    let text = encode(&with_docs(5, true)).unwrap();
    assert!(text.starts_with("[8,"));
    for i in 0..text.len() {
        for b in [b'0', b'1', b'8', b'"', b',', b'[', b'x', b'\\'] {
            let mut bytes = text.clone().into_bytes();
            if bytes[i] == b {
                continue;
            }
            bytes[i] = b;
            if let Ok(changed) = String::from_utf8(bytes) {
                assert!(
                    decode(&changed, "c1", Some("p")).is_err(),
                    "byte {i} set to {b}"
                );
            }
        }
    }
    // Nor does it pass for format 4 by a change of its tag.
    for tag in ["[4,", "[5,"] {
        assert!(decode(&format!("{tag}{}", &text[3..]), "c1", Some("p")).is_err());
    }
}
