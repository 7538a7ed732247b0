"""``Send(node, arg, timeout=)``, as LangGraph 1.2: the Send's own timeout times its
task instead of the target node's (shorter or longer), in sync, async and streamed
runs, from a router or a ``Command(goto=)``, and it travels with the task through the
checkpoint, so a run resumed before the task ran still times it by the Send's."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any, TypedDict

import pytest

from ironloop import END, START, Command, MemorySaver, StateGraph
from ironloop.errors import NodeTimeoutError
from ironloop.types import Send, TimeoutPolicy


class State(TypedDict, total=False):
    x: int
    done: list[str]


async def _slow(state: State) -> dict[str, Any]:
    await asyncio.sleep(0.3)
    return {"x": state["x"] + 1}


def _graph(send_timeout: Any, node_timeout: Any = None, checkpointer: Any = None, **kw: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("slow", _slow, timeout=node_timeout)
    builder.add_conditional_edges(START, lambda s: [Send("slow", s, timeout=send_timeout)])
    builder.add_edge("slow", END)
    return builder.compile(checkpointer=checkpointer, **kw)


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


async def test_a_shorter_send_timeout_overrides_the_nodes() -> None:
    graph = _graph(TimeoutPolicy(idle_timeout=0.05), node_timeout=TimeoutPolicy(idle_timeout=5))
    started = time.monotonic()
    with pytest.raises(NodeTimeoutError) as e:
        await graph.ainvoke({"x": 1})
    assert time.monotonic() - started < 0.25
    assert (e.value.node, e.value.kind, e.value.idle_timeout) == ("slow", "idle", 0.05)


async def test_a_longer_send_timeout_overrides_the_nodes_too() -> None:
    graph = _graph(5.0, node_timeout=0.05)
    assert await graph.ainvoke({"x": 1}) == {"x": 2}
    # Without a timeout of its own, the Send's task has the node's.
    with pytest.raises(NodeTimeoutError, match=r"run timeout of 0\.050s"):
        await _graph(None, node_timeout=0.05).ainvoke({"x": 1})


def test_sync_invoke_times_the_send_by_its_timeout() -> None:
    graph = _graph(timedelta(milliseconds=50))
    with pytest.raises(NodeTimeoutError) as e:
        graph.invoke({"x": 1})
    assert (e.value.kind, e.value.run_timeout) == ("run", 0.05)
    assert _graph(2).invoke({"x": 1}) == {"x": 2}


async def test_a_stream_shows_the_untimed_sends_result_then_fails() -> None:
    async def quick(state: State) -> dict[str, Any]:
        return {"done": ["quick"]}

    builder = StateGraph(State)
    builder.add_node("slow", _slow).add_node("quick", quick)
    builder.add_conditional_edges(
        START, lambda s: [Send("slow", s, timeout=0.05), Send("quick", s)]
    )
    graph = builder.compile()
    chunks = []
    with pytest.raises(NodeTimeoutError):
        async for chunk in graph.astream({"x": 1}, stream_mode="updates"):
            chunks.append(chunk)
    assert chunks == [{"quick": {"done": ["quick"]}}]
    with pytest.raises(NodeTimeoutError):
        list(graph.stream({"x": 1}, stream_mode="updates"))


async def test_a_command_goto_send_carries_its_timeout() -> None:
    builder = StateGraph(State)
    builder.add_node("go", lambda s: Command(goto=[Send("slow", s, timeout=0.05)]))
    builder.add_node("slow", _slow)
    builder.add_edge(START, "go")
    with pytest.raises(NodeTimeoutError, match=r"'slow' exceeded its run timeout of 0\.050s"):
        await builder.compile().ainvoke({"x": 1})


def test_a_resumed_run_keeps_the_sends_timeout(saver: Any) -> None:
    # Paused before the Send's task ran: its timeout is kept in the checkpoint with it.
    graph = _graph(0.05, checkpointer=saver, interrupt_before=["slow"])
    config = _config()
    graph.invoke({"x": 1}, config)
    assert graph.get_state(config).next == ("slow",)
    with pytest.raises(NodeTimeoutError) as e:
        graph.invoke(None, config)
    assert (e.value.node, e.value.run_timeout) == ("slow", 0.05)
    # The same thread with a Send that allows the time finishes.
    graph = _graph(5, checkpointer=saver, interrupt_before=["slow"])
    config = _config()
    graph.invoke({"x": 1}, config)
    assert graph.invoke(None, config) == {"x": 2}


async def test_a_goto_that_continues_a_paused_step_keeps_its_timeout() -> None:
    # `Command(goto=Send(...))` given to a paused thread is saved with the step, and
    # its task timed by the Send's timeout when the step runs.
    graph = _graph(None, checkpointer=MemorySaver(), interrupt_before=["slow"])
    config = _config()
    await graph.ainvoke({"x": 1}, config)
    with pytest.raises(NodeTimeoutError, match=r"'slow' exceeded its run timeout of 0\.050s"):
        await graph.ainvoke(Command(goto=Send("slow", {"x": 5}, timeout=0.05)), config)


def test_send_takes_langgraphs_timeout_forms() -> None:
    assert Send("a", 1, timeout=None) == Send("a", 1)
    assert Send("a", 1).timeout is None
    assert Send("a", 1, timeout=2).timeout == TimeoutPolicy(run_timeout=2.0)
    assert Send("a", 1, timeout=timedelta(seconds=1)) == Send("a", 1, timeout=1.0)
    assert Send("a", 1, timeout=1) != Send("a", 1)
    assert repr(Send("a", 1)) == "Send(node='a', arg=1)"
    assert repr(Send("a", 1, timeout=2)) == (
        "Send(node='a', arg=1, timeout=TimeoutPolicy(run_timeout=2.0, idle_timeout=None, "
        "refresh_on='auto'))"
    )
    with pytest.raises(ValueError, match="run_timeout must be greater than 0"):
        Send("a", 1, timeout=0)
