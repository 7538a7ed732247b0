"""A KeyboardInterrupt or SystemExit raised by an async tool or node reaches the caller
of invoke / ainvoke as itself; the event loop it ran on survives, so later async calls
in the process still work (before, the background loop's thread died and every later
async call hung)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import pytest

from ironloop import StateGraph, ToolNode, tool
from ironloop.graph import START
from ironloop.messages import AIMessage


@tool
async def escape(kind: str) -> str:
    """Raises the exception named by kind."""
    if kind == "interrupt":
        raise KeyboardInterrupt
    raise SystemExit(3)


@tool
async def fine() -> str:
    """Answers after a moment."""
    await asyncio.sleep(0.01)
    return "ok"


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}"}])


def in_thread(fn: Any, timeout: float = 10.0) -> Any:
    """``fn()`` on another thread, failing the test if it hangs."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:  # the point: KeyboardInterrupt / SystemExit
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "the call hung"
    return out[0]


@pytest.mark.parametrize(("kind", "exc"), [("interrupt", KeyboardInterrupt), ("exit", SystemExit)])
def test_sync_invoke_raises_it_and_later_async_calls_still_work(kind: str, exc: type) -> None:
    node = ToolNode([escape, fine])
    got = in_thread(lambda: node.invoke([call("escape", kind=kind)]))
    assert isinstance(got, exc)
    (msg,) = in_thread(lambda: node.invoke([call("fine")]))
    assert msg.content == "ok"


def test_ainvoke_raises_it_in_the_awaiting_task() -> None:
    node = ToolNode([escape, fine])

    async def main() -> Any:
        try:
            await node.ainvoke([call("escape", kind="interrupt")])
        except KeyboardInterrupt:
            return "raised"
        return "returned"

    assert asyncio.run(main()) == "raised"
    (msg,) = asyncio.run(node.ainvoke([call("fine")]))
    assert msg.content == "ok"


def test_an_async_node_raising_it_under_sync_invoke() -> None:
    class S(TypedDict):
        x: int

    async def stop(s: S) -> dict[str, Any]:
        raise KeyboardInterrupt

    async def ok(s: S) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"x": 2}

    g = StateGraph(S)
    g.add_node("stop", stop)
    g.add_edge(START, "stop")
    assert isinstance(in_thread(lambda: g.compile().invoke({"x": 1})), KeyboardInterrupt)
    g2 = StateGraph(S)
    g2.add_node("ok", ok)
    g2.add_edge(START, "ok")
    assert in_thread(lambda: g2.compile().invoke({"x": 1})) == {"x": 2}


@tool
async def escape_later() -> str:
    """Raises KeyboardInterrupt after its first await (a later step of its task)."""
    await asyncio.sleep(0.01)
    raise KeyboardInterrupt


def test_raised_after_an_await_reaches_the_caller_and_siblings_finish_or_stop() -> None:
    node = ToolNode([escape_later, fine])
    ai = AIMessage(
        "",
        tool_calls=[
            {"name": "fine", "args": {}, "id": "a"},
            {"name": "escape_later", "args": {}, "id": "b"},
        ],
    )

    async def main() -> Any:
        try:
            await node.ainvoke([ai])
        except KeyboardInterrupt:
            return "raised"
        return "returned"

    assert asyncio.run(main()) == "raised"
    assert isinstance(in_thread(lambda: node.invoke([ai])), KeyboardInterrupt)
    (msg,) = in_thread(lambda: node.invoke([call("fine")]))
    assert msg.content == "ok"
