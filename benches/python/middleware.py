"""W10 (BENCHMARKS.md): what middleware costs an agent, ironloop vs LangChain 1.x.

W5's agent (a scripted model, 50 rounds of one ``add`` tool call, then an answer),
built with ``create_agent``:

- ``bare``: no middleware;
- ``3 no-op``: three middleware that do nothing — a ``before_model`` hook, an
  ``after_model`` hook and a ``wrap_tool_call`` hook that calls its handler;

and, as the floor, W5 itself (``create_react_agent``). µs per round, no checkpointer
and MemorySaver. The targets: ironloop's ``3 no-op`` ≤ 1.5× its floor, and ≥ 30×
faster than LangChain's ``create_agent`` with the same three middleware, measured in
the same run: one invoke of every side in turn per repetition, so all see the same
load, timed by the wall clock and by the process' CPU time. Every run's result is
checked (message count, final answer, each tool result) before its time counts.

    python benches/python/middleware.py [--repeat N] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import _harness as h

from graph import BenchError, Savers, config, load_ironloop, load_langgraph, script

ROUNDS = 50
TARGET_FLOOR_RATIO = 1.5
TARGET_LANGCHAIN_RATIO = 30.0
KINDS = ("none", "memory")


def ironloop_middleware() -> list[Any]:
    from ironloop.middleware import after_model, before_model, wrap_tool_call

    @before_model
    def noop_before(state: Any, runtime: Any) -> None:
        return None

    @after_model
    def noop_after(state: Any, runtime: Any) -> None:
        return None

    @wrap_tool_call
    def noop_wrap(request: Any, handler: Any) -> Any:
        return handler(request)

    return [noop_before, noop_after, noop_wrap]


def langchain_middleware() -> list[Any]:
    from langchain.agents.middleware import after_model, before_model, wrap_tool_call

    @before_model
    def noop_before(state: Any, runtime: Any) -> None:
        return None

    @after_model
    def noop_after(state: Any, runtime: Any) -> None:
        return None

    @wrap_tool_call
    def noop_wrap(request: Any, handler: Any) -> Any:
        return handler(request)

    return [noop_before, noop_after, noop_wrap]


def checker(rounds: int) -> Callable[[Any], None]:
    final = f"done after {rounds} rounds"

    def check(result: Any) -> None:
        msgs = result["messages"]
        if len(msgs) != 2 * rounds + 2:
            raise BenchError(f"{len(msgs)} messages, expected {2 * rounds + 2}")
        if msgs[-1].content != final:
            raise BenchError(f"final answer {msgs[-1].content!r}")
        for k in range(rounds):
            tm = msgs[2 + 2 * k]
            if tm.tool_call_id != f"call_{k}" or str(tm.content) != str(k + 1):
                raise BenchError(f"round {k}: tool result {tm.content!r}, expected {k + 1}")

    return check


def measure_kind(
    sides: dict[str, tuple[Any, Callable[[Any], Any]]],
    kind: str,
    rounds: int,
    repeat: int,
    savers: dict[str, Savers],
) -> tuple[dict[str, h.Stats], dict[str, h.Stats]]:
    """Every side with checkpointer ``kind``, one invoke of each in turn per repetition
    (so all see the same load), µs per round: wall and process CPU time."""
    made: list[tuple[Savers, Any, Any]] = []
    try:
        fns = []
        for impl, build in sides.values():
            saver, path = savers[impl.name].make(kind)
            made.append((savers[impl.name], saver, path))
            fns.append(timed(build(saver), impl, saver, rounds))
        wall, cpu = h.measure_alternating(fns, [checker(rounds)] * len(fns), repeat=repeat)
    finally:
        for owner, saver, path in made:
            owner.release(saver, path)
    per_round = 1e6 / rounds
    return (
        {label: s.scaled(per_round) for label, s in zip(sides, wall, strict=True)},
        {label: s.scaled(per_round) for label, s in zip(sides, cpu, strict=True)},
    )


def timed(agent: Any, impl: Any, saver: Any, rounds: int) -> Callable[[], tuple[Any, float]]:
    """One invoke of ``agent``, timed: its result and seconds."""

    def once() -> tuple[Any, float]:
        cfg = config(10 * rounds + 20, saver)
        messages = {"messages": [impl.HumanMessage(content="count up")]}
        t0 = time.perf_counter()
        result = agent.invoke(messages, cfg)
        return result, time.perf_counter() - t0

    return once


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    h.add_json_arg(parser)
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    il = load_ironloop()
    lg = load_langgraph()
    from langchain.agents import create_agent as lc_create_agent

    import ironloop

    info = h.machine_info()
    h.print_header("W10: middleware on an agent, ironloop vs LangChain 1.x", info, argv)
    rounds, repeat = args.rounds, args.repeat
    print(f"rounds: {rounds}, repeat: {repeat} (median, min–max), warmup: 1\n", flush=True)

    sides: dict[str, tuple[Any, Callable[[Any], Any]]] = {
        "ironloop create_react_agent (W5, the floor)": (
            il,
            lambda s: ironloop.create_react_agent(
                il.scripted_model(script(rounds)), [il.tool(add)], checkpointer=s
            ),
        ),
        "ironloop create_agent, bare": (
            il,
            lambda s: ironloop.create_agent(
                il.scripted_model(script(rounds)), [il.tool(add)], checkpointer=s
            ),
        ),
        "ironloop create_agent, 3 no-op": (
            il,
            lambda s: ironloop.create_agent(
                il.scripted_model(script(rounds)),
                [il.tool(add)],
                middleware=ironloop_middleware(),
                checkpointer=s,
            ),
        ),
        "LangChain create_agent, bare": (
            lg,
            lambda s: lc_create_agent(
                lg.scripted_model(script(rounds)), [lg.tool(add)], checkpointer=s
            ),
        ),
        "LangChain create_agent, 3 no-op": (
            lg,
            lambda s: lc_create_agent(
                lg.scripted_model(script(rounds)),
                [lg.tool(add)],
                middleware=langchain_middleware(),
                checkpointer=s,
            ),
        ),
    }
    results: dict[tuple[str, str], h.Stats] = {}
    cpu: dict[tuple[str, str], h.Stats] = {}
    savers = {"ironloop": Savers(il), "langgraph": Savers(lg)}
    failed = False
    for kind in KINDS:
        print(f"  running {kind}: every side in turn ...", file=sys.stderr, flush=True)
        try:
            wall_of, cpu_of = measure_kind(sides, kind, rounds, repeat, savers)
        except Exception as e:
            print(f"{kind}: FAILED: {type(e).__name__}: {e}")
            failed = True
            continue
        results.update({(kind, label): s for label, s in wall_of.items()})
        cpu.update({(kind, label): s for label, s in cpu_of.items()})

    def fmt(s: h.Stats) -> str:
        return f"{h._fmt(s.median)} ({h._fmt(s.min)}–{h._fmt(s.max)})"

    print("µs per round, median (min–max); wall, then the process' CPU time (every")
    print("thread's), which waiting for a core on a loaded machine does not inflate:\n")
    for kind in KINDS:
        print(f"checkpointer: {kind}")
        for label in sides:
            s, c = results.get((kind, label)), cpu.get((kind, label))
            shown = f"{fmt(s)}  cpu {fmt(c)}" if s and c else "FAILED"
            print(f"  {label:<46} {shown}")
        for name, table in (("wall", results), ("cpu", cpu)):
            floor = table.get((kind, "ironloop create_react_agent (W5, the floor)"))
            bare = table.get((kind, "ironloop create_agent, bare"))
            mw = table.get((kind, "ironloop create_agent, 3 no-op"))
            lc = table.get((kind, "LangChain create_agent, 3 no-op"))
            if floor and mw:
                r = mw.median / floor.median
                verdict = "PASS" if r <= TARGET_FLOOR_RATIO else "MISS"
                print(
                    f"  {name}: 3 no-op ÷ W5 floor: {r:.2f}× (target ≤ {TARGET_FLOOR_RATIO}×) "
                    f"{verdict}"
                )
            if bare and mw:
                print(f"  {name}: 3 no-op ÷ create_agent bare: {mw.median / bare.median:.2f}×")
            if lc and mw:
                r = lc.median / mw.median
                verdict = "PASS" if r >= TARGET_LANGCHAIN_RATIO else "MISS"
                print(
                    f"  {name}: LangChain ÷ ironloop, 3 no-op: {r:.1f}× "
                    f"(target ≥ {TARGET_LANGCHAIN_RATIO:g}×) {verdict}"
                )
        print()
    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    **info,
                    "rounds": rounds,
                    "repeat": repeat,
                    "results": {
                        f"{k}: {label}": {"median": s.median, "min": s.min, "max": s.max}
                        for (k, label), s in results.items()
                    },
                    "cpu": {
                        f"{k}: {label}": {"median": s.median, "min": s.min, "max": s.max}
                        for (k, label), s in cpu.items()
                    },
                },
                f,
                indent=2,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
