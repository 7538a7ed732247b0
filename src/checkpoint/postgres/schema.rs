//! The tables' migrations, in order, and applying them under the setup lock.

use super::SCHEMA_VERSION;
use deadpool_postgres::Object;

/// The migrations, in order: `MIGRATIONS[i]` takes the schema to version `i + 1`.
/// `{s}` stands for the schema prefix (`"name".` or nothing).
pub(super) const MIGRATIONS: &[&str] = &[
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
pub(super) const REFUSED_CODE: &str = "IL409";

/// The key of the advisory lock that serialises `setup` calls.
pub(super) const SETUP_LOCK: i64 = 0x6972_6f6e_6c6f_6f70; // "ironloop"
/// `name` as a quoted SQL identifier.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
/// Creates or migrates the tables in one transaction; `Some(v)` (and no change) when
/// the database has a newer version `v`.
pub(super) async fn migrate(
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
