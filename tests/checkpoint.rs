//! Conformance suite for checkpointers: every case runs against `MemorySaver`,
//! `SqliteSaver` (a fresh temporary file per test) and, with the `postgres` feature,
//! `PostgresSaver` (a fresh schema per test on the server named by
//! `IRONLOOP_TEST_POSTGRES_URL`: `bash scripts/postgres.sh cargo test --features
//! postgres` starts a throwaway one). Then the cases of one saver: SQLite (reopening,
//! several savers on one file, use after close, bad files, migration) and PostgreSQL
//! (setup and migrations, several savers, lost connections, bad URLs). The suite runs
//! again on savers whose records are under a key (authenticated, or encrypted), and
//! the cases of `keyed` check what such a saver refuses.

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "sqlite")]
use ironloop::checkpoint::caller::BlockingCaller;
use ironloop::checkpoint::{
    child_ns, join_runs, thread_key, ChainFrom, CheckpointError, CheckpointRecord, Checkpointer,
    Claim, MemorySaver, PendingWrite, Piece, Put, RecordKey, Run, Snapshot, TaskRecord, Write,
};
use serde_json::json;

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

fn rec(id: &str, parent: Option<&str>, step: i64) -> CheckpointRecord {
    CheckpointRecord {
        snapshot: None,
        id: id.to_owned(),
        parent_id: parent.map(str::to_owned),
        step,
        source: if parent.is_none() { "input" } else { "loop" }.to_owned(),
        writes: vec![Write {
            node: "agent".into(),
            channel: "messages".into(),
            value: json!([{"type": "ai", "id": format!("m-{id}"), "content": "héllo ✓ \"quoted\"",
                           "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1, "b": 2.5}}]}]).into(),
            new_task: false,
        }],
        next: vec![
            TaskRecord {
                id: format!("t-{id}"),
                node: "tools".into(),
                arg: None,
                timeout: None,
            },
            TaskRecord {
                id: format!("s-{id}"),
                node: "worker".into(),
                arg: Some(json!({"item": step})),
                timeout: None,
            },
        ],
        created_at: 1_700_000_000.25 + step as f64,
        metadata: json!({"step": step, "nested": {"k": [1, null, true]}}),
    }
}

fn pw(task: &str, channel: &str, value: serde_json::Value) -> PendingWrite {
    pwi(task, 0, channel, value)
}

fn pwi(task: &str, idx: i64, channel: &str, value: serde_json::Value) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        idx,
        node: "tools".into(),
        channel: channel.into(),
        value: value.into(),
    }
}

fn ids(records: &[CheckpointRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

/// Puts a linear chain `prefix0 <- prefix1 <- ...` of `n` records.
async fn put_linear(s: &dyn Checkpointer, thread: &str, prefix: &str, n: usize) {
    for i in 0..n {
        let parent = (i > 0).then(|| format!("{prefix}{}", i - 1));
        s.put(
            thread,
            rec(&format!("{prefix}{i}"), parent.as_deref(), i as i64),
        )
        .await
        .unwrap();
    }
}

/// Advances `thread` `n` times from whatever its latest checkpoint is, retrying on a
/// conflict; returns how many conflicts it met. Two of these at once on two savers of
/// one store must leave one linear history.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn advance_racing(s: &dyn Checkpointer, thread: &str, name: &str, n: usize) -> usize {
    let mut conflicts = 0;
    for i in 0..n {
        loop {
            let latest = s.get(thread, None).await.unwrap().unwrap();
            let r = rec(&format!("{name}{i}"), Some(&latest.id), latest.step + 1);
            match s.put_next(thread, r).await {
                Ok(()) => break,
                Err(CheckpointError::Conflict { .. }) => conflicts += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    conflicts
}

/// Every checkpoint of `thread` is on its latest one's chain: no fork.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn assert_linear(s: &dyn Checkpointer, thread: &str, expected: usize) {
    let all = s.list(thread, None, None).await.unwrap();
    assert_eq!(all.len(), expected);
    let chain = s.chain(thread, &all[0].id).await.unwrap();
    assert_eq!(chain.len(), expected, "the history forked");
    for (i, r) in chain.iter().enumerate() {
        assert_eq!(r.step, i as i64);
    }
}

#[cfg(feature = "sqlite")]
mod temp {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A unique file under the temp dir; removes it (and its -wal / -shm) when dropped.
    pub struct TempDb(PathBuf);

    impl TempDb {
        pub fn new(name: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let file = format!(
                "ironloop-ckpt-{name}-{}-{nanos}-{}.db",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            );
            Self(std::env::temp_dir().join(file))
        }

        pub fn path(&self) -> &Path {
            &self.0
        }

        /// The file's WAL, beside it.
        pub fn wal(&self) -> PathBuf {
            let mut p = self.0.clone().into_os_string();
            p.push("-wal");
            PathBuf::from(p)
        }
    }

    impl Drop for TempDb {
        fn drop(&mut self) {
            for suffix in ["", "-wal", "-shm", "-journal", "-runs"] {
                let mut p = self.0.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// A PostgreSQL server for the tests, and a schema of its own for each test.
#[cfg(feature = "postgres")]
mod pg {
    use ironloop::checkpoint::{PostgresOptions, PostgresSaver};

    /// The server the tests use. Missing is a failure, never a skip.
    pub fn url() -> String {
        match std::env::var("IRONLOOP_TEST_POSTGRES_URL") {
            Ok(u) if !u.is_empty() => u,
            _ => panic!(
                "IRONLOOP_TEST_POSTGRES_URL is not set: the PostgresSaver tests need a server. \
                 Run them with `bash scripts/postgres.sh cargo test --features postgres` \
                 (starts a throwaway server), or set it to postgresql://user@host:port/db \
                 of a server where the tests may create and drop schemas"
            ),
        }
    }

    /// A plain connection for what the tests do behind the saver's back.
    pub async fn admin() -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to IRONLOOP_TEST_POSTGRES_URL: {e}"));
        tokio::spawn(conn);
        client
    }

    /// A schema dropped at the end of the test (and before, in case a failed run left it).
    pub struct TempSchema {
        pub name: String,
    }

    impl TempSchema {
        pub async fn new(case: &str) -> Self {
            let name = format!("ironloop_test_{case}_{}", std::process::id());
            admin()
                .await
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .await
                .unwrap();
            TempSchema { name }
        }

        pub fn options(&self) -> PostgresOptions {
            PostgresOptions {
                schema: Some(self.name.clone()),
                ..Default::default()
            }
        }

        pub async fn saver(&self) -> PostgresSaver {
            PostgresSaver::connect_with(&url(), self.options())
                .await
                .unwrap()
        }

        pub async fn drop(self) {
            admin()
                .await
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name))
                .await
                .unwrap();
        }
    }
}

#[cfg(feature = "sqlite")]
use ironloop::checkpoint::SqliteSaver;
#[cfg(feature = "sqlite")]
use temp::TempDb;

// ---------------------------------------------------------------------------------
// Conformance cases (each runs against every saver)
// ---------------------------------------------------------------------------------

async fn put_get_latest_and_by_id(s: Arc<dyn Checkpointer>) {
    assert_eq!(s.get("t", None).await.unwrap(), None);
    let r0 = rec("c0", None, -1);
    let r1 = rec("c1", Some("c0"), 0);
    let r2 = rec("c2", Some("c1"), 1);
    for r in [&r0, &r1, &r2] {
        s.put("t", r.clone()).await.unwrap();
    }
    // Round trip is exact (floats, unicode, nested JSON, optional fields).
    assert_eq!(s.get("t", None).await.unwrap(), Some(r2.clone()));
    assert_eq!(s.get("t", Some("c0")).await.unwrap(), Some(r0));
    assert_eq!(s.get("t", Some("c1")).await.unwrap(), Some(r1.clone()));
    assert_eq!(s.get("t", Some("c2")).await.unwrap(), Some(r2));
    // "Latest" is the last saved, not the highest step: a fork from c1 saved later wins.
    let fork = rec("f", Some("c1"), 1);
    s.put("t", fork.clone()).await.unwrap();
    assert_eq!(s.get("t", None).await.unwrap(), Some(fork));
}

async fn thread_isolation(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "a", "c", 3).await;
    put_linear(&*s, "b", "c", 2).await; // same ids, other thread
    s.put_writes("a", "c2", vec![pw("t1", "x", json!(1))])
        .await
        .unwrap();
    assert_eq!(s.get("a", None).await.unwrap().unwrap().id, "c2");
    assert_eq!(s.get("b", None).await.unwrap().unwrap().id, "c1");
    assert_eq!(s.get("b", Some("c2")).await.unwrap(), None);
    assert_eq!(s.get("zzz", None).await.unwrap(), None);
    assert_eq!(
        ids(&s.list("a", None, None).await.unwrap()),
        ["c2", "c1", "c0"]
    );
    assert_eq!(ids(&s.list("b", None, None).await.unwrap()), ["c1", "c0"]);
    assert!(s.list("zzz", None, None).await.unwrap().is_empty());
    assert_eq!(s.pending_writes("a", "c2").await.unwrap().len(), 1);
    assert!(s.pending_writes("b", "c2").await.unwrap().is_empty());
    assert_eq!(ids(&s.chain("b", "c1").await.unwrap()), ["c0", "c1"]);
    assert!(s.chain("b", "c2").await.is_err());
}

async fn list_newest_first_limit_before(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 5).await;
    let all = s.list("t", None, None).await.unwrap();
    assert_eq!(ids(&all), ["c4", "c3", "c2", "c1", "c0"]);
    assert_eq!(all[0], rec("c4", Some("c3"), 4));
    assert_eq!(
        ids(&s.list("t", Some(2), None).await.unwrap()),
        ["c4", "c3"]
    );
    assert_eq!(
        ids(&s.list("t", Some(100), None).await.unwrap()),
        ["c4", "c3", "c2", "c1", "c0"]
    );
    assert!(s.list("t", Some(0), None).await.unwrap().is_empty());
    assert_eq!(
        ids(&s.list("t", None, Some("c3")).await.unwrap()),
        ["c2", "c1", "c0"]
    );
    assert_eq!(
        ids(&s.list("t", Some(2), Some("c3")).await.unwrap()),
        ["c2", "c1"]
    );
    assert!(s.list("t", None, Some("c0")).await.unwrap().is_empty());
    // Insertion order, not step order: a fork saved last is listed first.
    s.put("t", rec("f", Some("c1"), 2)).await.unwrap();
    assert_eq!(ids(&s.list("t", Some(2), None).await.unwrap()), ["f", "c4"]);
    assert_eq!(ids(&s.list("t", Some(1), Some("f")).await.unwrap()), ["c4"]);
}

async fn chain_follows_parents_across_fork(s: Arc<dyn Checkpointer>) {
    //        c0 - c1 - c2 - a3 - a4
    //                    \
    //                     b3 - b4 - b5
    put_linear(&*s, "t", "c", 3).await;
    s.put("t", rec("a3", Some("c2"), 3)).await.unwrap();
    s.put("t", rec("b3", Some("c2"), 3)).await.unwrap();
    s.put("t", rec("a4", Some("a3"), 4)).await.unwrap();
    s.put("t", rec("b4", Some("b3"), 4)).await.unwrap();
    s.put("t", rec("b5", Some("b4"), 5)).await.unwrap();
    // Unrelated thread with the same ids must not leak in.
    s.put("other", rec("a3", Some("zz"), 9)).await.unwrap();

    let a = s.chain("t", "a4").await.unwrap();
    assert_eq!(ids(&a), ["c0", "c1", "c2", "a3", "a4"]);
    assert_eq!(a[3], rec("a3", Some("c2"), 3));
    assert_eq!(
        ids(&s.chain("t", "b5").await.unwrap()),
        ["c0", "c1", "c2", "b3", "b4", "b5"]
    );
    assert_eq!(
        ids(&s.chain("t", "b3").await.unwrap()),
        ["c0", "c1", "c2", "b3"]
    );
    assert_eq!(ids(&s.chain("t", "c0").await.unwrap()), ["c0"]);
    // Each record's parent is the previous one.
    for w in s.chain("t", "b5").await.unwrap().windows(2) {
        assert_eq!(w[1].parent_id.as_deref(), Some(w[0].id.as_str()));
    }
}

async fn pending_writes_kept_in_order_and_dropped_by_child(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 2).await;
    assert!(s.pending_writes("t", "c1").await.unwrap().is_empty());
    let first = vec![
        pw("task-b", "messages", json!({"content": "b", "n": 2.5})),
        pw("task-a", "count", json!(1)),
    ];
    let second = vec![
        pw("task-c", "__done__", json!(null)),
        pwi(
            "task-a",
            -1,
            "__interrupt__",
            json!([{"value": "ask", "when": "during"}]),
        ),
    ];
    s.put_writes("t", "c1", first.clone()).await.unwrap();
    s.put_writes("t", "c1", vec![]).await.unwrap();
    s.put_writes("t", "c1", second.clone()).await.unwrap();
    s.put_writes("t", "c0", vec![pw("old", "x", json!("kept"))])
        .await
        .unwrap();
    let expected: Vec<_> = first.into_iter().chain(second).collect();
    assert_eq!(s.pending_writes("t", "c1").await.unwrap(), expected);
    assert_eq!(s.pending_writes("t", "c0").await.unwrap().len(), 1);
    // The latest checkpoint, or the one named, with its writes in one read.
    for (id, writes) in [
        (None, expected.clone()),
        (Some("c0"), s.pending_writes("t", "c0").await.unwrap()),
    ] {
        let (record, got) = s.get_with_writes("t", id).await.unwrap().unwrap();
        assert_eq!(record, s.get("t", id).await.unwrap().unwrap());
        assert_eq!(got, writes);
    }
    assert!(s
        .get_with_writes("t", Some("nope"))
        .await
        .unwrap()
        .is_none());
    assert!(s.get_with_writes("nope", None).await.unwrap().is_none());

    // A child of c1 takes its writes: c1's pending writes are gone but for the
    // questions its tasks asked (`KEPT_WRITES`), others stay.
    s.put("t", rec("c2", Some("c1"), 2)).await.unwrap();
    let kept = s.pending_writes("t", "c1").await.unwrap();
    let kept: Vec<&str> = kept.iter().map(|w| w.channel.as_str()).collect();
    assert_eq!(kept, ["__interrupt__"]);
    assert_eq!(
        s.pending_writes("t", "c0").await.unwrap(),
        vec![pw("old", "x", json!("kept"))]
    );
    let (latest, none_yet) = s.get_with_writes("t", None).await.unwrap().unwrap();
    assert_eq!((latest.id.as_str(), none_yet.len()), ("c2", 0));
    // Writes for a checkpoint that has none yet / unknown ids: empty, not an error.
    assert!(s.pending_writes("t", "c2").await.unwrap().is_empty());
    assert!(s.pending_writes("nope", "nope").await.unwrap().is_empty());
}

async fn delete_thread(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "gone", "c", 3).await;
    put_linear(&*s, "kept", "c", 2).await;
    s.put_writes("gone", "c2", vec![pw("t", "x", json!(1))])
        .await
        .unwrap();
    s.put_writes("kept", "c1", vec![pw("t", "x", json!(2))])
        .await
        .unwrap();
    // A subgraph's namespace goes with its thread; a thread whose id merely starts
    // like it stays.
    let sub = thread_key("gone", &child_ns("", "sub", "task-1"));
    let deeper = thread_key(
        "gone",
        &child_ns(&child_ns("", "sub", "task-1"), "inner", "t2"),
    );
    put_linear(&*s, &sub, "c", 2).await;
    put_linear(&*s, &deeper, "c", 1).await;
    s.put_writes(&sub, "c1", vec![pw("t", "x", json!(3))])
        .await
        .unwrap();
    put_linear(&*s, "gone2", "c", 1).await;
    s.delete_thread("gone").await.unwrap();
    for key in [&sub, &deeper] {
        assert_eq!(s.get(key, None).await.unwrap(), None);
        assert!(s.pending_writes(key, "c1").await.unwrap().is_empty());
    }
    assert_eq!(ids(&s.list("gone2", None, None).await.unwrap()), ["c0"]);
    assert_eq!(s.get("gone", None).await.unwrap(), None);
    assert_eq!(s.get("gone", Some("c1")).await.unwrap(), None);
    assert!(s.list("gone", None, None).await.unwrap().is_empty());
    assert!(s.pending_writes("gone", "c2").await.unwrap().is_empty());
    assert!(s.chain("gone", "c2").await.is_err());
    // Other threads untouched; deleting an unknown thread is fine.
    assert_eq!(
        ids(&s.list("kept", None, None).await.unwrap()),
        ["c1", "c0"]
    );
    assert_eq!(s.pending_writes("kept", "c1").await.unwrap().len(), 1);
    s.delete_thread("never-existed").await.unwrap();
    // The thread id can be reused from scratch.
    s.put("gone", rec("n0", None, -1)).await.unwrap();
    assert_eq!(ids(&s.list("gone", None, None).await.unwrap()), ["n0"]);
    assert_eq!(ids(&s.chain("gone", "n0").await.unwrap()), ["n0"]);
}

async fn get_unknown_is_none(s: Arc<dyn Checkpointer>) {
    assert_eq!(s.get("t", Some("nope")).await.unwrap(), None);
    put_linear(&*s, "t", "c", 2).await;
    assert_eq!(s.get("t", Some("nope")).await.unwrap(), None);
    assert_eq!(s.get("other", Some("c0")).await.unwrap(), None);
    assert_eq!(s.get("other", None).await.unwrap(), None);
}

async fn not_found_and_broken_chains_are_typed(s: Arc<dyn Checkpointer>) {
    let not_found = |e: CheckpointError, id: &str| match &e {
        CheckpointError::NotFound {
            thread_id,
            checkpoint_id,
            ..
        } => {
            assert_eq!((thread_id.as_str(), checkpoint_id.as_str()), ("t", id));
            assert!(e.to_string().contains(id), "{e}");
            assert!(e.to_string().contains("get_state_history"), "{e}");
        }
        other => panic!("expected NotFound, got {other:?}"),
    };
    not_found(s.chain("t", "nope").await.unwrap_err(), "nope");
    put_linear(&*s, "t", "c", 2).await;
    not_found(s.chain("t", "nope").await.unwrap_err(), "nope");
    assert_eq!(s.get("t", Some("nope")).await.unwrap(), None);
    // Another thread's ids are not this thread's.
    s.put("u", rec("only-u", None, 0)).await.unwrap();
    not_found(s.chain("t", "only-u").await.unwrap_err(), "only-u");
    // A record whose parent was never saved: the chain is broken (storage), not cut.
    s.put("t", rec("orphan", Some("missing"), 5)).await.unwrap();
    let e = s.chain("t", "orphan").await.unwrap_err();
    assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
    assert!(e.to_string().contains("missing"), "{e}");
}

async fn put_is_idempotent(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 3).await;
    s.put_writes("t", "c2", vec![pw("a", "x", json!(1))])
        .await
        .unwrap();
    // The same record again (a retried call): nothing changes, not even the order.
    s.put("t", rec("c1", Some("c0"), 1)).await.unwrap();
    s.put("t", rec("c2", Some("c1"), 2)).await.unwrap();
    assert_eq!(
        ids(&s.list("t", None, None).await.unwrap()),
        ["c2", "c1", "c0"]
    );
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c2");
    assert_eq!(ids(&s.chain("t", "c2").await.unwrap()), ["c0", "c1", "c2"]);
    // c2's own pending writes stay (a put drops its parent's, not its own).
    assert_eq!(s.pending_writes("t", "c2").await.unwrap().len(), 1);
    // Another record under a stored id: a conflict naming the thread; nothing changes.
    let mut other = rec("c1", Some("c0"), 1);
    other.metadata = json!({"step": 1, "writer": "someone else"});
    let e = s.put("t", other.clone()).await.unwrap_err();
    match &e {
        CheckpointError::Conflict { thread_id, .. } => assert_eq!(thread_id, "t"),
        e => panic!("expected Conflict, got {e:?}"),
    }
    assert!(
        e.to_string().contains("\"t\"") && e.to_string().contains("c1"),
        "{e}"
    );
    assert_eq!(e.thread_id(), Some("t"));
    assert_eq!(
        s.get("t", Some("c1")).await.unwrap(),
        Some(rec("c1", Some("c0"), 1))
    );
    assert_eq!(
        ids(&s.list("t", None, None).await.unwrap()),
        ["c2", "c1", "c0"]
    );
    // The same id in another thread is another checkpoint.
    s.put("u", other.clone()).await.unwrap();
    assert_eq!(s.get("u", None).await.unwrap(), Some(other));
}

async fn put_writes_dedupes_by_task_and_idx(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 2).await;
    let a0 = pwi("a", 0, "x", json!("first"));
    let a1 = pwi("a", 1, "__done__", json!(null));
    let b0 = pwi("b", 0, "x", json!(3));
    let ai = pwi("a", -1, "__interrupt__", json!(["ask"]));
    s.put_writes("t", "c1", vec![a0.clone(), a1.clone()])
        .await
        .unwrap();
    // A retried call, and a new write under a stored key: the first one stays.
    s.put_writes("t", "c1", vec![a0.clone(), a1.clone()])
        .await
        .unwrap();
    s.put_writes(
        "t",
        "c1",
        vec![pwi("a", 0, "x", json!("second")), b0.clone(), ai.clone()],
    )
    .await
    .unwrap();
    // Duplicates inside one call: the first one.
    s.put_writes(
        "t",
        "c1",
        vec![pwi("c", 0, "x", json!(1)), pwi("c", 0, "x", json!(2))],
    )
    .await
    .unwrap();
    assert_eq!(
        s.pending_writes("t", "c1").await.unwrap(),
        vec![a0.clone(), a1, b0, ai.clone(), pwi("c", 0, "x", json!(1))]
    );
    // The same key under another checkpoint or thread is another write.
    s.put_writes("t", "c0", vec![a0.clone()]).await.unwrap();
    s.put_writes("u", "c1", vec![a0.clone()]).await.unwrap();
    assert_eq!(s.pending_writes("t", "c0").await.unwrap(), vec![a0.clone()]);
    assert_eq!(s.pending_writes("u", "c1").await.unwrap(), vec![a0]);
    // Once a child takes them, the key is free again (a new step under c1); the
    // question asked stays (`KEPT_WRITES`).
    s.put("t", rec("c2", Some("c1"), 2)).await.unwrap();
    s.put_writes("t", "c1", vec![pwi("a", 0, "x", json!("again"))])
        .await
        .unwrap();
    assert_eq!(
        s.pending_writes("t", "c1").await.unwrap(),
        vec![ai, pwi("a", 0, "x", json!("again"))]
    );
}

async fn time_travel_to_an_id(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 4).await;
    s.put_writes("t", "c3", vec![pw("late", "x", json!(1))])
        .await
        .unwrap();
    // An old checkpoint reads as it was saved, with its ancestors only.
    assert_eq!(
        s.get("t", Some("c1")).await.unwrap(),
        Some(rec("c1", Some("c0"), 1))
    );
    assert_eq!(ids(&s.chain("t", "c1").await.unwrap()), ["c0", "c1"]);
    assert_eq!(
        ids(&s.list("t", None, Some("c2")).await.unwrap()),
        ["c1", "c0"]
    );
    // Forking from it: the fork is the latest, the old branch stays whole.
    s.put("t", rec("f2", Some("c1"), 2)).await.unwrap();
    s.put("t", rec("f3", Some("f2"), 3)).await.unwrap();
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "f3");
    assert_eq!(
        ids(&s.chain("t", "f3").await.unwrap()),
        ["c0", "c1", "f2", "f3"]
    );
    assert_eq!(
        ids(&s.chain("t", "c3").await.unwrap()),
        ["c0", "c1", "c2", "c3"]
    );
    assert_eq!(
        ids(&s.list("t", None, None).await.unwrap()),
        ["f3", "f2", "c3", "c2", "c1", "c0"]
    );
    assert_eq!(
        s.pending_writes("t", "c3").await.unwrap(),
        vec![pw("late", "x", json!(1))]
    );
}

async fn put_next_is_a_compare_and_set(s: Arc<dyn Checkpointer>) {
    let moved = |e: CheckpointError| {
        match &e {
            CheckpointError::Conflict { thread_id, .. } => assert_eq!(thread_id, "t"),
            other => panic!("expected Conflict, got {other:?}"),
        }
        let m = e.to_string();
        assert!(
            m.contains("advanced by another run") && m.contains("\"t\""),
            "{m}"
        );
        m
    };
    // A new thread: only a record without a parent starts it.
    s.put_next("t", rec("c0", None, 0)).await.unwrap();
    let m = moved(s.put_next("t", rec("x0", None, 0)).await.unwrap_err());
    assert!(m.contains("\"c0\""), "{m}");
    s.put_next("t", rec("c1", Some("c0"), 1)).await.unwrap();
    s.put_writes("t", "c1", vec![pw("a", "x", json!(1))])
        .await
        .unwrap();
    // A step that follows c0 while the thread is at c1: refused, nothing written.
    let m = moved(
        s.put_next("t", rec("late", Some("c0"), 1))
            .await
            .unwrap_err(),
    );
    assert!(m.contains("\"c0\"") && m.contains("\"c1\""), "{m}");
    assert_eq!(s.get("t", Some("late")).await.unwrap(), None);
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c1");
    assert_eq!(s.pending_writes("t", "c1").await.unwrap().len(), 1);
    // A retry of a saved step is fine (idempotent), even though the thread moved on.
    s.put_next("t", rec("c2", Some("c1"), 2)).await.unwrap();
    s.put_next("t", rec("c1", Some("c0"), 1)).await.unwrap();
    s.put_next("t", rec("c2", Some("c1"), 2)).await.unwrap();
    assert!(s.pending_writes("t", "c1").await.unwrap().is_empty());
    assert_eq!(
        ids(&s.list("t", None, None).await.unwrap()),
        ["c2", "c1", "c0"]
    );
    // A fork (`put`) becomes the latest; the next steps follow it.
    s.put("t", rec("f2", Some("c1"), 2)).await.unwrap();
    moved(s.put_next("t", rec("c3", Some("c2"), 3)).await.unwrap_err());
    s.put_next("t", rec("f3", Some("f2"), 3)).await.unwrap();
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "f3");
    // Other threads are not affected; a deleted thread starts again.
    s.put_next("u", rec("c0", None, 0)).await.unwrap();
    s.delete_thread("t").await.unwrap();
    s.put_next("t", rec("n0", None, 0)).await.unwrap();
}

fn next(r: CheckpointRecord) -> Put {
    Put::Record {
        record: Box::new(r),
        next: true,
    }
}

fn writes_to(checkpoint_id: &str, writes: Vec<PendingWrite>) -> Put {
    Put::Writes {
        checkpoint_id: checkpoint_id.into(),
        writes,
    }
}

async fn put_many_is_one_transaction(s: Arc<dyn Checkpointer>) {
    // A batch: records and writes, in order, as their own calls would save them.
    s.put_many(
        "t",
        vec![
            next(rec("c0", None, 0)),
            writes_to("c0", vec![pw("a", "x", json!(0))]),
            next(rec("c1", Some("c0"), 1)),
            writes_to(
                "c1",
                vec![pw("a", "x", json!(1)), pwi("b", 3, "y", json!("é"))],
            ),
            writes_to("c1", vec![pw("a", "x", json!("dup"))]),
        ],
    )
    .await
    .unwrap();
    assert_eq!(ids(&s.list("t", None, None).await.unwrap()), ["c1", "c0"]);
    assert_eq!(
        s.get("t", None).await.unwrap().unwrap(),
        rec("c1", Some("c0"), 1)
    );
    // c1 dropped c0's writes; c1's are deduplicated by (task, idx), first kept.
    assert!(s.pending_writes("t", "c0").await.unwrap().is_empty());
    let pending = s.pending_writes("t", "c1").await.unwrap();
    assert_eq!(
        pending.iter().map(|w| &*w.value).collect::<Vec<_>>(),
        [&json!(1), &json!("é")]
    );
    // The same batch again (a retry after an unknown outcome) is fine, and leaves what
    // the first one left: c0's writes are not saved again (c1, stored, holds them).
    s.put_many(
        "t",
        vec![
            next(rec("c0", None, 0)),
            writes_to("c0", vec![pw("a", "x", json!(0))]),
            next(rec("c1", Some("c0"), 1)),
        ],
    )
    .await
    .unwrap();
    assert!(s.pending_writes("t", "c0").await.unwrap().is_empty());
    // A refused item leaves nothing of the batch: c2 and its writes are not saved.
    let e = s
        .put_many(
            "t",
            vec![
                next(rec("c2", Some("c1"), 2)),
                writes_to("c2", vec![pw("a", "x", json!(2))]),
                next(rec("late", Some("c0"), 1)),
            ],
        )
        .await
        .unwrap_err();
    match &e {
        CheckpointError::Conflict { thread_id, .. } => assert_eq!(thread_id, "t"),
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert!(e.to_string().contains("advanced by another run"), "{e}");
    assert_eq!(s.get("t", Some("c2")).await.unwrap(), None);
    assert!(s.pending_writes("t", "c2").await.unwrap().is_empty());
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c1");
    assert_eq!(s.pending_writes("t", "c1").await.unwrap().len(), 2);
    // So does a record under a used id with other content.
    let mut other = rec("c1", Some("c0"), 1);
    other.source = "fork".into();
    let e = s
        .put_many(
            "t",
            vec![
                next(rec("c2", Some("c1"), 2)),
                Put::Record {
                    record: Box::new(other),
                    next: false,
                },
            ],
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("other content"), "{e}");
    assert_eq!(s.get("t", Some("c2")).await.unwrap(), None);
    // The thread goes on from where it was; an empty batch does nothing.
    s.put_many("t", vec![]).await.unwrap();
    s.put_many(
        "t",
        vec![
            next(rec("c2", Some("c1"), 2)),
            next(rec("c3", Some("c2"), 3)),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        ids(&s.chain("t", "c3").await.unwrap()),
        ["c0", "c1", "c2", "c3"]
    );
    assert!(s.pending_writes("t", "c1").await.unwrap().is_empty());
    // Writes of the batch's first parent, saved before its next record, go with it.
    s.put_many(
        "t",
        vec![
            writes_to("c3", vec![pw("a", "x", json!(3))]),
            next(rec("c4", Some("c3"), 4)),
            writes_to("c4", vec![pw("a", "x", json!(4))]),
        ],
    )
    .await
    .unwrap();
    assert!(s.pending_writes("t", "c3").await.unwrap().is_empty());
    assert_eq!(s.pending_writes("t", "c4").await.unwrap().len(), 1);
    assert_eq!(
        ids(&s.list("t", Some(2), None).await.unwrap()),
        ["c4", "c3"]
    );
}

async fn put_next_has_one_winner(s: Arc<dyn Checkpointer>) {
    for round in 0..5 {
        let thread = format!("race-{round}");
        s.put_next(&thread, rec("c0", None, 0)).await.unwrap();
        let racers: Vec<_> = (0..8)
            .map(|i| {
                let (s, thread) = (s.clone(), thread.clone());
                tokio::spawn(async move {
                    s.put_next(&thread, rec(&format!("r{i}"), Some("c0"), 1))
                        .await
                })
            })
            .collect();
        let mut won = Vec::new();
        for (i, r) in racers.into_iter().enumerate() {
            match r.await.unwrap() {
                Ok(()) => won.push(format!("r{i}")),
                Err(e) => assert!(matches!(e, CheckpointError::Conflict { .. }), "{e:?}"),
            }
        }
        assert_eq!(won.len(), 1, "{won:?}");
        let all = s.list(&thread, None, None).await.unwrap();
        assert_eq!(ids(&all), [won[0].as_str(), "c0"]);
        assert_eq!(s.get(&thread, None).await.unwrap().unwrap().id, won[0]);
    }
}

async fn close_refuses_later_calls(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 2).await;
    s.close().await.unwrap();
    s.close().await.unwrap(); // idempotent
    let errors = [
        s.put("t", rec("c2", Some("c1"), 2)).await.unwrap_err(),
        s.put_next("t", rec("c2", Some("c1"), 2)).await.unwrap_err(),
        s.put_writes("t", "c1", vec![pw("a", "x", json!(1))])
            .await
            .unwrap_err(),
        s.get("t", None).await.unwrap_err(),
        s.chain("t", "c1").await.unwrap_err(),
        s.list("t", None, None).await.unwrap_err(),
        s.pending_writes("t", "c1").await.unwrap_err(),
        s.delete_thread("t").await.unwrap_err(),
        s.list_stalled(Duration::from_secs(1), None)
            .await
            .unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
        assert!(e.to_string().contains("was closed"), "{e}");
    }
}

async fn concurrent_callers(s: Arc<dyn Checkpointer>) {
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let s = s.clone();
            tokio::spawn(async move {
                let thread = format!("thread-{t}");
                put_linear(&*s, &thread, "c", 20).await;
                s.put_writes(&thread, "c19", vec![pw("x", "y", json!(t))])
                    .await
                    .unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    for t in 0..16 {
        let thread = format!("thread-{t}");
        assert_eq!(s.list(&thread, None, None).await.unwrap().len(), 20);
        assert_eq!(s.chain(&thread, "c19").await.unwrap().len(), 20);
        assert_eq!(
            s.pending_writes(&thread, "c19").await.unwrap(),
            vec![pw("x", "y", json!(t))]
        );
    }
}

// ---------------------------------------------------------------------------------
// Snapshots: saver level
// ---------------------------------------------------------------------------------

fn with_snapshot(mut r: CheckpointRecord, at: i64) -> CheckpointRecord {
    r.snapshot = Some(json!({"v": 1, "values": {"count": at}}).into());
    r
}

/// `c0 <- c1 <- ... <- c{n-1}` with snapshots on the records in `snaps`, put as a run
/// does (`put_next`).
async fn put_with_snapshots(s: &dyn Checkpointer, thread: &str, n: usize, snaps: &[usize]) {
    for i in 0..n {
        let parent = (i > 0).then(|| format!("c{}", i - 1));
        let r = rec(&format!("c{i}"), parent.as_deref(), i as i64);
        let r = if snaps.contains(&i) {
            with_snapshot(r, i as i64)
        } else {
            r
        };
        s.put_next(thread, r).await.unwrap();
    }
}

/// `r` as record format 3 stored it (before format 4): 9 elements, the source a
/// string, one `[node, channel, value]` per write, the metadata (kept whole) and the
/// snapshot slot (`null` when none) always there, the checksum last.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn format_3(r: &CheckpointRecord) -> String {
    let writes: Vec<serde_json::Value> = r
        .writes
        .iter()
        .map(|w| json!([w.node, w.channel, w.value]))
        .collect();
    let next: Vec<serde_json::Value> = r
        .next
        .iter()
        .map(|t| json!([t.id, t.node, t.arg]))
        .collect();
    let tag = if r.snapshot.is_some() { 3 } else { 2 };
    let items = json!([
        tag,
        r.step,
        r.source,
        r.created_at,
        writes,
        next,
        [r.metadata],
        r.snapshot
    ]);
    let mut text = serde_json::to_string(&items).unwrap();
    text.pop();
    let crc = ironloop::checkpoint::record::checksum(&r.id, r.parent_id.as_deref(), &text);
    format!("{text},{crc}]")
}

/// The chain `put_format_3_then_4` leaves: `c0..c5`, a snapshot on `c2`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn chain_3_then_4() -> Vec<CheckpointRecord> {
    (0..6i64)
        .map(|i| {
            let parent = (i > 0).then(|| format!("c{}", i - 1));
            let r = rec(&format!("c{i}"), parent.as_deref(), i);
            if i == 2 {
                with_snapshot(r, i)
            } else {
                r
            }
        })
        .collect()
}

/// A thread whose records `c0..c3` are in format 3 (stored as an earlier ironloop
/// wrote them, by `rewrite(id, text)`) loads as it was, and goes on in format 4 on the
/// same chain: every read, the snapshot of a format-3 record found, a retried `put`
/// of a format-3 record taken as the same record and another one refused.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn format_3_records_load_beside_format_4<F, Fut>(s: &dyn Checkpointer, rewrite: F)
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let all = chain_3_then_4();
    for r in &all[..4] {
        s.put_next("t", r.clone()).await.unwrap();
    }
    for r in &all[..4] {
        let before = rewrite(r.id.clone(), format_3(r)).await;
        assert!(
            before.starts_with(if r.snapshot.is_some() { "[5," } else { "[4," }),
            "{before}"
        );
    }
    for r in &all[4..] {
        s.put_next("t", r.clone()).await.unwrap();
    }
    for r in &all {
        assert_eq!(s.get("t", Some(&r.id)).await.unwrap().as_ref(), Some(r));
    }
    assert_eq!(s.get("t", None).await.unwrap().as_ref(), Some(&all[5]));
    assert_eq!(s.chain("t", "c5").await.unwrap(), all);
    assert_eq!(s.chain_from_snapshot("t", "c5").await.unwrap(), all[2..]);
    assert_eq!(s.chain_from_snapshot("t", "c1").await.unwrap(), all[..2]);
    assert_eq!(
        ids(&s.list("t", Some(3), Some("c5")).await.unwrap()),
        ["c4", "c3", "c2"]
    );
    s.put("t", all[1].clone()).await.unwrap();
    s.put("t", all[2].clone()).await.unwrap();
    let mut other = all[1].clone();
    other.step = 9;
    assert!(s.put("t", other).await.is_err());
    // The format-3 texts are still there; new records are in format 4.
    assert!(rewrite("c1".into(), format_3(&all[1]))
        .await
        .starts_with("[2,"));
    assert!(rewrite("c5".into(), String::new()).await.starts_with("[4,"));
}

async fn chain_from_snapshot_stops_at_the_nearest_snapshot(s: Arc<dyn Checkpointer>) {
    put_with_snapshots(&*s, "t", 10, &[3, 7]).await;
    let from = |id: &'static str| {
        let s = s.clone();
        async move { s.chain_from_snapshot("t", id).await.unwrap() }
    };
    assert_eq!(ids(&from("c9").await), ["c7", "c8", "c9"]);
    assert_eq!(ids(&from("c7").await), ["c7"], "a snapshot loads alone");
    assert_eq!(ids(&from("c6").await), ["c3", "c4", "c5", "c6"]);
    assert_eq!(
        ids(&from("c2").await),
        ["c0", "c1", "c2"],
        "no snapshot on the chain: the whole chain"
    );
    // The snapshot comes back as it was put; `chain` still reads to the root.
    let full = s.chain("t", "c9").await.unwrap();
    assert_eq!(full.len(), 10);
    assert_eq!(full[7], with_snapshot(rec("c7", Some("c6"), 7), 7));
    assert_eq!(full[8].snapshot, None);
    assert_eq!(
        s.get("t", Some("c3")).await.unwrap(),
        Some(with_snapshot(rec("c3", Some("c2"), 3), 3))
    );
    // A record whose writes or metadata hold a "snapshot" key is not a snapshot.
    let mut r = rec("w", Some("c9"), 10);
    r.writes[0].value = json!({"snapshot": {"v": 1}}).into();
    r.metadata = json!({"snapshot": true});
    s.put_next("t", r).await.unwrap();
    assert_eq!(ids(&from("w").await), ["c7", "c8", "c9", "w"]);
    // Idempotent put, conflicting snapshot under a stored id.
    s.put("t", with_snapshot(rec("c7", Some("c6"), 7), 7))
        .await
        .unwrap();
    let other = with_snapshot(rec("c7", Some("c6"), 7), 70);
    assert!(matches!(
        s.put("t", other).await,
        Err(CheckpointError::Conflict { .. })
    ));
    // Unknown ids and other threads, as `chain`.
    assert!(matches!(
        s.chain_from_snapshot("t", "nope").await,
        Err(CheckpointError::NotFound { .. })
    ));
    assert!(matches!(
        s.chain_from_snapshot("other", "c9").await,
        Err(CheckpointError::NotFound { .. })
    ));
}

/// `rec(id)` holding a snapshot in pieces (as the engine writes one) whose document,
/// about 3 KB, is held 40 times, once as a copy and otherwise shared: the stores that
/// write text keep it once (record format 5).
fn with_repeated_snapshot(r: CheckpointRecord) -> CheckpointRecord {
    let doc = format!(
        "{{\"text\":\"{}\",\"n\":[1,2.5,null]}}",
        "héllo \\\"doc\\\" ".repeat(200)
    );
    let shared = Piece::from(doc.as_str());
    let mut runs = vec![Run::from([Piece::from(r#"{"v":1,"values":{"docs":["#)])];
    runs.push(Run::from([Piece::from(doc.as_str())]));
    for _ in 1..40 {
        runs.push(Run::from([Piece::from(","), shared.clone()]));
    }
    runs.push(Run::from([Piece::from("]}}")]));
    CheckpointRecord {
        snapshot: Some(Snapshot::Pieces(runs)),
        ..r
    }
}

/// A snapshot whose pieces repeat reads back whole through every read of every saver,
/// `chain_from_snapshot` stops at it, and the stalled threads' query reads its record.
async fn a_snapshot_whose_pieces_repeat_reads_back_whole(s: Arc<dyn Checkpointer>) {
    let r1 = with_repeated_snapshot(rec("c1", Some("c0"), 1));
    let Some(Snapshot::Pieces(runs)) = &r1.snapshot else {
        unreachable!()
    };
    let want: serde_json::Value = serde_json::from_str(&join_runs(runs)).unwrap();
    assert_eq!(want["values"]["docs"].as_array().unwrap().len(), 40);
    s.put_next("t", rec("c0", None, 0)).await.unwrap();
    s.put_next("t", r1.clone()).await.unwrap();
    s.put_next("t", rec("c2", Some("c1"), 2)).await.unwrap();
    let got = s.get("t", Some("c1")).await.unwrap().unwrap();
    assert_eq!(got, r1);
    assert_eq!(got.snapshot.unwrap().json().unwrap().as_ref(), &want);
    assert_eq!(
        ids(&s.chain_from_snapshot("t", "c2").await.unwrap()),
        ["c1", "c2"]
    );
    assert_eq!(s.chain("t", "c2").await.unwrap()[1], r1);
    // A retried put is the same record; another snapshot under its id is a conflict.
    s.put("t", r1.clone()).await.unwrap();
    let mut other = with_repeated_snapshot(rec("c1", Some("c0"), 1));
    if let Some(Snapshot::Pieces(runs)) = &mut other.snapshot {
        runs.pop();
        runs.push(Run::from([Piece::from("],\"n\":1}}")]));
    }
    assert!(matches!(
        s.put("t", other).await,
        Err(CheckpointError::Conflict { .. })
    ));
    // Its thread, stopped there with tasks to run, is stalled.
    s.put_next("u", rec("c0", None, 0)).await.unwrap();
    s.put_next("u", r1).await.unwrap();
    // PostgreSQL counts idleness from the row's update time, not the record's.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut stalled = s.list_stalled(Duration::from_secs(1), None).await.unwrap();
    stalled.sort();
    assert_eq!(stalled, ["t", "u"]);
}

async fn snapshot_across_a_fork(s: Arc<dyn Checkpointer>) {
    //  c0 - c1 - c2(S) - c3 - c4
    //         \       \
    //          f2 - f3  g3(S) - g4
    put_with_snapshots(&*s, "t", 5, &[2]).await;
    s.put("t", rec("f2", Some("c1"), 2)).await.unwrap();
    s.put("t", rec("f3", Some("f2"), 3)).await.unwrap();
    s.put("t", with_snapshot(rec("g3", Some("c2"), 3), 3))
        .await
        .unwrap();
    s.put("t", rec("g4", Some("g3"), 4)).await.unwrap();
    let from = |id: &'static str| {
        let s = s.clone();
        async move { ids(&s.chain_from_snapshot("t", id).await.unwrap()).join(" ") }
    };
    assert_eq!(from("c4").await, "c2 c3 c4");
    assert_eq!(
        from("f3").await,
        "c0 c1 f2 f3",
        "a fork made before the snapshot does not see it"
    );
    assert_eq!(from("g4").await, "g3 g4", "the fork's own snapshot");
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "g4");
    // A chain cut below a snapshot loads from it; reading past it is damage.
    s.put("x", with_snapshot(rec("x1", Some("missing"), 1), 1))
        .await
        .unwrap();
    s.put("x", rec("x2", Some("x1"), 2)).await.unwrap();
    assert_eq!(
        ids(&s.chain_from_snapshot("x", "x2").await.unwrap()),
        ["x1", "x2"]
    );
    assert!(matches!(
        s.chain("x", "x2").await,
        Err(CheckpointError::Storage(_))
    ));
}

// ---------------------------------------------------------------------------------
// Snapshots: a graph's threads, loaded from snapshots, against the full replay
// ---------------------------------------------------------------------------------

mod graphs {
    use super::*;
    use async_trait::async_trait;
    use ironloop::graph::{
        ChannelKind, Goto, Graph, GraphError, GraphSpec, JsonCodec, MessageList, NodeFailure,
        NodeOutput, NodeRunner, Reducer, Router, RunInput, RunOptions, StateView, TaskContext, Val,
        SNAPSHOT_EVERY, START,
    };
    use ironloop::message::Message;
    use serde_json::Value;

    fn int(s: &StateView, c: &str) -> i64 {
        s.get(c)
            .and_then(|v| v.as_json())
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    /// `a` and `b` take turns adding 1 to `count` (and its value to `log`, and, with
    /// `messages`, a message) until `count` reaches the limit.
    struct Inc {
        messages: bool,
    }

    #[async_trait]
    impl NodeRunner for Inc {
        async fn run(
            &self,
            s: StateView,
            _: Option<Val>,
            ctx: TaskContext,
        ) -> Result<NodeOutput, NodeFailure> {
            let n = int(&s, "count") + 1;
            let mut writes = vec![
                ("count".to_owned(), Val::Json(json!(n))),
                ("log".to_owned(), Val::Json(json!([n]))),
            ];
            if self.messages {
                let m = Message::ai(format!("{} says {n}", ctx.node), vec![]);
                writes.push((
                    "messages".to_owned(),
                    Val::Messages(MessageList::from_messages([Arc::new(m)])),
                ));
            }
            Ok(NodeOutput {
                writes,
                ..Default::default()
            })
        }
    }

    /// To the other node, or the end once `count` reaches the limit.
    struct Until(i64, &'static str);
    impl Router for Until {
        fn route(&self, s: &StateView, _: &TaskContext) -> Result<Vec<Goto>, GraphError> {
            Ok(vec![if int(s, "count") >= self.0 {
                Goto::End
            } else {
                Goto::Node(self.1.into())
            }])
        }
    }

    struct Append;
    impl Reducer for Append {
        fn reduce(&self, _: &str, cur: Option<Val>, upd: Val) -> Result<Val, GraphError> {
            let mut a = match cur {
                Some(Val::Json(Value::Array(a))) => a,
                _ => vec![],
            };
            if let Val::Json(Value::Array(b)) = upd {
                a.extend(b);
            }
            Ok(Val::Json(Value::Array(a)))
        }
    }

    fn graph(limit: i64, messages: bool, cp: Arc<dyn Checkpointer>) -> Graph {
        let mut spec = GraphSpec::default()
            .channel("count", ChannelKind::LastValue)
            .channel("log", ChannelKind::Reducer(Arc::new(Append)));
        if messages {
            spec = spec.channel("messages", ChannelKind::Messages);
        }
        let spec = spec
            .node("a", Arc::new(Inc { messages }))
            .node("b", Arc::new(Inc { messages }))
            .edge(START, "a")
            .branch("a", Arc::new(Until(limit, "b")), None)
            .branch("b", Arc::new(Until(limit, "a")), None);
        Graph::compile(spec, Some(cp), Arc::new(JsonCodec), vec![], vec![]).unwrap()
    }

    fn opts(thread: &str, at: Option<&str>) -> RunOptions {
        RunOptions {
            thread_id: Some(thread.into()),
            checkpoint_id: at.map(Into::into),
            recursion_limit: 100_000,
            ..Default::default()
        }
    }

    /// The state as JSON, messages as their texts.
    fn state(s: &StateView) -> Value {
        let mut out = serde_json::Map::new();
        for c in ["count", "log", "messages"] {
            let v = match s.get(c) {
                Some(Val::Json(v)) => v.clone(),
                Some(Val::Messages(l)) => {
                    json!(l.iter().map(|m| m.content.text()).collect::<Vec<_>>())
                }
                Some(other) => panic!("unexpected {other:?}"),
                None => Value::Null,
            };
            out.insert(c.into(), v);
        }
        Value::Object(out)
    }

    /// Every checkpoint of `thread` loads (through snapshots, with a cold cache) to
    /// the state the full replay (`history`) gives. A load that starts at a snapshot
    /// reads at most `SNAPSHOT_EVERY` records; one that does not reads a chain without
    /// any snapshot. Returns how many checkpoints load from the root (no snapshot).
    async fn assert_loads_match_replay(
        cp: &Arc<dyn Checkpointer>,
        g: &Graph,
        thread: &str,
    ) -> usize {
        let history = g.history(thread, None, None).await.unwrap();
        let cold = graph(0, g.channel_kind("messages").is_some(), cp.clone());
        let mut from_root = 0;
        for h in &history {
            let loaded = cold
                .load(thread, Some(&h.record.id))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(state(&loaded.state), state(&h.state), "at {}", h.record.id);
            assert_eq!(loaded.record, h.record);
            let from = cp.chain_from_snapshot(thread, &h.record.id).await.unwrap();
            if from[0].snapshot.is_some() {
                assert!(
                    from.len() <= SNAPSHOT_EVERY,
                    "{} records to load",
                    from.len()
                );
            } else {
                assert_eq!(from[0].parent_id, None, "stopped short of the root");
                assert!(from.iter().all(|r| r.snapshot.is_none()));
                from_root += 1;
            }
        }
        let latest = cold.load(thread, None).await.unwrap().unwrap();
        assert_eq!(state(&latest.state), state(&history[0].state));
        from_root
    }

    async fn long_thread(cp: Arc<dyn Checkpointer>, messages: bool) {
        let steps = 5 * SNAPSHOT_EVERY as i64 + 3;
        let g = graph(steps, messages, cp.clone());
        let input = RunInput::Values(vec![("count".into(), Val::Json(json!(0)))]);
        let r = g.run(input, opts("t", None)).await.unwrap();
        assert_eq!(int(&r.state, "count"), steps);
        let records = cp.list("t", None, None).await.unwrap();
        let snapshots = records.iter().filter(|r| r.snapshot.is_some()).count();
        assert!(
            snapshots >= records.len() / SNAPSHOT_EVERY,
            "{snapshots} snapshots in {} records",
            records.len()
        );
        assert_eq!(
            assert_loads_match_replay(&cp, &g, "t").await,
            SNAPSHOT_EVERY - 1,
            "all but the records before the first snapshot load from one"
        );

        // update_state on an old checkpoint branches off it, right.
        let history = g.history("t", None, None).await.unwrap();
        let old = &history[history.len() / 2];
        let id = g
            .update_state(
                "t",
                Some(&old.record.id),
                vec![("log".into(), Val::Json(json!([-1])))],
                Some("b".into()),
                None,
            )
            .await
            .unwrap();
        let cold = graph(steps, messages, cp.clone());
        let forked = cold.load("t", Some(&id)).await.unwrap().unwrap();
        let mut expected = state(&old.state);
        expected["log"].as_array_mut().unwrap().push(json!(-1));
        assert_eq!(state(&forked.state), expected);
        // Continuing the branch runs to the limit across more snapshots.
        let r = cold.run(RunInput::Continue, opts("t", None)).await.unwrap();
        assert_eq!(int(&r.state, "count"), steps);
        assert_loads_match_replay(&cp, &cold, "t").await;

        // Time travel: a run from an old checkpoint forks; every state still right.
        let history = cold.history("t", None, None).await.unwrap();
        let at = history[history.len() - 5].record.id.clone();
        let r = cold
            .run(RunInput::Continue, opts("t", Some(&at)))
            .await
            .unwrap();
        assert_eq!(int(&r.state, "count"), steps);
        assert_loads_match_replay(&cp, &cold, "t").await;
    }

    /// A saver that passes every call to `inner` and notes each save: `put_many` as
    /// its puts (`w:<checkpoint>` writes, `r:<id>` a record), `put_writes` as `pw:`.
    struct Noting {
        inner: MemorySaver,
        saves: std::sync::Mutex<Vec<Vec<String>>>,
    }

    #[async_trait]
    impl Checkpointer for Noting {
        async fn put_many(&self, t: &str, puts: Vec<Put>) -> ironloop::checkpoint::Result<()> {
            let shape = puts
                .iter()
                .map(|p| match p {
                    Put::Record { record, .. } => format!("r:{}", record.id),
                    Put::Writes { checkpoint_id, .. } => format!("w:{checkpoint_id}"),
                })
                .collect();
            self.saves.lock().unwrap().push(shape);
            self.inner.put_many(t, puts).await
        }
        async fn put_writes(
            &self,
            t: &str,
            id: &str,
            writes: Vec<PendingWrite>,
        ) -> ironloop::checkpoint::Result<()> {
            self.saves.lock().unwrap().push(vec![format!("pw:{id}")]);
            self.inner.put_writes(t, id, writes).await
        }
        async fn get(
            &self,
            t: &str,
            id: Option<&str>,
        ) -> ironloop::checkpoint::Result<Option<CheckpointRecord>> {
            self.inner.get(t, id).await
        }
        async fn chain_from(
            &self,
            t: &str,
            id: &str,
            from: ChainFrom,
        ) -> ironloop::checkpoint::History {
            self.inner.chain_from(t, id, from).await
        }
        async fn list(
            &self,
            t: &str,
            limit: Option<usize>,
            before: Option<&str>,
        ) -> ironloop::checkpoint::Result<Vec<CheckpointRecord>> {
            self.inner.list(t, limit, before).await
        }
        async fn pending_writes(
            &self,
            t: &str,
            id: &str,
        ) -> ironloop::checkpoint::Result<Vec<PendingWrite>> {
            self.inner.pending_writes(t, id).await
        }
        async fn delete_thread(&self, t: &str) -> ironloop::checkpoint::Result<()> {
            self.inner.delete_thread(t).await
        }
        async fn delete_checkpoints(
            &self,
            t: &str,
            ids: Vec<String>,
        ) -> ironloop::checkpoint::Result<()> {
            self.inner.delete_checkpoints(t, ids).await
        }
        async fn thread_keys(&self) -> ironloop::checkpoint::Result<Vec<String>> {
            self.inner.thread_keys().await
        }
        async fn close(&self) -> ironloop::checkpoint::Result<()> {
            self.inner.close().await
        }
        async fn list_stalled(
            &self,
            stale_after: Duration,
            limit: Option<usize>,
        ) -> ironloop::checkpoint::Result<Vec<String>> {
            self.inner.list_stalled(stale_after, limit).await
        }
        async fn claim(&self, c: &Claim) -> ironloop::checkpoint::Result<Vec<String>> {
            self.inner.claim(c).await
        }
    }

    #[tokio::test]
    async fn a_runs_input_is_saved_with_its_input_checkpoint_in_one_batch() {
        // Under the default durability ("sync"), the input (the pending writes of the
        // input checkpoint), that checkpoint and the first step's (START's, which
        // runs no node) are one `put_many`: one transaction, never a checkpoint
        // without its input, one commit instead of three. Each later step is its own
        // save, before the next step starts.
        let cp = Arc::new(Noting {
            inner: MemorySaver::new(),
            saves: Default::default(),
        });
        let g = graph(2, false, cp.clone());
        let input = RunInput::Values(vec![("count".into(), Val::Json(json!(0)))]);
        let r = g.run(input, opts("t", None)).await.unwrap();
        assert_eq!(int(&r.state, "count"), 2);
        let saves = cp.saves.lock().unwrap().clone();
        let records = cp.list("t", None, None).await.unwrap();
        let ids: Vec<&str> = records.iter().rev().map(|r| r.id.as_str()).collect();
        // The input checkpoint, START's step, a's, b's.
        assert_eq!(ids.len(), 4, "{saves:?}");
        let mut want = vec![vec![
            format!("w:{}", ids[0]),
            format!("r:{}", ids[0]),
            format!("r:{}", ids[1]),
        ]];
        want.extend(ids[2..].iter().map(|id| vec![format!("r:{id}")]));
        assert_eq!(saves, want);
        assert_eq!(records[records.len() - 1].parent_id, None);
    }

    #[tokio::test]
    async fn a_streamed_input_checkpoint_is_in_the_store_when_its_event_is_sent() {
        // A stream that shows checkpoints as they are made (debug mode) may have its
        // reader look one up at once: the input checkpoint is then not held for the
        // first step's save, but saved (with its input) before its event.
        let cp = Arc::new(Noting {
            inner: MemorySaver::new(),
            saves: Default::default(),
        });
        let seen: Arc<std::sync::Mutex<Vec<(i64, bool)>>> = Default::default();
        let (noted, seen2) = (cp.clone(), seen.clone());
        let sink = ironloop::graph::StreamSink {
            modes: ironloop::graph::modes::DEBUG,
            subgraphs: false,
            send: Arc::new(move |ev| {
                if let ironloop::graph::StreamEvent::DebugCheckpoint {
                    step,
                    checkpoint_id: Some(id),
                    ..
                } = ev
                {
                    let saved = noted
                        .saves
                        .lock()
                        .unwrap()
                        .iter()
                        .flatten()
                        .any(|p| *p == format!("r:{id}"));
                    seen2.lock().unwrap().push((step, saved));
                }
            }),
            seen: Default::default(),
        };
        let g = graph(2, false, cp.clone());
        let input = RunInput::Values(vec![("count".into(), Val::Json(json!(0)))]);
        let mut o = opts("t", None);
        o.stream = Some(sink);
        g.run(input, o).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.first(), Some(&(-1, true)), "{seen:?}");
        assert!(seen.iter().all(|(_, saved)| *saved), "{seen:?}");
        let saves = cp.saves.lock().unwrap().clone();
        assert_eq!(saves[0].len(), 2, "the input batch alone: {saves:?}");
    }

    /// Writes its node's name to `log`; with `after`, only once the writes of node
    /// `after` (a task of the same step) are in the store.
    struct LogName {
        after: Option<(Arc<Noting>, &'static str)>,
    }

    #[async_trait]
    impl NodeRunner for LogName {
        async fn run(
            &self,
            _: StateView,
            _: Option<Val>,
            ctx: TaskContext,
        ) -> Result<NodeOutput, NodeFailure> {
            if let Some((cp, first)) = &self.after {
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                loop {
                    let latest = cp.get("t", None).await.unwrap().expect("a checkpoint");
                    let saved = cp.pending_writes("t", &latest.id).await.unwrap();
                    if saved.iter().any(|w| w.node == *first) {
                        break;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "{first} finished but its writes never reached the store"
                    );
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            Ok(NodeOutput {
                writes: vec![("log".to_owned(), Val::Json(json!([ctx.node])))],
                ..Default::default()
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_last_task_of_a_step_is_saved_with_the_steps_checkpoint() {
        // In a step of several tasks, a task's writes are saved as it finishes, so
        // that a crash before the step ends does not run it again; but the last task
        // to finish, when the step completes, is saved only by the step's checkpoint,
        // which follows at once and holds its writes: one save fewer per step.
        let cp = Arc::new(Noting {
            inner: MemorySaver::new(),
            saves: Default::default(),
        });
        let spec = GraphSpec::default()
            .channel("log", ChannelKind::Reducer(Arc::new(Append)))
            .node("a", Arc::new(LogName { after: None }))
            .node(
                "b",
                Arc::new(LogName {
                    after: Some((cp.clone(), "a")),
                }),
            )
            .edge(START, "a")
            .edge(START, "b");
        let g =
            Graph::compile(spec, Some(cp.clone()), Arc::new(JsonCodec), vec![], vec![]).unwrap();
        let input = RunInput::Values(vec![("log".into(), Val::Json(json!([])))]);
        let r = g.run(input, opts("t", None)).await.unwrap();
        assert_eq!(state(&r.state)["log"], json!(["a", "b"]));
        let saves = cp.saves.lock().unwrap().clone();
        let records = cp.list("t", None, None).await.unwrap();
        let ids: Vec<&str> = records.iter().rev().map(|r| r.id.as_str()).collect();
        // The input checkpoint (with the input) and START's step, then from it a's
        // writes as a finished (b waited for them), and the step's checkpoint: no
        // save of b's.
        assert_eq!(ids.len(), 3, "{saves:?}");
        let want = vec![
            vec![
                format!("w:{}", ids[0]),
                format!("r:{}", ids[0]),
                format!("r:{}", ids[1]),
            ],
            vec![format!("w:{}", ids[1])],
            vec![format!("r:{}", ids[2])],
        ];
        assert_eq!(saves, want);
        assert!(
            cp.pending_writes("t", ids[1]).await.unwrap().is_empty(),
            "the step's checkpoint leaves no pending write of its parent"
        );
    }

    pub async fn long_thread_loads_from_snapshots(cp: Arc<dyn Checkpointer>) {
        long_thread(cp, false).await;
    }

    pub async fn long_messages_thread_loads_from_snapshots(cp: Arc<dyn Checkpointer>) {
        long_thread(cp, true).await;
    }

    /// A thread written before snapshots (records without one) loads by replay, and
    /// the next run adds a snapshot.
    pub async fn thread_without_snapshots_keeps_working(cp: Arc<dyn Checkpointer>) {
        let steps = 3 * SNAPSHOT_EVERY as i64;
        let g = graph(steps, false, cp.clone());
        let input = RunInput::Values(vec![("count".into(), Val::Json(json!(0)))]);
        g.run(input, opts("new", None)).await.unwrap();
        let latest = cp.get("new", None).await.unwrap().unwrap();
        for mut r in cp.chain("new", &latest.id).await.unwrap() {
            r.snapshot = None;
            cp.put("old", r).await.unwrap();
        }
        let cold = graph(steps + 10, false, cp.clone());
        let loaded = cold.load("old", None).await.unwrap().unwrap();
        assert_eq!(int(&loaded.state, "count"), steps);
        assert_eq!(
            cp.chain_from_snapshot("old", &latest.id)
                .await
                .unwrap()
                .len(),
            cp.chain("old", &latest.id).await.unwrap().len()
        );
        // The old thread's next run: to the new limit, with a snapshot right away.
        let cold = graph(steps + 10, false, cp.clone());
        let more = RunInput::Values(vec![("count".into(), Val::Json(json!(steps)))]);
        let r = cold.run(more, opts("old", None)).await.unwrap();
        assert_eq!(int(&r.state, "count"), steps + 10);
        let old_records = cp.chain("old", &latest.id).await.unwrap().len();
        assert_eq!(
            assert_loads_match_replay(&cp, &cold, "old").await,
            old_records,
            "the old records load from the root, every new one from a snapshot"
        );
    }

    /// A graph keeps a thread's latest channels between its runs; when another graph
    /// (another saver object, process...) advanced the thread, it loads it again.
    pub async fn cached_state_follows_other_writers(cp: Arc<dyn Checkpointer>) {
        let g1 = graph(10, false, cp.clone());
        let g2 = graph(20, false, cp.clone());
        let input = || RunInput::Values(vec![("count".into(), Val::Json(json!(0)))]);
        let r = g1.run(input(), opts("t", None)).await.unwrap();
        assert_eq!(int(&r.state, "count"), 10);
        // g2 starts the thread over (count 0) and runs it to 20.
        let r = g2.run(input(), opts("t", None)).await.unwrap();
        assert_eq!(int(&r.state, "count"), 20);
        assert_eq!(
            r.state
                .get("log")
                .unwrap()
                .as_json()
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            30
        );
        // g1's cached state is stale: it sees g2's.
        let s = g1.load("t", None).await.unwrap().unwrap();
        assert_eq!(int(&s.state, "count"), 20);
        let r = g1
            .run(
                RunInput::Values(vec![("count".into(), Val::Json(json!(5)))]),
                opts("t", None),
            )
            .await
            .unwrap();
        assert_eq!(int(&r.state, "count"), 10);
        assert_eq!(
            r.state
                .get("log")
                .unwrap()
                .as_json()
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            35
        );
        assert_loads_match_replay(&cp, &g1, "t").await;
    }
}

use graphs::{
    cached_state_follows_other_writers, long_messages_thread_loads_from_snapshots,
    long_thread_loads_from_snapshots, thread_without_snapshots_keeps_working,
};

/// A record saved now (the savers judge idleness by when a record was saved).
fn rec_now(id: &str, parent: Option<&str>, step: i64) -> CheckpointRecord {
    let mut r = rec(id, parent, step);
    r.created_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    r
}

const STALE: Duration = Duration::from_millis(300);

async fn stalled_threads_are_listed_and_claimed(s: Arc<dyn Checkpointer>) {
    // Idle longest first: each thread's latest record is saved after the previous one's.
    let mut finished = rec_now("d1", Some("d0"), 1);
    finished.next.clear();
    s.put_next("done", rec_now("d0", None, 0)).await.unwrap();
    s.put_next("done", finished).await.unwrap();
    s.put_next("crashed", rec_now("c0", None, 0)).await.unwrap();
    s.put_next("paused", rec_now("p0", None, 0)).await.unwrap();
    s.put_writes(
        "paused",
        "p0",
        vec![pwi("t-p0", -1, "__interrupt__", json!("?"))],
    )
    .await
    .unwrap();
    s.put_next("answered", rec_now("a0", None, 0))
        .await
        .unwrap();
    s.put_writes(
        "answered",
        "a0",
        vec![
            pwi("t-a0", -1, "__interrupt__", json!("?")),
            pwi("t-a0", -2, "__resume__", json!("yes")),
        ],
    )
    .await
    .unwrap();
    // One task finished after its interrupt was answered, its sibling did not run.
    s.put_next("half", rec_now("h0", None, 0)).await.unwrap();
    s.put_writes(
        "half",
        "h0",
        vec![
            pwi("t-h0", -1, "__interrupt__", json!("?")),
            pwi("t-h0", 0, "__done__", json!(null)),
        ],
    )
    .await
    .unwrap();
    // A subgraph's namespace of "crashed", stopped mid-step too: resumed through its
    // thread, so never listed on its own.
    let sub = thread_key("crashed", &child_ns("", "sub", "t-c0"));
    s.put_next(&sub, rec_now("s0", None, 0)).await.unwrap();
    tokio::time::sleep(STALE + Duration::from_millis(100)).await;
    s.put_next("live", rec_now("l0", None, 0)).await.unwrap();

    let stalled = s.list_stalled(STALE, None).await.unwrap();
    assert_eq!(stalled, ["crashed", "answered", "half"]);
    assert_eq!(s.list_stalled(STALE, Some(1)).await.unwrap(), ["crashed"]);
    // A longer stale_after: nothing has been idle that long.
    assert!(s
        .list_stalled(Duration::from_secs(3600), None)
        .await
        .unwrap()
        .is_empty());

    // Claims: each thread to one owner, while the lease lives.
    let lease = Duration::from_millis(400);
    let a = s.claim_stalled("worker-a", STALE, lease, 2).await.unwrap();
    assert_eq!(a, ["crashed", "answered"]);
    let b = s.claim_stalled("worker-b", STALE, lease, 5).await.unwrap();
    assert_eq!(b, ["half"]);
    assert!(s
        .claim_stalled("worker-c", STALE, lease, 5)
        .await
        .unwrap()
        .is_empty());
    assert!(s.list_stalled(STALE, None).await.unwrap().is_empty());

    // worker-a resumes "crashed" to its end; worker-b dies with "half": once the lease
    // is over, "half" (and "answered", which worker-a never touched) are stalled again,
    // and so is "live", which saved nothing since.
    let mut end = rec_now("c1", Some("c0"), 1);
    end.next.clear();
    s.put_next("crashed", end).await.unwrap();
    tokio::time::sleep(lease + Duration::from_millis(100)).await;
    let again = s.list_stalled(STALE, None).await.unwrap();
    assert_eq!(again, ["answered", "half", "live"]);
    let c = s.claim_stalled("worker-c", STALE, lease, 5).await.unwrap();
    assert_eq!(c, ["answered", "half", "live"]);
    // A deleted thread's claim goes with it.
    s.delete_thread("half").await.unwrap();
    assert!(s.list_stalled(STALE, None).await.unwrap().is_empty());

    // Answering the interrupt of a thread paused long ago is activity: the run that
    // answered it is under way, so the thread is stalled only once that run goes quiet.
    s.put_writes(
        "paused",
        "p0",
        vec![pwi("t-p0", -2, "__resume__", json!("ok"))],
    )
    .await
    .unwrap();
    let paused = "paused".to_owned();
    assert!(!s.list_stalled(STALE, None).await.unwrap().contains(&paused));
    tokio::time::sleep(STALE + Duration::from_millis(100)).await;
    assert!(s.list_stalled(STALE, None).await.unwrap().contains(&paused));

    for e in [
        s.claim_stalled("", STALE, lease, 1).await.unwrap_err(),
        s.claim_stalled("w", STALE, Duration::ZERO, 1)
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
        assert!(e.to_string().contains("claim_stalled"), "{e}");
    }
}

async fn claims_have_one_winner(s: Arc<dyn Checkpointer>) {
    for t in 0..20 {
        s.put_next(&format!("t{t:02}"), rec_now("c0", None, 0))
            .await
            .unwrap();
    }
    tokio::time::sleep(STALE + Duration::from_millis(100)).await;
    let claimers: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.claim_stalled(&format!("w{i}"), STALE, Duration::from_secs(60), 3)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut got: Vec<String> = Vec::new();
    for c in claimers {
        got.extend(c.await.unwrap());
    }
    // A claimer that lost a race may come back with fewer: the rest is still there.
    got.extend(
        s.claim_stalled("last", STALE, Duration::from_secs(60), 20)
            .await
            .unwrap(),
    );
    let unique: std::collections::BTreeSet<&String> = got.iter().collect();
    assert_eq!(
        unique.len(),
        got.len(),
        "a thread was claimed twice: {got:?}"
    );
    assert_eq!(got.len(), 20, "{got:?}");
}

/// `delete_checkpoints` (how a rolled-back run leaves the history): the ids and their
/// writes go, the newest record left is the latest, and `put_next` follows it.
async fn delete_checkpoints_drops_a_branch(s: Arc<dyn Checkpointer>) {
    put_linear(&*s, "t", "c", 4).await; // c0 <- c1 <- c2 <- c3
    put_linear(&*s, "other", "c", 2).await;
    s.put_writes("t", "c1", vec![pw("kept", "x", json!(1))])
        .await
        .unwrap();
    s.put_writes("t", "c2", vec![pw("gone", "x", json!(2))])
        .await
        .unwrap();
    s.delete_checkpoints("t", vec!["c2".into(), "c3".into(), "nope".into()])
        .await
        .unwrap();
    assert_eq!(ids(&s.list("t", None, None).await.unwrap()), ["c1", "c0"]);
    assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c1");
    assert_eq!(s.get("t", Some("c3")).await.unwrap(), None);
    assert!(s.pending_writes("t", "c2").await.unwrap().is_empty());
    assert_eq!(s.pending_writes("t", "c1").await.unwrap().len(), 1);
    // The thread goes on from what is left, one writer at a time as before.
    s.put_next("t", rec("n2", Some("c1"), 2)).await.unwrap();
    assert!(s.put_next("t", rec("x", Some("c1"), 2)).await.is_err());
    assert_eq!(ids(&s.chain("t", "n2").await.unwrap()), ["c0", "c1", "n2"]);
    // Another thread's records with the same ids are untouched.
    assert_eq!(
        ids(&s.list("other", None, None).await.unwrap()),
        ["c1", "c0"]
    );
}

/// `thread_keys` lists every key holding checkpoints, subgraph namespaces included,
/// and forgets a key whose checkpoints are all gone.
async fn thread_keys_lists_the_keys_with_checkpoints(s: Arc<dyn Checkpointer>) {
    assert!(s.thread_keys().await.unwrap().is_empty());
    put_linear(&*s, "t", "c", 2).await;
    put_linear(&*s, &thread_key("t", "sub:1"), "c", 1).await;
    put_linear(&*s, "other", "c", 1).await;
    let mut keys = s.thread_keys().await.unwrap();
    keys.sort();
    assert_eq!(keys, ["other", "t", &thread_key("t", "sub:1")]);
    s.delete_checkpoints("other", vec!["c0".into()])
        .await
        .unwrap();
    s.delete_thread("t").await.unwrap();
    assert!(s.thread_keys().await.unwrap().is_empty());
}

/// Runs `f` on a thread that may block (see `checkpoint::caller`), on this runtime: what
/// a sync caller driving a run by hand is to a saver.
#[cfg(feature = "sqlite")]
async fn on_a_blocking_caller<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _rt = rt.enter();
        let _here = BlockingCaller::enter();
        f()
    })
    .await
    .unwrap()
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(Arc::new(MemorySaver::new())).await;
                }
            )*
        }

        #[cfg(feature = "sqlite")]
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = TempDb::new(stringify!($case));
                    let saver = Arc::new(SqliteSaver::open(db.path()).unwrap());
                    super::$case(saver.clone()).await;
                    saver.close().unwrap();
                }
            )*
        }

        // The same on a thread that may block (a sync caller driving a run by hand):
        // the saver then runs its statements on that thread, not on its own.
        #[cfg(feature = "sqlite")]
        mod sqlite_on_the_calling_thread {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = TempDb::new(stringify!($case));
                    let saver = Arc::new(SqliteSaver::open(db.path()).unwrap());
                    let s = saver.clone();
                    on_a_blocking_caller(move || futures::executor::block_on(super::$case(s)))
                        .await;
                    saver.close().unwrap();
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let schema = pg::TempSchema::new(stringify!($case)).await;
                    let saver = Arc::new(schema.saver().await);
                    saver.setup().await.unwrap();
                    super::$case(saver.clone()).await;
                    Checkpointer::close(&*saver).await.unwrap();
                    schema.drop().await;
                }
            )*
        }

        // Every case again with the records under a key: authenticated, or encrypted
        // (whose clear fields the stores' SQL reads: snapshots, stalled threads).
        mod memory_encrypted {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(Arc::new(MemorySaver::new().with_key(key(1).encrypt(true))))
                        .await;
                }
            )*
        }

        #[cfg(feature = "sqlite")]
        mod sqlite_authenticated {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = TempDb::new(stringify!($case));
                    let saver = SqliteSaver::open(db.path()).unwrap().with_key(key(1));
                    let saver = Arc::new(saver);
                    super::$case(saver.clone()).await;
                    saver.close().unwrap();
                }
            )*
        }

        #[cfg(feature = "sqlite")]
        mod sqlite_encrypted {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = TempDb::new(stringify!($case));
                    let saver = SqliteSaver::open(db.path()).unwrap();
                    let saver = Arc::new(saver.with_key(key(1).encrypt(true)));
                    super::$case(saver.clone()).await;
                    saver.close().unwrap();
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres_encrypted {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    // PostgreSQL cuts names at 63 bytes: the case's first 30 are its own.
                    let case = stringify!($case);
                    let schema = pg::TempSchema::new(&format!("e{}", &case[..case.len().min(30)]))
                        .await;
                    let options = ironloop::checkpoint::PostgresOptions {
                        key: Some(key(1).encrypt(true)),
                        ..schema.options()
                    };
                    let saver = ironloop::checkpoint::PostgresSaver::connect_with(&pg::url(), options)
                        .await
                        .unwrap();
                    let saver = Arc::new(saver);
                    saver.setup().await.unwrap();
                    super::$case(saver.clone()).await;
                    Checkpointer::close(&*saver).await.unwrap();
                    schema.drop().await;
                }
            )*
        }
    };
}

/// A test key: 32 times `byte`.
fn key(byte: u8) -> RecordKey {
    RecordKey::new(&[byte; 32]).unwrap()
}

conformance!(
    put_get_latest_and_by_id,
    thread_isolation,
    list_newest_first_limit_before,
    chain_follows_parents_across_fork,
    pending_writes_kept_in_order_and_dropped_by_child,
    delete_thread,
    delete_checkpoints_drops_a_branch,
    thread_keys_lists_the_keys_with_checkpoints,
    get_unknown_is_none,
    not_found_and_broken_chains_are_typed,
    put_is_idempotent,
    put_writes_dedupes_by_task_and_idx,
    time_travel_to_an_id,
    put_next_is_a_compare_and_set,
    put_next_has_one_winner,
    put_many_is_one_transaction,
    close_refuses_later_calls,
    concurrent_callers,
    chain_from_snapshot_stops_at_the_nearest_snapshot,
    a_snapshot_whose_pieces_repeat_reads_back_whole,
    snapshot_across_a_fork,
    long_thread_loads_from_snapshots,
    long_messages_thread_loads_from_snapshots,
    thread_without_snapshots_keeps_working,
    cached_state_follows_other_writers,
    stalled_threads_are_listed_and_claimed,
    claims_have_one_winner,
);

// ---------------------------------------------------------------------------------
// Records under a key (SQLite and PostgreSQL: a store the test can edit)
// ---------------------------------------------------------------------------------

/// `Some(m)`: the read failed the key's check (`CheckpointError::Integrity`), `m` its
/// message; `None`: it did not.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn integrity_error<T: std::fmt::Debug>(r: Result<T, CheckpointError>) -> String {
    match r {
        Err(CheckpointError::Integrity(m)) => m,
        other => panic!("expected a CheckpointError::Integrity, got {other:?}"),
    }
}

/// One byte of `text` changed to another ASCII byte (only ASCII positions are
/// chosen, so the text stays UTF-8, as a store's TEXT column needs).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn tampered(text: &str, i: usize) -> String {
    let mut b = text.as_bytes().to_vec();
    b[i] = if b[i] == b'1' { b'2' } else { b'1' };
    String::from_utf8(b).unwrap()
}

/// What a keyed saver reads back, and what it refuses, on a store that `open(key)`
/// opens another saver on (`None`: without a key) and `rewrite(id, text)` edits behind
/// the savers' backs (see `format_3_records_load_beside_format_4`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn keyed_records_refuse_what_the_key_did_not_write<O, OF, R, RF>(open: O, rewrite: R)
where
    O: Fn(Option<RecordKey>) -> OF,
    OF: std::future::Future<Output = Arc<dyn Checkpointer>>,
    R: Fn(String, String) -> RF,
    RF: std::future::Future<Output = String>,
{
    for encrypt in [false, true] {
        let t = if encrypt {
            "encrypted"
        } else {
            "authenticated"
        };
        let s = open(Some(key(1).encrypt(encrypt))).await;
        let (a, b) = (format!("{t}-0"), format!("{t}-1"));
        let r0 = rec(&a, None, 0);
        let r1 = with_snapshot(rec(&b, Some(&a), 1), 1);
        s.put_next(t, r0.clone()).await.unwrap();
        s.put_next(t, r1.clone()).await.unwrap();
        assert_eq!(s.get(t, Some(&a)).await.unwrap(), Some(r0.clone()));
        assert_eq!(s.chain(t, &b).await.unwrap(), [r0.clone(), r1.clone()]);
        // A retried put of the same record is the same record (the text is
        // deterministic); another one with its id is a conflict.
        s.put(t, r1.clone()).await.unwrap();
        let mut other = r1.clone();
        other.step = 7;
        assert!(matches!(
            s.put(t, other).await,
            Err(CheckpointError::Conflict { .. })
        ));
        let text = rewrite(a.clone(), String::new()).await;
        let text1 = rewrite(b.clone(), String::new()).await;
        if encrypt {
            // Nothing of the content in clear: not the message, nor a node's name.
            assert!(
                text.starts_with("[6,null,null,") && text1.starts_with("[7,"),
                "{text}"
            );
            // (Words of 5 letters or more, or not in base64's alphabet: the sealed text
            // is base64, which holds a given short word by chance.)
            for plain in ["héllo", "quoted", "tools", "worker", "nested", "count"] {
                assert!(!text.contains(plain) && !text1.contains(plain), "{text}");
            }
        } else {
            assert!(
                text.starts_with("[4,0,0,") && text.ends_with("\"]"),
                "{text}"
            );
            assert!(text.contains("héllo"), "{text}");
        }
        // Every changed byte (at 40 places over the text) is refused, as is a record
        // moved to another position; restored, it reads again.
        let ascii: Vec<usize> = (0..text.len())
            .filter(|&i| text.as_bytes()[i] < 128)
            .collect();
        for &i in ascii.iter().step_by(ascii.len().div_ceil(40)) {
            rewrite(a.clone(), tampered(&text, i)).await;
            let m = integrity_error(s.get(t, Some(&a)).await);
            assert!(m.contains(&a), "{m}");
        }
        rewrite(a.clone(), text1.clone()).await;
        let m = integrity_error(s.get(t, Some(&a)).await);
        assert!(m.contains("another key") && m.contains("tampered"), "{m}");
        rewrite(a.clone(), text.clone()).await;
        assert_eq!(s.get(t, Some(&a)).await.unwrap(), Some(r0.clone()));
        // Another key, or none, cannot read them.
        let m = integrity_error(open(Some(key(2))).await.get(t, Some(&a)).await);
        assert!(m.contains("does not match the saver's key"), "{m}");
        let m = integrity_error(open(None).await.chain(t, &b).await);
        assert!(m.contains("with a key, and this saver has none"), "{m}");
    }
    // Records written without a key (before the key was set) are refused, unless the
    // saver accepts them; the thread then goes on authenticated, which a saver
    // without the key refuses in turn.
    let plain = open(None).await;
    plain.put_next("legacy", rec("l0", None, 0)).await.unwrap();
    let keyed = open(Some(key(1))).await;
    let m = integrity_error(keyed.get("legacy", None).await);
    assert!(m.contains("accept_unkeyed") && m.contains("\"l0\""), "{m}");
    let accepting = open(Some(key(1).accept_unkeyed(true))).await;
    assert_eq!(
        accepting.get("legacy", None).await.unwrap(),
        Some(rec("l0", None, 0))
    );
    accepting
        .put_next("legacy", rec("l1", Some("l0"), 1))
        .await
        .unwrap();
    assert_eq!(
        ids(&accepting.chain("legacy", "l1").await.unwrap()),
        ["l0", "l1"]
    );
    assert!(rewrite("l1".into(), String::new()).await.ends_with("\"]"));
    integrity_error(plain.get("legacy", None).await);
    // A record forged without the key, with a valid checksum (anyone can compute
    // one), is refused: only a saver that accepts unkeyed records reads it.
    let forged = rec("l1", Some("l0"), 5);
    rewrite(
        "l1".into(),
        ironloop::checkpoint::record::encode(&forged).unwrap(),
    )
    .await;
    integrity_error(keyed.get("legacy", Some("l1")).await);
    assert_eq!(
        accepting.get("legacy", Some("l1")).await.unwrap(),
        Some(forged)
    );
}

/// Pending writes under a key read back as written, and a value changed or moved to
/// another write behind the saver's back is refused; `rewrite(checkpoint, task, text)`
/// swaps a write's stored value (an empty text: reads only) and answers the one before.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn keyed_pending_writes_refuse_what_the_key_did_not_write<R, RF>(
    s: &dyn Checkpointer,
    rewrite: R,
) where
    R: Fn(String, String, String) -> RF,
    RF: std::future::Future<Output = String>,
{
    s.put_next("w", rec("w0", None, 0)).await.unwrap();
    let writes = vec![
        pw("ta", "messages", json!({"secret": "s3cr3t-value"})),
        pw("tb", "count", json!(7)),
    ];
    s.put_writes("w", "w0", writes.clone()).await.unwrap();
    assert_eq!(s.pending_writes("w", "w0").await.unwrap(), writes);
    let a = rewrite("w0".into(), "ta".into(), String::new()).await;
    let b = rewrite("w0".into(), "tb".into(), String::new()).await;
    // Authenticated (`!a`, the value in clear after the code) or encrypted (`!e`).
    let encrypted = a.starts_with("!e");
    assert!(encrypted || a.starts_with("!a"), "{a}");
    assert_eq!(a.contains("s3cr3t"), !encrypted, "{a}");
    // One byte changed, or one write's value in another's place: refused.
    let i = a.len() / 2;
    let changed = format!(
        "{}{}{}",
        &a[..i],
        if &a[i..=i] == "x" { "y" } else { "x" },
        &a[i + 1..]
    );
    rewrite("w0".into(), "ta".into(), changed).await;
    let m = integrity_error(s.pending_writes("w", "w0").await);
    assert!(m.contains("\"ta\"") && m.contains("messages"), "{m}");
    rewrite("w0".into(), "ta".into(), b).await;
    integrity_error(s.get_with_writes("w", None).await);
    rewrite("w0".into(), "ta".into(), a).await;
    assert_eq!(s.pending_writes("w", "w0").await.unwrap(), writes);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keyed_pending_writes_refuse_what_the_key_did_not_write() {
    let db = TempDb::new("keyed-writes");
    let s = SqliteSaver::open(db.path())
        .unwrap()
        .with_key(key(1).encrypt(true));
    let c = std::sync::Mutex::new(rusqlite::Connection::open(db.path()).unwrap());
    let rewrite = |checkpoint: String, task: String, text: String| {
        let c = c.lock().unwrap();
        let before: String = c
            .query_row(
                "SELECT value FROM writes WHERE checkpoint_id = ?1 AND task_id = ?2",
                [&checkpoint, &task],
                |r| r.get(0),
            )
            .unwrap();
        if !text.is_empty() {
            c.execute(
                "UPDATE writes SET value = ?1 WHERE checkpoint_id = ?2 AND task_id = ?3",
                [&text, &checkpoint, &task],
            )
            .unwrap();
        }
        std::future::ready(before)
    };
    keyed_pending_writes_refuse_what_the_key_did_not_write(&s, rewrite).await;
    s.close().unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keyed_records_refuse_what_the_key_did_not_write() {
    let db = TempDb::new("keyed");
    let c = std::sync::Mutex::new(rusqlite::Connection::open(db.path()).unwrap());
    let open = |key: Option<RecordKey>| {
        let s = SqliteSaver::open(db.path()).unwrap();
        let s: Arc<dyn Checkpointer> = Arc::new(match key {
            Some(k) => s.with_key(k),
            None => s,
        });
        std::future::ready(s)
    };
    let rewrite = |id: String, text: String| {
        let c = c.lock().unwrap();
        let before: String = c
            .query_row(
                "SELECT record FROM checkpoints WHERE checkpoint_id = ?1",
                [&id],
                |r| r.get(0),
            )
            .unwrap();
        if !text.is_empty() {
            c.execute(
                "UPDATE checkpoints SET record = ?1 WHERE checkpoint_id = ?2",
                [&text, &id],
            )
            .unwrap();
        }
        std::future::ready(before)
    };
    keyed_records_refuse_what_the_key_did_not_write(open, rewrite).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keyed_pending_writes_refuse_what_the_key_did_not_write() {
    let schema = pg::TempSchema::new("keyed_writes").await;
    let options = ironloop::checkpoint::PostgresOptions {
        key: Some(key(1)),
        ..schema.options()
    };
    let s = ironloop::checkpoint::PostgresSaver::connect_with(&pg::url(), options)
        .await
        .unwrap();
    s.setup().await.unwrap();
    let admin = pg::admin().await;
    let table = format!("\"{}\".ironloop_writes", schema.name);
    let (admin, table) = (&admin, &table);
    let rewrite = |checkpoint: String, task: String, text: String| async move {
        let before: String = admin
            .query_one(
                &format!("SELECT value FROM {table} WHERE checkpoint_id = $1 AND task_id = $2"),
                &[&checkpoint, &task],
            )
            .await
            .unwrap()
            .get(0);
        if !text.is_empty() {
            admin
                .execute(
                    &format!(
                        "UPDATE {table} SET value = $1 WHERE checkpoint_id = $2 AND task_id = $3"
                    ),
                    &[&text, &checkpoint, &task],
                )
                .await
                .unwrap();
        }
        before
    };
    keyed_pending_writes_refuse_what_the_key_did_not_write(&s, rewrite).await;
    Checkpointer::close(&s).await.unwrap();
    schema.drop().await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keyed_records_refuse_what_the_key_did_not_write() {
    let schema = pg::TempSchema::new("keyed").await;
    schema.saver().await.setup().await.unwrap();
    let admin = pg::admin().await;
    let table = format!("\"{}\".ironloop_checkpoints", schema.name);
    let (admin, table, schema_ref) = (&admin, &table, &schema);
    let open = |key: Option<RecordKey>| async move {
        let options = ironloop::checkpoint::PostgresOptions {
            key,
            ..schema_ref.options()
        };
        let s = ironloop::checkpoint::PostgresSaver::connect_with(&pg::url(), options)
            .await
            .unwrap();
        Arc::new(s) as Arc<dyn Checkpointer>
    };
    let rewrite = |id: String, text: String| async move {
        let before: String = admin
            .query_one(
                &format!("SELECT record FROM {table} WHERE id_text = $1"),
                &[&id],
            )
            .await
            .unwrap()
            .get(0);
        if !text.is_empty() {
            admin
                .execute(
                    &format!("UPDATE {table} SET record = $1 WHERE id_text = $2"),
                    &[&text, &id],
                )
                .await
                .unwrap();
        }
        before
    };
    keyed_records_refuse_what_the_key_did_not_write(open, rewrite).await;
    schema.drop().await;
}

// ---------------------------------------------------------------------------------
// SQLite only
// ---------------------------------------------------------------------------------

#[cfg(feature = "sqlite")]
mod sqlite_only {
    use super::*;

    /// The commits in `db`'s WAL: frames whose header names the database's size after
    /// a commit, of the WAL's current generation (salts as in its header).
    fn wal_commits(db: &TempDb) -> usize {
        let Ok(wal) = std::fs::read(db.wal()) else {
            return 0;
        };
        if wal.len() < 32 {
            return 0;
        }
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let page = be(&wal[8..12]) as usize;
        let salts = &wal[16..24];
        let mut commits = 0;
        let mut at = 32;
        while at + 24 + page <= wal.len() {
            let h = &wal[at..at + 24];
            if &h[8..16] != salts {
                break;
            }
            if be(&h[4..8]) != 0 {
                commits += 1;
            }
            at += 24 + page;
        }
        commits
    }

    /// `p0000 <- p0001 <- ...`: ids that grow with the step, as a run's do, so each
    /// save after the first can take the saver's short way (its tip).
    fn step(i: usize) -> CheckpointRecord {
        let parent = (i > 0).then(|| format!("p{:04}", i - 1));
        rec(&format!("p{i:04}"), parent.as_deref(), i as i64)
    }

    #[tokio::test]
    async fn a_saver_tip_out_of_date_is_checked_not_trusted() {
        // A saver remembers where it left a thread and saves the next step after a
        // query that re-checks that memory in SQL. Every way it can be out of
        // date must still give `put_next`'s answer: another saver advanced the
        // thread, a batch the tip came from was rolled back, the thread was deleted
        // and its number (and ids) reused by another thread.
        let db = TempDb::new("tips");
        let a = SqliteSaver::open(db.path()).unwrap();
        let b = SqliteSaver::open(db.path()).unwrap();
        for i in 0..4 {
            a.put_next("t", step(i)).await.unwrap();
        }
        b.put_next("t", step(4)).await.unwrap(); // a's tip is p0003 now, out of date
        let stale = rec("p0005", Some("p0003"), 4);
        assert!(
            matches!(
                a.put_next("t", stale).await,
                Err(CheckpointError::Conflict { .. })
            ),
            "a step from an out-of-date tip must be refused"
        );
        a.put_next("t", step(5)).await.unwrap();
        assert_eq!(a.get("t", None).await.unwrap().unwrap().id, "p0005");

        // A batch whose second record conflicts is rolled back whole: its first
        // record (the tip it left) is not there to build on.
        let conflicting = rec("p0003", Some("p0002"), 99); // p0003 stored, other text
        let err = a
            .put_many(
                "t",
                vec![
                    next(step(6)),
                    Put::Record {
                        record: Box::new(conflicting),
                        next: false,
                    },
                ],
            )
            .await;
        assert!(
            matches!(err, Err(CheckpointError::Conflict { .. })),
            "{err:?}"
        );
        assert_eq!(a.get("t", None).await.unwrap().unwrap().id, "p0005");
        assert!(a.get("t", Some("p0006")).await.unwrap().is_none());
        assert!(matches!(
            a.put_next("t", step(7)).await,
            Err(CheckpointError::Conflict { .. })
        ));
        a.put_next("t", step(6)).await.unwrap();
        assert_linear(&a, "t", 7).await;

        // Deleted, then another thread gets its number and the same ids: a step of
        // the deleted thread from the old tip must land nowhere.
        b.delete_thread("t").await.unwrap();
        for i in 0..7 {
            b.put_next("u", step(i)).await.unwrap();
        }
        assert!(matches!(
            a.put_next("t", step(7)).await,
            Err(CheckpointError::Conflict { .. })
        ));
        assert_linear(&b, "u", 7).await;
        assert!(a.get("t", None).await.unwrap().is_none());
        a.put_next("t", step(0)).await.unwrap();
        a.put_next("t", step(1)).await.unwrap();
        assert_linear(&a, "t", 2).await;
        assert_linear(&a, "u", 7).await;
    }

    #[tokio::test]
    async fn a_step_from_the_tip_still_adopts_children_and_drops_its_parent_writes() {
        // The short save (the tip's) does what the general one would: a record put
        // before its parent (waiting for it) sends the save the general way, which
        // adopts it; the parent's pending writes (its tasks', saved as they finished)
        // are deleted either way.
        let db = TempDb::new("tips-general");
        let s = SqliteSaver::open(db.path()).unwrap();
        s.put("t", rec("0-early", Some("p0004"), 5)).await.unwrap();
        for i in 0..4 {
            s.put("t", step(i)).await.unwrap();
        }
        s.put("t", step(4)).await.unwrap(); // "0-early" waits for it
        let chain = s.chain("t", "0-early").await.unwrap();
        assert_eq!(
            ids(&chain),
            ["p0000", "p0001", "p0002", "p0003", "p0004", "0-early"]
        );

        let other = SqliteSaver::open(TempDb::new("tips-writes").path()).unwrap();
        for i in 0..3 {
            other.put_next("w", step(i)).await.unwrap();
        }
        other
            .put_writes("w", "p0002", vec![pw("task", "messages", json!(1))])
            .await
            .unwrap();
        assert_eq!(other.pending_writes("w", "p0002").await.unwrap().len(), 1);
        other.put_next("w", step(3)).await.unwrap();
        assert!(other.pending_writes("w", "p0002").await.unwrap().is_empty());
        other.put_next("w", step(4)).await.unwrap();
        assert_linear(&other, "w", 5).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_queued_together_commit_as_one_group_and_fail_alone() {
        // Group commit: writes waiting on the SQLite thread at once are committed in
        // one transaction (a savepoint each), and each caller is answered once it is
        // committed. Another connection holds the file's write lock while 40 writes
        // queue up behind the first: steps of 30 threads (one `put_many` batch of a
        // record and its writes each, or a `put_next`), 5 `put_next` whose parent is
        // not the latest, 5 batches whose second record conflicts with a stored one.
        // The refused ones must leave nothing (their savepoint rolled back) and cost
        // the others nothing; every saved one must be on disk when its call returns.
        let db = TempDb::new("group-commit");
        let s = Arc::new(SqliteSaver::open(db.path()).unwrap());
        for t in 0..40 {
            s.put_next(&format!("t{t}"), rec("c0", None, 0))
                .await
                .unwrap();
        }
        let before = wal_commits(&db);
        let other = rusqlite::Connection::open(db.path()).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let path = db.path().to_path_buf();
        let on_disk = move |t: &str, id: &str| -> i64 {
            // A connection of its own: sees what is committed, nothing else.
            let c = rusqlite::Connection::open(&path).unwrap();
            c.query_row(
                "SELECT count(*) FROM checkpoints c JOIN threads t \
                 ON c.seq > t.no << 32 AND c.seq < (t.no + 1) << 32 \
                 WHERE t.thread_id = ?1 AND c.checkpoint_id = ?2",
                [t, id],
                |r| r.get(0),
            )
            .unwrap()
        };
        let tasks: Vec<_> = (0..40)
            .map(|t| {
                let (s, on_disk) = (s.clone(), on_disk.clone());
                tokio::spawn(async move {
                    let thread = format!("t{t}");
                    let r = match t {
                        0..=14 => {
                            s.put_many(
                                &thread,
                                vec![
                                    next(rec("c1", Some("c0"), 1)),
                                    writes_to("c1", vec![pw("a", "x", json!(t))]),
                                ],
                            )
                            .await
                        }
                        15..=29 => s.put_next(&thread, rec("c1", Some("c0"), 1)).await,
                        30..=34 => s.put_next(&thread, rec("c1", Some("gone"), 1)).await,
                        _ => {
                            s.put_many(
                                &thread,
                                vec![
                                    next(rec("c1", Some("c0"), 1)),
                                    // c0 is stored with another record: a conflict.
                                    Put::Record {
                                        record: Box::new(rec("c0", None, 7)),
                                        next: false,
                                    },
                                ],
                            )
                            .await
                        }
                    };
                    let seen = on_disk(&thread, "c1");
                    (t, r, seen)
                })
            })
            .collect();
        // Every write is queued (the first waits for the lock) before it is released.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            tasks.iter().all(|t| !t.is_finished()),
            "saved through the lock"
        );
        other.execute_batch("COMMIT").unwrap();
        for task in tasks {
            let (t, r, seen) = task.await.unwrap();
            match t {
                0..=29 => {
                    r.unwrap();
                    assert_eq!(seen, 1, "t{t}: answered before its commit");
                }
                _ => {
                    let e = r.unwrap_err();
                    assert!(matches!(e, CheckpointError::Conflict { .. }), "t{t}: {e:?}");
                    assert_eq!(seen, 0, "t{t}: a refused write left its record");
                }
            }
        }
        for t in 0..40 {
            let thread = format!("t{t}");
            let latest = s.get(&thread, None).await.unwrap().unwrap();
            let want = if t < 30 { "c1" } else { "c0" };
            assert_eq!(latest.id, want, "{thread}");
            assert_eq!(latest.step, if t < 30 { 1 } else { 0 }, "{thread}");
            if t < 30 {
                let writes = s.pending_writes(&thread, "c1").await.unwrap();
                let want = if t < 15 {
                    vec![pw("a", "x", json!(t))]
                } else {
                    vec![]
                };
                assert_eq!(writes, want, "{thread}");
            }
        }
        // 40 writes in a few commits: the one that waited for the lock, then groups of
        // what was queued (the writes of 10 that were refused committed nothing).
        let commits = wal_commits(&db) - before;
        assert!(
            (1..=4).contains(&commits),
            "{commits} commits for 30 saved writes queued together"
        );
        s.close().unwrap();
        // And all of it is in the file for a new saver.
        let s = SqliteSaver::open(db.path()).unwrap();
        for t in 0..30 {
            assert_eq!(
                s.get(&format!("t{t}"), None).await.unwrap().unwrap().id,
                "c1"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_may_block_waits_for_another_writers_lock() {
        // Another connection holds the file's write lock: a save on the calling thread
        // does not fail with "database is locked", it waits (on the SQLite thread) and
        // goes in once the lock is released.
        let db = TempDb::new("blocked-caller");
        let s = Arc::new(SqliteSaver::open(db.path()).unwrap());
        put_linear(&*s, "t", "c", 1).await;
        let other = rusqlite::Connection::open(db.path()).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (release, locked) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            locked.recv().unwrap();
            other.execute_batch("COMMIT").unwrap();
        });
        let saver = s.clone();
        let saving = on_a_blocking_caller(move || {
            futures::executor::block_on(saver.put_next("t", rec("c1", Some("c0"), 1)))
        });
        let saving = tokio::spawn(saving);
        // The save cannot have gone in while the lock is held.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!saving.is_finished(), "saved through another writer's lock");
        release.send(()).unwrap();
        saving.await.unwrap().unwrap();
        holder.join().unwrap();
        assert_eq!(ids(&s.list("t", None, None).await.unwrap()), ["c1", "c0"]);
        s.close().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_is_copied_back_off_the_committing_path() {
        // SQLite's own checkpoint-on-commit is replaced by the saver's (on its thread):
        // without it the WAL would only grow. 4 MiB of records saved from a thread that
        // commits itself; then the WAL must come back to its 1 MiB limit.
        let db = TempDb::new("wal-copied");
        let s = Arc::new(SqliteSaver::open(db.path()).unwrap());
        let saver = s.clone();
        let wal = db.wal();
        let wal_size = wal.clone();
        let sizes = on_a_blocking_caller(move || {
            let big = "x".repeat(4096);
            let mut parent: Option<String> = None;
            let mut i = 0usize;
            let put = |i: usize, parent: &mut Option<String>| {
                let id = format!("c{i}");
                let mut r = rec(&id, parent.as_deref(), i as i64);
                r.metadata = json!({ "pad": big });
                futures::executor::block_on(saver.put_next("t", r)).unwrap();
                *parent = Some(id);
            };
            while i < 1024 {
                put(i, &mut parent);
                i += 1;
            }
            let peak = std::fs::metadata(&wal_size).map(|m| m.len()).unwrap_or(0);
            // The copy runs in the background: keep committing (the WAL restarts, and is
            // truncated, at a commit after a copy) until it is back under its limit.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            let mut now = peak;
            while now > 2 << 20 && std::time::Instant::now() < deadline {
                put(i, &mut parent);
                i += 1;
                std::thread::sleep(Duration::from_millis(5));
                now = std::fs::metadata(&wal_size).map(|m| m.len()).unwrap_or(0);
            }
            (i, now)
        })
        .await;
        let (saved, wal_now) = sizes;
        assert!(
            wal_now <= 2 << 20,
            "the WAL is {wal_now} bytes after {saved} saves: it is never copied back"
        );
        assert_eq!(s.list("t", None, None).await.unwrap().len(), saved);
        s.close().unwrap();
        assert!(!wal.exists(), "the WAL is still there after close");
        let s = SqliteSaver::open(db.path()).unwrap();
        assert_eq!(s.list("t", None, None).await.unwrap().len(), saved);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_restarts_under_commits_that_never_pause() {
        // A passive copy never lets the WAL start over while the next commit always
        // begins before the last copy ended: the WAL grew without end (41 MB after 2,000
        // chat turns). Past 4 MiB the copy restarts it. 6,000 commits back to back, the
        // WAL's size looked at every 50.
        let db = TempDb::new("wal-restarts");
        let s = Arc::new(SqliteSaver::open(db.path()).unwrap());
        let saver = s.clone();
        let wal = db.wal();
        const PUTS: usize = 6000;
        let peak = on_a_blocking_caller(move || {
            let pad = "x".repeat(2048);
            let mut parent: Option<String> = None;
            let mut peak = 0;
            for i in 0..PUTS {
                let id = format!("c{i}");
                let mut r = rec(&id, parent.as_deref(), i as i64);
                r.metadata = json!({ "pad": pad });
                futures::executor::block_on(saver.put_next("t", r)).unwrap();
                parent = Some(id);
                if i % 50 == 0 {
                    peak = peak.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
                }
            }
            peak
        })
        .await;
        assert!(
            peak <= 10 << 20,
            "the WAL reached {peak} bytes over {PUTS} commits of ~2 KiB: it does not restart"
        );
        assert_eq!(s.list("t", None, None).await.unwrap().len(), PUTS);
        s.close().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn data_survives_reopening() {
        let db = TempDb::new("reopen");
        {
            let s = SqliteSaver::open(db.path()).unwrap();
            put_linear(&s, "t", "c", 4).await;
            s.put("t", rec("f", Some("c1"), 2)).await.unwrap();
            s.put_writes(
                "t",
                "c3",
                vec![
                    pw("a", "x", json!({"k": 1})),
                    pwi("b", 3, "__done__", json!(null)),
                ],
            )
            .await
            .unwrap();
            put_linear(&s, "u", "d", 2).await;
            // Dropped without close(): drop must flush and close too.
        }
        let s = SqliteSaver::open(db.path()).unwrap();
        assert_eq!(
            s.get("t", None).await.unwrap(),
            Some(rec("f", Some("c1"), 2))
        );
        assert_eq!(
            s.get("t", Some("c3")).await.unwrap(),
            Some(rec("c3", Some("c2"), 3))
        );
        assert_eq!(
            ids(&s.list("t", None, None).await.unwrap()),
            ["f", "c3", "c2", "c1", "c0"]
        );
        assert_eq!(
            ids(&s.chain("t", "c3").await.unwrap()),
            ["c0", "c1", "c2", "c3"]
        );
        assert_eq!(ids(&s.chain("t", "f").await.unwrap()), ["c0", "c1", "f"]);
        assert_eq!(
            s.pending_writes("t", "c3").await.unwrap(),
            vec![
                pw("a", "x", json!({"k": 1})),
                pwi("b", 3, "__done__", json!(null))
            ]
        );
        assert_eq!(ids(&s.list("u", None, None).await.unwrap()), ["d1", "d0"]);
        // Writing after reopening continues the insertion order.
        s.put("t", rec("c4", Some("c3"), 4)).await.unwrap();
        assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c4");
        assert!(s.pending_writes("t", "c3").await.unwrap().is_empty());
        s.close().unwrap();
        // And once more, after an explicit close.
        let s = SqliteSaver::open(db.path()).unwrap();
        assert_eq!(s.list("t", None, None).await.unwrap().len(), 6);
    }

    /// Savers opening one new file at once all open it. The first one switching the file
    /// to WAL holds it exclusively for a moment, and SQLite answers the others
    /// `SQLITE_BUSY` at once then, without waiting (what failed
    /// `two_savers_one_file_concurrent_writers` once, under load).
    #[test]
    fn savers_opening_one_new_file_at_once_all_open_it() {
        for round in 0..40 {
            let db = TempDb::new(&format!("open-race-{round}"));
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, barrier) = (db.path().to_path_buf(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        SqliteSaver::open(&path).and_then(|s| s.close())
                    })
                })
                .collect();
            for o in openers {
                if let Err(e) = o.join().unwrap() {
                    panic!("round {round}: {e}");
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_savers_one_file_concurrent_writers() {
        let db = TempDb::new("two-savers");
        let path = db.path().to_path_buf();
        // Each writer opens its own saver (concurrently, so schema creation races too).
        let writers: Vec<_> = ["left", "right"]
            .into_iter()
            .map(|name| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    rt.block_on(async move {
                        let s = SqliteSaver::open(&path).unwrap();
                        for i in 0..200 {
                            let id = format!("{name}{i}");
                            let parent = (i > 0).then(|| format!("{name}{}", i - 1));
                            s.put_writes(name, &id, vec![pw("t", "x", json!(i))])
                                .await
                                .unwrap();
                            s.put(name, rec(&id, parent.as_deref(), i)).await.unwrap();
                        }
                        s.close().unwrap();
                    })
                })
            })
            .collect();
        for w in writers {
            w.join().expect("a writer failed");
        }
        let s = SqliteSaver::open(&path).unwrap();
        for name in ["left", "right"] {
            let all = s.list(name, None, None).await.unwrap();
            assert_eq!(all.len(), 200, "{name}");
            assert_eq!(all[0].id, format!("{name}199"));
            let chain = s.chain(name, &format!("{name}199")).await.unwrap();
            assert_eq!(chain.len(), 200);
            assert_eq!(chain[0].id, format!("{name}0"));
            // Only the last checkpoint still has pending writes (children took the rest).
            assert!(s
                .pending_writes(name, &format!("{name}198"))
                .await
                .unwrap()
                .is_empty());
            assert_eq!(
                s.pending_writes(name, &format!("{name}199"))
                    .await
                    .unwrap()
                    .len(),
                1
            );
        }
    }

    /// Two savers on one file (as two processes would be) advancing one thread: one
    /// linear history, every step saved once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn put_next_across_savers_on_one_file() {
        let db = TempDb::new("race");
        let first = SqliteSaver::open(db.path()).unwrap();
        first.put_next("t", rec("root", None, 0)).await.unwrap();
        let writers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let path = db.path().to_path_buf();
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    rt.block_on(async move {
                        let s = SqliteSaver::open(&path).unwrap();
                        advance_racing(&s, "t", name, 60).await
                    })
                })
            })
            .collect();
        for w in writers {
            w.join().expect("a writer failed");
        }
        assert_linear(&first, "t", 121).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn use_after_close_is_a_clear_error() {
        let db = TempDb::new("closed");
        let s = SqliteSaver::open(db.path()).unwrap();
        s.put("t", rec("c0", None, 0)).await.unwrap();
        assert!(!s.is_closed());
        s.close().unwrap();
        assert!(s.is_closed());
        s.close().unwrap(); // idempotent
        let errors = [
            s.put("t", rec("c1", Some("c0"), 1)).await.unwrap_err(),
            s.put_writes("t", "c0", vec![pw("a", "x", json!(1))])
                .await
                .unwrap_err(),
            s.get("t", None).await.unwrap_err(),
            s.chain("t", "c0").await.unwrap_err(),
            s.list("t", None, None).await.unwrap_err(),
            s.pending_writes("t", "c0").await.unwrap_err(),
            s.delete_thread("t").await.unwrap_err(),
        ];
        for e in errors {
            assert!(e.to_string().contains("the SqliteSaver was closed"), "{e}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn close_finishes_queued_work_and_refuses_later_work() {
        let db = TempDb::new("queued");
        let s = Arc::new(SqliteSaver::open(db.path()).unwrap());
        // Callers race with close(): every put either completes (and is in the file) or
        // fails with "closed"; nothing half-done, nothing lost after an Ok.
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let s = s.clone();
                tokio::spawn(async move { s.put("t", rec(&format!("c{i}"), None, i)).await })
            })
            .collect();
        let closer = s.clone();
        tokio::task::spawn_blocking(move || closer.close().unwrap())
            .await
            .unwrap();
        let mut ok = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(()) => ok += 1,
                Err(e) => assert!(e.to_string().contains("the SqliteSaver was closed"), "{e}"),
            }
        }
        let s = SqliteSaver::open(db.path()).unwrap();
        assert_eq!(s.list("t", None, None).await.unwrap().len(), ok);
    }

    #[test]
    fn open_errors_name_the_file_and_the_fix() {
        // Missing directory.
        let db = TempDb::new("no-such-dir");
        let bad = db.path().join("sub").join("x.db");
        let e = SqliteSaver::open(&bad).unwrap_err().to_string();
        assert!(e.contains(&bad.display().to_string()), "{e}");
        assert!(e.contains("directory"), "{e}");

        // Not a database.
        let junk = TempDb::new("junk");
        std::fs::write(junk.path(), vec![b'x'; 4096]).unwrap();
        let e = SqliteSaver::open(junk.path()).unwrap_err().to_string();
        assert!(e.contains("not a SQLite database"), "{e}");

        // A SQLite file with foreign `checkpoints` table (e.g. LangGraph's).
        let foreign = TempDb::new("foreign");
        {
            let c = rusqlite::Connection::open(foreign.path()).unwrap();
            c.execute_batch("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB);")
                .unwrap();
        }
        let e = SqliteSaver::open(foreign.path()).unwrap_err().to_string();
        assert!(e.contains("did not create"), "{e}");
    }

    /// `r` as format 2 stored it (before the checksum): 7 elements, no checksum.
    pub(super) fn format_2(r: &CheckpointRecord) -> String {
        let text = super::format_3(r);
        let serde_json::Value::Array(mut items) = serde_json::from_str(&text).unwrap() else {
            unreachable!("{text}")
        };
        items.truncate(7);
        serde_json::to_string(&items).unwrap()
    }

    /// A record changed in the file, in a way that leaves valid JSON (a digit of a
    /// number), or its `parent_id` beside it, is an error naming the thread, the
    /// checkpoint and the checksum, not another state; a record written before the
    /// checksum (format 2) still loads, in a chain with format-4 ones.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_changed_record_is_an_error_naming_thread_and_checkpoint() {
        let db = TempDb::new("changed");
        let s = SqliteSaver::open(db.path()).unwrap();
        put_linear(&s, "t", "c", 3).await;
        let c = rusqlite::Connection::open(db.path()).unwrap();
        let stored: String = c
            .query_row(
                "SELECT record FROM checkpoints WHERE checkpoint_id = 'c1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let set = |column: &str, value: Option<&str>| {
            c.execute(
                &format!("UPDATE checkpoints SET {column} = ?1 WHERE checkpoint_id = 'c1'"),
                [value],
            )
            .unwrap()
        };
        let changed = stored.replacen("1700000001.25", "1700000001.75", 1);
        assert_ne!(changed, stored);
        set("record", Some(&changed));
        for e in [
            s.get("t", Some("c1")).await.unwrap_err(),
            s.chain("t", "c2").await.unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("thread \"t\"")
                    && e.contains("checkpoint \"c1\"")
                    && e.contains("checksum"),
                "{e}"
            );
        }
        set("record", Some(&stored));
        set("parent_id", Some("c2"));
        let e = s.get("t", Some("c1")).await.unwrap_err().to_string();
        assert!(
            e.contains("checkpoint \"c1\"") && e.contains("checksum"),
            "{e}"
        );
        set("parent_id", Some("c0"));
        assert_eq!(
            s.get("t", Some("c1")).await.unwrap(),
            Some(rec("c1", Some("c0"), 1))
        );

        // Format 2, from before the checksum: read as it was.
        set("record", Some(&format_2(&rec("c1", Some("c0"), 1))));
        let chain = s.chain("t", "c2").await.unwrap();
        assert_eq!(
            chain,
            [
                rec("c0", None, 0),
                rec("c1", Some("c0"), 1),
                rec("c2", Some("c1"), 2)
            ]
        );
    }

    /// Records of format 3 load beside format-4 ones (see the helper).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn format_3_records_load_beside_format_4_ones() {
        let db = TempDb::new("format3");
        let s = SqliteSaver::open(db.path()).unwrap();
        let c = std::sync::Mutex::new(rusqlite::Connection::open(db.path()).unwrap());
        // Swaps the text in (an empty one: reads only) and answers the one before.
        let rewrite = |id: String, text: String| {
            let c = c.lock().unwrap();
            let before: String = c
                .query_row(
                    "SELECT record FROM checkpoints WHERE checkpoint_id = ?1",
                    [&id],
                    |r| r.get(0),
                )
                .unwrap();
            if !text.is_empty() {
                c.execute(
                    "UPDATE checkpoints SET record = ?1 WHERE checkpoint_id = ?2",
                    [&text, &id],
                )
                .unwrap();
            }
            std::future::ready(before)
        };
        super::format_3_records_load_beside_format_4(&s, rewrite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn file_is_in_wal_mode_and_records_are_compact_json() {
        let db = TempDb::new("wal");
        let s = SqliteSaver::open(db.path()).unwrap();
        s.put("t", rec("c0", None, 0)).await.unwrap();
        s.close().unwrap();
        let c = rusqlite::Connection::open(db.path()).unwrap();
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let json: String = c
            .query_row("SELECT record FROM checkpoints", [], |r| r.get(0))
            .unwrap();
        assert!(!json.contains(": ") && !json.contains('\n'), "{json}");
        // Format 4: an array without the ids (they are columns), a checksum last.
        assert!(
            json.starts_with("[4,0,0,") && !json.contains("\"c0\""),
            "{json}"
        );
        assert_eq!(
            ironloop::checkpoint::record::decode(&json, "c0", None).unwrap(),
            rec("c0", None, 0)
        );
    }
}

#[cfg(feature = "sqlite")]
mod sqlite_migration {
    use super::*;

    /// The tables of schema versions 2 and 3 (`src/checkpoint/sqlite.rs` before
    /// version 4), as they wrote them.
    const SCHEMA_3: &str = "
        CREATE TABLE checkpoints (
            seq           INTEGER PRIMARY KEY,
            thread_id     TEXT    NOT NULL,
            checkpoint_id TEXT    NOT NULL,
            parent_id     TEXT,
            step          INTEGER NOT NULL,
            record        TEXT    NOT NULL,
            UNIQUE (thread_id, checkpoint_id)
        );
        CREATE INDEX checkpoints_by_thread ON checkpoints (thread_id, seq);
        CREATE TABLE writes (
            seq           INTEGER PRIMARY KEY,
            thread_id     TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            task_id       TEXT NOT NULL,
            idx           INTEGER NOT NULL,
            node          TEXT NOT NULL,
            channel       TEXT NOT NULL,
            value         TEXT NOT NULL
        );
        CREATE INDEX writes_by_checkpoint ON writes (thread_id, checkpoint_id, seq);
        CREATE UNIQUE INDEX writes_by_task ON writes (thread_id, checkpoint_id, task_id, idx);
        CREATE TABLE claims (
            thread_id  TEXT PRIMARY KEY,
            owner      TEXT NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE TABLE activity (
            thread_id  TEXT PRIMARY KEY,
            at         REAL NOT NULL
        );
        CREATE TRIGGER writes_activity AFTER INSERT ON writes BEGIN
            INSERT INTO activity (thread_id, at) VALUES (new.thread_id, unixepoch('now', 'subsec'))
            ON CONFLICT (thread_id) DO UPDATE SET at = excluded.at;
        END;
    ";

    /// Inserts `r` into a file of version 2 or 3, as those versions did.
    fn insert_3(c: &rusqlite::Connection, thread: &str, r: &CheckpointRecord, text: &str) {
        c.execute(
            "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, record) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![thread, r.id, r.parent_id, r.step, text],
        )
        .unwrap();
    }

    /// A file of schema version 3 (several threads, a namespace, pending writes, ids
    /// in no order) is migrated to version 4 when opened: every record is found by its
    /// id and by its place, chains and lists are as before, and runs go on from the
    /// latest records with ids of their own (ordered ones and not).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_3_files_are_migrated() {
        let db = TempDb::new("v3");
        let ns = "t\u{1f}sub:1".to_string();
        // Ids in no order: "z...", "a...", ... as version-4 UUIDs would be.
        let id = |th: usize, i: usize| format!("{}{th}-{i}", ["z", "a", "m", "b", "y"][i % 5]);
        let chain_of = |th: usize, n: usize| -> Vec<CheckpointRecord> {
            (0..n)
                .map(|i| {
                    let parent = (i > 0).then(|| id(th, i - 1));
                    let r = rec(&id(th, i), parent.as_deref(), i as i64);
                    if i == 3 {
                        with_snapshot(r, 3)
                    } else {
                        r
                    }
                })
                .collect()
        };
        let threads = ["t".to_owned(), "u".to_owned(), ns.clone()];
        {
            let c = rusqlite::Connection::open(db.path()).unwrap();
            c.execute_batch(SCHEMA_3).unwrap();
            c.execute_batch("PRAGMA user_version = 3").unwrap();
            // Interleaved, as several threads' runs write.
            for i in 0..6 {
                for (th, t) in threads.iter().enumerate() {
                    let r = &chain_of(th, 6)[i];
                    let text = if i == 1 {
                        super::sqlite_only::format_2(r)
                    } else {
                        serde_json::to_string(r).unwrap()
                    };
                    insert_3(&c, t, r, &text);
                }
            }
            c.execute(
                "INSERT INTO writes (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
                 VALUES ('u', ?1, 'a', 0, 'n', 'x', '1')",
                [id(1, 5)],
            )
            .unwrap();
        }
        let s = SqliteSaver::open(db.path()).unwrap();
        for (th, t) in threads.iter().enumerate() {
            let all = chain_of(th, 6);
            assert_eq!(s.get(t, None).await.unwrap().as_ref(), Some(&all[5]), "{t}");
            for r in &all {
                assert_eq!(s.get(t, Some(&r.id)).await.unwrap().as_ref(), Some(r));
            }
            assert_eq!(s.chain(t, &all[5].id).await.unwrap(), all);
            assert_eq!(
                s.chain_from_snapshot(t, &all[5].id).await.unwrap(),
                all[3..]
            );
            let listed = s.list(t, Some(2), Some(&all[4].id)).await.unwrap();
            assert_eq!(ids(&listed), [all[3].id.as_str(), all[2].id.as_str()]);
            assert_eq!(s.get(t, Some(&id(th + 1, 0))).await.unwrap(), None);
        }
        assert_eq!(s.pending_writes("u", &id(1, 5)).await.unwrap().len(), 1);
        // A retried put of a migrated record is the same record; another one conflicts.
        s.put_next("t", chain_of(0, 6)[5].clone()).await.unwrap();
        assert!(s
            .put_next("t", rec(&id(0, 2), Some(&id(0, 5)), 9))
            .await
            .is_err());
        // Runs go on: an id below the migrated ones, then ordered ones.
        s.put_next("u", rec("0-new", Some(&id(1, 5)), 6))
            .await
            .unwrap();
        assert!(s.pending_writes("u", &id(1, 5)).await.unwrap().is_empty());
        s.put_next("u", rec("1-new", Some("0-new"), 7))
            .await
            .unwrap();
        s.put_next("u", rec("2-new", Some("1-new"), 8))
            .await
            .unwrap();
        let chain = s.chain_from_snapshot("u", "2-new").await.unwrap();
        assert_eq!(
            ids(&chain),
            [
                id(1, 3),
                id(1, 4),
                id(1, 5),
                "0-new".into(),
                "1-new".into(),
                "2-new".into()
            ]
        );
        assert_eq!(s.get("u", Some("1-new")).await.unwrap().unwrap().step, 7);
        // A new thread after the migration.
        put_linear(&s, "v", "c", 3).await;
        assert_eq!(ids(&s.chain("v", "c2").await.unwrap()), ["c0", "c1", "c2"]);
        // Deleting the namespace's thread keeps the others.
        s.delete_thread("t").await.unwrap();
        assert_eq!(s.get("t", None).await.unwrap(), None);
        assert_eq!(s.get(&ns, None).await.unwrap(), None);
        assert_eq!(s.get("u", None).await.unwrap().unwrap().id, "2-new");
        s.close().unwrap();
        let c = rusqlite::Connection::open(db.path()).unwrap();
        let v: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 4);
        // Version 4 refuses to be opened by an ironloop that knows version 3 (its
        // `user_version`); a file of an unknown version is refused by this one.
        c.execute_batch("PRAGMA user_version = 5").unwrap();
        drop(c);
        let e = SqliteSaver::open(db.path()).unwrap_err().to_string();
        assert!(e.contains("version 5"), "{e}");
    }

    /// A file written by the first schema (pending writes without `idx`) opens, keeps
    /// every write, and deduplicates from then on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_1_files_are_migrated() {
        let db = TempDb::new("v1");
        {
            let c = rusqlite::Connection::open(db.path()).unwrap();
            c.execute_batch(
                "CREATE TABLE checkpoints (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, \
                   checkpoint_id TEXT NOT NULL, parent_id TEXT, step INTEGER NOT NULL, \
                   record TEXT NOT NULL, UNIQUE (thread_id, checkpoint_id)); \
                 CREATE INDEX checkpoints_by_thread ON checkpoints (thread_id, seq); \
                 CREATE TABLE writes (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, \
                   checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, node TEXT NOT NULL, \
                   channel TEXT NOT NULL, value TEXT NOT NULL); \
                 CREATE INDEX writes_by_checkpoint ON writes (thread_id, checkpoint_id, seq); \
                 PRAGMA user_version = 1;",
            )
            .unwrap();
            let json = serde_json::to_string(&rec("c0", None, 0)).unwrap();
            c.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, record) \
                 VALUES ('t', 'c0', NULL, 0, ?1)",
                [json],
            )
            .unwrap();
            for (ch, v) in [("x", "1"), ("y", "2"), ("__done__", "null")] {
                c.execute(
                    "INSERT INTO writes (thread_id, checkpoint_id, task_id, node, channel, value) \
                     VALUES ('t', 'c0', 'a', 'tools', ?1, ?2)",
                    [ch, v],
                )
                .unwrap();
            }
        }
        let s = SqliteSaver::open(db.path()).unwrap();
        let ws = s.pending_writes("t", "c0").await.unwrap();
        let channels: Vec<_> = ws.iter().map(|w| w.channel.as_str()).collect();
        assert_eq!(channels, ["x", "y", "__done__"]);
        assert_eq!(s.get("t", None).await.unwrap(), Some(rec("c0", None, 0)));
        let again = ws[0].clone();
        s.put_writes("t", "c0", vec![again]).await.unwrap();
        assert_eq!(s.pending_writes("t", "c0").await.unwrap().len(), 3);
        s.close().unwrap();
        let c = rusqlite::Connection::open(db.path()).unwrap();
        let v: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 4);
    }

    /// A file of schema version 2 (records in format 1, snapshots included) opens,
    /// loads, takes new records in format 4 on the same chains, and is then refused by
    /// an ironloop that knows only version 2 (its `user_version` is 4).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_2_files_with_format_1_records_load() {
        let db = TempDb::new("v2");
        {
            let c = rusqlite::Connection::open(db.path()).unwrap();
            c.execute_batch(SCHEMA_3).unwrap();
            c.execute_batch("PRAGMA user_version = 2").unwrap();
            for i in 0..5i64 {
                let parent = (i > 0).then(|| format!("c{}", i - 1));
                let mut r = rec(&format!("c{i}"), parent.as_deref(), i);
                if i == 2 {
                    r = with_snapshot(r, 2);
                }
                c.execute(
                    "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, record) \
                     VALUES ('t', ?1, ?2, ?3, ?4)",
                    rusqlite::params![r.id, r.parent_id, i, serde_json::to_string(&r).unwrap()],
                )
                .unwrap();
            }
        }
        let s = SqliteSaver::open(db.path()).unwrap();
        let old = |i: i64| {
            let parent = (i > 0).then(|| format!("c{}", i - 1));
            let r = rec(&format!("c{i}"), parent.as_deref(), i);
            if i == 2 {
                with_snapshot(r, 2)
            } else {
                r
            }
        };
        assert_eq!(s.get("t", None).await.unwrap(), Some(old(4)));
        assert_eq!(
            ids(&s.chain_from_snapshot("t", "c4").await.unwrap()),
            ["c2", "c3", "c4"]
        );
        // A retried put of a format-1 record is the same record.
        s.put_next("t", old(3)).await.unwrap();
        s.put_next("t", rec("c5", Some("c4"), 5)).await.unwrap();
        s.put_next("t", with_snapshot(rec("c6", Some("c5"), 6), 6))
            .await
            .unwrap();
        s.put_next("t", rec("c7", Some("c6"), 7)).await.unwrap();
        let chain = s.chain("t", "c7").await.unwrap();
        assert_eq!(chain.len(), 8);
        assert_eq!(chain[4], old(4));
        assert_eq!(chain[5], rec("c5", Some("c4"), 5));
        assert_eq!(
            ids(&s.chain_from_snapshot("t", "c7").await.unwrap()),
            ["c6", "c7"]
        );
        assert_eq!(
            ids(&s.chain_from_snapshot("t", "c5").await.unwrap()),
            ["c2", "c3", "c4", "c5"]
        );
        s.close().unwrap();
        let c = rusqlite::Connection::open(db.path()).unwrap();
        let (v, formats): (i64, String) = (
            c.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap(),
            c.query_row(
                "SELECT group_concat(substr(record, 1, 1), '') FROM checkpoints ORDER BY seq",
                [],
                |r| r.get(0),
            )
            .unwrap(),
        );
        assert_eq!((v, formats.as_str()), (4, "{{{{{[[["));
    }
}

// ---------------------------------------------------------------------------------
// PostgreSQL only
// ---------------------------------------------------------------------------------

#[cfg(feature = "postgres")]
mod postgres_only {
    use std::time::{Duration, Instant};

    use ironloop::checkpoint::{PostgresOptions, PostgresSaver};

    use super::*;

    /// The test server's URL with `application_name` set, to find the saver's backends.
    fn url_named(app: &str) -> String {
        let url = pg::url();
        if url.contains("://") {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}application_name={app}")
        } else {
            format!("{url} application_name={app}")
        }
    }

    /// A thread's run lease is one saver's at a time (each saver stands for a process:
    /// its own lease connection), an ask to stop reaches its holder through
    /// `pg_notify`, and the lease goes with its connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_lease_is_one_savers_at_a_time_and_asks_reach_its_holder() {
        use ironloop::checkpoint::StopAsk;
        let schema = pg::TempSchema::new("lease").await;
        let (a, b) = (schema.saver().await, schema.saver().await);
        let held = a.try_lease("t").await.unwrap().expect("free");
        assert!(!held.is_local());
        assert!(b.try_lease("t").await.unwrap().is_none(), "held by a");
        let other = b.try_lease("u").await.unwrap().expect("another thread");
        // Another schema's thread of the same name is another lease.
        let elsewhere = pg::TempSchema::new("lease_other").await;
        let c = elsewhere.saver().await;
        assert!(c.try_lease("t").await.unwrap().is_some());
        assert_eq!(held.asked(), None);
        b.ask_stop("t", StopAsk::Interrupt).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while held.asked().is_none() {
            assert!(Instant::now() < deadline, "the ask never arrived");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(held.asked(), Some(StopAsk::Interrupt));
        // A rollback outranks an interrupt; an ask for one thread reaches no other.
        b.ask_stop("t", StopAsk::Rollback).await.unwrap();
        while held.asked() != Some(StopAsk::Rollback) {
            assert!(Instant::now() < deadline, "the rollback ask never arrived");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(other.asked(), None, "an ask for t reached u's lease");
        held.release().await;
        let again = b.try_lease("t").await.unwrap().expect("released");
        assert_eq!(
            again.asked(),
            None,
            "an ask to the earlier holder is not this one's"
        );
        drop((again, other));
        Checkpointer::close(&a).await.unwrap();
        Checkpointer::close(&b).await.unwrap();
        Checkpointer::close(&c).await.unwrap();
        schema.drop().await;
        elsewhere.drop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn setup_creates_migrates_and_is_safe_to_repeat() {
        let schema = pg::TempSchema::new("setup").await;
        let s = schema.saver().await;
        // Before setup: the error says what to do.
        let e = s.get("t", None).await.unwrap_err();
        assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
        assert!(e.to_string().contains("call setup()"), "{e}");
        // Several workers starting at once all set up, once.
        let mut workers = Vec::new();
        for _ in 0..4 {
            let opts = schema.options();
            workers.push(tokio::spawn(async move {
                let w = PostgresSaver::connect_with(&pg::url(), opts).await.unwrap();
                w.setup().await.unwrap();
            }));
        }
        for w in workers {
            w.await.unwrap();
        }
        s.setup().await.unwrap();
        let admin = pg::admin().await;
        let versions: Vec<i32> = admin
            .query(
                &format!(
                    "SELECT version FROM \"{}\".ironloop_migrations ORDER BY version",
                    schema.name
                ),
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let all: Vec<i32> = (1..=ironloop::checkpoint::postgres::SCHEMA_VERSION).collect();
        assert_eq!(versions, all);
        put_linear(&s, "t", "c", 2).await;
        // A schema from a newer ironloop is refused, and left alone.
        admin
            .execute(
                &format!(
                    "INSERT INTO \"{}\".ironloop_migrations (version) VALUES (99)",
                    schema.name
                ),
                &[],
            )
            .await
            .unwrap();
        let e = s.setup().await.unwrap_err().to_string();
        assert!(e.contains("99") && e.contains("upgrade ironloop"), "{e}");
        assert_eq!(s.list("t", None, None).await.unwrap().len(), 2);
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    /// Creates schema `name` as ironloop made it at `version` 3 or 4 (text ids, the
    /// `(thread_id, seq)` primary key, the `(thread_id, checkpoint_id)` unique index;
    /// version 4 adds `ironloop_refused`).
    async fn old_schema(admin: &tokio_postgres::Client, name: &str, version: i32) {
        let q = |sql: &str| {
            sql.replace("{s_}", &format!("\"{name}\""))
                .replace("{s}", &format!("\"{name}\"."))
        };
        admin
            .batch_execute(&q("CREATE SCHEMA {s_}; \
                 CREATE TABLE {s}ironloop_migrations (version integer PRIMARY KEY, \
                   applied_at timestamptz NOT NULL DEFAULT now()); \
                 CREATE TABLE {s}ironloop_checkpoints (seq bigserial NOT NULL, \
                   thread_id text NOT NULL, checkpoint_id text NOT NULL, parent_id text, \
                   step bigint NOT NULL, record text NOT NULL, UNIQUE (thread_id, checkpoint_id), \
                   PRIMARY KEY (thread_id, seq)); \
                 CREATE TABLE {s}ironloop_writes (seq bigserial PRIMARY KEY, thread_id text NOT NULL, \
                   checkpoint_id text NOT NULL, task_id text NOT NULL, idx bigint NOT NULL, \
                   node text NOT NULL, channel text NOT NULL, value text NOT NULL, \
                   saved_at timestamptz NOT NULL DEFAULT now(), \
                   UNIQUE (thread_id, checkpoint_id, task_id, idx)); \
                 CREATE TABLE {s}ironloop_threads (thread_id text PRIMARY KEY, \
                   latest_id text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now()); \
                 CREATE TABLE {s}ironloop_claims (thread_id text PRIMARY KEY, owner text NOT NULL, \
                   expires_at timestamptz NOT NULL); \
                 INSERT INTO {s}ironloop_migrations (version) VALUES (1), (2), (3);"))
            .await
            .unwrap();
        if version >= 4 {
            admin
                .batch_execute(&q("CREATE FUNCTION {s}ironloop_refused(thread text) \
                     RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN \
                     RAISE EXCEPTION 'refused' USING ERRCODE = 'IL409'; END $$; \
                     INSERT INTO {s}ironloop_migrations (version) VALUES (4);"))
                .await
                .unwrap();
        }
    }

    /// A schema at version 3 (no `ironloop_refused`, text ids): a step and a batch fail
    /// saying to call setup(), and leave nothing; setup() migrates it (versions 4 and
    /// 5), the thread reads back and the same batch goes in, then a refused batch still
    /// leaves nothing and names the thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_3_schemas_need_setup_for_batches() {
        let schema = pg::TempSchema::new("v3").await;
        let admin = pg::admin().await;
        old_schema(&admin, &schema.name, 3).await;
        let s = schema.saver().await;
        let e = s.put_next("t", rec("c0", None, 0)).await.unwrap_err();
        assert!(e.to_string().contains("call setup()"), "{e}");
        admin
            .execute(
                &format!(
                    "INSERT INTO \"{}\".ironloop_checkpoints \
                     (thread_id, checkpoint_id, parent_id, step, record) VALUES ('t', 'c0', NULL, 0, $1)",
                    schema.name
                ),
                &[&ironloop::checkpoint::record::encode(&rec("c0", None, 0)).unwrap()],
            )
            .await
            .unwrap();
        admin
            .batch_execute(&format!(
                "INSERT INTO \"{}\".ironloop_threads (thread_id, latest_id) VALUES ('t', 'c0')",
                schema.name
            ))
            .await
            .unwrap();
        let batch = || {
            vec![
                next(rec("c1", Some("c0"), 1)),
                writes_to("c1", vec![pw("a", "x", json!(1))]),
                next(rec("c2", Some("c1"), 2)),
            ]
        };
        let e = s.put_many("t", batch()).await.unwrap_err();
        assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
        assert!(e.to_string().contains("call setup()"), "{e}");
        s.setup().await.unwrap();
        assert_eq!(s.get("t", None).await.unwrap(), Some(rec("c0", None, 0)));
        s.put_many("t", batch()).await.unwrap();
        assert_eq!(ids(&s.chain("t", "c2").await.unwrap()), ["c0", "c1", "c2"]);
        let e = s
            .put_many(
                "t",
                vec![
                    writes_to("c2", vec![pw("a", "x", json!(2))]),
                    next(rec("c3", Some("c1"), 2)),
                ],
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&e, CheckpointError::Conflict { thread_id, .. } if thread_id == "t"),
            "{e:?}"
        );
        assert!(s.pending_writes("t", "c2").await.unwrap().is_empty());
        assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c2");
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    /// A schema at version 2 holding format-1 records migrates to the current version
    /// and its threads load and go on (new records in format 4 on the same chains).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_2_schemas_with_format_1_records_migrate() {
        let schema = pg::TempSchema::new("v2").await;
        let admin = pg::admin().await;
        let q = |sql: &str| sql.replace("{s}", &format!("\"{}\".", schema.name));
        admin
            .batch_execute(&q("CREATE SCHEMA {s_}; \
                 CREATE TABLE {s}ironloop_migrations (version integer PRIMARY KEY, \
                   applied_at timestamptz NOT NULL DEFAULT now()); \
                 CREATE TABLE {s}ironloop_checkpoints (seq bigserial PRIMARY KEY, \
                   thread_id text NOT NULL, checkpoint_id text NOT NULL, parent_id text, \
                   step bigint NOT NULL, record text NOT NULL, UNIQUE (thread_id, checkpoint_id)); \
                 CREATE INDEX ironloop_checkpoints_by_thread ON {s}ironloop_checkpoints (thread_id, seq); \
                 CREATE TABLE {s}ironloop_writes (seq bigserial PRIMARY KEY, thread_id text NOT NULL, \
                   checkpoint_id text NOT NULL, task_id text NOT NULL, idx bigint NOT NULL, \
                   node text NOT NULL, channel text NOT NULL, value text NOT NULL, \
                   saved_at timestamptz NOT NULL DEFAULT now(), \
                   UNIQUE (thread_id, checkpoint_id, task_id, idx)); \
                 CREATE TABLE {s}ironloop_threads (thread_id text PRIMARY KEY, \
                   latest_id text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now()); \
                 CREATE TABLE {s}ironloop_claims (thread_id text PRIMARY KEY, owner text NOT NULL, \
                   expires_at timestamptz NOT NULL); \
                 INSERT INTO {s}ironloop_migrations (version) VALUES (1), (2); \
                 INSERT INTO {s}ironloop_threads (thread_id, latest_id) VALUES ('t', 'c3');")
                .replace("{s_}", &format!("\"{}\"", schema.name)))
            .await
            .unwrap();
        let old = |i: i64| {
            let parent = (i > 0).then(|| format!("c{}", i - 1));
            let r = rec(&format!("c{i}"), parent.as_deref(), i);
            if i == 1 {
                with_snapshot(r, 1)
            } else {
                r
            }
        };
        for i in 0..4i64 {
            let r = old(i);
            admin
                .execute(
                    &q("INSERT INTO {s}ironloop_checkpoints \
                        (thread_id, checkpoint_id, parent_id, step, record) \
                        VALUES ('t', $1, $2, $3, $4)"),
                    &[&r.id, &r.parent_id, &i, &serde_json::to_string(&r).unwrap()],
                )
                .await
                .unwrap();
        }
        let s = schema.saver().await;
        s.setup().await.unwrap();
        assert_eq!(s.get("t", None).await.unwrap(), Some(old(3)));
        s.put_next("t", old(3)).await.unwrap();
        s.put_next("t", rec("c4", Some("c3"), 4)).await.unwrap();
        let chain = s.chain("t", "c4").await.unwrap();
        assert_eq!(
            chain,
            vec![old(0), old(1), old(2), old(3), rec("c4", Some("c3"), 4)]
        );
        assert_eq!(
            ids(&s.chain_from_snapshot("t", "c4").await.unwrap()),
            ["c1", "c2", "c3", "c4"]
        );
        assert_eq!(
            ids(&s.list("t", Some(2), None).await.unwrap()),
            ["c4", "c3"]
        );
        let stored: String = admin
            .query_one(
                &q("SELECT record FROM {s}ironloop_checkpoints WHERE id_text = 'c4'"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(stored.starts_with("[4,4,"), "{stored}");
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    /// A record changed in the database (a digit of a number: still valid JSON) is an
    /// error naming the thread, the checkpoint and the checksum, not another state.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_changed_record_is_an_error_naming_thread_and_checkpoint() {
        let schema = pg::TempSchema::new("changed").await;
        let s = schema.saver().await;
        s.setup().await.unwrap();
        put_linear(&s, "t", "c", 3).await;
        let admin = pg::admin().await;
        let table = format!("\"{}\".ironloop_checkpoints", schema.name);
        admin
            .execute(
                &format!(
                    "UPDATE {table} SET record = replace(record, '1700000001.25', \
                     '1700000001.75') WHERE id_text = 'c1'"
                ),
                &[],
            )
            .await
            .unwrap();
        for e in [
            s.get("t", Some("c1")).await.unwrap_err(),
            s.chain("t", "c2").await.unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("thread \"t\"")
                    && e.contains("checkpoint \"c1\"")
                    && e.contains("checksum"),
                "{e}"
            );
        }
        assert_eq!(
            s.get("t", Some("c2")).await.unwrap(),
            Some(rec("c2", Some("c1"), 2))
        );
    }

    /// Records of format 3 load beside format-4 ones (see the helper).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn format_3_records_load_beside_format_4_ones() {
        let schema = pg::TempSchema::new("format3").await;
        let s = schema.saver().await;
        s.setup().await.unwrap();
        let admin = pg::admin().await;
        let table = format!("\"{}\".ironloop_checkpoints", schema.name);
        let (admin, table) = (&admin, &table);
        let rewrite = |id: String, text: String| async move {
            let before: String = admin
                .query_one(
                    &format!("SELECT record FROM {table} WHERE id_text = $1"),
                    &[&id],
                )
                .await
                .unwrap()
                .get(0);
            if !text.is_empty() {
                admin
                    .execute(
                        &format!("UPDATE {table} SET record = $1 WHERE id_text = $2"),
                        &[&text, &id],
                    )
                    .await
                    .unwrap();
            }
            before
        };
        super::format_3_records_load_beside_format_4(&s, rewrite).await;
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    /// A schema at version 4 (text ids, the `(thread_id, seq)` primary key and the
    /// `(thread_id, checkpoint_id)` unique index) migrates to version 5 (uuid ids, one
    /// index): engine-style UUID ids and any other text ids, a fork and pending writes
    /// read back as they were, in the same order, and the thread goes on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_4_schemas_migrate_to_uuid_ids() {
        let schema = pg::TempSchema::new("v4").await;
        let admin = pg::admin().await;
        let q = |sql: &str| {
            sql.replace("{s_}", &format!("\"{}\"", schema.name))
                .replace("{s}", &format!("\"{}\".", schema.name))
        };
        old_schema(&admin, &schema.name, 4).await;
        // Thread t: u0 <- u1 <- c2 (a text id) <- u3, and a fork f <- u1 saved last;
        // thread `other` holds an id that is also t's.
        let u = |i: u8| format!("00000000-0000-4000-8000-00000000000{i}");
        let (u0, u1, u3) = (u(0), u(1), u(3));
        let old = [
            ("t", rec(&u0, None, 0)),
            ("t", with_snapshot(rec(&u1, Some(&u0), 1), 1)),
            ("t", rec("c2", Some(&u1), 2)),
            ("t", rec(&u3, Some("c2"), 3)),
            ("t", rec("Fork-1", Some(&u1), 2)),
            ("other", rec(&u0, None, 0)),
        ];
        for (t, r) in &old {
            admin
                .execute(
                    &q("INSERT INTO {s}ironloop_checkpoints \
                        (thread_id, checkpoint_id, parent_id, step, record) \
                        VALUES ($1, $2, $3, $4, $5)"),
                    &[
                        t,
                        &r.id,
                        &r.parent_id,
                        &r.step,
                        &ironloop::checkpoint::record::encode(r).unwrap(),
                    ],
                )
                .await
                .unwrap();
        }
        admin
            .batch_execute(&q(&format!(
                "INSERT INTO {{s}}ironloop_threads (thread_id, latest_id) \
                 VALUES ('t', 'Fork-1'), ('other', '{u0}'); \
                 INSERT INTO {{s}}ironloop_writes \
                 (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
                 VALUES ('t', 'Fork-1', 'a', 0, 'tools', 'x', '1')"
            )))
            .await
            .unwrap();
        let s = schema.saver().await;
        s.setup().await.unwrap();
        let by = |id: &str| old.iter().find(|(_, r)| r.id == id).unwrap().1.clone();
        assert_eq!(s.get("t", None).await.unwrap(), Some(by("Fork-1")));
        assert_eq!(s.get("t", Some("c2")).await.unwrap(), Some(by("c2")));
        assert_eq!(s.get("t", Some(&u3)).await.unwrap(), Some(by(&u3)));
        assert_eq!(s.get("other", None).await.unwrap(), Some(old[5].1.clone()));
        assert_eq!(s.get("t", Some("c9")).await.unwrap(), None);
        assert_eq!(
            s.chain("t", &u3).await.unwrap(),
            vec![by(&u0), by(&u1), by("c2"), by(&u3)]
        );
        assert_eq!(
            ids(&s.chain_from_snapshot("t", "Fork-1").await.unwrap()),
            [u1.as_str(), "Fork-1"]
        );
        assert_eq!(
            ids(&s.list("t", None, None).await.unwrap()),
            ["Fork-1", u3.as_str(), "c2", u1.as_str(), u0.as_str()]
        );
        assert_eq!(
            ids(&s.list("t", Some(2), Some("c2")).await.unwrap()),
            [u1.as_str(), u0.as_str()]
        );
        assert_eq!(
            s.pending_writes("t", "Fork-1").await.unwrap(),
            vec![pwi("a", 0, "x", json!(1))]
        );
        // A retried put of a migrated record is the same record; the thread goes on.
        s.put("t", by("c2")).await.unwrap();
        let u4 = u(4);
        s.put_next("t", rec(&u4, Some("Fork-1"), 3)).await.unwrap();
        assert!(s.pending_writes("t", "Fork-1").await.unwrap().is_empty());
        assert_eq!(
            ids(&s.chain("t", &u4).await.unwrap()),
            [u0.as_str(), u1.as_str(), "Fork-1", u4.as_str()]
        );
        s.delete_checkpoints("t", vec![u4.clone(), "Fork-1".into()])
            .await
            .unwrap();
        assert_eq!(s.get("t", None).await.unwrap().unwrap().id, u3);
        let (kind, texts): (String, i64) = {
            let r = admin
                .query_one(
                    &q("SELECT format_type(a.atttypid, a.atttypmod), \
                          (SELECT count(*) FROM {s}ironloop_checkpoints WHERE id_text IS NOT NULL) \
                        FROM pg_attribute a WHERE a.attrelid = '{s}ironloop_checkpoints'::regclass \
                        AND a.attname = 'checkpoint_id'"),
                    &[],
                )
                .await
                .unwrap();
            (r.get(0), r.get(1))
        };
        assert_eq!((kind.as_str(), texts), ("uuid", 1));
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    /// A schema at version 5 (a global `bigserial` `seq` in every record, a `seq` key
    /// on `ironloop_writes`), as that version's `setup()` left it, migrates to version
    /// 6 (a per-thread `integer` `seq` counted in `ironloop_threads`, the writes' key
    /// `(thread_id, checkpoint_id, task_id, idx)`): records, forks, the order of `list`
    /// and of pending writes read back as they were, and the threads go on in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn version_5_schemas_migrate_to_per_thread_seqs() {
        let schema = pg::TempSchema::new("v5").await;
        let admin = pg::admin().await;
        let q = |sql: &str| {
            sql.replace("{s_}", &format!("\"{}\"", schema.name))
                .replace("{s}", &format!("\"{}\".", schema.name))
        };
        old_schema(&admin, &schema.name, 4).await;
        // Version 5 as its migration made it (copied from it).
        admin
            .batch_execute(&q(r"
CREATE FUNCTION {s}ironloop_uuid(id text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        THEN id::uuid ELSE md5(id)::uuid END
$$;
CREATE FUNCTION {s}ironloop_id_text(id text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        THEN NULL ELSE id END
$$;
ALTER SEQUENCE {s}ironloop_checkpoints_seq_seq OWNED BY NONE;
CREATE TABLE {s}ironloop_checkpoints_5 (
    seq           bigint NOT NULL DEFAULT nextval('{s}ironloop_checkpoints_seq_seq'),
    thread_id     text   NOT NULL,
    checkpoint_id uuid   NOT NULL,
    parent_id     uuid,
    record        text   NOT NULL,
    id_text       text,
    parent_text   text,
    CONSTRAINT ironloop_checkpoints_5_pkey PRIMARY KEY (thread_id, checkpoint_id)
);
DROP TABLE {s}ironloop_checkpoints;
ALTER TABLE {s}ironloop_checkpoints_5 RENAME TO ironloop_checkpoints;
ALTER TABLE {s}ironloop_checkpoints
    RENAME CONSTRAINT ironloop_checkpoints_5_pkey TO ironloop_checkpoints_pkey;
ALTER SEQUENCE {s}ironloop_checkpoints_seq_seq OWNED BY {s}ironloop_checkpoints.seq;
INSERT INTO {s}ironloop_migrations (version) VALUES (5);
"))
            .await
            .unwrap();
        // Threads t and u saved turn about (their global seqs interleave); t holds a
        // text id and a fork saved last, u two pending writes saved out of task order.
        let u = |i: u8| format!("00000000-0000-4000-8000-00000000000{i}");
        let (u0, u1, u3) = (u(0), u(1), u(3));
        let old = [
            ("t", rec(&u0, None, 0)),
            ("u", rec("v0", None, 0)),
            ("t", with_snapshot(rec(&u1, Some(&u0), 1), 1)),
            ("u", rec("v1", Some("v0"), 1)),
            ("t", rec("c2", Some(&u1), 2)),
            ("t", rec(&u3, Some("c2"), 3)),
            ("t", rec("Fork-1", Some(&u1), 2)),
        ];
        for (t, r) in &old {
            admin
                .execute(
                    &q("INSERT INTO {s}ironloop_checkpoints \
                        (thread_id, checkpoint_id, parent_id, record, id_text, parent_text) \
                        VALUES ($1, {s}ironloop_uuid($2), {s}ironloop_uuid($3), $4, \
                        {s}ironloop_id_text($2), {s}ironloop_id_text($3))"),
                    &[
                        t,
                        &r.id,
                        &r.parent_id,
                        &ironloop::checkpoint::record::encode(r).unwrap(),
                    ],
                )
                .await
                .unwrap();
        }
        admin
            .batch_execute(&q(
                "INSERT INTO {s}ironloop_threads (thread_id, latest_id) \
                 VALUES ('t', 'Fork-1'), ('u', 'v1'); \
                 INSERT INTO {s}ironloop_writes \
                 (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
                 VALUES ('u', 'v1', 'b', 0, 'tools', 'y', '2'), ('u', 'v1', 'a', 0, 'tools', 'x', '1')",
            ))
            .await
            .unwrap();
        let s = schema.saver().await;
        s.setup().await.unwrap();
        let by = |id: &str| old.iter().find(|(_, r)| r.id == id).unwrap().1.clone();
        assert_eq!(s.get("t", None).await.unwrap(), Some(by("Fork-1")));
        assert_eq!(s.get("u", None).await.unwrap(), Some(by("v1")));
        assert_eq!(
            s.chain("t", &u3).await.unwrap(),
            vec![by(&u0), by(&u1), by("c2"), by(&u3)]
        );
        assert_eq!(
            ids(&s.list("t", None, None).await.unwrap()),
            ["Fork-1", u3.as_str(), "c2", u1.as_str(), u0.as_str()]
        );
        assert_eq!(
            ids(&s.list("t", Some(2), Some("c2")).await.unwrap()),
            [u1.as_str(), u0.as_str()]
        );
        assert_eq!(ids(&s.list("u", None, None).await.unwrap()), ["v1", "v0"]);
        assert_eq!(
            s.pending_writes("u", "v1").await.unwrap(),
            vec![pwi("b", 0, "y", json!(2)), pwi("a", 0, "x", json!(1))]
        );
        // The threads go on: each new record is its thread's newest.
        s.put_next("t", rec("c5", Some("Fork-1"), 3)).await.unwrap();
        s.put("t", rec("Fork-2", Some(&u0), 1)).await.unwrap();
        s.put_many(
            "u",
            vec![
                writes_to("v1", vec![pw("c", "z", json!(3))]),
                next(rec("v2", Some("v1"), 2)),
                writes_to("v2", vec![pw("a", "x", json!(4))]),
                next(rec("v3", Some("v2"), 3)),
            ],
        )
        .await
        .unwrap();
        assert_eq!(
            ids(&s.list("t", Some(3), None).await.unwrap()),
            ["Fork-2", "c5", "Fork-1"]
        );
        assert_eq!(
            ids(&s.list("u", None, None).await.unwrap()),
            ["v3", "v2", "v1", "v0"]
        );
        assert!(s.pending_writes("u", "v1").await.unwrap().is_empty());
        s.delete_checkpoints("t", vec!["Fork-2".into()])
            .await
            .unwrap();
        assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c5");
        // The layout: an integer seq, the threads' counts, one index on the writes.
        let r = admin
            .query_one(
                &q("SELECT format_type(a.atttypid, a.atttypmod), \
                      (SELECT string_agg(thread_id || '=' || seq, ',' ORDER BY thread_id) \
                         FROM {s}ironloop_threads), \
                      (SELECT count(*) FROM pg_index i \
                         WHERE i.indrelid = '{s}ironloop_writes'::regclass), \
                      (SELECT count(*) FROM pg_class c JOIN pg_namespace n \
                         ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'S') \
                    FROM pg_attribute a WHERE a.attrelid = '{s}ironloop_checkpoints'::regclass \
                    AND a.attname = 'seq'"),
                &[&schema.name],
            )
            .await
            .unwrap();
        let got: (String, String, i64, i64) = (r.get(0), r.get(1), r.get(2), r.get(3));
        // t: 5 migrated + c5 + Fork-2; u: 2 migrated + v2, v3. One sequence left: the
        // writes' (their order).
        assert_eq!(got, ("integer".into(), "t=7,u=4".into(), 1, 1));
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn savers_share_threads_like_workers() {
        let schema = pg::TempSchema::new("workers").await;
        let a = Arc::new(schema.saver().await);
        a.setup().await.unwrap();
        let b = Arc::new(schema.saver().await);
        // Worker a starts 20 threads; worker b continues each from a's latest.
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let (a, b) = (a.clone(), b.clone());
                tokio::spawn(async move {
                    let t = format!("thread-{i}");
                    put_linear(&*a, &t, "c", 3).await;
                    a.put_writes(&t, "c2", vec![pw("x", "y", json!(i))])
                        .await
                        .unwrap();
                    let latest = b.get(&t, None).await.unwrap().unwrap();
                    assert_eq!(latest.id, "c2");
                    assert_eq!(b.pending_writes(&t, "c2").await.unwrap().len(), 1);
                    b.put(&t, rec("c3", Some("c2"), 3)).await.unwrap();
                    assert_eq!(a.chain(&t, "c3").await.unwrap().len(), 4);
                    assert!(a.pending_writes(&t, "c2").await.unwrap().is_empty());
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        b.delete_thread("thread-0").await.unwrap();
        assert_eq!(a.get("thread-0", None).await.unwrap(), None);
        Checkpointer::close(&*a).await.unwrap();
        Checkpointer::close(&*b).await.unwrap();
        schema.drop().await;
    }

    /// Two savers (two workers) advancing one thread: one linear history.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn put_next_across_savers() {
        let schema = pg::TempSchema::new("race").await;
        let first = Arc::new(schema.saver().await);
        first.setup().await.unwrap();
        first.put_next("t", rec("root", None, 0)).await.unwrap();
        let writers: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|name| {
                let opts = schema.options();
                tokio::spawn(async move {
                    let s = PostgresSaver::connect_with(&pg::url(), opts).await.unwrap();
                    let n = advance_racing(&s, "t", name, 40).await;
                    Checkpointer::close(&s).await.unwrap();
                    n
                })
            })
            .collect();
        let mut conflicts = 0;
        for w in writers {
            conflicts += w.await.unwrap();
        }
        assert_linear(&*first, "t", 121).await;
        eprintln!("{conflicts} conflicts");
        Checkpointer::close(&*first).await.unwrap();
        schema.drop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_lost_mid_call_fails_clearly_and_leaves_nothing() {
        let schema = pg::TempSchema::new("lost").await;
        let app = format!("ironloop-lost-{}", std::process::id());
        let s = PostgresSaver::connect_with(&url_named(&app), schema.options())
            .await
            .unwrap();
        s.setup().await.unwrap();
        s.put("t", rec("c0", None, 0)).await.unwrap();
        // Hold the table, so that the next put waits on the server; then end the
        // backend that runs it.
        let mut holder = pg::admin().await;
        let tx = holder.transaction().await.unwrap();
        tx.batch_execute(&format!(
            "LOCK TABLE \"{}\".ironloop_checkpoints IN ACCESS EXCLUSIVE MODE",
            schema.name
        ))
        .await
        .unwrap();
        let s = Arc::new(s);
        let put = {
            let s = s.clone();
            tokio::spawn(async move { s.put("t", rec("c1", Some("c0"), 1)).await })
        };
        let admin = pg::admin().await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let n: i64 = admin
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = $1 AND wait_event_type = 'Lock'",
                    &[&app],
                )
                .await
                .unwrap()
                .get(0);
            if n > 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the put never waited on the lock"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let e = put.await.unwrap().unwrap_err();
        tx.rollback().await.unwrap();
        assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("connection to the server was lost"), "{msg}");
        assert!(msg.contains("invoke(None, config)"), "{msg}");
        assert!(msg.contains("PostgresSaver("), "{msg}");
        // Nothing half-written, and the next calls get a new connection.
        assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c0");
        s.put("t", rec("c1", Some("c0"), 1)).await.unwrap();
        assert_eq!(ids(&s.chain("t", "c1").await.unwrap()), ["c0", "c1"]);
        Checkpointer::close(&*s).await.unwrap();
        schema.drop().await;
    }

    /// A thread that waits for its saves anyway (a sync `invoke`, marked with
    /// `BlockingCaller`) drives its calls itself, on a connection of its own: here the
    /// saver's runtime never runs again after `connect`, so a call that needed it would
    /// never end. A lane's connection the server ended while idle is replaced; a call
    /// that waits on a lock is handed to a thread and still ends, and leaves one chain.
    #[test]
    fn a_blocking_caller_drives_its_calls_itself() {
        use futures::executor::block_on;
        use ironloop::checkpoint::caller::BlockingCaller;
        use std::sync::Arc;
        let bg = tokio::runtime::Runtime::new().unwrap();
        let schema = bg.block_on(pg::TempSchema::new("lanes"));
        let app = format!("ironloop-lanes-{}", std::process::id());
        let home = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let s = home.block_on(async {
            let s = PostgresSaver::connect_with(&url_named(&app), schema.options())
                .await
                .unwrap();
            s.setup().await.unwrap();
            s
        });
        let admin = Arc::new(bg.block_on(pg::admin()));
        let bg_handle = bg.handle().clone();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let caller = std::thread::spawn(move || {
            let _enter = home.enter();
            let _mark = BlockingCaller::enter();
            block_on(s.put_next("t", rec("c0", None, 0))).unwrap();

            let ended: i64 = bg_handle
                .block_on(admin.query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = $1",
                    &[&app],
                ))
                .unwrap()
                .get(0);
            assert!(ended >= 2, "the pool's and the lane's connections: {ended}");
            std::thread::sleep(Duration::from_millis(200));
            block_on(s.put_next("t", rec("c1", Some("c0"), 1))).unwrap();

            bg_handle
                .block_on(admin.batch_execute(&format!(
                    "BEGIN; LOCK TABLE \"{}\".ironloop_checkpoints IN ACCESS EXCLUSIVE MODE",
                    schema.name
                )))
                .unwrap();
            let release = {
                let (admin, h) = (admin.clone(), bg_handle.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(400));
                    h.block_on(admin.batch_execute("ROLLBACK")).unwrap();
                })
            };
            let started = Instant::now();
            block_on(s.put_next("t", rec("c2", Some("c1"), 2))).unwrap();
            assert!(started.elapsed() >= Duration::from_millis(300));
            release.join().unwrap();

            assert_eq!(block_on(s.get("t", None)).unwrap().unwrap().id, "c2");
            assert_eq!(
                ids(&block_on(s.chain("t", "c2")).unwrap()),
                ["c0", "c1", "c2"]
            );
            block_on(Checkpointer::close(&s)).unwrap();
            let _ = done_tx.send(schema);
        });
        let Ok(schema) = done_rx.recv_timeout(Duration::from_secs(60)) else {
            // The caller's own assertion, if it failed; else it is stuck.
            if caller.is_finished() {
                caller.join().unwrap();
            }
            panic!("a blocking caller's call did not end within 60 s");
        };
        caller.join().unwrap();
        bg.block_on(schema.drop());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_connections_ended_by_the_server_are_replaced() {
        let schema = pg::TempSchema::new("idle").await;
        let app = format!("ironloop-idle-{}", std::process::id());
        let s = PostgresSaver::connect_with(&url_named(&app), schema.options())
            .await
            .unwrap();
        s.setup().await.unwrap();
        s.put("t", rec("c0", None, 0)).await.unwrap();
        let admin = pg::admin().await;
        let n: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&app],
            )
            .await
            .unwrap()
            .get(0);
        assert!(n >= 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        // No call was under way: nothing to report, the pool reconnects.
        s.put("t", rec("c1", Some("c0"), 1)).await.unwrap();
        assert_eq!(s.get("t", None).await.unwrap().unwrap().id, "c1");
        Checkpointer::close(&s).await.unwrap();
        schema.drop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bad_urls_and_unreachable_servers_are_clear() {
        let e = PostgresSaver::connect("not a url at all")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("not valid"), "{e}");
        // Nothing listens on a port just freed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let opts = PostgresOptions {
            connect_timeout: Duration::from_secs(3),
            ..Default::default()
        };
        let e = PostgresSaver::connect_with(
            &format!("postgresql://someone:s3cret@127.0.0.1:{port}/app"),
            opts,
        )
        .await
        .unwrap_err();
        assert!(matches!(e, CheckpointError::Storage(_)), "{e:?}");
        let e = e.to_string();
        assert!(e.contains(&format!("127.0.0.1:{port}/app")), "{e}");
        assert!(e.contains("check that the server runs"), "{e}");
        assert!(!e.contains("s3cret"), "the password leaked: {e}");
        // A database that does not exist: the server's own words.
        let url = pg::url();
        let base = url.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap();
        let e = PostgresSaver::connect(&format!("{base}/ironloop_no_such_db"))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ironloop_no_such_db") && e.contains("does not exist"),
            "{e}"
        );
    }
}
