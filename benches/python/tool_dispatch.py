"""W1, W2, W3 (BENCHMARKS.md): tool dispatch through ``ToolNode``, ironloop vs LangGraph.

- W1: one AI message with 1,000 calls of ``async def wait(ms)`` (asyncio.sleep, ms=10),
  timed as ``await node.ainvoke({"messages": [ai]})``. Target <= 25 ms.
- W2: 200 calls of sync ``def wait(ms)`` (time.sleep, ms=10), ``node.invoke(...)``.
  Target <= 30 ms.
- W3: 10,000 calls of sync ``def add(a, b)`` in one message, ``node.invoke(...)``,
  reported in µs per call. Target <= 10 µs/call.

Both implementations run in the same process and the same run; every result is checked
(one ToolMessage per call, in call order, with the right content) before it counts.

    python benches/python/tool_dispatch.py [--only ironloop|langgraph] [--repeat N]
                                           [--scale F] [--json PATH]

LangGraph's ``ToolNode`` (langgraph-prebuilt 1.x) reads a ``Runtime`` from the config,
which a compiled graph supplies; standalone, we pass the default ``Runtime()`` the same
way. That is the cheapest path through LangGraph's ToolNode (no graph around it), so the
ratio is, if anything, in LangGraph's favour.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import _harness as h

N_W1 = 1_000
N_W2 = 200
N_W3 = 10_000
WAIT_MS = 10

TARGET_W1_MS = 25.0
TARGET_W2_MS = 30.0
TARGET_W3_US = 10.0
# ironloop at most this many times its floor (same run): issue 13.
MAX_OVER_FLOOR = {"W1": 1.3, "W2": 1.5, "W3": 2.0}


class BenchError(AssertionError):
    """A run returned a wrong result: its timing must not count."""


@dataclass
class Impl:
    """What a side of the comparison provides: its decorator, ToolNode, AIMessage, config."""

    name: str
    tool: Callable[[Any], Any]
    tool_node: Callable[[list[Any]], Any]
    ai_message: Callable[..., Any]
    tool_message: Callable[..., Any]
    invoke_kwargs: dict[str, Any] = field(default_factory=dict)


def load_ironloop() -> Impl:
    from ironloop import ToolNode, tool
    from ironloop.messages import AIMessage, ToolMessage

    return Impl("ironloop", tool, ToolNode, AIMessage, ToolMessage)


def load_langgraph() -> Impl:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode
    from langgraph.runtime import Runtime

    try:
        from langgraph._internal._constants import CONFIG_KEY_RUNTIME
    except ImportError:  # pragma: no cover - other 1.x layouts
        CONFIG_KEY_RUNTIME = "__pregel_runtime"
    config = {"configurable": {CONFIG_KEY_RUNTIME: Runtime()}}
    return Impl("langgraph", tool, ToolNode, AIMessage, ToolMessage, {"config": config})


# --- the tools, built with each side's own @tool ------------------------------------------


def async_wait_tool(tool: Callable[[Any], Any]) -> Any:
    async def wait(ms: int) -> int:
        """Wait ms milliseconds (asyncio.sleep) and return ms."""
        await asyncio.sleep(ms / 1000)
        return ms

    return tool(wait)


def sync_wait_tool(tool: Callable[[Any], Any]) -> Any:
    def wait(ms: int) -> int:
        """Wait ms milliseconds (time.sleep) and return ms."""
        time.sleep(ms / 1000)
        return ms

    return tool(wait)


def add_tool(tool: Callable[[Any], Any]) -> Any:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return tool(add)


# --- inputs and result checks ------------------------------------------------------------


def tool_calls(name: str, args: Callable[[int], dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return [
        {"name": name, "args": args(i), "id": f"call_{i}", "type": "tool_call"} for i in range(n)
    ]


def checker(calls: list[dict[str, Any]], expected: list[str]) -> Callable[[Any], None]:
    """Check a ToolNode result: one ToolMessage per call, in call order, with ``expected``."""

    def check(result: Any) -> None:
        if not isinstance(result, dict) or "messages" not in result:
            raise BenchError(f"expected {{'messages': [...]}}, got {type(result).__name__}")
        msgs = result["messages"]
        if len(msgs) != len(calls):
            raise BenchError(f"{len(msgs)} messages for {len(calls)} tool calls")
        for i, (msg, call, want) in enumerate(zip(msgs, calls, expected, strict=False)):
            kind = type(msg).__name__
            if kind != "ToolMessage":
                raise BenchError(f"message {i} is a {kind}, not a ToolMessage")
            if msg.tool_call_id != call["id"]:
                raise BenchError(f"message {i} answers {msg.tool_call_id!r}, not {call['id']!r}")
            status = getattr(msg, "status", "success")
            if status != "success":
                raise BenchError(f"message {i} has status {status!r}: {msg.content!r}")
            if str(msg.content) != want:
                raise BenchError(f"message {i} content {msg.content!r}, expected {want!r}")

    return check


# --- the workloads -----------------------------------------------------------------------


def _w1_once(impl: Impl, n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    node = impl.tool_node([async_wait_tool(impl.tool)])
    calls = tool_calls("wait", lambda i: {"ms": WAIT_MS}, n)
    ai = impl.ai_message(content="", tool_calls=calls)
    kwargs = impl.invoke_kwargs

    async def once() -> Any:
        return await node.ainvoke({"messages": [ai]}, **kwargs)

    return once, checker(calls, [str(WAIT_MS)] * n)


def w1(impl: Impl, n: int, repeat: int) -> h.Stats:
    once, check = _w1_once(impl, n)

    async def run() -> h.Stats:
        return await h.ameasure(once, repeat=repeat, check=check)

    return asyncio.run(run()).scaled(1e3)


def w1_beside_floor(impl: Impl, n: int, repeat: int) -> tuple[h.Stats, h.Stats]:
    """W1 and its floor (:func:`floor_w1`) on one event loop, one repetition of each in
    turn: both medians then come from the same minutes of a machine whose speed drifts
    (measured apart, the ratio of W1's ~30 ms medians swung 0.9-1.8x between runs)."""
    once, check = _w1_once(impl, n)
    floor_once, floor_check = _floor_w1_once(n)

    async def run() -> tuple[h.Stats, h.Stats]:
        return await h.ameasure_pair((once, check), (floor_once, floor_check), repeat=repeat)

    ours, floor = asyncio.run(run())
    return ours.scaled(1e3), floor.scaled(1e3)


def w2(impl: Impl, n: int, repeat: int) -> h.Stats:
    node = impl.tool_node([sync_wait_tool(impl.tool)])
    calls = tool_calls("wait", lambda i: {"ms": WAIT_MS}, n)
    ai = impl.ai_message(content="", tool_calls=calls)
    check = checker(calls, [str(WAIT_MS)] * n)
    kwargs = impl.invoke_kwargs
    stats = h.measure(lambda: node.invoke({"messages": [ai]}, **kwargs), repeat=repeat, check=check)
    return stats.scaled(1e3)


def w3(impl: Impl, n: int, repeat: int) -> h.Stats:
    node = impl.tool_node([add_tool(impl.tool)])
    calls = tool_calls("add", lambda i: {"a": i, "b": 1}, n)
    ai = impl.ai_message(content="", tool_calls=calls)
    check = checker(calls, [str(i + 1) for i in range(n)])
    kwargs = impl.invoke_kwargs
    stats = h.measure(lambda: node.invoke({"messages": [ai]}, **kwargs), repeat=repeat, check=check)
    return stats.scaled(1e6 / n)


# --- the floors: the same work without a framework -----------------------------------------


def _floor_w1_once(n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    async def wait(ms: int) -> int:
        await asyncio.sleep(ms / 1000)
        return ms

    async def once() -> list[int]:
        return await asyncio.gather(*(wait(WAIT_MS) for _ in range(n)))

    def check(result: Any) -> None:
        if result != [WAIT_MS] * n:
            raise BenchError("the floor's gather returned wrong results")

    return once, check


def floor_w1(n: int, repeat: int) -> h.Stats:
    """``asyncio.gather`` of the same ``n`` coroutines (W1's tool function, called directly)."""
    once, check = _floor_w1_once(n)

    async def run() -> h.Stats:
        return await h.ameasure(once, repeat=repeat, check=check)

    return asyncio.run(run()).scaled(1e3)


def floor_w2(n: int, repeat: int) -> h.Stats:
    """``n`` OS threads each sleeping ``WAIT_MS``, started and joined."""

    def once() -> list[int]:
        out = [0] * n

        def wait(i: int) -> None:
            time.sleep(WAIT_MS / 1000)
            out[i] = WAIT_MS

        threads = [threading.Thread(target=wait, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def check(result: Any) -> None:
        if result != [WAIT_MS] * n:
            raise BenchError("the floor's threads returned wrong results")

    return h.measure(once, repeat=repeat, check=check).scaled(1e3)


def floor_w3(impl: Impl, n: int, repeat: int) -> h.Stats:
    """A Python loop calling W3's function and building the same ToolMessages (with
    ``impl``'s ToolMessage class), µs per call."""
    tool_message = impl.tool_message

    def add(a: int, b: int) -> int:
        return a + b

    calls = tool_calls("add", lambda i: {"a": i, "b": 1}, n)

    def once() -> dict[str, Any]:
        return {
            "messages": [
                tool_message(content=str(add(**c["args"])), tool_call_id=c["id"], name=c["name"])
                for c in calls
            ]
        }

    check = checker(calls, [str(i + 1) for i in range(n)])
    return h.measure(once, repeat=repeat, check=check).scaled(1e6 / n)


def scaled_count(n: int, scale: float) -> int:
    return max(1, round(n * scale))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=h.IMPLS, help="run one side only")
    parser.add_argument(
        "--repeat", type=int, default=5, help=f"timed repetitions (>= {h.MIN_REPEAT}; default 5)"
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the call counts (e.g. 0.1 for a smoke run)",
    )
    h.add_json_arg(parser)
    args = parser.parse_args(argv)
    if args.repeat < h.MIN_REPEAT:
        parser.error(f"--repeat must be >= {h.MIN_REPEAT}")
    if not args.scale > 0:
        parser.error("--scale must be > 0")

    loaders = {"ironloop": load_ironloop, "langgraph": load_langgraph}
    impls: list[Impl] = []
    for name in [args.only] if args.only else list(h.IMPLS):
        try:
            impls.append(loaders[name]())
        except ImportError as e:
            msg = f"cannot import {name} ({type(e).__name__}: {e})"
            if args.only:
                print(f"tool_dispatch: {msg}", file=sys.stderr)
                return 2
            hint = " (install it with benches/python/run.sh)" if name == "ironloop" else ""
            print(f"tool_dispatch: {msg}{hint}; running the other side only.", file=sys.stderr)
    if not impls:
        print("tool_dispatch: nothing to run", file=sys.stderr)
        return 2

    info = h.machine_info()
    h.print_header("ironloop tool dispatch: W1, W2, W3 (ToolNode)", info, argv)
    n1, n2, n3 = (scaled_count(n, args.scale) for n in (N_W1, N_W2, N_W3))
    scale_note = "" if args.scale == 1.0 else f" [scale {args.scale:g}]"
    print(f"repeat: {args.repeat} (median, min–max), warmup: 1{scale_note}\n", flush=True)

    workloads: list[tuple[h.Row, Callable[[Impl, int, int], h.Stats], int]] = [
        (
            h.Row("W1", f"{n1} × async wait(ms={WAIT_MS}), await node.ainvoke", "ms", TARGET_W1_MS),
            w1,
            n1,
        ),
        (
            h.Row("W2", f"{n2} × sync wait(ms={WAIT_MS}), node.invoke", "ms", TARGET_W2_MS),
            w2,
            n2,
        ),
        (h.Row("W3", f"{n3} × sync add(a, b), node.invoke", "µs/call", TARGET_W3_US), w3, n3),
    ]
    # The floors, measured in this process beside the workloads (W3's with the first
    # side's ToolMessage class: ironloop's when it is installed).
    floors: dict[str, tuple[str, Callable[[], h.Stats]]] = {
        "W1": (f"asyncio.gather of the same {n1} coroutines", lambda: floor_w1(n1, args.repeat)),
        "W2": (
            f"{n2} OS threads each sleeping {WAIT_MS} ms, started and joined",
            lambda: floor_w2(n2, args.repeat),
        ),
        "W3": (
            f"a Python loop calling add() and building the same {n3} ToolMessages "
            f"({impls[0].name}'s class)",
            lambda: floor_w3(impls[0], n3, args.repeat),
        ),
    }
    for row, run, n in workloads:
        what, floor = floors[row.workload]
        row.floor_what = what
        row.max_over_floor = MAX_OVER_FLOOR[row.workload]
        # W1's floor runs in turn with the first side's W1 (see `w1_beside_floor`).
        beside = row.workload == "W1" and impls[0].name == "ironloop"
        if beside:
            row.floor_what += " (in turn with ironloop's runs, on one event loop)"
        else:
            print(f"  running {row.workload} floor ...", file=sys.stderr, flush=True)
            row.floor = floor()
        for impl in impls:
            print(f"  running {row.workload} {impl.name} ...", file=sys.stderr, flush=True)
            try:
                if beside and impl is impls[0]:
                    row.stats[impl.name], row.floor = w1_beside_floor(impl, n, args.repeat)
                else:
                    row.stats[impl.name] = run(impl, n, args.repeat)
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                row.errors[impl.name] = f"{type(e).__name__}: {e}"

    rows = [row for row, _, _ in workloads]
    print()
    h.print_table(rows)
    h.dump_json(
        args.json,
        info,
        rows,
        command=sys.argv if argv is None else argv,
        repeat=args.repeat,
        scale=args.scale,
        calls={"W1": n1, "W2": n2, "W3": n3},
        langgraph_toolnode="standalone ToolNode with config={'configurable': {runtime: Runtime()}}",
    )
    return 1 if any(row.errors for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
