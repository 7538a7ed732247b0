"""Hostile Python values never crash the interpreter: values that contain themselves
or nest deeper than JSON's limit (128 levels, serde_json's for JSON text too) are
refused with a TypeError that says so, wherever a Python value becomes JSON
(message content, tool-call arguments, tool results, graph state)."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest

from ironloop import MemorySaver, StateGraph, ToolNode, tool
from ironloop._ironloop import _coerce_message
from ironloop.graph import START
from ironloop.messages import AIMessage

DEPTH = 128


def nested(depth: int) -> dict[str, Any]:
    d: dict[str, Any] = {}
    cur = d
    for _ in range(depth - 1):
        cur["a"] = {}
        cur = cur["a"]
    return d


def ai_dict(args: Any) -> dict[str, Any]:
    """An AI message as a model's answer may arrive (read by ironloop's converter)."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"name": "t", "args": args, "id": "c"}],
    }


def test_content_that_contains_itself_is_refused() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(TypeError, match="nests deeper than 128 levels \\(or contains itself\\)"):
        _coerce_message({"role": "user", "content": loop})


@pytest.mark.parametrize("depth", [8_000, 100_000])
def test_deep_tool_call_arguments_are_refused(depth: int) -> None:
    with pytest.raises(TypeError, match=r"tool call args must be JSON-serialisable.*nests deeper"):
        _coerce_message(ai_dict(nested(depth)))


def test_the_limit_is_128_levels() -> None:
    ok, deep = nested(DEPTH), nested(DEPTH + 1)
    call = _coerce_message(ai_dict(ok)).tool_calls[0]
    assert json.dumps(call["args"]) == json.dumps(ok)
    with pytest.raises(TypeError, match="nests deeper than 128"):
        _coerce_message(ai_dict(deep))


def test_a_tool_returning_a_value_that_contains_itself_gets_its_text() -> None:
    loop: list[Any] = [1]
    loop.append(loop)

    @tool
    def rec() -> list:
        """Returns a list that contains itself."""
        return loop

    (msg,) = ToolNode([rec]).invoke(
        [AIMessage("", tool_calls=[{"name": "rec", "args": {}, "id": "c"}])]
    )
    assert msg.content == "[1, [...]]"


def test_graph_state_that_contains_itself_fails_the_checkpoint_clearly() -> None:
    class S(TypedDict):
        x: Any

    loop: list[Any] = []
    loop.append(loop)
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": loop})
    g.add_edge(START, "a")
    app = g.compile(checkpointer=MemorySaver())
    with pytest.raises(Exception, match="x") as e:
        app.invoke({"x": 1}, {"configurable": {"thread_id": "t"}})
    assert not isinstance(e.value, RecursionError) or "checkpoint" in str(e.value)
