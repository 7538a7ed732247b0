"""Child program for ``test_guarantees.py``'s shutdown cases: a script that ends while
ironloop's threads still hold work for Python.

Usage::

    python shutdown_child.py SCENARIO

* ``timed_out_async``  — ``asyncio.run(ToolNode.ainvoke)`` whose sync tool timed out
  and still sleeps on the tool pool; the script then ends normally.
* ``timed_out_sync``   — the same through ``ToolNode.invoke``.
* ``sys_exit``         — the same, then ``sys.exit(3)``.
* ``many_args``        — ``timed_out_sync`` with a tool of nine parameters (called
  through a keyword dict, not the few-arguments fast call).
* ``ctrl_c``           — a sync ``invoke`` of two sleeping sync tools, interrupted by a
  real SIGINT; the ``KeyboardInterrupt`` ends the script.
* ``astream_failed``   — an ``astream`` that fails (a node raises) while an async node
  and a sync node of the same step still run; the script then ends.

The tools wake at a random moment of the interpreter's exit (each run draws how long
they sleep), so that repeated runs catch the threads at every point of it.
"""

from __future__ import annotations

import asyncio
import operator
import os
import random
import signal
import sys
import threading
import time
from typing import Annotated, Any, TypedDict

from ironloop import END, START, StateGraph, ToolNode, tool
from ironloop.messages import AIMessage

NAP = random.uniform(0.1, 0.35)


@tool(timeout=0.05)
def limited(n: int) -> str:
    """Sleeps past its time limit."""
    time.sleep(NAP)
    return f"woke {n}"


@tool(timeout=0.05)
def wide(a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int, i: int) -> str:
    """Nine arguments, and sleeps past its time limit."""
    time.sleep(NAP)
    return f"woke {a + b + c + d + e + f + g + h + i}"


@tool
def sleepy(n: int) -> str:
    """Sleeps."""
    time.sleep(NAP)
    return f"woke {n}"


def ask(name: str, k: int) -> dict[str, Any]:
    calls = [{"name": name, "args": {"n": i}, "id": f"c{i}"} for i in range(k)]
    return {"messages": [AIMessage(content="", tool_calls=calls)]}


class S(TypedDict):
    ran: Annotated[list[str], operator.add]


def failing_graph() -> Any:
    async def waits(s: S) -> dict[str, Any]:
        await asyncio.sleep(NAP)
        return {"ran": ["waits"]}

    def blocks(s: S) -> dict[str, Any]:
        time.sleep(NAP)
        return {"ran": ["blocks"]}

    def boom(s: S) -> dict[str, Any]:
        time.sleep(0.02)
        raise RuntimeError("boom")

    g = StateGraph(S)
    for name, fn in (("waits", waits), ("blocks", blocks), ("boom", boom)):
        g.add_node(name, fn)
        g.add_edge(START, name)
        g.add_edge(name, END)
    return g.compile()


async def astream_failed() -> None:
    try:
        async for _ in failing_graph().astream({"ran": []}):
            pass
    except RuntimeError:
        print("FAILED AS EXPECTED", flush=True)


def main() -> None:
    scenario = sys.argv[1]
    if scenario in ("timed_out_async", "sys_exit"):
        out = asyncio.run(ToolNode([limited]).ainvoke(ask("limited", 1)))
        assert "timed out" in out["messages"][0].text, out
    elif scenario == "timed_out_sync":
        out = ToolNode([limited]).invoke(ask("limited", 1))
        assert "timed out" in out["messages"][0].text, out
    elif scenario == "many_args":
        call = {"name": "wide", "args": dict.fromkeys("abcdefghi", 1), "id": "c0"}
        out = ToolNode([wide]).invoke({"messages": [AIMessage(content="", tool_calls=[call])]})
        assert "timed out" in out["messages"][0].text, out
    elif scenario == "ctrl_c":
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        ToolNode([sleepy]).invoke(ask("sleepy", 2))
        print("NOT INTERRUPTED", flush=True)
    elif scenario == "astream_failed":
        asyncio.run(astream_failed())
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    print("ENDING", flush=True)
    if scenario == "sys_exit":
        sys.exit(3)


if __name__ == "__main__":
    main()
