//! [`Checkpointer`] for [`SqliteSaver`].

use super::group::Tx;
use super::rows::{
    find, insert_writes, latest, read_record_at, read_writes, record_row, save_record,
    thread_latest, thread_no, Next, RecordRow, Row,
};
use super::saver::SqliteSaver;
use super::schema::{stalled_sql, SPAN};
use crate::checkpoint::stalled::Claim;
use crate::checkpoint::{
    now_secs, record_from_row, records_from_rows, writes_from_rows, ChainFrom, CheckpointError,
    CheckpointRecord, Checkpointer, History, Put, Refused, Result, Writes,
};
use async_trait::async_trait;
use rusqlite::params;
use std::time::Duration;

#[async_trait]
impl Checkpointer for SqliteSaver {
    async fn put_many(&self, thread_id: &str, puts: Vec<Put>) -> Result<()> {
        let rows = Put::encode_each(
            puts,
            |record, next| {
                Ok(Row::Record {
                    json: self.encode_record(&record)?,
                    id: record.id,
                    parent_id: record.parent_id,
                    next,
                })
            },
            |checkpoint_id, writes| {
                Ok(Row::Writes {
                    writes: self.encode_writes(&checkpoint_id, writes)?,
                    checkpoint_id,
                })
            },
        )?;
        if rows.is_empty() {
            return Ok(());
        }
        let t = thread_id.to_owned();
        let tips = self.tips.clone();
        let codec = self.codec.clone();
        // One write transaction, or a savepoint of a group's (see `Write`; BEGIN
        // IMMEDIATE holds the file's write lock): every check and insert are atomic
        // for every process that shares the file, and a failed check leaves nothing of
        // the batch (rolled back).
        let failed = self
            .call_write("save a checkpoint", Option::is_none, move |tx| {
                for row in &rows {
                    match row {
                        Row::Record {
                            id,
                            parent_id,
                            json,
                            next,
                        } => match save_record(tx, &tips, &t, id, parent_id, json, *next)? {
                            Next::Saved => {}
                            Next::Stored(p, s)
                                if codec.same(
                                    id,
                                    (&s, p.as_deref()),
                                    (json, parent_id.as_deref()),
                                ) => {}
                            Next::Stored(..) => return Ok(Some(Refused::SameId(id.clone()))),
                            Next::Moved(latest) => {
                                let expected = parent_id.clone();
                                return Ok(Some(Refused::Moved { expected, latest }));
                            }
                        },
                        Row::Writes {
                            checkpoint_id,
                            writes,
                        } => insert_writes(tx, &t, checkpoint_id, writes)?,
                    }
                }
                Ok(None)
            })
            .await?;
        failed.map_or(Ok(()), |refused| Err(refused.error(thread_id)))
    }

    async fn put_writes(&self, thread_id: &str, checkpoint_id: &str, writes: Writes) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let rows = self.encode_writes(checkpoint_id, writes)?;
        let thread_id = thread_id.to_owned();
        let checkpoint_id = checkpoint_id.to_owned();
        self.call_write(
            "save pending writes",
            |_| true,
            move |tx| insert_writes(tx, &thread_id, &checkpoint_id, &rows),
        )
        .await
    }

    async fn get(&self, thread_id: &str, id: Option<&str>) -> Result<Option<CheckpointRecord>> {
        let t = thread_id.to_owned();
        let id = id.map(str::to_owned);
        let json = self
            .call("read a checkpoint", move |conn| {
                // One read transaction: the statements below see one state of the file.
                let conn = &Tx::begin(conn, false)?;
                read_record_at(conn, &t, id.as_deref())
            })
            .await?;
        json.map(|j| record_from_row(&self.name(), &self.codec, thread_id, &j))
            .transpose()
    }

    async fn get_with_writes(
        &self,
        thread_id: &str,
        id: Option<&str>,
    ) -> Result<Option<(CheckpointRecord, Writes)>> {
        let t = thread_id.to_owned();
        let id = id.map(str::to_owned);
        let found = self
            .call("read a checkpoint and its pending writes", move |conn| {
                let conn = &Tx::begin(conn, false)?;
                let Some(row) = read_record_at(conn, &t, id.as_deref())? else {
                    return Ok(None);
                };
                let writes = read_writes(conn, &t, &row.0)?;
                Ok(Some((row, writes)))
            })
            .await?;
        found
            .map(|(row, writes)| {
                Ok((
                    record_from_row(&self.name(), &self.codec, thread_id, &row)?,
                    writes_from_rows(&self.name(), &self.codec, thread_id, &row.0, writes)?,
                ))
            })
            .transpose()
    }

    async fn chain_from(&self, thread_id: &str, id: &str, from: ChainFrom) -> History {
        self.read_chain(thread_id, id, from).await
    }

    async fn list(&self, thread_id: &str, limit: Option<usize>, before: Option<&str>) -> History {
        let t = thread_id.to_owned();
        let before = before.map(str::to_owned);
        // SQLite reads a negative LIMIT as "no limit".
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = self
            .call("list checkpoints", move |conn| {
                let conn = &Tx::begin(conn, false)?;
                let Some((no, last)) = thread_latest(conn, &t)? else {
                    return Ok(Vec::new());
                };
                // An unknown `before` filters nothing, as in MemorySaver.
                let below = match &before {
                    Some(b) => find(conn, no, last.as_ref(), b)?,
                    None => None,
                };
                let mut stmt = conn.prepare_cached(
                    "SELECT checkpoint_id, parent_id, record FROM checkpoints \
                     WHERE seq > ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
                )?;
                let below = below.unwrap_or((no + 1) * SPAN);
                let rows = stmt.query_map(params![no * SPAN, below, limit], record_row)?;
                rows.collect::<rusqlite::Result<Vec<RecordRow>>>()
            })
            .await?;
        records_from_rows(&self.name(), &self.codec, thread_id, &rows)
    }

    async fn pending_writes(&self, thread_id: &str, checkpoint_id: &str) -> Result<Writes> {
        let (t, c) = (thread_id.to_owned(), checkpoint_id.to_owned());
        let rows = self
            .call("read pending writes", move |conn| read_writes(conn, &t, &c))
            .await?;
        writes_from_rows(&self.name(), &self.codec, thread_id, checkpoint_id, rows)
    }

    async fn thread_keys(&self) -> Result<Vec<String>> {
        self.call("list threads", |conn| {
            // A thread row outlives its checkpoints' deletion: only keys with some.
            let mut st = conn.prepare_cached(
                "SELECT t.thread_id FROM threads t WHERE EXISTS (SELECT 1 FROM checkpoints c \
                 WHERE c.seq > t.no << 32 AND c.seq < (t.no + 1) << 32)",
            )?;
            let keys: rusqlite::Result<Vec<String>> =
                st.query_map([], |r| r.get::<_, String>(0))?.collect();
            keys
        })
        .await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<()> {
        let (t, ns) = (
            thread_id.to_owned(),
            crate::checkpoint::ns_prefix(thread_id),
        );
        self.call("delete a thread", move |conn| {
            let tx = Tx::begin(conn, true)?;
            tx.prepare_cached(
                "DELETE FROM checkpoints WHERE seq IN (SELECT c.seq FROM threads t \
                 JOIN checkpoints c ON c.seq > t.no << 32 AND c.seq < (t.no + 1) << 32 \
                 WHERE t.thread_id = ?1 OR substr(t.thread_id, 1, length(?2)) = ?2)",
            )?
            .execute(params![t, ns])?;
            for table in ["threads", "writes", "claims", "activity"] {
                tx.prepare_cached(&format!(
                    "DELETE FROM {table} WHERE thread_id = ?1 \
                     OR substr(thread_id, 1, length(?2)) = ?2"
                ))?
                .execute(params![t, ns])?;
            }
            tx.commit()
        })
        .await
    }

    async fn delete_checkpoints(&self, thread_id: &str, ids: Vec<String>) -> Result<()> {
        let t = thread_id.to_owned();
        self.call("delete checkpoints", move |conn| {
            let tx = Tx::begin(conn, true)?;
            {
                let mut st = tx.prepare_cached(
                    "DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id = ?2",
                )?;
                for id in &ids {
                    st.execute(params![t, id])?;
                }
            }
            if let Some(no) = thread_no(&tx, &t)? {
                let mut deleted = 0;
                for id in &ids {
                    let last = latest(&tx, no)?;
                    if let Some(seq) = find(&tx, no, last.as_ref(), id)? {
                        deleted += tx
                            .prepare_cached("DELETE FROM checkpoints WHERE seq = ?1")?
                            .execute([seq])?;
                    }
                }
                if deleted > 0 {
                    // Their children are orphans now (found again if they come back).
                    tx.prepare_cached(
                        "UPDATE checkpoints SET parent_seq = NULL \
                         WHERE seq > ?1 AND seq < ?2 AND parent_seq IS NOT NULL \
                         AND NOT EXISTS (SELECT 1 FROM checkpoints p \
                           WHERE p.seq = checkpoints.parent_seq)",
                    )?
                    .execute(params![no * SPAN, (no + 1) * SPAN])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn list_stalled(
        &self,
        stale_after: Duration,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        let now = now_secs();
        let cutoff = now - stale_after.as_secs_f64();
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.call("list stalled threads", move |conn| {
            let mut stmt = conn.prepare_cached(&stalled_sql())?;
            let rows = stmt.query_map(params![cutoff, now, limit], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    async fn claim(&self, claim: &Claim) -> Result<Vec<String>> {
        let owner = claim.owner.clone();
        let now = now_secs();
        let cutoff = now - claim.stale_after.as_secs_f64();
        let until = now + claim.lease.as_secs_f64();
        let limit = i64::try_from(claim.limit).unwrap_or(i64::MAX);
        // One write transaction: the check and the claims are atomic for every process.
        self.call("claim stalled threads", move |conn| {
            let tx = Tx::begin(conn, true)?;
            let ids: Vec<String> = {
                let mut stmt = tx.prepare_cached(&stalled_sql())?;
                let rows = stmt.query_map(params![cutoff, now, limit], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            {
                let mut claim = tx.prepare_cached(
                    "INSERT INTO claims (thread_id, owner, expires_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (thread_id) DO UPDATE \
                     SET owner = excluded.owner, expires_at = excluded.expires_at",
                )?;
                for id in &ids {
                    claim.execute(params![id, owner, until])?;
                }
            }
            tx.commit()?;
            Ok(ids)
        })
        .await
    }

    #[cfg(unix)]
    async fn try_lease(&self, thread_id: &str) -> Result<Option<crate::checkpoint::RunLease>> {
        let Some(file) = self.lease_file("start a run")? else {
            return Ok(Some(crate::checkpoint::RunLease::local()));
        };
        crate::checkpoint::lease::file::try_lease(&file, thread_id)
            .map(|l| l.map(crate::checkpoint::RunLease::new))
            .map_err(|e| self.lease_error(thread_id, e))
    }

    #[cfg(unix)]
    async fn ask_stop(
        &self,
        thread_id: &str,
        ask: crate::checkpoint::StopAsk,
    ) -> Result<Option<crate::checkpoint::AskGuard>> {
        let Some(file) = self.lease_file("ask a run to stop")? else {
            return Ok(None);
        };
        crate::checkpoint::lease::file::ask(&file, thread_id, ask)
            .map(|l| l.map(crate::checkpoint::AskGuard::new))
            .map_err(|e| self.lease_error(thread_id, e))
    }

    async fn close(&self) -> Result<()> {
        let Some(thread) = self.stop_worker() else {
            return Ok(());
        };
        // Joining waits for the queued work: off the async threads when on tokio.
        let joined = match tokio::runtime::Handle::try_current() {
            Ok(h) => h.spawn_blocking(move || thread.join()).await.map_err(|_| {
                CheckpointError::storage(format!(
                    "SqliteSaver({}): closing was interrupted",
                    self.path.display()
                ))
            })?,
            Err(_) => thread.join(),
        };
        self.joined(joined)
    }
}
