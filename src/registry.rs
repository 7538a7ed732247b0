//! The concurrent name → tool map that an executor dispatches through.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::tool::{Tool, ToolDefinition, ToolError};

/// A registered tool with its argument validator, compiled once at registration so
/// that each call pays only for the validation itself.
pub struct Registered {
    pub tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

impl Registered {
    /// Checks `args` against the tool's schema; the error names the tool, the
    /// offending location and what was wrong, for the model to correct.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        // The common case (valid arguments) stops at the first check of each keyword
        // and builds no error values.
        if self.validator.is_valid(args) {
            return Ok(());
        }
        let errors: Vec<String> = self
            .validator
            .iter_errors(args)
            .map(|e| schema_error_text(&e))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArgs {
                tool: self.tool.definition().name.clone(),
                reason: errors.join("; "),
            })
        }
    }
}

#[derive(Default)]
struct Inner {
    tools: BTreeMap<String, Arc<Registered>>,
    deny: HashSet<String>,
    allow: Option<HashSet<String>>,
}

impl Inner {
    /// Whether the deny / allow lists let `name` run.
    fn runnable(&self, name: &str) -> bool {
        !self.deny.contains(name) && self.allow.as_ref().is_none_or(|a| a.contains(name))
    }
}

/// Tools by name. Cheap to share (`Arc<ToolRegistry>`), safe to change while runs
/// use it: a run sees each tool as it was when the call looked it up.
#[derive(Default)]
pub struct ToolRegistry {
    inner: RwLock<Inner>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool`, replacing any tool of the same name. Fails when the tool's
    /// name is one the providers refuse ([`crate::tool::name::check`]) or its
    /// parameters are not a valid JSON Schema.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<()> {
        let def = tool.definition();
        crate::tool::name::check(&def.name)?;
        let validator =
            jsonschema::validator_for(&def.parameters).map_err(|e| Error::InvalidSchema {
                tool: def.name.clone(),
                reason: e.to_string(),
            })?;
        let name = def.name.clone();
        let entry = Arc::new(Registered { tool, validator });
        self.write().tools.insert(name, entry);
        Ok(())
    }

    pub fn unregister(&self, name: &str) -> bool {
        self.write().tools.remove(name).is_some()
    }

    /// Tools on the deny list are never executed: their calls get a `Blocked` error.
    pub fn deny(&self, name: impl Into<String>) {
        self.write().deny.insert(name.into());
    }

    /// When set, only these tools may run; every other call gets a `Blocked` error.
    pub fn allow_only<I: IntoIterator<Item = S>, S: Into<String>>(&self, names: I) {
        self.write().allow = Some(names.into_iter().map(Into::into).collect());
    }

    /// Replaces both lists at once (`ToolNode(deny=, allow_only=)` and its setters):
    /// a step that starts afterwards sees the new lists, a call already resolved keeps
    /// running. `allow = None` lets every tool not denied run.
    pub fn set_permissions<I, S>(&self, deny: I, allow: Option<Vec<String>>)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut inner = self.write();
        inner.deny = deny.into_iter().map(Into::into).collect();
        inner.allow = allow.map(|a| a.into_iter().collect());
    }

    /// The deny list (sorted) and the allow list (sorted; `None` when not set).
    pub fn permissions(&self) -> (Vec<String>, Option<Vec<String>>) {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        let mut deny: Vec<String> = inner.deny.iter().cloned().collect();
        deny.sort();
        let allow = inner.allow.as_ref().map(|a| {
            let mut a: Vec<String> = a.iter().cloned().collect();
            a.sort();
            a
        });
        (deny, allow)
    }

    /// The names of the tools the lists let run: what a model may be offered.
    pub fn runnable_names(&self) -> Vec<String> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner
            .tools
            .keys()
            .filter(|n| inner.runnable(n))
            .cloned()
            .collect()
    }

    /// Whether a call of one of `names` would run under a time limit of its tool's
    /// own (unknown names have none): one look at the map for a whole message.
    pub fn any_timeout<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        names.into_iter().any(|n| {
            inner
                .tools
                .get(n)
                .is_some_and(|r| r.tool.timeout().is_some())
        })
    }

    /// The tool to run for a call of `name`, or the error the model should see.
    pub fn resolve(&self, name: &str) -> Result<Arc<Registered>, ToolError> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if inner.deny.contains(name) {
            return Err(ToolError::Blocked {
                tool: name.to_owned(),
                reason: "it is not allowed here (it is on the deny list); do not call it again"
                    .into(),
            });
        }
        if let Some(allow) = &inner.allow {
            if !allow.contains(name) {
                return Err(ToolError::Blocked {
                    tool: name.to_owned(),
                    reason:
                        "it is not allowed here (it is not on the allow list); do not call it again"
                            .into(),
                });
            }
        }
        inner
            .tools
            .get(name)
            .cloned()
            .ok_or_else(|| ToolError::NotFound {
                tool: name.to_owned(),
                // Only what the model may call: naming a denied tool would invite a
                // call that is then blocked.
                available: inner
                    .tools
                    .keys()
                    .filter(|n| inner.runnable(n))
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.tools.get(name).map(|r| r.tool.clone())
    }

    /// The definitions of the runnable tools (deny/allow lists applied), by name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner
            .tools
            .iter()
            .filter(|(n, _)| inner.runnable(n))
            .map(|(_, r)| r.tool.definition().clone())
            .collect()
    }

    pub fn names(&self) -> Vec<String> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.tools.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .tools
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a JSON Schema error reads in a message: where in the value it is (its JSON
/// pointer, unless it is the whole value), then what is wrong.
pub fn schema_error_text(e: &jsonschema::ValidationError<'_>) -> String {
    let path = e.instance_path().to_string();
    if path.is_empty() {
        e.to_string()
    } else {
        format!("at `{path}`: {e}")
    }
}
