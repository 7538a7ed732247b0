use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One call of a tool, as the model asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments; normally a JSON object. Providers that send arguments as text
    /// may leave a string here: the executor parses it (an empty string is `{}`).
    /// Read from `args` too: LangGraph's `ToolCall` dict, as a `Send` carries it.
    #[serde(alias = "args")]
    pub arguments: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// How the model may use tools on its next turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    #[default]
    Auto,
    Required,
    None,
    Specific(String),
}

impl ToolChoice {
    /// Parses the names users write (`"auto"`, `"required"`, `"any"`, `"none"`, or a
    /// tool name).
    pub fn parse(s: &str) -> Self {
        match s {
            "auto" => ToolChoice::Auto,
            "required" | "any" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Specific(name.to_owned()),
        }
    }

    /// The OpenAI Chat Completions `tool_choice` value.
    pub fn to_openai(&self) -> Value {
        match self {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Specific(n) => json!({"type": "function", "function": {"name": n}}),
        }
    }

    /// The Anthropic Messages `tool_choice` value.
    pub fn to_anthropic(&self) -> Value {
        match self {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Specific(n) => json!({"type": "tool", "name": n}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_choice_exports() {
        assert_eq!(ToolChoice::parse("any"), ToolChoice::Required);
        assert_eq!(ToolChoice::parse("auto").to_openai(), json!("auto"));
        assert_eq!(
            ToolChoice::parse("add").to_openai(),
            json!({"type": "function", "function": {"name": "add"}})
        );
        assert_eq!(ToolChoice::Required.to_anthropic(), json!({"type": "any"}));
        assert_eq!(ToolChoice::None.to_anthropic(), json!({"type": "none"}));
        assert_eq!(
            ToolChoice::Specific("add".into()).to_anthropic(),
            json!({"type": "tool", "name": "add"})
        );
    }
}
