//! The PostgreSQL store's vectors in pgvector, when the server has the extension:
//! LangGraph's own `store_vectors` table (a `vector(dims)` column, recorded in
//! `vector_migrations` as LangGraph's `setup()` does), so a database either wrote
//! reads the same.
//!
//! By default (`ann_index_config` without `kind`, or `kind="flat"`) no index is built
//! and a search is exact: ranked in Rust over an in-process copy of `store_vectors`
//! (`postgres::exact_page`), as on a server without pgvector. LangGraph's default, an
//! HNSW index, was measured and rejected as a default: on W13's 100,000 random
//! 384-dimension vectors its recall@10 is 0.05 at pgvector's `ef_search` 40 and 0.61
//! at its largest (1,000, slower than the exact scan), and it cuts `put` to ~400
//! items/s; pgvector's own exact scan took 35 ms (the copy: ~6 ms). An index is
//! opt-in (`kind="hnsw"` / `"ivfflat"`): the server then ranks `store_vectors` alone
//! (`ORDER BY` the bare distance operator, which the index answers) for a few times
//! the page's rows, then reads those items and applies the filter and expiry,
//! widening the window when they drop too many. A server without the extension
//! (Debian's `postgresql`) keeps ironloop's own table (`postgres`).

use std::collections::HashMap;

use pgvector::Vector;
use tokio_postgres::{Client, Transaction};

use super::postgres::{
    delete_keys, fetch, first_unapplied, record_migration, row_item, scope, storage, vector_columns,
};
use super::vector::Metric;
use super::{parse_object, Item, PutValue, Result, Search, StoreError};

/// LangGraph's `ann_index_config`: the column's type and an optional index.
#[derive(Debug, Clone)]
pub struct AnnConfig {
    /// `vector` (32-bit floats) or `halfvec` (16-bit, pgvector ≥ 0.7).
    pub vector_type: String,
    /// `hnsw` or `ivfflat` builds that index (opt-in: the search is then
    /// approximate); `None` (the default, for every caller) or `flat`: none, exact.
    pub kind: Option<String>,
    /// The index's integer settings (`m`, `ef_construction`; `lists`).
    pub params: Vec<(String, i64)>,
}

/// The one default (the bindings and Python pass `kind` only when the caller named
/// one): `vector` columns and no index, so a search is exact (see the module's doc
/// for why not LangGraph's HNSW).
impl Default for AnnConfig {
    fn default() -> Self {
        AnnConfig {
            vector_type: "vector".to_owned(),
            kind: None,
            params: Vec::new(),
        }
    }
}

impl AnnConfig {
    /// Checks the names that go into SQL text (types, index kinds, settings), so
    /// that none carries anything but a known word.
    pub fn checked(self) -> Result<AnnConfig> {
        let bad = |what: String| Err(StoreError::Invalid(format!("PostgresStore: {what}")));
        if !matches!(self.vector_type.as_str(), "vector" | "halfvec") {
            return bad(format!(
                "ann_index_config vector_type='{}' is not supported: the store keeps \
                 float vectors; pass 'vector' or 'halfvec' (or leave it out)",
                self.vector_type
            ));
        }
        let allowed: &[&str] = match self.kind.as_deref() {
            None | Some("flat") => &[],
            Some("hnsw") => HNSW_SETTINGS,
            Some("ivfflat") => IVFFLAT_SETTINGS,
            Some(other) => {
                return bad(format!(
                    "ann_index_config kind='{other}' is not supported: pass 'hnsw', \
                     'ivfflat' or 'flat'"
                ))
            }
        };
        if let Some((k, _)) = self
            .params
            .iter()
            .find(|(k, _)| !allowed.contains(&k.as_str()))
        {
            let kind = self.kind.as_deref().unwrap_or("flat");
            let mut msg = format!(
                "ann_index_config '{k}' is not a setting of kind='{kind}' (expected one \
                 of {allowed:?})"
            );
            let owner = [("hnsw", HNSW_SETTINGS), ("ivfflat", IVFFLAT_SETTINGS)]
                .into_iter()
                .find(|(_, names)| names.contains(&k.as_str()));
            if let (true, Some((owner, _))) = (allowed.is_empty(), owner) {
                msg.push_str(&format!(
                    ": without a kind no index is built and search is exact; add \
                     kind='{owner}' to build that (approximate) index"
                ));
            }
            return bad(msg);
        }
        Ok(self)
    }

    /// Whether an index answers the searches (opt-in, approximate); else they are
    /// exact, over the in-process copy.
    pub fn indexed(&self) -> bool {
        matches!(self.kind.as_deref(), Some("hnsw" | "ivfflat"))
    }
}

/// Bumps ironloop's version row on every statement that changes `store_vectors`,
/// whoever runs it: a LangGraph process sharing the database writes no version of
/// its own, and the in-process copy must still see its vectors (see `postgres`).
/// Made by every `setup()` (idempotent), outside LangGraph's migration log.
const BUMP_ON_CHANGE: &str = "CREATE OR REPLACE FUNCTION ironloop_store_vectors_changed() \
RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
UPDATE ironloop_store_version SET version = version + 1 WHERE id = 1; RETURN NULL; END $$;
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'store_vectors'::regclass
                   AND tgname = 'ironloop_store_vectors_changed') THEN
        CREATE TRIGGER ironloop_store_vectors_changed
        AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON store_vectors
        FOR EACH STATEMENT EXECUTE FUNCTION ironloop_store_vectors_changed();
    END IF;
END $$;";

/// The settings of each index kind, as LangGraph's `ann_index_config` names them.
const HNSW_SETTINGS: &[&str] = &["m", "ef_construction"];
const IVFFLAT_SETTINGS: &[&str] = &["lists"];

/// The smallest `hnsw.ef_search` a search uses (pgvector's default is 40): on
/// clustered 384-dimension embeddings (100,000, 200 topics) recall@10 was 0.85 at
/// 40 and 0.97 at 100 (m=16, ef_construction=64).
const HNSW_MIN_EF: usize = 100;

/// pgvector's largest `hnsw.ef_search`: an HNSW scan returns at most that many rows,
/// so a wider window is read exactly.
const HNSW_MAX_EF: usize = 1000;

/// pgvector's distance operator for a metric: smaller is closer.
fn operator(metric: Metric) -> &'static str {
    match metric {
        Metric::Cosine => "<=>",
        Metric::InnerProduct => "<#>",
        Metric::L2 => "<->",
    }
}

/// pgvector's operator class for an index over the column.
fn ops(metric: Metric) -> &'static str {
    match metric {
        Metric::Cosine => "cosine_ops",
        Metric::InnerProduct => "ip_ops",
        Metric::L2 => "l2_ops",
    }
}

/// A distance as LangGraph reports its score, higher-is-closer: `1 - d` for cosine
/// (similarity), `-d` otherwise (the inner product; minus the L2 distance).
fn score(metric: Metric, d: f64) -> f32 {
    match metric {
        Metric::Cosine => (1.0 - d) as f32,
        Metric::InnerProduct | Metric::L2 => (-d) as f32,
    }
}

/// Vectors kept by pgvector, for a store of `dims` dimensions ranked by `metric`.
#[derive(Debug, Clone)]
pub struct Pgvector {
    pub dims: usize,
    pub metric: Metric,
    pub ann: AnnConfig,
}

impl Pgvector {
    /// LangGraph's `VECTOR_MIGRATIONS`, the index's step `None` without an index
    /// (LangGraph then skips it unrecorded, so a later `setup()` with one builds it).
    fn migrations(&self, vt: &str) -> (String, String, Option<String>) {
        let index = self
            .ann
            .kind
            .as_deref()
            .filter(|k| *k != "flat")
            .map(|kind| {
                let with = if self.ann.params.is_empty() {
                    String::new()
                } else {
                    let p: Vec<String> = self
                        .ann
                        .params
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    format!(" WITH ({})", p.join(", "))
                };
                format!(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS store_vectors_embedding_idx ON \
                 store_vectors USING {kind} (embedding {vt}_{}){with};",
                    ops(self.metric)
                )
            });
        (
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = \
             'vector') THEN CREATE EXTENSION vector; END IF; END $$;"
                .to_owned(),
            format!(
                "CREATE TABLE IF NOT EXISTS store_vectors (
    prefix text NOT NULL,
    key text NOT NULL,
    field_name text NOT NULL,
    embedding {vt}({}),
    created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (prefix, key, field_name),
    FOREIGN KEY (prefix, key) REFERENCES store(prefix, key) ON DELETE CASCADE
);",
                self.dims
            ),
            index,
        )
    }

    /// Sets the vectors' table up when the server offers pgvector, and returns the
    /// settings to search with (the column's type as the table has it: a table
    /// LangGraph made with `halfvec` stays so); `None` (the exact search in Rust
    /// then) when the server has no pgvector, when this role may not create it, or
    /// when its types are outside the connection's `search_path` (both logged).
    pub async fn setup(&self, c: &Client) -> Result<Option<Pgvector>> {
        let available = c
            .query_opt(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'",
                &[],
            )
            .await
            .map_err(storage("look for the pgvector extension"))?
            .is_some();
        if !available {
            return Ok(None);
        }
        let first = first_unapplied(c, "vector_migrations").await?;
        let (extension, table, index) = self.migrations(&self.column_type(c).await?);
        if first == 0 {
            if let Err(e) = c.batch_execute(&extension).await {
                log::warn!(
                    "PostgresStore: the server has pgvector but `CREATE EXTENSION vector` \
                     failed ({e}); searching in Rust instead. A superuser's `CREATE \
                     EXTENSION vector` in this database turns pgvector on."
                );
                return Ok(None);
            }
            record(c, 0).await?;
        }
        // The extension's types live in the schema it was created in: one outside
        // this connection's `search_path` leaves them unseen.
        if !has_type(c, "vector").await? {
            log::warn!(
                "PostgresStore: pgvector is installed in a schema outside this \
                 connection's search_path; searching in Rust instead. Add that schema to \
                 search_path to search in pgvector."
            );
            return Ok(None);
        }
        for (v, step) in [(1, Some(table)), (2, index)] {
            let Some(step) = step.filter(|_| v as usize >= first) else {
                continue;
            };
            c.batch_execute(&step)
                .await
                .map_err(storage("set up pgvector's table"))?;
            record(c, v).await?;
        }
        c.batch_execute(BUMP_ON_CHANGE)
            .await
            .map_err(storage("set up store_vectors' change trigger"))?;
        let column: String = c
            .query_one(
                "SELECT t.typname::text FROM pg_attribute a JOIN pg_type t ON t.oid = \
                 a.atttypid WHERE a.attrelid = to_regclass('store_vectors') AND a.attname \
                 = 'embedding'",
                &[],
            )
            .await
            .map_err(storage("read store_vectors' column type"))?
            .get(0);
        let mut active = self.clone();
        active.ann.vector_type = column;
        Ok(Some(active.ann.clone().checked().map(|_| active)?))
    }

    /// The column type to create: `halfvec` only where pgvector has it (≥ 0.7),
    /// else `vector` (32-bit floats lose nothing a `halfvec` keeps).
    async fn column_type(&self, c: &Client) -> Result<String> {
        if self.ann.vector_type == "halfvec" && !has_type(c, "halfvec").await? {
            return Ok("vector".to_owned());
        }
        Ok(self.ann.vector_type.clone())
    }

    /// Replaces the vectors of the items `ps`/`ks` (all of a batch's puts, deleted
    /// ones included) with those of `kept` (written after their items' rows: the
    /// table's key references them).
    pub async fn replace(
        &self,
        tx: &Transaction<'_>,
        ps: &[&str],
        ks: &[&str],
        kept: &[(&str, &str, &PutValue)],
    ) -> Result<()> {
        delete_keys(tx, "store_vectors", ps, ks)
            .await
            .map_err(storage("replace the items' vectors"))?;
        let (ps, ks, fs, vectors) = vector_columns(kept, |x| Vector::from(x.to_vec()));
        if ps.is_empty() {
            return Ok(());
        }
        let es: Vec<&Vector> = vectors.iter().collect();
        let vt = &self.ann.vector_type;
        tx.execute(
            &format!(
                "INSERT INTO store_vectors (prefix, key, field_name, embedding) \
                 SELECT u.p, u.k, u.f, u.e::{vt} FROM unnest($1::text[], $2::text[], \
                 $3::text[], $4::vector[]) AS u(p, k, f, e) \
                 ON CONFLICT (prefix, key, field_name) DO UPDATE SET \
                 embedding = excluded.embedding, updated_at = CURRENT_TIMESTAMP"
            ),
            &[&ps, &ks, &fs, &es],
        )
        .await
        .map_err(storage("write vectors"))?;
        Ok(())
    }

    /// A ranked search's page, as the exact search gives it: the live items under
    /// `p` that pass the filter, best score first (an item's best field; equal scores
    /// in namespace and key order), then, to fill the page, items with no vectors.
    ///
    /// The ranking reads `store_vectors` alone (`candidates`), a few times the page's
    /// rows at first; the items are then read and the filter and expiry applied
    /// here. When those drop too many, or (exact) when the page's last score ties
    /// the candidates' last, the window doubles: a page is never cut short by it.
    pub async fn page(
        &self,
        tx: &Transaction<'_>,
        s: &Search,
        p: &str,
        query: &[f32],
        now: f64,
    ) -> Result<Vec<Item>> {
        if s.limit == 0 {
            return Ok(Vec::new());
        }
        let want = s.offset.saturating_add(s.limit);
        let q = Vector::from(query.to_vec());
        let mut window = want.saturating_mul(4).max(40);
        let mut exact = self.ann.kind.as_deref().is_none_or(|k| k == "flat");
        loop {
            if !exact && window > HNSW_MAX_EF {
                exact = true;
            }
            let (ranked, cutoff) = self.candidates(tx, p, &q, window, exact).await?;
            let keys: Vec<(String, String)> = ranked
                .iter()
                .map(|(_, sp, k)| (sp.clone(), k.clone()))
                .collect();
            let mut rows = fetch(tx, &keys, now).await?;
            let live: Vec<(f64, tokio_postgres::Row)> = ranked
                .into_iter()
                .filter_map(|(d, sp, k)| rows.remove(&(sp, k)).map(|r| (d, r)))
                .filter(|(_, r)| match &s.filter {
                    None => true,
                    Some(f) => parse_object(r.get(2)).is_some_and(|v| f.matches(&v)),
                })
                .collect();
            let settled = match (cutoff, exact) {
                // Every vector under `p` was read: the ranking is whole.
                (None, true) => true,
                // An index's answer is approximate: enough rows is the best it gives.
                (_, false) => live.len() >= want,
                // Exact: the page's last item must rank strictly before any unread one.
                (Some(c), true) => live.len() >= want && live[want - 1].0 < c,
            };
            if !settled {
                // An index that ran dry (its rows filtered by `p` after its scan)
                // cannot tell that no more exist: the exact scan can.
                match cutoff {
                    None => exact = true,
                    Some(_) => window = window.saturating_mul(2),
                }
                continue;
            }
            let mut out: Vec<Item> = live
                .iter()
                .skip(s.offset)
                .take(s.limit)
                .map(|(d, r)| row_item(r, Some(score(self.metric, *d))))
                .collect();
            let room = s.limit - out.len();
            if room > 0 {
                let plain = self.plain(tx, s, p, room, now).await?;
                let mut rows = fetch(tx, &plain, now).await?;
                out.extend(
                    plain
                        .iter()
                        .filter_map(|pk| rows.remove(pk).map(|r| row_item(&r, None))),
                );
            }
            return Ok(out);
        }
    }

    /// The best `window` vectors under `p` for `q`, one entry per item (its best
    /// field), best first with ties in namespace and key order, and the distance of
    /// the last vector read (`None` when fewer than `window` came back: all of them).
    ///
    /// Approximate (`exact` false): the bare operator in `ORDER BY`, which an HNSW or
    /// IVFFlat index answers (HNSW's `ef_search` raised to the window, as its scan
    /// returns no more). Exact: a distance the index cannot serve, so a scan, with a
    /// zero vector's cosine distance (NaN in pgvector) 1 as the exact search has it.
    async fn candidates(
        &self,
        tx: &Transaction<'_>,
        p: &str,
        q: &Vector,
        window: usize,
        exact: bool,
    ) -> Result<(Vec<(f64, String, String)>, Option<f64>)> {
        let (lo, hi) = (format!("{p}."), format!("{p}/"));
        let cond = scope(p);
        let vt = &self.ann.vector_type;
        let op = operator(self.metric);
        let bare = format!("embedding {op} $1::vector::{vt}");
        let d = match self.metric {
            Metric::Cosine => format!("coalesce(nullif({bare}, 'NaN'), 1)"),
            _ => format!("({bare}) + 0"),
        };
        if !exact && self.ann.kind.as_deref() == Some("hnsw") {
            let ef = window.max(HNSW_MIN_EF);
            tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {ef}"))
                .await
                .map_err(storage("set hnsw.ef_search"))?;
        }
        let order = if exact { &d } else { &bare };
        let limit = i64::try_from(window).unwrap_or(i64::MAX);
        let rows = tx
            .query(
                &format!(
                    "SELECT prefix, key, ({d})::float8 FROM store_vectors WHERE {cond} \
                     ORDER BY {order} LIMIT $5"
                ),
                &[q, &p, &lo, &hi, &limit],
            )
            .await
            .map_err(storage("search"))?;
        let cutoff = (rows.len() >= window)
            .then(|| rows.last().map(|r| r.get::<_, f64>(2)))
            .flatten();
        let mut best: HashMap<(String, String), f64> = HashMap::new();
        for r in &rows {
            let d: f64 = r.get(2);
            best.entry((r.get(0), r.get(1)))
                .and_modify(|b| *b = b.min(d))
                .or_insert(d);
        }
        let mut ranked: Vec<(f64, String, String)> =
            best.into_iter().map(|((sp, k), d)| (d, sp, k)).collect();
        ranked.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then_with(|| (&a.1, &a.2).cmp(&(&b.1, &b.2)))
        });
        Ok((ranked, cutoff))
    }

    /// Up to `room` live items under `p` with no vectors that pass the filter, in
    /// namespace and key order (listed after the ranked ones, as LangGraph's
    /// in-memory store lists them).
    async fn plain(
        &self,
        tx: &Transaction<'_>,
        s: &Search,
        p: &str,
        room: usize,
        now: f64,
    ) -> Result<Vec<(String, String)>> {
        let (lo, hi) = (format!("{p}."), format!("{p}/"));
        let cond = scope(p);
        let rows = tx
            .query(
                &format!(
                    "SELECT prefix, key, value::text FROM store s WHERE {cond} AND \
                     (expires_at IS NULL OR expires_at > to_timestamp($1)) AND NOT EXISTS \
                     (SELECT 1 FROM store_vectors v WHERE v.prefix = s.prefix AND v.key = s.key) \
                     ORDER BY prefix COLLATE \"C\", key COLLATE \"C\""
                ),
                &[&now, &p, &lo, &hi],
            )
            .await
            .map_err(storage("search"))?;
        Ok(rows
            .iter()
            .filter(|r| match &s.filter {
                None => true,
                Some(f) => parse_object(r.get(2)).is_some_and(|v| f.matches(&v)),
            })
            .take(room)
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }
}

/// Whether the type `name` is visible on the connection's `search_path`.
async fn has_type(c: &Client, name: &str) -> Result<bool> {
    Ok(c.query_one("SELECT to_regtype($1) IS NOT NULL", &[&name])
        .await
        .map_err(storage("look for pgvector's types"))?
        .get(0))
}

/// Records a step of LangGraph's `VECTOR_MIGRATIONS` as applied.
async fn record(c: &Client, v: i32) -> Result<()> {
    record_migration(c, "vector_migrations", v).await
}
