"""langchain-core messages made by the engine keep their pydantic fields-set out of the
garbage collector's lists (issue 37 item 5: a history of messages should not trigger
collections for containers that can hold no cycle), and still behave as langchain-core's
own: setting a field records it, copies and dumps see the same fields."""

from __future__ import annotations

import gc

import pytest

lc = pytest.importorskip("langchain_core.messages")

from ironloop._ironloop import _coerce_message  # noqa: E402
from ironloop.models import ScriptedChatModel  # noqa: E402


def test_engine_made_message_fields_set_untracked_and_still_recording() -> None:
    m = _coerce_message(
        {
            "role": "assistant",
            "content": "",
            "id": "a1",
            "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "c1"}],
        }
    )
    assert type(m) is lc.AIMessage
    assert not gc.is_tracked(m.__pydantic_fields_set__)
    # The message itself and its calls stay tracked: they may hold anything.
    assert gc.is_tracked(m)
    assert gc.is_tracked(m.tool_calls)
    assert "name" not in m.model_fields_set
    m.name = "bot"
    assert "name" in m.model_fields_set
    copy = m.model_copy(update={"content": "x"})
    assert copy.content == "x" and copy.tool_calls == m.tool_calls
    assert m.model_dump(exclude_unset=True)["name"] == "bot"


def test_history_survives_collections() -> None:
    model = ScriptedChatModel([{"content": f"r{k}"} for k in range(200)])
    history = [model.invoke([("user", "hi")]) for _ in range(200)]
    gc.collect()
    assert [h.content for h in history] == [f"r{k}" for k in range(200)]
    assert all(type(h) is lc.AIMessage and h.id for h in history)
    assert all(not gc.is_tracked(h.__pydantic_fields_set__) for h in history)
