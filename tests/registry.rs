//! Integration tests of the `ToolRegistry`: replacement, deny / allow lists, schema
//! checks at registration, and what the executor sees through it.

use std::sync::Arc;

use ironloop::tool::FnTool;
use ironloop::{Error, Executor, RunContext, Tool, ToolCall, ToolError, ToolOutput, ToolRegistry};
use serde_json::json;

fn constant(name: &str, description: &str, reply: &'static str) -> FnTool {
    <dyn Tool>::builder(name, description)
        .param_opt("x", json!({"type": "integer"}), "")
        .call(move |_, _| async move { Ok(ToolOutput::text(reply)) })
}

fn names(defs: &[ironloop::ToolDefinition]) -> Vec<&str> {
    defs.iter().map(|d| d.name.as_str()).collect()
}

async fn run(reg: &Arc<ToolRegistry>, name: &str) -> Result<String, ToolError> {
    let results = Executor::new(reg.clone())
        .execute(
            &[ToolCall::new("c", name, json!({}))],
            &RunContext::default(),
        )
        .await;
    assert_eq!(results.len(), 1);
    results
        .into_iter()
        .next()
        .unwrap()
        .outcome
        .map(|o| o.content.text())
}

#[tokio::test]
async fn register_replaces_a_tool_of_the_same_name() {
    let reg = Arc::new(ToolRegistry::new());
    assert!(reg.is_empty());
    reg.register(Arc::new(constant("greet", "v1", "hello")))
        .unwrap();
    assert_eq!(run(&reg, "greet").await.unwrap(), "hello");

    reg.register(Arc::new(constant("greet", "v2", "bonjour")))
        .unwrap();
    assert_eq!(reg.len(), 1);
    assert_eq!(reg.names(), ["greet"]);
    assert_eq!(reg.definitions()[0].description, "v2");
    assert_eq!(reg.get("greet").unwrap().definition().description, "v2");
    assert_eq!(run(&reg, "greet").await.unwrap(), "bonjour");
}

#[tokio::test]
async fn unregister_removes_and_reports_whether_it_did() {
    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(constant("a", "", "a"))).unwrap();
    reg.register(Arc::new(constant("b", "", "b"))).unwrap();
    assert!(reg.unregister("a"));
    assert!(!reg.unregister("a"));
    assert!(reg.get("a").is_none());
    match run(&reg, "a").await {
        Err(ToolError::NotFound { tool, available }) => {
            assert_eq!(tool, "a");
            assert_eq!(available, "b");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_deny_list_blocks_calls_and_hides_definitions() {
    let reg = Arc::new(ToolRegistry::new());
    for n in ["alpha", "beta", "gamma"] {
        reg.register(Arc::new(constant(n, "", "ran"))).unwrap();
    }
    reg.deny("beta");
    match run(&reg, "beta").await {
        Err(ToolError::Blocked { tool, reason }) => {
            assert_eq!(tool, "beta");
            assert!(reason.contains("deny"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(run(&reg, "alpha").await.unwrap(), "ran");
    assert_eq!(names(&reg.definitions()), ["alpha", "gamma"]);
    // Still registered: denying is a policy, not a removal.
    assert_eq!(reg.names(), ["alpha", "beta", "gamma"]);
    // A denied name is blocked even when no such tool is registered.
    reg.deny("ghost");
    assert!(matches!(
        run(&reg, "ghost").await,
        Err(ToolError::Blocked { .. })
    ));
    // An unknown tool's error lists only the tools the model may call.
    match run(&reg, "delta").await {
        Err(ToolError::NotFound { available, .. }) => assert_eq!(available, "alpha, gamma"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn allow_only_blocks_every_other_tool() {
    let reg = Arc::new(ToolRegistry::new());
    for n in ["read", "write", "delete"] {
        reg.register(Arc::new(constant(n, "", n))).unwrap();
    }
    reg.allow_only(["read", "write"]);
    assert_eq!(run(&reg, "read").await.unwrap(), "read");
    assert_eq!(run(&reg, "write").await.unwrap(), "write");
    match run(&reg, "delete").await {
        Err(ToolError::Blocked { tool, reason }) => {
            assert_eq!(tool, "delete");
            assert!(reason.contains("allow"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(names(&reg.definitions()), ["read", "write"]);

    // Deny wins over allow; a later allow_only replaces the earlier one.
    reg.deny("write");
    assert!(matches!(
        run(&reg, "write").await,
        Err(ToolError::Blocked { .. })
    ));
    assert_eq!(names(&reg.definitions()), ["read"]);
    reg.allow_only(["delete"]);
    assert_eq!(run(&reg, "delete").await.unwrap(), "delete");
    assert!(matches!(
        run(&reg, "read").await,
        Err(ToolError::Blocked { .. })
    ));
    assert_eq!(names(&reg.definitions()), ["delete"]);

    // Allowed but never registered: the model is told it does not exist.
    reg.allow_only(["delete", "missing"]);
    match run(&reg, "missing").await {
        Err(ToolError::NotFound { available, .. }) => assert_eq!(available, "delete"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_invalid_schema_is_rejected_at_registration() {
    let reg = ToolRegistry::new();
    let good = constant("lookup", "good", "ok");
    reg.register(Arc::new(good)).unwrap();

    let bad = <dyn Tool>::builder("lookup", "bad")
        .param("q", json!({"type": "strng"}), "query")
        .call(|_, _| async { Ok(ToolOutput::text("never")) });
    match reg.register(Arc::new(bad)) {
        Err(Error::InvalidSchema { tool, reason }) => {
            assert_eq!(tool, "lookup");
            assert!(!reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let err = reg
        .register(Arc::new(
            <dyn Tool>::builder("other", "")
                .param("n", json!({"type": "integer", "minimum": "zero"}), "")
                .call(|_, _| async { Ok(ToolOutput::text("never")) }),
        ))
        .unwrap_err();
    assert!(err.to_string().contains("`other`"), "{err}");

    // A failed registration changes nothing: the good tool is still there.
    assert_eq!(reg.names(), ["lookup"]);
    assert_eq!(reg.definitions()[0].description, "good");
}

#[test]
fn definitions_are_sorted_by_name_and_exportable() {
    let reg = ToolRegistry::new();
    for n in ["zeta", "alpha", "mu"] {
        reg.register(Arc::new(constant(n, &format!("{n} tool"), "")))
            .unwrap();
    }
    let defs = reg.definitions();
    assert_eq!(names(&defs), ["alpha", "mu", "zeta"]);
    let openai = defs[0].to_openai();
    assert_eq!(openai["function"]["name"], "alpha");
    assert_eq!(openai["function"]["description"], "alpha tool");
    assert_eq!(
        openai["function"]["parameters"]["properties"]["x"]["type"],
        "integer"
    );
    assert_eq!(defs[1].to_anthropic()["input_schema"]["type"], "object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_can_change_while_runs_use_it() {
    let reg = Arc::new(ToolRegistry::new());
    reg.register(Arc::new(constant("t", "", "first"))).unwrap();
    let exec = Executor::new(reg.clone());
    let calls: Vec<ToolCall> = (0..200)
        .map(|i| ToolCall::new(format!("c{i}"), "t", json!({})))
        .collect();
    let writer = {
        let reg = reg.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                let reply = if i % 2 == 0 { "second" } else { "first" };
                reg.register(Arc::new(constant("t", "", reply))).unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    let results = exec.execute(&calls, &RunContext::default()).await;
    writer.await.unwrap();
    // Every call saw one whole version of the tool or the other.
    for r in &results {
        let t = r.outcome.as_ref().unwrap().content.text();
        assert!(t == "first" || t == "second", "{t}");
    }
    assert_eq!(reg.len(), 1);
}

#[tokio::test]
async fn set_permissions_replaces_both_lists_at_once() {
    let reg = Arc::new(ToolRegistry::new());
    for n in ["read", "write", "bash"] {
        reg.register(Arc::new(constant(n, "", n))).unwrap();
    }
    reg.set_permissions(["bash"], Some(vec!["read".to_owned(), "bash".to_owned()]));
    assert_eq!(
        reg.permissions(),
        (
            vec!["bash".to_owned()],
            Some(vec!["bash".to_owned(), "read".to_owned()])
        )
    );
    assert_eq!(reg.runnable_names(), ["read"]);
    match run(&reg, "bash").await {
        Err(ToolError::Blocked { tool, reason }) => {
            assert_eq!(tool, "bash");
            assert!(reason.contains("not allowed"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run(&reg, "write").await,
        Err(ToolError::Blocked { .. })
    ));

    // Cleared: every tool runs again, and the next lookup sees it.
    reg.set_permissions(Vec::<String>::new(), None);
    assert_eq!(reg.permissions(), (vec![], None));
    assert_eq!(reg.runnable_names(), ["bash", "read", "write"]);
    assert_eq!(run(&reg, "bash").await.unwrap(), "bash");
}

#[test]
fn register_refuses_a_name_the_providers_reject() {
    let reg = ToolRegistry::new();
    for bad in ["read.file", "two words", "", "../x"] {
        let e = reg.register(Arc::new(constant(bad, "", "x"))).unwrap_err();
        assert!(matches!(e, Error::InvalidToolName(_)), "{bad:?}: {e}");
        let text = e.to_string();
        assert!(text.contains("^[a-zA-Z0-9_-]{1,64}$"), "{text}");
    }
    let long = "t".repeat(65);
    assert!(reg.register(Arc::new(constant(&long, "", "x"))).is_err());
    assert!(reg.is_empty());
    reg.register(Arc::new(constant(&long[..64], "", "x")))
        .unwrap();
}
