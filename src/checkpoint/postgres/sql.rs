//! The statements, with the schema's prefix in the table names.

use super::schema::quote_ident;
use crate::checkpoint::record;
use crate::checkpoint::seal::SNAPSHOT_PREFIX_SEALED;
use crate::checkpoint::stalled::awaits_answer_sql;

/// The statements, with the schema's prefix in the table names.
#[derive(Default)]
pub(super) struct Sql {
    pub(super) prefix: String,
    pub(super) put: String,
    pub(super) put_next: String,
    /// `put_next` that raises [`REFUSED_CODE`] instead of answering `false`.
    pub(super) put_next_or_raise: String,
    /// A batch's chain of `put_next`s and its writes, as one statement (`save_chain`).
    pub(super) put_chain: String,
    pub(super) refused: String,
    pub(super) put_writes: String,
    pub(super) latest: String,
    pub(super) by_id: String,
    pub(super) chain: String,
    /// `chain`, stopped at the nearest record holding a snapshot.
    pub(super) chain_from_snapshot: String,
    pub(super) list: String,
    pub(super) pending: String,
    pub(super) delete: String,
    pub(super) delete_some: String,
    /// Every key with checkpoints (`Checkpointer::thread_keys`).
    pub(super) thread_keys: String,
    pub(super) stalled: String,
    pub(super) claim: String,
}

/// The schema's table names and the SQL pieces every statement builds on.
struct Names {
    prefix: String,
    /// The checkpoints, writes, threads and claims tables.
    c: String,
    w: String,
    t: String,
    k: String,
}

impl Names {
    fn new(schema: Option<&str>) -> Names {
        let prefix = match schema {
            Some(s) => format!("{}.", quote_ident(s)),
            None => String::new(),
        };
        Names {
            c: format!("{prefix}ironloop_checkpoints"),
            w: format!("{prefix}ironloop_writes"),
            t: format!("{prefix}ironloop_threads"),
            k: format!("{prefix}ironloop_claims"),
            prefix,
        }
    }

    /// Ids are stored as `uuid`s, the text kept beside only when it is not one
    /// (migration 5); `id(x)` is the key of the text id `x`.
    fn id(&self, x: &str) -> String {
        format!("{}ironloop_uuid({x})", self.prefix)
    }

    fn id_text(&self, x: &str) -> String {
        format!("{}ironloop_id_text({x})", self.prefix)
    }

    /// A stored record as the saver reads it: id, parent, text.
    fn cols(a: &str) -> String {
        format!(
            "coalesce({a}.id_text, {a}.checkpoint_id::text), \
             coalesce({a}.parent_text, {a}.parent_id::text), {a}.record"
        )
    }

    /// The saves pass, beside each id, the id again when it is a UUID (`uuid_key`),
    /// else NULL: the key is then a cast, and the functions (what a step's statement
    /// spent most of its time on, see BENCHMARKS.md) run only for other ids.
    fn key(&self, x: &str, k: &str) -> String {
        format!("coalesce({k}::uuid, {})", self.id(x))
    }

    fn key_text(&self, x: &str, k: &str) -> String {
        format!("CASE WHEN {k} IS NULL THEN {} END", self.id_text(x))
    }

    /// The head of every insert of a record.
    fn insert(&self) -> String {
        format!(
            "INSERT INTO {} (thread_id, checkpoint_id, parent_id, record, id_text, parent_text, \
             seq)",
            self.c
        )
    }

    /// The values of one record's insert (`$1` thread, `$2` id, `$3` parent, `$4` text,
    /// `$5`, `$6` the id's and the parent's `uuid_key`).
    fn values(&self) -> String {
        format!(
            "$1, {}, {}, $4, {}, {}",
            self.key("$2", "$5::text"),
            self.key("$3::text", "$6::text"),
            self.key_text("$2", "$5::text"),
            self.key_text("$3::text", "$6::text")
        )
    }
}

impl Sql {
    pub(super) fn new(schema: Option<&str>) -> Sql {
        let n = Names::new(schema);
        let mut sql = Sql::default();
        recovery(&n, &mut sql);
        swaps(&n, &mut sql);
        sql.put_chain = put_chain(&n);
        sql.put_writes = put_writes(&n);
        reads(&n, &mut sql);
        deletes(&n, &mut sql);
        sql.prefix = n.prefix;
        sql
    }
}

/// The stalled threads (`stalled`) and the claim on them (`claim`).
fn recovery(n: &Names, sql: &mut Sql) {
    let Names { c, w, t, k, .. } = n;
    let id = |x: &str| n.id(x);
    // The stalled threads, idle longest first (`$1`: stale_after in seconds, `$2`:
    // the limit, NULL for none); subgraphs' namespaces (keys with U+001F) are
    // resumed through their thread, not listed.
    sql.stalled = format!(
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
        awaits_answer_sql(w, "t.thread_id", "t.latest_id"),
        latest = id("t.latest_id"),
    );
    let stalled = &sql.stalled;
    // The threads' rows are locked (those another claimer or a saving run
    // holds are skipped), and a claim that still lives is never replaced (the
    // upsert's condition is checked on the row's latest version): of two
    // claimers, exactly one gets each thread.
    sql.claim = format!(
        "WITH s AS ({stalled} FOR UPDATE OF t SKIP LOCKED) \
         INSERT INTO {k} AS k (thread_id, owner, expires_at) \
         SELECT thread_id, $3, now() + make_interval(secs => $4) FROM s \
         ON CONFLICT (thread_id) DO UPDATE \
         SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at \
         WHERE k.expires_at <= now() \
         RETURNING thread_id"
    );
}

/// The saves of one record: `put`, `put_next` (compare-and-swap on the thread's
/// latest), `put_next_or_raise` and `refused` (why a `put_next` saved nothing).
fn swaps(n: &Names, sql: &mut Sql) {
    let Names {
        c, w, t, prefix, ..
    } = n;
    let (insert, values) = (n.insert(), n.values());
    let (key, id) = (|x: &str, k: &str| n.key(x, k), |x: &str| n.id(x));
    let kept = crate::checkpoint::dropped_writes_sql();
    // The swap decides: the record goes in (and the parent's pending writes go) only
    // if the thread was still at the parent. Only `true` (swapped and inserted) is
    // the common case: anything else reads `refused`.
    // The swap also counts the thread's records: the new one's `seq` (migration 6).
    // Once the swap (`cas`) took: the record goes in with the `seq` it counted, and
    // the parent's pending writes go (what `put` and `put_next` both do).
    let ins_del = format!(
        "ins AS ( \
           {insert} SELECT {values}, cas.seq FROM cas \
           ON CONFLICT (thread_id, checkpoint_id) DO NOTHING RETURNING 1 \
         ), del AS ( \
           DELETE FROM {w} WHERE thread_id = $1 AND checkpoint_id = $3 AND {kept}"
    );
    let put_next_cte = format!(
        "WITH cas AS ( \
               INSERT INTO {t} AS t (thread_id, latest_id, seq) VALUES ($1, $2, 1) \
               ON CONFLICT (thread_id) DO UPDATE \
               SET latest_id = EXCLUDED.latest_id, seq = t.seq + 1, updated_at = now() \
               WHERE t.latest_id IS NOT DISTINCT FROM $3::text \
               RETURNING t.seq \
             ), {ins_del} AND EXISTS (SELECT 1 FROM cas) \
             )"
    );
    // The statement sees the tables as they were before it, so `old` is the
    // record already there (then the thread is left alone and the insert is
    // not tried); a new one becomes the thread's latest, with the next `seq`.
    sql.put = format!(
        "WITH old AS ( \
           SELECT s.record, coalesce(s.parent_text, s.parent_id::text) AS parent \
           FROM {c} s WHERE s.thread_id = $1 AND s.checkpoint_id = {} \
         ), cas AS ( \
           INSERT INTO {t} AS t (thread_id, latest_id, seq) \
           SELECT $1, $2, 1 WHERE NOT EXISTS (SELECT 1 FROM old) \
           ON CONFLICT (thread_id) DO UPDATE \
           SET latest_id = EXCLUDED.latest_id, seq = t.seq + 1, updated_at = now() \
           RETURNING t.seq \
         ), {ins_del} \
         ) \
         SELECT EXISTS (SELECT 1 FROM ins), o.record, o.parent \
         FROM (SELECT 1) one LEFT JOIN old o ON true",
        key("$2", "$5::text")
    );
    sql.put_next =
        format!("{put_next_cte} SELECT EXISTS (SELECT 1 FROM cas) AND EXISTS (SELECT 1 FROM ins)");
    // In a batch whose `COMMIT` is pipelined: a refusal aborts the transaction.
    sql.put_next_or_raise = format!(
        "{put_next_cte} SELECT CASE WHEN EXISTS (SELECT 1 FROM cas) AND EXISTS (SELECT 1 FROM ins) \
         THEN true ELSE {prefix}ironloop_refused($1) END"
    );
    // Why a `put_next` saved nothing: the record under its id, and where the
    // thread is (read after the statement, so it sees what won).
    sql.refused = format!(
        "SELECT s.record, coalesce(s.parent_text, s.parent_id::text), \
           (SELECT latest_id FROM {t} WHERE thread_id = $1) \
         FROM (SELECT 1) one \
         LEFT JOIN {c} s ON s.thread_id = $1 AND s.checkpoint_id = {}",
        id("$2")
    );
}

/// A batch's chain of records and its writes, as one statement (`put_chain`).
fn put_chain(n: &Names) -> String {
    let Names { t, w, prefix, .. } = n;
    let insert = n.insert();
    let key = |x: &str, k: &str| n.key(x, k);
    let key_text = |x: &str, k: &str| n.key_text(x, k);
    let kept = crate::checkpoint::dropped_writes_sql();
    // A batch's chain of records (`$4`–`$6`: ids, parents, texts, and `$13`,
    // `$14` the ids' and parents' `uuid_key`s; each record's
    // parent is the one before it, the first's is `$3`, the last is `$2`) and
    // the writes that outlive the batch (`$7`–`$12`), in one statement: the
    // thread swaps from the first parent to the last record once, the records
    // go in in order (so their `seq`s are in order), the first parent's pending
    // writes go. Anything refused raises, and the statement leaves nothing.
    format!(
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
           DELETE FROM {w} WHERE thread_id = $1 AND checkpoint_id = $3 AND {kept} \
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
    )
}

/// The pending writes of one checkpoint, in one statement (`put_writes`).
fn put_writes(n: &Names) -> String {
    let w = &n.w;
    format!(
        "INSERT INTO {w} (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
         SELECT $1, $2, w.task_id, w.idx, w.node, w.channel, w.value \
         FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) \
           WITH ORDINALITY AS w(task_id, idx, node, channel, value, ord) \
         ORDER BY w.ord \
         ON CONFLICT (thread_id, checkpoint_id, task_id, idx) DO NOTHING"
    )
}

/// The reads: `latest`, `by_id`, `chain`, `chain_from_snapshot`, `list`, `pending`.
fn reads(n: &Names, sql: &mut Sql) {
    let Names { c, w, t, .. } = n;
    let (cols, id) = (Names::cols, |x: &str| n.id(x));
    // The latest id is read first (an InitPlan), so the record is found by
    // its whole primary key whatever the planner's statistics say.
    sql.latest = format!(
        "SELECT {} FROM {c} c WHERE c.thread_id = $1 AND c.checkpoint_id = \
         (SELECT {} FROM {t} WHERE thread_id = $1)",
        cols("c"),
        id("latest_id")
    );
    sql.by_id = format!(
        "SELECT {} FROM {c} c WHERE c.thread_id = $1 AND c.checkpoint_id = {}",
        cols("c"),
        id("$2")
    );
    // UNION (not UNION ALL) ends a corrupt, cyclic chain; `order_chain` puts
    // the records in order and reports the damage.
    sql.chain = chain_query(c, &id("$2"), "false");
    sql.chain_from_snapshot = chain_query(
        c,
        &id("$2"),
        &format!(
            "(left(record, 3) IN ('{}', '{}', '{}', '{}') OR left(record, 12) = '{}')",
            record::SNAPSHOT_PREFIX_4,
            record::SNAPSHOT_PREFIX_5,
            record::SNAPSHOT_PREFIX,
            SNAPSHOT_PREFIX_SEALED,
            record::SNAPSHOT_PREFIX_V1
        ),
    );
    // An unknown `before` filters nothing, as in the other savers. The thread's
    // rows are read through the primary key and sorted (no index by `seq`).
    sql.list = format!(
        "SELECT {} FROM {c} c WHERE c.thread_id = $1 AND c.seq < coalesce( \
           (SELECT seq FROM {c} WHERE thread_id = $1 AND checkpoint_id = {}), \
           2147483647) \
         ORDER BY c.seq DESC LIMIT $3",
        cols("c"),
        id("$2")
    );
    sql.pending = format!(
        "SELECT task_id, idx, node, channel, value FROM {w} \
         WHERE thread_id = $1 AND checkpoint_id = $2 ORDER BY seq"
    );
}

/// The deletes: a thread with its namespaces (`delete`), some of its checkpoints
/// (`delete_some`).
fn deletes(n: &Names, sql: &mut Sql) {
    let Names { c, w, t, k, .. } = n;
    let this = "(thread_id = $1 OR starts_with(thread_id, $2))";
    let id = |x: &str| n.id(x);
    // The thread and its subgraphs' namespaces (`$2` is their key prefix).
    sql.thread_keys = format!("SELECT DISTINCT thread_id FROM {c}");
    sql.delete = format!(
        "WITH w AS (DELETE FROM {w} WHERE {this}), \
           t AS (DELETE FROM {t} WHERE {this}), \
           k AS (DELETE FROM {k} WHERE {this}) \
         DELETE FROM {c} WHERE {this}"
    );
    // Checkpoints `$2` of thread `$1` and their writes; the thread's latest is
    // then the newest left (the statement's subqueries see the rows before
    // its deletes, hence `<> ALL($2)`), its row gone when none is left.
    sql.delete_some = format!(
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
    );
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
pub(super) fn chain_query(c: &str, key: &str, stop: &str) -> String {
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
