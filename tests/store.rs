//! The store backends' shared contract, run on each: the in-memory store, SQLite
//! (a scratch file) and, with the `postgres` feature, PostgreSQL (a schema of its
//! own on `IRONLOOP_TEST_POSTGRES_URL`: `bash scripts/postgres.sh cargo test
//! --features postgres`).

use ironloop::store::memory::MemoryStore;
#[cfg(feature = "sqlite")]
use ironloop::store::sqlite::SqliteStore;
use ironloop::store::{
    Filter, Item, ListNamespaces, Op, OpResult, PutValue, Search, StoreBackend, StoreError,
};
use serde_json::json;

fn ns(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

fn put(n: &[&str], key: &str, value: serde_json::Value, vectors: Vec<Vec<f32>>) -> Op {
    Op::Put {
        namespace: ns(n),
        key: key.into(),
        value: Some(PutValue {
            json: value.to_string(),
            vectors: vectors
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("f{i}"), v))
                .collect(),
            ttl_minutes: None,
        }),
    }
}

fn search(prefix: &[&str], query: Option<Vec<f32>>, limit: usize) -> Op {
    Op::Search(Search {
        prefix: ns(prefix),
        limit,
        query,
        ..Default::default()
    })
}

fn items(r: OpResult) -> Vec<Item> {
    match r {
        OpResult::Items(v) => v,
        other => panic!("expected items, got {other:?}"),
    }
}

async fn contract(store: &dyn StoreBackend) {
    store.setup().await.unwrap();
    // Writes, then reads in the same batch see them.
    let out = store
        .batch(vec![
            put(
                &["docs", "a"],
                "x",
                json!({"n": 1, "t": "x"}),
                vec![vec![1.0, 0.0, 0.0]],
            ),
            put(
                &["docs", "a"],
                "y",
                json!({"n": 2}),
                vec![vec![0.6, 0.8, 0.0]],
            ),
            put(
                &["docs", "b"],
                "z",
                json!({"n": 3}),
                vec![vec![0.0, 0.0, 5.0], vec![0.0, 1.0, 0.0]],
            ),
            put(&["docs-x"], "w", json!({"n": 4}), vec![]),
            Op::Get {
                namespace: ns(&["docs", "a"]),
                key: "x".into(),
                refresh_ttl: true,
            },
        ])
        .await
        .unwrap();
    match &out[4] {
        // Compared as JSON: PostgreSQL's `jsonb` (LangGraph's column) re-renders it.
        OpResult::Item(Some(it)) => assert_eq!(
            serde_json::from_str::<serde_json::Value>(&it.value).unwrap(),
            json!({"n": 1, "t": "x"})
        ),
        other => panic!("{other:?}"),
    }
    // Exact cosine ranking; an item scores as its best vector; `docs-x` is not under
    // `docs`.
    let mut r = store
        .batch(vec![search(&["docs"], Some(vec![0.0, 2.0, 0.0]), 10)])
        .await
        .unwrap();
    let got = items(r.remove(0));
    let keys: Vec<_> = got.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["z", "y", "x"]);
    assert!((got[0].score.unwrap() - 1.0).abs() < 1e-6);
    assert!((got[1].score.unwrap() - 0.8).abs() < 1e-6);
    // A filter, and an unknown operator refused.
    let f = Filter::new(json!({"n": {"$gte": 2}}).as_object().unwrap().clone()).unwrap();
    let mut r = store
        .batch(vec![Op::Search(Search {
            prefix: vec![],
            filter: Some(f),
            limit: 10,
            ..Default::default()
        })])
        .await
        .unwrap();
    let mut keys: Vec<_> = items(r.remove(0)).into_iter().map(|i| i.key).collect();
    keys.sort();
    assert_eq!(keys, ["w", "y", "z"]);
    // Listing.
    let r = store
        .batch(vec![Op::ListNamespaces(ListNamespaces {
            max_depth: Some(1),
            limit: 10,
            ..Default::default()
        })])
        .await
        .unwrap();
    assert_eq!(
        r[0],
        OpResult::Namespaces(vec![ns(&["docs"]), ns(&["docs-x"])])
    );
    // A bad vector fails the whole batch before anything is written.
    let e = store
        .batch(vec![
            put(&["docs"], "ok", json!({}), vec![vec![1.0, 0.0, 0.0]]),
            put(&["docs"], "bad", json!({}), vec![vec![1.0, 0.0]]),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(e, StoreError::Invalid(ref m) if m.contains("dims=3")),
        "{e}"
    );
    let r = store
        .batch(vec![Op::Get {
            namespace: ns(&["docs"]),
            key: "ok".into(),
            refresh_ttl: false,
        }])
        .await
        .unwrap();
    assert_eq!(r[0], OpResult::Item(None));
    // Delete, and an expired item is gone at once.
    let r = store
        .batch(vec![
            Op::Put {
                namespace: ns(&["docs", "a"]),
                key: "x".into(),
                value: None,
            },
            Op::Put {
                namespace: ns(&["t"]),
                key: "gone".into(),
                value: Some(PutValue {
                    json: "{}".into(),
                    vectors: vec![],
                    ttl_minutes: Some(0.2 / 60.0),
                }),
            },
        ])
        .await
        .unwrap();
    assert_eq!(r, vec![OpResult::Done, OpResult::Done]);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut r = store
        .batch(vec![
            search(&["docs"], Some(vec![1.0, 0.0, 0.0]), 10),
            Op::Get {
                namespace: ns(&["t"]),
                key: "gone".into(),
                refresh_ttl: true,
            },
        ])
        .await
        .unwrap();
    assert_eq!(r[1], OpResult::Item(None));
    let keys: Vec<_> = items(r.remove(0)).into_iter().map(|i| i.key).collect();
    assert_eq!(keys, ["y", "z"]);
    assert_eq!(store.sweep().await.unwrap(), 1);
    store.close().await.unwrap();
    assert!(matches!(
        store.batch(vec![search(&[], None, 1)]).await,
        Err(StoreError::Closed)
    ));
}

#[tokio::test]
async fn memory_store_keeps_the_contract() {
    contract(&MemoryStore::new(Some(3))).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract(&SqliteStore::open(dir.path().join("s.db"), Some(3)).unwrap()).await;
    contract(&SqliteStore::open(":memory:", Some(3)).unwrap()).await;
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_store_reads_back_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = SqliteStore::open(&path, Some(2)).unwrap();
    s.run(vec![put(
        &["u"],
        "k",
        json!({"a": 1}),
        vec![vec![1.0, 1.0]],
    )])
    .unwrap();
    s.close_now();
    let s = SqliteStore::open(&path, Some(2)).unwrap();
    let mut r = s
        .run(vec![search(&["u"], Some(vec![1.0, 0.0]), 1)])
        .unwrap();
    let got = items(r.remove(0));
    assert_eq!(got[0].key, "k");
    assert!((got[0].score.unwrap() - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
}

/// The contract on the PostgreSQL server named by `var`, in a schema of its own, with
/// the engine's default `AnnConfig` (no index: exact search); the vectors must be rows
/// of `table`.
#[cfg(feature = "postgres")]
async fn postgres_contract(var: &str, script: &str, table: &str) {
    let url = match std::env::var(var) {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "{var} is not set: the PostgresStore test needs a server. Run `bash {script} \
             cargo test --features postgres`"
        ),
    };
    let schema = format!("ironloop_store_test_{}", std::process::id());
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {var}: {e}"));
    tokio::spawn(conn);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let dsn = format!("{url}{sep}options=-csearch_path%3D{schema}");
    let store = ironloop::store::postgres::PostgresStore::connect(
        &dsn,
        Some(3),
        2,
        ironloop::store::vector::Metric::Cosine,
        Default::default(),
    )
    .await
    .unwrap();
    contract(&store).await;
    let rows: i64 = admin
        .query_one(&format!("SELECT count(*) FROM {schema}.{table}"), &[])
        .await
        .unwrap()
        .get(0);
    assert!(rows > 0, "no vectors in {table}");
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_store_keeps_the_contract() {
    postgres_contract(
        "IRONLOOP_TEST_POSTGRES_URL",
        "scripts/postgres.sh",
        "ironloop_store_vectors",
    )
    .await;
}

/// With pgvector the vectors are in LangGraph's `store_vectors`, and the default search
/// is the same exact one.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn pgvector_store_keeps_the_contract() {
    postgres_contract(
        "IRONLOOP_TEST_PGVECTOR_URL",
        "scripts/pgvector.sh",
        "store_vectors",
    )
    .await;
}
