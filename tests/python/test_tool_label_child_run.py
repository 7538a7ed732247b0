"""A tool's human-readable label (``Tool(label=)`` / ``@tool(label=)``, yoagent's
``label``) on ``ToolContext.label`` and the ``tools`` stream's ``tool-started`` event;
and a call that starts a sub-agent run recording that run's id
(``ToolContext.set_child_loop_id``, yoagent's ``child_loop_id``) on its later
``tool-output-delta`` events, its ``tool-finished`` event and its tool message, so that
a UI can nest the sub-agent's stream under the call."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from agent_support import call, turn

from ironloop import Tool, ToolContext, create_agent, create_react_agent, tool
from ironloop.models import ScriptedChatModel


def replying(*calls: dict[str, Any], answer: str = "done") -> ScriptedChatModel:
    return ScriptedChatModel(lambda ms: turn(*calls) if ms[-1].type == "human" else answer)


def tool_events(agent: Any) -> list[dict[str, Any]]:
    return list(agent.stream({"messages": [("user", "go")]}, stream_mode="tools"))


seen_labels: list[str | None] = []


@tool(label="Searching the web")
def search(query: str, ctx: ToolContext) -> str:
    """Searches the web."""
    seen_labels.append(ctx.label)
    return f"results for {query}"


@tool
def plain(x: int, ctx: ToolContext) -> str:
    """No label."""
    seen_labels.append(ctx.label)
    return str(x)


def test_the_label_reaches_the_tool_and_the_start_event() -> None:
    seen_labels.clear()
    agent = create_agent(
        replying(call("search", "s1", query="rust"), call("plain", "p1", x=1)), [search, plain]
    )
    evs = tool_events(agent)
    starts = {e["tool_call_id"]: e for e in evs if e["event"] == "tool-started"}
    assert starts["s1"]["label"] == "Searching the web"
    # A tool without a label: the chunk has no such key (it reads as before).
    assert "label" not in starts["p1"]
    assert sorted(seen_labels, key=lambda v: v or "") == [None, "Searching the web"]
    # The model sees the tool's name, never its label.
    assert search.to_openai()["function"]["name"] == "search"


def test_the_builder_and_constructor_take_a_label_and_check_it() -> None:
    t = Tool("lookup", "Looks up.", label="Looking it up").param("q", "string").call(lambda q: q)
    assert t.label == "Looking it up"
    assert Tool("x", "y").label is None
    with pytest.raises(TypeError, match="label must be a str"):
        Tool("x", "y", label=3)  # type: ignore[arg-type]


# --- a sub-agent's run id --------------------------------------------------------------

sub_agent = create_react_agent(ScriptedChatModel(lambda ms: "the sub-agent's answer"), [])
child_ids: list[str] = []


@tool(label="Asking the helper")
async def helper(task: str, ctx: ToolContext) -> str:
    """Delegates a task to the helper sub-agent, forwarding its stream."""
    run_id = str(uuid.uuid4())
    child_ids.append(run_id)
    assert ctx.child_loop_id is None
    ctx.set_child_loop_id(run_id)
    ctx.set_child_loop_id(run_id)  # the same id again is fine
    answer = ""
    async for state in sub_agent.astream(
        {"messages": [("user", task)]}, {"run_id": run_id}, stream_mode="values"
    ):
        ctx.update({"messages": len(state["messages"])})
        answer = state["messages"][-1].text
    return answer


def test_a_sub_agent_call_carries_the_child_run_id_on_its_events_and_result() -> None:
    child_ids.clear()
    agent = create_agent(replying(call("helper", "h1", task="sum it up")), [helper])

    async def collect() -> list[Any]:
        it = agent.astream(
            {"messages": [("user", "go")]}, stream_mode=["tools", "values"], version="v2"
        )
        return [p async for p in it]

    parts = asyncio.run(collect())
    evs = [p["data"] for p in parts if p["type"] == "tools"]
    (child,) = child_ids
    assert evs[0]["event"] == "tool-started" and evs[0]["label"] == "Asking the helper"
    assert "child_loop_id" not in evs[0]
    updates = [e for e in evs if e["event"] == "tool-output-delta"]
    assert [u["delta"] for u in updates] == [{"messages": 1}, {"messages": 2}]
    # The sub-agent's forwarded events nest under the call and name the child run.
    assert all(u["tool_call_id"] == "h1" and u["child_loop_id"] == child for u in updates)
    end = evs[-1]
    assert end["event"] == "tool-finished" and end["output"].status == "success"
    assert end["child_loop_id"] == child
    # The result: the tool message names the child run too.
    final = [p["data"] for p in parts if p["type"] == "values"][-1]
    tool_msg = next(m for m in final["messages"] if m.type == "tool")
    assert tool_msg.text == "the sub-agent's answer"
    assert tool_msg.response_metadata["child_loop_id"] == child


@tool
def two_runs(ctx: ToolContext) -> str:
    """Claims two child runs."""
    ctx.set_child_loop_id("run-a")
    ctx.set_child_loop_id("run-b")
    return "unreachable"


def test_a_second_child_run_is_refused_with_what_to_do() -> None:
    agent = create_agent(replying(call("two_runs", "t1")), [two_runs])
    out = agent.invoke({"messages": [("user", "go")]})
    tool_msg = next(m for m in out["messages"] if m.type == "tool")
    assert tool_msg.status == "error"
    assert 'already started run "run-a"' in tool_msg.text
    assert "one sub-agent run per call" in tool_msg.text


def test_a_call_without_a_child_run_has_none() -> None:
    agent = create_agent(replying(call("plain", "p1", x=2)), [plain])
    evs = tool_events(agent)
    assert all("child_loop_id" not in e for e in evs)
    out = agent.invoke({"messages": [("user", "go")]})
    tool_msg = next(m for m in out["messages"] if m.type == "tool")
    assert "child_loop_id" not in tool_msg.response_metadata


# --- CompiledStateGraph.as_tool records its sub-agent's run ----------------------------


@tool
def lookup(q: str) -> str:
    """Looks a thing up."""
    return f"found {q}"


def test_as_tool_records_its_sub_agents_run_on_the_call() -> None:
    inner = create_react_agent(
        replying(call("lookup", "l1", q="x"), answer="inner answer"), [lookup]
    )
    agent = create_agent(
        replying(call("helper", "h1", input="find x")), [inner.as_tool("helper", "Asks.")]
    )
    parts = list(
        agent.stream(
            {"messages": [("user", "go")]},
            stream_mode=["tools", "values"],
            version="v2",
            subgraphs=True,
        )
    )
    own = [p["data"] for p in parts if p["type"] == "tools" and p["ns"] == ()]
    assert [(e["event"], e["tool_call_id"]) for e in own] == [
        ("tool-started", "h1"),
        ("tool-finished", "h1"),
    ]
    child = own[-1]["child_loop_id"]
    assert isinstance(child, str) and str(uuid.UUID(child)) == child
    # The sub-agent still runs nested in the call's task: its own tool call shows
    # under the call's namespace.
    nested = [p for p in parts if p["type"] == "tools" and p["ns"] != ()]
    assert [(p["data"]["event"], p["data"]["tool_call_id"]) for p in nested] == [
        ("tool-started", "l1"),
        ("tool-finished", "l1"),
    ]
    assert all(p["ns"][0].startswith("tools:") for p in nested)
    final = [p["data"] for p in parts if p["type"] == "values" and p["ns"] == ()][-1]
    tool_msg = next(m for m in final["messages"] if m.type == "tool")
    assert tool_msg.text == "inner answer"
    assert tool_msg.response_metadata["child_loop_id"] == child
    # Each call starts a run of its own.
    again = list(agent.stream({"messages": [("user", "go")]}, stream_mode="tools"))
    ends = [e for e in again if e["event"] == "tool-finished" and e["tool_call_id"] == "h1"]
    assert ends[0]["child_loop_id"] != child


def test_as_tool_runs_on_its_own_without_a_tool_context() -> None:
    inner = create_react_agent(ScriptedChatModel(lambda ms: f"echo {ms[-1].text}"), [])
    t = inner.as_tool("helper", "Asks.")
    assert asyncio.run(t.ainvoke({"input": "hi"})) == "echo hi"
    assert "ctx" not in t.parameters["properties"]
    # Handed to LangChain, it runs the same way (no context there).
    lc = t.to_langchain()
    assert asyncio.run(lc.ainvoke({"input": "yo"})) == "echo yo"
