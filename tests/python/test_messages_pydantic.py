"""Messages in pydantic models (``messages: list[AnyMessage]``), as langchain-core's
messages behave there: the objects are kept, dumps are dicts, dicts validate back."""

from __future__ import annotations

from typing import Optional

import pydantic
import pytest

from ironloop.messages import AIMessage, AnyMessage, HumanMessage


class Chat(pydantic.BaseModel):
    messages: list[AnyMessage]
    last: Optional[AIMessage] = None  # noqa: UP045


def test_a_model_keeps_the_message_objects_it_is_given() -> None:
    h = HumanMessage("x", id="1")
    assert Chat(messages=[h]).messages[0] is h


def test_a_dump_holds_dicts_and_json_validates_back() -> None:
    h = HumanMessage("x", id="1")
    m = Chat(messages=[h])
    d = m.model_dump()["messages"][0]
    assert isinstance(d, dict)
    assert (d["type"], d["content"]) == ("human", "x")
    back = Chat.model_validate_json(m.model_dump_json())
    assert type(back.messages[0]) is HumanMessage and back.messages[0] == h


def test_dicts_validate_into_the_message_class_they_name() -> None:
    m = Chat.model_validate({"messages": [{"type": "ai", "content": "a"}]})
    assert type(m.messages[0]) is AIMessage and m.messages[0].content == "a"


def test_a_field_of_one_message_class_refuses_another() -> None:
    assert Chat(messages=[], last=AIMessage("y")).last.content == "y"  # type: ignore[union-attr]
    # langchain-core's classes fail with an AttributeError from their internals.
    with pytest.raises((pydantic.ValidationError, AttributeError)):
        Chat(messages=[], last=HumanMessage("x"))  # type: ignore[arg-type]
    # (langchain-core's AnyMessage raises a TypeError from its discriminator.)
    with pytest.raises((pydantic.ValidationError, TypeError)):
        Chat(messages=[42])  # type: ignore[list-item]
