//! Channel values to and from checkpoint JSON.

use serde_json::Value;

use super::error::GraphError;
use super::value::Val;

/// Turns checkpointed JSON back into channel values (the host's objects, say).
pub trait ValueCodec: Send + Sync {
    fn decode(&self, channel: &str, value: Value) -> Result<Val, GraphError>;
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
    v.to_json().map_err(|reason| GraphError::Serialize {
        channel: channel.to_owned(),
        type_name: v.type_name(),
        reason,
    })
}
