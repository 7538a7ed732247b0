"""A node's exception reaches the caller whole: the first failure of a step is the
one raised, every time, with a note naming its task (as LangGraph does)."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Annotated, TypedDict

import pytest

from ironloop import START, StateGraph
from ironloop.errors import IronloopError


class State(TypedDict):
    log: Annotated[list, operator.add]


class FastError(Exception):
    pass


class SlowError(Exception):
    pass


def _sync_graph():
    # The slow node fails only once the fast one has started, and well after, so
    # that a loaded machine's thread scheduling cannot reorder the two failures.
    started = threading.Event()

    def fast(s: State) -> dict:
        started.set()
        raise FastError("fast")

    def slow(s: State) -> dict:
        assert started.wait(10), "the fast node never started"
        started.clear()
        time.sleep(0.1)
        raise SlowError("slow")

    g = StateGraph(State)
    # The slow node is added first: the order of add_node must not decide the error.
    g.add_node("b_slow", slow)
    g.add_node("a_fast", fast)
    g.add_edge(START, "b_slow")
    g.add_edge(START, "a_fast")
    return g.compile()


def _async_graph():
    async def fast(s: State) -> dict:
        raise FastError("fast")

    async def slow(s: State) -> dict:
        await asyncio.sleep(0.05)
        raise SlowError("slow")

    g = StateGraph(State)
    g.add_node("b_slow", slow)
    g.add_node("a_fast", fast)
    g.add_edge(START, "b_slow")
    g.add_edge(START, "a_fast")
    return g.compile()


def _assert_fast(e: pytest.ExceptionInfo[FastError]) -> None:
    notes = getattr(e.value, "__notes__", [])
    assert len(notes) == 1, notes
    assert notes[0].startswith("During task with name 'a_fast' and id '")
    assert e.value.__traceback__ is not None


def test_the_first_parallel_failure_is_raised_every_time_with_a_note() -> None:
    app = _sync_graph()
    for _ in range(20):
        with pytest.raises(FastError, match="fast") as e:
            app.invoke({"log": []})
        _assert_fast(e)


def test_the_first_parallel_failure_is_raised_every_time_under_ainvoke() -> None:
    app = _async_graph()

    async def main() -> None:
        for _ in range(20):
            with pytest.raises(FastError, match="fast") as e:
                await app.ainvoke({"log": []})
            _assert_fast(e)

    asyncio.run(main())


def test_a_subgraph_failure_keeps_one_note_per_task() -> None:
    def boom(s: State) -> dict:
        raise ValueError("inner")

    inner = StateGraph(State)
    inner.add_node("boom", boom)
    inner.add_edge(START, "boom")
    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    with pytest.raises(ValueError, match="inner") as e:
        outer.compile().invoke({"log": []})
    notes = e.value.__notes__
    assert [n.split(" and id")[0] for n in notes] == [
        "During task with name 'boom'",
        "During task with name 'sub'",
    ]


def test_a_failing_router_raises_its_own_exception() -> None:
    def route(s: State) -> str:
        raise KeyError("nowhere")

    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", route, ["a"])
    with pytest.raises(KeyError, match="nowhere") as e:
        g.compile().invoke({"log": []})
    assert e.value.__notes__[0].startswith("During task with name 'a' and id '")
    assert not isinstance(e.value, IronloopError)
