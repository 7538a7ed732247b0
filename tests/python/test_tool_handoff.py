"""A tool whose graph hands off to the parent (``Command(graph=Command.PARENT)``) ends
its call with ``tool-error`` and the tools node applies the command, as LangGraph's
``ToolNode`` re-raises the ``ParentCommand`` to the graph that runs it: the run goes on
where the command sends it, it does not fail with ``ParentCommand``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from ironloop.graph import END, START, StateGraph, add_messages
from ironloop.prebuilt import ToolNode
from ironloop.types import Command


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]
    done: bool
    finished_by: str


def _graph() -> Any:
    def hand_off(state: State) -> Command:
        return Command(graph=Command.PARENT, goto="finish", update={"done": True})

    inner = StateGraph(State).add_node("hand_off", hand_off).add_edge(START, "hand_off").compile()

    @tool
    def handoff() -> str:
        """Hands off to the parent graph."""
        inner.invoke({"messages": [], "done": False})
        return "unreachable"

    def caller(state: State) -> dict[str, Any]:
        call = {"name": "handoff", "args": {}, "id": "tc1"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    return (
        StateGraph(State)
        .add_node("caller", caller)
        .add_node("tools", ToolNode([handoff]))
        .add_node("finish", lambda state: {"finished_by": "finish"})
        .add_edge(START, "caller")
        .add_edge("caller", "tools")
        .add_edge("tools", END)
        .add_edge("finish", END)
        .compile()
    )


def test_a_tool_handing_off_ends_its_call_and_the_tools_node_follows_the_command() -> None:
    items = list(
        _graph().stream(
            {"messages": [], "done": False}, stream_mode=["tools", "updates"], subgraphs=True
        )
    )
    tools = [p["event"] for _, mode, p in items if mode == "tools"]
    assert tools == ["tool-started", "tool-error"]
    updates = [p for _, mode, p in items if mode == "updates"]
    assert updates[1:] == [{"tools": {"done": True}}, {"finish": {"finished_by": "finish"}}]


def test_a_tool_handing_off_in_an_async_run() -> None:
    out = asyncio.run(_graph().ainvoke({"messages": [], "done": False}))
    assert out["done"] is True
    assert out["finished_by"] == "finish"
    assert len(out["messages"]) == 1  # the handed-off call leaves no tool message
