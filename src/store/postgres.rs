//! The PostgreSQL store: items in LangGraph's `store` table, ranked by cosine
//! similarity, inner product or L2 distance (LangGraph's `distance_type`). When
//! `setup()` finds pgvector, the vectors are in LangGraph's `store_vectors`
//! (`pgvector`); otherwise in ironloop's own table (the server needs no extension).
//! Either way a search is exact, in Rust, as follows, unless an index was asked for
//! (`ann_index_config` `kind="hnsw"` / `"ivfflat"`: the server ranks, approximately).
//!
//! As in the SQLite store, a vector search scores an in-process copy of the vectors
//! (`index::Copy`, one matrix a namespace) instead of reading every row back per query. Every write batch of
//! every process bumps one counter row (`ironloop_store_version`) in its
//! transaction (and a trigger bumps it for any write to `store_vectors`, a LangGraph
//! process's included); a search compares the counter with the copy's and reloads the copy
//! when another process wrote. The copy holds no expiry: the page's rows are read
//! back with the expiry checked in SQL (and the next best taken when one expired).
//! Without the copy (the first search, or right after another process wrote) a
//! search reads every vector under the prefix: ~1.5 KB per item at 384 dimensions,
//! so past ~10,000 items such a reload takes longer than the 25 ms a search aims at.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use deadpool_postgres::{Object, Pool};
use futures::StreamExt;
use indexmap::IndexMap;
use tokio::sync::Mutex;
use tokio_postgres::{Client, Transaction};

use super::index::{Copy, Loader};
use super::namespace::{self, from_text, to_text, Namespace};
use super::pgvector::{AnnConfig, Pgvector};
use super::vector::{from_bytes, to_bytes, Metric};
use super::{check_puts, now_secs, parse_object, ttl};
use super::{
    Item, ListNamespaces, Op, OpResult, PutValue, Result, Search, StoreBackend, StoreError,
};

/// The schema, one statement a step, applied in order by [`StoreBackend::setup`] and
/// recorded in `store_migrations` as LangGraph's `PostgresStore` does: the items'
/// table is LangGraph's own (`store`, same columns and types, `ttl_minutes` a float
/// so that a TTL may be a fraction of a minute), so a database LangGraph wrote is read
/// as it stands and LangGraph's SQL against it (the tests' `UPDATE store SET
/// expires_at = …`) means the same. The vectors are ironloop's own table: LangGraph's
/// `store_vectors` needs the `pgvector` extension's column types. Each statement is
/// idempotent (a dropped `store_migrations` re-runs them harmlessly); the prefix index
/// is built `CONCURRENTLY`, so the steps run one at a time outside a transaction.
pub const MIGRATIONS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS store (
    prefix text NOT NULL,
    key text NOT NULL,
    value jsonb NOT NULL,
    created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (prefix, key)
);",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS store_prefix_idx ON store USING btree (prefix text_pattern_ops);",
    "ALTER TABLE store
ADD COLUMN IF NOT EXISTS expires_at TIMESTAMP WITH TIME ZONE,
ADD COLUMN IF NOT EXISTS ttl_minutes FLOAT;",
    "CREATE INDEX IF NOT EXISTS idx_store_expires_at ON store (expires_at)
WHERE expires_at IS NOT NULL;",
    "CREATE TABLE IF NOT EXISTS ironloop_store_vectors (
    prefix text NOT NULL,
    key text NOT NULL,
    field text NOT NULL,
    embedding bytea NOT NULL,
    PRIMARY KEY (prefix, key, field)
);",
    "CREATE TABLE IF NOT EXISTS ironloop_store_version (
    id INT PRIMARY KEY,
    version BIGINT NOT NULL
);",
    "INSERT INTO ironloop_store_version VALUES (1, 0) ON CONFLICT DO NOTHING;",
    // Items an earlier ironloop kept in its own `ironloop_store` table (text values,
    // epoch seconds) move into LangGraph's `store`; their vectors' table is unchanged.
    // The old table is kept, renamed, so the copy is made once and nothing is lost.
    "DO $$
BEGIN
    IF to_regclass('ironloop_store') IS NOT NULL THEN
        INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
        SELECT prefix, key, value::jsonb, to_timestamp(created_at), to_timestamp(updated_at),
               to_timestamp(expires_at), ttl_minutes
        FROM ironloop_store
        ON CONFLICT (prefix, key) DO NOTHING;
        ALTER TABLE ironloop_store RENAME TO ironloop_store_copied_to_store;
    END IF;
END $$;",
];

/// An item's columns as [`row_item`] reads them: times as seconds since the epoch.
const COLUMNS: &str = "prefix, key, value::text, extract(epoch FROM created_at)::float8, \
                       extract(epoch FROM updated_at)::float8";

/// An error of the server as a store error; the server's own message when it sent
/// one (`tokio_postgres::Error` alone displays only "db error").
pub(super) fn storage(what: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| match e.as_db_error() {
        Some(db) => StoreError::Storage(format!(
            "PostgresStore: cannot {what}: {} ({})",
            db.message(),
            db.code().code()
        )),
        None => StoreError::Storage(format!("PostgresStore: cannot {what}: {e}")),
    }
}

/// The in-process copy of every item's vectors (no expiry: see the module's doc).
type VectorIndex = Copy<()>;

/// LangGraph's `PostgresStore`.
pub struct PostgresStore {
    pool: Pool,
    index: Mutex<VectorIndex>,
    dims: Option<usize>,
    metric: Metric,
    /// The pgvector settings asked for when the store has an index (`dims`).
    pgvector: Option<Pgvector>,
    /// Those `setup()` found usable on the server: its search then ranks, and
    /// `store_vectors` holds the vectors; `None`: the copy and ironloop's table.
    active: std::sync::RwLock<Option<Pgvector>>,
    closed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

/// A transaction on `c`.
async fn begin(c: &mut Object) -> Result<deadpool_postgres::Transaction<'_>> {
    c.transaction()
        .await
        .map_err(storage("begin a transaction"))
}

impl PostgresStore {
    /// Connects to `url` with a pool of `pool_size` connections, checks that the
    /// server answers, and creates the tables if they are missing; a search scores
    /// by `metric`, in pgvector when the server has it (`ann` its column and index).
    /// Must run on a tokio runtime (the connections live on it).
    pub async fn connect(
        url: &str,
        dims: Option<usize>,
        pool_size: usize,
        metric: Metric,
        ann: AnnConfig,
    ) -> Result<Self> {
        let ann = ann.checked()?;
        let config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::Invalid(format!(
                "PostgresStore: the connection string is not valid ({e}); expected \
                 postgresql://user:password@host:port/database"
            ))
        })?;
        let tls = crate::pg::tls_connector()
            .map_err(|e| StoreError::Storage(format!("PostgresStore: TLS: {e}")))?;
        let pool = crate::pg::pool(config, tls, pool_size.max(1), None).map_err(|e| {
            StoreError::Storage(format!("PostgresStore: cannot make the pool: {e}"))
        })?;
        let store = PostgresStore {
            pool,
            index: Mutex::new(VectorIndex::with_metric(metric)),
            dims,
            metric,
            pgvector: dims.map(|dims| Pgvector { dims, metric, ann }),
            active: Default::default(),
            closed: Default::default(),
        };
        store.setup().await?;
        Ok(store)
    }

    async fn conn(&self) -> Result<Object> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Storage(format!("PostgresStore: cannot connect: {e}")))
    }

    /// The pgvector settings when `setup()` found the extension.
    fn pgvector(&self) -> Option<Pgvector> {
        self.active.read().ok().and_then(|a| a.clone())
    }
}

pub(super) fn row_item(r: &tokio_postgres::Row, score: Option<f32>) -> Item {
    Item {
        namespace: from_text(r.get::<_, &str>(0)),
        key: r.get(1),
        value: r.get(2),
        created_at: r.get(3),
        updated_at: r.get(4),
        score,
    }
}

/// The condition on `prefix` for the namespaces under `p` (parameters `$2..$4`):
/// byte-wise comparisons (`~>=~`, `~<~`), whatever the database's collation, which
/// LangGraph's `text_pattern_ops` index on `prefix` serves.
pub(super) fn scope(p: &str) -> &'static str {
    if p.is_empty() {
        "$2::text IS NOT NULL AND $3::text IS NOT NULL AND $4::text IS NOT NULL"
    } else {
        "(prefix = $2 OR (prefix ~>=~ $3 AND prefix ~<~ $4))"
    }
}

async fn refresh(tx: &Transaction<'_>, p: &str, key: &str, now: f64) -> Result<()> {
    tx.execute(
        "UPDATE store SET expires_at = to_timestamp($3) + ttl_minutes * interval '1 minute' \
         WHERE prefix = $1 AND key = $2 AND ttl_minutes IS NOT NULL",
        &[&p, &key, &now],
    )
    .await
    .map_err(storage("refresh a TTL"))?;
    Ok(())
}

async fn get(
    tx: &Transaction<'_>,
    ns: &Namespace,
    key: &str,
    refresh_ttl: bool,
    now: f64,
) -> Result<Option<Item>> {
    let p = to_text(ns);
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM store WHERE prefix = $1 AND key = $2 \
                 AND (expires_at IS NULL OR expires_at > to_timestamp($3))"
            ),
            &[&p, &key, &now],
        )
        .await
        .map_err(storage("read an item"))?;
    if row.is_some() && refresh_ttl {
        refresh(tx, &p, key, now).await?;
    }
    Ok(row.map(|r| row_item(&r, None)))
}

/// One item's write (`None`: delete) as a batch gives it.
type PutOp = (Namespace, String, Option<PutValue>);

/// An item's change for the in-process copy: (namespace text, key, its vectors as
/// given, or `None` when it was deleted).
type Change = (String, String, Option<Vec<Vec<f32>>>);

/// Writes (or deletes) a run of consecutive puts in four statements whatever their
/// number, each taking its rows as arrays (`unnest`): one statement per item, three
/// round trips each, was what bounded `put` (W13: 2,415 items/s at 1,000 items a
/// batch, the time spent waiting on the server's replies, not in it). A key written
/// twice in the run keeps its last write, as LangGraph's batches do. Returns each
/// item's change for the copy. With pgvector (`pv`) the vectors go to its table.
async fn put_all(
    tx: &Transaction<'_>,
    puts: Vec<PutOp>,
    now: f64,
    pv: Option<&Pgvector>,
) -> Result<Vec<Change>> {
    let mut last: IndexMap<(String, String), Option<PutValue>> = IndexMap::new();
    for (ns, key, value) in puts {
        last.insert((to_text(&ns), key), value);
    }
    let (ps, ks): (Vec<&str>, Vec<&str>) =
        last.keys().map(|(p, k)| (p.as_str(), k.as_str())).unzip();
    if pv.is_none() {
        delete_keys(tx, "ironloop_store_vectors", &ps, &ks)
            .await
            .map_err(storage("replace the items' vectors"))?;
    }
    let gone: (Vec<&str>, Vec<&str>) = last
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|((p, k), _)| (p.as_str(), k.as_str()))
        .unzip();
    if !gone.0.is_empty() {
        delete_keys(tx, "store", &gone.0, &gone.1)
            .await
            .map_err(storage("delete items"))?;
    }
    let kept: Vec<(&str, &str, &PutValue)> = last
        .iter()
        .filter_map(|((p, k), v)| Some((p.as_str(), k.as_str(), v.as_ref()?)))
        .collect();
    if !kept.is_empty() {
        write_items(tx, &kept, now).await?;
    }
    match pv {
        Some(pv) => pv.replace(tx, &ps, &ks, &kept).await?,
        None if !kept.is_empty() => write_vectors(tx, &kept).await?,
        None => {}
    }
    Ok(last
        .into_iter()
        .map(|((p, k), v)| {
            let vs = v.map(|v| v.vectors.into_iter().map(|(_, x)| x).collect());
            (p, k, vs)
        })
        .collect())
}

/// Upserts the items' rows (a rewritten item keeps its `created_at` unless it had
/// expired).
async fn write_items(
    tx: &Transaction<'_>,
    kept: &[(&str, &str, &PutValue)],
    now: f64,
) -> Result<()> {
    let ps: Vec<&str> = kept.iter().map(|i| i.0).collect();
    let ks: Vec<&str> = kept.iter().map(|i| i.1).collect();
    let values: Vec<&str> = kept.iter().map(|i| i.2.json.as_str()).collect();
    let expires: Vec<Option<f64>> = kept
        .iter()
        .map(|i| ttl::expires_at(i.2.ttl_minutes, now))
        .collect();
    let ttls: Vec<Option<f64>> = kept.iter().map(|i| i.2.ttl_minutes).collect();
    tx.execute(
        "INSERT INTO store AS s (prefix, key, value, created_at, updated_at, \
         expires_at, ttl_minutes) SELECT u.p, u.k, u.v::jsonb, to_timestamp($4), \
         to_timestamp($4), to_timestamp(u.e), u.t FROM unnest($1::text[], $2::text[], \
         $3::text[], $5::float8[], $6::float8[]) AS u(p, k, v, e, t) \
         ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, \
         updated_at = excluded.updated_at, expires_at = excluded.expires_at, \
         ttl_minutes = excluded.ttl_minutes, created_at = CASE WHEN s.expires_at IS NOT \
         NULL AND s.expires_at <= to_timestamp($4) THEN excluded.created_at \
         ELSE s.created_at END",
        &[&ps, &ks, &values, &now, &expires, &ttls],
    )
    .await
    .map_err(storage("write items"))?;
    Ok(())
}

/// Deletes the rows of `table` whose `(prefix, key)` is one of `ps`/`ks`'s pairs, in
/// one statement (the pairs as arrays).
pub(super) async fn delete_keys(
    tx: &Transaction<'_>,
    table: &str,
    ps: &[&str],
    ks: &[&str],
) -> std::result::Result<u64, tokio_postgres::Error> {
    let sql = format!(
        "DELETE FROM {table} WHERE (prefix, key) IN \
         (SELECT * FROM unnest($1::text[], $2::text[]))"
    );
    tx.execute(&sql, &[&ps, &ks]).await
}

/// The vectors of `kept` (one row per item and field) as the columns of an `unnest`
/// insert: prefixes, keys, fields, and each vector as `column` makes it.
pub(super) fn vector_columns<'a, T>(
    kept: &[(&'a str, &'a str, &'a PutValue)],
    column: impl Fn(&[f32]) -> T,
) -> (Vec<&'a str>, Vec<&'a str>, Vec<&'a str>, Vec<T>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &(p, k, v) in kept {
        for (f, x) in &v.vectors {
            out.0.push(p);
            out.1.push(k);
            out.2.push(f.as_str());
            out.3.push(column(x.as_slice()));
        }
    }
    out
}

/// Inserts the items' vectors (their old ones were deleted first).
async fn write_vectors(tx: &Transaction<'_>, kept: &[(&str, &str, &PutValue)]) -> Result<()> {
    let (ps, ks, fs, bytes) = vector_columns(kept, to_bytes);
    if ps.is_empty() {
        return Ok(());
    }
    let bs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    tx.execute(
        "INSERT INTO ironloop_store_vectors (prefix, key, field, embedding) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[]) \
         ON CONFLICT (prefix, key, field) DO UPDATE SET embedding = excluded.embedding",
        &[&ps, &ks, &fs, &bs],
    )
    .await
    .map_err(storage("write vectors"))?;
    Ok(())
}

/// Reloads the copy when the stored version differs from its own, from pgvector's
/// `store_vectors` when `pv` (a database LangGraph wrote is searched as it stands),
/// else from ironloop's own table.
async fn fresh_index(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    pv: Option<&Pgvector>,
) -> Result<()> {
    let version: i64 = tx
        .query_one(
            "SELECT version FROM ironloop_store_version WHERE id = 1",
            &[],
        )
        .await
        .map_err(storage("read the store's version"))?
        .get(0);
    if index.version == Some(version) {
        return Ok(());
    }
    let mut loader = Loader::new(version, index.metric);
    let (table, dims) = match pv {
        Some(_) => ("store_vectors", "max(vector_dims(embedding::vector))"),
        None => ("ironloop_store_vectors", "max(length(embedding)) / 4"),
    };
    for r in tx
        .query(
            &format!("SELECT prefix, count(*), {dims} FROM {table} GROUP BY prefix"),
            &[],
        )
        .await
        .map_err(storage("load the vector index"))?
    {
        let (n, dims): (i64, i32) = (r.get(1), r.get(2));
        loader.reserve(r.get(0), n as usize, dims as usize);
    }
    // Streamed, not collected: every vector's row held at once would double the
    // copy's memory while loading.
    let no_params: [&str; 0] = [];
    let embedding = if pv.is_some() {
        "v.embedding::vector"
    } else {
        "v.embedding"
    };
    let rows = tx
        .query_raw(
            &format!(
                "SELECT s.prefix, s.key, {embedding} FROM store s \
                 LEFT JOIN {table} v ON v.prefix = s.prefix AND v.key = s.key \
                 ORDER BY s.prefix, s.key"
            ),
            no_params,
        )
        .await
        .map_err(storage("load the vector index"))?;
    let mut rows = std::pin::pin!(rows);
    while let Some(r) = rows.next().await {
        let r = r.map_err(storage("load the vector index"))?;
        let vector = if pv.is_some() {
            r.get::<_, Option<pgvector::Vector>>(2).map(|v| v.to_vec())
        } else {
            r.get::<_, Option<&[u8]>>(2).and_then(from_bytes)
        };
        loader.push(r.get(0), r.get(1), (), vector);
    }
    *index = loader.finish();
    Ok(())
}

async fn search(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    pv: Option<&Pgvector>,
    s: &Search,
    now: f64,
) -> Result<Vec<Item>> {
    let p = to_text(&s.prefix);
    let (lo, hi) = (format!("{p}."), format!("{p}/"));
    let cond = scope(&p);
    let Some(query) = s.query.clone() else {
        let rows = tx
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM store WHERE {cond} AND \
                     (expires_at IS NULL OR expires_at > to_timestamp($1)) \
                     ORDER BY updated_at DESC"
                ),
                &[&now, &p, &lo, &hi],
            )
            .await
            .map_err(storage("search"))?;
        let out: Vec<Item> = rows
            .iter()
            .filter(|r| match &s.filter {
                None => true,
                Some(f) => parse_object(r.get(2)).is_some_and(|v| f.matches(&v)),
            })
            .skip(s.offset)
            .take(s.limit)
            .map(|r| row_item(r, None))
            .collect();
        if s.refresh_ttl {
            for it in &out {
                refresh(tx, &to_text(&it.namespace), &it.key, now).await?;
            }
        }
        return Ok(out);
    };
    let out = match pv {
        Some(pv) if pv.ann.indexed() => pv.page(tx, s, &p, &query, now).await?,
        _ => exact_page(tx, index, pv, s, &p, &query, now).await?,
    };
    if s.refresh_ttl {
        for it in &out {
            refresh(tx, &to_text(&it.namespace), &it.key, now).await?;
        }
    }
    Ok(out)
}

/// A ranked search's page from the in-process copy (of pgvector's table when `pv`):
/// scored here, exactly, the rows read back live.
async fn exact_page(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    pv: Option<&Pgvector>,
    s: &Search,
    p: &str,
    query: &[f32],
    now: f64,
) -> Result<Vec<Item>> {
    let (lo, hi) = (format!("{p}."), format!("{p}/"));
    let cond = scope(p);
    fresh_index(tx, index, pv).await?;
    let allowed: Option<HashSet<(String, String)>> = match &s.filter {
        None => None,
        Some(f) => Some(
            tx.query(
                &format!(
                    "SELECT prefix, key, value::text FROM store WHERE {cond} AND \
                     (expires_at IS NULL OR expires_at > to_timestamp($1))"
                ),
                &[&now, &p, &lo, &hi],
            )
            .await
            .map_err(storage("search"))?
            .iter()
            .filter(|r| parse_object(r.get(2)).is_some_and(|v| f.matches(&v)))
            .map(|r| (r.get(0), r.get(1)))
            .collect(),
        ),
    };
    let accept = |sp: &str, k: &str, _: &()| {
        allowed
            .as_ref()
            .is_none_or(|a| a.contains(&(sp.to_owned(), k.to_owned())))
    };
    // Ranked best first; the copy knows no expiry, so expired rows are skipped when
    // read back and the window widened for the next ones.
    let mut window = s.offset.saturating_add(s.limit);
    let (mut ranked, plain) = index.rank(p, query, window, s.limit, accept);
    let mut live: Vec<Item> = Vec::new();
    let mut seen = 0;
    loop {
        let batch: Vec<(String, String)> = ranked[seen..]
            .iter()
            .map(|(_, sp, k)| (sp.clone(), k.clone()))
            .collect();
        let mut rows = fetch(tx, &batch, now).await?;
        for (sc, sp, k) in &ranked[seen..] {
            if let Some(r) = rows.remove(&(sp.clone(), k.clone())) {
                live.push(row_item(&r, Some(*sc)));
            }
        }
        seen = ranked.len();
        if live.len() >= s.offset.saturating_add(s.limit) || ranked.len() < window {
            break;
        }
        window = (window * 2).max(16);
        ranked = index.rank(p, query, window, 0, accept).0;
    }
    let mut out: Vec<Item> = live.into_iter().skip(s.offset).take(s.limit).collect();
    let room = s.limit.saturating_sub(out.len());
    let rest: Vec<(String, String)> = plain.into_iter().take(room).collect();
    let mut rows = fetch(tx, &rest, now).await?;
    for pk in &rest {
        if let Some(r) = rows.remove(pk) {
            out.push(row_item(&r, None));
        }
    }
    Ok(out)
}

/// The live rows of `keys` (prefix, key), in one query.
pub(super) async fn fetch(
    tx: &Transaction<'_>,
    keys: &[(String, String)],
    now: f64,
) -> Result<HashMap<(String, String), tokio_postgres::Row>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let (ps, ks): (Vec<&str>, Vec<&str>) =
        keys.iter().map(|(p, k)| (p.as_str(), k.as_str())).unzip();
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM store WHERE (prefix, key) IN \
                 (SELECT * FROM unnest($1::text[], $2::text[])) \
                 AND (expires_at IS NULL OR expires_at > to_timestamp($3))"
            ),
            &[&ps, &ks, &now],
        )
        .await
        .map_err(storage("search"))?;
    Ok(rows
        .into_iter()
        .map(|r| ((r.get::<_, String>(0), r.get::<_, String>(1)), r))
        .collect())
}

async fn list(tx: &Transaction<'_>, op: &ListNamespaces, now: f64) -> Result<Vec<Namespace>> {
    let all: Vec<Namespace> = tx
        .query(
            "SELECT DISTINCT prefix FROM store \
             WHERE expires_at IS NULL OR expires_at > to_timestamp($1)",
            &[&now],
        )
        .await
        .map_err(storage("list namespaces"))?
        .iter()
        .map(|r| from_text(r.get(0)))
        .collect();
    Ok(namespace::list(all.iter().map(Vec::as_slice), op))
}

/// The first step of a LangGraph-style migration log (`table`, one `v` per applied
/// step, made when missing) not yet applied: the store's steps and pgvector's keep
/// their logs the same way, as LangGraph's `setup()` does.
pub(super) async fn first_unapplied(c: &Client, table: &str) -> Result<usize> {
    c.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (v INTEGER PRIMARY KEY)"
    ))
    .await
    .map_err(storage("create a migrations table"))?;
    let done: Option<i32> = c
        .query_one(&format!("SELECT max(v) FROM {table}"), &[])
        .await
        .map_err(storage("read the applied migrations"))?
        .get(0);
    Ok(done.map_or(0, |v| v as usize + 1))
}

/// Records step `v` in the migration log `table` as applied.
pub(super) async fn record_migration(c: &Client, table: &str, v: i32) -> Result<()> {
    c.execute(
        &format!("INSERT INTO {table} (v) VALUES ($1) ON CONFLICT DO NOTHING"),
        &[&v],
    )
    .await
    .map_err(storage("record a migration"))?;
    Ok(())
}

#[async_trait]
impl StoreBackend for PostgresStore {
    /// Applies the [`MIGRATIONS`] not yet recorded in `store_migrations`, as
    /// LangGraph's `setup()` does (a database LangGraph set up needs only ironloop's
    /// own steps).
    async fn setup(&self) -> Result<()> {
        let c = self.conn().await?;
        let first = first_unapplied(&c, "store_migrations").await?;
        for (v, statement) in MIGRATIONS.iter().enumerate().skip(first) {
            c.batch_execute(statement)
                .await
                .map_err(storage("create the tables"))?;
            record_migration(&c, "store_migrations", v as i32).await?;
        }
        if let Some(pv) = &self.pgvector {
            let active = pv.setup(&c).await?;
            if let Ok(mut a) = self.active.write() {
                *a = active;
            }
        }
        Ok(())
    }

    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        check_puts(&ops, self.dims)?;
        let mut c = self.conn().await?;
        let tx = begin(&mut c).await?;
        let now = now_secs();
        let mut index = self.index.lock().await;
        let pv = self.pgvector();
        let writes = ops.iter().any(|o| matches!(o, Op::Put { .. }));
        // Bumped first: the row lock orders this batch's writes with other writers'.
        let version: Option<i64> = if writes {
            Some(
                tx.query_one(
                    "UPDATE ironloop_store_version SET version = version + 1 WHERE id = 1 \
                     RETURNING version",
                    &[],
                )
                .await
                .map_err(storage("bump the store's version"))?
                .get(0),
            )
        } else {
            None
        };
        let mut changes: Vec<Change> = Vec::new();
        let mut out = Vec::with_capacity(ops.len());
        let mut ops = ops.into_iter().peekable();
        while let Some(op) = ops.next() {
            let result = match op {
                Op::Get {
                    namespace,
                    key,
                    refresh_ttl,
                } => OpResult::Item(get(&tx, &namespace, &key, refresh_ttl, now).await?),
                Op::Put {
                    namespace,
                    key,
                    value,
                } => {
                    // This put and the ones right after it: one write.
                    let mut run = vec![(namespace, key, value)];
                    while let Some(Op::Put {
                        namespace,
                        key,
                        value,
                    }) = ops.next_if(|o| matches!(o, Op::Put { .. }))
                    {
                        run.push((namespace, key, value));
                        out.push(OpResult::Done);
                    }
                    changes.extend(put_all(&tx, run, now, pv.as_ref()).await?);
                    OpResult::Done
                }
                Op::Search(s) => {
                    OpResult::Items(search(&tx, &mut index, pv.as_ref(), &s, now).await?)
                }
                Op::ListNamespaces(l) => OpResult::Namespaces(list(&tx, &l, now).await?),
            };
            out.push(result);
        }
        // The version as this batch leaves it: `store_vectors`' trigger bumped it
        // again for each of our statements there (no one else can: we hold its row).
        let last: Option<i64> = match version {
            Some(_) if pv.is_some() => Some(
                tx.query_one(
                    "SELECT version FROM ironloop_store_version WHERE id = 1",
                    &[],
                )
                .await
                .map_err(storage("read the store's version"))?
                .get(0),
            ),
            _ => version,
        };
        tx.commit().await.map_err(storage("commit"))?;
        if let (Some(v), Some(last)) = (version, last) {
            // The copy follows our own writes only if nobody wrote in between.
            if index.version == Some(v - 1) {
                for (p, k, vs) in changes {
                    match vs {
                        Some(vs) => index.space(p).put(&k, (), vs),
                        None => index.remove(&p, &k),
                    }
                }
                index.version = Some(last);
            } else {
                *index = VectorIndex::with_metric(self.metric);
            }
        }
        Ok(out)
    }

    async fn sweep(&self) -> Result<usize> {
        let mut c = self.conn().await?;
        let tx = begin(&mut c).await?;
        let now = now_secs();
        tx.execute(
            "DELETE FROM ironloop_store_vectors v USING store s WHERE \
             v.prefix = s.prefix AND v.key = s.key AND s.expires_at <= to_timestamp($1)",
            &[&now],
        )
        .await
        .map_err(storage("sweep expired vectors"))?;
        let n = tx
            .execute(
                "DELETE FROM store WHERE expires_at <= to_timestamp($1)",
                &[&now],
            )
            .await
            .map_err(storage("sweep expired items"))?;
        tx.commit().await.map_err(storage("commit"))?;
        // The copy may hold swept items: they are skipped when read back, and the
        // copy is rebuilt when another writer bumps the version.
        Ok(n as usize)
    }

    async fn close(&self) -> Result<()> {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.pool.close();
        Ok(())
    }
}
