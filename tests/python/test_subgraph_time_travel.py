"""Time travel through subgraphs, as LangGraph 1.2 has it: a subgraph checkpoint's
config (from ``get_state(subgraphs=True)``) carries a ``checkpoint_map`` that runs the
root graph back to it; ``update_state`` on such a config forks the subgraph's own
state; when the parent replays from an old checkpoint, a subgraph with its own history
(``checkpointer=True``) sees the state it had then, and one without starts fresh.

Expected values: the same programs under LangGraph 1.2.24 (run side by side)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import Command, MemorySaver, StateGraph, interrupt
from ironloop.graph import START


class S(TypedDict):
    value: Annotated[list[str], operator.add]


def cfg(thread: str = "1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def asker(called: list[str], name: str) -> Any:
    def node(s: S) -> dict[str, Any]:
        called.append(name)
        answer = interrupt(name + "?")
        return {"value": [f"{name}:{answer}"]}

    return node


def writer(called: list[str], name: str) -> Any:
    def node(s: S) -> dict[str, Any]:
        called.append(name)
        return {"value": [name]}

    return node


def two_questions(called: list[str], checkpointer: Any) -> Any:
    """Parent: START -> executor; executor (a subgraph): step -> ask_1 -> ask_2."""
    executor = (
        StateGraph(S)
        .add_node("step", writer(called, "step"))
        .add_node("ask_1", asker(called, "ask_1"))
        .add_node("ask_2", asker(called, "ask_2"))
        .add_edge(START, "step")
        .add_edge("step", "ask_1")
        .add_edge("ask_1", "ask_2")
        .compile(checkpointer=checkpointer)
    )
    return (
        StateGraph(S)
        .add_node("executor", executor)
        .add_edge(START, "executor")
        .compile(checkpointer=MemorySaver())
    )


def test_a_subgraph_checkpoint_config_runs_the_root_back_to_it() -> None:
    called: list[str] = []
    graph = two_questions(called, True)
    graph.invoke({"value": []}, cfg())
    parent = graph.get_state(cfg(), subgraphs=True)
    at_first = parent.tasks[0].state.config
    conf = at_first["configurable"]
    # The map names the parent's checkpoint the subgraph's was made under, and itself.
    assert conf["checkpoint_map"] == {
        "": parent.config["configurable"]["checkpoint_id"],
        conf["checkpoint_ns"]: conf["checkpoint_id"],
    }
    graph.invoke(Command(resume="a1"), cfg())
    assert "__interrupt__" not in graph.invoke(Command(resume="a2"), cfg())

    called.clear()
    replay = graph.invoke(None, at_first)
    # The first question again; the node before it does not run again.
    assert [i.value for i in replay["__interrupt__"]] == ["ask_1?"]
    assert called == ["ask_1"]


def test_update_state_on_a_subgraph_checkpoint_forks_the_subgraph() -> None:
    called: list[str] = []
    graph = two_questions(called, True)
    graph.invoke({"value": []}, cfg())
    at_first = graph.get_state(cfg(), subgraphs=True).tasks[0].state.config
    graph.invoke(Command(resume="a1"), cfg())
    graph.invoke(Command(resume="a2"), cfg())

    fork = graph.update_state(at_first, {"value": ["forked"]})
    conf = fork["configurable"]
    assert conf["checkpoint_ns"] == "executor"
    assert conf["checkpoint_map"][""] == at_first["configurable"]["checkpoint_map"][""]
    assert conf["checkpoint_map"]["executor"] == conf["checkpoint_id"]

    called.clear()
    out = graph.invoke(None, fork)
    assert [i.value for i in out["__interrupt__"]] == ["ask_1?"]
    assert called == ["ask_1"]
    sub = graph.get_state(cfg(), subgraphs=True).tasks[0].state
    assert sub.values == {"value": ["step", "forked"]}


def test_update_state_on_a_namespace_of_no_subgraph_says_what_to_pass() -> None:
    graph = two_questions([], True)
    graph.invoke({"value": []}, cfg())
    bad = {"configurable": {"thread_id": "1", "checkpoint_ns": "nowhere"}}
    with pytest.raises(ValueError, match="names no subgraph of this graph"):
        graph.update_state(bad, {"value": ["x"]})


def looped(observed: list[dict[str, Any]], checkpointer: Any) -> Any:
    """Parent: START -> first -> sub; sub: START -> ask (records the state it sees)."""

    def ask(s: S) -> dict[str, Any]:
        observed.append(dict(s))
        answer = interrupt("q")
        return {"value": [f"a:{answer}"]}

    class P(TypedDict):
        results: Annotated[list[str], operator.add]

    sub = (
        StateGraph(S).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=checkpointer)
    )
    return (
        StateGraph(P)
        .add_node("first", lambda p: {"results": ["p"]})
        .add_node("sub_node", sub)
        .add_edge(START, "first")
        .add_edge("first", "sub_node")
        .compile(checkpointer=MemorySaver())
    )


def test_parent_replay_gives_a_stateful_subgraph_its_state_of_then() -> None:
    observed: list[dict[str, Any]] = []
    graph = looped(observed, True)
    for answer in ("x1", "x2"):
        graph.invoke({"results": []}, cfg())
        graph.invoke(Command(resume=answer), cfg())
    assert observed[-1] == {"value": ["a:x1"]}  # the 2nd call continued the 1st
    before_2nd = next(s for s in graph.get_state_history(cfg()) if s.next == ("sub_node",))

    observed.clear()
    assert "__interrupt__" in graph.invoke(None, before_2nd.config)
    # What the subgraph had before the replay point: the 1st call's end, not the 2nd's.
    assert observed[0] == {"value": ["a:x1"]}

    observed.clear()
    fork = graph.update_state(before_2nd.config, {"results": ["forked"]})
    graph.invoke(None, fork)
    assert observed[0] == {"value": ["a:x1"]}


def test_parent_replay_starts_a_subgraph_without_history_fresh() -> None:
    observed: list[dict[str, Any]] = []
    graph = looped(observed, None)
    for answer in ("x1", "x2"):
        graph.invoke({"results": []}, cfg())
        graph.invoke(Command(resume=answer), cfg())
    before_2nd = next(s for s in graph.get_state_history(cfg()) if s.next == ("sub_node",))

    observed.clear()
    assert "__interrupt__" in graph.invoke(None, before_2nd.config)
    assert observed[0] == {"value": []}
