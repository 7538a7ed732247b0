use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::message::Content;

/// What a tool returns.
#[derive(Clone, Default)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: Content,
    /// The raw value, kept for the program (not sent to the model).
    pub artifact: Option<Value>,
    /// Set by [`crate::tool::ReturnDirect`]: the agent loop ends with this result.
    pub return_direct: bool,
    /// An opaque value handed unchanged from the tool to its caller, for a host
    /// language's own objects (e.g. a Python `Command` or exception).
    pub payload: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolOutput")
            .field("content", &self.content)
            .field("artifact", &self.artifact)
            .field("return_direct", &self.return_direct)
            .field("payload", &self.payload.is_some())
            .finish()
    }
}

impl ToolOutput {
    pub fn text(s: impl Into<String>) -> Self {
        ToolOutput {
            content: Content::Text(s.into()),
            ..Default::default()
        }
    }

    /// A JSON value: strings are the content as they are; anything else becomes its
    /// JSON text, with objects and arrays also kept as the artifact.
    pub fn json(v: Value) -> Self {
        match v {
            Value::String(s) => Self::text(s),
            v @ (Value::Object(_) | Value::Array(_)) => ToolOutput {
                content: Content::Text(v.to_string()),
                artifact: Some(v),
                ..Default::default()
            },
            v => Self::text(v.to_string()),
        }
    }
}

impl PartialEq for ToolOutput {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content
            && self.artifact == other.artifact
            && self.return_direct == other.return_direct
    }
}
