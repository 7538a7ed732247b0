"""Node caching (``CachePolicy``, ``compile(cache=)``) and ``Overwrite``, as LangGraph's."""

from __future__ import annotations

import operator
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, StateGraph
from ironloop.cache.memory import InMemoryCache
from ironloop.cache.sqlite import SqliteCache
from ironloop.errors import InvalidUpdateError
from ironloop.types import CachePolicy, Overwrite


class State(TypedDict):
    query: str
    log: Annotated[list[str], operator.add]


def build(cache: Any, runs: list[str], policy: CachePolicy[Any] | None = None) -> Any:
    def expensive(state: State) -> dict[str, Any]:
        runs.append(state["query"])
        return {"log": [f"answer to {state['query']}"]}

    g = StateGraph(State)
    g.add_node("expensive", expensive, cache_policy=policy or CachePolicy())
    g.add_edge(START, "expensive").add_edge("expensive", END)
    return g.compile(cache=cache)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_cached_node_runs_once_per_input(kind: str, tmp_path: Path) -> None:
    cache = InMemoryCache() if kind == "memory" else SqliteCache(path=str(tmp_path / "c.db"))
    runs: list[str] = []
    graph = build(cache, runs)
    first = graph.invoke({"query": "q1", "log": []})
    assert graph.invoke({"query": "q1", "log": []}) == first
    graph.invoke({"query": "q2", "log": []})
    assert runs == ["q1", "q2"]
    # A hit is streamed as LangGraph streams it.
    assert list(graph.stream({"query": "q1", "log": []})) == [
        {"expensive": {"log": ["answer to q1"]}, "__metadata__": {"cached": True}}
    ]
    graph.clear_cache()
    graph.invoke({"query": "q1", "log": []})
    assert runs == ["q1", "q2", "q1"]


def test_sqlite_cache_outlives_the_process_that_filled_it(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    runs: list[str] = []
    build(SqliteCache(path=path), runs).invoke({"query": "q", "log": []})
    build(SqliteCache(path=path), runs).invoke({"query": "q", "log": []})
    assert runs == ["q"]


def test_ttl_and_key_func() -> None:
    runs: list[str] = []
    policy = CachePolicy(key_func=lambda state: state["query"].lower(), ttl=1)
    graph = build(InMemoryCache(), runs, policy)
    graph.invoke({"query": "Q", "log": []})
    graph.invoke({"query": "q", "log": []})  # same key
    assert runs == ["Q"]
    time.sleep(1.1)
    graph.invoke({"query": "q", "log": []})  # expired
    assert runs == ["Q", "q"]


def test_without_a_cache_the_policy_does_nothing() -> None:
    runs: list[str] = []
    graph = build(None, runs)
    graph.invoke({"query": "q", "log": []})
    graph.invoke({"query": "q", "log": []})
    assert runs == ["q", "q"]


def test_overwrite_replaces_a_reducer_channel() -> None:
    def add(state: State) -> dict[str, Any]:
        return {"log": ["more"]}

    def reset(state: State) -> dict[str, Any]:
        return {"log": Overwrite(["reset"])}

    def reset_dict(state: State) -> dict[str, Any]:
        return {"log": {"__overwrite__": ["reset by dict"]}}

    g = StateGraph(State)
    g.add_node("add", add).add_node("reset", reset).add_node("reset_dict", reset_dict)
    g.add_edge(START, "add").add_edge("add", "reset").add_edge("reset", END)
    out = g.compile().invoke({"query": "", "log": ["a", "b"]})
    assert out["log"] == ["reset"]

    g2 = StateGraph(State)
    g2.add_node("add", add).add_node("reset_dict", reset_dict)
    g2.add_edge(START, "add").add_edge("add", "reset_dict").add_edge("reset_dict", END)
    assert g2.compile().invoke({"query": "", "log": ["a"]})["log"] == ["reset by dict"]


def test_two_overwrites_in_one_step_are_refused() -> None:
    def one(state: State) -> dict[str, Any]:
        return {"log": Overwrite(["one"])}

    def two(state: State) -> dict[str, Any]:
        return {"log": Overwrite(["two"])}

    g = StateGraph(State)
    g.add_node("one", one).add_node("two", two)
    g.add_edge(START, "one").add_edge(START, "two")
    with pytest.raises(InvalidUpdateError, match="only one Overwrite"):
        g.compile().invoke({"query": "", "log": []})
