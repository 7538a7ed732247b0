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

mod batch;
mod checkpointer;
mod lane;
mod lease;
mod saver;
mod schema;
mod sql;

pub use saver::{PostgresOptions, PostgresSaver};

/// The schema version this ironloop writes (the last of `schema::MIGRATIONS`).
pub const SCHEMA_VERSION: i32 = 6;
