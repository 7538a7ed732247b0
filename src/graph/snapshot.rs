//! Snapshots: the channels' values materialised in a checkpoint record every
//! [`SNAPSHOT_EVERY`] records along a chain, so that loading a thread replays at most
//! that many deltas instead of the whole chain.
//!
//! A snapshot holds every channel's value as checkpoint JSON, except the messages
//! channels': their messages are stored once, in the deltas that wrote them, and a
//! snapshot refers to them (the channel is the fold of the messages written along the
//! chain). Copying them into every snapshot would make a thread's bytes grow with
//! its length squared; loading them is linear in the messages whatever is done, as
//! they all go to the caller. So a graph with a messages channel reads its chain to
//! the root, decoding only the message writes before the snapshot; a graph without
//! one reads the snapshot and the deltas after it.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::channel::{Channel, ChannelKind};
use super::codec::encode_pieces;
use super::engine::Graph;
use super::error::GraphError;
use crate::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, Piece, Run, Snapshot};

/// How many records may follow a snapshot on a chain before the next record carries
/// one. Small, so that a load costs about as much as loading a 10-step thread; a
/// snapshot costs one encoding of the non-message state every that many steps.
pub const SNAPSHOT_EVERY: usize = 16;

/// The format of a snapshot's JSON (`"v"`), for readers of later versions.
const FORMAT: u64 = 1;

/// A thread's channels at a checkpoint, as loaded.
pub(super) struct Loaded {
    pub chans: Vec<Channel>,
    /// How many records on the chain follow its nearest snapshot (the chain's length
    /// when it has none): the next record takes a snapshot when this reaches
    /// [`SNAPSHOT_EVERY`] - 1.
    pub since_snapshot: usize,
    /// The record's parent, when the load read it.
    pub parent: Option<CheckpointRecord>,
}

/// Whether the record saved after `since` records without a snapshot carries one,
/// and the count after it.
pub(super) fn next_since(since: usize) -> (bool, usize) {
    if since + 1 >= SNAPSHOT_EVERY {
        (true, 0)
    } else {
        (false, since + 1)
    }
}

impl Graph {
    fn has_messages(&self) -> bool {
        self.kinds()
            .iter()
            .any(|k| matches!(k, ChannelKind::Messages))
    }

    /// The snapshot of `chans`: `{"v": 1, "values": {channel: json}, "versions":
    /// {channel: n}}`, messages channels without values (see the module docs). Each
    /// value is the checkpoint text its channel's value keeps, in pieces: one encoded
    /// before (a channel whose version did not change holds the same value) is not
    /// encoded again, none is copied until the record's text is written (and none in
    /// `MemorySaver`, which keeps the pieces), and a large container held in several
    /// places is one piece shared by all.
    pub(super) fn snapshot_of(&self, chans: &[Channel]) -> Result<Snapshot, GraphError> {
        let mut pieces = Vec::new();
        let mut glue = format!("{{\"v\":{FORMAT},\"values\":{{");
        let mut versions = Map::new();
        for ((name, kind), c) in self.names().iter().zip(self.kinds()).zip(chans) {
            if c.version > 0 {
                versions.insert(name.clone(), json!(c.version));
            }
            if matches!(kind, ChannelKind::Messages) {
                continue;
            }
            if let Some(v) = &c.value {
                if !pieces.is_empty() {
                    glue.push(',');
                }
                glue.push_str(&json!(name).to_string());
                glue.push(':');
                pieces.push(Run::from([Piece::from(std::mem::take(&mut glue))]));
                pieces.push(encode_pieces(name, v)?);
            }
        }
        glue.push_str("},\"versions\":");
        glue.push_str(&Value::Object(versions).to_string());
        glue.push('}');
        pieces.push(Run::from([Piece::from(glue)]));
        Ok(Snapshot::Pieces(pieces))
    }

    /// The channels held by `snapshot` (messages channels empty: the caller folds
    /// their writes).
    fn restore(
        &self,
        thread_id: &str,
        id: &str,
        snapshot: &Value,
    ) -> Result<Vec<Channel>, GraphError> {
        let bad = |what: &str| {
            GraphError::Checkpoint(CheckpointError::serialization(format!(
                "the snapshot in checkpoint {id:?} of thread {thread_id:?} {what}; it was \
                 written by a newer ironloop or modified by hand: upgrade ironloop, or load \
                 an older checkpoint_id"
            )))
        };
        if snapshot.get("v").and_then(Value::as_u64) != Some(FORMAT) {
            return Err(bad(&format!(
                "has format {:?}, this ironloop reads {FORMAT}",
                snapshot.get("v")
            )));
        }
        let empty = Map::new();
        let field = |k: &str| match snapshot.get(k) {
            None => Ok(&empty),
            Some(Value::Object(m)) => Ok(m),
            Some(_) => Err(bad(&format!("has a {k:?} that is not an object"))),
        };
        let (values, versions) = (field("values")?, field("versions")?);
        let mut chans = self.fresh_channels();
        for ((name, kind), c) in self.names().iter().zip(self.kinds()).zip(chans.iter_mut()) {
            c.version = versions.get(name).and_then(Value::as_u64).unwrap_or(0);
            if matches!(kind, ChannelKind::Messages) {
                continue;
            }
            if let Some(v) = values.get(name) {
                c.value = Some(self.decode(name, v.clone())?);
            }
        }
        Ok(chans)
    }

    /// Applies a stored record that holds a snapshot to `chans` (the state at its
    /// parent): the snapshot's channels replace theirs, and the messages channels take
    /// the record's writes. The same as applying its writes for a record of a step
    /// (its snapshot is the state after them), and the only way for the one record of
    /// a durability `"exit"` run, whose writes are only its messages.
    pub(super) fn apply_snapshot(
        &self,
        thread_id: &str,
        chans: &mut [Channel],
        r: &CheckpointRecord,
        snapshot: &Value,
    ) -> Result<(), GraphError> {
        let restored = self.restore(thread_id, &r.id, snapshot)?;
        let mut messages = Vec::new();
        for (i, (kind, new)) in self.kinds().iter().zip(restored).enumerate() {
            if matches!(kind, ChannelKind::Messages) {
                messages.push((i, new.version));
            } else {
                chans[i] = new;
            }
        }
        if messages.is_empty() {
            return Ok(());
        }
        let writes = r
            .writes
            .iter()
            .filter(|w| matches!(self.channel_kind(&w.channel), Some(ChannelKind::Messages)))
            .map(|w| {
                Ok((
                    w.channel.clone(),
                    self.decode(&w.channel, (*w.value).clone())?,
                ))
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        self.apply(chans, writes)?;
        for (i, version) in messages {
            chans[i].version = version;
        }
        Ok(())
    }

    /// The channels at the last record of `chain` (which starts at the thread's root
    /// or at a record holding a snapshot).
    fn materialise_chain(
        &self,
        thread_id: &str,
        chain: &[CheckpointRecord],
    ) -> Result<(Vec<Channel>, usize), GraphError> {
        let Some(s) = chain.iter().rposition(|r| r.snapshot.is_some()) else {
            return Ok((self.replay(thread_id, chain)?, chain.len()));
        };
        let snap = &chain[s];
        let snapshot = (snap.snapshot.as_ref().expect("found by rposition").json())
            .map_err(GraphError::Checkpoint)?;
        let mut chans = self.restore(thread_id, &snap.id, &snapshot)?;
        // Messages channels: the fold of the message writes up to the snapshot.
        let messages: HashMap<&str, usize> = self
            .names()
            .iter()
            .zip(self.kinds())
            .enumerate()
            .filter(|(_, (_, k))| matches!(k, ChannelKind::Messages))
            .map(|(i, (n, _))| (n.as_str(), i))
            .collect();
        if !messages.is_empty() {
            let versions: Vec<u64> = chans.iter().map(|c| c.version).collect();
            for r in &chain[..=s] {
                let writes = r
                    .writes
                    .iter()
                    .filter(|w| messages.contains_key(w.channel.as_str()))
                    .map(|w| {
                        Ok((
                            w.channel.clone(),
                            self.decode(&w.channel, (*w.value).clone())?,
                        ))
                    })
                    .collect::<Result<Vec<_>, GraphError>>()?;
                self.apply(&mut chans, writes)?;
            }
            for &i in messages.values() {
                chans[i].version = versions[i];
            }
        }
        for r in &chain[s + 1..] {
            self.apply_stored(thread_id, &mut chans, r)?;
        }
        Ok((chans, chain.len() - 1 - s))
    }

    /// The channels at `record`, read from the nearest snapshot (or, for messages
    /// channels, from the root: see the module docs).
    pub(super) async fn materialise(
        &self,
        cp: &dyn Checkpointer,
        thread_id: &str,
        record: &CheckpointRecord,
    ) -> Result<Loaded, GraphError> {
        let chain = if self.has_messages() {
            cp.chain(thread_id, &record.id).await
        } else {
            cp.chain_from_snapshot(thread_id, &record.id).await
        }
        .map_err(Graph::cp_err)?;
        let (chans, since_snapshot) = self.materialise_chain(thread_id, &chain)?;
        let parent = chain.len().checked_sub(2).map(|i| chain[i].clone());
        Ok(Loaded {
            chans,
            since_snapshot,
            parent,
        })
    }

    /// The snapshot to put in the record saved after `since` records without one, and
    /// the new count.
    pub(super) fn snapshot_for_next(
        &self,
        since: usize,
        chans: &[Channel],
    ) -> Result<(Option<Snapshot>, usize), GraphError> {
        match next_since(since) {
            (true, n) => Ok((Some(self.snapshot_of(chans)?), n)),
            (false, n) => Ok((None, n)),
        }
    }
}
