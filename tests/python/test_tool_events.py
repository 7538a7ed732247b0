"""The ``tools`` stream mode, as LangGraph's: every tool call's ``tool-started``
(``tool_call_id``, ``tool_name``, ``input``), the partial results its tool reports
with ``ToolContext.update`` (``tool-output-delta``, never given to the model), and its
``tool-finished`` (the tool message, ironloop's ``duration``) or ``tool-error`` (the
error text the model reads); a sub-agent's events carry its namespace."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from agent_support import call, turn

from ironloop import ToolContext, create_agent, create_react_agent, tool
from ironloop.models import ScriptedChatModel


@tool
def nap(seconds: float) -> str:
    """Sleeps a while."""
    time.sleep(seconds)
    return f"slept {seconds}"


@tool
def broken(x: int) -> str:
    """Always fails."""
    raise RuntimeError(f"no luck with {x}")


@tool
def counting(n: int, ctx: ToolContext) -> str:
    """Counts to n, reporting each step."""
    for i in range(1, n + 1):
        ctx.update({"step": i, "of": n})
    return f"counted to {n}"


@tool
async def acounting(n: int, ctx: ToolContext) -> str:
    """Counts to n asynchronously, reporting each step."""
    for i in range(1, n + 1):
        await asyncio.sleep(0)
        ctx.update(f"step {i}")
    return f"counted to {n}"


def replying(*calls: dict[str, Any], answer: str = "done") -> ScriptedChatModel:
    """A model that answers each user message with these calls, then ``answer``."""
    return ScriptedChatModel(lambda ms: turn(*calls) if ms[-1].type == "human" else answer)


def agent_for(*calls: dict[str, Any], tools: list[Any]) -> tuple[Any, ScriptedChatModel]:
    model = replying(*calls)
    return create_agent(model, tools), model


def events(agent: Any, **kw: Any) -> list[dict[str, Any]]:
    return list(agent.stream({"messages": [("user", "go")]}, stream_mode="tools", **kw))


def test_each_call_has_a_start_and_an_end_with_its_duration() -> None:
    agent, _ = agent_for(
        call("nap", "n1", seconds=0.2), call("nap", "n2", seconds=0.0), tools=[nap]
    )
    evs = events(agent)
    starts = {e["tool_call_id"]: e for e in evs if e["event"] == "tool-started"}
    ends = {e["tool_call_id"]: e for e in evs if e["event"] == "tool-finished"}
    assert set(starts) == set(ends) == {"n1", "n2"}
    assert starts["n1"] == {
        "event": "tool-started",
        "tool_call_id": "n1",
        "tool_name": "nap",
        "input": {"seconds": 0.2},
    }
    # The output is the tool message the model reads next, as LangGraph's ToolNode gives.
    out = ends["n1"]["output"]
    assert (out.type, out.tool_call_id, out.name, out.text) == ("tool", "n1", "nap", "slept 0.2")
    assert ends["n1"]["duration"] >= 0.2
    assert ends["n2"]["duration"] < 0.2
    # A call's start comes before its end.
    order = [(e["event"], e["tool_call_id"]) for e in evs]
    for cid in ("n1", "n2"):
        assert order.index(("tool-started", cid)) < order.index(("tool-finished", cid))


def test_a_failed_call_ends_with_tool_error_and_the_text_the_model_reads() -> None:
    agent, model = agent_for(call("broken", "b1", x=3), tools=[broken])
    evs = events(agent)
    assert [e["event"] for e in evs] == ["tool-started", "tool-error"]
    end = evs[1]
    assert end["tool_call_id"] == "b1" and "no luck with 3" in end["message"]
    tool_msg = next(m for m in model.calls[1][0] if m.type == "tool")
    # The model reads LangGraph's text (the exception's repr); the event keeps the
    # engine's words for the same failure.
    assert tool_msg.text == "Error: RuntimeError('no luck with 3')\n Please fix your mistakes."
    assert "RuntimeError: no luck with 3" in end["message"]


def test_a_call_to_an_unknown_tool_still_gets_start_and_end() -> None:
    agent, _ = agent_for(call("nope", "u1"), tools=[nap])
    evs = events(agent)
    assert [(e["event"], e["tool_call_id"]) for e in evs] == [
        ("tool-started", "u1"),
        ("tool-error", "u1"),
    ]
    assert "unknown tool `nope`" in evs[1]["message"]


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_updates_stream_partial_results_that_never_reach_the_model(mode: str) -> None:
    target = "counting" if mode == "stream" else "acounting"
    agent, model = agent_for(call(target, "k1", n=3), tools=[counting, acounting])
    if mode == "stream":
        evs = events(agent)
    else:

        async def collect() -> list[Any]:
            it = agent.astream({"messages": [("user", "go")]}, stream_mode="tools")
            return [e async for e in it]

        evs = asyncio.run(collect())
    kinds = [e["event"] for e in evs]
    assert kinds == ["tool-started"] + ["tool-output-delta"] * 3 + ["tool-finished"]
    updates = [e["delta"] for e in evs if e["event"] == "tool-output-delta"]
    if mode == "stream":
        assert updates == [{"step": i, "of": 3} for i in (1, 2, 3)]
    else:
        assert updates == ["step 1", "step 2", "step 3"]
    assert all(e["tool_call_id"] == "k1" for e in evs) and evs[0]["tool_name"] == target
    seen_by_model = [m.text for m in model.calls[1][0]]
    assert "counted to 3" in seen_by_model
    assert not any("step" in t for t in seen_by_model)


def test_update_outside_a_tools_stream_is_a_no_op() -> None:
    agent, _ = agent_for(call("counting", "k1", n=2), tools=[counting])
    out = agent.invoke({"messages": [("user", "go")]})
    assert out["messages"][-1].text == "done"
    # The custom stream does not get them either.
    custom = list(agent.stream({"messages": [("user", "go")]}, stream_mode="custom"))
    assert custom == []


def test_tools_with_other_modes_gives_mode_chunk_pairs_and_v2_parts() -> None:
    agent, _ = agent_for(call("nap", "n1", seconds=0.0), tools=[nap])
    items = list(agent.stream({"messages": [("user", "go")]}, stream_mode=["updates", "tools"]))
    tool_items = [(m, c["event"]) for m, c in items if m == "tools"]
    assert tool_items == [("tools", "tool-started"), ("tools", "tool-finished")]
    assert [next(iter(c)) for m, c in items if m == "updates"] == ["model", "tools", "model"]
    parts = list(agent.stream({"messages": [("user", "go")]}, stream_mode=["tools"], version="v2"))
    assert [(p["type"], p["ns"], p["data"]["event"]) for p in parts] == [
        ("tools", (), "tool-started"),
        ("tools", (), "tool-finished"),
    ]


def test_a_sub_agents_tool_events_carry_its_namespace() -> None:
    sub = create_react_agent(replying(call("nap", "inner", seconds=0.0)), [nap])
    parent = create_react_agent(
        replying(call("helper", "outer", input="go")), [sub.as_tool("helper", "Asks the helper.")]
    )
    items = list(parent.stream({"messages": [("user", "x")]}, stream_mode="tools", subgraphs=True))
    own = [(c["event"], c["tool_call_id"]) for ns, c in items if ns == ()]
    nested = [(ns, c["event"], c["tool_call_id"]) for ns, c in items if ns != ()]
    assert own == [("tool-started", "outer"), ("tool-finished", "outer")]
    assert [(e, i) for _, e, i in nested] == [("tool-started", "inner"), ("tool-finished", "inner")]
    assert all(ns[0].startswith("tools:") for ns, _, _ in nested)
    # Without subgraphs=True only the parent's own calls show.
    flat = list(parent.stream({"messages": [("user", "x")]}, stream_mode="tools"))
    assert [(c["event"], c["tool_call_id"]) for c in flat] == own


def test_an_unknown_mode_lists_tools() -> None:
    agent, _ = agent_for(call("nap", "n1", seconds=0.0), tools=[nap])
    with pytest.raises(ValueError, match="debug, tools, tasks or checkpoints"):
        list(agent.stream({"messages": [("user", "go")]}, stream_mode="tool"))


# --- calls under wrap_tool_call ------------------------------------------------------


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_calls_under_wrap_tool_call_report_each_attempt(mode: str) -> None:
    """A ``wrap_tool_call`` handler's calls report like a tools node's; a retried call
    reports each attempt, all under the call's id (the failed ones end in error)."""
    from ironloop.middleware import ToolRetryMiddleware, wrap_tool_call

    tries = {"n": 0}

    @tool
    def flaky(n: int, ctx: ToolContext) -> str:
        """Fails the first time."""
        tries["n"] += 1
        ctx.update(f"try {tries['n']}")
        if tries["n"] == 1:
            raise RuntimeError("first try fails")
        return f"ok {n}"

    seen: list[str] = []

    @wrap_tool_call
    def log(request: Any, handler: Any) -> Any:
        seen.append(request.tool_call["id"])
        return handler(request)

    retry = ToolRetryMiddleware(max_retries=1, initial_delay=0.0, jitter=False)
    model = replying(call("flaky", "f1", n=2), call("counting", "c1", n=1))
    agent = create_agent(model, [flaky, counting], middleware=[log, retry])
    inp = {"messages": [("user", "go")]}
    if mode == "stream":
        evs = list(agent.stream(inp, stream_mode="tools"))
    else:

        async def collect() -> list[Any]:
            return [e async for e in agent.astream(inp, stream_mode="tools")]

        evs = asyncio.run(collect())
    flaky_evs = [(e["event"], e.get("delta")) for e in evs if e["tool_call_id"] == "f1"]
    assert flaky_evs == [
        ("tool-started", None),
        ("tool-output-delta", "try 1"),
        ("tool-error", None),
        ("tool-started", None),
        ("tool-output-delta", "try 2"),
        ("tool-finished", None),
    ]
    first_end = next(e for e in evs if e["tool_call_id"] == "f1" and e["event"] == "tool-error")
    assert "first try fails" in first_end["message"]
    counted = [(e["event"], e.get("delta")) for e in evs if e["tool_call_id"] == "c1"]
    assert counted == [
        ("tool-started", None),
        ("tool-output-delta", {"step": 1, "of": 1}),
        ("tool-finished", None),
    ]
    assert sorted(seen) == ["c1", "f1"]
    # Without a tools stream nothing is reported and the run is the same.
    tries["n"] = 0
    out = agent.invoke(inp)
    assert [m.text for m in out["messages"] if m.type == "tool"] == ["ok 2", "counted to 1"]
