"""W7 (BENCHMARKS.md): many conversations at once against a model API over real HTTP.

A loopback OpenAI-compatible server (``_loopback_openai.py``, its own process) answers
every request after ``--delay`` (50 ms), scripted so each conversation makes
``--rounds`` (3) tool rounds of ``--calls`` (2) parallel calls of a trivial sync tool,
then answers. Each side runs ``create_react_agent`` over its own OpenAI client
(ironloop: ``OpenAIChat``; LangGraph: ``langchain_openai.ChatOpenAI``) with a SQLite
checkpointer (a fresh file per run, one thread per conversation), in two shapes:

- ``async``: ``--conversations`` (1,000) concurrent ``ainvoke`` on one event loop
  (LangGraph: ``AsyncSqliteSaver``);
- ``threads``: ``--threads`` (64) OS threads, each calling ``invoke`` for one
  conversation (LangGraph: ``SqliteSaver`` on one shared connection);

each non-streaming (``ainvoke`` / ``invoke``) and streaming (``astream`` / ``stream``
with ``stream_mode="messages"``: the model is called with ``stream: true`` and
``stream_options.include_usage``, token chunks reach the caller).

Every case runs in a fresh child process (so its peak RSS is its own) against the same
server, in the same run. Reported per case: wall time of a whole run vs the ideal
``(rounds + 1) × delay``, CPU seconds of the client process (all its threads) per run,
peak RSS, and the per-round latency as the server sees it (seconds between two
consecutive requests of one conversation: the delay plus the client's turnaround),
p50 / p99. The server's own CPU is printed too, and the *CPU floor*: the client's and
the server's CPU seconds ÷ the cores this process may run on, the least wall time the
run can take on this machine. A wall near its CPU floor is CPU-bound: only less CPU
per conversation (or more cores) shortens it, whatever the ideal.
Every run is checked: each conversation ends with the scripted answer after exactly
``rounds × (1 + calls) + 2`` messages, and the server saw exactly
``rounds + 1`` requests per conversation.

    python benches/python/serve.py [--only ironloop|langgraph] [--repeat N]
        [--conversations N] [--threads N] [--shapes async,threads] [--stream on,off]
        [--delay S] [--rounds N] [--calls N] [--json PATH]

Targets: wall ≤ 1.5× ideal; CPU seconds ≥ 10× less than LangGraph + langchain-openai.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _harness as h
from _loopback_openai import LoopbackOpenAI

TARGET_WALL_RATIO = 1.5
TARGET_CPU_RATIO = 10.0
ANSWER = "All done."


def lookup(query: str) -> str:
    """Look something up."""
    return f"result {query}"


# --- one case, in a child process ----------------------------------------------------------


@dataclass
class Case:
    impl: str
    shape: str  # "async" | "threads"
    stream: bool
    conversations: int
    base_url: str
    rounds: int
    calls: int
    repeat: int


def _check(final: Any, case: Case) -> None:
    msgs = final["messages"]
    want = case.rounds * (1 + case.calls) + 2
    if len(msgs) != want or msgs[-1].content != ANSWER:
        raise AssertionError(
            f"a conversation ended with {len(msgs)} messages (want {want}), "
            f"last {msgs[-1].content!r}"
        )


def _inputs(case: Case, run: int, i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    marker = f"{case.impl} {case.shape} {case.stream} run {run} conversation {i}"
    inputs = {"messages": [{"role": "user", "content": marker}]}
    return inputs, {"configurable": {"thread_id": f"t{run}-{i}"}}


async def _one_async(agent: Any, case: Case, run: int, i: int) -> None:
    inputs, config = _inputs(case, run, i)
    if case.stream:
        chunks = 0
        async for _ in agent.astream(inputs, config, stream_mode="messages"):
            chunks += 1
        if chunks == 0:
            raise AssertionError("a streamed conversation yielded no chunk")
        _check(await _aget(agent, config), case)
    else:
        _check(await agent.ainvoke(inputs, config), case)


async def _aget(agent: Any, config: dict[str, Any]) -> Any:
    state = await agent.aget_state(config)
    return state.values


def _one_sync(agent: Any, case: Case, run: int, i: int) -> None:
    inputs, config = _inputs(case, run, i)
    if case.stream:
        chunks = sum(1 for _ in agent.stream(inputs, config, stream_mode="messages"))
        if chunks == 0:
            raise AssertionError("a streamed conversation yielded no chunk")
        _check(agent.get_state(config).values, case)
    else:
        _check(agent.invoke(inputs, config), case)


def _threads(agent: Any, case: Case, run: int) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(case.conversations)

    def worker(i: int) -> None:
        try:
            start.wait()
            _one_sync(agent, case, run, i)
        except BaseException as e:  # reported below, after every thread ended
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(case.conversations)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def run_case(case: Case) -> dict[str, Any]:
    """Warm up once, then ``repeat`` timed runs; wall and CPU seconds per run, peak RSS."""
    walls: list[float] = []
    cpus: list[float] = []
    tmp = tempfile.mkdtemp(prefix="ironloop-w7-")

    def timed(fn: Callable[[], None]) -> None:
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)

    runs = range(case.repeat + 1)  # run 0 is the warm-up
    # One event loop for every run of a case: langchain-openai keeps its async HTTP
    # client across calls, and that client cannot outlive its loop.
    if case.impl == "ironloop":
        from ironloop import SqliteSaver, create_react_agent, tool
        from ironloop.models import OpenAIChat

        model = OpenAIChat("loopback", base_url=case.base_url, api_key="loopback", max_retries=0)
        tools = [tool(lookup)]

        def agent_for(run: int) -> tuple[Any, Any]:
            saver = SqliteSaver(os.path.join(tmp, f"run{run}.db"))
            return create_react_agent(model, tools, checkpointer=saver), saver

        if case.shape == "async":

            async def all_runs() -> None:
                for run in runs:
                    agent, saver = agent_for(run)
                    c0, t0 = time.process_time(), time.perf_counter()
                    await asyncio.gather(
                        *(_one_async(agent, case, run, i) for i in range(case.conversations))
                    )
                    walls.append(time.perf_counter() - t0)
                    cpus.append(time.process_time() - c0)
                    saver.close()

            asyncio.run(all_runs())
        else:
            for run in runs:
                agent, saver = agent_for(run)
                timed(lambda agent=agent, run=run: _threads(agent, case, run))
                saver.close()
    else:
        import sqlite3

        from langchain_core.tools import tool as lc_tool
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.sqlite import SqliteSaver as LGSqliteSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.prebuilt import create_react_agent as lg_create_react_agent

        lg_model = ChatOpenAI(
            model="loopback",
            base_url=case.base_url,
            api_key="loopback",
            max_retries=0,
            stream_usage=True,
        )
        lg_tools = [lc_tool(lookup)]
        if case.shape == "async":

            async def lg_all_runs() -> None:
                for run in runs:
                    db = os.path.join(tmp, f"run{run}.db")
                    async with AsyncSqliteSaver.from_conn_string(db) as saver:
                        await saver.setup()
                        agent = lg_create_react_agent(lg_model, lg_tools, checkpointer=saver)
                        c0, t0 = time.process_time(), time.perf_counter()
                        await asyncio.gather(
                            *(_one_async(agent, case, run, i) for i in range(case.conversations))
                        )
                        walls.append(time.perf_counter() - t0)
                        cpus.append(time.process_time() - c0)

            asyncio.run(lg_all_runs())
        else:
            for run in runs:
                conn = sqlite3.connect(os.path.join(tmp, f"run{run}.db"), check_same_thread=False)
                saver = LGSqliteSaver(conn)
                saver.setup()
                agent = lg_create_react_agent(lg_model, lg_tools, checkpointer=saver)
                timed(lambda agent=agent, run=run: _threads(agent, case, run))
                conn.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "walls": walls[1:],
        "cpus": cpus[1:],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# --- the driver ----------------------------------------------------------------------------


def _percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=h.IMPLS, help="run one side only")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (>= 3)")
    parser.add_argument("--conversations", type=int, default=1000, help="async conversations")
    parser.add_argument(
        "--threads", type=int, default=64, help="OS threads (one conversation each)"
    )
    parser.add_argument("--shapes", default="async,threads", help="async,threads")
    parser.add_argument("--stream", default="off,on", help="off,on: non-streaming / streaming")
    parser.add_argument("--delay", type=float, default=0.05, help="server delay, seconds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    h.add_json_arg(parser)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(Case(**json.loads(args.child)))))
        return 0
    if args.repeat < h.MIN_REPEAT:
        parser.error(f"--repeat must be >= {h.MIN_REPEAT}")
    shapes = [s for s in args.shapes.split(",") if s]
    streams = [s for s in args.stream.split(",") if s]
    if not set(shapes) <= {"async", "threads"} or not set(streams) <= {"on", "off"}:
        parser.error("--shapes takes async,threads and --stream takes off,on")
    impls = [args.only] if args.only else list(h.IMPLS)

    info = h.machine_info()
    for dist in ("langchain-openai", "openai"):
        try:
            info["packages"][dist] = h.metadata.version(dist)
        except h.metadata.PackageNotFoundError:
            info["packages"][dist] = "not installed"
    h.print_header("ironloop W7: conversations over real HTTP (loopback OpenAI server)", info, argv)
    ideal = (args.rounds + 1) * args.delay
    print(
        f"server: delay {args.delay * 1e3:g} ms, {args.rounds} rounds × {args.calls} calls "
        f"then an answer; ideal wall {ideal * 1e3:g} ms; repeat {args.repeat} "
        "(median, min–max), warmup 1, each case in a fresh process\n",
        flush=True,
    )

    results: list[dict[str, Any]] = []
    failed = False
    with LoopbackOpenAI(
        delay=args.delay, rounds=args.rounds, calls=args.calls, answer=ANSWER
    ) as srv:
        for shape in shapes:
            for stream in streams:
                for impl in impls:
                    n = args.conversations if shape == "async" else args.threads
                    case = Case(
                        impl,
                        shape,
                        stream == "on",
                        n,
                        srv.base_url,
                        args.rounds,
                        args.calls,
                        args.repeat,
                    )
                    label = f"{shape}/{'stream' if case.stream else 'plain'} {impl}"
                    print(f"  running {label} ({n} conversations) ...", file=sys.stderr, flush=True)
                    srv.stats(reset=True)
                    proc = subprocess.run(
                        [sys.executable, __file__, "--child", json.dumps(case.__dict__)],
                        capture_output=True,
                        text=True,
                    )
                    served = srv.stats(reset=True)
                    row: dict[str, Any] = {
                        "impl": impl,
                        "shape": shape,
                        "stream": case.stream,
                        "conversations": n,
                    }
                    want = (args.repeat + 1) * n * (args.rounds + 1)
                    if proc.returncode != 0:
                        sys.stderr.write(proc.stderr)
                        row["error"] = proc.stderr.strip().splitlines()[-1:] or ["exit status"]
                        failed = True
                    elif served["requests"] != want:
                        row["error"] = [f"server saw {served['requests']} requests, want {want}"]
                        failed = True
                    else:
                        row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
                    gaps = served["round_gaps"]
                    row["round_p50_ms"] = _percentile(gaps, 0.5) * 1e3
                    row["round_p99_ms"] = _percentile(gaps, 0.99) * 1e3
                    row["server_cpu_s"] = served["cpu_seconds"] / (args.repeat + 1)
                    results.append(row)

    print()
    _print_table(results, ideal)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {**info, "command": sys.argv, "ideal_s": ideal, "results": results}, f, indent=2
            )
        print(f"\nresults written to {args.json}")
    return 1 if failed else 0


def _stats(xs: list[float], factor: float = 1.0) -> str:
    if not xs:
        return "-"
    return f"{statistics.median(xs) * factor:.3g} ({min(xs) * factor:.3g}–{max(xs) * factor:.3g})"


def _print_table(results: list[dict[str, Any]], ideal: float) -> None:
    header = [
        "case",
        "impl",
        "wall ms",
        "wall/ideal",
        "CPU s",
        "LG/il CPU",
        "peak RSS MiB",
        "round p50/p99 ms",
        "server CPU s",
        "CPU floor ms",
        "wall/floor",
        "verdict",
    ]
    table = [header]
    by_case: dict[tuple[str, bool], dict[str, dict[str, Any]]] = {}
    for r in results:
        by_case.setdefault((r["shape"], r["stream"]), {})[r["impl"]] = r
    for (shape, stream), sides in by_case.items():
        name = f"W7 {shape}{' stream' if stream else ''} ×{next(iter(sides.values()))['conversations']}"
        il, lg = sides.get("ironloop"), sides.get("langgraph")
        cpu_ratio = None
        if il and lg and il.get("cpus") and lg.get("cpus"):
            cpu_ratio = statistics.median(lg["cpus"]) / statistics.median(il["cpus"])
        for impl, r in sides.items():
            if "error" in r:
                table.append([name, impl, "FAILED: " + " ".join(r["error"])] + [""] * 9)
                continue
            wall = statistics.median(r["walls"])
            wall_ratio = wall / ideal
            cpu_floor = (statistics.median(r["cpus"]) + r["server_cpu_s"]) / _cores()
            verdict = "-"
            if impl == "ironloop":
                ok = wall_ratio <= TARGET_WALL_RATIO and (
                    cpu_ratio is None or cpu_ratio >= TARGET_CPU_RATIO
                )
                verdict = "PASS" if ok else "MISS"
            table.append(
                [
                    name,
                    impl,
                    _stats(r["walls"], 1e3),
                    f"{wall_ratio:.2f}×",
                    _stats(r["cpus"]),
                    f"{cpu_ratio:.1f}×" if cpu_ratio and impl == "ironloop" else "",
                    f"{r['peak_rss_mib']:.0f}",
                    f"{r['round_p50_ms']:.0f} / {r['round_p99_ms']:.0f}",
                    f"{r['server_cpu_s']:.2f}",
                    f"{cpu_floor * 1e3:.0f}",
                    f"{wall / cpu_floor:.2f}×",
                    verdict,
                ]
            )
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for n, line in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    print(
        f"\ntargets (ironloop): wall ≤ {TARGET_WALL_RATIO}× ideal ({ideal * 1e3:g} ms), "
        f"CPU ≥ {TARGET_CPU_RATIO:g}× less than LangGraph; CPU floor: (client + server CPU "
        f"seconds) ÷ {_cores()} cores"
    )


def _cores() -> int:
    """The cores this process may run on (its children, the server, share them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
