use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The half of a tool that is sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// A JSON Schema for the arguments object.
    pub parameters: Value,
}

impl ToolDefinition {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// An entry of the OpenAI Chat Completions `tools` list.
    pub fn to_openai(&self) -> Value {
        serde_json::to_value(self.openai()).unwrap_or_default()
    }

    /// [`ToolDefinition::to_openai`] without the copy: what a request serialises.
    pub fn openai(&self) -> impl Serialize + '_ {
        #[derive(Serialize)]
        struct Entry<'a> {
            r#type: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        Entry {
            r#type: "function",
            function: Function {
                name: &self.name,
                description: &self.description,
                parameters: &self.parameters,
            },
        }
    }

    /// An entry of the Anthropic Messages `tools` list.
    pub fn to_anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_both_provider_formats() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let d = ToolDefinition::new("add", "Adds.", schema.clone());
        assert_eq!(d.to_openai()["function"]["parameters"], schema);
        assert_eq!(d.to_openai()["type"], "function");
        assert_eq!(d.to_anthropic()["input_schema"], schema);
        assert_eq!(d.to_anthropic()["name"], "add");
    }
}
