"""LangGraph's ``graph.step_timeout``: a step whose tasks take longer together fails
the run with ``TimeoutError``; the tasks still running are stopped (async ones get a
``CancelledError``) and the writes of those that finished are streamed and kept."""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import START, MemorySaver, StateGraph


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(cancelled: list[str], saver: Any = None) -> Any:
    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return {"log": ["slow"]}

    async def quick(state: State) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return {"log": ["quick"]}

    builder = StateGraph(State)
    builder.add_node(slow).add_node(quick)
    builder.add_edge(START, "slow").add_edge(START, "quick")
    graph = builder.compile(checkpointer=saver)
    graph.step_timeout = 0.4
    return graph


async def test_stream_times_out_after_the_finished_task_was_streamed() -> None:
    cancelled: list[str] = []
    saver = MemorySaver()
    graph = _graph(cancelled, saver)
    config = {"configurable": {"thread_id": "t"}}
    chunks = []
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"step_timeout of 0\.4s"):
        async for chunk in graph.astream({"log": []}, config, stream_mode="updates"):
            chunks.append(chunk)
            await asyncio.sleep(0.2)  # a slow consumer does not stop the clock
    assert time.monotonic() - started < 1.5
    await asyncio.sleep(0.05)
    assert chunks == [{"quick": {"log": ["quick"]}}]
    assert cancelled == ["slow"]
    # The finished task's write is kept: resuming runs only the one that timed out.
    state = await graph.aget_state(config)
    assert [t.name for t in state.tasks] == ["slow", "quick"]
    assert [t.result for t in state.tasks if t.name == "quick"] == [{"log": ["quick"]}]


def test_sync_invoke_times_out_and_a_fast_step_does_not() -> None:
    cancelled: list[str] = []
    graph = _graph(cancelled)
    with pytest.raises(TimeoutError):
        graph.invoke({"log": []})
    graph.step_timeout = 5
    assert sorted(graph.invoke({"log": []})["log"]) == ["quick", "slow"]


def test_step_timeout_must_be_positive() -> None:
    graph = _graph([])
    graph.step_timeout = 0
    with pytest.raises(ValueError, match="step_timeout must be a positive number"):
        graph.invoke({"log": []})
