"""The soak: long runs of the runtime's hot paths, with resident memory, threads and
file descriptors measured after a warm-up and at the end (Linux: /proc/self).

    python tests/python/soak.py            # the full counts (RELIABILITY.md)
    python tests/python/soak.py --scale 0.01

Full counts (``--scale 1``): 100,000 agent rounds with ``MemorySaver`` and as many
with ``SqliteSaver`` (W5's shape: ``create_react_agent``, a scripted model, 50 rounds of
one ``add`` call per run, each on a thread deleted after it), 1,000,000
tool calls (``ToolNode``, 10 parallel calls per invoke), 10,000 MCP calls (the test
server over stdio) and 10,000 agent runs whose tools all raise. Each phase warms up
on its first tenth, then must end with resident memory at most 5 % above the
warmed-up figure, and threads (other than the sync-tool pool's, which grows on
demand and shrinks when idle) and file descriptors back at their warmed-up count.
Prints one line per phase; exits 1 if a phase fails its bounds.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ironloop import MemorySaver, SqliteSaver, ToolNode, create_react_agent, tool
from ironloop.mcp import McpToolset
from ironloop.messages import AIMessage
from ironloop.models import ScriptedChatModel

ROUNDS_PER_RUN = 50
MCP_SERVER = str(Path(__file__).with_name("mcp_server.py"))
RSS_GROWTH = 0.05
# How much the SQLite phase's files (database and WAL) may grow after the warm-up: the
# saver restarts its WAL once past 4 MiB (src/checkpoint/sqlite.rs, `Wal`), and each
# run's thread is deleted, so its pages are reused.
DISK_SLACK = 8 * 2**20


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def thread_names() -> list[str]:
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # ended meanwhile
            pass
    return names


def threads() -> int:
    """Threads other than the sync-tool pool's (`ironloop-tool`), which grows on
    demand up to 256 and whose idle workers end after 30 s (src/bindings/pool.rs)."""
    return sum(1 for n in thread_names() if n != "ironloop-tool")


def pool_threads() -> int:
    return sum(1 for n in thread_names() if n == "ironloop-tool")


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@dataclass
class Phase:
    name: str
    units: str
    count: int
    seconds: float
    rss_warm: int
    rss_end: int
    threads: tuple[int, int]
    fds: tuple[int, int]
    pool: int
    # Bytes of the saver's files (the database and its WAL) after warm-up -> end.
    disk: tuple[int, int] | None = None

    @property
    def growth(self) -> float:
        return (self.rss_end - self.rss_warm) / self.rss_warm

    @property
    def ok(self) -> bool:
        return (
            self.growth <= RSS_GROWTH
            and self.threads[1] <= self.threads[0]
            and self.fds[1] <= self.fds[0]
            and (self.disk is None or self.disk[1] <= self.disk[0] + DISK_SLACK)
        )

    def line(self) -> str:
        return (
            f"{self.name}: {self.count:,} {self.units} in {self.seconds:.1f} s; RSS "
            f"{self.rss_warm / 2**20:.1f} -> {self.rss_end / 2**20:.1f} MiB after warm-up "
            f"({self.growth * 100:+.2f} %); threads {self.threads[0]} -> {self.threads[1]}; "
            f"fds {self.fds[0]} -> {self.fds[1]}; tool-pool threads at the end {self.pool}; "
            + (
                f"files {self.disk[0] / 2**20:.1f} -> {self.disk[1] / 2**20:.1f} MiB; "
                if self.disk
                else ""
            )
            + f"{'ok' if self.ok else 'FAILED'}"
        )


def soak(
    name: str,
    units: str,
    batches: int,
    per_batch: int,
    step: Callable[[int], None],
    min_warm: int = 1,
    files: Callable[[], int] | None = None,
) -> Phase:
    """Runs `step(i)` for i in range(batches), each doing `per_batch` units; the first
    tenth (at least `min_warm` batches) is the warm-up."""
    warm = min(batches, max(min_warm, batches // 10))
    t0 = time.perf_counter()
    for i in range(warm):
        step(i)
    gc.collect()
    rss0, th0, fd0 = rss_bytes(), threads(), fds()
    disk0 = files() if files else 0
    for i in range(warm, batches):
        step(i)
    gc.collect()
    time.sleep(0.2)  # threads that are ending
    return Phase(
        name,
        units,
        batches * per_batch,
        time.perf_counter() - t0,
        rss0,
        rss_bytes(),
        (th0, threads()),
        (fd0, fds()),
        pool_threads(),
        (disk0, files()) if files else None,
    )


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@tool
def broken(x: int) -> int:
    """Always raises."""
    raise ValueError(f"broken on {x}")


def script(rounds: int, name: str = "add") -> Callable[[list[Any]], dict[str, Any]]:
    def respond(messages: list[Any]) -> dict[str, Any]:
        k = (len(messages) - 1) // 2
        if k < rounds:
            args = {"a": k, "b": 1} if name == "add" else {"x": k}
            return {"content": "", "tool_calls": [{"name": name, "args": args, "id": f"c{k}"}]}
        return {"content": f"done after {k} rounds"}

    return respond


# A compiled graph keeps the latest state of its last 128 threads (state_cache.rs):
# the runs cycle through this many thread ids (each deleted after its run, so every
# run starts afresh), and the warm-up covers them all, so what the cache holds is
# counted before the measure starts.
THREAD_IDS = 32


def agent_phase(name: str, saver: Any, rounds: int, path: Path | None = None) -> Phase:
    model = ScriptedChatModel(script(ROUNDS_PER_RUN))
    agent = create_react_agent(model, [add], checkpointer=saver)
    runs = max(1, rounds // ROUNDS_PER_RUN)

    def step(i: int) -> None:
        tid = f"t{i % THREAD_IDS}"
        cfg = {"configurable": {"thread_id": tid}, "recursion_limit": 4 * ROUNDS_PER_RUN + 20}
        out = agent.invoke({"messages": [("user", "go")]}, cfg)
        assert out["messages"][-1].content == f"done after {ROUNDS_PER_RUN} rounds"
        saver.delete_thread(tid)
        # The scripted model records every call it gets (a test double's `.calls`).
        model.calls.clear()

    def files() -> int:
        assert path is not None
        return sum(f.stat().st_size for f in (path, Path(f"{path}-wal")) if f.exists())

    return soak(
        name,
        "agent rounds",
        runs,
        ROUNDS_PER_RUN,
        step,
        min_warm=THREAD_IDS + 8,
        files=files if path is not None else None,
    )


def tool_phase(calls: int) -> Phase:
    node = ToolNode([add])
    per = 10
    msg = AIMessage(
        content="",
        tool_calls=[{"name": "add", "args": {"a": k, "b": 1}, "id": f"c{k}"} for k in range(per)],
    )

    def step(i: int) -> None:
        out = node.invoke({"messages": [msg]})["messages"]
        assert out[-1].content == str(per)

    return soak("ToolNode", "tool calls", max(1, calls // per), per, step)


def mcp_phase(calls: int) -> Phase:
    per = 10
    with McpToolset.stdio(sys.executable, [MCP_SERVER], prefix="m") as ts:
        node = ToolNode(ts.tools)
        msg = AIMessage(
            content="",
            tool_calls=[
                {"name": "m__add", "args": {"a": k, "b": 1}, "id": f"c{k}"} for k in range(per)
            ],
        )

        def step(i: int) -> None:
            out = node.invoke({"messages": [msg]})["messages"]
            assert [m.content for m in out] == [str(k + 1) for k in range(per)], out

        return soak("MCP over stdio", "MCP calls", max(1, calls // per), per, step)


def raising_phase(runs: int) -> Phase:
    # Each raise logs its traceback (WARNING, `ironloop`): kept, but not printed.
    logging.getLogger("ironloop").addHandler(logging.NullHandler())
    model = ScriptedChatModel(script(1, "broken"))
    agent = create_react_agent(model, [broken])

    def step(i: int) -> None:
        out = agent.invoke({"messages": [("user", "go")]})
        assert out["messages"][2].status == "error"
        model.calls.clear()

    return soak("raising tools", "agent runs", runs, 1, step)


def main(scale: float = 1.0, out: Callable[[str], None] = print) -> list[Phase]:
    """Runs every phase at `scale` times the full counts; returns the phases."""
    n = lambda full: max(1, int(full * scale))  # noqa: E731
    phases = []
    with tempfile.TemporaryDirectory() as d:
        for make in (
            lambda: agent_phase("MemorySaver", MemorySaver(), n(100_000)),
            lambda: agent_phase(
                "SqliteSaver",
                SqliteSaver.from_conn_string(str(Path(d) / "soak.db")),
                n(100_000),
                Path(d) / "soak.db",
            ),
            lambda: tool_phase(n(1_000_000)),
            lambda: mcp_phase(n(10_000)),
            lambda: raising_phase(n(10_000)),
        ):
            p = make()
            out(p.line())
            phases.append(p)
    return phases


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full counts")
    args = ap.parse_args()
    t = time.perf_counter()
    result = main(args.scale)
    print(f"total {time.perf_counter() - t:.0f} s")
    sys.exit(0 if all(p.ok for p in result) else 1)
