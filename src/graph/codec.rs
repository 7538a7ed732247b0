//! Channel values to and from checkpoint JSON.

use std::sync::Arc;

use serde_json::Value;

use super::error::GraphError;
use super::value::Val;

/// Turns checkpointed JSON back into channel values (the host's objects, say).
pub trait ValueCodec: Send + Sync {
    fn decode(&self, channel: &str, value: Value) -> Result<Val, GraphError>;

    /// [`ValueCodec::decode`] of JSON the caller keeps (a cached state's): a codec
    /// whose values keep their JSON (see [`super::HostValue::to_json`]) shares it
    /// instead of copying it.
    fn decode_shared(&self, channel: &str, value: Arc<Value>) -> Result<Val, GraphError> {
        self.decode(channel, Arc::unwrap_or_clone(value))
    }
}

/// Keeps JSON as JSON: for graphs whose state is JSON.
pub struct JsonCodec;

impl ValueCodec for JsonCodec {
    fn decode(&self, _channel: &str, value: Value) -> Result<Val, GraphError> {
        Ok(Val::Json(value))
    }
}

/// A value as checkpoint JSON; the error names the channel (or reserved name) it
/// was meant for.
pub(super) fn encode(channel: &str, v: &Val) -> Result<Value, GraphError> {
    v.to_json()
        .map_err(|reason| serialize_error(channel, v, reason))
}

/// [`encode`] without a copy of what a host value keeps.
pub(super) fn encode_shared(channel: &str, v: &Val) -> Result<Arc<Value>, GraphError> {
    v.to_json_shared()
        .map_err(|reason| serialize_error(channel, v, reason))
}

fn serialize_error(channel: &str, v: &Val, reason: String) -> GraphError {
    GraphError::Serialize {
        channel: channel.to_owned(),
        type_name: v.type_name(),
        reason,
    }
}
