//! [`Checkpointer`] for [`PostgresSaver`].

use super::batch::{record_row, save_batch, uuid_key, Item, RecordRow};
use super::lease;
use super::saver::PostgresSaver;
use crate::checkpoint::stalled::Claim;
use crate::checkpoint::{
    order_chain, record_from_row, records_from_rows, writes_from_rows, ChainFrom, CheckpointError,
    CheckpointRecord, Checkpointer, History, Put, Result, WriteRow, Writes,
};
use async_trait::async_trait;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[async_trait]
impl Checkpointer for PostgresSaver {
    async fn put_many(&self, thread_id: &str, puts: Vec<Put>) -> Result<()> {
        let items = Put::encode_each(
            puts,
            |record, next| {
                Ok(Item::Record {
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
                })
            },
            |checkpoint_id, writes| {
                Ok(Item::Writes {
                    columns: self.write_columns(&checkpoint_id, writes)?,
                    checkpoint_id,
                })
            },
        )?;
        if items.is_empty() {
            return Ok(());
        }
        let t = thread_id.to_owned();
        let failed = self
            .call("save a checkpoint", move |c, sh| async move {
                save_batch(&c, &sh.sql, &sh.codec, &t, &items).await
            })
            .await?;
        failed.map_or(Ok(()), |refused| Err(refused.error(thread_id)))
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
        row.map(|r| record_from_row(&self.shared.name, &self.shared.codec, thread_id, &r))
            .transpose()
    }

    /// The ancestors of `id`, up to the root or the nearest snapshot, in one query.
    async fn chain_from(&self, thread_id: &str, id: &str, from: ChainFrom) -> History {
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
        let records = records_from_rows(&self.shared.name, &self.shared.codec, thread_id, &rows)?;
        order_chain(&self.shared.name, thread_id, records, id, from)
    }

    async fn list(&self, thread_id: &str, limit: Option<usize>, before: Option<&str>) -> History {
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
        records_from_rows(&self.shared.name, &self.shared.codec, thread_id, &rows)
    }

    async fn pending_writes(&self, thread_id: &str, checkpoint_id: &str) -> Result<Writes> {
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
        let (t, ns) = (
            thread_id.to_owned(),
            crate::checkpoint::ns_prefix(thread_id),
        );
        self.call("delete a thread", move |c, sh| async move {
            let st = c.prepare_cached(&sh.sql.delete).await?;
            c.execute(&st, &[&t, &ns]).await?;
            Ok(())
        })
        .await
    }

    async fn thread_keys(&self) -> Result<Vec<String>> {
        self.call("list threads", move |c, sh| async move {
            let st = c.prepare_cached(&sh.sql.thread_keys).await?;
            let rows = c.query(&st, &[]).await?;
            Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
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

    async fn claim(&self, claim: &Claim) -> Result<Vec<String>> {
        let (secs, lease) = (claim.stale_after.as_secs_f64(), claim.lease.as_secs_f64());
        let limit = Some(i64::try_from(claim.limit).unwrap_or(i64::MAX));
        let owner = claim.owner.clone();
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

    async fn try_lease(&self, thread_id: &str) -> Result<Option<crate::checkpoint::RunLease>> {
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
        Ok(self
            .joined(OP, task.await)?
            .map(crate::checkpoint::RunLease::new))
    }

    async fn ask_stop(
        &self,
        thread_id: &str,
        ask: crate::checkpoint::StopAsk,
    ) -> Result<Option<crate::checkpoint::AskGuard>> {
        let payload = lease::ask_payload(&self.shared.sql.prefix, thread_id, ask);
        self.call("ask a run to stop", move |c, _| async move {
            let st = c.prepare_cached("SELECT pg_notify($1, $2)").await?;
            c.query_one(&st, &[&lease::CHANNEL, &payload]).await?;
            Ok(None)
        })
        .await
    }
}
