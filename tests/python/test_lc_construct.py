"""The langchain-core message objects the engine makes without langchain-core's
constructor (issue 37 item 5: made straight from the engine's message, fields written
into a copy of the class's defaults) are, field by field, the objects the constructor
makes from the same fields, for every message class and shape."""

from __future__ import annotations

from typing import Any

import pytest

lc = pytest.importorskip("langchain_core.messages")

from langchain_core.load import dumpd  # noqa: E402

from ironloop._ironloop import _coerce_messages  # noqa: E402


class Sid(str):
    """An id of a str subclass (LangGraph's tests use such placeholders)."""


_CALL = {"name": "add", "args": {"a": 1, "b": [1.5, None, True]}, "id": "c1", "type": "tool_call"}
_BAD = {"name": "x", "args": "{oops", "id": "c2", "error": "bad json", "type": "invalid_tool_call"}
_USAGE = {
    "input_tokens": 3,
    "output_tokens": 2,
    "total_tokens": 5,
    "input_token_details": {"cache_read": 1},
    "output_token_details": {"reasoning": 1},
}
_META = {"model_name": "m", "nested": {"k": [1, 2, {"x": "y"}]}, "f": 0.25}
_PARTS = [{"type": "text", "text": "hi"}, "bare", {"type": "image_url", "image_url": {"url": "u"}}]

# (class, the fields the engine is given beside the role, the constructor's own
# keywords for them): every message is made with content, id, additional_kwargs and
# response_metadata, an AI message with its calls too, as the engine makes them.
CASES: list[tuple[Any, dict[str, Any], dict[str, Any]]] = [
    (lc.HumanMessage, {"role": "user", "content": "hi", "id": "h"}, {}),
    (lc.HumanMessage, {"role": "user", "content": _PARTS, "id": Sid("h2"), "name": "ann"}, {}),
    (lc.SystemMessage, {"role": "system", "content": "be brief", "id": "s"}, {}),
    (
        lc.AIMessage,
        {"role": "assistant", "content": "", "id": "a", "tool_calls": [_CALL]},
        {"invalid_tool_calls": []},
    ),
    (
        lc.AIMessage,
        {
            "role": "assistant",
            "content": "x",
            "id": "a2",
            "name": "bot",
            "tool_calls": [_CALL],
            "invalid_tool_calls": [_BAD],
            "usage_metadata": _USAGE,
            "additional_kwargs": {"refusal": None, "deep": {"a": [1]}},
            "response_metadata": _META,
        },
        {},
    ),
    (
        lc.AIMessage,
        {"role": "assistant", "content": _PARTS, "id": "a3"},
        {"tool_calls": [], "invalid_tool_calls": []},
    ),
    (lc.ToolMessage, {"role": "tool", "content": "3", "tool_call_id": "c1", "id": "t"}, {}),
    (
        lc.ToolMessage,
        {
            "role": "tool",
            "content": "no",
            "tool_call_id": "c2",
            "status": "error",
            "name": "add",
            "id": "t2",
            "artifact": {"rows": [1, 2]},
            "response_metadata": {"_reasoningForCall": "why"},
        },
        {},
    ),
]


def _blocks(m: Any) -> list[Any]:
    """``content_blocks`` without the random ids langchain-core gives converted parts."""
    return [
        {k: v for k, v in b.items() if k != "id" or not str(v).startswith("lc_")}
        for b in m.content_blocks
    ]


def _expected(cls: Any, given: dict[str, Any], extra: dict[str, Any]) -> Any:
    kw = {k: v for k, v in given.items() if k != "role"}
    kw.setdefault("additional_kwargs", {})
    kw.setdefault("response_metadata", {})
    if cls is lc.ToolMessage:
        kw.setdefault("status", "success")
    return cls(**kw, **extra)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_made_message_is_the_constructors_field_by_field(case: int) -> None:
    cls, given, extra = CASES[case]
    (made,) = _coerce_messages([given])
    want = _expected(cls, given, extra)
    assert type(made) is cls
    assert made.__dict__ == want.__dict__
    assert list(made.__dict__) == list(want.__dict__)
    assert made.model_fields_set == want.model_fields_set
    assert made.__pydantic_extra__ == want.__pydantic_extra__
    assert made.__pydantic_private__ == want.__pydantic_private__
    assert made == want
    assert made.model_dump() == want.model_dump()
    assert made.model_dump(exclude_unset=True) == want.model_dump(exclude_unset=True)
    assert dumpd(made) == dumpd(want)
    assert _blocks(made) == _blocks(want)
    assert made.pretty_repr() == want.pretty_repr()
    # Nothing shared with the constructor's defaults or another made object.
    (again,) = _coerce_messages([given])
    for k, v in made.__dict__.items():
        if isinstance(v, (dict, list)):
            assert v is not again.__dict__[k], k
    assert made.__pydantic_fields_set__ is not again.__pydantic_fields_set__
    assert made.__pydantic_extra__ is not again.__pydantic_extra__
    # And it behaves as one: a field set is recorded, an extra attribute is kept.
    made.name = "set later"
    made.extra_note = 1
    want.name = "set later"
    want.extra_note = 1
    assert made.model_fields_set == want.model_fields_set
    assert made.model_dump() == want.model_dump()
