//! The ways a call's arguments break its tool's JSON Schema, one by one and each with
//! where it is: what the model reads to fix the call (LangChain's `loc: msg` lines),
//! and what LangChain's `ToolInvocationError.filtered_errors` holds (pydantic's
//! `ErrorDetails` shape), so a handler ported from LangChain can read them.

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::ValidationError;
use serde_json::Value;

/// One way the arguments break the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgError {
    /// The property names (strings) and item indexes (integers) down to the value at
    /// fault; for a missing property, ending with that property (as pydantic's `loc`).
    pub loc: Vec<Value>,
    /// The validator's words for it.
    pub message: String,
    /// The schema keyword that failed (`required`, `type`, ...).
    pub kind: String,
    /// The value at fault (for a missing property, the object that lacks it).
    pub input: Value,
}

impl ArgError {
    /// `e` with its location spelt out.
    pub fn of(e: &ValidationError<'_>) -> Self {
        let mut loc: Vec<Value> = e
            .instance_path()
            .iter()
            .map(|s| match s {
                LocationSegment::Property(p) => Value::String(p.into_owned()),
                LocationSegment::Index(i) => Value::from(i),
            })
            .collect();
        if let ValidationErrorKind::Required { property } = e.kind() {
            loc.push(property.clone());
        }
        ArgError {
            loc,
            message: e.to_string(),
            kind: e.kind().keyword().to_owned(),
            input: e.instance().clone().into_owned(),
        }
    }

    /// `loc: message`, the location's parts joined by dots (LangChain's line for one
    /// error); the message alone for an error about the arguments as a whole.
    pub fn line(&self) -> String {
        if self.loc.is_empty() {
            return self.message.clone();
        }
        let loc: Vec<String> = self
            .loc
            .iter()
            .map(|p| match p {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        format!("{}: {}", loc.join("."), self.message)
    }
}

/// The engine's one-line text for a schema error: the message, after the JSON
/// pointer of the value at fault when it is not the arguments themselves.
pub fn schema_error_text(e: &ValidationError<'_>) -> String {
    let path = e.instance_path().to_string();
    if path.is_empty() {
        e.to_string()
    } else {
        format!("at `{path}`: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, args: Value) -> Vec<ArgError> {
        let v = jsonschema::validator_for(&schema).unwrap();
        v.iter_errors(&args).map(|e| ArgError::of(&e)).collect()
    }

    #[test]
    fn a_missing_property_is_located_at_that_property() {
        let schema = json!({"type": "object", "properties": {"limit": {"type": "integer"}},
                            "required": ["limit"]});
        let e = errors(schema, json!({}));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].loc, vec![json!("limit")]);
        assert_eq!(e[0].kind, "required");
        assert_eq!(e[0].line(), "limit: \"limit\" is a required property");
    }

    #[test]
    fn a_nested_value_is_located_by_names_and_indexes() {
        let schema = json!({"type": "object", "properties": {"ids": {"type": "array",
                            "items": {"type": "integer"}}}});
        let e = errors(schema, json!({"ids": [1, "x"]}));
        assert_eq!(e[0].loc, vec![json!("ids"), json!(1)]);
        assert_eq!(e[0].input, json!("x"));
        assert!(e[0].line().starts_with("ids.1: "), "{}", e[0].line());
    }

    #[test]
    fn an_error_about_the_whole_arguments_has_no_location() {
        let schema = json!({"type": "object", "additionalProperties": false});
        let e = errors(schema, json!({"x": 1}));
        assert!(e[0].loc.is_empty());
        assert_eq!(e[0].line(), e[0].message);
    }
}
