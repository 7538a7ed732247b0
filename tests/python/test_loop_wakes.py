"""An async run is polled on its caller's event loop and woken from other threads (the
pool's, when a sync node ends; the runtime's; the SQLite saver's) through one socket
the loop watches. These tests hold that for the loops users run (asyncio's, uvloop)
and for a loop that cannot watch a socket, with many runs at once, and that a loop's
end leaves nothing open behind it."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graph_support import XS

from ironloop import END, START, SqliteSaver, StateGraph


def _add_one(s: XS) -> dict[str, int]:
    # A sync node runs on the pool: its end wakes the run from the pool's thread.
    return {"x": s["x"] + 1}


def _graph(checkpointer: Any = None) -> Any:
    g = StateGraph(XS)
    g.add_node("a", _add_one)
    g.add_node("b", _add_one)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(checkpointer=checkpointer)


class _NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop that cannot watch a file descriptor (as some embedders' loops)."""

    def add_reader(self, *args: Any) -> None:
        raise NotImplementedError("no readers on this loop")


def _loops() -> list[tuple[str, Callable[[], asyncio.AbstractEventLoop]]]:
    loops: list[tuple[str, Callable[[], asyncio.AbstractEventLoop]]] = [
        ("asyncio", asyncio.new_event_loop),
        ("no-reader", _NoReaderLoop),
    ]
    if sys.platform != "win32":
        import uvloop

        loops.append(("uvloop", uvloop.new_event_loop))
    return loops


def _run(make: Callable[[], asyncio.AbstractEventLoop], coro: Any) -> Any:
    loop = make()
    try:
        out = loop.run_until_complete(coro)
        # The loop watches ironloop's socket, unless it cannot (then woken as before).
        waker = loop._ironloop_waker  # type: ignore[attr-defined]
        if isinstance(loop, _NoReaderLoop):
            assert waker is None
        else:
            assert waker() is not None
        return out
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize(("name", "make"), _loops(), ids=[n for n, _ in _loops()])
def test_many_runs_at_once_each_woken_from_other_threads(
    name: str, make: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    app = _graph()

    async def streamed(i: int) -> list[Any]:
        return [c async for c in app.astream({"x": i})]

    async def main() -> tuple[list[Any], list[Any]]:
        invoked = await asyncio.gather(*(app.ainvoke({"x": i}) for i in range(200)))
        streams = await asyncio.gather(*(streamed(i) for i in range(50)))
        return invoked, streams

    invoked, streams = _run(make, main())
    assert invoked == [{"x": i + 2} for i in range(200)]
    assert streams == [[{"a": {"x": i + 1}}, {"b": {"x": i + 2}}] for i in range(50)]


@pytest.mark.parametrize(("name", "make"), _loops(), ids=[n for n, _ in _loops()])
def test_a_saver_threads_wakes_reach_the_run(
    name: str, make: Callable[[], asyncio.AbstractEventLoop], tmp_path: Path
) -> None:
    # The SQLite saver writes on its own thread and wakes the run when a write is done.
    with SqliteSaver(str(tmp_path / "wakes.db")) as saver:
        app = _graph(saver)

        def one(i: int) -> Any:
            return app.ainvoke({"x": i}, {"configurable": {"thread_id": f"t{i}"}})

        async def main() -> list[Any]:
            return await asyncio.gather(*(one(i) for i in range(40)))

        assert _run(make, main()) == [{"x": i + 2} for i in range(40)]
        state = app.get_state({"configurable": {"thread_id": "t7"}})
        assert state.values == {"x": 9}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.parametrize(("name", "make"), _loops(), ids=[n for n, _ in _loops()])
def test_a_loops_end_leaves_nothing_open(
    name: str, make: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    app = _graph()

    async def first_then_leave() -> Any:
        # The stream is left after its first item: its run winds down after the loop
        # may have closed; its late wakes must find nothing to write to.
        stream = app.astream({"x": 0})
        first = await stream.__anext__()
        await stream.aclose()
        return first

    for _ in range(3):  # the first loops' own set-up (the pool, the runtime) done
        _run(make, app.ainvoke({"x": 0}))
    before = _open_fds()
    for _ in range(60):
        assert _run(make, app.ainvoke({"x": 0})) == {"x": 2}
        assert _run(make, first_then_leave()) == {"a": {"x": 1}}
    # Each loop's socket pair went with the loop: not 240 more descriptors.
    assert _open_fds() - before <= 4


def test_a_runs_first_poll_is_made_as_it_starts() -> None:
    # A run's first waits (a node on the pool here; a checkpoint read, a model request)
    # begin when the run starts, not after the loop's callbacks queued meanwhile.
    started = threading.Event()

    def node(s: XS) -> dict[str, int]:
        started.set()
        return {"x": s["x"] + 1}

    g = StateGraph(XS)
    g.add_node("a", node)
    g.add_edge(START, "a")
    g.add_edge("a", END)
    app = g.compile()
    seen: list[bool] = []

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        task = loop.create_task(app.ainvoke({"x": 1}))
        # Runs after the task's first step, blocking the loop: the node must have been
        # handed to the pool by then.
        loop.call_soon(lambda: seen.append(started.wait(5)))
        return await task

    assert asyncio.run(main()) == {"x": 2}
    assert seen == [True]
