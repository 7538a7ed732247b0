use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;
type CallFn = Arc<dyn Fn(Value, ToolContext) -> BoxFut<'static> + Send + Sync>;

/// Builds a tool from a Rust closure, declaring its parameters one by one.
///
/// ```
/// use ironloop::tool::{Tool, ToolOutput};
/// use serde_json::json;
/// let add = <dyn Tool>::builder("add", "Adds two integers.")
///     .param("a", json!({"type": "integer"}), "first")
///     .param("b", json!({"type": "integer"}), "second")
///     .call(|args, _ctx| async move {
///         Ok(ToolOutput::json(json!(args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap())))
///     });
/// assert_eq!(add.definition().parameters["required"], json!(["a", "b"]));
/// ```
pub struct ToolBuilder {
    name: String,
    description: String,
    properties: Map<String, Value>,
    required: Vec<String>,
    timeout: Option<Duration>,
    label: Option<String>,
}

impl ToolBuilder {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ToolBuilder {
            name: name.into(),
            description: description.into(),
            properties: Map::new(),
            required: Vec::new(),
            timeout: None,
            label: None,
        }
    }

    fn add(mut self, name: &str, mut schema: Value, description: &str, required: bool) -> Self {
        if !description.is_empty() {
            if let Value::Object(o) = &mut schema {
                o.insert("description".into(), Value::String(description.into()));
            }
        }
        self.properties.insert(name.to_owned(), schema);
        self.required.retain(|r| r != name);
        if required {
            self.required.push(name.to_owned());
        }
        self
    }

    /// A required parameter with its JSON Schema.
    pub fn param(self, name: &str, schema: Value, description: &str) -> Self {
        self.add(name, schema, description, true)
    }

    /// An optional parameter with its JSON Schema.
    pub fn param_opt(self, name: &str, schema: Value, description: &str) -> Self {
        self.add(name, schema, description, false)
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    /// A human-readable label for the tool's calls ([`Tool::label`]).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Finishes the tool with the function that runs it.
    pub fn call<F, Fut>(self, f: F) -> FnTool
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let parameters = json!({
            "type": "object",
            "properties": self.properties,
            "required": self.required,
        });
        FnTool {
            definition: ToolDefinition::new(self.name, self.description, parameters),
            timeout: self.timeout,
            label: self.label,
            f: Arc::new(move |a, c| Box::pin(f(a, c))),
        }
    }
}

/// A tool made by [`ToolBuilder`].
pub struct FnTool {
    definition: ToolDefinition,
    timeout: Option<Duration>,
    label: Option<String>,
    f: CallFn,
}

#[async_trait]
impl Tool for FnTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    // Written out rather than `async fn`: the closure's future is already boxed, and
    // `async fn` would box it a second time on every call.
    fn call<'life0, 'async_trait>(
        &'life0 self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFut<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        (self.f)(args, ctx)
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }
}
