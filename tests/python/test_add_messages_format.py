"""``add_messages(format="langchain-openai")``, LangGraph's option: the merged messages'
contents in OpenAI's shapes, called directly or as a state's reducer."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from ironloop import START, StateGraph
from ironloop.graph import add_messages

_IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/jpeg", "data": "1234"},
}


def test_an_unknown_format_is_refused_naming_the_one_there_is() -> None:
    with pytest.raises(ValueError, match=r"Unrecognized format='invalid'.*'langchain-openai'"):
        add_messages([], [], format="invalid")


def test_the_merge_is_formatted_for_openai() -> None:
    merged = add_messages(
        [HumanMessage(content=[{"type": "text", "text": "see:"}, _IMAGE], id="1")],
        [AIMessage(content="ok", id="2")],
        format="langchain-openai",
    )
    assert [type(m) for m in merged] == [HumanMessage, AIMessage]
    assert merged[0].content == [
        {"type": "text", "text": "see:"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,1234"}},
    ]
    assert merged[1].content == "ok"


def test_as_a_reducer_it_formats_each_update() -> None:
    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages(format="langchain-openai")]

    def node(state: State) -> dict[str, Any]:
        return {"messages": [HumanMessage(content=[_IMAGE], id="1")]}

    app = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    (message,) = app.invoke({"messages": []})["messages"]
    assert message.content == [
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,1234"}}
    ]


def test_without_both_sides_or_a_format_it_says_how_to_call_it() -> None:
    with pytest.raises(TypeError, match="add_messages takes the two sides"):
        add_messages([])
