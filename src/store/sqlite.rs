//! The SQLite store: items and their vectors in two tables of one database (the
//! bundled SQLite, no loadable extension), searched by exact cosine in Rust.
//!
//! A vector search reads the vectors from an in-process copy (`index::Copy`, one
//! matrix a namespace) rather than from the database: reading 100,000 vectors of 384
//! numbers back from SQLite for every query costs ~100 ms, scoring them in memory a
//! few. The copy is
//! loaded at the first vector search and kept current by this store's own writes;
//! when another connection writes the file (SQLite's `data_version` moves), it is
//! loaded again before the next search.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::index::{Copy, Loader};
use super::namespace::{self, from_text, to_text, Namespace};
use super::vector::{from_bytes, normalized, to_bytes, Metric};
use super::{check_puts, now_secs, parse_object, ttl};
use super::{
    Item, ListNamespaces, Op, OpResult, PutValue, Result, Search, StoreBackend, StoreError,
};

/// The schema, one idempotent statement a step (`SqliteStore.MIGRATIONS` in Python,
/// LangGraph's attribute), applied in order when the store opens and by `setup()`.
pub const MIGRATIONS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS ironloop_store (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL,
    ttl_minutes REAL,
    PRIMARY KEY (prefix, key)
) WITHOUT ROWID;",
    "CREATE INDEX IF NOT EXISTS ironloop_store_expires
    ON ironloop_store (expires_at) WHERE expires_at IS NOT NULL;",
    "CREATE TABLE IF NOT EXISTS ironloop_store_vectors (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    field TEXT NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (prefix, key, field)
) WITHOUT ROWID;",
];

/// Applies [`MIGRATIONS`] (each is idempotent).
fn migrate(conn: &Connection) -> Result<()> {
    for statement in MIGRATIONS {
        conn.execute_batch(statement)
            .map_err(storage("create the tables"))?;
    }
    Ok(())
}

/// How long a write waits for another connection's write to end.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const COLUMNS: &str = "prefix, key, value, created_at, updated_at, expires_at";

fn storage(what: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::Storage(format!("SqliteStore: cannot {what}: {e}"))
}

/// The SQL condition (on `prefix`) for the namespaces under `p`, with its two
/// parameters: `p` itself and the range of texts `p.` … `p/` (`/` follows `.`).
fn under(p: &str) -> (String, String, String) {
    (p.to_owned(), format!("{p}."), format!("{p}/"))
}

/// The in-process copy of every item's vectors, with its expiry.
type VectorIndex = Copy<Option<f64>>;

/// LangGraph's `SqliteStore`: items in a SQLite file (or `:memory:`).
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Option<Connection>>,
    index: Mutex<VectorIndex>,
    dims: Option<usize>,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` (`:memory:` for one that lives as
    /// long as the store) and creates the store's tables if they are missing.
    pub fn open(path: impl AsRef<Path>, dims: Option<usize>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path).map_err(|e| {
            StoreError::Storage(format!("SqliteStore: cannot open {}: {e}", path.display()))
        })?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(storage("set the busy timeout"))?;
        if path.as_os_str() != ":memory:" {
            let _: String = conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                .map_err(storage("turn on WAL mode"))?;
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(storage("set synchronous"))?;
        }
        migrate(&conn)?;
        Ok(SqliteStore {
            conn: Mutex::new(Some(conn)),
            index: Mutex::new(VectorIndex::default()),
            dims,
            path,
        })
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Option<Connection>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn index(&self) -> MutexGuard<'_, VectorIndex> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `ops` in one transaction, blocking (call from a thread that may block).
    pub fn run(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        check_puts(&ops, self.dims)?;
        let mut guard = self.lock();
        let conn = guard.as_mut().ok_or(StoreError::Closed)?;
        let writes = ops.iter().any(|o| matches!(o, Op::Put { .. }));
        let tx = if writes {
            conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        } else {
            conn.transaction()
        }
        .map_err(storage("begin a transaction"))?;
        let now = now_secs();
        let mut out = Vec::with_capacity(ops.len());
        let mut index = self.index();
        for op in ops {
            out.push(match op {
                Op::Get {
                    namespace,
                    key,
                    refresh_ttl,
                } => OpResult::Item(get(&tx, &mut index, &namespace, &key, refresh_ttl, now)?),
                Op::Put {
                    namespace,
                    key,
                    value,
                } => {
                    put(&tx, &mut index, &namespace, &key, value, now)?;
                    OpResult::Done
                }
                Op::Search(s) => OpResult::Items(search(&tx, &mut index, &s, now)?),
                Op::ListNamespaces(l) => OpResult::Namespaces(list(&tx, &l, now)?),
            });
        }
        tx.commit().map_err(storage("commit"))?;
        // Our own commits do not move `data_version`: the copy stays valid.
        Ok(out)
    }

    /// Deletes the expired items; returns how many.
    pub fn sweep_now(&self) -> Result<usize> {
        let mut guard = self.lock();
        let conn = guard.as_mut().ok_or(StoreError::Closed)?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(storage("begin a transaction"))?;
        let now = now_secs();
        tx.execute(
            "DELETE FROM ironloop_store_vectors WHERE (prefix, key) IN \
             (SELECT prefix, key FROM ironloop_store WHERE expires_at <= ?1)",
            [now],
        )
        .map_err(storage("sweep expired vectors"))?;
        let n = tx
            .execute("DELETE FROM ironloop_store WHERE expires_at <= ?1", [now])
            .map_err(storage("sweep expired items"))?;
        tx.commit().map_err(storage("commit"))?;
        let mut index = self.index();
        for space in index.spaces.values_mut() {
            space.retain(|e| !ttl::expired(*e, now));
        }
        Ok(n)
    }

    /// Closes the connection; later operations fail with [`StoreError::Closed`].
    pub fn close_now(&self) {
        self.lock().take();
        *self.index() = VectorIndex::default();
    }
}

fn row_item(r: &rusqlite::Row<'_>, score: Option<f32>) -> rusqlite::Result<Item> {
    Ok(Item {
        namespace: from_text(&r.get::<_, String>(0)?),
        key: r.get(1)?,
        value: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
        score,
    })
}

fn refresh(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    p: &str,
    key: &str,
    now: f64,
) -> Result<()> {
    tx.execute(
        "UPDATE ironloop_store SET expires_at = ?3 + ttl_minutes * 60.0 \
         WHERE prefix = ?1 AND key = ?2 AND ttl_minutes IS NOT NULL",
        params![p, key, now],
    )
    .map_err(storage("refresh a TTL"))?;
    if let Some(e) = index.get_mut(p, key) {
        let ttl: Option<f64> = tx
            .query_row(
                "SELECT ttl_minutes FROM ironloop_store WHERE prefix = ?1 AND key = ?2",
                params![p, key],
                |r| r.get(0),
            )
            .optional()
            .map_err(storage("read a TTL"))?
            .flatten();
        if ttl.is_some() {
            *e = ttl::expires_at(ttl, now);
        }
    }
    Ok(())
}

fn get(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    ns: &Namespace,
    key: &str,
    refresh_ttl: bool,
    now: f64,
) -> Result<Option<Item>> {
    let p = to_text(ns);
    let item = tx
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM ironloop_store WHERE prefix = ?1 AND key = ?2 \
                 AND (expires_at IS NULL OR expires_at > ?3)"
            ),
            params![p, key, now],
            |r| row_item(r, None),
        )
        .optional()
        .map_err(storage("read an item"))?;
    if item.is_some() && refresh_ttl {
        refresh(tx, index, &p, key, now)?;
    }
    Ok(item)
}

fn put(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    ns: &Namespace,
    key: &str,
    value: Option<PutValue>,
    now: f64,
) -> Result<()> {
    let p = to_text(ns);
    tx.execute(
        "DELETE FROM ironloop_store_vectors WHERE prefix = ?1 AND key = ?2",
        params![p, key],
    )
    .map_err(storage("replace an item's vectors"))?;
    let Some(v) = value else {
        tx.execute(
            "DELETE FROM ironloop_store WHERE prefix = ?1 AND key = ?2",
            params![p, key],
        )
        .map_err(storage("delete an item"))?;
        index.remove(&p, key);
        return Ok(());
    };
    let expires_at = ttl::expires_at(v.ttl_minutes, now);
    tx.execute(
        "INSERT INTO ironloop_store (prefix, key, value, created_at, updated_at, expires_at, \
         ttl_minutes) VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6) \
         ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, \
         updated_at = excluded.updated_at, expires_at = excluded.expires_at, \
         ttl_minutes = excluded.ttl_minutes, created_at = CASE WHEN \
         ironloop_store.expires_at IS NOT NULL AND ironloop_store.expires_at <= ?4 \
         THEN excluded.created_at ELSE ironloop_store.created_at END",
        params![p, key, v.json, now, expires_at, v.ttl_minutes],
    )
    .map_err(storage("write an item"))?;
    let mut vectors = Vec::with_capacity(v.vectors.len());
    let mut insert = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO ironloop_store_vectors (prefix, key, field, embedding) \
             VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(storage("write a vector"))?;
    for (field, vec) in v.vectors {
        let vec = normalized(vec);
        insert
            .execute(params![p, key, field, to_bytes(&vec)])
            .map_err(storage("write a vector"))?;
        vectors.push(vec);
    }
    if index.version.is_some() {
        index
            .spaces
            .entry(p)
            .or_default()
            .put(key, expires_at, vectors);
    }
    Ok(())
}

/// Loads the in-process copy of the vectors if it is missing or another connection
/// wrote the database since it was loaded.
fn fresh_index(tx: &Transaction<'_>, index: &mut VectorIndex) -> Result<()> {
    let version: i64 = tx
        .query_row("PRAGMA data_version", [], |r| r.get(0))
        .map_err(storage("read data_version"))?;
    if index.version == Some(version) {
        return Ok(());
    }
    let load = storage("load the vector index");
    let mut loader = Loader::new(version, Metric::Cosine);
    let mut counts = tx
        .prepare(
            "SELECT prefix, count(*), max(length(embedding)) FROM ironloop_store_vectors \
             GROUP BY prefix",
        )
        .map_err(&load)?;
    let mut rows = counts.query([]).map_err(&load)?;
    while let Some(r) = rows.next().map_err(&load)? {
        let (p, n, bytes): (String, i64, i64) = (
            r.get(0).map_err(&load)?,
            r.get(1).map_err(&load)?,
            r.get(2).map_err(&load)?,
        );
        loader.reserve(&p, n as usize, bytes as usize / 4);
    }
    drop(rows);
    let mut rows = tx
        .prepare(
            "SELECT s.prefix, s.key, s.expires_at, v.embedding FROM ironloop_store s \
             LEFT JOIN ironloop_store_vectors v ON v.prefix = s.prefix AND v.key = s.key \
             ORDER BY s.prefix, s.key",
        )
        .map_err(&load)?;
    let mut rows = rows.query([]).map_err(&load)?;
    while let Some(r) = rows.next().map_err(&load)? {
        let (p, k): (String, String) = (r.get(0).map_err(&load)?, r.get(1).map_err(&load)?);
        let blob: Option<Vec<u8>> = r.get(3).map_err(&load)?;
        let expires_at = r.get(2).map_err(&load)?;
        loader.push(&p, &k, expires_at, blob.as_deref().and_then(from_bytes));
    }
    *index = loader.finish();
    Ok(())
}

/// The rows of `stmt`, a search's query over the namespaces under `p` (its `scope`):
/// `?1` is `now`, `?2` to `?4` the bounds of `p` (see [`under`]) unless `p` is empty
/// (every namespace).
fn scope_rows<'s>(
    stmt: &'s mut rusqlite::CachedStatement<'_>,
    now: f64,
    p: &str,
) -> Result<rusqlite::Rows<'s>> {
    if p.is_empty() {
        stmt.query(params![now])
    } else {
        let (eq, lo, hi) = under(p);
        stmt.query(params![now, eq, lo, hi])
    }
    .map_err(storage("search"))
}

fn search(
    tx: &Transaction<'_>,
    index: &mut VectorIndex,
    s: &Search,
    now: f64,
) -> Result<Vec<Item>> {
    let p = to_text(&s.prefix);
    let scope = if p.is_empty() {
        "1"
    } else {
        "(prefix = ?2 OR (prefix >= ?3 AND prefix < ?4))"
    };
    let Some(query) = s.query.clone().map(normalized) else {
        // Newest first, as LangGraph's SqliteStore; the filter is applied here.
        let sql = format!(
            "SELECT {COLUMNS} FROM ironloop_store WHERE {scope} \
             AND (expires_at IS NULL OR expires_at > ?1) ORDER BY updated_at DESC"
        );
        let mut stmt = tx.prepare_cached(&sql).map_err(storage("search"))?;
        let mut rows = scope_rows(&mut stmt, now, &p)?;
        let (mut skipped, mut out) = (0, Vec::new());
        while out.len() < s.limit {
            let Some(r) = rows.next().map_err(storage("search"))? else {
                break;
            };
            let item = row_item(r, None).map_err(storage("search"))?;
            if let Some(f) = &s.filter {
                if !parse_object(&item.value).is_some_and(|v| f.matches(&v)) {
                    continue;
                }
            }
            if skipped < s.offset {
                skipped += 1;
                continue;
            }
            out.push(item);
        }
        drop(rows);
        if s.refresh_ttl {
            for it in &out {
                refresh(tx, index, &to_text(&it.namespace), &it.key, now)?;
            }
        }
        return Ok(out);
    };
    fresh_index(tx, index)?;
    // With a filter, the candidates are the rows that pass it; otherwise every item.
    let allowed: Option<HashSet<(String, String)>> = match &s.filter {
        None => None,
        Some(f) => {
            let sql = format!(
                "SELECT prefix, key, value FROM ironloop_store WHERE {scope} \
                 AND (expires_at IS NULL OR expires_at > ?1)"
            );
            let mut stmt = tx.prepare_cached(&sql).map_err(storage("search"))?;
            let mut rows = scope_rows(&mut stmt, now, &p)?;
            let mut keep = HashSet::new();
            while let Some(r) = rows.next().map_err(storage("search"))? {
                let value: String = r.get(2).map_err(storage("search"))?;
                if parse_object(&value).is_some_and(|v| f.matches(&v)) {
                    let pk = (
                        r.get(0).map_err(storage("search"))?,
                        r.get(1).map_err(storage("search"))?,
                    );
                    keep.insert(pk);
                }
            }
            Some(keep)
        }
    };
    let want = s.offset.saturating_add(s.limit);
    let (hits, plain) = index.rank(&p, &query, want, s.limit, |sp, k, exp| {
        !ttl::expired(*exp, now)
            && allowed
                .as_ref()
                .is_none_or(|a| a.contains(&(sp.to_owned(), k.to_owned())))
    });
    let mut page: Vec<(Option<f32>, String, String)> = hits
        .into_iter()
        .skip(s.offset)
        .map(|(sc, sp, k)| (Some(sc), sp, k))
        .collect();
    // Items without vectors come after the ranked ones, as in LangGraph.
    let room = s.limit.saturating_sub(page.len());
    page.extend(plain.into_iter().take(room).map(|(sp, k)| (None, sp, k)));
    let mut stmt = tx
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM ironloop_store WHERE prefix = ?1 AND key = ?2"
        ))
        .map_err(storage("search"))?;
    let mut out = Vec::with_capacity(page.len());
    for (score, sp, k) in &page {
        if let Some(it) = stmt
            .query_row(params![sp, k], |r| row_item(r, *score))
            .optional()
            .map_err(storage("search"))?
        {
            out.push(it);
        }
    }
    drop(stmt);
    if s.refresh_ttl {
        for (_, sp, k) in &page {
            refresh(tx, index, sp, k, now)?;
        }
    }
    Ok(out)
}

fn list(tx: &Transaction<'_>, op: &ListNamespaces, now: f64) -> Result<Vec<Namespace>> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT DISTINCT prefix FROM ironloop_store \
             WHERE expires_at IS NULL OR expires_at > ?1",
        )
        .map_err(storage("list namespaces"))?;
    let all: Vec<Namespace> = stmt
        .query_map([now], |r| r.get::<_, String>(0))
        .map_err(storage("list namespaces"))?
        .map(|t| t.map(|t| from_text(&t)))
        .collect::<rusqlite::Result<_>>()
        .map_err(storage("list namespaces"))?;
    Ok(namespace::list(all.iter().map(Vec::as_slice), op))
}

#[async_trait]
impl StoreBackend for SqliteStore {
    async fn setup(&self) -> Result<()> {
        let guard = self.lock();
        let conn = guard.as_ref().ok_or(StoreError::Closed)?;
        migrate(conn)
    }

    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        self.run(ops)
    }

    async fn sweep(&self) -> Result<usize> {
        self.sweep_now()
    }

    async fn close(&self) -> Result<()> {
        self.close_now();
        Ok(())
    }
}
