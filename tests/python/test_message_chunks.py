"""`AIMessageChunk`: tool-call fragments (`tool_call_chunks`), `chunk + chunk`, and
the joined chunk's calls, checked against what langchain-core's own class does with
the same pieces."""

from __future__ import annotations

import functools
import operator
from typing import Any

import pytest
from langchain_core import messages as lc

import ironloop.messages as il
from ironloop._ironloop import AIMessage, AIMessageChunk
from ironloop.messages import from_langchain, to_langchain
from ironloop.models import ScriptedChatModel

# The pieces of one streamed answer: text, then two calls whose arguments arrive in
# fragments, the second call's first fragment before the first call's last; usage last.
PIECES: list[dict[str, Any]] = [
    {"content": "Let me "},
    {"content": "add."},
    {"content": "", "tool_call_chunks": [{"name": "add", "args": "", "id": "c1", "index": 0}]},
    {
        "content": "",
        "tool_call_chunks": [{"name": None, "args": '{"a": 2, ', "id": None, "index": 0}],
    },
    {"content": "", "tool_call_chunks": [{"name": "now", "args": "", "id": "c2", "index": 1}]},
    {
        "content": "",
        "tool_call_chunks": [{"name": None, "args": '"b": 3}', "id": None, "index": 0}],
    },
    {
        "content": "",
        "usage_metadata": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
        "response_metadata": {"finish_reason": "tool_calls"},
    },
]


def ours() -> list[AIMessageChunk]:
    return [AIMessageChunk(id="r1", **p) for p in PIECES]


def theirs() -> list[Any]:
    return [lc.AIMessageChunk(id="r1", **p) for p in PIECES]


def test_the_sum_is_langchain_cores_sum() -> None:
    whole = functools.reduce(operator.add, ours())
    expected = functools.reduce(operator.add, theirs())
    assert isinstance(whole, AIMessageChunk) and whole.type == "AIMessageChunk"
    assert whole.content == expected.content == "Let me add."
    assert whole.tool_calls == expected.tool_calls
    assert whole.tool_calls == [
        {"name": "add", "args": {"a": 2, "b": 3}, "id": "c1", "type": "tool_call"},
        {"name": "now", "args": {}, "id": "c2", "type": "tool_call"},
    ]
    assert whole.tool_call_chunks == [dict(c) for c in expected.tool_call_chunks]
    assert whole.usage_metadata == expected.usage_metadata
    assert whole.response_metadata == {"finish_reason": "tool_calls"}
    assert whole.id == "r1"
    # A list adds up the same way; the sum equals its langchain-core twin.
    first, *rest = ours()
    assert first + rest == whole
    assert whole == to_langchain(whole)


def test_partial_arguments_parse_as_they_grow() -> None:
    seen = []
    acc = None
    for c in ours():
        acc = c if acc is None else acc + c
        seen.append([call["args"] for call in acc.tool_calls])
    assert seen[2] == [{}]
    assert seen[3] == [{"a": 2}], "an open object is closed, as langchain-core's parser does"
    assert seen[-1] == [{"a": 2, "b": 3}, {}]
    lone = AIMessageChunk(tool_call_chunks=[{"name": "add", "args": '{"a": "tw', "index": 0}])
    assert (
        lone.tool_calls[0]["args"]
        == lc.AIMessageChunk(
            content="", tool_call_chunks=[{"name": "add", "args": '{"a": "tw', "index": 0}]
        ).tool_calls[0]["args"]
    )


def test_arguments_that_are_no_object_are_invalid_calls() -> None:
    c = AIMessageChunk(tool_call_chunks=[{"name": "add", "args": "[1", "id": "c", "index": 0}])
    assert c.tool_calls == []
    assert [(i["name"], i["args"]) for i in c.invalid_tool_calls] == [("add", "[1")]


def test_whole_calls_become_fragments_and_both_at_once_is_refused() -> None:
    c = AIMessageChunk("", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}])
    assert c.tool_call_chunks == [
        {"name": "add", "args": '{"a":1}', "id": "c1", "index": None, "type": "tool_call_chunk"}
    ]
    with pytest.raises(ValueError, match="not both"):
        AIMessageChunk(
            tool_calls=[{"name": "add", "args": {}, "id": "c1"}],
            tool_call_chunks=[{"name": "add", "args": "{}", "index": 0}],
        )


def test_reasoning_blocks_with_one_index_join() -> None:
    a = AIMessageChunk([{"type": "thinking", "thinking": "Two ", "index": 0}], id="r")
    b = AIMessageChunk([{"type": "thinking", "thinking": "plus two", "index": 0}], id="r")
    assert (a + b).content == [{"type": "thinking", "thinking": "Two plus two", "index": 0}]
    their = lc.AIMessageChunk(content=a.content) + lc.AIMessageChunk(content=b.content)
    assert (a + b).content == their.content


def test_repr_equality_and_conversions() -> None:
    c = AIMessageChunk("", tool_call_chunks=[{"name": "add", "args": "{", "id": "c1", "index": 0}])
    c.id = "r"
    assert repr(c) == (
        "AIMessageChunk(content='', tool_calls=[{'name': 'add', 'args': {}, 'id': 'c1', "
        "'type': 'tool_call'}], tool_call_chunks=[{'name': 'add', 'args': '{', 'id': 'c1', "
        "'index': 0, 'type': 'tool_call_chunk'}], id='r')"
    )
    assert isinstance(c, AIMessage)
    other = c.model_copy()
    assert isinstance(other, AIMessageChunk) and other == c
    assert c != AIMessageChunk(
        "", id="r", tool_call_chunks=[{"name": "add", "args": "{", "id": "c1", "index": 1}]
    ), "the fragments are part of the value"
    back = to_langchain(c)
    assert isinstance(back, lc.AIMessageChunk) and back == c
    # With langchain-core installed, from_langchain keeps its messages as they are.
    assert from_langchain(back) is back
    with pytest.raises(TypeError):
        c + AIMessage("x")


@pytest.mark.parametrize("cls", [AIMessage, il.AIMessage], ids=["own", "process"])
def test_scripted_model_streams_chunks_that_add_up_to_its_answer(cls: Any) -> None:
    answer = cls("Adding now.", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}])
    chunks = list(ScriptedChatModel([answer]).stream([("user", "x")]))
    assert all(isinstance(c, il.AIMessageChunk) for c in chunks)
    whole = functools.reduce(operator.add, chunks)
    assert whole.text == "Adding now."
    assert whole.tool_calls == answer.tool_calls
