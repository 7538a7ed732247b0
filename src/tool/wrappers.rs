//! Tools that wrap other tools to change how their results reach the model.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

type ErrorFormatter = Arc<dyn Fn(&ToolError) -> String + Send + Sync>;

/// Turns a failure of the inner tool into an ordinary (successful) result whose text
/// is the formatted error, so the model reads it as an observation.
pub struct HandleError {
    inner: Arc<dyn Tool>,
    format: ErrorFormatter,
}

impl HandleError {
    pub fn new(inner: Arc<dyn Tool>) -> Self {
        HandleError {
            inner,
            format: Arc::new(|e| format!("Error: {e}")),
        }
    }

    pub fn with_formatter(
        inner: Arc<dyn Tool>,
        f: impl Fn(&ToolError) -> String + Send + Sync + 'static,
    ) -> Self {
        HandleError {
            inner,
            format: Arc::new(f),
        }
    }
}

#[async_trait]
impl Tool for HandleError {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match self.inner.call(args, ctx).await {
            Ok(out) => Ok(out),
            Err(e @ ToolError::Cancelled { .. }) => Err(e),
            Err(e) => Ok(ToolOutput::text((self.format)(&e))),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.inner.timeout()
    }
}

/// Marks every successful result of the inner tool as final: the agent loop ends
/// with it instead of calling the model again.
pub struct ReturnDirect {
    inner: Arc<dyn Tool>,
}

impl ReturnDirect {
    pub fn new(inner: Arc<dyn Tool>) -> Self {
        ReturnDirect { inner }
    }
}

#[async_trait]
impl Tool for ReturnDirect {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut out = self.inner.call(args, ctx).await?;
        out.return_direct = true;
        Ok(out)
    }

    fn timeout(&self) -> Option<Duration> {
        self.inner.timeout()
    }
}
