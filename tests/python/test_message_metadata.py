"""`additional_kwargs` and `response_metadata` on every message class, as langchain-core
keeps them: stored, round-tripped through checkpoints (nothing written while empty),
`to_langchain` / `from_langchain`, `model_dump` / pydantic, equality and `repr`; and
constructor keywords that would be lost are refused."""

from __future__ import annotations

import sqlite3
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core import messages as lc

from ironloop import START, MemorySaver, SqliteSaver, StateGraph, add_messages
from ironloop._ironloop import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ironloop.messages import from_langchain, to_langchain

KW = {"refusal": None, "function_call": {"name": "f", "arguments": "{}"}}
META = {"model_name": "m-1", "finish_reason": "stop", "logprobs": None}


def every_kind() -> list[Any]:
    return [
        HumanMessage("hi", id="h", additional_kwargs=KW, response_metadata=META),
        SystemMessage("be brief", id="s", additional_kwargs=KW, response_metadata=META),
        AIMessage(
            "sum",
            id="a",
            tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
            additional_kwargs=KW,
            response_metadata=META,
        ),
        ToolMessage(
            "1",
            tool_call_id="c1",
            id="t",
            additional_kwargs=KW,
            response_metadata={"_reasoningForCall": "to add"},
        ),
    ]


@pytest.mark.parametrize("m", every_kind(), ids=lambda m: m.type)
def test_kept_on_the_message_and_in_equality(m: Any) -> None:
    assert m.additional_kwargs == KW
    assert m.response_metadata in (META, {"_reasoningForCall": "to add"})
    bare = m.model_copy(update={"additional_kwargs": {}, "response_metadata": None})
    assert bare.additional_kwargs == {} and bare.response_metadata == {}
    assert bare != m, "the metadata is part of the value"
    assert (
        bare.model_copy(update={"additional_kwargs": KW, "response_metadata": m.response_metadata})
        == m
    )


@pytest.mark.parametrize("m", every_kind(), ids=lambda m: m.type)
def test_round_trip_through_langchain_core(m: Any) -> None:
    theirs = to_langchain(m)
    assert theirs.additional_kwargs == KW
    assert theirs.response_metadata == m.response_metadata
    assert theirs == m and m == theirs
    back = from_langchain(theirs)
    assert back == m
    # Changed on the langchain-core side, the message is another one.
    other = theirs.model_copy(update={"response_metadata": {"finish_reason": "length"}})
    assert from_langchain(other) != m


@pytest.mark.parametrize("m", every_kind(), ids=lambda m: m.type)
def test_round_trip_through_model_dump(m: Any) -> None:
    d = m.model_dump()
    assert d["additional_kwargs"] == KW
    from ironloop._ironloop import _coerce_message

    assert _coerce_message(d) == m


def test_empty_metadata_is_not_written() -> None:
    d = AIMessage("x", id="a").model_dump()
    assert "additional_kwargs" not in d and "response_metadata" not in d


def test_a_model_answer_from_langchain_keeps_its_metadata() -> None:
    theirs = lc.AIMessage("hi", response_metadata={"model_name": "gpt-x"}, id="r1")
    assert from_langchain(theirs).response_metadata == {"model_name": "gpt-x"}


def test_repr_shows_them_where_langchain_core_does_when_not_empty() -> None:
    m = ToolMessage("1", tool_call_id="c1", id="t", response_metadata={"_reasoningForCall": "r"})
    assert repr(m) == (
        "ToolMessage(content='1', response_metadata={'_reasoningForCall': 'r'}, "
        "tool_call_id='c1', id='t')"
    )
    assert repr(HumanMessage("hi", id="h")) == "HumanMessage(content='hi', id='h')"
    both = HumanMessage("hi", id="h", additional_kwargs={"k": 1}, response_metadata={"r": 2})
    assert repr(both) == (
        "HumanMessage(content='hi', additional_kwargs={'k': 1}, response_metadata={'r': 2}, id='h')"
    )


def test_the_getters_give_copies_and_assignment_changes_the_message() -> None:
    m = AIMessage("x", response_metadata={"a": 1})
    m.response_metadata["b"] = 2  # a copy: the message is unchanged
    assert m.response_metadata == {"a": 1}
    m.response_metadata = {"b": 2}
    m.additional_kwargs = {"k": [1, 2]}
    assert (m.response_metadata, m.additional_kwargs) == ({"b": 2}, {"k": [1, 2]})


class State(TypedDict):
    messages: Annotated[list, add_messages]


def graph(saver: Any, write: list[Any]) -> Any:
    g = StateGraph(State)
    g.add_node("n", lambda s: {"messages": write})
    g.add_edge(START, "n")
    return g.compile(checkpointer=saver)


def stored_text(path: Any) -> str:
    """Everything a SQLite checkpoint file holds: records and pending writes."""
    db = sqlite3.connect(path)
    rows = [*db.execute("SELECT record FROM checkpoints"), *db.execute("SELECT value FROM writes")]
    db.close()
    return "".join(r[0] for r in rows)


def test_round_trip_through_checkpoints(tmp_path: Any) -> None:
    path = str(tmp_path / "c.db")
    cfg = {"configurable": {"thread_id": "t"}}
    first, *rest = every_kind()
    for saver in (MemorySaver(), SqliteSaver(path)):
        graph(saver, rest).invoke({"messages": [first]}, cfg)
    # Read back by a new saver over the file: decoded from the records.
    reopened = SqliteSaver(path)
    assert graph(reopened, []).get_state(cfg).values["messages"] == [first, *rest]
    reopened.close()
    assert '"_reasoningForCall":"to add"' in stored_text(path)


def test_records_of_messages_without_metadata_do_not_grow(tmp_path: Any) -> None:
    """W4m's records: a message whose metadata is empty is written as before."""
    path = str(tmp_path / "c.db")
    saver = SqliteSaver(path)
    cfg = {"configurable": {"thread_id": "t"}}
    graph(saver, [AIMessage("x" * 200, id="a")]).invoke({"messages": [("user", "hi")]}, cfg)
    saver.close()
    text = stored_text(path)
    assert "x" * 200 in text
    assert "additional_kwargs" not in text and "response_metadata" not in text


# ------------------------------------------------------------------ keywords


@pytest.mark.parametrize(
    "make",
    [
        lambda **k: HumanMessage("x", **k),
        lambda **k: SystemMessage("x", **k),
        lambda **k: AIMessage("x", **k),
        lambda **k: ToolMessage("x", tool_call_id="c", **k),
    ],
    ids=["human", "system", "ai", "tool"],
)
def test_unknown_keywords_are_refused_naming_what_is_kept(make: Any) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'bogus'.*response_metadata"):
        make(bogus=1)
    with pytest.raises(TypeError, match="response_metadata must be a dict"):
        make(response_metadata=[1])
    with pytest.raises(TypeError, match="additional_kwargs must be JSON"):
        make(additional_kwargs={"k": object()})


def test_example_false_is_langchains_default_and_true_is_refused() -> None:
    HumanMessage("x", example=False)
    AIMessage("x", example=False)
    with pytest.raises(ValueError, match="example"):
        HumanMessage("x", example=True)
    with pytest.raises(TypeError, match="example"):
        ToolMessage("x", tool_call_id="c", example=False)
