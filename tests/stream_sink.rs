//! `StreamSink::tee` / `only`: a graph streamed inside a running task streams to its
//! own caller and to the run around it, each taking the modes (and subgraph events)
//! it asked for.

use std::sync::{Arc, Mutex};

use ironloop::graph::{modes, StreamEvent, StreamSink, Val};
use serde_json::json;

type Seen = Arc<Mutex<Vec<String>>>;

/// A sink recording `mode` or `ns/mode` of each event it gets.
fn recorder(wanted: u8, subgraphs: bool) -> (StreamSink, Seen) {
    let seen: Seen = Default::default();
    let noted = seen.clone();
    let sink = StreamSink {
        modes: wanted,
        subgraphs,
        send: Arc::new(move |ev| noted.lock().unwrap().push(describe(&ev))),
        seen: Default::default(),
    };
    (sink, seen)
}

fn describe(ev: &StreamEvent) -> String {
    match ev {
        StreamEvent::Nested { ns, ev } => format!("{ns}/{}", describe(ev)),
        StreamEvent::Custom(_) => "custom".into(),
        StreamEvent::Updates { node, .. } => format!("updates:{node}"),
        _ => "other".into(),
    }
}

fn custom() -> StreamEvent {
    StreamEvent::Custom(Val::Json(json!("x")))
}

fn update(node: &str) -> StreamEvent {
    StreamEvent::Updates {
        node: node.into(),
        update: None,
        writes: Vec::new(),
        cached: false,
    }
}

#[test]
fn tee_sends_each_side_the_modes_it_wants() {
    let (own, own_seen) = recorder(modes::CUSTOM, false);
    let (around, around_seen) = recorder(modes::CUSTOM | modes::UPDATES, true);
    let sink = own.tee(around.nested("node:1".into()).unwrap());
    assert!(sink.wants(modes::UPDATES) && sink.wants(modes::CUSTOM));
    sink.emit(modes::CUSTOM, custom);
    sink.emit(modes::UPDATES, || update("a"));
    assert_eq!(*own_seen.lock().unwrap(), ["custom"]);
    assert_eq!(
        *around_seen.lock().unwrap(),
        ["node:1/custom", "node:1/updates:a"]
    );
}

#[test]
fn tee_gives_subgraph_events_only_to_a_side_that_asked_for_them() {
    let (own, own_seen) = recorder(modes::UPDATES, false);
    let (around, around_seen) = recorder(modes::UPDATES, true);
    let sink = own.tee(around.nested("node:1".into()).unwrap());
    // A subgraph of the teed run: the caller without subgraphs=True does not see it.
    let inner = sink
        .nested("sub:2".into())
        .expect("the run around wants subgraphs");
    inner.emit(modes::UPDATES, || update("deep"));
    sink.emit(modes::UPDATES, || update("top"));
    assert_eq!(*own_seen.lock().unwrap(), ["updates:top"]);
    assert_eq!(
        *around_seen.lock().unwrap(),
        ["node:1/sub:2/updates:deep", "node:1/updates:top"]
    );
}

#[test]
fn only_keeps_the_modes_asked_for_or_gives_none() {
    let (sink, seen) = recorder(modes::CUSTOM | modes::UPDATES, true);
    let custom_only = sink.clone().only(modes::CUSTOM | modes::TOOLS).unwrap();
    custom_only.emit(modes::UPDATES, || update("a"));
    custom_only.emit(modes::CUSTOM, custom);
    assert_eq!(*seen.lock().unwrap(), ["custom"]);
    assert!(sink.only(modes::MESSAGES).is_none());
}

#[test]
fn an_events_mode_is_that_of_the_event_it_wraps() {
    let nested = StreamEvent::Nested {
        ns: "n:1".into(),
        ev: Box::new(update("a")),
    };
    assert_eq!(nested.mode(), modes::UPDATES);
    assert_eq!(custom().mode(), modes::CUSTOM);
}
