"""ironloop's own message classes (``ironloop.messages``'s classes when langchain-core
is not installed): langchain-core's keywords, `.type`, `.id`, `.content`, `.text`,
tool calls as `ToolCall` dicts, equality, and argument checking."""

from __future__ import annotations

import pytest

from ironloop._ironloop import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from ironloop.messages import ToolCall

# --------------------------------------------------------------------- construction


def test_human_message_keywords() -> None:
    m = HumanMessage(content="hello", id="h1")
    assert m.type == "human"
    assert m.id == "h1"
    assert m.content == "hello"
    assert m.text == "hello"
    assert isinstance(m, BaseMessage)


def test_human_message_positional_content() -> None:
    assert HumanMessage("hi").content == "hi"


def test_system_message() -> None:
    m = SystemMessage(content="be brief")
    assert m.type == "system"
    assert m.content == "be brief"
    assert m.text == "be brief"


def test_ai_message_with_tool_calls() -> None:
    m = AIMessage(
        content="calling",
        tool_calls=[
            {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"},
            {"name": "search", "args": {"q": "x"}, "id": "call_2"},
        ],
        id="ai1",
    )
    assert m.type == "ai"
    assert m.id == "ai1"
    assert m.content == "calling"
    assert [c["name"] for c in m.tool_calls] == ["add", "search"]
    assert m.tool_calls[1]["args"] == {"q": "x"}


def test_ai_message_without_tool_calls_has_empty_list() -> None:
    assert AIMessage(content="done").tool_calls == []


def test_tool_message_keywords() -> None:
    m = ToolMessage(
        content="42",
        tool_call_id="call_1",
        name="answer",
        status="error",
        artifact={"raw": [4, 2]},
    )
    assert m.type == "tool"
    assert m.content == "42"
    assert m.tool_call_id == "call_1"
    assert m.name == "answer"
    assert m.status == "error"
    assert m.artifact == {"raw": [4, 2]}


def test_tool_message_defaults() -> None:
    m = ToolMessage(content="ok", tool_call_id="c")
    assert m.status == "success"
    assert m.artifact is None
    assert m.name is None


def test_tool_message_requires_tool_call_id() -> None:
    with pytest.raises(TypeError, match="tool_call_id"):
        ToolMessage(content="ok")  # type: ignore[call-arg]


def test_remove_message() -> None:
    m = RemoveMessage(id="m-7")
    assert m.type == "remove"
    assert m.id == "m-7"


def test_remove_message_id_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        RemoveMessage("m-7")  # type: ignore[misc]


# ------------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    "make",
    [
        lambda: HumanMessage(content="x"),
        lambda: SystemMessage(content="x"),
        lambda: AIMessage(content="x"),
        lambda: AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": "c"}]),
        lambda: ToolMessage(content="x", tool_call_id="c"),
    ],
    ids=["human", "system", "ai", "ai-with-calls", "tool"],
)
def test_id_is_always_set_and_unique(make) -> None:
    a, b = make(), make()
    assert isinstance(a.id, str) and a.id
    assert isinstance(b.id, str) and b.id
    assert a.id != b.id


# --------------------------------------------------------------------------- content


def test_content_list_of_parts_and_text() -> None:
    parts = [
        {"type": "text", "text": "Look at "},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "text", "text": "this."},
    ]
    m = HumanMessage(content=parts)
    assert isinstance(m.content, list)
    assert len(m.content) == 3
    assert m.content[0] == {"type": "text", "text": "Look at "}
    assert m.content[1]["type"] == "image_url"
    assert m.content[1]["image_url"]["url"] == "https://example.com/cat.png"
    assert m.text == "Look at this."


def test_content_must_be_str_or_list() -> None:
    with pytest.raises(TypeError, match="content"):
        HumanMessage(content=3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ tool calls


def test_tool_calls_are_tool_call_dicts_with_attributes() -> None:
    m = AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "call_9"}])
    (call,) = m.tool_calls
    assert isinstance(call, ToolCall)
    assert isinstance(call, dict)
    assert call == {"name": "add", "args": {"a": 1}, "id": "call_9", "type": "tool_call"}
    assert call["type"] == "tool_call"
    assert (call.name, call.args, call.id, call.type) == ("add", {"a": 1}, "call_9", "tool_call")


def test_tool_call_class() -> None:
    c = ToolCall(name="add", args={"a": 1, "b": 2}, id="call_1")
    assert c == {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1", "type": "tool_call"}
    assert c.args is c["args"]
    assert c.name == "add"
    assert c.type == "tool_call"


def test_ai_message_accepts_tool_call_objects() -> None:
    c = ToolCall(name="add", args={"a": 1}, id="x1")
    m = AIMessage(content="", tool_calls=[c])
    assert m.tool_calls == [c]


def test_tool_call_without_id_or_args_gets_defaults() -> None:
    m = AIMessage(content="", tool_calls=[{"name": "ping"}])
    (call,) = m.tool_calls
    assert call["args"] == {}
    assert isinstance(call["id"], str) and call["id"]


# -------------------------------------------------------------------------- equality


def test_equality_same_fields_same_id() -> None:
    calls = [{"name": "add", "args": {"a": 1}, "id": "c1"}]
    assert HumanMessage(content="hi", id="1") == HumanMessage(content="hi", id="1")
    assert AIMessage(content="", tool_calls=calls, id="2") == AIMessage(
        content="", tool_calls=calls, id="2"
    )
    assert ToolMessage(content="r", tool_call_id="c1", id="3") == ToolMessage(
        content="r", tool_call_id="c1", id="3"
    )


def test_inequality() -> None:
    assert HumanMessage(content="hi") != HumanMessage(content="hi")  # different ids
    assert HumanMessage(content="hi", id="1") != HumanMessage(content="ho", id="1")
    assert HumanMessage(content="hi", id="1") != SystemMessage(content="hi", id="1")
    assert AIMessage(
        content="", tool_calls=[{"name": "a", "args": {}, "id": "c"}], id="1"
    ) != AIMessage(content="", tool_calls=[{"name": "b", "args": {}, "id": "c"}], id="1")
    assert ToolMessage(content="r", tool_call_id="c", status="error", id="1") != ToolMessage(
        content="r", tool_call_id="c", id="1"
    )
    assert HumanMessage(content="hi", id="1") != "hi"


def test_message_is_equal_to_itself() -> None:
    m = HumanMessage(content="x")
    assert m == m


# ------------------------------------------------------------------ argument checking


@pytest.mark.parametrize(
    ("make", "cls"),
    [
        (lambda: HumanMessage(content="x", bogus=1), "HumanMessage"),
        (lambda: SystemMessage(content="x", bogus=1), "SystemMessage"),
        (lambda: AIMessage(content="x", bogus=1), "AIMessage"),
        (lambda: ToolMessage(content="x", tool_call_id="c", bogus=1), "ToolMessage"),
        (lambda: RemoveMessage(id="x", bogus=1), "RemoveMessage"),
    ],
    ids=["human", "system", "ai", "tool", "remove"],
)
def test_unknown_keyword_raises_type_error(make, cls) -> None:
    with pytest.raises(TypeError, match="bogus"):
        make()


def test_tool_message_bad_status_raises_value_error() -> None:
    with pytest.raises(ValueError, match="status"):
        ToolMessage(content="x", tool_call_id="c", status="failed")


def test_pretty_repr_is_langchains_layout() -> None:
    # Line for line what langchain-core 1.x prints (ported programs print transcripts).
    assert HumanMessage("hi").pretty_repr() == (
        "================================ Human Message =================================\n\nhi"
    )
    named = ToolMessage("sunny", tool_call_id="c1", name="get_weather").pretty_repr()
    assert named.splitlines()[1:] == ["Name: get_weather", "", "sunny"]
    calls = [{"name": "f", "args": {"city": "sf", "n": 2, "tags": ["a"]}, "id": "c1"}]
    assert AIMessage("", tool_calls=calls).pretty_repr().splitlines()[1:] == [
        "Tool Calls:",
        "  f (c1)",
        " Call ID: c1",
        "  Args:",
        "    city: sf",
        "    n: 2",
        "    tags: ['a']",
    ]
    assert AIMessage("done").pretty_repr().endswith("=\n\ndone")
    assert AIMessage("").pretty_repr().endswith("=")


def test_pretty_print_writes_to_sys_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    HumanMessage("hi").pretty_print()
    assert capsys.readouterr().out.endswith("=\n\nhi\n")
