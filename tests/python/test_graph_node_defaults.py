"""`StateGraph.set_node_defaults` and subgraphs compiled with `checkpointer=False`, as
LangGraph 1.2's (each behaviour below was checked against LangGraph 1.2.24)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import START, Command, MemorySaver, StateGraph, interrupt
from ironloop.cache.memory import InMemoryCache
from ironloop.types import CachePolicy, RetryPolicy


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _flaky(name: str, failures: int, attempts: list[str]) -> Any:
    """A node that raises `ValueError` on its first `failures` calls."""

    def node(state: State) -> dict[str, Any]:
        attempts.append(name)
        if attempts.count(name) <= failures:
            raise ValueError(f"{name} not yet")
        return {"log": [name]}

    return node


def _fast_retry(max_attempts: int) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=max_attempts, initial_interval=0.001, jitter=False, retry_on=ValueError
    )


def test_default_retry_policy_reaches_nodes_added_before_and_after() -> None:
    attempts: list[str] = []
    g = StateGraph(State)
    g.add_node("a", _flaky("a", 2, attempts))
    g.set_node_defaults(retry_policy=_fast_retry(3))
    g.add_node("b", _flaky("b", 2, attempts))
    g.add_edge(START, "a").add_edge("a", "b")
    assert g.compile().invoke({"log": []}) == {"log": ["a", "b"]}
    assert attempts == ["a"] * 3 + ["b"] * 3


def test_a_nodes_own_retry_policy_wins_over_the_default() -> None:
    attempts: list[str] = []
    g = StateGraph(State)
    g.set_node_defaults(retry_policy=_fast_retry(5))
    g.add_node("a", _flaky("a", 2, attempts), retry_policy=_fast_retry(2))
    g.add_edge(START, "a")
    with pytest.raises(ValueError, match="a not yet"):
        g.compile().invoke({"log": []})
    assert attempts == ["a", "a"]  # its own 2 attempts, not the default's 5


def test_default_cache_policy_caches_every_node() -> None:
    runs: list[str] = []

    def node(state: State) -> dict[str, Any]:
        runs.append("n")
        return {"log": ["n"]}

    g = StateGraph(State)
    g.set_node_defaults(cache_policy=CachePolicy())
    g.add_node("n", node).add_edge(START, "n")
    graph = g.compile(cache=InMemoryCache())
    assert graph.invoke({"log": []}) == graph.invoke({"log": []}) == {"log": ["n"]}
    assert runs == ["n"]
    graph.clear_cache()  # clears what the default cached too
    graph.invoke({"log": []})
    assert runs == ["n", "n"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"timeout": 0}, ValueError, "greater than 0"),
        ({"timeout": "soon"}, TypeError, "timedelta"),
        ({"retry_policy": 3}, TypeError, "RetryPolicy"),
        ({"cache_policy": 60}, TypeError, "CachePolicy"),
    ],
)
def test_set_node_defaults_refuses_what_it_cannot_honour(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        StateGraph(State).set_node_defaults(**kwargs)


def _asking_subgraph(checkpointer: Any, runs: list[str]) -> Any:
    def first(state: State) -> dict[str, Any]:
        runs.append("first")
        return {"log": ["first"]}

    def ask(state: State) -> dict[str, Any]:
        runs.append("ask")
        return {"log": [f"answer:{interrupt('question?')}"]}

    sub = StateGraph(State)
    sub.add_node("first", first).add_node("ask", ask)
    sub.add_edge(START, "first").add_edge("first", "ask")
    return sub.compile(checkpointer=checkpointer)


@pytest.mark.parametrize(
    ("sub_checkpointer", "runs_after_resume", "keeps_state"),
    [
        # Its own checkpoints in the parent's saver: the resume continues at `ask`.
        (None, ["first", "ask", "ask"], True),
        # None at all (LangGraph's `checkpointer=False`): the resume runs it again.
        (False, ["first", "ask", "first", "ask"], False),
    ],
)
def test_subgraph_without_checkpoints_reruns_from_its_start_on_resume(
    sub_checkpointer: Any, runs_after_resume: list[str], keeps_state: bool
) -> None:
    runs: list[str] = []
    parent = StateGraph(State)
    parent.add_node("sub", _asking_subgraph(sub_checkpointer, runs))
    graph = parent.add_edge(START, "sub").compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"log": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["question?"]
    (task,) = graph.get_state(config, subgraphs=True).tasks
    assert (task.state is not None) is keeps_state
    graph.invoke(Command(resume="yes"), config)
    assert runs == runs_after_resume
    assert graph.get_state(config).values["log"][-1] == "answer:yes"


class Inner(TypedDict):
    bar: str
    baz: str


class Outer(TypedDict):
    foo: str


def test_state_of_a_subgraph_a_node_function_invokes() -> None:
    def ask(state: Inner) -> dict[str, Any]:
        return {"baz": interrupt("baz?")}

    def join(state: Inner) -> dict[str, Any]:
        return {"bar": state["bar"] + state["baz"]}

    inner = StateGraph(Inner)
    inner.add_node("ask", ask).add_node("join", join)
    inner.add_edge(START, "ask").add_edge("ask", "join")
    subgraph = inner.compile(checkpointer=True)

    def call(state: Outer) -> dict[str, Any]:
        return {"foo": subgraph.invoke({"bar": state["foo"]})["bar"]}

    outer = StateGraph(Outer)
    outer.add_node("call", call).add_edge(START, "call")
    graph = outer.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"foo": "hi "}, config)
    (task,) = graph.get_state(config, subgraphs=True).tasks
    assert task.name == "call"
    assert task.state.values == {"bar": "hi "}
    assert task.state.next == ("ask",)
    assert graph.invoke(Command(resume="there"), config) == {"foo": "hi there"}


def test_a_langchain_runnable_is_a_node() -> None:
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool

    @tool
    def stamp(log: list[str]) -> dict[str, Any]:
        """Stamps the log."""
        return {"log": [f"stamped {len(log)}"]}

    g = StateGraph(State)
    g.add_node(stamp)  # named after the tool
    g.add_node("chain", RunnableLambda(lambda s: {"log": ["chain"]}))
    g.add_edge(START, "stamp").add_edge("stamp", "chain")
    graph = g.compile()
    assert graph.invoke({"log": ["x"]}) == {"log": ["x", "stamped 1", "chain"]}


async def test_a_langchain_runnable_node_runs_its_async_form() -> None:
    from langchain_core.runnables import RunnableLambda

    seen: list[str] = []

    async def afunc(state: State) -> dict[str, Any]:
        seen.append("async")
        return {"log": ["a"]}

    g = StateGraph(State)
    g.add_node("r", RunnableLambda(lambda s: {"log": ["s"]}, afunc=afunc))
    g.add_edge(START, "r")
    assert await g.compile().ainvoke({"log": []}) == {"log": ["a"]}
    assert seen == ["async"]
