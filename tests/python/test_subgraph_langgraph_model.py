"""Subgraphs, node updates and stream metadata as LangGraph 1.2.24 has them (each
expectation here was checked against LangGraph itself): keys outside the state,
several writes of one key in the ``updates`` stream, two subgraphs one node calls,
``debug`` checkpoint configs of subgraphs, ``durability="exit"`` in subgraphs, a
LangChain model's ``messages`` metadata, a resumed subgraph's messages, and the
``configurable`` values in checkpoint metadata."""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from pydantic import BaseModel, Field

from ironloop import END, START, Command, MemorySaver, StateGraph, interrupt
from ironloop.graph import MessagesState, add_messages
from ironloop.messages import AIMessage, AnyMessage, HumanMessage


class Foo(TypedDict):
    foo: Annotated[str, operator.add]


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def test_keys_outside_the_state_are_dropped_not_refused() -> None:
    def first(state: Foo) -> dict[str, Any]:
        return {"foo": "a", "usage_metadata": {"tokens": 3}}

    def second(state: Foo) -> dict[str, Any]:
        return {"bar": 1}

    graph = StateGraph(Foo).add_sequence([first, second]).add_edge(START, "first").compile()
    assert graph.invoke({"foo": ""}) == {"foo": "a"}
    assert list(graph.stream({"foo": ""}, stream_mode="updates")) == [
        {"first": {"foo": "a"}},
        {"second": None},
    ]


def test_a_key_written_twice_shows_each_write_in_order() -> None:
    def commands(state: Foo) -> list[Command]:
        return [Command(update={"foo": "a1"}), Command(update={"foo": "a2"})]

    def pairs(state: Foo) -> Command:
        return Command(update=[("foo", "p1"), ("foo", "p2")])

    def once(state: Foo) -> dict[str, str]:
        return {"foo": "b"}

    graph = (
        StateGraph(Foo).add_sequence([commands, pairs, once]).add_edge(START, "commands").compile()
    )
    assert graph.invoke({"foo": ""}) == {"foo": "a1a2p1p2b"}
    assert list(graph.stream({"foo": ""}, stream_mode="updates")) == [
        {"commands": [{"foo": "a1"}, {"foo": "a2"}]},
        {"pairs": [{"foo": "p1"}, {"foo": "p2"}]},
        {"once": {"foo": "b"}},
    ]

    root = (
        StateGraph(Annotated[str, operator.add])
        .add_node("n", lambda s: [Command(update="x"), Command(update="y")])
        .add_edge(START, "n")
        .compile()
    )
    assert root.invoke("") == "xy"
    assert list(root.stream("", stream_mode="updates")) == [{"n": ["x", "y"]}]


def test_messages_written_twice_by_one_node_are_each_streamed() -> None:
    def node(state: Any) -> list[Command]:
        return [
            Command(update={"messages": [AIMessage("a", id="a")]}),
            Command(update={"messages": [AIMessage("b", id="b")]}),
        ]

    graph = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile()
    streamed = list(graph.stream({"messages": []}, stream_mode="messages"))
    assert [(m.id, meta["langgraph_node"]) for m, meta in streamed] == [("a", "n"), ("b", "n")]


def test_two_subgraphs_one_node_calls_keep_apart() -> None:
    class Sub(TypedDict):
        n: Annotated[int, operator.add]

    def inner(name: str, checkpointer: Any) -> Any:
        return (
            StateGraph(Sub)
            .add_node(name, lambda s: {"n": 1})
            .add_edge(START, name)
            .compile(checkpointer=checkpointer)
        )

    stateful, plain, other = inner("kept", True), inner("plain", None), inner("other", None)

    class Parent(TypedDict):
        total: int

    def node(state: Parent) -> dict[str, int]:
        a = stateful.invoke({"n": state["total"]})["n"]
        b = plain.invoke({"n": a})["n"]
        c = other.invoke({"n": b})["n"]
        return {"total": c}

    graph = (
        StateGraph(Parent)
        .add_node("node", node)
        .add_edge(START, "node")
        .compile(checkpointer=MemorySaver())
    )
    config = {"configurable": {"thread_id": "1"}}
    chunks = list(graph.stream({"total": 0}, config, subgraphs=True, stream_mode="updates"))
    namespaces = [ns for ns, _ in chunks]
    assert namespaces[0] == ("node",)
    assert namespaces[1][0].startswith("node:") and namespaces[1][1:] == ("1",)
    assert namespaces[2][0] == namespaces[1][0] and namespaces[2][1:] == ("2",)
    assert chunks[3] == ((), {"node": {"total": 3}})
    # The stateful subgraph continues its own history on the next run.
    assert graph.invoke({"total": 0}, config) == {"total": 4}


def _nested_graph(checkpointer: Any) -> Any:
    def node(name: str) -> Any:
        return lambda state: {"log": [name]}

    child = (
        StateGraph(Log)
        .add_node("c_one", node("c_one"))
        .add_node("c_two", node("c_two"))
        .add_edge(START, "c_one")
        .add_edge("c_one", "c_two")
        .add_edge("c_two", END)
        .compile()
    )
    return (
        StateGraph(Log)
        .add_node("p_one", node("p_one"))
        .add_node("p_two", child)
        .add_edge(START, "p_one")
        .add_edge("p_one", "p_two")
        .add_edge("p_two", END)
        .compile(checkpointer=checkpointer)
    )


def test_debug_checkpoints_of_a_subgraph_name_it_as_its_history_does() -> None:
    graph = _nested_graph(MemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    by_ns: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for ns, event in graph.stream({"log": []}, config, stream_mode="debug", subgraphs=True):
        if event["type"] == "checkpoint":
            by_ns[ns].append(event["payload"])
    assert len(by_ns) == 2
    for ns, streamed in by_ns.items():
        history = list(
            graph.get_state_history(
                {"configurable": {"thread_id": "1", "checkpoint_ns": "|".join(ns)}}
            )
        )[::-1]
        assert [p["config"] for p in streamed] == [h.config for h in history]
        assert [p["parent_config"] for p in streamed] == [h.parent_config for h in history]
    sub = next(ns for ns in by_ns if ns)
    first, second = by_ns[sub][:2]
    assert first["parent_config"] is None
    conf = second["config"]["configurable"]
    assert conf["checkpoint_ns"] == sub[0]
    assert conf["checkpoint_map"][sub[0]] == conf["checkpoint_id"]
    assert second["parent_config"] == first["config"]


def test_exit_durability_saves_no_finished_subgraph_and_no_parent_configs() -> None:
    saver = MemorySaver()
    graph = _nested_graph(saver)
    config = {"configurable": {"thread_id": "1"}}
    events = list(
        graph.stream({"log": []}, config, stream_mode="debug", subgraphs=True, durability="exit")
    )
    checkpoints = [e["payload"] for _, e in events if e["type"] == "checkpoint"]
    assert checkpoints and all(p["parent_config"] is None for p in checkpoints)
    assert len(list(saver.list(config))) == 1
    # The child returns its whole list, which the parent's reducer appends.
    assert graph.get_state(config).values == {"log": ["p_one", "p_one", "c_one", "c_two"]}


def test_a_langchain_models_chunks_show_its_own_integration_and_the_namespace() -> None:
    model = GenericFakeChatModel(messages=iter(["foo"]), tags=["meow"])
    graph = (
        StateGraph(MessagesState)
        .add_node("call_model", lambda state: {"messages": model.invoke(state["messages"])})
        .add_edge(START, "call_model")
        .compile()
    )
    [(chunk, meta)] = list(graph.stream({"messages": "hi"}, stream_mode="messages"))
    assert chunk.content == "foo"
    assert meta["ls_integration"] == "langchain_chat_model"
    assert meta["ls_provider"] == "genericfakechatmodel"
    assert meta["tags"] == ["meow"]
    assert meta["checkpoint_ns"] == meta["langgraph_checkpoint_ns"]
    assert meta["checkpoint_ns"].startswith("call_model:")


def test_a_resumed_subgraphs_earlier_messages_are_not_streamed_again() -> None:
    class State(BaseModel):
        messages: Annotated[list[AnyMessage], add_messages] = Field(default_factory=list)

    def propose(state: State) -> Command:
        return Command(goto="approve", update={"messages": [AIMessage(content="p", id="proposal")]})

    def approve(state: State) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [HumanMessage(content=answer, id="answer")]}

    saver = MemorySaver()
    sub = (
        StateGraph(State)
        .add_node("propose", propose)
        .add_node("approve", approve)
        .add_edge(START, "propose")
        .compile(checkpointer=saver)
    )
    graph = (
        StateGraph(State).add_node("sub", sub).add_edge(START, "sub").compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "1"}}

    def ids(inp: Any) -> set[str]:
        return {
            chunk.id
            for _, (chunk, _) in graph.stream(inp, config, stream_mode="messages", subgraphs=True)
        }

    first = ids({"messages": [HumanMessage(content="go", id="go")]})
    assert "proposal" in first
    second = ids(Command(resume="yes"))
    assert "answer" in second
    assert not first & second


def test_checkpoint_metadata_holds_the_runs_configurable_scalars() -> None:
    graph = (
        StateGraph(Foo)
        .add_node("n", lambda s: {"foo": "x"})
        .add_edge(START, "n")
        .compile(checkpointer=MemorySaver())
    )
    given = {"thread_id": "1", "user": "bob", "limit": 3, "flag": True, "obj": {"a": 1}}
    graph.invoke({"foo": ""}, {"configurable": given, "metadata": {"user": "meta wins"}})
    meta = graph.get_state({"configurable": {"thread_id": "1"}}).metadata
    assert meta["user"] == "meta wins"
    assert meta["limit"] == 3 and meta["flag"] is True
    assert "obj" not in meta and "thread_id" not in meta
