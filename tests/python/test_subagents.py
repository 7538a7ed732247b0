"""Sub-agents: agent.as_tool(...) run concurrently, are cancelled with their parent,
and stream their events through the parent with subgraphs=True."""

from __future__ import annotations

import asyncio
import time

import pytest

from ironloop import create_react_agent, tool
from ironloop.models import ScriptedChatModel

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def make_sub(name: str, delay: float, log: list[str]):
    @tool
    async def slow(x: int) -> int:
        """Waits, then doubles x."""
        log.append(f"{name}:start")
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            log.append(f"{name}:cancelled")
            raise
        log.append(f"{name}:end")
        return 2 * x

    model = ScriptedChatModel(
        [
            {"content": "", "tool_calls": [{"name": "slow", "args": {"x": 21}}]},
            f"{name} says 42",
        ]
    )
    return create_react_agent(model, [slow], name=name)


def parent_with(subs, final="all done"):
    calls = [{"name": s.name, "args": {"input": "go"}} for s in subs]
    model = ScriptedChatModel([{"content": "", "tool_calls": calls}, final])
    tools = [s.as_tool(s.name, f"Asks {s.name}.") for s in subs]
    return create_react_agent(model, tools)


def test_as_tool_has_one_string_argument_and_returns_the_final_answer():
    log: list[str] = []
    t = make_sub("alpha", 0.0, log).as_tool("alpha", "Asks alpha.")
    assert t.name == "alpha" and t.description == "Asks alpha."
    assert t.parameters["required"] == ["input"]
    assert t.parameters["properties"]["input"]["type"] == "string"
    out = parent_with([make_sub("alpha", 0.0, log)]).invoke({"messages": [("user", "x")]})
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert [m.content for m in tool_msgs] == ["alpha says 42"]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_sub_agents_called_in_one_message_run_concurrently(mode):
    log: list[str] = []
    subs = [make_sub(n, 0.4, log) for n in ("a", "b", "c")]
    parent = parent_with(subs)
    start = time.perf_counter()
    if mode == "invoke":
        out = parent.invoke({"messages": [("user", "x")]})
    else:
        out = asyncio.run(parent.ainvoke({"messages": [("user", "x")]}))
    elapsed = time.perf_counter() - start
    assert sorted(m.content for m in out["messages"] if m.type == "tool") == [
        "a says 42",
        "b says 42",
        "c says 42",
    ]
    assert elapsed < 1.0, f"three 0.4 s sub-agents took {elapsed:.2f} s: not concurrent"


async def test_cancelling_the_parent_cancels_the_children():
    log: list[str] = []
    subs = [make_sub(n, 5.0, log) for n in ("a", "b")]
    parent = parent_with(subs)
    task = asyncio.ensure_future(parent.ainvoke({"messages": [("user", "x")]}))
    for _ in range(100):
        await asyncio.sleep(0.02)
        if sum(e.endswith(":start") for e in log) == 2:
            break
    assert sum(e.endswith(":start") for e in log) == 2, log
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if sum(e.endswith(":cancelled") for e in log) == 2:
            break
        await asyncio.sleep(0.02)
    assert sorted(e for e in log if e.endswith(":cancelled")) == ["a:cancelled", "b:cancelled"]
    assert not any(e.endswith(":end") for e in log)


def test_subgraphs_true_streams_the_sub_agents_events_with_a_namespace():
    log: list[str] = []
    parent = parent_with([make_sub("alpha", 0.0, log)])
    items = list(
        parent.stream({"messages": [("user", "x")]}, stream_mode="updates", subgraphs=True)
    )
    assert all(isinstance(i, tuple) and len(i) == 2 for i in items)
    own = [chunk for ns, chunk in items if ns == ()]
    nested = [(ns, chunk) for ns, chunk in items if ns != ()]
    assert [next(iter(c)) for c in own] == ["agent", "tools", "agent"]
    assert nested, "the sub-agent's steps come through the parent"
    assert all(ns[0].startswith("tools:") for ns, _ in nested)
    assert [next(iter(c)) for _, c in nested] == ["agent", "tools", "agent"]
    answers = [c["agent"]["messages"][-1].content for _, c in nested if "agent" in c]
    assert answers[-1] == "alpha says 42"


def test_without_subgraphs_only_the_parents_events_come():
    log: list[str] = []
    parent = parent_with([make_sub("alpha", 0.0, log)])
    items = list(parent.stream({"messages": [("user", "x")]}, stream_mode="updates"))
    assert [next(iter(c)) for c in items] == ["agent", "tools", "agent"]


def test_subgraphs_with_several_modes_yield_namespace_mode_chunk():
    log: list[str] = []
    parent = parent_with([make_sub("alpha", 0.0, log)])
    items = list(
        parent.stream(
            {"messages": [("user", "x")]}, stream_mode=["updates", "values"], subgraphs=True
        )
    )
    assert all(len(i) == 3 for i in items)
    assert {mode for _, mode, _ in items} == {"updates", "values"}
    assert any(ns != () and mode == "values" for ns, mode, _ in items)
