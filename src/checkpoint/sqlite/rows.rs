//! The statements on the tables: reading records and writes, finding a checkpoint by
//! id, saving a record and its thread's pending writes.

use super::schema::{setup_error, SPAN};
use super::tips::{Tip, Tips};
use crate::checkpoint::WriteRow;
use rusqlite::{params, Connection, OptionalExtension};

/// A stored record as read: its id, parent and text (see [`record`]).
pub(super) use crate::checkpoint::RecordRow;

/// Reads a [`RecordRow`] from `checkpoint_id, parent_id, record` columns.
pub(super) fn record_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecordRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

/// The record at `seq`.
pub(super) fn read_row(conn: &Connection, seq: i64) -> rusqlite::Result<RecordRow> {
    conn.prepare_cached("SELECT checkpoint_id, parent_id, record FROM checkpoints WHERE seq = ?1")?
        .query_row([seq], record_row)
}

/// The row of the thread's checkpoint `id`, or of its latest when `id` is `None`.
pub(super) fn read_record_at(
    conn: &Connection,
    thread_id: &str,
    id: Option<&str>,
) -> rusqlite::Result<Option<RecordRow>> {
    let Some((no, last)) = thread_latest(conn, thread_id)? else {
        return Ok(None);
    };
    let seq = match id {
        Some(id) => find(conn, no, last.as_ref(), id)?,
        None => last.map(|l| l.seq),
    };
    seq.map(|seq| read_row(conn, seq)).transpose()
}

/// The pending writes saved against `checkpoint_id`, in the order they were saved.
pub(super) fn read_writes(
    conn: &Connection,
    thread_id: &str,
    checkpoint_id: &str,
) -> rusqlite::Result<Vec<WriteRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, idx, node, channel, value FROM writes \
         WHERE thread_id = ?1 AND checkpoint_id = ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![thread_id, checkpoint_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })?;
    rows.collect()
}

/// What saving a record found.
pub(super) enum Next {
    Saved,
    /// A record with that id was there already (its parent and text).
    Stored(Option<String>, String),
    /// The thread's latest checkpoint is not the record's parent (`put_next`).
    Moved(Option<String>),
}

/// One put of a batch, encoded, ready for the SQLite thread.
pub(super) enum Row {
    Record {
        id: String,
        parent_id: Option<String>,
        json: String,
        next: bool,
    },
    Writes {
        checkpoint_id: String,
        writes: Vec<WriteRow>,
    },
}

/// The thread's number in `threads`, if it has one.
pub(super) fn thread_no(conn: &Connection, t: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT no FROM threads WHERE thread_id = ?1")?
        .query_row([t], |r| r.get(0))
        .optional()
}

/// A thread's latest checkpoint: its `seq`, id and sort key (the greatest of the
/// thread's keys: `sortkey` is never less than the key of an earlier row).
pub(super) struct Latest {
    pub(super) seq: i64,
    pub(super) id: String,
    pub(super) key: String,
}

pub(super) fn latest(conn: &Connection, no: i64) -> rusqlite::Result<Option<Latest>> {
    conn.prepare_cached(
        "SELECT seq, checkpoint_id, coalesce(sortkey, checkpoint_id) FROM checkpoints \
         WHERE seq > ?1 AND seq < ?2 ORDER BY seq DESC LIMIT 1",
    )?
    .query_row(params![no * SPAN, (no + 1) * SPAN], |r| {
        Ok(Latest {
            seq: r.get(0)?,
            id: r.get(1)?,
            key: r.get(2)?,
        })
    })
    .optional()
}

/// Thread `t`'s number and latest checkpoint, in one statement ([`thread_no`] then
/// [`latest`]): every step and every load starts with them.
pub(super) fn thread_latest(
    conn: &Connection,
    t: &str,
) -> rusqlite::Result<Option<(i64, Option<Latest>)>> {
    conn.prepare_cached(
        "SELECT t.no, c.seq, c.checkpoint_id, coalesce(c.sortkey, c.checkpoint_id) \
         FROM threads t LEFT JOIN checkpoints c ON c.seq = ( \
             SELECT seq FROM checkpoints WHERE seq > t.no * ?2 AND seq < (t.no + 1) * ?2 \
             ORDER BY seq DESC LIMIT 1) \
         WHERE t.thread_id = ?1",
    )?
    .query_row(params![t, SPAN], |r| {
        let last = match r.get::<_, Option<i64>>(1)? {
            Some(seq) => Some(Latest {
                seq,
                id: r.get(2)?,
                key: r.get(3)?,
            }),
            None => None,
        };
        Ok((r.get(0)?, last))
    })
    .optional()
}

/// The `seq` of checkpoint `id` of thread `no` (whose latest is `latest`).
///
/// A record whose id was greater than every key before it (ironloop's ids are UUIDs
/// of version 7: they grow with time) is stored with no `sortkey`: the thread's rows
/// are in the order of their ids, and a binary search over `seq` finds it, reading
/// about log2(n) rows and writing no index. Any other record (an id from elsewhere, a
/// clock that went back, a file of version 3) has a `sortkey` (the greatest key before
/// it, so that the keys never decrease) and is found through the partial index
/// `checkpoints_unordered`.
pub(super) fn find(
    conn: &Connection,
    no: i64,
    latest: Option<&Latest>,
    id: &str,
) -> rusqlite::Result<Option<i64>> {
    let Some(latest) = latest else {
        return Ok(None);
    };
    if latest.id == id {
        return Ok(Some(latest.seq));
    }
    let unordered: Option<i64> = conn
        .prepare_cached(
            "SELECT seq FROM checkpoints WHERE checkpoint_id = ?1 AND sortkey IS NOT NULL \
             AND +seq > ?2 AND +seq < ?3 LIMIT 1",
        )?
        .query_row(params![id, no * SPAN, (no + 1) * SPAN], |r| r.get(0))
        .optional()?;
    if unordered.is_some() || id > latest.key.as_str() {
        return Ok(unordered);
    }
    // The first row whose key is at least `id`, among the rows in [lo, hi).
    let mut probe = conn.prepare_cached(
        "SELECT seq, coalesce(sortkey, checkpoint_id), sortkey IS NULL FROM checkpoints \
         WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT 1",
    )?;
    let (mut lo, mut hi) = (no * SPAN + 1, latest.seq + 1);
    let mut first: Option<(i64, String, bool)> = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let row: Option<(i64, String, bool)> = probe
            .query_row(params![mid, hi], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        match row {
            Some((seq, key, _)) if key.as_str() < id => lo = seq + 1,
            found => {
                if found.is_some() {
                    first = found;
                }
                hi = mid;
            }
        }
    }
    Ok(first.and_then(|(seq, key, ordered)| (ordered && key == id).then_some(seq)))
}

/// Saves a record in `tx` (a connection inside a write transaction) as `put` does (`put_next` when `next`: only if the thread's
/// latest checkpoint is its parent); the parent's pending writes go with it.
///
/// The common case, a run's next step, writes one b-tree: the record's row, at the
/// end of its thread's `seq`s; its id (greater than the thread's keys) and its parent
/// (the latest) need no index entry. When `tips` knows where the thread ended, that
/// case is a check and the insert (see [`tips`]).
pub(super) fn save_record(
    tx: &Connection,
    tips: &Tips,
    t: &str,
    id: &str,
    parent_id: &Option<String>,
    json: &str,
    next: bool,
) -> rusqlite::Result<Next> {
    if tips.append(tx, t, id, parent_id.as_deref(), json)? {
        return Ok(Next::Saved);
    }
    let (no, last) = match thread_latest(tx, t)? {
        Some(found) => found,
        None => {
            tx.prepare_cached("INSERT INTO threads (thread_id) VALUES (?1)")?
                .execute([t])?;
            (tx.last_insert_rowid(), None)
        }
    };
    if let Some(seq) = find(tx, no, last.as_ref(), id)? {
        let (parent, text) = tx
            .prepare_cached("SELECT parent_id, record FROM checkpoints WHERE seq = ?1")?
            .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))?;
        return Ok(Next::Stored(parent, text));
    }
    let latest_id = last.as_ref().map(|l| l.id.as_str());
    if next && latest_id != parent_id.as_deref() {
        return Ok(Next::Moved(latest_id.map(str::to_owned)));
    }
    let parent_seq = match (parent_id, &last) {
        (Some(p), Some(l)) if *p == l.id => Some(l.seq),
        (Some(p), _) => find(tx, no, last.as_ref(), p)?,
        (None, _) => None,
    };
    let seq = last.as_ref().map_or(no * SPAN, |l| l.seq) + 1;
    if seq >= (no + 1) * SPAN {
        return Err(setup_error(format!(
            "thread {t:?} has {} checkpoints, the most one thread can hold; delete some \
             (delete_checkpoints) or start a new thread",
            SPAN - 1
        )));
    }
    // `None`: the id is greater than every key of the thread (see `find`).
    let sortkey = match &last {
        Some(l) if id <= l.key.as_str() => Some(l.key.as_str()),
        _ => None,
    };
    tx.prepare_cached(
        "INSERT INTO checkpoints (seq, checkpoint_id, parent_id, parent_seq, sortkey, record) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![seq, id, parent_id, parent_seq, sortkey, json])?;
    // Records put before their parent (an import in any order) now have it.
    tx.prepare_cached(
        "UPDATE checkpoints SET parent_seq = ?1 WHERE parent_id = ?2 \
         AND parent_seq IS NULL AND parent_id IS NOT NULL AND +seq > ?3 AND +seq < ?4",
    )?
    .execute(params![seq, id, no * SPAN, (no + 1) * SPAN])?;
    delete_parent_writes(tx, t, parent_id.as_deref())?;
    let key = sortkey.unwrap_or(id).to_owned();
    tips.set(
        t,
        Tip {
            no,
            seq,
            id: id.to_owned(),
            key,
        },
    );
    Ok(Next::Saved)
}

/// A new checkpoint's parent has run: its pending writes go.
pub(super) fn delete_parent_writes(
    tx: &Connection,
    t: &str,
    parent_id: Option<&str>,
) -> rusqlite::Result<()> {
    if let Some(parent) = parent_id {
        let sql = format!(
            "DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id = ?2 AND {}",
            crate::checkpoint::dropped_writes_sql()
        );
        tx.prepare_cached(&sql)?.execute(params![t, parent])?;
    }
    Ok(())
}

/// Inserts pending writes in `tx`, ignoring those whose `(task_id, idx)` is stored.
pub(super) fn insert_writes(
    tx: &Connection,
    t: &str,
    checkpoint_id: &str,
    rows: &[WriteRow],
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO writes \
         (thread_id, checkpoint_id, task_id, idx, node, channel, value) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (thread_id, checkpoint_id, task_id, idx) DO NOTHING",
    )?;
    for (task_id, idx, node, channel, value) in rows {
        stmt.execute(params![
            t,
            checkpoint_id,
            task_id,
            idx,
            node,
            channel,
            value
        ])?;
    }
    Ok(())
}
