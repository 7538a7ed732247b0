//! What graph channels hold.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::messages::MessageList;
use crate::checkpoint::Piece;

/// A value owned by the host language (a Python object, say). The core never looks
/// inside; it only needs JSON for checkpoints.
pub trait HostValue: Send + Sync + 'static {
    /// The value as checkpoint JSON; `Err` says why it cannot be. Shared, so that an
    /// implementation may keep it: a channel value that did not change since it was
    /// written is then encoded once, however many snapshots and cached states hold it.
    fn to_json(&self) -> Result<Arc<Value>, String>;
    /// The value as checkpoint JSON text in pieces ([`Piece`]), shared as
    /// [`HostValue::to_json`] is: what a snapshot and the state cache keep. A large
    /// container the value holds in several places may be one piece shared by each
    /// place, not a copy per place. An implementation that can write its text without
    /// building a tree first (a large state's tree costs more to build, copy and drop
    /// than its text) overrides this.
    fn to_pieces(&self) -> Result<Arc<[Piece]>, String> {
        let v = self.to_json()?;
        serde_json::to_string(&*v)
            .map(|t| Arc::from([Piece::from(t)]))
            .map_err(|e| e.to_string())
    }
    /// The value's type, for error messages.
    fn type_name(&self) -> String;
    fn as_any(&self) -> &dyn Any;
}

/// A channel value or a write to a channel.
#[derive(Clone)]
pub enum Val {
    Json(Value),
    Host(Arc<dyn HostValue>),
    /// The value of a messages channel, or messages written to one.
    Messages(MessageList),
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Json(v) => write!(f, "Json({v})"),
            Val::Host(h) => write!(f, "Host({})", h.type_name()),
            Val::Messages(m) => write!(f, "Messages(len={})", m.len()),
        }
    }
}

impl From<Value> for Val {
    fn from(v: Value) -> Self {
        Val::Json(v)
    }
}

impl Val {
    pub fn type_name(&self) -> String {
        match self {
            Val::Json(v) => match v {
                Value::Null => "null",
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            }
            .to_owned(),
            Val::Host(h) => h.type_name(),
            Val::Messages(_) => "messages".to_owned(),
        }
    }

    /// The value as JSON for a checkpoint; the error names what could not be saved.
    pub fn to_json(&self) -> Result<Value, String> {
        match self {
            Val::Json(v) => Ok(v.clone()),
            Val::Host(h) => h.to_json().map(Arc::unwrap_or_clone),
            Val::Messages(m) => serde_json::to_value(m.to_vec()).map_err(|e| e.to_string()),
        }
    }

    /// [`Val::to_json`] without a copy of what a host value keeps.
    pub fn to_json_shared(&self) -> Result<Arc<Value>, String> {
        match self {
            Val::Host(h) => h.to_json(),
            v => v.to_json().map(Arc::new),
        }
    }

    /// The value as checkpoint JSON text in pieces (a host value's kept ones, shared).
    pub fn to_pieces(&self) -> Result<Arc<[Piece]>, String> {
        let text = match self {
            Val::Host(h) => return h.to_pieces(),
            Val::Json(v) => serde_json::to_string(v),
            Val::Messages(m) => serde_json::to_string(&m.to_vec()),
        };
        text.map(|t| Arc::from([Piece::from(t)]))
            .map_err(|e| e.to_string())
    }

    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Val::Json(v) => Some(v),
            _ => None,
        }
    }
}
