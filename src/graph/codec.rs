//! Channel values to and from checkpoint JSON.

use std::sync::Arc;

use serde_json::Value;

use super::error::GraphError;
use super::value::Val;
use crate::checkpoint::Piece;

/// Turns checkpointed JSON back into channel values (the host's objects, say).
pub trait ValueCodec: Send + Sync {
    fn decode(&self, channel: &str, value: Value) -> Result<Val, GraphError>;

    /// [`ValueCodec::decode`] of checkpoint JSON text the caller keeps in pieces (the
    /// state cache's): a codec whose values keep their text shares it.
    fn decode_text(&self, channel: &str, text: Arc<[Piece]>) -> Result<Val, GraphError> {
        self.decode(channel, parse_text(channel, &Piece::joined(&text))?)
    }
}

/// Checkpoint JSON text as a tree; the error names the channel it was kept for.
pub fn parse_text(channel: &str, text: &str) -> Result<Value, GraphError> {
    serde_json::from_str(text).map_err(|e| {
        GraphError::Checkpoint(crate::checkpoint::CheckpointError::serialization(format!(
            "the kept checkpoint text of {channel:?} is not JSON ({e}); this is a bug in \
             ironloop: please report it"
        )))
    })
}

/// Keeps JSON as JSON: for graphs whose state is JSON.
pub struct JsonCodec;

impl ValueCodec for JsonCodec {
    fn decode(&self, _channel: &str, value: Value) -> Result<Val, GraphError> {
        Ok(Val::Json(value))
    }
}

/// A value as checkpoint JSON, shared with what a host value keeps (a write holds the
/// tree its value was encoded to, not a copy of it); the error names the channel (or
/// reserved name) it was meant for.
pub(super) fn encode(channel: &str, v: &Val) -> Result<Arc<Value>, GraphError> {
    v.to_json_shared()
        .map_err(|reason| serialize_error(channel, v, reason))
}

/// A value as checkpoint JSON text in pieces, without a copy of what a host value
/// keeps.
pub(super) fn encode_pieces(channel: &str, v: &Val) -> Result<Arc<[Piece]>, GraphError> {
    v.to_pieces()
        .map_err(|reason| serialize_error(channel, v, reason))
}

fn serialize_error(channel: &str, v: &Val, reason: String) -> GraphError {
    GraphError::Serialize {
        channel: channel.to_owned(),
        type_name: v.type_name(),
        reason,
    }
}
