"""LangGraph 1.2's run semantics that its own suite checks: deferred nodes
(``add_node(defer=True)``), a failed task's ``error`` in the ``tasks`` / ``debug``
streams, cancellation (a cancelled ``ainvoke``, an ``astream`` closed early, a node
raising ``CancelledError`` itself) and a node timeout composed with its retries."""

from __future__ import annotations

import asyncio
import operator
import sys
import warnings
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, MemorySaver, StateGraph
from ironloop.errors import NodeCancelledError, NodeTimeoutError
from ironloop.types import RetryPolicy, TimeoutPolicy


class Docs(TypedDict, total=False):
    docs: Annotated[list[str], operator.add]
    answer: str


def _fan_out(*, waiting_edge: bool, checkpointer: Any = None, **compile_kw: Any) -> Any:
    """A short branch (``one``) and a long one (``two`` then ``three``) into ``qa``,
    deferred: ``qa`` must see every branch's docs, however long the branches are."""

    def writes(doc: str) -> Any:
        def node(state: Docs) -> Docs:
            return {"docs": [doc]}

        return node

    def qa(state: Docs) -> Docs:
        return {"answer": ",".join(state["docs"])}

    g = StateGraph(Docs)
    for name in ("one", "two", "three"):
        g.add_node(name, writes(name))
    g.add_node("qa", qa, defer=True)
    g.add_edge(START, "one").add_edge(START, "two").add_edge("two", "three")
    if waiting_edge:
        g.add_edge(["one", "three"], "qa")
    else:
        g.add_edge("one", "qa").add_edge("three", "qa")
    g.add_edge("qa", END)
    return g.compile(checkpointer=checkpointer, **compile_kw)


@pytest.mark.parametrize("waiting_edge", [False, True])
def test_a_deferred_node_runs_once_the_run_has_nothing_else_to_do(waiting_edge: bool) -> None:
    app = _fan_out(waiting_edge=waiting_edge)
    # Without `defer`, `qa` would run beside `three` (triggered by `one`), before it.
    nodes = [next(iter(c)) for c in app.stream({"docs": []})]
    assert sorted(nodes[:2]) == ["one", "two"] and nodes[2:] == ["three", "qa"]
    assert app.invoke({"docs": []}) == {"docs": ["one", "two", "three"], "answer": "one,two,three"}


def test_a_held_deferred_node_survives_an_interrupt_between_steps() -> None:
    # Paused after `two`: `qa` (triggered by `one` in the same step) is held in the
    # checkpoint, not in the next tasks, and runs after `three` on resume.
    app = _fan_out(waiting_edge=False, checkpointer=MemorySaver(), interrupt_after=["two"])
    config = {"configurable": {"thread_id": "held"}}
    app.invoke({"docs": []}, config)
    assert app.get_state(config).next == ("three",)
    assert app.invoke(None, config) == {
        "docs": ["one", "two", "three"],
        "answer": "one,two,three",
    }


@pytest.mark.parametrize("mode", ["tasks", "debug"])
def test_a_failed_tasks_error_is_the_exception_it_raised(mode: str) -> None:
    class S(TypedDict):
        x: str

    def failing(state: S) -> S:
        raise KeyError("missing thing")

    app = StateGraph(S).add_node("failing", failing).add_edge(START, "failing").compile()
    errors = []
    with pytest.raises(KeyError, match="missing thing") as raised:
        for chunk in app.stream({"x": ""}, stream_mode=mode):
            payload = chunk["payload"] if mode == "debug" else chunk
            if "error" in payload:
                errors.append(payload["error"])
    assert len(errors) == 1 and errors[0] is raised.value


class Slow(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


async def test_a_cancelled_ainvoke_lets_its_node_clean_up_before_the_caller_goes_on() -> None:
    log: list[str] = []
    started = asyncio.Event()

    async def slow(state: Slow) -> Slow:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("node cancelled")
            raise
        return {"log": ["finished"]}

    app = StateGraph(Slow).add_node("slow", slow).add_edge(START, "slow").compile()
    running = asyncio.create_task(app.ainvoke({"log": []}))
    await started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    log.append("caller resumed")
    assert log == ["node cancelled", "caller resumed"]

    # `asyncio.wait_for` cancels the same way when it times out.
    log.clear()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(app.ainvoke({"log": []}), 0.2)
    assert log == ["node cancelled"]


async def test_closing_an_astream_early_stops_the_run_and_keeps_finished_writes() -> None:
    cancelled: list[str] = []

    async def quick(state: Slow) -> Slow:
        await asyncio.sleep(0.05)
        return {"log": ["quick"]}

    async def slow(state: Slow) -> Slow:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return {"log": ["slow"]}

    app = (
        StateGraph(Slow)
        .add_node("quick", quick)
        .add_node("slow", slow)
        .add_edge(START, "quick")
        .add_edge(START, "slow")
        .compile(checkpointer=MemorySaver())
    )
    config = {"configurable": {"thread_id": "closed"}}
    stream = app.astream({"log": []}, config)
    assert await stream.__anext__() == {"quick": {"log": ["quick"]}}
    await stream.aclose()
    assert cancelled == ["slow"]
    state = await app.aget_state(config)
    # The step did not complete: `quick`'s write is pending, `slow` is still due.
    assert state.values == {"log": ["quick"]} and state.next == ("slow",)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling() is Python 3.11+")
async def test_a_node_raising_cancelled_error_itself_fails_the_run() -> None:
    async def ok(state: Slow) -> Slow:
        return {"log": ["ok"]}

    async def boom(state: Slow) -> Slow:
        raise asyncio.CancelledError("raised by the node")

    app = (
        StateGraph(Slow)
        .add_node("ok", ok)
        .add_node("boom", boom)
        .add_edge(START, "ok")
        .add_edge(START, "boom")
        .compile()
    )
    with pytest.raises(NodeCancelledError) as raised:
        await app.ainvoke({"log": []})
    assert raised.value.node == "boom"
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)


class Count(TypedDict):
    x: int


async def test_a_node_timeout_times_each_attempt_of_its_retries() -> None:
    attempts: list[int] = []

    async def flaky(state: Count) -> Count:
        attempts.append(len(attempts))
        if len(attempts) < 2:
            await asyncio.sleep(1.0)
        return {"x": state["x"] + 1}

    policy = RetryPolicy(
        max_attempts=3, initial_interval=0.0, jitter=False, retry_on=NodeTimeoutError
    )
    g = StateGraph(Count).add_node(
        "flaky", flaky, timeout=TimeoutPolicy(idle_timeout=0.2), retry_policy=policy
    )
    app = g.add_edge(START, "flaky").compile()
    assert await app.ainvoke({"x": 0}) == {"x": 1}
    assert attempts == [0, 1]

    # Every attempt timing out: the last attempt's NodeTimeoutError is the run's.
    async def hangs(state: Count) -> Count:
        await asyncio.sleep(1.0)
        return state

    two = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False, retry_on=NodeTimeoutError)
    g = StateGraph(Count).add_node("hangs", hangs, timeout=0.1, retry_policy=two)
    with pytest.raises(NodeTimeoutError, match="'hangs' exceeded its run timeout"):
        await g.add_edge(START, "hangs").compile().ainvoke({"x": 0})


def test_a_sync_node_with_a_timeout_and_retries_is_refused() -> None:
    def sync_node(state: Count) -> Count:
        return state

    with pytest.raises(ValueError, match="only supported for async nodes"):
        StateGraph(Count).add_node(
            "n", sync_node, timeout=1.0, retry_policy=RetryPolicy(max_attempts=2)
        )


def test_previous_from_langgraph_constants_warns_as_langgraph() -> None:
    from ironloop import _constants
    from ironloop.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _constants.PREVIOUS == "__previous__"
    assert [type(w.message) for w in caught] == [LangGraphDeprecatedSinceV10]
    assert "This constant is now private" in str(caught[0].message)


async def test_an_entrypoint_streams_langchain_events() -> None:
    from ironloop.func import entrypoint, task

    @task
    async def double(n: int) -> int:
        return n * 2

    @entrypoint()
    async def workflow(n: int) -> str:
        return f"got {await double(n)}"

    events = [e async for e in workflow.astream_events(2)]
    names = [(e["event"], e["name"]) for e in events]
    assert names[0] == ("on_chain_start", "LangGraph")
    assert names[-1] == ("on_chain_end", "LangGraph")
    assert ("on_chain_start", "workflow") in names and ("on_chain_end", "workflow") in names
    assert events[0]["data"] == {"input": 2}
    assert events[-1]["data"]["output"] == "got 4"


async def test_closing_astream_events_early_cancels_the_running_node() -> None:
    cancelled: list[str] = []

    async def first(state: Slow) -> Slow:
        return {"log": ["first"]}

    async def second(state: Slow) -> Slow:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("second")
            raise
        return {"log": ["second"]}

    app = (
        StateGraph(Slow)
        .add_node("first", first)
        .add_node("second", second)
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile()
    )
    events = app.astream_events({"log": []}, version="v2")
    async for event in events:
        if event["event"] == "on_chain_start" and event["name"] == "second":
            break
    await events.aclose()  # type: ignore[attr-defined]
    assert cancelled == ["second"]


class Route(TypedDict, total=False):
    x: int
    seen: Annotated[list[str], operator.add]


def _async_routed() -> Any:
    async def decide(state: Route) -> str:
        await asyncio.sleep(0)
        return "b" if state["x"] > 0 else END

    def a(state: Route) -> Route:
        return {"seen": ["a"]}

    def b(state: Route) -> Route:
        return {"seen": ["b"]}

    g = StateGraph(Route).add_node("a", a).add_node("b", b).add_edge(START, "a")
    g.add_conditional_edges("a", decide, ["b", END])
    return g.compile(checkpointer=MemorySaver())


async def test_aupdate_state_awaits_an_async_routing_function() -> None:
    app = _async_routed()
    config = {"configurable": {"thread_id": "routed"}}
    await app.ainvoke({"x": 0, "seen": []}, config)
    # As node `a`, with x > 0: its async router sends the next step to `b`.
    await app.aupdate_state(config, {"x": 1}, as_node="a")
    assert (await app.aget_state(config)).next == ("b",)
    assert (await app.ainvoke(None, config))["seen"] == ["a", "b"]


def test_update_state_refuses_an_async_routing_function_as_langgraph() -> None:
    app = _async_routed()
    config = {"configurable": {"thread_id": "routed-sync"}}
    with pytest.raises(TypeError, match='No synchronous function provided to "decide"'):
        app.update_state(config, {"x": 1}, as_node="a")
