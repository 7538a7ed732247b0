"""The functional API's ``@task`` calls in the ``debug`` and ``tasks`` streams, as
LangGraph 1.2 shows them: each call is a push task of its entrypoint's step (a ``task``
event with its id, name, ``(args, kwargs)`` input and ``("__pregel_push",)`` triggers,
then a ``task_result`` with ``{"__return__": value}``, or the exception it raised); a
call found done on resume shows its ``task`` event only. A task paused on
``interrupt()`` shows LangGraph's interrupts in its ``task_result``: each ``Interrupt``'s
fields (``value``, ``id``, ``response_schema``). Read off LangGraph 1.2.24 running the
same programs."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ironloop.checkpoint import InMemorySaver
from ironloop.func import entrypoint, task
from ironloop.types import Command, interrupt


def _debug(graph: Any, input: Any, config: Any, mode: str = "debug") -> list[Any]:
    return [
        (c["type"], c["payload"]) if mode == "debug" else c
        for c in graph.stream(input, config, stream_mode=mode)
    ]


def _flow() -> Any:
    @task
    def falsy() -> bool:
        return False

    @task
    def inc(x: int, by: int = 1) -> int:
        return x + by

    @entrypoint(checkpointer=InMemorySaver())
    def flow(state: dict) -> Any:  # type: ignore[type-arg]
        falsy().result()
        inc(3, by=2).result()
        return interrupt("test")

    return flow


def test_task_calls_are_push_tasks_of_the_entrypoints_step() -> None:
    flow = _flow()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    events = _debug(flow, {"a": 5}, config)
    tasks = [p for kind, p in events if kind == "task"]
    results = [p for kind, p in events if kind == "task_result"]

    entry = next(p for p in tasks if p["name"] == "flow")
    falsy = next(p for p in tasks if p["name"] == "falsy")
    inc = next(p for p in tasks if p["name"] == "inc")
    assert falsy["input"] == ((), {})
    assert inc["input"] == ((3,), {"by": 2})
    assert falsy["triggers"] == inc["triggers"] == ("__pregel_push",)
    assert len({entry["id"], falsy["id"], inc["id"]}) == 3

    by_name = {p["name"]: p for p in results}
    assert by_name["falsy"] == {
        "id": falsy["id"],
        "name": "falsy",
        "error": None,
        "result": {"__return__": False},
        "interrupts": [],
    }
    assert by_name["inc"]["result"] == {"__return__": 5}
    (paused,) = by_name["flow"]["interrupts"]
    assert paused["value"] == "test"
    assert paused["response_schema"] is None
    assert paused["id"] == flow.get_state(config).interrupts[0].id

    # Each call's events come in its entrypoint's step, the call's before its result.
    steps = {
        c["step"]
        for c in flow.stream({"a": 5}, {"configurable": {"thread_id": "s"}}, stream_mode="debug")
        if c["type"] != "checkpoint"
    }
    assert len(steps) == 1
    order = [(kind, p["name"]) for kind, p in events if kind != "checkpoint"]
    assert order.index(("task", "falsy")) < order.index(("task_result", "falsy"))
    assert order.index(("task_result", "inc")) < order.index(("task_result", "flow"))


def test_calls_found_done_on_resume_show_no_result() -> None:
    flow = _flow()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    _debug(flow, {"a": 5}, config)
    events = _debug(flow, Command(resume="answer"), config)
    names = [(kind, p["name"]) for kind, p in events if kind != "checkpoint"]
    assert ("task", "falsy") in names and ("task", "inc") in names
    assert ("task_result", "falsy") not in names and ("task_result", "inc") not in names
    (done,) = [p for kind, p in events if kind == "task_result"]
    assert done["name"] == "flow" and done["interrupts"] == []


def test_a_failing_call_shows_its_exception() -> None:
    @task
    def boom(x: int) -> int:
        raise ValueError(f"no {x}")

    @entrypoint()
    def flow(x: int) -> str:
        try:
            boom(x).result()
        except ValueError:
            return "caught"
        return "not raised"

    events = _debug(flow, 7, {})
    (failed,) = [p for kind, p in events if kind == "task_result" and p["name"] == "boom"]
    assert isinstance(failed["error"], ValueError)
    assert str(failed["error"]) == "no 7"
    assert failed["result"] == {}


@pytest.mark.parametrize("is_async", [False, True])
def test_the_tasks_stream_shows_the_calls(is_async: bool) -> None:
    if is_async:

        @task
        async def double(x: int) -> int:
            return 2 * x

        @entrypoint()
        async def flow(x: int) -> int:
            return await double(x)

        import asyncio

        async def collect() -> list[Any]:
            return [c async for c in flow.astream(4, {}, stream_mode="tasks")]

        chunks = asyncio.run(collect())
    else:

        @task
        def double(x: int) -> int:  # type: ignore[misc]
            return 2 * x

        @entrypoint()
        def flow(x: int) -> int:  # type: ignore[misc]
            return double(x).result()

        chunks = list(flow.stream(4, {}, stream_mode="tasks"))
    calls = [c for c in chunks if c["name"] == "double"]
    assert calls[0]["input"] == ((4,), {})
    assert calls[1]["result"] == {"__return__": 8}
    assert calls[0]["id"] == calls[1]["id"]


def test_astream_events_show_task_calls_as_langgraph() -> None:
    """``astream_events`` (v2) show each ``@task`` call's run with what it returned,
    and a call that raised with no end, as LangChain's events do."""

    @task
    async def double(n: int) -> int:
        return 2 * n

    @task
    async def broken(n: int) -> int:
        raise RuntimeError("broken")

    @entrypoint()
    async def flow(n: int) -> str:
        await double(n)
        try:
            await broken(n)
        except RuntimeError:
            pass
        return "done"

    import asyncio

    async def collect() -> list[Any]:
        return [e async for e in flow.astream_events(1, {})]

    events = asyncio.run(collect())
    shown = [(e["event"], e["name"]) for e in events if e["name"] in ("double", "broken")]
    assert shown == [
        ("on_chain_start", "double"),
        ("on_chain_stream", "double"),
        ("on_chain_end", "double"),
        ("on_chain_start", "broken"),
    ]
    (end,) = [e for e in events if e["event"] == "on_chain_end" and e["name"] == "double"]
    assert end["data"]["output"] == 2
    assert events[-1]["data"] == {"output": "done"}


def test_the_entrypoints_own_task_and_checkpoints_show_its_input_and_return() -> None:
    """The entrypoint's task is shown as LangGraph's: the input it was given,
    ``__start__`` its trigger, ``{"__end__": returned}`` its result; checkpoints'
    values are what it returned (``None`` before), not the inner graph's state."""

    @entrypoint(checkpointer=InMemorySaver())
    def flow(n: int) -> int:
        return n * 10

    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    events = _debug(flow, 4, config)
    (start,) = [p for kind, p in events if kind == "task"]
    assert start["input"] == 4 and start["triggers"] == ("__start__",)
    (done,) = [p for kind, p in events if kind == "task_result"]
    assert done["result"] == {"__end__": 40}
    values = [p["values"] for kind, p in events if kind == "checkpoint"]
    assert values[0] is None and values[-1] == 40
    tasks = list(flow.stream(5, config, stream_mode="tasks"))
    assert [t.get("input", t.get("result")) for t in tasks] == [5, {"__end__": 50}]
    assert [c["values"] for c in flow.stream(6, config, stream_mode="checkpoints")][-1] == 60
