"""A run's ``config["max_concurrency"]`` bounds how many of a step's tasks run at once,
as LangGraph's (async and sync nodes, passed on to subgraphs' runs)."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Annotated, Any

import pytest

from ironloop import START, Send, StateGraph


class Gauge:
    """How many calls are in flight, and the most there were."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def fan_out(work: Any) -> Any:
    b = StateGraph(Annotated[list, operator.add])
    b.add_node("one", lambda s: ["1"])
    b.add_node("work", work)
    b.add_edge(START, "one")
    b.add_conditional_edges("one", lambda s: [Send("work", i) for i in range(12)])
    return b.compile()


def test_async_tasks_of_a_step_run_at_most_max_concurrency_at_once() -> None:
    gauge = Gauge()

    async def work(i: int) -> list[int]:
        gauge.enter()
        await asyncio.sleep(0.02)
        gauge.leave()
        return [i]

    app = fan_out(work)
    assert asyncio.run(app.ainvoke([])) == ["1", *range(12)]
    assert gauge.most == 12
    gauge.most = 0
    out = asyncio.run(app.ainvoke([], {"max_concurrency": 3}))
    assert out == ["1", *range(12)]  # results still in task order
    assert (gauge.most, gauge.now) == (3, 0)


def test_sync_tasks_are_bounded_too() -> None:
    gauge = Gauge()

    def work(i: int) -> list[int]:
        gauge.enter()
        time.sleep(0.02)
        gauge.leave()
        return [i]

    assert fan_out(work).invoke([], {"max_concurrency": 2}) == ["1", *range(12)]
    assert gauge.most == 2


@pytest.mark.parametrize("bad", [0, -1, "3"])
def test_a_bad_max_concurrency_says_what_it_takes(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="max_concurrency must be"):
        fan_out(lambda i: [i]).invoke([], {"max_concurrency": bad})
