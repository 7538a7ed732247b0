//! Checkpoints in PostgreSQL, as deltas: the same design as [`SqliteSaver`]
//! (`sqlite.rs`), for several processes and machines sharing threads.
//!
//! # Connections
//!
//! A [`PostgresSaver`] holds a pool of `tokio-postgres` connections (`deadpool-postgres`,
//! [`PostgresOptions::pool_size`] at most, opened on demand). Every call runs as a task
//! on the tokio runtime the saver was made on, so it can be awaited from any executor,
//! and a future dropped half-way does not cut a statement in two: every call is one
//! statement (one transaction), and its prepared statement is cached per connection,
//! so a call is **one round trip** once the connection has seen it.
//!
//! A thread that waits for its saves anyway (a sync Python `invoke`, see
//! [`super::caller`]) does not hand them to the runtime: it takes a **lane** (see
//! `lane`: a connection on a single-threaded runtime of its own, up to `pool_size` of
//! them besides the pool) and drives the call itself, writing the statement and
//! reading the answer on its own thread; the statements are the same. A step of a run
//! costs one `put_next` (the step's record, and the parent's pending writes dropped, in
//! one statement); a step of several tasks adds one `put_writes` per task as it
//! finishes. A `put_many` batch of `put_next`s and writes (a run's `"async"` and
//! `"exit"` saves) whose records form a chain (each one's parent the one before it) is
//! **one statement**, whatever its size: the records and the writes that outlive the
//! batch go in as arrays (`unnest`), and the thread swaps once, from the first record's
//! parent to the last record. Any other batch is one transaction whose `BEGIN`,
//! statements and `COMMIT` are pipelined: one round trip too. Either way a refused
//! `put_next` raises an error that leaves nothing of the batch, and the batch is then
//! checked item by item to say why.
//!
//! A connection the server closed while idle (a restart, `pg_terminate_backend`, a
//! proxy's idle timeout) is noticed when it is taken from the pool and replaced. A
//! connection lost *during* a call fails the call with a
//! [`CheckpointError::Storage`] that says so: the statement either committed
//! completely or left nothing behind, `put` and `put_writes` are idempotent so they can
//! be retried, and a run continues from its last saved step with `invoke(None, config)`.
//!
//! # TLS
//!
//! `sslmode` from the URL (`disable`, `prefer` — the default —, `require`); TLS is
//! rustls (with `ring`), and the server's certificate is always verified against the
//! platform's trust store (`rustls-platform-verifier`), as `verify-full` would.
//!
//! # Schema
//!
//! [`PostgresSaver::setup`] creates the tables (in [`PostgresOptions::schema`] when
//! given, else in the connection's `search_path`) and migrates them: the versions
//! applied are rows of `ironloop_migrations`, and concurrent `setup` calls from several
//! workers wait for each other (an advisory lock). Version 1:
//!
//! ```sql
//! ironloop_checkpoints(seq bigserial PRIMARY KEY, thread_id, checkpoint_id, parent_id,
//!                      step, record)  UNIQUE (thread_id, checkpoint_id), INDEX (thread_id, seq)
//! ironloop_writes(seq bigserial PRIMARY KEY, thread_id, checkpoint_id, task_id, idx, node,
//!                 channel, value)     UNIQUE (thread_id, checkpoint_id, task_id, idx)
//! ironloop_threads(thread_id PRIMARY KEY, latest_id, updated_at)
//! ```
//!
//! Version 3 makes `(thread_id, seq)` the primary key of `ironloop_checkpoints` (its
//! `seq` key and the `(thread_id, seq)` index go: one index fewer), and marks a schema
//! whose records may be in format 2 (see [`super::record`]).
//!
//! Version 4 adds the function `ironloop_refused(thread)`, which raises the error
//! (SQLSTATE `IL409`) that a refused `put_next` of a pipelined batch aborts its
//! transaction with.
//!
//! Version 2 adds `ironloop_claims(thread_id PRIMARY KEY, owner, expires_at)`, the
//! claims of stalled threads (see [`super::stalled`]), and `ironloop_writes.saved_at`
//! (filled by the server). A thread is idle since its latest save: the later of its
//! `ironloop_threads.updated_at` and its latest checkpoint's pending writes'
//! `saved_at`, both the server's clock, so the workers' clocks do not matter.
//!
//! Version 5 stores a record in as few bytes as the lookups allow (W4m's bytes, see
//! BENCHMARKS.md): `ironloop_checkpoints(seq, thread_id, checkpoint_id uuid, parent_id
//! uuid, record, id_text, parent_text)` with one index, the primary key `(thread_id,
//! checkpoint_id)`. It serves every lookup: by id, the chain's walk up the parent
//! links, and the thread's latest through `ironloop_threads.latest_id`; `list` reads
//! the thread's rows through it and sorts them by `seq` (no second index by `seq`,
//! which cost as much as the ids). An id is stored as a 16-byte `uuid` (the engine's ids
//! are UUIDs: 37 bytes as text); any other id is keyed by its MD5 as a `uuid`, its text
//! kept in `id_text` / `parent_text` (NULL, so free, for UUIDs): the functions
//! `ironloop_uuid(text)` and `ironloop_id_text(text)` make both from the text, so the
//! statements take and return ids as text. `step` (also in the record) is gone. The
//! migration copies the rows into the new table in one transaction.
//!
//! Version 6 makes a record's row 8 bytes smaller (W4m's bytes, see BENCHMARKS.md): a
//! record's `seq` is an `integer` counted per thread (`ironloop_threads.seq`, bumped by
//! the statement that swaps the thread's latest, so a thread's records are numbered in
//! the order they were saved) instead of a global `bigint` (a row is padded to 8 bytes:
//! 4 bytes fewer is 8 fewer a row for W4m's records), and `ironloop_writes` loses its
//! `seq` key (`seq` stays, unindexed, for the order of a checkpoint's writes), its
//! `(thread_id, checkpoint_id, task_id, idx)` key becoming the primary key. The
//! migration numbers each thread's rows in their old order.
//!
//! `ironloop_threads` holds each thread's latest checkpoint: `put_next` swaps it in the
//! same statement that inserts the record (`INSERT ... ON CONFLICT DO UPDATE ... WHERE
//! latest_id = parent`, which the server evaluates on the row's latest version under a
//! row lock), so of two runs advancing a thread at once exactly one wins.
//!
//! `record` is the record's text (see [`super::record`]: format 4, or formats 3, 2 and 1
//! for records written before; kept byte for byte, the server compresses large values),
//! `value` a pending write's value as JSON text.
//! The names start with `ironloop_`, so a database can also hold LangGraph's tables.
//!
//! [`SqliteSaver`]: super::SqliteSaver

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{
    ClientWrapper, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio::runtime::Handle;
use tokio_postgres::error::SqlState;
use tokio_util::task::TaskTracker;

use super::caller;
use super::record;
use super::seal::{ReadError, RecordKey, Records, SNAPSHOT_PREFIX_SEALED};
use super::stalled::{awaits_answer_sql, check_claim};
use super::{
    advanced_conflict, dedupe_writes, order_chain, same_id_conflict, writes_from_rows, ChainFrom,
    CheckpointError, CheckpointRecord, Checkpointer, PendingWrite, Put, Result, WriteRow,
};

mod lane;
mod lease;

/// The schema version this ironloop writes (the last of [`MIGRATIONS`]).
pub const SCHEMA_VERSION: i32 = 6;

/// The migrations, in order: `MIGRATIONS[i]` takes the schema to version `i + 1`.
/// `{s}` stands for the schema prefix (`"name".` or nothing).
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE {s}ironloop_checkpoints (
    seq           bigserial PRIMARY KEY,
    thread_id     text      NOT NULL,
    checkpoint_id text      NOT NULL,
    parent_id     text,
    step          bigint    NOT NULL,
    record        text      NOT NULL,
    UNIQUE (thread_id, checkpoint_id)
);
CREATE INDEX ironloop_checkpoints_by_thread ON {s}ironloop_checkpoints (thread_id, seq);
CREATE TABLE {s}ironloop_writes (
    seq           bigserial PRIMARY KEY,
    thread_id     text      NOT NULL,
    checkpoint_id text      NOT NULL,
    task_id       text      NOT NULL,
    idx           bigint    NOT NULL,
    node          text      NOT NULL,
    channel       text      NOT NULL,
    value         text      NOT NULL,
    UNIQUE (thread_id, checkpoint_id, task_id, idx)
);
CREATE TABLE {s}ironloop_threads (
    thread_id     text        PRIMARY KEY,
    latest_id     text        NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
",
    "
CREATE TABLE {s}ironloop_claims (
    thread_id     text        PRIMARY KEY,
    owner         text        NOT NULL,
    expires_at    timestamptz NOT NULL
);
ALTER TABLE {s}ironloop_writes ADD COLUMN saved_at timestamptz NOT NULL DEFAULT now();
",
    // Records may be in format 2 from here on (see `record`); one index fewer: the
    // primary key (thread_id, seq) orders a thread's records and finds them by seq.
    "
ALTER TABLE {s}ironloop_checkpoints DROP CONSTRAINT ironloop_checkpoints_pkey;
DROP INDEX {s}ironloop_checkpoints_by_thread;
ALTER TABLE {s}ironloop_checkpoints ADD PRIMARY KEY (thread_id, seq);
",
    // What lets a batch's `COMMIT` be sent with its statements (one round trip, see
    // `save_batch`): a `put_next` that is refused raises this error, which aborts the
    // transaction, so the pipelined `COMMIT` rolls it back.
    "
CREATE FUNCTION {s}ironloop_refused(thread text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ironloop: thread % did not take this batch''s checkpoint', thread
        USING ERRCODE = 'IL409';
END
$$;
",
    // One index per record, and ids as 16-byte `uuid`s (see the module documentation):
    // the primary key (thread_id, checkpoint_id) serves every lookup, a thread's
    // latest is `ironloop_threads.latest_id`, and `step` (also in the record) goes.
    "
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
INSERT INTO {s}ironloop_checkpoints_5
    (seq, thread_id, checkpoint_id, parent_id, record, id_text, parent_text)
SELECT seq, thread_id, {s}ironloop_uuid(checkpoint_id), {s}ironloop_uuid(parent_id), record,
       {s}ironloop_id_text(checkpoint_id), {s}ironloop_id_text(parent_id)
FROM {s}ironloop_checkpoints ORDER BY thread_id, seq;
DROP TABLE {s}ironloop_checkpoints;
ALTER TABLE {s}ironloop_checkpoints_5 RENAME TO ironloop_checkpoints;
ALTER TABLE {s}ironloop_checkpoints
    RENAME CONSTRAINT ironloop_checkpoints_5_pkey TO ironloop_checkpoints_pkey;
ALTER SEQUENCE {s}ironloop_checkpoints_seq_seq OWNED BY {s}ironloop_checkpoints.seq;
",
    // 8 bytes fewer per record's row (see the module documentation): `seq` is a
    // per-thread `integer` (the row no longer pads to the next 8 bytes),
    // counted in `ironloop_threads.seq`; `ironloop_writes` loses its `seq` key, its
    // `(thread_id, checkpoint_id, task_id, idx)` key becoming the primary key.
    "
ALTER TABLE {s}ironloop_threads ADD COLUMN seq integer NOT NULL DEFAULT 0;
CREATE TABLE {s}ironloop_checkpoints_6 (
    seq           integer NOT NULL,
    thread_id     text    NOT NULL,
    checkpoint_id uuid    NOT NULL,
    parent_id     uuid,
    record        text    NOT NULL,
    id_text       text,
    parent_text   text,
    CONSTRAINT ironloop_checkpoints_6_pkey PRIMARY KEY (thread_id, checkpoint_id)
);
INSERT INTO {s}ironloop_checkpoints_6
    (seq, thread_id, checkpoint_id, parent_id, record, id_text, parent_text)
SELECT (row_number() OVER (PARTITION BY thread_id ORDER BY seq))::integer, thread_id,
       checkpoint_id, parent_id, record, id_text, parent_text
FROM {s}ironloop_checkpoints ORDER BY thread_id, seq;
UPDATE {s}ironloop_threads t SET seq = m.seq
FROM (SELECT thread_id, max(seq) AS seq FROM {s}ironloop_checkpoints_6 GROUP BY thread_id) m
WHERE m.thread_id = t.thread_id;
DROP TABLE {s}ironloop_checkpoints;
ALTER TABLE {s}ironloop_checkpoints_6 RENAME TO ironloop_checkpoints;
ALTER TABLE {s}ironloop_checkpoints
    RENAME CONSTRAINT ironloop_checkpoints_6_pkey TO ironloop_checkpoints_pkey;
ALTER TABLE {s}ironloop_writes
    DROP CONSTRAINT ironloop_writes_pkey,
    DROP CONSTRAINT ironloop_writes_thread_id_checkpoint_id_task_id_idx_key,
    ADD PRIMARY KEY (thread_id, checkpoint_id, task_id, idx);
",
];

/// The error `ironloop_refused` raises (migration 4).
const REFUSED_CODE: &str = "IL409";

/// The key of the advisory lock that serialises `setup` calls.
const SETUP_LOCK: i64 = 0x6972_6f6e_6c6f_6f70; // "ironloop"

/// How a [`PostgresSaver`] connects.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// The PostgreSQL schema that holds the tables (created by `setup`). `None`: the
    /// first schema of the connection's `search_path` (usually `public`).
    pub schema: Option<String>,
    /// The most connections the saver's pool opens (on demand); threads that drive
    /// their own calls (see [`super::caller`]) open as many again at most.
    pub pool_size: usize,
    /// How long connecting, or waiting for a free connection, may take.
    pub connect_timeout: Duration,
    /// The key the records are authenticated (and optionally encrypted) with, if any
    /// (see [`super::seal`]).
    pub key: Option<RecordKey>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: None,
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            key: None,
        }
    }
}

/// The statements, with the schema's prefix in the table names.
struct Sql {
    prefix: String,
    put: String,
    put_next: String,
    /// `put_next` that raises [`REFUSED_CODE`] instead of answering `false`.
    put_next_or_raise: String,
    /// A batch's chain of `put_next`s and its writes, as one statement (`save_chain`).
    put_chain: String,
    refused: String,
    put_writes: String,
    latest: String,
    by_id: String,
    chain: String,
    /// `chain`, stopped at the nearest record holding a snapshot.
    chain_from_snapshot: String,
    list: String,
    pending: String,
    delete: String,
    delete_some: String,
    stalled: String,
    claim: String,
}

impl Sql {
    fn new(schema: Option<&str>) -> Sql {
        let prefix = match schema {
            Some(s) => format!("{}.", quote_ident(s)),
            None => String::new(),
        };
        let c = format!("{prefix}ironloop_checkpoints");
        let w = format!("{prefix}ironloop_writes");
        let t = format!("{prefix}ironloop_threads");
        let this = "(thread_id = $1 OR starts_with(thread_id, $2))";
        let k = format!("{prefix}ironloop_claims");
        // Ids are stored as `uuid`s, the text kept beside only when it is not one
        // (migration 5); `id(x)` is the key of the text id `x`.
        let id = |x: &str| format!("{prefix}ironloop_uuid({x})");
        let id_text = |x: &str| format!("{prefix}ironloop_id_text({x})");
        // A stored record as the saver reads it: id, parent, text.
        let cols = |a: &str| {
            format!(
                "coalesce({a}.id_text, {a}.checkpoint_id::text), \
                 coalesce({a}.parent_text, {a}.parent_id::text), {a}.record"
            )
        };
        let insert = format!(
            "INSERT INTO {c} (thread_id, checkpoint_id, parent_id, record, id_text, parent_text, \
             seq)"
        );
        // The saves pass, beside each id, the id again when it is a UUID (`uuid_key`),
        // else NULL: the key is then a cast, and the functions (what a step's statement
        // spent most of its time on, see BENCHMARKS.md) run only for other ids.
        let key = |x: &str, k: &str| format!("coalesce({k}::uuid, {})", id(x));
        let key_text = |x: &str, k: &str| format!("CASE WHEN {k} IS NULL THEN {} END", id_text(x));
        let values = format!(
            "$1, {}, {}, $4, {}, {}",
            key("$2", "$5::text"),
            key("$3::text", "$6::text"),
            key_text("$2", "$5::text"),
            key_text("$3::text", "$6::text")
        );
        // The stalled threads, idle longest first (`$1`: stale_after in seconds, `$2`:
        // the limit, NULL for none); subgraphs' namespaces (keys with U+001F) are
        // resumed through their thread, not listed.
        let stalled = format!(
            "SELECT t.thread_id FROM {t} t \
             JOIN {c} c ON c.thread_id = t.thread_id AND c.checkpoint_id = {latest} \
             LEFT JOIN {k} k ON k.thread_id = t.thread_id \
             WHERE t.updated_at <= now() - make_interval(secs => $1) \
               AND strpos(t.thread_id, chr(31)) = 0 \
               AND NOT EXISTS (SELECT 1 FROM {w} a WHERE a.thread_id = t.thread_id \
                 AND a.checkpoint_id = t.latest_id \
                 AND a.saved_at > now() - make_interval(secs => $1)) \
               AND (k.expires_at IS NULL OR k.expires_at <= now()) \
               AND json_array_length(CASE WHEN left(c.record, 1) = '[' \
                 THEN (c.record::json) -> 5 ELSE (c.record::json) -> 'next' END) > 0 \
               AND NOT {} \
             ORDER BY t.updated_at, t.thread_id LIMIT $2",
            awaits_answer_sql(&w, "t.thread_id", "t.latest_id"),
            latest = id("t.latest_id"),
        );
        // The swap decides: the record goes in (and the parent's pending writes go) only
        // if the thread was still at the parent. Only `true` (swapped and inserted) is
        // the common case: anything else reads `refused`.
        // The swap also counts the thread's records: the new one's `seq` (migration 6).
        let put_next_cte = format!(
            "WITH cas AS ( \
                   INSERT INTO {t} AS t (thread_id, latest_id, seq) VALUES ($1, $2, 1) \
                   ON CONFLICT (thread_id) DO UPDATE \
                   SET latest_id = EXCLUDED.latest_id, seq = t.seq + 1, updated_at = now() \
                   WHERE t.latest_id IS NOT DISTINCT FROM $3::text \
                   RETURNING t.seq \
                 ), ins AS ( \
                   {insert} SELECT {values}, cas.seq FROM cas \
                   ON CONFLICT (thread_id, checkpoint_id) DO NOTHING RETURNING 1 \
                 ), del AS ( \
                   DELETE FROM {w} WHERE thread_id = $1 AND checkpoint_id = $3 \
                   AND EXISTS (SELECT 1 FROM cas) \
                 )"
        );
        Sql {
            // The threads' rows are locked (those another claimer or a saving run
            // holds are skipped), and a claim that still lives is never replaced (the
            // upsert's condition is checked on the row's latest version): of two
            // claimers, exactly one gets each thread.
            claim: format!(
                "WITH s AS ({stalled} FOR UPDATE OF t SKIP LOCKED) \
                 INSERT INTO {k} AS k (thread_id, owner, expires_at) \
                 SELECT thread_id, $3, now() + make_interval(secs => $4) FROM s \
                 ON CONFLICT (thread_id) DO UPDATE \
                 SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at \
                 WHERE k.expires_at <= now() \
                 RETURNING thread_id"
            ),
            stalled,
            // The statement sees the tables as they were before it, so `old` is the
            // record already there (then the thread is left alone and the insert is
            // not tried); a new one becomes the thread's latest, with the next `seq`.
            put: format!(
                "WITH old AS ( \
                   SELECT s.record, coalesce(s.parent_text, s.parent_id::text) AS parent \
                   FROM {c} s WHERE s.thread_id = $1 AND s.checkpoint_id = {} \
                 ), cas AS ( \
                   INSERT INTO {t} AS t (thread_id, latest_id, seq) \
                   SELECT $1, $2, 1 WHERE NOT EXISTS (SELECT 1 FROM old) \
                   ON CONFLICT (thread_id) DO UPDATE \
                   SET latest_id = EXCLUDED.latest_id, seq = t.seq + 1, updated_at = now() \
                   RETURNING t.seq \
                 ), ins AS ( \
                   {insert} SELECT {values}, cas.seq FROM cas \
                   ON CONFLICT (thread_id, checkpoint_id) DO NOTHING RETURNING 1 \
                 ), del AS ( \
                   DELETE FROM {w} WHERE thread_id = $1 AND checkpoint_id = $3 \
                 ) \
                 SELECT EXISTS (SELECT 1 FROM ins), o.record, o.parent \
                 FROM (SELECT 1) one LEFT JOIN old o ON true",
                key("$2", "$5::text")
            ),
            put_next: format!("{put_next_cte} SELECT EXISTS (SELECT 1 FROM cas) AND EXISTS (SELECT 1 FROM ins)"),
            // In a batch whose `COMMIT` is pipelined: a refusal aborts the transaction.
            put_next_or_raise: format!(
                "{put_next_cte} SELECT CASE WHEN EXISTS (SELECT 1 FROM cas) AND EXISTS (SELECT 1 FROM ins) \
                 THEN true ELSE {prefix}ironloop_refused($1) END"
            ),
            // A batch's chain of records (`$4`–`$6`: ids, parents, texts, and `$13`,
            // `$14` the ids' and parents' `uuid_key`s; each record's
            // parent is the one before it, the first's is `$3`, the last is `$2`) and
            // the writes that outlive the batch (`$7`–`$12`), in one statement: the
            // thread swaps from the first parent to the last record once, the records
            // go in in order (so their `seq`s are in order), the first parent's pending
            // writes go. Anything refused raises, and the statement leaves nothing.
            put_chain: format!(
                "WITH cas AS ( \
                   INSERT INTO {t} AS t (thread_id, latest_id, seq) \
                   VALUES ($1, $2, cardinality($4::text[])) \
                   ON CONFLICT (thread_id) DO UPDATE \
                   SET latest_id = EXCLUDED.latest_id, seq = t.seq + cardinality($4::text[]), \
                     updated_at = now() \
                   WHERE t.latest_id IS NOT DISTINCT FROM $3::text \
                   RETURNING t.seq \
                 ), ins AS ( \
                   {insert} SELECT $1, {}, {}, r.record, {}, {}, \
                     (cas.seq - cardinality($4::text[]) + r.ord)::integer \
                   FROM cas, unnest($4::text[], $5::text[], $6::text[], $13::text[], \
                     $14::text[]) WITH ORDINALITY AS r(id, parent, record, idk, pk, ord) \
                   ORDER BY r.ord \
                   ON CONFLICT (thread_id, checkpoint_id) DO NOTHING RETURNING 1 \
                 ), del AS ( \
                   DELETE FROM {w} WHERE thread_id = $1 AND checkpoint_id = $3 \
                   AND EXISTS (SELECT 1 FROM cas) \
                 ), wr AS ( \
                   INSERT INTO {w} (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
                   SELECT $1, w.checkpoint_id, w.task_id, w.idx, w.node, w.channel, w.value \
                   FROM unnest($7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], \
                     $12::text[]) WITH ORDINALITY AS w(checkpoint_id, task_id, idx, node, \
                     channel, value, ord) \
                   WHERE EXISTS (SELECT 1 FROM cas) ORDER BY w.ord \
                   ON CONFLICT (thread_id, checkpoint_id, task_id, idx) DO NOTHING \
                 ) \
                 SELECT CASE WHEN EXISTS (SELECT 1 FROM cas) \
                   AND (SELECT count(*) FROM ins) = cardinality($4::text[]) \
                   THEN true ELSE {prefix}ironloop_refused($1) END",
                key("r.id", "r.idk"),
                key("r.parent", "r.pk"),
                key_text("r.id", "r.idk"),
                key_text("r.parent", "r.pk")
            ),
            // Why a `put_next` saved nothing: the record under its id, and where the
            // thread is (read after the statement, so it sees what won).
            refused: format!(
                "SELECT s.record, coalesce(s.parent_text, s.parent_id::text), \
                   (SELECT latest_id FROM {t} WHERE thread_id = $1) \
                 FROM (SELECT 1) one \
                 LEFT JOIN {c} s ON s.thread_id = $1 AND s.checkpoint_id = {}",
                id("$2")
            ),
            put_writes: format!(
                "INSERT INTO {w} (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
                 SELECT $1, $2, w.task_id, w.idx, w.node, w.channel, w.value \
                 FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) \
                   WITH ORDINALITY AS w(task_id, idx, node, channel, value, ord) \
                 ORDER BY w.ord \
                 ON CONFLICT (thread_id, checkpoint_id, task_id, idx) DO NOTHING"
            ),
            // The latest id is read first (an InitPlan), so the record is found by
            // its whole primary key whatever the planner's statistics say.
            latest: format!(
                "SELECT {} FROM {c} c WHERE c.thread_id = $1 AND c.checkpoint_id = \
                 (SELECT {} FROM {t} WHERE thread_id = $1)",
                cols("c"),
                id("latest_id")
            ),
            by_id: format!(
                "SELECT {} FROM {c} c WHERE c.thread_id = $1 AND c.checkpoint_id = {}",
                cols("c"),
                id("$2")
            ),
            // UNION (not UNION ALL) ends a corrupt, cyclic chain; `order_chain` puts
            // the records in order and reports the damage.
            chain: chain_query(&c, &id("$2"), "false"),
            chain_from_snapshot: chain_query(
                &c,
                &id("$2"),
                &format!(
                    "(left(record, 3) IN ('{}', '{}', '{}') OR left(record, 12) = '{}')",
                    record::SNAPSHOT_PREFIX_4,
                    record::SNAPSHOT_PREFIX,
                    SNAPSHOT_PREFIX_SEALED,
                    record::SNAPSHOT_PREFIX_V1
                ),
            ),
            // An unknown `before` filters nothing, as in the other savers. The thread's
            // rows are read through the primary key and sorted (no index by `seq`).
            list: format!(
                "SELECT {} FROM {c} c WHERE c.thread_id = $1 AND c.seq < coalesce( \
                   (SELECT seq FROM {c} WHERE thread_id = $1 AND checkpoint_id = {}), \
                   2147483647) \
                 ORDER BY c.seq DESC LIMIT $3",
                cols("c"),
                id("$2")
            ),
            pending: format!(
                "SELECT task_id, idx, node, channel, value FROM {w} \
                 WHERE thread_id = $1 AND checkpoint_id = $2 ORDER BY seq"
            ),
            // The thread and its subgraphs' namespaces (`$2` is their key prefix).
            delete: format!(
                "WITH w AS (DELETE FROM {w} WHERE {this}), \
                   t AS (DELETE FROM {t} WHERE {this}), \
                   k AS (DELETE FROM {k} WHERE {this}) \
                 DELETE FROM {c} WHERE {this}"
            ),
            // Checkpoints `$2` of thread `$1` and their writes; the thread's latest is
            // then the newest left (the statement's subqueries see the rows before
            // its deletes, hence `<> ALL($2)`), its row gone when none is left.
            delete_some: format!(
                "WITH w AS (DELETE FROM {w} WHERE thread_id = $1 AND checkpoint_id = ANY($2)), \
                   keys AS (SELECT {} AS k FROM unnest($2::text[]) x), \
                   d AS (DELETE FROM {c} WHERE thread_id = $1 \
                     AND checkpoint_id IN (SELECT k FROM keys)), \
                   left_ AS (SELECT coalesce(id_text, checkpoint_id::text) AS checkpoint_id \
                     FROM {c} WHERE thread_id = $1 \
                     AND checkpoint_id NOT IN (SELECT k FROM keys) ORDER BY seq DESC LIMIT 1), \
                   gone AS (DELETE FROM {t} WHERE thread_id = $1 \
                     AND NOT EXISTS (SELECT 1 FROM left_)) \
                 UPDATE {t} SET latest_id = (SELECT checkpoint_id FROM left_), updated_at = now() \
                 WHERE thread_id = $1 AND latest_id = ANY($2) AND EXISTS (SELECT 1 FROM left_)",
                id("x")
            ),
            prefix,
        }
    }
}

/// The ancestors of a checkpoint (`$1` thread, `$2` id), up to the root or the first
/// record for which `stop` (an SQL condition on its `record`) holds. UNION (not UNION
/// ALL) ends a corrupt, cyclic chain; `order_chain` puts the records in order and
/// reports the damage.
///
/// Every step of the walk is a lookup by the whole primary key: the parent is read in
/// a `LATERAL` subquery (its `LIMIT` keeps the planner from flattening it into a join),
/// and the rows carry what is returned, so no plan reads the thread's other rows. A
/// prepared statement's generic plan, made while the table was small, would otherwise
/// scan the whole thread at every step of the walk once it has grown (W9 in
/// BENCHMARKS.md).
fn chain_query(c: &str, key: &str, stop: &str) -> String {
    format!(
        "WITH RECURSIVE ancestors(checkpoint_id, parent_id, id_text, parent_text, record, stop) \
         AS ( \
           SELECT checkpoint_id, parent_id, id_text, parent_text, record, {stop} FROM {c} \
           WHERE thread_id = $1 AND checkpoint_id = {key} \
           UNION \
           SELECT p.* FROM ancestors a CROSS JOIN LATERAL ( \
             SELECT checkpoint_id, parent_id, id_text, parent_text, record, {stop} FROM {c} \
             WHERE thread_id = $1 AND checkpoint_id = a.parent_id LIMIT 1 \
           ) p \
           WHERE NOT a.stop \
         ) \
         SELECT coalesce(id_text, checkpoint_id::text), coalesce(parent_text, parent_id::text), \
           record FROM ancestors",
    )
}

/// `name` as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// What every call's task needs.
struct Shared {
    pool: Pool,
    sql: Sql,
    /// `PostgresSaver(host:port/db)`, for messages (never the password).
    name: String,
    pool_size: usize,
    connect_timeout: Duration,
    /// The threads' run leases (see `lease`).
    leases: lease::Leases,
    /// The connections blocking callers drive themselves (see `lane`).
    lanes: lane::Lanes,
    /// How records are stored: with a checksum, or under a key.
    codec: Records,
}

/// The connection a call runs on: a pooled one (its socket on the saver's runtime), or
/// a blocking caller's lane (see `lane`).
// Made once per call and put in an `Arc` at once: its size costs nothing.
#[allow(clippy::large_enum_variant)]
enum Link {
    Pooled(Object),
    Lane(Arc<ClientWrapper>),
}

impl std::ops::Deref for Link {
    type Target = ClientWrapper;

    fn deref(&self) -> &ClientWrapper {
        match self {
            Link::Pooled(o) => o,
            Link::Lane(c) => c,
        }
    }
}

/// A durable [`Checkpointer`] backed by PostgreSQL (see the module documentation).
///
/// ```no_run
/// # async fn demo() -> ironloop::checkpoint::Result<()> {
/// use ironloop::checkpoint::{Checkpointer, PostgresSaver};
/// let saver = PostgresSaver::connect("postgresql://app@db.internal/app").await?;
/// saver.setup().await?; // once per database (idempotent)
/// let latest = saver.get("thread-1", None).await?;
/// # Ok(()) }
/// ```
pub struct PostgresSaver {
    shared: Arc<Shared>,
    runtime: Handle,
    tasks: TaskTracker,
    closed: AtomicBool,
}

impl std::fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("server", &self.shared.name)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl PostgresSaver {
    /// Connects to the server at `url` (`postgresql://user:password@host:port/db?...`,
    /// or the `key=value` form) with the default [`PostgresOptions`], and checks that it
    /// answers. Call [`setup`](Self::setup) once per database before the first run.
    ///
    /// Must be called on a tokio runtime: the saver's connections live on it.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`connect`](Self::connect) with options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            CheckpointError::storage(format!(
                "PostgresSaver: the connection string is not valid ({e}); expected \
                 postgresql://user:password@host:port/database"
            ))
        })?;
        if config.get_application_name().is_none() {
            config.application_name("ironloop");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if options.pool_size == 0 {
            return Err(CheckpointError::storage(
                "PostgresSaver: pool_size must be at least 1",
            ));
        }
        let name = format!("PostgresSaver({})", server_name(&config));
        let tls = tls_connector()
            .map_err(|e| CheckpointError::storage(format!("{name}: cannot set up TLS: {e}")))?;
        let sql = Sql::new(options.schema.as_deref());
        let leases = lease::Leases::new(config.clone(), tls.clone(), sql.prefix.clone());
        let lanes = lane::Lanes::new(config.clone(), tls.clone(), options.pool_size);
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|e| CheckpointError::storage(format!("{name}: cannot make the pool: {e}")))?;
        let runtime = Handle::try_current().map_err(|_| {
            CheckpointError::storage(format!(
                "{name}: connect() must run on a tokio runtime (the connections live on it)"
            ))
        })?;
        let saver = PostgresSaver {
            shared: Arc::new(Shared {
                pool,
                sql,
                name,
                pool_size: options.pool_size,
                connect_timeout: options.connect_timeout,
                leases,
                lanes,
                codec: Records::new(options.key),
            }),
            runtime,
            tasks: TaskTracker::new(),
            closed: AtomicBool::new(false),
        };
        // One connection now, so that a wrong URL or an unreachable server is
        // reported here rather than by the first run.
        saver
            .call("connect", |c, _| async move {
                c.simple_query("").await?;
                Ok(())
            })
            .await?;
        Ok(saver)
    }

    /// Creates the tables, or migrates them to this version's schema; safe to call on
    /// every start, from several workers at once. Fails, changing nothing, when the
    /// database holds a newer schema than this ironloop knows.
    pub async fn setup(&self) -> Result<()> {
        const OP: &str = "set up the tables";
        if self.is_closed() {
            return Err(self.shared.closed(OP));
        }
        let sh = self.shared.clone();
        let task = self.tasks.spawn_on(
            async move {
                let mut c = sh.pool.get().await.map_err(|e| sh.pool_error(OP, e))?;
                match migrate(&mut c, &sh.sql.prefix).await {
                    Ok(newer) => Ok(newer),
                    Err(e) => {
                        drop(Object::take(c));
                        Err(sh.describe(OP, &e))
                    }
                }
            },
            &self.runtime,
        );
        match self.joined(OP, task.await)? {
            None => Ok(()),
            Some(newer) => Err(CheckpointError::storage(format!(
                "{}: the database has checkpoint schema version {newer}, this ironloop knows \
                 version {SCHEMA_VERSION}; upgrade ironloop (every worker) or use another \
                 schema",
                self.shared.name
            ))),
        }
    }

    /// Whether [`close`](Checkpointer::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `PostgresSaver(host:port/database)`: the server, as messages name it.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Runs `f` with a connection and returns its result: on the calling thread, on a
    /// lane, when that thread may block (see [`caller`] and `lane`) and a lane is free;
    /// else with a pooled connection as a task on the saver's runtime, awaited. Errors
    /// become [`CheckpointError`]s that say what failed and what to do. A connection
    /// that failed is not used again.
    async fn call<R, F, Fut>(&self, op: &'static str, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(Arc<Link>, Arc<Shared>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<R, tokio_postgres::Error>> + Send + 'static,
    {
        if self.is_closed() {
            return Err(self.shared.closed(op));
        }
        if caller::may_block() {
            if let Some(lane) = self.shared.lanes.take() {
                return self.call_here(op, lane, f).await;
            }
        }
        let sh = self.shared.clone();
        let task = self.tasks.spawn_on(
            async move {
                let client = sh.pool.get().await.map_err(|e| sh.pool_error(op, e))?;
                let client = Arc::new(Link::Pooled(client));
                let r = f(client.clone(), sh.clone()).await;
                match r {
                    Ok(v) => Ok(v),
                    Err(e) => {
                        if let Ok(Link::Pooled(obj)) = Arc::try_unwrap(client) {
                            drop(Object::take(obj));
                        }
                        Err(sh.describe(op, &e))
                    }
                }
            },
            &self.runtime,
        );
        self.joined(op, task.await)
    }

    /// [`call`](Self::call) driven by this thread on `lane`: no other thread takes
    /// part unless the call is slow (see `lane`). `close()` waits for it as for a task.
    async fn call_here<R, F, Fut>(&self, op: &'static str, mut lane: lane::Lane, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(Arc<Link>, Arc<Shared>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<R, tokio_postgres::Error>> + Send + 'static,
    {
        let tracked = self.tasks.token();
        let sh = self.shared.clone();
        let live = lane.live_client();
        let call = async move {
            let client = match live {
                Some(c) => c,
                None => sh
                    .lanes
                    .connect()
                    .await
                    .map_err(|e| sh.pool_error(op, PoolError::Backend(e)))?,
            };
            match f(Arc::new(Link::Lane(client.clone())), sh.clone()).await {
                Ok(v) => Ok((v, client)),
                // The connection is dropped with the error: the next call opens another.
                Err(e) => Err(sh.describe(op, &e)),
            }
        };
        let sh = self.shared.clone();
        let settle = move |r: Result<(R, Arc<ClientWrapper>)>, mut lane: lane::Lane| {
            drop(tracked);
            let (v, client) = r?;
            lane.keep(client);
            sh.lanes.give_back(lane);
            Ok(v)
        };
        match lane.drive(call, settle) {
            lane::Driven::Done(r) => r,
            lane::Driven::HandedOver(rx) => rx.await.unwrap_or_else(|_| {
                Err(CheckpointError::storage(format!(
                    "{}: cannot {op}: the thread that finishes slow calls could not start",
                    self.shared.name
                )))
            }),
        }
    }

    fn joined<R>(
        &self,
        op: &str,
        r: std::result::Result<Result<R>, tokio::task::JoinError>,
    ) -> Result<R> {
        r.map_err(|e| {
            CheckpointError::storage(format!(
                "{}: cannot {op}: the task ended early ({e}); if the runtime is shutting \
                 down, nothing more can be saved",
                self.shared.name
            ))
        })?
    }

    /// The ancestors of `id`, up to the root or the nearest snapshot, in one query.
    async fn read_chain(
        &self,
        thread_id: &str,
        id: &str,
        from: ChainFrom,
    ) -> Result<Vec<CheckpointRecord>> {
        let (t, target) = (thread_id.to_owned(), id.to_owned());
        let rows: Vec<RecordRow> = self
            .call("read a checkpoint chain", move |c, sh| async move {
                let sql = match from {
                    ChainFrom::Root => &sh.sql.chain,
                    ChainFrom::Snapshot => &sh.sql.chain_from_snapshot,
                };
                let st = c.prepare_cached(sql).await?;
                let rows = c.query(&st, &[&t, &target]).await?;
                Ok(rows.iter().map(record_row).collect())
            })
            .await?;
        let records = self.decode_records(thread_id, rows)?;
        order_chain(&self.shared.name, thread_id, records, id, from)
    }

    fn decode_record(&self, thread_id: &str, row: &RecordRow) -> Result<CheckpointRecord> {
        let sh = &self.shared;
        sh.codec
            .decode(&row.2, &row.0, row.1.as_deref())
            .map_err(|e| match e {
                ReadError::Unreadable(e) => CheckpointError::serialization(format!(
                    "{}: {} of thread {thread_id:?} cannot be read ({e}); it was \
                     written by an incompatible version or modified by hand",
                    sh.name,
                    super::record_name(&row.0)
                )),
                ReadError::Key(m) => CheckpointError::Integrity(format!(
                    "{}: {} of thread {thread_id:?} {m}",
                    sh.name,
                    super::record_name(&row.0)
                )),
            })
    }

    fn decode_records(
        &self,
        thread_id: &str,
        rows: Vec<RecordRow>,
    ) -> Result<Vec<CheckpointRecord>> {
        rows.iter()
            .map(|j| self.decode_record(thread_id, j))
            .collect()
    }

    /// Pending writes as the columns of `put_writes`' arrays, deduplicated.
    fn write_columns(
        &self,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<WriteColumns> {
        let writes = dedupe_writes(&[], writes);
        let mut cols = WriteColumns::default();
        for w in writes {
            let value = self
                .shared
                .codec
                .encode_write(&w.place(checkpoint_id), &w.value)
                .map_err(|e| {
                    CheckpointError::serialization(format!(
                        "{}: cannot serialise the value written to {:?} to JSON: {e}",
                        self.shared.name, w.channel
                    ))
                })?;
            cols.values.push(value);
            cols.tasks.push(w.task_id);
            cols.idxs.push(w.idx);
            cols.nodes.push(w.node);
            cols.channels.push(w.channel);
        }
        Ok(cols)
    }
}

impl Drop for PostgresSaver {
    fn drop(&mut self) {
        // Calls under way keep their connection until they finish.
        self.shared.pool.close();
    }
}

impl Shared {
    fn closed(&self, op: &str) -> CheckpointError {
        CheckpointError::storage(format!(
            "{}: cannot {op}: the PostgresSaver was closed; make a new one to keep using \
             the database",
            self.name
        ))
    }

    fn pool_error(&self, op: &str, e: PoolError) -> CheckpointError {
        match e {
            PoolError::Closed => self.closed(op),
            PoolError::Timeout(_) => CheckpointError::storage(format!(
                "{}: cannot {op}: no connection within {} s: the server does not answer, or \
                 all {} connections of the pool stay busy (raise pool_size)",
                self.name,
                self.connect_timeout.as_secs_f64(),
                self.pool_size
            )),
            PoolError::Backend(e) => CheckpointError::storage(format!(
                "{}: cannot {op}: cannot connect: {}; check that the server runs and \
                 accepts this user, password and database",
                self.name,
                error_text(&e)
            )),
            other => CheckpointError::storage(format!("{}: cannot {op}: {other}", self.name)),
        }
    }

    fn describe(&self, op: &str, e: &tokio_postgres::Error) -> CheckpointError {
        let name = &self.name;
        let detail = error_text(e);
        let code = e.code();
        let is = |states: &[&SqlState]| code.is_some_and(|c| states.contains(&c));
        let lost = e.is_closed()
            || is(&[
                &SqlState::ADMIN_SHUTDOWN,
                &SqlState::CRASH_SHUTDOWN,
                &SqlState::CANNOT_CONNECT_NOW,
                &SqlState::CONNECTION_FAILURE,
                &SqlState::CONNECTION_EXCEPTION,
            ])
            || (e.as_db_error().is_none() && std::error::Error::source(e).is_some());
        let advice = if lost {
            "the connection to the server was lost; the call either completed or left \
             nothing behind. Once the server is reachable, invoke(None, config) continues \
             the thread from its last saved step"
        } else if is(&[&SqlState::UNDEFINED_TABLE]) {
            "the checkpoint tables do not exist; call setup() once (it creates them)"
        } else if is(&[&SqlState::UNDEFINED_COLUMN, &SqlState::UNDEFINED_FUNCTION]) {
            "the checkpoint tables are from an older version; call setup() to migrate them"
        } else if is(&[
            &SqlState::INSUFFICIENT_PRIVILEGE,
            &SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
        ]) {
            "grant the user access to the ironloop_* tables"
        } else if is(&[&SqlState::DISK_FULL, &SqlState::OUT_OF_MEMORY]) {
            "the server is out of space"
        } else {
            ""
        };
        if advice.is_empty() {
            CheckpointError::storage(format!("{name}: cannot {op}: {detail}"))
        } else {
            CheckpointError::storage(format!("{name}: cannot {op}: {detail}: {advice}"))
        }
    }
}

/// A stored record as read: its id, parent and text (see [`record`]).
type RecordRow = (String, Option<String>, String);

/// Reads a [`RecordRow`] from `checkpoint_id, parent_id, record` columns.
fn record_row(r: &tokio_postgres::Row) -> RecordRow {
    (r.get(0), r.get(1), r.get(2))
}

/// `id` when it is a UUID as the engine writes them (lower-case hexadecimal in the
/// 8-4-4-4-12 form, what `ironloop_uuid` stores as the `uuid` itself), else `None`.
fn uuid_key(id: &str) -> Option<String> {
    let b = id.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        });
    ok.then(|| id.to_owned())
}

/// One put of a batch, encoded.
enum Item {
    Record {
        id: String,
        parent: Option<String>,
        json: String,
        next: bool,
        /// `uuid_key` of `id` and of `parent`.
        id_key: Option<String>,
        parent_key: Option<String>,
    },
    Writes {
        checkpoint_id: String,
        columns: WriteColumns,
    },
}

/// Pending writes, column by column (the arrays `put_writes` unnests).
#[derive(Default)]
struct WriteColumns {
    tasks: Vec<String>,
    idxs: Vec<i64>,
    nodes: Vec<String>,
    channels: Vec<String>,
    values: Vec<String>,
}

/// Why a batch saved nothing.
enum Refused {
    /// The thread holds a checkpoint with this id and other content.
    SameId(String),
    /// A `put_next` whose parent is not the thread's latest checkpoint any more.
    Moved {
        expected: Option<String>,
        latest: Option<String>,
    },
}

type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// Each item's statement parameters.
fn batch_params<'a>(t: &'a String, items: &'a [Item]) -> Vec<Vec<Param<'a>>> {
    items
        .iter()
        .map(|item| match item {
            Item::Record {
                id,
                parent,
                json,
                id_key,
                parent_key,
                ..
            } => vec![t as Param<'_>, id, parent, json, id_key, parent_key],
            Item::Writes {
                checkpoint_id,
                columns: w,
            } => vec![
                t as Param<'_>,
                checkpoint_id,
                &w.tasks,
                &w.idxs,
                &w.nodes,
                &w.channels,
                &w.values,
            ],
        })
        .collect()
}

/// A batch of `put_next`s whose records form a chain (each one's parent is the one
/// before it), and pending writes, as the arrays of one `put_chain` statement: what the
/// batch leaves once every item has been saved in order. Each `put_next` drops its
/// parent's pending writes: `put_many` leaves out those a later record of the batch
/// follows (`Put::drop_superseded_writes`), and the statement deletes only those of
/// the first record's parent already stored.
struct Chain<'a> {
    first_parent: Option<&'a str>,
    last: &'a str,
    ids: Vec<&'a str>,
    parents: Vec<Option<&'a str>>,
    records: Vec<&'a str>,
    id_keys: Vec<Option<&'a str>>,
    parent_keys: Vec<Option<&'a str>>,
    w_checkpoints: Vec<&'a str>,
    w_tasks: Vec<&'a str>,
    w_idxs: Vec<i64>,
    w_nodes: Vec<&'a str>,
    w_channels: Vec<&'a str>,
    w_values: Vec<&'a str>,
}

impl<'a> Chain<'a> {
    /// The chain of `items`, or `None` when they are not one (a `put`, a record that
    /// does not follow the one before it, or no record at all).
    fn of(items: &'a [Item]) -> Option<Chain<'a>> {
        let mut ids: Vec<&str> = Vec::new();
        let mut parents = Vec::new();
        let mut records = Vec::new();
        let (mut id_keys, mut parent_keys) = (Vec::new(), Vec::new());
        for item in items {
            match item {
                Item::Record {
                    id,
                    parent,
                    json,
                    next: true,
                    id_key,
                    parent_key,
                } => {
                    id_keys.push(id_key.as_deref());
                    parent_keys.push(parent_key.as_deref());
                    if let Some(prev) = ids.last() {
                        if parent.as_deref() != Some(*prev) {
                            return None;
                        }
                    }
                    ids.push(id);
                    parents.push(parent.as_deref());
                    records.push(json.as_str());
                }
                Item::Record { .. } => return None,
                Item::Writes { .. } => {}
            }
        }
        let (first_parent, last) = (*parents.first()?, *ids.last()?);
        let mut chain = Chain {
            first_parent,
            last,
            ids: Vec::new(),
            parents: Vec::new(),
            records: Vec::new(),
            id_keys,
            parent_keys,
            w_checkpoints: Vec::new(),
            w_tasks: Vec::new(),
            w_idxs: Vec::new(),
            w_nodes: Vec::new(),
            w_channels: Vec::new(),
            w_values: Vec::new(),
        };
        // (Writes that a later record of the batch would delete are not here:
        // `put_many` left them out, see `Put::drop_superseded_writes`.)
        for item in items {
            let Item::Writes {
                checkpoint_id,
                columns: w,
            } = item
            else {
                continue;
            };
            for k in 0..w.tasks.len() {
                chain.w_checkpoints.push(checkpoint_id);
                chain.w_tasks.push(&w.tasks[k]);
                chain.w_idxs.push(w.idxs[k]);
                chain.w_nodes.push(&w.nodes[k]);
                chain.w_channels.push(&w.channels[k]);
                chain.w_values.push(&w.values[k]);
            }
        }
        (chain.ids, chain.parents, chain.records) = (ids, parents, records);
        Some(chain)
    }

    fn params<'b>(&'b self, t: &'b String) -> [Param<'b>; 14] {
        [
            t,
            &self.last,
            &self.first_parent,
            &self.ids,
            &self.parents,
            &self.records,
            &self.w_checkpoints,
            &self.w_tasks,
            &self.w_idxs,
            &self.w_nodes,
            &self.w_channels,
            &self.w_values,
            &self.id_keys,
            &self.parent_keys,
        ]
    }
}

/// Saves `items` of thread `t` in one round trip when nothing is refused: one
/// statement for a single item, or for a batch whose records form a chain (see
/// [`Chain`]: what a run's `"async"` and `"exit"` saves are); for any other batch of
/// `put_next`s and writes, `BEGIN`, the statements and `COMMIT` pipelined
/// (sent together, answered together), a refused `put_next` raising an error that
/// aborts the transaction (the `COMMIT` then rolls it back). A refused batch, or one
/// holding a `put`, goes through [`save_checked`], which says why it was refused.
async fn save_batch(
    c: &ClientWrapper,
    sql: &Sql,
    codec: &Records,
    t: &String,
    items: &[Item],
) -> std::result::Result<Option<Refused>, tokio_postgres::Error> {
    use futures::future::{join_all, FutureExt};
    let pipelined = items.len() > 1
        && items
            .iter()
            .all(|i| matches!(i, Item::Writes { .. } | Item::Record { next: true, .. }));
    if !pipelined {
        return save_checked(c, sql, codec, t, items).await;
    }
    if let Some(chain) = Chain::of(items) {
        // One statement for the whole batch (its own transaction).
        let st = c.prepare_cached(&sql.put_chain).await?;
        return match c.query_one(&st, &chain.params(t)).await {
            Ok(_) => Ok(None),
            // Nothing was saved: find out why, item by item.
            Err(e) if e.code().map(|c| c.code()) == Some(REFUSED_CODE) => {
                save_checked(c, sql, codec, t, items).await
            }
            Err(e) => Err(e),
        };
    }
    let (put_next, put_writes) = (
        c.prepare_cached(&sql.put_next_or_raise).await?,
        c.prepare_cached(&sql.put_writes).await?,
    );
    let params = batch_params(t, items);
    let sent = items.iter().zip(&params).map(|(item, p)| match item {
        Item::Record { .. } => c.query_one(&put_next, p).map(|r| r.map(drop)).boxed(),
        _ => c.execute(&put_writes, p).map(|r| r.map(drop)).boxed(),
    });
    // Polled in order, so sent in order: BEGIN, the statements, COMMIT.
    let (begun, saved, committed) = futures::join!(
        c.batch_execute("BEGIN"),
        join_all(sent),
        c.batch_execute("COMMIT")
    );
    begun?;
    // The first error is the cause (the statements after it fail as the transaction
    // is aborted).
    match saved.into_iter().find_map(|r| r.err()).map_or(Ok(()), Err) {
        // Committed, unless the COMMIT failed (then it is the error).
        Ok(()) => committed.map(|()| None),
        Err(e) if e.code().map(|c| c.code()) == Some(REFUSED_CODE) => {
            // Rolled back (the transaction was aborted): find out why, item by item.
            committed?;
            save_checked(c, sql, codec, t, items).await
        }
        Err(e) => Err(e),
    }
}

/// [`save_batch`] the careful way: one statement for a single item; otherwise
/// `BEGIN` and the statements pipelined (one round trip), each answer checked, then
/// `COMMIT`, or `ROLLBACK` when an item is refused, so that a refused item leaves
/// nothing of the batch.
async fn save_checked(
    c: &ClientWrapper,
    sql: &Sql,
    codec: &Records,
    t: &String,
    items: &[Item],
) -> std::result::Result<Option<Refused>, tokio_postgres::Error> {
    use futures::future::{join_all, BoxFuture, FutureExt};
    let (put, put_next, put_writes) = (
        c.prepare_cached(&sql.put).await?,
        c.prepare_cached(&sql.put_next).await?,
        c.prepare_cached(&sql.put_writes).await?,
    );
    let single = items.len() == 1;
    let begin = (!single).then(|| c.batch_execute("BEGIN"));
    let params = batch_params(t, items);
    let sent: Vec<BoxFuture<'_, std::result::Result<Option<tokio_postgres::Row>, _>>> = items
        .iter()
        .zip(&params)
        .map(|(item, p)| match item {
            Item::Record { next, .. } => {
                let st = if *next { &put_next } else { &put };
                c.query_one(st, p).map(|r| r.map(Some)).boxed()
            }
            Item::Writes { .. } => c.execute(&put_writes, p).map(|r| r.map(|_| None)).boxed(),
        })
        .collect();
    // Polled in order, so sent in order: BEGIN first.
    let (begun, answers) = match begin {
        Some(b) => {
            let (b, a) = futures::join!(b, join_all(sent));
            (b, a)
        }
        None => (Ok(()), join_all(sent).await),
    };
    begun?;
    let mut refused = None;
    for (item, answer) in items.iter().zip(answers) {
        let row = answer?;
        let Item::Record {
            id,
            parent,
            json,
            next,
            ..
        } = item
        else {
            continue;
        };
        let row = row.expect("a record's statement returns a row");
        let (saved, stored, latest) = if *next {
            if row.get::<_, bool>(0) {
                continue;
            }
            let st = c.prepare_cached(&sql.refused).await?;
            let r = c.query_one(&st, &[t, id]).await?;
            (false, stored(&r, 0), r.get::<_, Option<String>>(2))
        } else {
            let (inserted, mut found) = (row.get::<_, bool>(0), stored(&row, 1));
            if !inserted && found.is_none() {
                // Another writer inserted it during this statement: read it now.
                let st = c.prepare_cached(&sql.refused).await?;
                found = stored(&c.query_one(&st, &[t, id]).await?, 0);
            }
            (inserted, found, None)
        };
        match stored {
            _ if saved => {}
            Some((s, p)) if codec.same(id, (&s, p.as_deref()), (json, parent.as_deref())) => {}
            Some(_) => {
                refused = Some(Refused::SameId(id.clone()));
                break;
            }
            None => {
                refused = Some(Refused::Moved {
                    expected: parent.clone(),
                    latest,
                });
                break;
            }
        }
    }
    if !single {
        c.batch_execute(if refused.is_some() {
            "ROLLBACK"
        } else {
            "COMMIT"
        })
        .await?;
    }
    Ok(refused)
}

/// The record stored under an id (its text and parent), from columns `i` and `i + 1`.
fn stored(row: &tokio_postgres::Row, i: usize) -> Option<(String, Option<String>)> {
    let text: Option<String> = row.get(i);
    text.map(|t| (t, row.get(i + 1)))
}

/// Creates or migrates the tables in one transaction; `Some(v)` (and no change) when
/// the database has a newer version `v`.
async fn migrate(
    c: &mut Object,
    prefix: &str,
) -> std::result::Result<Option<i32>, tokio_postgres::Error> {
    let schema = prefix.trim_end_matches('.');
    let tx = c.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SETUP_LOCK])
        .await?;
    if !schema.is_empty() {
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await?;
    }
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {prefix}ironloop_migrations ( \
           version    integer     PRIMARY KEY, \
           applied_at timestamptz NOT NULL DEFAULT now() \
         )"
    ))
    .await?;
    let current: i32 = tx
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {prefix}ironloop_migrations"),
            &[],
        )
        .await?
        .get(0);
    if current > SCHEMA_VERSION {
        return Ok(Some(current));
    }
    for (i, m) in MIGRATIONS.iter().enumerate() {
        let version = i as i32 + 1;
        if version > current {
            tx.batch_execute(&m.replace("{s}", prefix)).await?;
            tx.execute(
                &format!("INSERT INTO {prefix}ironloop_migrations (version) VALUES ($1)"),
                &[&version],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(None)
}

/// The server's own message when there is one (tokio-postgres prints just "db error").
fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{}: {}", db.code().code(), db.message());
            if let Some(d) = db.detail() {
                s.push_str(&format!(" ({d})"));
            }
            s
        }
        None => match std::error::Error::source(e) {
            Some(src) => format!("{e}: {src}"),
            None => e.to_string(),
        },
    }
}

/// `host:port/database` from a connection config.
fn server_name(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

/// rustls with `ring`, checking certificates with the platform's verifier.
fn tls_connector() -> std::result::Result<tokio_postgres_rustls::MakeRustlsConnect, rustls::Error> {
    use rustls_platform_verifier::ConfigVerifierExt;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ClientConfig::with_platform_verifier()?;
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

#[async_trait]
impl Checkpointer for PostgresSaver {
    async fn put_many(&self, thread_id: &str, mut puts: Vec<Put>) -> Result<()> {
        Put::drop_superseded_writes(&mut puts);
        let items = puts
            .into_iter()
            .map(|p| match p {
                Put::Record { record, next } => Ok(Item::Record {
                    json: self.shared.codec.encode(&record).map_err(|e| {
                        CheckpointError::serialization(format!(
                            "{}: cannot serialise the checkpoint record to JSON: {e}",
                            self.shared.name
                        ))
                    })?,
                    id_key: uuid_key(&record.id),
                    parent_key: record.parent_id.as_deref().and_then(uuid_key),
                    id: record.id,
                    parent: record.parent_id,
                    next,
                }),
                Put::Writes {
                    checkpoint_id,
                    writes,
                } => Ok(Item::Writes {
                    columns: self.write_columns(&checkpoint_id, writes)?,
                    checkpoint_id,
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        if items.is_empty() {
            return Ok(());
        }
        let t = thread_id.to_owned();
        let failed = self
            .call("save a checkpoint", move |c, sh| async move {
                save_batch(&c, &sh.sql, &sh.codec, &t, &items).await
            })
            .await?;
        match failed {
            None => Ok(()),
            Some(Refused::SameId(id)) => Err(same_id_conflict(thread_id, &id)),
            Some(Refused::Moved { expected, latest }) => Err(advanced_conflict(
                thread_id,
                expected.as_deref(),
                latest.as_deref(),
            )),
        }
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<()> {
        self.put_many(
            thread_id,
            vec![Put::Writes {
                checkpoint_id: checkpoint_id.to_owned(),
                writes,
            }],
        )
        .await
    }

    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>> {
        let t = thread_id.to_owned();
        let id = id.map(str::to_owned);
        let row: Option<RecordRow> = self
            .call("read a checkpoint", move |c, sh| async move {
                let row = match id {
                    Some(id) => {
                        let st = c.prepare_cached(&sh.sql.by_id).await?;
                        c.query_opt(&st, &[&t, &id]).await?
                    }
                    None => {
                        let st = c.prepare_cached(&sh.sql.latest).await?;
                        c.query_opt(&st, &[&t]).await?
                    }
                };
                Ok(row.as_ref().map(record_row))
            })
            .await?;
        row.map(|r| self.decode_record(thread_id, &r)).transpose()
    }

    async fn chain(&self, thread_id: &str, id: &str) -> Result<Vec<CheckpointRecord>> {
        self.read_chain(thread_id, id, ChainFrom::Root).await
    }

    async fn chain_from_snapshot(
        &self,
        thread_id: &str,
        id: &str,
    ) -> Result<Vec<CheckpointRecord>> {
        self.read_chain(thread_id, id, ChainFrom::Snapshot).await
    }

    async fn list(
        &self,
        thread_id: &str,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<Vec<CheckpointRecord>> {
        let t = thread_id.to_owned();
        let before = before.map(str::to_owned);
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows: Vec<RecordRow> = self
            .call("list checkpoints", move |c, sh| async move {
                let st = c.prepare_cached(&sh.sql.list).await?;
                let rows = c.query(&st, &[&t, &before, &limit]).await?;
                Ok(rows.iter().map(record_row).collect())
            })
            .await?;
        self.decode_records(thread_id, rows)
    }

    async fn pending_writes(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Vec<PendingWrite>> {
        let (t, cid) = (thread_id.to_owned(), checkpoint_id.to_owned());
        let rows: Vec<WriteRow> = self
            .call("read pending writes", move |c, sh| async move {
                let st = c.prepare_cached(&sh.sql.pending).await?;
                let rows = c.query(&st, &[&t, &cid]).await?;
                Ok(rows
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                    .collect())
            })
            .await?;
        writes_from_rows(
            &self.shared.name,
            &self.shared.codec,
            thread_id,
            checkpoint_id,
            rows,
        )
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        let (t, ns) = (thread_id.to_owned(), super::ns_prefix(thread_id));
        self.call("delete a thread", move |c, sh| async move {
            let st = c.prepare_cached(&sh.sql.delete).await?;
            c.execute(&st, &[&t, &ns]).await?;
            Ok(())
        })
        .await
    }

    async fn delete_checkpoints(&self, thread_id: &str, ids: Vec<String>) -> Result<()> {
        let t = thread_id.to_owned();
        self.call("delete checkpoints", move |c, sh| async move {
            let st = c.prepare_cached(&sh.sql.delete_some).await?;
            c.execute(&st, &[&t, &ids]).await?;
            Ok(())
        })
        .await
    }

    async fn list_stalled(
        &self,
        stale_after: Duration,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        let secs = stale_after.as_secs_f64();
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        self.call("list stalled threads", move |c, sh| async move {
            let st = c.prepare_cached(&sh.sql.stalled).await?;
            let rows = c.query(&st, &[&secs, &limit]).await?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    async fn claim_stalled(
        &self,
        owner: &str,
        stale_after: Duration,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<String>> {
        check_claim(owner, stale_after, lease)?;
        let (secs, lease) = (stale_after.as_secs_f64(), lease.as_secs_f64());
        let limit = Some(i64::try_from(limit).unwrap_or(i64::MAX));
        let owner = owner.to_owned();
        self.call("claim stalled threads", move |c, sh| async move {
            let st = c.prepare_cached(&sh.sql.claim).await?;
            let rows = c.query(&st, &[&secs, &limit, &owner, &lease]).await?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    async fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.tasks.close();
        self.tasks.wait().await;
        self.shared.pool.close();
        self.shared.lanes.close();
        self.shared.leases.close().await;
        Ok(())
    }

    async fn try_lease(&self, thread_id: &str) -> Result<Option<super::RunLease>> {
        const OP: &str = "take a thread's run lease";
        if self.is_closed() {
            return Err(self.shared.closed(OP));
        }
        let (sh, t) = (self.shared.clone(), thread_id.to_owned());
        let task = self.tasks.spawn_on(
            async move {
                sh.leases
                    .try_take(&t)
                    .await
                    .map_err(|e| sh.describe(OP, &e))
            },
            &self.runtime,
        );
        Ok(self.joined(OP, task.await)?.map(super::RunLease::new))
    }

    async fn ask_stop(
        &self,
        thread_id: &str,
        ask: super::StopAsk,
    ) -> Result<Option<super::AskGuard>> {
        let payload = lease::ask_payload(&self.shared.sql.prefix, thread_id, ask);
        self.call("ask a run to stop", move |c, _| async move {
            let st = c.prepare_cached("SELECT pg_notify($1, $2)").await?;
            c.query_one(&st, &[&lease::CHANNEL, &payload]).await?;
            Ok(None)
        })
        .await
    }
}
