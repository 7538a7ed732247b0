use std::any::Any;
use std::fmt;
use std::io::{self, Write};
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
    /// The id of the run the call started (a sub-agent's), set from the call's
    /// [`super::ToolContext::set_child_run`]: shown on the call's end event and in
    /// its tool message's `response_metadata["child_loop_id"]`.
    pub child_run: Option<String>,
}

impl fmt::Debug for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolOutput")
            .field("content", &self.content)
            .field("artifact", &self.artifact)
            .field("return_direct", &self.return_direct)
            .field("payload", &self.payload.is_some())
            .field("child_run", &self.child_run)
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

    /// A JSON value: strings are the content as they are, and so is a list of content
    /// blocks (as LangChain keeps it, see [`Content::from_blocks`]); anything else
    /// becomes its JSON text. Objects and arrays are also kept as the artifact.
    pub fn json(v: Value) -> Self {
        if let Some(content) = Content::from_blocks(&v) {
            return ToolOutput {
                content,
                artifact: Some(v),
                ..Default::default()
            };
        }
        match v {
            Value::String(s) => Self::text(s),
            v @ (Value::Object(_) | Value::Array(_)) => ToolOutput {
                content: Content::Text(json_text(&v)),
                artifact: Some(v),
                ..Default::default()
            },
            v => Self::text(json_text(&v)),
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

/// The formatter of [`json_text`]: a comma and a colon each followed by a space.
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"" } else { b", " })
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"" } else { b", " })
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

/// JSON text spaced as Python's `json.dumps(v, ensure_ascii=False)` writes it
/// (`", "` and `": "`), so a result reads the same as under LangGraph.
pub fn json_text(v: &Value) -> String {
    use serde::Serialize;
    let mut out = Vec::with_capacity(64);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    v.serialize(&mut ser).expect("a Value always serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_text_is_spaced_like_python() {
        let v = json!({"a": [1, 2, {"b": null}], "é": "x"});
        assert_eq!(json_text(&v), r#"{"a": [1, 2, {"b": null}], "é": "x"}"#);
        assert_eq!(
            ToolOutput::json(json!(3)).content,
            Content::Text("3".into())
        );
        assert_eq!(
            ToolOutput::json(json!("s")).content,
            Content::Text("s".into())
        );
        assert_eq!(ToolOutput::json(json!([1])).artifact, Some(json!([1])));
    }

    #[test]
    fn a_list_of_content_blocks_stays_a_list() {
        use crate::message::ContentPart;
        let blocks = json!([{"type": "text", "text": "a"}, "b"]);
        let out = ToolOutput::json(blocks.clone());
        assert_eq!(
            out.content,
            Content::Parts(vec![
                ContentPart::Text { text: "a".into() },
                ContentPart::Json { value: json!("b") },
            ])
        );
        assert_eq!(out.artifact, Some(blocks));
        let rows = json!([{"id": 1}]);
        assert_eq!(
            ToolOutput::json(rows).content,
            Content::Text(r#"[{"id": 1}]"#.into())
        );
    }
}
