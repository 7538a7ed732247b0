//! Shared by the property tests (`tests/fuzz.rs` and the crate's own
//! `model/fuzz_tests.rs`, which includes this file by path): how many cases to run,
//! and JSON values shaped like what the parsers meet — the words of OpenAPI, JSON
//! Schema and the providers' wire formats mixed with arbitrary text and numbers.

use proptest::prelude::*;
use serde_json::Value;

/// 10,000 cases per property by default; `IRONLOOP_FUZZ_CASES` sets another number
/// (the nightly-style run: `IRONLOOP_FUZZ_CASES=1000000 cargo test --release fuzz`).
pub fn config() -> ProptestConfig {
    let cases = std::env::var("IRONLOOP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Words the parsers give meaning to.
pub const WORDS: &[&str] = &[
    "type",
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "null",
    "properties",
    "items",
    "required",
    "enum",
    "$ref",
    "#/components/schemas/A",
    "#/components/parameters/p",
    "components",
    "schemas",
    "A",
    "parameters",
    "in",
    "path",
    "query",
    "header",
    "cookie",
    "name",
    "schema",
    "openapi",
    "3.0.3",
    "3.1.0",
    "2.0",
    "swagger",
    "info",
    "title",
    "version",
    "paths",
    "/pets",
    "/pets/{id}",
    "id",
    "get",
    "post",
    "put",
    "delete",
    "servers",
    "url",
    "http://127.0.0.1:9/v1",
    "/rel",
    "requestBody",
    "content",
    "application/json",
    "operationId",
    "responses",
    "200",
    "allOf",
    "oneOf",
    "anyOf",
    "choices",
    "message",
    "delta",
    "content",
    "tool_calls",
    "function",
    "arguments",
    "index",
    "finish_reason",
    "stop",
    "tool_calls",
    "length",
    "role",
    "assistant",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "error",
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "text",
    "text_delta",
    "input_json_delta",
    "partial_json",
    "tool_use",
    "input",
    "stop_reason",
    "end_turn",
    "tool_use",
    "input_tokens",
    "output_tokens",
    "image",
    "resource",
    "resource_link",
    "uri",
    "blob",
    "mimeType",
    "data",
    "structuredContent",
    "isError",
];

/// A word or arbitrary text.
pub fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(WORDS).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// A JSON value nested up to 4 levels, mostly made of [`WORDS`].
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..5).prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        word().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((word(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// An object whose keys are mostly [`WORDS`], nested like [`json_value`].
pub fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((word(), json_value()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

/// Text that is mostly JSON-ish or YAML-ish: tokens of both, words and noise.
pub fn messy_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        4 => prop::sample::select(&[
            "{", "}", "[", "]", ":", ",", "\"", "'", "-", "- ", "\n", "\n  ", "\n    ", " ",
            "&a ", "*a", "&b ", "*b", "!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "? ",
            "|", ">", "#", "---", "...", "null", "true", "1", "-2.5e3", ".inf", "~", "\\u0000",
            "\t", "%YAML 1.2\n", "!tag ",
        ][..]).prop_map(str::to_owned),
        3 => word(),
        1 => any::<String>(),
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}
