//! Property tests (proptest) of the parsers that read outside input, through the
//! public API: OpenAPI specs as text (JSON or YAML) and as values, tool-call
//! arguments checked against a tool's schema by the executor, and MCP results. Each
//! property runs 10,000 cases (`IRONLOOP_FUZZ_CASES` for more); every case must end
//! in a value or an error — a panic fails the test. The model decoders' properties
//! are in `src/model/fuzz_tests.rs`.

#[path = "support/fuzz.rs"]
mod fuzz;

use std::sync::Arc;

use fuzz::{config, json_object, json_value, messy_text};
use ironloop::{Executor, RunContext, Tool, ToolCall, ToolOutput, ToolRegistry};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The OpenAPI parsers' properties.
#[cfg(feature = "openapi")]
mod openapi_specs {
    use super::fuzz::word;
    use super::*;
    use ironloop::sources::openapi::{parse_spec, OpenApiOptions, OpenApiToolset};

    /// A spec around generated parts: the top is right, the rest is anything.
    fn spec() -> impl Strategy<Value = Value> {
        let op = json_object();
        let item = prop::collection::vec((word(), op), 0..4)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()));
        (
            prop::collection::vec((word(), item), 0..4),
            json_object(),
            json_value(),
        )
            .prop_map(|(paths, components, servers)| {
                json!({
                    "openapi": "3.0.3",
                    "info": {"title": "t", "version": "1"},
                    "servers": servers,
                    "paths": Value::Object(paths.into_iter().collect()),
                    "components": components,
                })
            })
    }

    fn small_limits() -> OpenApiOptions {
        OpenApiOptions {
            base_url: Some("http://127.0.0.1:9".into()),
            max_spec_nodes: 10_000,
            ..OpenApiOptions::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn spec_text_parses_or_fails(text in messy_text()) {
            // Only text that parses goes on to become tools.
            if let Ok(v) = parse_spec(&text, &small_limits()) {
                if v.get("openapi").is_some() {
                    let _ = OpenApiToolset::from_str(&text, small_limits());
                }
            }
        }

        #[test]
        fn spec_json_text_parses_or_fails(spec in spec()) {
            let _ = parse_spec(&spec.to_string(), &small_limits());
        }
    }

    proptest! {
        // Each case builds a toolset, and with it an HTTP client (cheap since the TLS
        // setup is made once per process; it was ~75 ms a client, and 300 cases).
        #![proptest_config(config())]

        #[test]
        fn specs_become_tools_or_fail(spec in spec()) {
            if let Ok(ts) = OpenApiToolset::from_value(spec, small_limits()) {
                for t in ts.tools() {
                    prop_assert!(t.definition().parameters.is_object());
                }
            }
        }

    }
}

/// The MCP result reader's property.
#[cfg(feature = "mcp")]
mod mcp_results {
    use super::*;
    use ironloop::sources::mcp::{result_text, McpCallResult};

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn mcp_results_become_text(
            content in prop::collection::vec(json_value(), 0..6),
            structured in prop::option::of(json_value()),
            is_error in any::<bool>(),
        ) {
            let r = McpCallResult { content, structured_content: structured, is_error };
            let _ = result_text(&r);
        }
    }
}

/// A tool with parameters of several shapes; it answers with its arguments.
fn registry() -> Arc<ToolRegistry> {
    let item = json!({"type": "object", "properties": {"d": {"type": "number"}},
                      "required": ["d"]});
    let tool = <dyn Tool>::builder("t", "Echoes its arguments.")
        .param("a", json!({"type": "integer", "minimum": 0}), "a count")
        .param_opt("b", json!({"type": "string", "enum": ["x", "y"]}), "")
        .param_opt("c", json!({"type": "array", "items": item}), "")
        .param_opt(
            "e",
            json!({"anyOf": [{"type": "null"}, {"type": "boolean"}]}),
            "",
        )
        .call(|args, _ctx| async move { Ok(ToolOutput::json(args)) });
    let r = Arc::new(ToolRegistry::new());
    r.register(Arc::new(tool)).expect("valid schema");
    r
}

/// What the executor makes of `args` before validating them (a string is JSON text,
/// empty or null is `{}`), or `None` when it must refuse them outright.
fn as_read(args: &Value) -> Option<Value> {
    let v = match args {
        Value::Null => return Some(json!({})),
        Value::String(s) if s.trim().is_empty() => return Some(json!({})),
        Value::String(s) => serde_json::from_str(s).ok()?,
        v => v.clone(),
    };
    v.is_object().then_some(v)
}

/// Arguments: anything, or text the model wrote (JSON or not) read as the decoders do.
fn args() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => json_object(),
        1 => json_value(),
        1 => (0i64..3, prop::sample::select(vec!["x", "y", "z"]), json_value())
            .prop_map(|(a, b, c)| json!({"a": a, "b": b, "c": [{"d": c}]})),
        // Text as a provider sends it: the executor parses it.
        1 => messy_text().prop_map(Value::String),
        1 => json_object().prop_map(|v| Value::String(v.to_string())),
    ]
}

#[test]
fn tool_call_arguments_are_checked_against_the_schema() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let exec = Executor::new(registry());
    let validator = jsonschema::validator_for(&registry_schema()).unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(config());
    runner
        .run(&prop::collection::vec(args(), 1..4), |calls| {
            let calls: Vec<ToolCall> = calls
                .into_iter()
                .enumerate()
                .map(|(i, a)| ToolCall::new(format!("c{i}"), "t", a))
                .collect();
            let results = rt.block_on(exec.execute(&calls, &RunContext::default()));
            prop_assert_eq!(results.len(), calls.len());
            for (call, r) in calls.iter().zip(&results) {
                prop_assert_eq!(&r.tool_call_id, &call.id);
                let valid = as_read(&call.arguments).is_some_and(|a| validator.is_valid(&a));
                prop_assert_eq!(r.outcome.is_ok(), valid, "{:?}", call.arguments);
            }
            Ok(())
        })
        .unwrap();
}

fn registry_schema() -> Value {
    registry().get("t").unwrap().definition().parameters.clone()
}
