//! A run's next step in two statements: the saver remembers where each thread ended.
//!
//! Saving a record the general way ([`super::save_record`]) reads the thread's number
//! and latest checkpoint, looks for the id among the thread's unordered rows, inserts
//! the row, adopts rows that named it as their parent before it existed, and deletes
//! its parent's pending writes: five statements, where SQLite's per-statement cost
//! (bind, step, reset) was about a fifth of a durable W4 step (BENCHMARKS.md). Most
//! saves are a run's next step on the thread this saver wrote last: the parent is the
//! latest checkpoint the saver itself put there, the id is new and greater than every
//! key of the thread and no row waits for it.
//!
//! So the saver keeps, per thread, the tip it last saw ([`Tip`]), and such a save is
//! one query that checks, inside the write transaction, every fact the tip stands for
//! (the thread's number, the tip's row, nothing after it, no row waiting for the new
//! id), then the row's `INSERT` (and, when the parent has pending writes, their
//! `DELETE`). A tip that is out of date (another process or connection wrote the
//! thread, a savepoint or group was rolled back, the thread was deleted) fails the
//! check, and the save takes the general way, which then records the new tip. A tip is
//! never trusted, only checked.

use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::{params, Connection};

use super::rows::delete_parent_writes;
use super::schema::SPAN;

/// Where a thread ended when this saver last saved a checkpoint on it.
#[derive(Debug)]
pub(super) struct Tip {
    /// The thread's number in `threads`.
    pub no: i64,
    /// The latest checkpoint's `seq`, id and sort key (see `find`).
    pub seq: i64,
    pub id: String,
    pub key: String,
}

/// The saver's tips, one per thread it wrote lately.
#[derive(Debug, Default)]
pub(super) struct Tips {
    map: Mutex<HashMap<String, Tip>>,
    /// The file has a row whose id is greater than its sort key (migrated from schema
    /// version 3): an id greater than a thread's keys may be stored, so every save
    /// looks for it (the general way).
    unordered: bool,
}

/// Tips kept at most; past it the map starts over (a tip is only a hint).
const MAX_TIPS: usize = 4096;

/// Whether every fact a tip stands for still holds (in the write transaction, so
/// until it ends), and whether the tip has pending writes (which the new checkpoint's
/// save deletes). `?1` thread, `?2` its number, `?3` the tip's seq, `?4` its id, `?5`
/// its key, `?6` the end of the thread's seqs, `?7` the new id. A query of its own, not
/// the `WHERE` of an `INSERT ... SELECT`: SQLite runs an insert that reads its own
/// table through a temporary table, which cost as much as the statements it saved.
const TIP_HOLDS: &str = "
SELECT EXISTS (SELECT 1 FROM threads WHERE no = ?2 AND thread_id = ?1)
  AND EXISTS (SELECT 1 FROM checkpoints WHERE seq = ?3 AND checkpoint_id = ?4
              AND coalesce(sortkey, checkpoint_id) = ?5)
  AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE seq > ?3 AND seq < ?6)
  AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE parent_id = ?7
                  AND parent_seq IS NULL AND parent_id IS NOT NULL),
  EXISTS (SELECT 1 FROM writes WHERE thread_id = ?1 AND checkpoint_id = ?4)";

impl Tips {
    /// The tips of the file behind `conn` (read once, when the saver opens it: only
    /// opening migrates a file, so no row of the kind [`Tips::unordered`] means can
    /// appear later).
    pub fn of(conn: &Connection) -> rusqlite::Result<Self> {
        let unordered = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM checkpoints \
             WHERE sortkey IS NOT NULL AND checkpoint_id > sortkey)",
            [],
            |r| r.get(0),
        )?;
        Ok(Self {
            map: Mutex::new(HashMap::new()),
            unordered,
        })
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tip>> {
        // A tip is only a hint: one left by a panicking holder is as good as any.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes thread `t`'s latest checkpoint as this saver just saw it.
    pub fn set(&self, t: &str, tip: Tip) {
        let mut map = self.map();
        if map.len() >= MAX_TIPS && !map.contains_key(t) {
            map.clear();
        }
        map.insert(t.to_owned(), tip);
    }

    /// Saves record `id` (child of `parent_id`, text `json`) as thread `t`'s next
    /// checkpoint with one check, if the tip allows; `false` when it did not (nothing
    /// written: save it the general way).
    pub fn append(
        &self,
        tx: &Connection,
        t: &str,
        id: &str,
        parent_id: Option<&str>,
        json: &str,
    ) -> rusqlite::Result<bool> {
        if self.unordered {
            return Ok(false);
        }
        // Held through the statements: they run on the saver's one connection, whose
        // own lock already lets one transaction through at a time.
        let mut map = self.map();
        let Some(tip) = map.get_mut(t) else {
            return Ok(false);
        };
        let end = (tip.no + 1) * SPAN;
        if parent_id != Some(tip.id.as_str()) || id <= tip.key.as_str() || tip.seq + 1 >= end {
            return Ok(false);
        }
        let (holds, writes): (bool, bool) = tx
            .prepare_cached(TIP_HOLDS)?
            .query_row(params![t, tip.no, tip.seq, tip.id, tip.key, end, id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        if !holds {
            return Ok(false);
        }
        if writes {
            // The parent's tasks saved their writes as they finished (a step of
            // several tasks): the new checkpoint holds them all, so they go.
            delete_parent_writes(tx, t, Some(&tip.id))?;
        }
        let seq = tip.seq + 1;
        tx.prepare_cached(
            "INSERT INTO checkpoints (seq, checkpoint_id, parent_id, parent_seq, sortkey, record) \
             VALUES (?1, ?2, ?3, ?4, NULL, ?5)",
        )?
        .execute(params![seq, id, tip.id, tip.seq, json])?;
        // The new record is the tip now; its id is its key (greater than the old one).
        tip.seq = seq;
        tip.id.replace_range(.., id);
        tip.key.replace_range(.., id);
        Ok(true)
    }
}
