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


def deep_list(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_result_with_no_text_is_an_error_result_not_an_empty_success(
    is_async: bool,
) -> None:
    """A 5,000-deep list is not JSON (too deep) and its str() raises RecursionError:
    the model reads an error naming the type and what str() raised."""
    value = deep_list(5_000)

    if is_async:

        @tool
        async def deep() -> list:
            """Returns a very deep list."""
            return value

    else:

        @tool
        def deep() -> list:
            """Returns a very deep list."""
            return value

    call = AIMessage("", tool_calls=[{"name": "deep", "args": {}, "id": "c"}])
    node = ToolNode([deep])
    (msg,) = await node.ainvoke([call]) if is_async else node.invoke([call])
    assert msg.status == "error", msg.content
    assert "returned a list, which cannot be turned into text" in msg.content, msg.content
    assert "str() raised RecursionError" in msg.content, msg.content
    assert "nests deeper than" in msg.content, msg.content
    # Raised, not swallowed, when errors are not handled.
    with pytest.raises(Exception, match="cannot be turned into text"):
        ToolNode([deep], handle_tool_errors=False).invoke([call])


class _StrRaises:
    def __str__(self) -> str:
        raise ValueError("no text for you")


def test_a_result_whose_str_raises_names_the_type_and_the_error() -> None:
    @tool
    def odd() -> object:
        """Returns an object without text."""
        return _StrRaises()

    (msg,) = ToolNode([odd]).invoke(
        [AIMessage("", tool_calls=[{"name": "odd", "args": {}, "id": "c"}])]
    )
    assert msg.status == "error"
    assert "returned a _StrRaises" in msg.content, msg.content
    assert "ValueError: no text for you" in msg.content, msg.content


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_lone_surrogate_in_a_result_is_an_error_result(is_async: bool) -> None:
    """JSON sent to a provider cannot carry a lone surrogate: the result fails clearly
    (its position named) rather than reaching the model with U+FFFD in its place."""
    text = "abc\ud800def"
    if is_async:

        @tool
        async def sur() -> str:
            """Returns text with a lone surrogate."""
            return text

    else:

        @tool
        def sur() -> str:
            """Returns text with a lone surrogate."""
            return text

    call = AIMessage("", tool_calls=[{"name": "sur", "args": {}, "id": "c"}])
    node = ToolNode([sur])
    (msg,) = await node.ainvoke([call]) if is_async else node.invoke([call])
    assert msg.status == "error", msg.content
    assert "lone surrogate at position 3" in msg.content, msg.content
    assert "return valid Unicode text" in msg.content
    assert "\ufffd" not in msg.content


def test_text_keeps_every_code_point() -> None:
    text = "naïve 🦀 \U0010ffff \u200b end"

    @tool
    def same() -> str:
        """Returns text as it is."""
        return text

    (msg,) = ToolNode([same]).invoke(
        [AIMessage("", tool_calls=[{"name": "same", "args": {}, "id": "c"}])]
    )
    assert (msg.status, msg.content) == ("success", text)


def test_an_agent_reads_the_error_of_a_result_with_no_text() -> None:
    from ironloop import create_react_agent
    from ironloop.messages import ToolMessage
    from ironloop.models import ScriptedChatModel

    @tool
    def deep() -> list:
        """Returns a very deep list."""
        return deep_list(5_000)

    def model() -> ScriptedChatModel:
        return ScriptedChatModel(
            [{"content": "", "tool_calls": [{"name": "deep", "args": {}}]}, "done"]
        )

    out = create_react_agent(model(), [deep]).invoke({"messages": [("user", "go")]})
    (msg,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert msg.status == "error" and "RecursionError" in msg.content, msg.content
    # Streamed the same way.
    agent = create_react_agent(model(), [deep])
    streamed = [
        m
        for update in agent.stream({"messages": [("user", "go")]}, stream_mode="updates")
        for part in update.values()
        for m in (part or {}).get("messages", [])
        if isinstance(m, ToolMessage)
    ]
    assert [m.status for m in streamed] == ["error"], streamed
    assert "RecursionError" in streamed[0].content
