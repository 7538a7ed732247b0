//! Saving a batch of records and pending writes: one statement for a chain of steps,
//! one pipelined transaction otherwise, telling a retry from a conflict.

use super::schema::REFUSED_CODE;
use super::sql::Sql;
use crate::checkpoint::seal::Records;
use crate::checkpoint::Refused;
use deadpool_postgres::ClientWrapper;

/// A stored record as read: its id, parent and text (see [`record`]).
pub(super) use crate::checkpoint::RecordRow;

/// Reads a [`RecordRow`] from `checkpoint_id, parent_id, record` columns.
pub(super) fn record_row(r: &tokio_postgres::Row) -> RecordRow {
    (r.get(0), r.get(1), r.get(2))
}

/// `id` when it is a UUID as the engine writes them (lower-case hexadecimal in the
/// 8-4-4-4-12 form, what `ironloop_uuid` stores as the `uuid` itself), else `None`.
pub(super) fn uuid_key(id: &str) -> Option<String> {
    let b = id.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        });
    ok.then(|| id.to_owned())
}

/// One put of a batch, encoded.
pub(super) enum Item {
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
pub(super) struct WriteColumns {
    pub(super) tasks: Vec<String>,
    pub(super) idxs: Vec<i64>,
    pub(super) nodes: Vec<String>,
    pub(super) channels: Vec<String>,
    pub(super) values: Vec<String>,
}

pub(super) type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// Each item's statement parameters.
pub(super) fn batch_params<'a>(t: &'a String, items: &'a [Item]) -> Vec<Vec<Param<'a>>> {
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
pub(super) struct Chain<'a> {
    pub(super) first_parent: Option<&'a str>,
    pub(super) last: &'a str,
    pub(super) ids: Vec<&'a str>,
    pub(super) parents: Vec<Option<&'a str>>,
    pub(super) records: Vec<&'a str>,
    pub(super) id_keys: Vec<Option<&'a str>>,
    pub(super) parent_keys: Vec<Option<&'a str>>,
    pub(super) w_checkpoints: Vec<&'a str>,
    pub(super) w_tasks: Vec<&'a str>,
    pub(super) w_idxs: Vec<i64>,
    pub(super) w_nodes: Vec<&'a str>,
    pub(super) w_channels: Vec<&'a str>,
    pub(super) w_values: Vec<&'a str>,
}

impl<'a> Chain<'a> {
    /// The chain of `items`, or `None` when they are not one (a `put`, a record that
    /// does not follow the one before it, or no record at all).
    pub(super) fn of(items: &'a [Item]) -> Option<Chain<'a>> {
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

    pub(super) fn params<'b>(&'b self, t: &'b String) -> [Param<'b>; 14] {
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
/// holding a `put`, goes through [`Batch::save_checked`], which says why it was refused.
pub(super) async fn save_batch(
    c: &ClientWrapper,
    sql: &Sql,
    codec: &Records,
    t: &String,
    items: &[Item],
) -> Saved {
    let batch = Batch {
        c,
        sql,
        codec,
        t,
        items,
    };
    batch.save().await
}

/// What saving a batch answers: `Some` when an item was refused (nothing was saved).
type Saved = std::result::Result<Option<Refused>, tokio_postgres::Error>;

/// A batch being saved: the items of thread `t`, on connection `c`, with the saver's
/// statements and codec.
#[derive(Clone, Copy)]
struct Batch<'a> {
    c: &'a ClientWrapper,
    sql: &'a Sql,
    codec: &'a Records,
    t: &'a String,
    items: &'a [Item],
}

impl Batch<'_> {
    /// See [`save_batch`].
    async fn save(self) -> Saved {
        use futures::future::{join_all, FutureExt};
        let Batch {
            c, sql, t, items, ..
        } = self;
        let pipelined = items.len() > 1
            && items
                .iter()
                .all(|i| matches!(i, Item::Writes { .. } | Item::Record { next: true, .. }));
        if !pipelined {
            return self.save_checked().await;
        }
        if let Some(chain) = Chain::of(items) {
            // One statement for the whole batch (its own transaction).
            let st = c.prepare_cached(&sql.put_chain).await?;
            return match c.query_one(&st, &chain.params(t)).await {
                Ok(_) => Ok(None),
                // Nothing was saved: find out why, item by item.
                Err(e) if e.code().map(|c| c.code()) == Some(REFUSED_CODE) => {
                    self.save_checked().await
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
                self.save_checked().await
            }
            Err(e) => Err(e),
        }
    }

    /// [`save_batch`] the careful way: one statement for a single item; otherwise
    /// `BEGIN` and the statements pipelined (one round trip), each answer checked, then
    /// `COMMIT`, or `ROLLBACK` when an item is refused, so that a refused item leaves
    /// nothing of the batch.
    async fn save_checked(self) -> Saved {
        use futures::future::{join_all, BoxFuture, FutureExt};
        let Batch {
            c,
            sql,
            codec,
            t,
            items,
        } = self;
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
}

/// The record stored under an id (its text and parent), from columns `i` and `i + 1`.
pub(super) fn stored(row: &tokio_postgres::Row, i: usize) -> Option<(String, Option<String>)> {
    let text: Option<String> = row.get(i);
    text.map(|t| (t, row.get(i + 1)))
}
