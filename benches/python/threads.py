"""W9 and thread loading (BENCHMARKS.md): long threads, ironloop vs LangGraph in one run.

- W9: a chat, ``invoke`` of one user message on a ``MessagesState`` thread whose node
  echoes it, with SqliteSaver (a temp file), 1,000 turns. ms per turn around turn 10
  (turns 6-15) and around turn 1,000 (991-1,000); target: turn 1,000 <= 1.3x turn 10.
  Every turn is run by one compiled graph, as a server process runs its threads.
  ``cold``: the same turns by a graph compiled afresh on a new saver object per turn,
  timing only the ``invoke`` (what another worker process pays: the thread loaded
  from the store). ``messages``: the same turns by ``stream(..., stream_mode="messages")``,
  as a chat UI calls it (the echo is the one message each turn streams).
- L: ``get_state`` of a thread of constant-size state (``{count: int}``, nodes ``a``
  and ``b`` taking turns) after 10 and after 3,000 steps, per saver: ms per call;
  target: 3,000 <= 1.3x 10. ``cold``: a graph compiled afresh (and, for SQLite and
  PostgreSQL, a new saver object) per call, timing only ``get_state`` (the load from
  the store: the nearest snapshot and the deltas after it); ``warm``: the graph that
  ran the thread (ironloop keeps a thread's latest state between runs).
  LangGraph's figures are for its graph that ran the thread (it keeps nothing between
  calls: its warm and cold are the same work).

PostgreSQL rows run when ``IRONLOOP_TEST_POSTGRES_URL`` names a server (``source
scripts/postgres.sh`` starts a throwaway one); LangGraph's when
``langgraph-checkpoint-postgres`` is installed too. Each run's result is checked
(message count and texts, count) before its time counts.

    python benches/python/threads.py [--only ironloop|langgraph] [--repeat N]
                                     [--turns N] [--steps N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import _harness as h

TURNS = 1_000
EARLY = (6, 16)  # turns 6-15: "turn 10"
LATE = 10  # the last 10 turns: "turn 1,000"
STEPS = (10, 3_000)
CALLS = 30  # get_state calls per sample
TARGET_GROWTH = 1.3
PG_URL = os.environ.get("IRONLOOP_TEST_POSTGRES_URL", "")


@dataclass
class Side:
    """What a framework needs here: its graph API and savers by kind."""

    name: str
    StateGraph: Any
    MessagesState: Any
    START: Any
    END: Any
    HumanMessage: Any
    AIMessage: Any
    savers: dict[str, Callable[[str], Any]]  # kind -> (store) -> a saver on that store
    close: Callable[[Any], None]


def load_ironloop() -> Side:
    import ironloop
    from ironloop.messages import AIMessage, HumanMessage

    savers: dict[str, Callable[[str], Any]] = {
        "memory": lambda store: MEMORY.setdefault(store, ironloop.MemorySaver()),
        "sqlite": ironloop.SqliteSaver,
    }
    if PG_URL:

        def pg(schema: str) -> Any:
            s = ironloop.PostgresSaver(PG_URL, schema=schema)
            s.setup()
            return s

        savers["postgres"] = pg
    return Side(
        "ironloop",
        ironloop.StateGraph,
        ironloop.MessagesState,
        ironloop.START,
        ironloop.END,
        HumanMessage,
        AIMessage,
        savers,
        lambda s: s.close() if hasattr(s, "close") else None,
    )


def load_langgraph() -> Side:
    import sqlite3

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    conns: dict[int, Any] = {}

    def sqlite_saver(path: str) -> Any:
        conn = sqlite3.connect(path, check_same_thread=False)
        s = SqliteSaver(conn)
        conns[id(s)] = conn
        return s

    def close(s: Any) -> None:
        c = conns.pop(id(s), None)
        if c is not None:
            c.close()

    savers: dict[str, Callable[[str], Any]] = {
        "memory": lambda store: MEMORY.setdefault(store, InMemorySaver()),
        "sqlite": sqlite_saver,
    }
    if PG_URL:
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg import Connection
            from psycopg.rows import dict_row
        except ImportError as e:
            print(f"threads: LangGraph PostgreSQL rows skipped ({e})", file=sys.stderr)
        else:

            def pg(schema: str) -> Any:
                conn = Connection.connect(
                    PG_URL,
                    autocommit=True,
                    prepare_threshold=0,
                    row_factory=dict_row,
                    options=f"-c search_path={schema}",
                )
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                s = PostgresSaver(conn)
                s.setup()
                conns[id(s)] = conn
                return s

            savers["postgres"] = pg
    return Side(
        "langgraph",
        StateGraph,
        MessagesState,
        START,
        END,
        HumanMessage,
        AIMessage,
        savers,
        close,
    )


LOADERS = {"ironloop": load_ironloop, "langgraph": load_langgraph}
MEMORY: dict[str, Any] = {}  # MemorySaver "stores": one saver object per store name


class Stores:
    """Fresh stores: SQLite files in a temp dir, PostgreSQL schemas, memory names."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="ironloop-bench-threads-")
        self.schemas: list[str] = []

    def new(self, kind: str) -> str:
        name = f"bench_{uuid.uuid4().hex[:10]}"
        if kind == "sqlite":
            return os.path.join(self.dir, f"{name}.db")
        if kind == "postgres":
            self.schemas.append(name)
        return name

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        MEMORY.clear()
        if self.schemas and PG_URL:
            import psycopg

            with psycopg.connect(PG_URL, autocommit=True) as c:
                for s in self.schemas:
                    c.execute(f'DROP SCHEMA IF EXISTS "{s}" CASCADE')


@contextmanager
def saver(side: Side, kind: str, store: str) -> Iterator[Any]:
    s = side.savers[kind](store)
    try:
        yield s
    finally:
        if kind != "memory":
            side.close(s)


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 10 * max(STEPS)}


# --- W9: a chat ----------------------------------------------------------------------------


def chat(side: Side, checkpointer: Any) -> Any:
    def echo(s: Any) -> dict[str, Any]:
        return {"messages": [side.AIMessage(content=f"echo: {s['messages'][-1].content}")]}

    g = side.StateGraph(side.MessagesState)
    g.add_node("echo", echo)
    g.add_edge(side.START, "echo")
    g.add_edge("echo", side.END)
    return g.compile(checkpointer=checkpointer)


def turn(app: Any, side: Side, i: int, streamed: bool = False) -> float:
    msg = side.HumanMessage(content=f"message {i} " + "x" * 80)
    if streamed:
        t0 = time.perf_counter()
        shown = [m for m, _ in app.stream({"messages": [msg]}, cfg("chat"), stream_mode="messages")]
        dt = time.perf_counter() - t0
        if [m.content for m in shown] != [f"echo: {msg.content}"]:
            raise AssertionError(f"turn {i} streamed {[m.content[:40] for m in shown]}")
        return dt
    t0 = time.perf_counter()
    out = app.invoke({"messages": [msg]}, cfg("chat"))
    dt = time.perf_counter() - t0
    ms = out["messages"]
    if len(ms) != 2 * i or ms[-1].content != f"echo: {msg.content}":
        raise AssertionError(f"turn {i}: {len(ms)} messages, last {ms[-1].content[:40]!r}")
    return dt


def w9(
    side: Side, kind: str, turns: int, cold: bool, stores: Stores, streamed: bool = False
) -> tuple[float, float]:
    """Median ms per turn around turn 10 and over the last turns."""
    store = stores.new(kind)
    times: list[float] = []
    with saver(side, kind, store) as s:
        app = chat(side, s)
        for i in range(1, turns + 1):
            timed = EARLY[0] <= i < EARLY[1] or i > turns - LATE
            if cold and timed:
                with saver(side, kind, store) as fresh:
                    times.append(turn(chat(side, fresh), side, i, streamed))
            else:
                times.append(turn(app, side, i, streamed))
        if streamed and len(app.get_state(cfg("chat")).values["messages"]) != 2 * turns:
            raise AssertionError("the streamed chat did not keep every message")
    early = statistics.median(times[EARLY[0] - 1 : EARLY[1] - 1]) * 1e3
    late = statistics.median(times[-LATE:]) * 1e3
    return early, late


# --- L: get_state of a long thread ----------------------------------------------------------


def counter(side: Side, checkpointer: Any, steps: int) -> Any:
    from typing import TypedDict

    class C(TypedDict):
        count: int

    g = side.StateGraph(C)
    g.add_node("a", lambda s: {"count": s["count"] + 1})
    g.add_node("b", lambda s: {"count": s["count"] + 1})
    g.add_edge(side.START, "a")
    g.add_conditional_edges("a", lambda s: side.END if s["count"] >= steps else "b")
    g.add_conditional_edges("b", lambda s: side.END if s["count"] >= steps else "a")
    return g.compile(checkpointer=checkpointer)


def get_state_ms(side: Side, kind: str, steps: int, cold: bool, stores: Stores) -> float:
    """Median ms of one ``get_state`` on a thread of ``steps`` steps."""
    store = stores.new(kind)
    with saver(side, kind, store) as s:
        app = counter(side, s, steps)
        if app.invoke({"count": 0}, cfg("t"))["count"] != steps:
            raise AssertionError("the thread did not reach its count")
        samples = []
        for _ in range(CALLS):
            if cold:
                with saver(side, kind, store) as fresh:
                    g = counter(side, fresh, steps)
                    t0 = time.perf_counter()
                    st = g.get_state(cfg("t"))
                    samples.append(time.perf_counter() - t0)
            else:
                t0 = time.perf_counter()
                st = app.get_state(cfg("t"))
                samples.append(time.perf_counter() - t0)
            if st.values["count"] != steps:
                raise AssertionError(f"get_state: count {st.values['count']} != {steps}")
    return statistics.median(samples) * 1e3


# --- the report ----------------------------------------------------------------------------


def stats(xs: list[float]) -> h.Stats:
    return h.Stats.of(xs)


def row(workload: str, what: str, unit: str, target: float) -> h.Row:
    return h.Row(workload, what, unit, target)


def print_table(rows: list[h.Row]) -> None:
    """Medians (min–max) per side; growth rows also their target and verdict."""
    table = [["workload", "unit", "ironloop", "langgraph", "target", "verdict"]]
    for r in rows:
        if not r.stats:
            continue
        cells = [
            f"{h._fmt(s.median)} ({h._fmt(s.min)}–{h._fmt(s.max)})"
            if (s := r.stats.get(i))
            else "-"
            for i in h.IMPLS
        ]
        growth = r.unit == "×"
        verdict = r.verdict if growth else ""
        target = f"≤ {r.target:g}" if growth else ""
        table.append([r.workload, r.unit, *cells, target, verdict])
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for n, line in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=h.IMPLS, help="run one side only")
    p.add_argument("--repeat", type=int, default=3, help="repetitions (>= 3; default 3)")
    p.add_argument("--turns", type=int, default=TURNS, help=f"W9 turns (default {TURNS})")
    p.add_argument("--steps", type=int, default=STEPS[1], help=f"long thread (default {STEPS[1]})")
    h.add_json_arg(p)
    args = p.parse_args(argv)
    if args.repeat < h.MIN_REPEAT:
        p.error(f"--repeat must be >= {h.MIN_REPEAT}")
    if args.turns < EARLY[1] + LATE:
        p.error(f"--turns must be >= {EARLY[1] + LATE}")
    steps = (STEPS[0], args.steps)

    sides: list[Side] = []
    for name in [args.only] if args.only else list(h.IMPLS):
        try:
            sides.append(LOADERS[name]())
        except ImportError as e:
            print(
                f"threads: cannot import {name} ({e}); running the other side only", file=sys.stderr
            )
    if not sides:
        return 2
    info = h.machine_info()
    h.print_header("ironloop threads: W9 and thread loading", info, argv)
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"repeat: {args.repeat}; W9: {args.turns} turns; L: {steps[0]} and {steps[1]} steps")
    print(f"postgres: {'yes' if PG_URL else 'no (IRONLOOP_TEST_POSTGRES_URL unset)'}\n")

    rows: list[h.Row] = []
    stores = Stores()
    try:
        kinds_w9 = ["sqlite"] + (["postgres"] if PG_URL else [])
        for kind in kinds_w9:
            for cold, streamed in [(False, False), (True, False), (False, True)]:
                label = f"W9 {kind}{' cold' if cold else ''}{' messages' if streamed else ''}"
                r10 = row(f"{label} turn 10", "ms per turn around turn 10", "ms", float("inf"))
                rN = row(
                    f"{label} turn {args.turns}", "ms per turn, last turns", "ms", float("inf")
                )
                rg = row(f"{label} growth", "turn 1,000 ÷ turn 10", "×", TARGET_GROWTH)
                for side in sides:
                    if kind not in side.savers or (cold and side.name == "langgraph"):
                        continue
                    figs = [
                        w9(side, kind, args.turns, cold, stores, streamed)
                        for _ in range(args.repeat)
                    ]
                    r10.stats[side.name] = stats([e for e, _ in figs])
                    rN.stats[side.name] = stats([lt for _, lt in figs])
                    rg.stats[side.name] = stats([lt / e for e, lt in figs])
                    print(f"  {label} {side.name}: {[f'{e:.2f}/{lt:.2f}' for e, lt in figs]} ms")
                rows += [r10, rN, rg]
        for kind in ["memory", "sqlite"] + (["postgres"] if PG_URL else []):
            for cold in (True, False):
                label = f"L {kind}{' cold' if cold else ' warm'}"
                rs = [
                    row(f"{label} {n} steps", f"get_state after {n} steps", "ms", float("inf"))
                    for n in steps
                ]
                rg = row(f"{label} growth", f"{steps[1]} steps ÷ {steps[0]}", "×", TARGET_GROWTH)
                for side in sides:
                    if kind not in side.savers or (not cold and side.name == "langgraph"):
                        continue
                    per = [
                        [get_state_ms(side, kind, n, cold, stores) for n in steps]
                        for _ in range(args.repeat)
                    ]
                    for i, r in enumerate(rs):
                        r.stats[side.name] = stats([f[i] for f in per])
                    rg.stats[side.name] = stats([f[1] / f[0] for f in per])
                    print(f"  {label} {side.name}: {[[round(x, 3) for x in f] for f in per]} ms")
                rows += [*rs, rg]
    finally:
        stores.cleanup()
    print()
    print_table(rows)
    print(
        "\nLangGraph keeps nothing between calls: its L figures are under 'cold' (the graph "
        "that ran the thread), and it has no W9 'cold' row (each of its turns loads the "
        "thread anyway)."
    )
    h.dump_json(args.json, info, rows, turns=args.turns, steps=list(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
