"""W4, W4m, W5, W6, S1 (BENCHMARKS.md): graphs, agents and start-up, ironloop vs LangGraph.

- W4: ``StateGraph`` over ``{count: int}``, Python nodes ``a`` -> ``b`` -> ``a`` ... each
  doing ``count += 1``, a conditional edge ending the run at 1,000; µs per node step with
  no checkpointer / MemorySaver / SqliteSaver (a temp file). Targets <= 15 / 25 / 100 µs.
- Floors (issue 13), measured beside W4 in the same process: W4 none — the node and
  routing functions called in a plain loop; W4 sqlite — as many committed SQLite
  transactions (WAL, synchronous=NORMAL) as steps, each writing the rows and bytes one
  ironloop step wrote (read back from its file). The table shows ironloop ÷ floor.
- W4m: W4 plus ``messages: Annotated[list, add_messages]``, every node appending one
  ~200-byte AIMessage, 3,000 steps in one run. (a) mean step cost at 2,000-3,000
  messages / at 50-100 messages, no checkpointer, memory and SQLite savers (target
  <= 1.3x);
  (b) checkpoint bytes after the 3,000 steps (target <= 5 MB; SQLite: the file once the
  saver is closed, its WAL checkpointed into it; the open file + WAL is in the notes).
- W4 / W4m postgres: the same on PostgreSQL (ironloop's PostgresSaver vs LangGraph's
  ``langgraph-checkpoint-postgres`` on psycopg 3) against the server named by
  ``IRONLOOP_TEST_POSTGRES_URL`` (``source scripts/postgres.sh`` starts a throwaway one),
  each saver in a fresh schema; bytes are the schema's tables, indexes and TOAST
  (``pg_total_relation_size``). Target: ironloop >= 5x LangGraph per step.
- W8: steps per second of 1, 2, 4 and 8 worker processes sharing one PostgreSQL, each
  running threads of W4's graph (``W8_STEPS`` steps each) for ``--w8-seconds``; the
  figure is wall time per step over all workers (1e6 / steps per second).
- W5: ``create_react_agent`` with a scripted model: 50 rounds of one ``add`` tool call,
  then a final answer; µs per round, no checkpointer / MemorySaver. Targets <= 100 / 150.
  ``W5 … stream``: the same runs by ``stream(..., stream_mode="updates")`` with every
  update pulled (the same targets).
- W6: 10,000 threads (distinct thread_id) of a 2-node graph, each leaving 10 messages
  (~100 bytes each) in MemorySaver: resident memory added per thread, measured in a
  fresh subprocess per framework and repetition. Target <= 4 KB/thread.
- S1: cold start, ``python -c "import ironloop"`` vs
  ``python -c "import langgraph.graph, langgraph.prebuilt"``: whole-process wall time
  and peak RSS. Targets <= 150 ms, <= 25 MiB. Then S1 plus a first trivial invoke (a
  one-node graph built and invoked twice): the process's wall time, and how much the
  first invoke costs over the second (target <= 5 ms).

Both frameworks run in the same run (W6 and S1 in subprocesses of the same interpreter);
every run's result is checked (final count, message count and content, tool results)
before its timing counts. Each side uses its own defaults: LangGraph 1.x checkpoints
with ``durability="async"`` (the save of step n may overlap step n+1), ironloop saves
each step before the next one starts.

For every ironloop MISS the script then profiles the ironloop side of that workload:
``py-spy record --native`` on a child process running only that workload (cProfile if
py-spy is missing or fails; ``-X importtime`` for S1; a bytes breakdown for W6) and
prints the top entries.

    python benches/python/graph.py [--only ironloop|langgraph] [--repeat N] [--scale F]
                                   [--json PATH] [--no-profile] [--w8-seconds S]
                                   [--w8-procs 1,2,4,8]

Without ``IRONLOOP_TEST_POSTGRES_URL`` the PostgreSQL rows (W4/W4m postgres, W8) are
left out, and the report says so.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gc
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import _harness as h

N_W4 = 1_000
N_W4M = 3_000
W4M_EARLY = (50, 100)  # messages in the state before the step
W4M_LATE_FRACTION = 2 / 3  # late window: [2/3 N, N) messages, i.e. 2,000-3,000 at N=3,000
ROUNDS_W5 = 50
THREADS_W6 = 10_000
S1_RUNS = 7

TARGET_W4_US = {"none": 15.0, "memory": 25.0, "sqlite": 100.0, "postgres": float("inf")}
TARGET_PG_RATIO = 5.0  # PostgreSQL: ironloop at least 5x LangGraph per step
W8_STEPS = 50  # steps per W8 thread
W8_PROCS = (1, 2, 4, 8)
PG_URL = os.environ.get("IRONLOOP_TEST_POSTGRES_URL", "")
TARGET_W4M_GROWTH = 1.3
MAX_OVER_FLOOR_W4 = {"none": None, "sqlite": 1.5}  # issue 13: W4 SQLite <= 1.5x its floor
TARGET_W4M_MB = 5.0
TARGET_W5_US = {"none": 100.0, "memory": 150.0}
TARGET_W6_KB = 4.0
TARGET_S1_MS = 150.0
TARGET_S1_MIB = 25.0

SAVERS = ("none", "memory", "sqlite", "postgres")
PAYLOAD_200 = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]  # 200 bytes
PAYLOAD_100 = PAYLOAD_200[:90]

IMPORT_CMD = {
    "ironloop": "import ironloop",
    "langgraph": "import langgraph.graph, langgraph.prebuilt",
}
# S1 + a first trivial invoke: import, build a one-node graph, invoke it twice; prints
# the two invokes' seconds. Target: the first within 5 ms of the second (issue 13).
FIRST_INVOKE_CODE = """
import json, time
from typing import TypedDict
{imports}
class S(TypedDict):
    count: int
g = StateGraph(S)
g.add_node("a", lambda s: {{"count": s["count"] + 1}})
g.set_entry_point("a")
g.add_edge("a", END)
c = g.compile()
t0 = time.perf_counter(); c.invoke({{"count": 0}}); t1 = time.perf_counter()
c.invoke({{"count": 0}}); t2 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1]))
"""
FIRST_INVOKE_IMPORTS = {
    "ironloop": "import ironloop\nfrom ironloop import END, StateGraph",
    "langgraph": "import langgraph.graph, langgraph.prebuilt\nfrom langgraph.graph import END, StateGraph",
}
TARGET_FIRST_INVOKE_MS = 5.0


class BenchError(AssertionError):
    """A run returned a wrong result: its timing must not count."""


# --- the two sides ------------------------------------------------------------------------


@dataclass
class Impl:
    """What a side of the comparison provides, with its own classes and savers."""

    name: str
    StateGraph: Any
    END: Any
    add_messages: Any
    AIMessage: Any
    HumanMessage: Any
    memory_saver: Callable[[], Any]
    sqlite_saver: Callable[[str], Any]
    postgres_saver: Callable[[str, str], Any]  # (url, schema), tables set up
    close_saver: Callable[[Any], None]
    memory_bytes: Callable[[Any], int]
    memory_bytes_how: str
    create_react_agent: Callable[..., Any]
    tool: Callable[..., Any]
    scripted_model: Callable[[Callable[[list[Any]], dict[str, Any]]], Any]


def load_ironloop() -> Impl:
    import ironloop
    from ironloop.messages import AIMessage, HumanMessage
    from ironloop.models import ScriptedChatModel

    def close(saver: Any) -> None:
        if hasattr(saver, "close"):
            saver.close()

    def postgres_saver(url: str, schema: str) -> Any:
        saver = ironloop.PostgresSaver(url, schema=schema)
        saver.setup()
        return saver

    return Impl(
        name="ironloop",
        StateGraph=ironloop.StateGraph,
        END=ironloop.END,
        add_messages=ironloop.add_messages,
        AIMessage=AIMessage,
        HumanMessage=HumanMessage,
        memory_saver=ironloop.MemorySaver,
        sqlite_saver=ironloop.SqliteSaver,
        postgres_saver=postgres_saver,
        close_saver=close,
        memory_bytes=lambda saver: int(saver.approx_bytes()),
        memory_bytes_how="MemorySaver.approx_bytes() (JSON text of records and writes)",
        create_react_agent=ironloop.create_react_agent,
        tool=ironloop.tool,
        scripted_model=ScriptedChatModel,
    )


def _held_bytes(obj: Any) -> int:
    """Sum of len() of every bytes/str object reachable through dicts, lists and tuples."""
    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, (bytes, bytearray, memoryview)):
            total += len(o)
        elif isinstance(o, str):
            total += len(o)
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
    return total


def load_langgraph() -> Impl:
    import sqlite3

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    try:  # create_react_agent is deprecated in LangGraph 1.x (still shipped)
        from langgraph.warnings import LangGraphDeprecatedSinceV10

        warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10)
    except ImportError:  # pragma: no cover
        pass
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, StateGraph, add_messages
    from langgraph.prebuilt import create_react_agent

    class ScriptedLG(BaseChatModel):
        """A chat model replaying ``fn(messages)`` (a dict like ironloop's script);
        ``bind_tools`` formats the tools as OpenAI dicts, as real chat models do."""

        fn: Any

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
            d = self.fn(messages)
            msg = AIMessage(content=d.get("content", ""), tool_calls=d.get("tool_calls", []))
            return ChatResult(generations=[ChatGeneration(message=msg)])

    def sqlite_saver(path: str) -> Any:
        return SqliteSaver(sqlite3.connect(path, check_same_thread=False))

    def postgres_saver(url: str, schema: str) -> Any:
        # As LangGraph's documentation connects (autocommit, dict rows, no server-side
        # prepared statements), with the schema as the search path.
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        conn = psycopg.connect(
            url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=f"-c search_path={schema}",
        )
        saver = PostgresSaver(conn)
        saver.setup()
        return saver

    def close(saver: Any) -> None:
        conn = getattr(saver, "conn", None)
        if conn is not None:
            conn.close()

    def memory_bytes(saver: Any) -> int:
        return _held_bytes([dict(saver.storage), dict(saver.writes), dict(saver.blobs)])

    return Impl(
        name="langgraph",
        StateGraph=StateGraph,
        END=END,
        add_messages=add_messages,
        AIMessage=AIMessage,
        HumanMessage=HumanMessage,
        memory_saver=InMemorySaver,
        sqlite_saver=sqlite_saver,
        postgres_saver=postgres_saver,
        close_saver=close,
        memory_bytes=memory_bytes,
        memory_bytes_how=(
            "estimate: sum of len() of the serialized bytes and keys InMemorySaver holds "
            "(storage, writes, blobs); Python object overhead not counted"
        ),
        create_react_agent=create_react_agent,
        tool=tool,
        scripted_model=lambda fn: ScriptedLG(fn=fn),
    )


LOADERS = {"ironloop": load_ironloop, "langgraph": load_langgraph}


# --- savers -------------------------------------------------------------------------------


class Savers:
    """Makes savers for one side; SQLite files go in one temp dir removed at the end,
    PostgreSQL savers each get a schema of their own, dropped when released."""

    def __init__(self, impl: Impl) -> None:
        self.impl = impl
        self.dir = tempfile.mkdtemp(prefix=f"ironloop-bench-{impl.name}-")
        self.n = itertools.count()
        self.open: list[tuple[Any, str]] = []

    def make(self, kind: str) -> tuple[Any, str | None]:
        """A saver and where it keeps its data: the SQLite file, or the Postgres schema."""
        if kind == "none":
            return None, None
        if kind == "memory":
            return self.impl.memory_saver(), None
        if kind == "postgres":
            schema = pg_schema(f"{self.impl.name}_{next(self.n)}")
            saver = self.impl.postgres_saver(PG_URL, schema)
            self.open.append((saver, schema))
            return saver, schema
        path = os.path.join(self.dir, f"cp{next(self.n)}.sqlite")
        saver = self.impl.sqlite_saver(path)
        self.open.append((saver, path))
        return saver, path

    def release(self, saver: Any, where: str | None) -> None:
        if saver is None or where is None:
            return
        self.impl.close_saver(saver)
        self.open.remove((saver, where))
        if where.startswith(PG_SCHEMA_PREFIX):
            pg_drop(where)
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(where + suffix):
                os.remove(where + suffix)

    def cleanup(self) -> None:
        for s, where in list(self.open):
            try:
                self.release(s, where)
            except Exception:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


# --- PostgreSQL: a schema per saver, on the server of IRONLOOP_TEST_POSTGRES_URL ----------

PG_SCHEMA_PREFIX = "ironloop_bench_"


def pg_admin() -> Any:
    import psycopg

    return psycopg.connect(PG_URL, autocommit=True)


def pg_schema(tag: str) -> str:
    """A new, empty schema (named for the bench and this process)."""
    name = f"{PG_SCHEMA_PREFIX}{tag}_{os.getpid()}"
    with pg_admin() as c:
        c.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        c.execute(f'CREATE SCHEMA "{name}"')
    return name


def pg_drop(schema: str) -> None:
    with pg_admin() as c:
        c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def pg_bytes(schema: str) -> int:
    """Every table of the schema with its indexes and TOAST, as the server stores them."""
    with pg_admin() as c:
        row = c.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0


def pg_payload_bytes(schema: str) -> int:
    """The bytes of the rows' data alone (``pg_column_size`` of every row): what the
    saver wrote, without pages' free space and indexes."""
    with pg_admin() as c:
        tables = [
            r[0]
            for r in c.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (schema,),
            ).fetchall()
        ]
        total = 0
        for t in tables:
            row = c.execute(
                f'SELECT coalesce(sum(pg_column_size(x.*)), 0) FROM "{schema}"."{t}" x'
            ).fetchone()
            total += int(row[0]) if row else 0
    return total


def file_bytes(path: str) -> int:
    """The SQLite file plus its WAL (and shared-memory index), as they are now."""
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s))


_thread_ids = itertools.count()


def config(limit: int, saver: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"recursion_limit": limit}
    if saver is not None:
        cfg["configurable"] = {"thread_id": f"t{next(_thread_ids)}"}
    return cfg


# --- W4: the counter loop -----------------------------------------------------------------


def counter_graph(impl: Impl, n: int, saver: Any) -> Any:
    class S(TypedDict):
        count: int

    end = impl.END

    def a(s: Any) -> dict[str, int]:
        return {"count": s["count"] + 1}

    def b(s: Any) -> dict[str, int]:
        return {"count": s["count"] + 1}

    def route_a(s: Any) -> str:
        return end if s["count"] >= n else "b"

    def route_b(s: Any) -> str:
        return end if s["count"] >= n else "a"

    g = impl.StateGraph(S)
    g.add_node("a", a)
    g.add_node("b", b)
    g.set_entry_point("a")
    g.add_conditional_edges("a", route_a, ["b", end])
    g.add_conditional_edges("b", route_b, ["a", end])
    return g.compile(checkpointer=saver)


def w4(
    impl: Impl,
    kind: str,
    n: int,
    repeat: int,
    savers: Savers,
    durability: str | None = None,
    probe: Callable[[str | None], None] | None = None,
) -> h.Stats:
    """µs per step; ``durability`` is passed to ``invoke`` when given (else each side's
    default: LangGraph's ``"async"``, ironloop's save-before-the-next-step). ``probe``
    sees where the saver kept its data before it is removed."""
    saver, path = savers.make(kind)
    extra = {} if durability is None else {"durability": durability}
    try:
        graph = counter_graph(impl, n, saver)

        def check(result: Any) -> None:
            if result.get("count") != n:
                raise BenchError(f"count {result.get('count')!r}, expected {n}")

        stats = h.measure(
            lambda: graph.invoke({"count": 0}, config(n + 100, saver), **extra),
            repeat=repeat,
            check=check,
        )
        if probe is not None:
            probe(path)
    finally:
        savers.release(saver, path)
    return stats.scaled(1e6 / n)


# --- W4 floors: the same work without a framework -----------------------------------------


def floor_w4_nodes(n: int, repeat: int) -> h.Stats:
    """W4's node and routing functions called in a plain loop, each update merged into a
    new state dict as a graph would (µs per step)."""

    def a(s: Any) -> dict[str, int]:
        return {"count": s["count"] + 1}

    def b(s: Any) -> dict[str, int]:
        return {"count": s["count"] + 1}

    def route_a(s: Any) -> str:
        return "__end__" if s["count"] >= n else "b"

    def route_b(s: Any) -> str:
        return "__end__" if s["count"] >= n else "a"

    nodes = {"a": (a, route_a), "b": (b, route_b)}

    def once() -> dict[str, int]:
        state, node = {"count": 0}, "a"
        while node != "__end__":
            fn, route = nodes[node]
            state = {**state, **fn(state)}
            node = route(state)
        return state

    def check(result: Any) -> None:
        if result.get("count") != n:
            raise BenchError(f"floor count {result.get('count')!r}, expected {n}")

    return h.measure(once, repeat=repeat, check=check).scaled(1e6 / n)


def sqlite_step_bytes(path: str, steps: int) -> tuple[float, float]:
    """Rows and payload bytes per step in a SQLite checkpoint file: over every table,
    ``count(*)`` and the summed ``length()`` of every column, divided by ``steps``."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = 0
        size = 0
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
            if not cols:
                continue
            total = " + ".join(f"coalesce(length({c}), 0)" for c in cols)
            n, b = conn.execute(f"SELECT count(*), coalesce(sum({total}), 0) FROM {t}").fetchone()
            rows += n
            size += b
        return rows / steps, size / steps
    finally:
        conn.close()


def w4_sqlite_beside_floor(
    impl: Impl,
    n: int,
    repeat: int,
    savers: Savers,
    rows_per_step: float,
    bytes_per_step: float,
) -> tuple[h.Stats, h.Stats]:
    """W4 on SQLite and its floor, one repetition of each in turn (µs per step each):
    measured apart, minutes from each other on a shared machine, their ratio swung
    1.0–1.7 between runs of one build.

    The floor: ``n`` committed SQLite transactions, each inserting the rows and bytes
    one W4 step of ironloop's SqliteSaver writes (measured on its file), with its
    settings: WAL, ``synchronous=NORMAL``, ``BEGIN IMMEDIATE``; a fresh file each time,
    its setup not timed."""
    import sqlite3

    rows = max(1, round(rows_per_step))
    payload = "x" * max(1, round(bytes_per_step / rows))
    tmp = tempfile.mkdtemp(prefix="ironloop-floor-")
    counter = itertools.count()

    def floor_once() -> tuple[int, float]:
        path = os.path.join(tmp, f"floor{next(counter)}.sqlite")
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, thread_id TEXT, v TEXT)")
        t0 = time.perf_counter()
        for _ in range(n):
            conn.execute("BEGIN IMMEDIATE")
            for _ in range(rows):
                conn.execute("INSERT INTO t (thread_id, v) VALUES (?, ?)", ("t", payload))
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - t0
        count = conn.execute("SELECT count(*) FROM t").fetchone()[0]
        conn.close()
        return int(count), elapsed

    def floor_check(result: Any) -> None:
        if result != n * rows:
            raise BenchError(f"floor wrote {result} rows, expected {n * rows}")

    saver, path = savers.make("sqlite")
    try:
        graph = counter_graph(impl, n, saver)

        def once() -> tuple[Any, float]:
            t0 = time.perf_counter()
            out = graph.invoke({"count": 0}, config(n + 100, saver))
            return out, time.perf_counter() - t0

        def check(result: Any) -> None:
            if result.get("count") != n:
                raise BenchError(f"count {result.get('count')!r}, expected {n}")

        stats, floor = h.measure_pair(once, floor_once, (check, floor_check), repeat=repeat)
    finally:
        savers.release(saver, path)
        shutil.rmtree(tmp, ignore_errors=True)
    return stats.scaled(1e6 / n), floor.scaled(1e6 / n)


# --- W4m: the counter loop with a growing message history ---------------------------------
#
# Method for (a): every node appends time.perf_counter() to a list as its first action,
# inside one long run of N steps. The cost of step i is stamps[i+1] - stamps[i]: the time
# from one node's start to the next one's, i.e. the node itself plus everything the
# framework does between them (reducers, checkpoint save, routing, building the next
# node's input). It needs no framework hook, so it measures both sides the same way and
# sees the steps at 50 and at 2,500 messages in the same run. The window figure is the
# mean over its steps (a mean, not a median, so that periodic costs such as GC pauses
# that grow with the history count too).


def messages_graph(impl: Impl, n: int, saver: Any, stamps: list[float]) -> Any:
    # The functional form: the class form's annotations would be strings (see the
    # __future__ import) naming this function's locals, which get_type_hints cannot see.
    S = TypedDict("S", {"count": int, "messages": Annotated[list, impl.add_messages]})  # noqa: UP013
    end, ai, now, stamp = impl.END, impl.AIMessage, time.perf_counter, stamps.append

    def a(s: Any) -> dict[str, Any]:
        stamp(now())
        return {"count": s["count"] + 1, "messages": [ai(content=PAYLOAD_200)]}

    def b(s: Any) -> dict[str, Any]:
        stamp(now())
        return {"count": s["count"] + 1, "messages": [ai(content=PAYLOAD_200)]}

    def route_a(s: Any) -> str:
        return end if s["count"] >= n else "b"

    def route_b(s: Any) -> str:
        return end if s["count"] >= n else "a"

    g = impl.StateGraph(S)
    g.add_node("a", a)
    g.add_node("b", b)
    g.set_entry_point("a")
    g.add_conditional_edges("a", route_a, ["b", end])
    g.add_conditional_edges("b", route_b, ["a", end])
    return g.compile(checkpointer=saver)


@dataclass
class W4mRun:
    early_ms: float  # mean step cost in the early window
    late_ms: float
    growth: float  # late / early (means): the reported figure
    growth_median: float  # the same with each window's median step cost
    late_p50_us: float
    late_p99_us: float
    late_max_us: float
    bytes: int
    db_bytes: int  # SQLite: file + WAL while open; Postgres: the rows' data; memory: = bytes
    seconds: float
    cost_us: list[float]  # every step's cost, for the pooled figure


def w4m_windows(n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    return W4M_EARLY, (int(n * W4M_LATE_FRACTION), n)


def w4m_once(impl: Impl, kind: str, n: int, savers: Savers) -> W4mRun:
    saver, path = savers.make(kind)
    try:
        stamps: list[float] = []
        graph = messages_graph(impl, n, saver, stamps)
        inp = {"count": 0, "messages": [impl.HumanMessage(content="start")]}
        gc.collect()
        t0 = time.perf_counter()
        result = graph.invoke(inp, config(n + 100, saver))
        seconds = time.perf_counter() - t0
        # Check the run before using its timings.
        msgs = result.get("messages", [])
        if result.get("count") != n:
            raise BenchError(f"count {result.get('count')!r}, expected {n}")
        if len(msgs) != n + 1:
            raise BenchError(f"{len(msgs)} messages, expected {n + 1}")
        if msgs[-1].content != PAYLOAD_200 or msgs[0].content != "start":
            raise BenchError("wrong message content")
        if len({m.id for m in msgs}) != n + 1:
            raise BenchError("message ids are not unique")
        if len(stamps) != n:
            raise BenchError(f"{len(stamps)} node calls, expected {n}")
        if kind == "none":
            size = db_size = 0
        elif kind == "memory":
            size = db_size = impl.memory_bytes(saver)
        elif kind == "postgres":
            size, db_size = pg_bytes(path or ""), pg_payload_bytes(path or "")
        else:
            # Closed, the saver's WAL is checkpointed back into the file and removed
            # (SQLite does so when a file's last connection closes): the file is then
            # all the store keeps. While it is open, the WAL is working space, reused
            # after each checkpoint; that figure goes in the notes.
            open_size = file_bytes(path or "")
            impl.close_saver(saver)
            size = file_bytes(path or "")
            if os.path.exists((path or "") + "-wal"):
                raise BenchError(f"{impl.name}: the WAL is still there after close")
            db_size = open_size
        # Step i (0-based) starts with i + 1 messages in the state.
        (e0, e1), (l0, l1) = w4m_windows(n)
        cost = [stamps[i + 1] - stamps[i] for i in range(n - 1)]
        early_w, late_w = cost[e0 - 1 : e1 - 1], cost[l0 - 1 : l1 - 1]
        early, late = statistics.fmean(early_w), statistics.fmean(late_w)
        growth_median = statistics.median(late_w) / statistics.median(early_w)
        srt = sorted(late_w)
        del result, msgs, graph
        return W4mRun(
            early * 1e3,
            late * 1e3,
            late / early,
            growth_median,
            srt[len(srt) // 2] * 1e6,
            srt[int(len(srt) * 0.99)] * 1e6,
            srt[-1] * 1e6,
            size,
            db_size,
            seconds,
            [round(c * 1e6, 2) for c in cost],
        )
    finally:
        savers.release(saver, path)


def w4m_pooled(runs: list[W4mRun], n: int) -> float:
    """The growth from the per-step median over the runs: a cost that recurs at the same
    step in every run (a GC pass, a WAL checkpoint: the runs are deterministic) stays,
    a one-off stall of the machine (another process taking the CPU) goes."""
    (e0, e1), (l0, l1) = w4m_windows(n)
    per_step = [statistics.median(c) for c in zip(*(r.cost_us for r in runs), strict=False)]
    return statistics.fmean(per_step[l0 - 1 : l1 - 1]) / statistics.fmean(per_step[e0 - 1 : e1 - 1])


def w4m_child(name: str, kind: str, n: int, runs: int) -> list[dict[str, Any]]:
    impl = LOADERS[name]()
    savers = Savers(impl)
    try:
        return [dataclasses.asdict(w4m_once(impl, kind, n, savers)) for _ in range(runs)]
    finally:
        savers.cleanup()


def w4m(impl: Impl, kind: str, n: int, repeat: int) -> list[W4mRun]:
    """``repeat`` runs, each with a fresh saver, in a fresh process per framework and
    saver: the cost of a step late in a long run includes the interpreter's cyclic GC,
    whose full collections walk every object of the process, so the other framework's
    heap (LangGraph keeps ~1.9 GB here) must not be in it."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--w4m-child",
            impl.name,
            "--kind",
            kind,
            "--steps",
            str(n),
            "--runs",
            str(repeat),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise BenchError(f"W4m child failed: {out.stderr.strip()[-2000:]}")
    return [W4mRun(**d) for d in json.loads(out.stdout.strip().splitlines()[-1])]


# --- W8: worker processes sharing one PostgreSQL ------------------------------------------
#
# Each worker process opens its own saver on the same schema, builds W4's graph, runs one
# thread to warm up, prints READY and waits for GO on stdin; then it runs threads of
# W8_STEPS steps (each a new thread_id) until ``seconds`` have passed, and prints the
# steps it ran and when it started and stopped. The figure is all workers' steps over
# the wall time from the first start to the last stop (the processes' start-up and
# connecting are outside it).


def w8_child(name: str, schema: str, steps: int, seconds: float) -> dict[str, Any]:
    impl = LOADERS[name]()
    saver = impl.postgres_saver(PG_URL, schema)
    graph = counter_graph(impl, steps, saver)
    pid = os.getpid()

    def one(i: int) -> None:
        cfg = {"recursion_limit": steps + 100, "configurable": {"thread_id": f"w8-{pid}-{i}"}}
        result = graph.invoke({"count": 0}, cfg)
        if result.get("count") != steps:
            raise BenchError(f"count {result.get('count')!r}, expected {steps}")

    one(-1)
    print("READY", flush=True)
    sys.stdin.readline()
    t0 = time.time()
    end, threads = t0 + seconds, 0
    while time.time() < end:
        one(threads)
        threads += 1
    t1 = time.time()
    impl.close_saver(saver)
    return {"steps": threads * steps, "threads": threads, "t0": t0, "t1": t1}


def w8_once(impl: Impl, procs: int, seconds: float) -> tuple[float, list[dict[str, Any]]]:
    """Steps per second of ``procs`` workers on one fresh schema, and their reports."""
    schema = pg_schema(f"w8_{impl.name}_{procs}")
    try:
        impl.close_saver(impl.postgres_saver(PG_URL, schema))  # tables made once, up front
        cmd = [
            sys.executable,
            __file__,
            "--w8-child",
            impl.name,
            "--schema",
            schema,
            "--steps",
            str(W8_STEPS),
            "--w8-seconds",
            str(seconds),
        ]
        children = [
            subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(procs)
        ]
        for c in children:
            line = c.stdout.readline() if c.stdout else ""
            if line.strip() != "READY":
                err = c.stderr.read() if c.stderr else ""
                raise BenchError(f"W8 worker did not start: {line!r} {err[-2000:]}")
        for c in children:
            assert c.stdin is not None
            c.stdin.write("GO\n")
            c.stdin.flush()
        reports = []
        for c in children:
            out, err = c.communicate(timeout=seconds * 20 + 120)
            if c.returncode != 0:
                raise BenchError(f"W8 worker failed: {err.strip()[-2000:]}")
            reports.append(json.loads(out.strip().splitlines()[-1]))
        wall = max(r["t1"] for r in reports) - min(r["t0"] for r in reports)
        return sum(r["steps"] for r in reports) / wall, reports
    finally:
        pg_drop(schema)


# --- W5: a ReAct agent with a scripted model ----------------------------------------------


def script(rounds: int) -> Callable[[list[Any]], dict[str, Any]]:
    """The model: the same decision on both sides, from the number of messages so far
    (one human message, then an AI message and a tool message per round)."""

    def respond(messages: list[Any]) -> dict[str, Any]:
        k = (len(messages) - 1) // 2
        if k < rounds:
            call = {"name": "add", "args": {"a": k, "b": 1}, "id": f"call_{k}", "type": "tool_call"}
            return {"content": "", "tool_calls": [call]}
        return {"content": f"done after {k} rounds"}

    return respond


def by_durability(
    workload: str, kind: str, impls: list[Impl], measure: Callable[[Impl, str], h.Stats]
) -> list[str]:
    """Notes: ``workload`` on saver ``kind`` with each ``durability`` given to both
    sides' ``invoke`` (LangGraph's default is "async", ironloop's "sync"), µs and the
    ratio, measured in this run."""
    notes = []
    for d in ("sync", "async", "exit"):
        got: dict[str, float] = {}
        for impl in impls:
            try:
                got[impl.name] = measure(impl, d).median
            except Exception as e:
                got[impl.name] = float("nan")
                traceback.print_exc(file=sys.stderr)
                notes.append(f"{workload} {kind} {d} {impl.name}: {type(e).__name__}: {e}")
        ratio = (
            f" ({got['langgraph'] / got['ironloop']:.1f}×)"
            if len(got) == 2 and got.get("ironloop")
            else ""
        )
        notes.append(
            f"{workload} {kind} with durability={d!r} on both sides: "
            + ", ".join(f"{k} {v:.1f} µs" for k, v in got.items())
            + ratio
        )
    return notes


def w5(
    impl: Impl,
    kind: str,
    rounds: int,
    repeat: int,
    savers: Savers,
    durability: str | None = None,
    streamed: bool = False,
) -> h.Stats:
    """µs per round of W5; ``streamed``: the same run by ``stream(...,
    stream_mode="updates")``, every update pulled (how a UI follows an agent turn)."""

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    saver, path = savers.make(kind)
    try:
        agent = impl.create_react_agent(
            impl.scripted_model(script(rounds)), [impl.tool(add)], checkpointer=saver
        )
        final = f"done after {rounds} rounds"

        def check(result: Any) -> None:
            msgs = result["messages"]
            if len(msgs) != 2 * rounds + 2:
                raise BenchError(f"{len(msgs)} messages, expected {2 * rounds + 2}")
            if msgs[-1].content != final:
                raise BenchError(f"final answer {msgs[-1].content!r}")
            for k in range(rounds):
                ai, tm = msgs[1 + 2 * k], msgs[2 + 2 * k]
                if ai.tool_calls[0]["id"] != f"call_{k}" or tm.tool_call_id != f"call_{k}":
                    raise BenchError(f"round {k}: tool call ids do not match")
                if str(tm.content) != str(k + 1) or getattr(tm, "status", "success") != "success":
                    raise BenchError(f"round {k}: tool result {tm.content!r}, expected {k + 1}")

        def check_updates(updates: list[Any]) -> None:
            # One update per model call and per tools step; the last is the answer.
            if len(updates) != 2 * rounds + 1:
                raise BenchError(f"{len(updates)} updates, expected {2 * rounds + 1}")
            (last,) = updates[-1].values()
            if last["messages"][-1].content != final:
                raise BenchError(f"final update {last!r}")

        extra = {} if durability is None else {"durability": durability}
        inputs = {"messages": [impl.HumanMessage(content="count up")]}

        def once() -> Any:
            if streamed:
                return list(
                    agent.stream(
                        inputs, config(4 * rounds + 20, saver), stream_mode="updates", **extra
                    )
                )
            return agent.invoke(inputs, config(4 * rounds + 20, saver), **extra)

        stats = h.measure(once, repeat=repeat, check=check_updates if streamed else check)
    finally:
        savers.release(saver, path)
    return stats.scaled(1e6 / rounds)


# --- W6: memory per thread (run in a fresh child process) ---------------------------------


def rss_kib() -> int:
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def w6_child(name: str, threads: int, kind: str = "memory") -> dict[str, Any]:
    impl = LOADERS[name]()
    S = TypedDict("S", {"messages": Annotated[list, impl.add_messages]})  # noqa: UP013
    ai = impl.AIMessage

    def a(s: Any) -> dict[str, Any]:
        return {"messages": [ai(content=f"{PAYLOAD_100} a{len(s['messages'])}")]}

    def b(s: Any) -> dict[str, Any]:
        return {"messages": [ai(content=f"{PAYLOAD_100} b{len(s['messages'])}")]}

    saver = impl.memory_saver() if kind == "memory" else None
    g = impl.StateGraph(S)
    g.add_node("a", a)
    g.add_node("b", b)
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.set_finish_point("b")
    graph = g.compile(checkpointer=saver)

    def run(i: int) -> None:
        inp = {"messages": [impl.HumanMessage(content=f"{PAYLOAD_100} {i}:{j}") for j in range(8)]}
        cfg = {"configurable": {"thread_id": f"thread-{i}"}} if saver is not None else {}
        out = graph.invoke(inp, cfg)
        if len(out["messages"]) != 10:
            raise BenchError(f"thread {i}: {len(out['messages'])} messages, expected 10")

    for i in range(-200, 0):  # warm-up threads: one-time allocations, not counted
        run(i)
    gc.collect()
    before = rss_kib()
    t0 = time.perf_counter()
    for i in range(threads):
        run(i)
    seconds = time.perf_counter() - t0
    gc.collect()
    after = rss_kib()
    for i in (0, threads - 1) if saver is not None else ():  # the checkpoints hold 10 messages
        snap = graph.get_state({"configurable": {"thread_id": f"thread-{i}"}})
        msgs = snap.values["messages"]
        if len(msgs) != 10 or not str(msgs[0].content).endswith(f" {i}:0"):
            raise BenchError(f"thread {i}: checkpoint holds {len(msgs)} messages")
    msg_bytes = sum(len(PAYLOAD_100) + 8 for _ in range(10))
    return {
        "impl": name,
        "threads": threads,
        "rss_before_kib": before,
        "rss_after_kib": after,
        "kb_per_thread": (after - before) * 1024 / 1000 / threads,
        "saver_bytes_per_thread": impl.memory_bytes(saver) / (threads + 200) if saver else 0,
        "message_text_bytes_per_thread": msg_bytes,
        "us_per_thread": seconds * 1e6 / threads,
    }


def w6_run(name: str, threads: int, kind: str = "memory") -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--w6-child", name, "--threads", str(threads), "--kind", kind],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise BenchError(f"W6 child failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def w6(impl: Impl, threads: int, repeat: int, details: list[dict[str, Any]]) -> h.Stats:
    samples = []
    for _ in range(repeat):
        d = w6_run(impl.name, threads)
        details.append(d)
        samples.append(d["kb_per_thread"])
    return h.Stats.of(samples)


# --- S1: cold start -----------------------------------------------------------------------


def s1(code: str, runs: int) -> tuple[h.Stats, h.Stats]:
    """Wall ms (median of ``runs`` after one warm-up) and peak RSS MiB of ``python -c code``."""
    cmd = [sys.executable, "-c", code]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the page cache
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        walls.append((time.perf_counter() - t0) * 1e3)
    peaks = []
    time_bin = shutil.which("time") or (
        "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    )
    for _ in range(max(3, runs // 2)):
        if time_bin:
            out = subprocess.run([time_bin, "-v", *cmd], capture_output=True, text=True, check=True)
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
            if not m:
                raise BenchError(f"cannot read /usr/bin/time -v output: {out.stderr[-500:]}")
            peaks.append(int(m.group(1)) / 1024)
        else:  # pragma: no cover - getrusage keeps the max over all children so far
            import resource

            subprocess.run(cmd, check=True, capture_output=True)
            peaks.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    return h.Stats.of(walls), h.Stats.of(peaks)


def first_invoke(name: str, runs: int) -> tuple[h.Stats, h.Stats]:
    """S1 plus a first trivial invoke, in fresh processes: the whole process's wall ms,
    and the first invoke's extra ms over the second (warm) one."""
    code = FIRST_INVOKE_CODE.format(imports=FIRST_INVOKE_IMPORTS[name])
    cmd = [sys.executable, "-c", code]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the page cache
    walls, extra = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        walls.append((time.perf_counter() - t0) * 1e3)
        first, warm = json.loads(out.stdout.strip().splitlines()[-1])
        extra.append((first - warm) * 1e3)
    return h.Stats.of(walls), h.Stats.of(extra)


# --- profiles of misses -------------------------------------------------------------------


def profile_child(key: str, scale: float, seconds: float = 5.0) -> None:
    """Runs only the ironloop side of ``key`` for a few seconds (under a profiler): the
    graph and saver are built once, then invoked in a loop, with no forced GC, so the
    profile shows the steady state of the workload and not the benchmark's set-up."""
    impl = load_ironloop()
    savers = Savers(impl)
    work, _, kind = key.partition(":")
    try:
        saver, _path = savers.make(kind)
        if work == "W4":
            n = scaled(N_W4, scale)
            graph = counter_graph(impl, n, saver)

            def once() -> Any:
                return graph.invoke({"count": 0}, config(n + 100, saver))

        elif work == "W4m":
            n = max(300, scaled(N_W4M, scale))
            stamps: list[float] = []
            graph = messages_graph(impl, n, saver, stamps)

            def once() -> Any:
                stamps.clear()
                inp = {"count": 0, "messages": [impl.HumanMessage(content="start")]}
                return graph.invoke(inp, config(n + 100, saver))

        elif work in ("W5", "W5s"):
            rounds = scaled(ROUNDS_W5, scale)

            def add(a: int, b: int) -> int:
                """Add two integers."""
                return a + b

            agent = impl.create_react_agent(
                impl.scripted_model(script(rounds)), [impl.tool(add)], checkpointer=saver
            )
            inputs = {"messages": [impl.HumanMessage(content="count up")]}

            def once() -> Any:
                cfg = config(4 * rounds + 20, saver)
                if work == "W5s":
                    return list(agent.stream(inputs, cfg, stream_mode="updates"))
                return agent.invoke(inputs, cfg)

        else:
            raise SystemExit(f"no profile for {key}")
        once()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            once()
    finally:
        savers.cleanup()


_RUST_ESCAPES = (
    ("$LT$", "<"),
    ("$GT$", ">"),
    ("$u20$", " "),
    ("$u7b$", "{"),
    ("$u7d$", "}"),
    ("$C$", ","),
    ("$RF$", "&"),
    ("$LP$", "("),
    ("$RP$", ")"),
    ("$BP$", "*"),
    ("$u27$", "'"),
    ("$u5b$", "["),
    ("$u5d$", "]"),
    ("$u3b$", ";"),
)
_LOW_LEVEL = ("libc.so", "libpthread", "ld-linux", "[vdso]")


def _demangle_v0(name: str) -> str:
    """The path of a v0-mangled Rust symbol (``_RNv...``), roughly: its identifiers."""
    body = re.sub(r"C[s][0-9a-zA-Z]*_", "", name[2:])  # crate disambiguators
    body = re.sub(r"B[0-9a-zA-Z]*_", "", body)  # back-references
    parts, i = [], 0
    while i < len(body):
        m = re.match(r"\d+", body[i:])
        if not m:
            i += 1
            continue
        n, i = int(m.group()), i + len(m.group())
        if i < len(body) and body[i] == "_":
            i += 1
        if n:
            parts.append(body[i : i + n])
        i += n
    return "::".join(parts) or name


def _demangle(name: str) -> str:
    """A Rust symbol as py-spy prints it (legacy or v0 mangling), made readable."""
    if name.startswith("_R"):
        return _demangle_v0(name)
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    if "$" not in name and ".." not in name:
        return name
    for a, b in _RUST_ESCAPES:
        name = name.replace(a, b)
    name = name.replace("..", "::")
    return name[1:] if name.startswith("_<") else name


def _frame_name(frame: str) -> str:
    # py-spy raw frames look like "func (path/to/file.py:123)"; drop the line number,
    # shorten the path, demangle Rust symbols.
    m = re.match(r"^(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return _demangle(frame)
    fn, path = m.groups()
    return f"{_demangle(fn)} ({os.path.basename(path)})"


def summarize_pyspy(raw_path: str, top: int = 14) -> list[str]:
    """Self time by leaf frame (a libc leaf such as ``syscall`` -- a futex wait or wake
    -- is shown with the nearest caller outside libc) and inclusive time by frame."""
    self_t: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = idle = 0
    with open(raw_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            frames = [_frame_name(fr) for fr in stack.split(";") if fr]
            frames = [fr for fr in frames if not fr.startswith(("process ", "thread "))]
            if not frames:
                continue
            if any(fr.startswith(("select_epoll_poll", "EpollSelector.select")) for fr in frames):
                idle += n  # an asyncio loop thread waiting for work
                continue
            total += n
            leaf = frames[-1]
            if any(lib in leaf for lib in _LOW_LEVEL) or leaf.startswith("0x"):
                caller = next(
                    (
                        fr
                        for fr in reversed(frames)
                        if not any(lib in fr for lib in _LOW_LEVEL) and not fr.startswith("0x")
                    ),
                    None,
                )
                leaf = f"{leaf.split(' (')[0]} <- {caller}" if caller else leaf
            self_t[leaf] += n
            for fr in set(frames):
                incl[fr] += n
    if not total:
        return ["(py-spy collected no samples)"]
    lines = [
        f"{total} samples (wall clock, every thread with Python frames; {idle} samples of an idle "
        "asyncio loop thread left out; threads without Python frames, such as the SQLite "
        "thread, are not sampled); self time (leaf frame):"
    ]
    lines += [f"  {100 * c / total:5.1f}%  {fr}" for fr, c in self_t.most_common(top)]
    lines.append("inclusive time (frame anywhere on the stack):")
    skip = ("<module>", "main (graph.py)", "profile_child", "_run_module", "_run_code")
    shown = [
        (fr, c)
        for fr, c in incl.most_common(top * 3)
        if not fr.startswith(skip)
        and not any(lib in fr for lib in _LOW_LEVEL)
        and not fr.startswith("0x")
    ]
    lines += [f"  {100 * c / total:5.1f}%  {fr}" for fr, c in shown[:top]]
    return lines


def profile_timed(key: str, scale: float) -> list[str]:
    child = [sys.executable, __file__, "--profile-child", key, "--scale", str(scale)]
    pyspy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.path.exists(pyspy):
        for native in (["--native"], []):
            fd, raw = tempfile.mkstemp(suffix=".txt", prefix="ironloop-pyspy-")
            os.close(fd)
            try:
                out = subprocess.run(
                    [
                        pyspy,
                        "record",
                        *native,
                        "--rate",
                        "500",
                        "--format",
                        "raw",
                        "-o",
                        raw,
                        "--",
                        *child,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if out.returncode == 0 and os.path.getsize(raw) > 0:
                    how = f"py-spy record {' '.join(native)} --rate 500".replace("  ", " ")
                    return [f"profile ({how}, ironloop side only):", *summarize_pyspy(raw)]
            finally:
                os.remove(raw)
    # Fallback: cProfile (Python frames only; time in the Rust extension shows up as the
    # builtin method that called into it).
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.runcall(profile_child, key, scale)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
    return ["profile (cProfile, by tottime, ironloop side only):", *buf.getvalue().splitlines()]


def profile_import() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORT_CMD["ironloop"]],
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S.*)$", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)))
    total = max((r[1] for r in rows), default=0)
    lines = [
        f"profile (python -X importtime -c '{IMPORT_CMD['ironloop']}'), total {total / 1e3:.1f} ms;"
        " top modules by self time:"
    ]
    for self_us, cum_us, _, mod in sorted(rows, reverse=True)[:12]:
        lines.append(f"  self {self_us / 1e3:6.1f} ms  cumulative {cum_us / 1e3:6.1f} ms  {mod}")
    return lines


def profile_bytes(kind: str, n: int) -> list[str]:
    """Where the checkpoint bytes of one ironloop W4m run go."""
    import sqlite3

    impl = load_ironloop()
    savers = Savers(impl)
    try:
        saver, path = savers.make(kind)
        graph = messages_graph(impl, n, saver, [])
        inp = {"count": 0, "messages": [impl.HumanMessage(content="start")]}
        graph.invoke(inp, config(n + 100, saver))
        payload = n * len(PAYLOAD_200)
        if kind == "memory":
            b = impl.memory_bytes(saver)
            return [
                f"bytes breakdown (one ironloop run of {n} steps, MemorySaver):",
                f"  approx_bytes {b:,} = {b / n:.0f} B/step for a {len(PAYLOAD_200)}-byte message",
            ]
        sizes = {
            s: os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s)
        }
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows, rec = conn.execute("SELECT count(*), sum(length(record)) FROM checkpoints").fetchone()
        pages, psize = (
            conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size")
        )
        conn.close()
        return [
            f"bytes breakdown (one ironloop run of {n} steps, SqliteSaver, before close):",
            f"  db file {sizes.get('', 0):,} B ({pages} pages of {psize} B), WAL "
            f"{sizes.get('-wal', 0):,} B, shm {sizes.get('-shm', 0):,} B",
            f"  {rows} checkpoint rows; record JSON {rec:,} B = {rec / rows:.0f} B/row; the "
            f"messages' text is {payload:,} B ({len(PAYLOAD_200)} B/step)",
            f"  db file / record JSON = {sizes.get('', 0) / rec:.2f} (columns duplicated from the "
            "record, the two indexes, page slack)",
        ]
    finally:
        savers.cleanup()


def profile_memory(details: list[dict[str, Any]]) -> list[str]:
    il = [d for d in details if d["impl"] == "ironloop"]
    if not il:
        return []
    d = il[-1]
    bare = w6_run("ironloop", d["threads"], "none")
    return [
        "memory breakdown (last ironloop W6 child):",
        f"  RSS added per thread:            {d['kb_per_thread']:.2f} KB",
        f"  MemorySaver.approx_bytes/thread: {d['saver_bytes_per_thread'] / 1000:.2f} KB "
        "(JSON text of the checkpoint records)",
        f"  message text per thread:         {d['message_text_bytes_per_thread'] / 1000:.2f} KB",
        f"  the same {d['threads']} runs without a checkpointer: "
        f"{bare['kb_per_thread']:.2f} KB/thread (so the rest is what MemorySaver keeps)",
    ]


# --- main ---------------------------------------------------------------------------------


def scaled(n: int, scale: float) -> int:
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
        help="multiply the step / round / thread counts (e.g. 0.1 for a smoke run)",
    )
    parser.add_argument("--no-profile", action="store_true", help="do not profile misses")
    h.add_json_arg(parser)
    parser.add_argument("--w6-child", choices=h.IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=THREADS_W6, help=argparse.SUPPRESS)
    parser.add_argument("--profile-child", help=argparse.SUPPRESS)
    parser.add_argument("--w4m-child", choices=h.IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=SAVERS, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=N_W4M, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument(
        "--w8-seconds", type=float, default=3.0, help="how long each W8 measurement runs"
    )
    parser.add_argument(
        "--w8-procs",
        default=",".join(map(str, W8_PROCS)),
        help="worker process counts for W8 (default 1,2,4,8)",
    )
    parser.add_argument(
        "--only-workloads",
        default="",
        help="comma-separated workload prefixes to run (e.g. 'W4 postgres,W4m,W8'); default all",
    )
    parser.add_argument("--w8-child", choices=h.IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--schema", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.w6_child:
        print(json.dumps(w6_child(args.w6_child, args.threads, args.kind or "memory")))
        return 0
    if args.w4m_child:
        print(json.dumps(w4m_child(args.w4m_child, args.kind, args.steps, args.runs)))
        return 0
    if args.w8_child:
        print(json.dumps(w8_child(args.w8_child, args.schema, args.steps, args.w8_seconds)))
        return 0
    if args.profile_child:
        profile_child(args.profile_child, args.scale)
        return 0
    if args.repeat < h.MIN_REPEAT:
        parser.error(f"--repeat must be >= {h.MIN_REPEAT}")
    if not args.scale > 0:
        parser.error("--scale must be > 0")

    impls: list[Impl] = []
    for name in [args.only] if args.only else list(h.IMPLS):
        try:
            impls.append(LOADERS[name]())
        except ImportError as e:
            msg = f"cannot import {name} ({type(e).__name__}: {e})"
            if args.only:
                print(f"graph: {msg}", file=sys.stderr)
                return 2
            hint = " (install it with benches/python/run.sh)" if name == "ironloop" else ""
            print(f"graph: {msg}{hint}; running the other side only.", file=sys.stderr)
    if not impls:
        print("graph: nothing to run", file=sys.stderr)
        return 2

    info = h.machine_info()
    h.print_header("ironloop graphs: W4, W4m, W5, W6, S1", info, argv)
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    n4, n4m, r5, t6 = (scaled(n, args.scale) for n in (N_W4, N_W4M, ROUNDS_W5, THREADS_W6))
    n4m = max(n4m, 2 * W4M_EARLY[1])
    (e0, e1), (l0, l1) = w4m_windows(n4m)
    scale_note = "" if args.scale == 1.0 else f" [scale {args.scale:g}]"
    print(
        f"repeat: {args.repeat} (median, min–max), warmup: 1 (W4, W5); W4m: no warmup run, a "
        f"fresh saver per repetition, a fresh process per framework and saver; W6: a fresh "
        f"process per repetition{scale_note}\n",
        flush=True,
    )

    rows: list[h.Row] = []
    notes: list[str] = []
    kinds = [k for k in SAVERS if k != "postgres" or PG_URL]
    if not PG_URL:
        notes.append(
            "PostgreSQL rows (W4/W4m postgres, W8) not run: IRONLOOP_TEST_POSTGRES_URL is not "
            "set (`source scripts/postgres.sh` starts a throwaway server and sets it)"
        )
    w8_procs = [int(p) for p in args.w8_procs.split(",") if p.strip()]
    w8_repeat = min(args.repeat, 3)
    prefixes = [p.strip() for p in args.only_workloads.split(",") if p.strip()]

    def wanted(workload: str) -> bool:
        return not prefixes or any(workload.startswith(p) for p in prefixes)

    keys: dict[str, str] = {}  # workload -> profile key
    w6_details: list[dict[str, Any]] = []
    savers = {impl.name: Savers(impl) for impl in impls}

    def run(row: h.Row, fn: Callable[[Impl], h.Stats]) -> None:
        for impl in impls:
            print(f"  running {row.workload} {impl.name} ...", file=sys.stderr, flush=True)
            try:
                row.stats[impl.name] = fn(impl)
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                row.errors[impl.name] = f"{type(e).__name__}: {e}"
        rows.append(row)

    try:
        # W4
        for kind in kinds:
            if not wanted(f"W4 {kind}"):
                continue
            row = h.Row(
                f"W4 {kind}",
                f"{n4} steps a->b->a..., count += 1, checkpointer: {kind}",
                "µs/step",
                TARGET_W4_US[kind],
                min_ratio=TARGET_PG_RATIO if kind == "postgres" else None,
            )
            keys[row.workload] = f"W4:{kind}"
            steps_run = n4 * (args.repeat + 1)  # the warm-up run and the timed ones
            per_step: list[tuple[float, float]] = []

            def probe(path: str | None, steps_run: int = steps_run, out: list = per_step) -> None:
                if path is not None:
                    out.append(sqlite_step_bytes(path, steps_run))

            run(
                row,
                lambda impl, kind=kind, probe=probe: w4(
                    impl,
                    kind,
                    n4,
                    args.repeat,
                    savers[impl.name],
                    probe=probe if kind == "sqlite" and impl.name == "ironloop" else None,
                ),
            )
            if kind == "none":
                row.floor_what = "the node and routing functions called in a plain loop"
                row.max_over_floor = MAX_OVER_FLOOR_W4["none"]
                row.floor = floor_w4_nodes(n4, args.repeat)
            elif kind == "sqlite" and per_step:
                rows_step, bytes_step = per_step[0]
                row.floor_what = (
                    f"{n4} committed SQLite transactions (WAL, synchronous=NORMAL, BEGIN "
                    f"IMMEDIATE), each writing what one ironloop step writes: "
                    f"{rows_step:.1f} rows, {bytes_step:,.0f} bytes"
                )
                row.max_over_floor = MAX_OVER_FLOOR_W4["sqlite"]
                # ironloop's figure and the floor again, in turn (see the function).
                il = next(i for i in impls if i.name == "ironloop")
                row.stats["ironloop"], row.floor = w4_sqlite_beside_floor(
                    il, n4, args.repeat, savers["ironloop"], rows_step, bytes_step
                )
            if kind != "none":
                notes.extend(
                    by_durability(
                        "W4",
                        kind,
                        impls,
                        lambda impl, d, kind=kind: w4(
                            impl, kind, n4, args.repeat, savers[impl.name], d
                        ),
                    )
                )

        # W4m
        for kind in kinds:
            if not wanted(f"W4m {kind}"):
                continue
            ra = h.Row(
                f"W4m(a) {kind}",
                f"{n4m} steps appending a 200-byte message; mean step cost at {l0}-{l1} "
                f"messages ÷ at {e0}-{e1}, checkpointer: {kind}",
                "×",
                TARGET_W4M_GROWTH,
            )
            rp = h.Row(
                f"W4m(a') {kind}",
                f"the same runs, one figure: each step's median cost over the {args.repeat} "
                f"runs, then mean at {l0}-{l1} ÷ mean at {e0}-{e1} (a stall of the machine "
                "in one run drops out; a cost recurring at the same step in every run stays)",
                "×",
                TARGET_W4M_GROWTH,
            )
            rb = h.Row(
                f"W4m(b) {kind}",
                f"checkpoint bytes after {n4m} steps, checkpointer: {kind}"
                + (
                    " (the file once closed: its WAL checkpointed into it)"
                    if kind == "sqlite"
                    else ""
                ),
                "MB",
                TARGET_W4M_MB,
            )
            keys[ra.workload] = keys[rp.workload] = f"W4m:{kind}"
            for impl in impls:
                print(f"  running W4m {kind} {impl.name} ...", file=sys.stderr, flush=True)
                try:
                    runs = w4m(impl, kind, n4m, args.repeat)
                    ra.stats[impl.name] = h.Stats.of([r.growth for r in runs])
                    rb.stats[impl.name] = h.Stats.of([r.bytes / 1e6 for r in runs])
                    early = statistics.median(r.early_ms for r in runs)
                    late = statistics.median(r.late_ms for r in runs)
                    secs = statistics.median(r.seconds for r in runs)
                    gm = statistics.median(r.growth_median for r in runs)
                    pooled = w4m_pooled(runs, n4m)
                    rp.stats[impl.name] = h.Stats.of([pooled])
                    db = statistics.median(r.db_bytes for r in runs)
                    p50, p99, mx = (
                        statistics.median(getattr(r, f) for r in runs)
                        for f in ("late_p50_us", "late_p99_us", "late_max_us")
                    )
                    notes.append(
                        f"W4m {kind} {impl.name}: mean step {early * 1e3:.0f} µs at {e0}-{e1} "
                        f"msgs -> {late * 1e3:.0f} µs at {l0}-{l1} msgs; ratio of the windows' "
                        f"median steps {gm:.2f}×; from per-step medians over the runs "
                        f"{pooled:.2f}×; late steps p50 {p50:.0f} / p99 {p99:.0f} / max "
                        f"{mx:.0f} µs; whole run {secs:.2f} s"
                        + (
                            ""
                            if kind == "none"
                            else f"; checkpoint bytes {rb.stats[impl.name].median * 1e6:,.0f}"
                            + (
                                f" [{impl.memory_bytes_how}]"
                                if kind == "memory"
                                else f" (file + WAL while open {db:,.0f})"
                                if kind == "sqlite"
                                else f" (the rows' data {db:,.0f})"
                            )
                        )
                    )
                except Exception as e:
                    traceback.print_exc(file=sys.stderr)
                    err = f"{type(e).__name__}: {e}"
                    ra.errors[impl.name] = rp.errors[impl.name] = rb.errors[impl.name] = err
            rows += [ra, rp] if kind == "none" else [ra, rp, rb]

        # W8
        for procs in w8_procs if PG_URL else []:
            if not wanted(f"W8 {procs}"):
                continue
            row = h.Row(
                f"W8 {procs} procs",
                f"{procs} worker processes on one PostgreSQL, each running threads of W4's graph "
                f"({W8_STEPS} steps each) for {args.w8_seconds:g} s: wall time per step over "
                "all workers (1e6 / steps per second)",
                "µs/step",
                float("inf"),
                min_ratio=TARGET_PG_RATIO,
            )

            def w8(impl: Impl, procs: int = procs) -> h.Stats:
                rates = [w8_once(impl, procs, args.w8_seconds)[0] for _ in range(w8_repeat)]
                notes.append(
                    f"W8 {procs} procs {impl.name}: "
                    + " / ".join(f"{r:,.0f}" for r in rates)
                    + " steps/s (each repetition)"
                )
                return h.Stats.of([1e6 / r for r in rates])

            run(row, w8)

        # W5
        for kind in ("none", "memory") if wanted("W5") else ():
            for streamed in (False, True):
                by = " by stream(..., stream_mode='updates'), every update pulled"
                row = h.Row(
                    f"W5 {kind}{' stream' if streamed else ''}",
                    f"create_react_agent, {r5} rounds of one add() call + answer, "
                    f"checkpointer: {kind}{by if streamed else ''}",
                    "µs/round",
                    TARGET_W5_US[kind],
                )
                keys[row.workload] = f"{'W5s' if streamed else 'W5'}:{kind}"
                run(
                    row,
                    lambda impl, kind=kind, streamed=streamed: w5(
                        impl, kind, r5, args.repeat, savers[impl.name], streamed=streamed
                    ),
                )
            if kind != "none":
                notes.extend(
                    by_durability(
                        "W5",
                        kind,
                        impls,
                        lambda impl, d, kind=kind: w5(
                            impl, kind, r5, args.repeat, savers[impl.name], d
                        ),
                    )
                )

        # W6
        if wanted("W6"):
            row = h.Row(
                "W6",
                f"{t6} threads × 10 messages (2-node graph), MemorySaver, RSS added per "
                "thread (fresh process each)",
                "KB/thread",
                TARGET_W6_KB,
            )
            run(row, lambda impl: w6(impl, t6, args.repeat, w6_details))
            for impl in impls:
                ds = [d for d in w6_details if d["impl"] == impl.name]
                if ds:
                    us = statistics.median(d["us_per_thread"] for d in ds)
                    held = statistics.median(d["saver_bytes_per_thread"] for d in ds) / 1e3
                    notes.append(
                        f"W6 {impl.name}: {us:.0f} µs per thread run; saver holds {held:.2f}"
                        f" KB/thread ({impl.memory_bytes_how.split(' (')[0].split(':')[0]}); message "
                        f"text {ds[0]['message_text_bytes_per_thread'] / 1e3:.2f} KB/thread"
                    )

        # S1
        if wanted("S1"):
            rw = h.Row(
                "S1 wall",
                "cold start: python -c '<import>' whole-process wall time",
                "ms",
                TARGET_S1_MS,
            )
            rm = h.Row(
                "S1 peak RSS", "cold start: peak RSS (/usr/bin/time -v)", "MiB", TARGET_S1_MIB
            )
            for impl in impls:
                print(f"  running S1 {impl.name} ...", file=sys.stderr, flush=True)
                try:
                    rw.stats[impl.name], rm.stats[impl.name] = s1(IMPORT_CMD[impl.name], S1_RUNS)
                except Exception as e:
                    traceback.print_exc(file=sys.stderr)
                    rw.errors[impl.name] = rm.errors[impl.name] = f"{type(e).__name__}: {e}"
            bare_wall, bare_rss = s1("pass", S1_RUNS)
            notes.append(
                f"S1 bare `python -c pass`: {bare_wall.median:.1f} ms "
                f"({bare_wall.min:.1f}–{bare_wall.max:.1f}), peak {bare_rss.median:.1f} MiB"
            )
            rows += [rw, rm]
            rf = h.Row(
                "S1+invoke wall",
                "cold start plus building a one-node graph and invoking it twice: whole "
                "process wall time",
                "ms",
                float("inf"),
            )
            rx = h.Row(
                "first invoke extra",
                "the first invoke of the process minus the second (warm) one",
                "ms",
                TARGET_FIRST_INVOKE_MS,
            )
            for impl in impls:
                print(f"  running S1+invoke {impl.name} ...", file=sys.stderr, flush=True)
                try:
                    rf.stats[impl.name], rx.stats[impl.name] = first_invoke(impl.name, S1_RUNS)
                except Exception as e:
                    traceback.print_exc(file=sys.stderr)
                    rf.errors[impl.name] = rx.errors[impl.name] = f"{type(e).__name__}: {e}"
            rows += [rf, rx]
    finally:
        for s in savers.values():
            s.cleanup()

    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print()
    h.print_table(rows)
    print()
    for n in notes:
        print(n)

    profiles: dict[str, list[str]] = {}
    done: dict[str, str] = {}  # profile key -> the workload it was printed for
    if not args.no_profile and any(i.name == "ironloop" for i in impls):
        for row in rows:
            if row.verdict != "MISS":
                continue
            key = keys.get(row.workload, row.workload)
            if key in done:
                print(f"\n== {row.workload}: MISS, same profile as {done[key]} above", flush=True)
                continue
            done[key] = row.workload
            print(f"\n== {row.workload}: MISS, profiling the ironloop side ...", flush=True)
            try:
                if row.workload.startswith("S1"):
                    lines = profile_import()
                elif row.workload == "W6":
                    lines = profile_memory(w6_details)
                elif row.workload.startswith("W4m(b)"):
                    lines = profile_bytes(row.workload.split()[-1], n4m)
                else:
                    lines = profile_timed(keys[row.workload], args.scale)
            except Exception as e:
                lines = [f"profiling failed: {type(e).__name__}: {e}"]
            profiles[row.workload] = lines
            print("\n".join(lines), flush=True)

    h.dump_json(
        args.json,
        info,
        rows,
        command=sys.argv if argv is None else argv,
        repeat=args.repeat,
        scale=args.scale,
        sizes={"W4": n4, "W4m": n4m, "W5": r5, "W6": t6},
        notes=notes,
        w6_details=w6_details,
        profiles=profiles,
    )
    return 1 if any(row.errors for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
