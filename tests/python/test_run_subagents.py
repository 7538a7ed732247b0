"""``run.subagents`` of an agent's ``stream_events(version="v3")`` run: a handle per
named agent run a tool starts (its ``name``, the tool call that caused it, its own
events), told from plain subgraphs and plain tools by the ``lc_agent_name`` its tasks
carry on the ``tasks`` stream."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import HumanMessage

from ironloop import StateGraph, create_agent, tool
from ironloop.models import ScriptedChatModel
from ironloop.stream._subagents import SubagentTransformer


def _supervisor(inner: Any, name: str | None = "supervisor") -> Any:
    @tool
    def ask(city: str) -> str:
        """Asks the inner agent or graph."""
        out = inner.invoke({"messages": [HumanMessage(f"weather in {city}?")]})
        return str(out["messages"][-1].content)

    call = {"name": "ask", "args": {"city": "SF"}, "id": "call_1"}
    model = ScriptedChatModel([{"content": "", "tool_calls": [call]}, "done"])
    return create_agent(model, [ask], name=name)


def _inner(name: str | None) -> Any:
    return create_agent(ScriptedChatModel(["sunny"]), [], name=name)


def test_task_events_carry_the_agent_name() -> None:
    agent = _supervisor(_inner("weather"))
    starts = [
        (ns, data["metadata"].get("lc_agent_name"))
        for ns, mode, data in agent.stream(
            {"messages": [("user", "hi")]}, stream_mode=["tasks"], subgraphs=True
        )
        if "triggers" in data
    ]
    assert ("weather" in {n for ns, n in starts if ns}) and all(
        n == "supervisor" for ns, n in starts if not ns
    )


def test_named_subagent_surfaces_with_its_cause_and_events() -> None:
    run = _supervisor(_inner("weather")).stream_events(
        {"messages": [HumanMessage("hi")]}, version="v3"
    )
    handles = []
    for handle in run.subagents:
        handles.append((handle.name, handle.cause, [e["method"] for e in handle]))
    assert len(handles) == 1
    name, cause, methods = handles[0]
    assert (name, cause) == ("weather", {"type": "toolCall", "tool_call_id": "call_1"})
    assert "values" in methods  # the sub-agent's own events reach its handle
    assert run.output["messages"][-1].content == "done"


def test_unnamed_inner_agent_surfaces_under_the_callers_name() -> None:
    run = _supervisor(_inner(None)).stream_events({"messages": [HumanMessage("hi")]}, version="v3")
    assert [h.name for h in run.subagents] == ["supervisor"]  # LangChain's trade-off

    @tool
    def ask(city: str) -> str:
        """Runs the inner agent outside any agent."""
        out = _inner(None).invoke(
            {"messages": [HumanMessage(city)]}, {"metadata": {"lc_agent_name": None}}
        )
        return str(out["messages"][-1].content)

    call = {"name": "ask", "args": {"city": "SF"}, "id": "call_1"}
    model = ScriptedChatModel([{"content": "", "tool_calls": [call]}, "done"])
    run = create_agent(model, [ask], name="supervisor").stream_events(
        {"messages": [HumanMessage("hi")]}, version="v3"
    )
    assert list(run.subagents) == []  # its caller said it is nobody's


def test_plain_tool_and_unnamed_runs_are_not_subagents() -> None:
    @tool
    def ask(city: str) -> str:
        """Answers itself."""
        return "sunny"

    call = {"name": "ask", "args": {"city": "SF"}, "id": "call_1"}
    model = ScriptedChatModel([{"content": "", "tool_calls": [call]}, "done"])
    run = create_agent(model, [ask], name="supervisor").stream_events(
        {"messages": [HumanMessage("hi")]}, version="v3"
    )
    assert list(run.subagents) == []
    # No name anywhere (an unnamed agent running a plain graph): a subgraph, not an agent.
    graph = StateGraph(dict)
    graph.add_node("echo", lambda s: {"messages": s["messages"]})
    graph.set_entry_point("echo")
    plain = graph.compile()

    def run() -> Any:
        return _supervisor(plain, name=None).stream_events(
            {"messages": [HumanMessage("hi")]}, version="v3"
        )

    assert len([h for h in run().subgraphs if list(h)]) == 1  # it does run nested
    assert list(run().subagents) == []


def test_async_lane_surfaces_and_ends_the_handle() -> None:
    async def main() -> list[Any]:
        run = await _supervisor(_inner("weather")).astream_events(
            {"messages": [HumanMessage("hi")]}, version="v3"
        )
        out = []
        async for handle in run.subagents:
            async for _ in handle:
                pass
            out.append((handle.name, handle.status))
        return out

    assert asyncio.run(main()) == [("weather", "completed")]


def test_agents_register_it() -> None:
    assert SubagentTransformer in _inner(None).stream_transformers
