"""StateGraph state: schemas (TypedDict, dataclass, pydantic), reducers and add_messages."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
from typing import Annotated, Any, TypedDict

import pydantic
import pytest
from graph_support import LogS, chain, log_node

from ironloop import END, START, MessagesState, StateGraph, add_messages
from ironloop.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage


class TDState(TypedDict, total=False):
    count: int
    log: Annotated[list[str], operator.add]


@dataclasses.dataclass
class DCState:
    count: int = 0
    log: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)


class PDState(pydantic.BaseModel):
    count: int = 0
    log: Annotated[list[str], operator.add] = []


@pytest.mark.parametrize(
    "schema", [TDState, DCState, PDState], ids=["typeddict", "dataclass", "pydantic"]
)
def test_state_schemas(schema) -> None:
    seen: list[Any] = []

    def inc(state: Any) -> dict[str, Any]:
        seen.append(state)
        count = state["count"] if isinstance(state, dict) else state.count
        return {"count": count + 1, "log": [f"inc{count}"]}

    g = StateGraph(schema)
    g.add_node("a", inc)
    g.add_node("b", inc)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"count": 1})
    assert out == {"count": 3, "log": ["inc1", "inc2"]}
    # Nodes receive the state as the schema's type (a dict for a TypedDict).
    expected_type = dict if schema is TDState else schema
    assert all(isinstance(s, expected_type) for s in seen), [type(s) for s in seen]
    second = seen[1]
    assert (second["log"] if isinstance(second, dict) else second.log) == ["inc1"]


def test_node_may_return_a_dataclass_of_the_schema() -> None:
    def node(state: DCState) -> DCState:
        return DCState(count=state.count * 10, log=["x"])

    g = StateGraph(DCState)
    g.add_node("n", node).add_edge(START, "n").add_edge("n", END)
    assert g.compile().invoke({"count": 2, "log": ["start"]}) == {
        "count": 20,
        "log": ["start", "x"],
    }


def test_operator_add_reducer_accumulates_across_steps_and_input() -> None:
    g = chain(log_node("a"), log_node("b"), log_node("c"), schema=LogS)
    assert g.compile().invoke({"log": ["in"]})["log"] == ["in", "a", "b", "c"]


def keep_max(a: int, b: int) -> int:
    return max(a, b)


class CallableReducerS(TypedDict, total=False):
    best: Annotated[int, keep_max]
    words: Annotated[str, lambda a, b: f"{a} {b}".strip()]


def test_any_python_callable_is_a_reducer() -> None:
    g = StateGraph(CallableReducerS)
    g.add_node("a", lambda s: {"best": 3, "words": "hello"})
    g.add_node("b", lambda s: {"best": 1, "words": "world"})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"best": 2, "words": ""})
    assert out == {"best": 3, "words": "hello world"}


def picky(a: int, b: int) -> int:
    raise ArithmeticError("nope")


class PickyS(TypedDict, total=False):
    v: Annotated[int, picky]


def test_a_failing_reducer_raises_and_names_the_channel() -> None:
    g = StateGraph(PickyS)
    g.add_node("a", lambda s: {"v": 1}).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(Exception, match="v") as ei:
        g.compile().invoke({"v": 0})
    assert "nope" in str(ei.value)


# ---------------------------------------------------------------- add_messages


def test_add_messages_appends_and_coerces_inputs() -> None:
    g = StateGraph(MessagesState)
    g.add_node("a", lambda s: {"messages": [AIMessage(content="one")]})
    g.add_node("b", lambda s: {"messages": AIMessage(content="two")})  # a single message
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"messages": [("user", "hi"), {"role": "user", "content": "yo"}]})
    msgs = out["messages"]
    assert [type(m) for m in msgs] == [HumanMessage, HumanMessage, AIMessage, AIMessage]
    assert [m.content for m in msgs] == ["hi", "yo", "one", "two"]
    assert all(m.id for m in msgs), "add_messages gives every message an id"
    assert len({m.id for m in msgs}) == 4


def test_add_messages_replaces_by_id_in_place() -> None:
    g = StateGraph(MessagesState)
    g.add_node("edit", lambda s: {"messages": [AIMessage(content="edited", id="m1")]})
    g.add_edge(START, "edit").add_edge("edit", END)
    out = g.compile().invoke(
        {
            "messages": [
                HumanMessage(content="q", id="h1"),
                AIMessage(content="draft", id="m1"),
                HumanMessage(content="more", id="h2"),
            ]
        }
    )
    assert [(m.id, m.content) for m in out["messages"]] == [
        ("h1", "q"),
        ("m1", "edited"),
        ("h2", "more"),
    ]


def test_add_messages_remove_message() -> None:
    g = StateGraph(MessagesState)
    g.add_node(
        "prune",
        lambda s: {"messages": [RemoveMessage(id=m.id) for m in s["messages"][:-1]]},
    )
    g.add_edge(START, "prune").add_edge("prune", END)
    inputs = [HumanMessage(content=str(i), id=f"h{i}") for i in range(4)]
    out = g.compile().invoke({"messages": inputs})
    assert [m.id for m in out["messages"]] == ["h3"]


def test_add_messages_function_directly() -> None:
    left = [HumanMessage(content="a", id="1"), AIMessage(content="b", id="2")]
    right = [
        AIMessage(content="B", id="2"),
        RemoveMessage(id="1"),
        HumanMessage(content="c", id="3"),
    ]
    merged = add_messages(left, right)
    assert [(m.id, m.content) for m in merged] == [("2", "B"), ("3", "c")]


def test_messages_state_with_extra_keys_in_a_subclass() -> None:
    class S(MessagesState, total=False):
        turns: Annotated[int, operator.add]

    g = StateGraph(S)
    g.add_node("a", lambda s: {"messages": [AIMessage(content="ok")], "turns": 1})
    g.add_edge(START, "a").add_edge("a", END)
    out = g.compile().invoke({"messages": [("user", "x")], "turns": 0})
    assert out["turns"] == 1
    assert isinstance(out["messages"][-1], BaseMessage)


def _counter_graph() -> Any:
    from ironloop import MemorySaver
    from ironloop.graph import StateGraph

    class Count(TypedDict):
        x: int

    g = StateGraph(Count)
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_edge("__start__", "a")
    return g.compile(checkpointer=MemorySaver())


def test_state_history_filter_keeps_checkpoints_whose_metadata_matches() -> None:
    app = _counter_graph()
    cfg = {"configurable": {"thread_id": "h"}}
    app.invoke({"x": 0}, cfg)
    app.invoke({"x": 5}, cfg)
    everything = list(app.get_state_history(cfg))
    loops = list(app.get_state_history(cfg, filter={"source": "loop"}))
    assert [s.metadata["source"] for s in loops] == ["loop"] * len(loops)
    assert len(loops) == sum(1 for s in everything if s.metadata["source"] == "loop") == 4
    # `limit` counts what the filter keeps, not what it scanned.
    assert len(list(app.get_state_history(cfg, filter={"source": "input"}, limit=1))) == 1
    assert list(app.get_state_history(cfg, filter={"source": "nowhere"})) == []


def test_aget_state_history_and_aupdate_state_match_their_sync_forms() -> None:
    app = _counter_graph()
    cfg = {"configurable": {"thread_id": "a"}}
    app.invoke({"x": 0}, cfg)

    async def run() -> tuple[list[Any], Any]:
        history = [s.values async for s in app.aget_state_history(cfg, limit=2)]
        new_cfg = await app.aupdate_state(cfg, {"x": 41}, as_node="a")
        return history, new_cfg

    history, new_cfg = asyncio.run(run())
    assert history == [s.values for s in app.get_state_history(cfg, limit=3)][1:3]
    assert app.get_state(cfg).values == {"x": 41}
    assert (
        new_cfg["configurable"]["checkpoint_id"]
        == app.get_state(cfg).config["configurable"]["checkpoint_id"]
    )


def test_top_level_config_keys_move_into_configurable_as_langchain_core_does() -> None:
    # langchain-core's ensure_config: a key that is not a config key (thread_id here)
    # belongs to `configurable`; LangGraph programs pass {"thread_id": ...} so.
    app = _counter_graph()
    assert app.invoke({"x": 1}, {"thread_id": "top"}) == {"x": 2}
    assert app.get_state({"configurable": {"thread_id": "top"}}).values == {"x": 2}
    chunks = list(app.stream({"x": 5}, {"thread_id": "top2", "recursion_limit": 5}))
    assert chunks == [{"a": {"x": 6}}]
    assert app.get_state({"configurable": {"thread_id": "top2"}}).values == {"x": 6}
