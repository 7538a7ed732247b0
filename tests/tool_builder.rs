//! Integration tests of `Tool::builder`: the schema it declares, its timeout, and
//! the tool it builds.

use std::sync::Arc;
use std::time::Duration;

use ironloop::{
    Executor, RunContext, Tool, ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use serde_json::{json, Value};

fn echo_args() -> impl Fn(Value, ToolContext) -> std::future::Ready<Result<ToolOutput, ToolError>> {
    |args, _| std::future::ready(Ok(ToolOutput::json(args)))
}

#[test]
fn param_and_param_opt_build_properties_and_required() {
    let t = <dyn Tool>::builder("search", "Searches the docs.")
        .param("query", json!({"type": "string"}), "what to look for")
        .param_opt(
            "limit",
            json!({"type": "integer", "minimum": 1}),
            "how many hits",
        )
        .param("lang", json!({"type": "string", "enum": ["en", "fr"]}), "")
        .call(echo_args());
    let d = t.definition();
    assert_eq!(d.name, "search");
    assert_eq!(d.description, "Searches the docs.");
    assert_eq!(
        d.parameters,
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "limit": {"type": "integer", "minimum": 1, "description": "how many hits"},
                // An empty description adds no `description` key.
                "lang": {"type": "string", "enum": ["en", "fr"]},
            },
            // Required parameters in declaration order; optional ones absent.
            "required": ["query", "lang"],
        })
    );
}

#[test]
fn no_parameters_is_an_empty_object_schema() {
    let t = <dyn Tool>::builder("now", "The time.").call(echo_args());
    assert_eq!(
        t.definition().parameters,
        json!({"type": "object", "properties": {}, "required": []})
    );
    assert_eq!(t.timeout(), None);
}

#[test]
fn redeclaring_a_parameter_replaces_it() {
    let t = <dyn Tool>::builder("f", "")
        .param("a", json!({"type": "integer"}), "first")
        .param("b", json!({"type": "integer"}), "")
        .param_opt("a", json!({"type": "number"}), "now optional")
        .call(echo_args());
    let p = &t.definition().parameters;
    assert_eq!(p["required"], json!(["b"]));
    assert_eq!(
        p["properties"]["a"],
        json!({"type": "number", "description": "now optional"})
    );

    let t = <dyn Tool>::builder("g", "")
        .param_opt("a", json!({"type": "integer"}), "")
        .param("a", json!({"type": "integer"}), "")
        .call(echo_args());
    assert_eq!(t.definition().parameters["required"], json!(["a"]));
}

#[test]
fn a_boolean_schema_is_kept_as_it_is() {
    // `true` (anything goes) has no room for a description; it is kept unchanged.
    let t = <dyn Tool>::builder("any", "")
        .param("x", json!(true), "anything")
        .call(echo_args());
    assert_eq!(t.definition().parameters["properties"]["x"], json!(true));
}

#[test]
fn timeout_is_reported_by_the_tool() {
    let t = <dyn Tool>::builder("slow", "")
        .timeout(Duration::from_millis(250))
        .call(echo_args());
    assert_eq!(t.timeout(), Some(Duration::from_millis(250)));
}

#[tokio::test]
async fn the_built_tool_runs_its_closure_with_args_and_context() {
    let t = <dyn Tool>::builder("whoami", "")
        .param("x", json!({"type": "integer"}), "")
        .call(|args, ctx| async move {
            Ok(ToolOutput::json(json!({
                "x": args["x"],
                "id": ctx.tool_call_id,
                "name": ctx.tool_name,
            })))
        });
    let out = t
        .call(json!({"x": 7}), ToolContext::new("call_9", "whoami"))
        .await
        .unwrap();
    let want = json!({"x": 7, "id": "call_9", "name": "whoami"});
    assert_eq!(out.artifact, Some(want.clone()));
    assert_eq!(
        serde_json::from_str::<Value>(&out.content.text()).unwrap(),
        want
    );
}

#[tokio::test]
async fn the_declared_schema_is_what_the_executor_enforces() {
    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(
        <dyn Tool>::builder("search", "")
            .param("query", json!({"type": "string"}), "")
            .param_opt("limit", json!({"type": "integer", "minimum": 1}), "")
            .call(echo_args()),
    ))
    .unwrap();
    let calls = [
        ToolCall::new("ok_min", "search", json!({"query": "q"})),
        ToolCall::new("ok_all", "search", json!({"query": "q", "limit": 3})),
        ToolCall::new("no_query", "search", json!({"limit": 3})),
        ToolCall::new("bad_limit", "search", json!({"query": "q", "limit": 0})),
    ];
    let results = Executor::new(reg)
        .execute(&calls, &RunContext::default())
        .await;
    assert!(results[0].outcome.is_ok());
    assert_eq!(
        results[1].outcome.as_ref().unwrap().artifact,
        Some(json!({"query": "q", "limit": 3}))
    );
    for r in &results[2..] {
        match &r.outcome {
            Err(ToolError::InvalidArgs { tool, reason }) => {
                assert_eq!(tool, "search");
                let expect = if r.tool_call_id == "no_query" {
                    "query"
                } else {
                    "/limit"
                };
                assert!(reason.contains(expect), "{}: {reason}", r.tool_call_id);
            }
            other => panic!("{}: {other:?}", r.tool_call_id),
        }
    }
}

#[tokio::test]
async fn a_label_and_a_child_run_reach_the_events_and_the_tool_message() {
    use ironloop::tool::CallEvent;
    use std::sync::Mutex;

    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(
        <dyn Tool>::builder("delegate", "Runs a sub-agent.")
            .label("Asking the helper")
            .call(|_, ctx: ToolContext| async move {
                assert_eq!(ctx.label.as_deref(), Some("Asking the helper"));
                assert!(ctx.set_child_run("run-7"));
                // The first id stays.
                assert!(!ctx.set_child_run("run-8"));
                ctx.update(Arc::new(json!({"sub": "step"})));
                Ok(ToolOutput::text("helped"))
            }),
    ))
    .unwrap();
    reg.register(Arc::new(<dyn Tool>::builder("plain", "").call(echo_args())))
        .unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let run = RunContext {
        events: Some(Arc::new(move |ev: CallEvent<'_>| {
            let line = match ev {
                CallEvent::Start { call, label, .. } => format!("start {} {label:?}", call.id),
                CallEvent::Update {
                    tool_call_id,
                    child_run,
                    ..
                } => format!("update {tool_call_id} {child_run:?}"),
                CallEvent::End { call, outcome, .. } => format!(
                    "end {} {:?}",
                    call.id,
                    outcome.as_ref().ok().and_then(|o| o.child_run.clone())
                ),
            };
            log.lock().unwrap().push(line);
        })),
        ..RunContext::default()
    };
    let calls = [
        ToolCall::new("d1", "delegate", json!({})),
        ToolCall::new("p1", "plain", json!({})),
    ];
    let results = Executor::new(reg).execute(&calls, &run).await;
    let mut lines = seen.lock().unwrap().clone();
    lines.sort();
    assert_eq!(
        lines,
        [
            "end d1 Some(\"run-7\")",
            "end p1 None",
            "start d1 Some(\"Asking the helper\")",
            "start p1 None",
            "update d1 Some(\"run-7\")",
        ]
    );
    let msg = results[0].to_message();
    assert_eq!(
        msg.response_metadata.get(ironloop::executor::CHILD_LOOP_ID),
        Some(&json!("run-7"))
    );
    assert!(results[1].to_message().response_metadata.is_empty());
}
