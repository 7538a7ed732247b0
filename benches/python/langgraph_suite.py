"""LangGraph's own benchmark suite, run on LangGraph and on ironloop side by side.

The graphs are LangGraph's: ``bench/`` of the ``langgraph==1.2.24`` source distribution,
fetched from PyPI and checked by sha256 (``scripts/upstream/fetch.py``), run unchanged.
On the ironloop side the only change is the one a user makes, their ``langgraph``
imports answered by ironloop's names (``scripts/upstream/langgraph_shim.py``).

Each implementation runs in a worker process of its own; the parent asks them in turn
for one timed run of the same benchmark (alternating, after one untimed warm-up each)
and prints the median of ``--repeat`` runs, of wall time and of the worker's CPU time
(all its threads: on a shared machine, what the load distorts least), and of the part
of that CPU time Python's garbage collector took (it grows with what the worker holds
from the cells before: a cell slow only late in a full run shows it there). Every benchmark
runs sync (``stream``) and async (``astream`` on uvloop) as LangGraph's runner does
(``durability="exit"``), with the checkpointer LangGraph's table gives it
(``InMemorySaver``) and, sync, with ``SqliteSaver`` in its place. Before timing, each
side runs the graph once with ``invoke`` and the parent checks that both end in the
same state and stream as many chunks; a benchmark where they differ is reported, not
timed.

``fast-langgraph`` (Rust accelerators patched into LangGraph) is measured as a third
column when ``--fast-langgraph`` is given and the package imports.

    benches/python/run.sh langgraph_suite.py [--repeat 5] [--only wide_state] [--json F]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "upstream"))

import fetch  # noqa: E402

SAVERS = ("none", "memory", "sqlite")


# ----------------------------------------------------------------------------------
# Worker: one implementation, driven over stdin / stdout (one JSON object a line).


class _Worker:
    def __init__(self, impl: str) -> None:
        self.impl = impl
        # Replies go to the parent on the original stdout; anything the libraries
        # print goes to stderr instead of into the protocol.
        self.replies = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        # LangGraph warns that its runner's durability="exit" means nothing without a
        # checkpointer, once per run: noise in the table.
        warnings.filterwarnings("ignore", message="`durability` has no effect")
        if impl == "ironloop":
            import langgraph_shim

            langgraph_shim.install()
        elif impl == "fast-langgraph":
            # Its documented switch: patches LangGraph's executor and apply_writes.
            from fast_langgraph import shim  # type: ignore[import-not-found]

            shim.patch_langgraph()
        self.src = fetch.sdist("langgraph")
        # After site-packages: ``bench`` comes from the sdist, ``langgraph`` stays the
        # installed package (or the shim).
        sys.path.append(str(self.src))
        import uvloop

        self.loop = uvloop.new_event_loop()
        self.tmp = tempfile.mkdtemp(prefix="lg-suite-")
        self.tables: dict[str, dict[str, Any]] = {}

    def _saver_factory(self, saver: str) -> Any:
        if saver in ("none", "memory"):
            from langgraph.checkpoint.memory import InMemorySaver

            return InMemorySaver
        if self.impl == "ironloop":
            from langgraph.checkpoint.sqlite import SqliteSaver

            return lambda: SqliteSaver(os.path.join(self.tmp, f"{uuid.uuid4().hex}.db"))
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        return lambda: SqliteSaver(
            sqlite3.connect(
                os.path.join(self.tmp, f"{uuid.uuid4().hex}.db"), check_same_thread=False
            )
        )

    def table(self, saver: str) -> dict[str, Any]:
        """LangGraph's benchmark table and compilation table (``bench/__main__.py``
        without its pyperf runner and its serde-allowlist rows), its
        ``InMemorySaver()`` replaced by ``saver``'s constructor."""
        key = "memory" if saver == "none" else saver
        if key not in self.tables:
            full = (self.src / "bench" / "__main__.py").read_text()
            table, rest = full.split("\nr = Runner()", 1)
            compiles = "compilation_benchmarks = (" + rest.split("compilation_benchmarks = (", 1)[1]
            compiles = compiles.split("\nfor name, graph in compilation_benchmarks", 1)[0]
            # The serde-allowlist rows time a LangGraph internal, not a graph: left out.
            table = "\n".join(ln for ln in table.splitlines() if "bench.serde_allowlist" not in ln)
            text = (table + "\n" + compiles).replace("InMemorySaver()", "_SAVER()")
            ns: dict[str, Any] = {
                "__name__": "langgraph_bench_table",
                "_SAVER": self._saver_factory(key),
            }
            # The table draws its inputs at random and the agent's messages carry uuid4s:
            # both seeded, so that both sides build the same inputs.
            random.seed(1234)
            import bench.react_agent

            ids = random.Random(1234)
            bench.react_agent.uuid4 = lambda: uuid.UUID(int=ids.getrandbits(128), version=4)  # type: ignore[attr-defined]
            exec(compile(text, str(self.src / "bench" / "__main__.py"), "exec"), ns)
            self.tables[key] = ns
        return self.tables[key]

    def graph(self, name: str, mode: str, saver: str) -> tuple[Any, Any, Any]:
        ns = self.table(saver)
        for bname, agraph, graph, inp in ns["benchmarks"]:
            if bname == name:
                return ns, (agraph if mode == "async" else graph), inp
        raise KeyError(name)

    def time_once(self, name: str, mode: str, saver: str) -> dict[str, float]:
        """One run's wall time (``s``), the process's CPU time over it (``cpu``, all
        threads: on a shared machine what the load distorts least) and the CPU time
        Python's cyclic garbage collector took inside it (``gc``, with ``full``, the
        number of full collections): the collector's cost grows with everything the
        worker still holds from earlier cells (the savers keep every run's
        checkpoints), so it tells a cell made slower by its place in a long run from
        one slow by itself."""
        ns, graph, inp = self.graph(name, mode, saver)
        spent = _GcClock()
        gc.callbacks.append(spent)
        try:
            cpu, start = time.process_time(), time.perf_counter()
            if mode == "async":
                self.loop.run_until_complete(ns["arun"](graph, inp))
            else:
                ns["run"](graph, inp)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        finally:
            gc.callbacks.remove(spent)
        return {"s": wall, "cpu": cpu, "gc": spent.total, "full": spent.full}

    def outcome(self, name: str, mode: str, saver: str) -> dict[str, Any]:
        """The final state (in a comparable form) and the number of stream chunks."""
        _, graph, inp = self.graph(name, mode, saver)
        # The graphs draw random strings (``choice``, imported into each bench module)
        # and LangGraph's checkpoint ids draw from the same global generator: the
        # modules get a generator of their own, seeded alike on both sides.
        rng = random.Random(1234)
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("bench.") and hasattr(mod, "choice"):
                mod.choice = rng.choice  # type: ignore[attr-defined]
        config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 10**9}
        if mode == "async":
            final = self.loop.run_until_complete(graph.ainvoke(inp, config))

            async def count() -> int:
                n = 0
                async for _ in graph.astream(
                    inp, {**config, "configurable": {"thread_id": str(uuid.uuid4())}}
                ):
                    n += 1
                return n

            chunks = self.loop.run_until_complete(count())
        else:
            final = graph.invoke(inp, config)
            chunks = sum(
                1
                for _ in graph.stream(
                    inp, {**config, "configurable": {"thread_id": str(uuid.uuid4())}}
                )
            )
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("bench.") and hasattr(mod, "choice"):
                mod.choice = random.choice  # type: ignore[attr-defined]
        return {"state": _canonical(final), "chunks": chunks}

    def react_split(self, repeat: int) -> dict[str, float]:
        """Where ``react_agent_100x`` (sync ``invoke``) spends its time: the whole run,
        the LangChain fake model's own 101 calls and the tool's own 100 calls made
        outside any framework on the same messages, and the rest (the framework's)."""
        import bench.react_agent as ra

        made: dict[str, Any] = {}
        build = ra.create_react_agent

        def spy(model: Any, tools: Any, **kw: Any) -> Any:
            made["model"], made["tool"] = model, tools[0]
            return build(model, tools, **kw)

        ra.create_react_agent = spy  # type: ignore[attr-defined]
        try:
            graph = ra.react_agent(100, checkpointer=None)
        finally:
            ra.create_react_agent = build  # type: ignore[attr-defined]
        from langchain_core.messages import HumanMessage

        inp = {"messages": [HumanMessage("hi?")]}

        def run() -> Any:
            return graph.invoke(inp, {"configurable": {"thread_id": str(uuid.uuid4())}})

        out = run()
        # The model sees LangChain messages on both sides (converted when the
        # framework's own classes are not LangChain's).
        msgs = out["messages"]
        if not all(hasattr(m, "lc_serializable") for m in msgs):
            from ironloop.messages import to_langchain

            msgs = to_langchain(msgs)
        model, tool = made["model"], made["tool"]

        def models() -> None:
            model.i = 0
            for k in range(101):
                model.invoke(msgs[: 1 + 2 * k])

        def tools() -> None:
            for _ in range(100):
                tool.invoke({"query": "q" * 3600})

        def median(f: Any) -> float:
            ts = []
            for _ in range(repeat):
                t = time.perf_counter()
                f()
                ts.append(time.perf_counter() - t)
            return statistics.median(ts)

        total, m, t = median(run), median(models), median(tools)
        return {"run": total, "model": m, "tool": t, "framework": max(total - m - t, 0.0)}

    def floor(self, name: str, repeat: int) -> float:
        """CPU seconds (median) of the user's own work in a ``wide_state`` /
        ``wide_dict`` / ``pydantic_state`` cell, with no framework: each node's input
        state built from the values (the dataclass or pydantic model, its validators
        run), the node function called, its writes folded in with the benchmark's own
        reducers, the router asked after ``six``, in the graph's order. Any framework
        spends at least this; what a side spends above it is its own part."""
        import typing

        from langgraph.graph import END

        _, graph, inp = self.graph(name, "sync", "none")
        builder = graph.builder
        steps = [["one"], ["two"], ["three", "four"], ["five"], ["six"]]
        if set(builder.nodes) != {n for step in steps for n in step}:
            raise ValueError(f"{name}: not the six-node graph the floor knows")
        state = builder.state_schema
        hints = typing.get_type_hints(state, include_extras=True)
        reducers = {
            k: (h.__metadata__[0] if callable(getattr(h, "__metadata__", (None,))[0]) else None)
            for k, h in hints.items()
        }
        nodes = {n: spec.runnable.func for n, spec in builder.nodes.items()}
        [route] = [b.path.func for b in builder.branches["six"].values()]
        defaults: dict[str, Any] = {}
        for k in hints:
            fields = getattr(state, "model_fields", None) or getattr(
                state, "__dataclass_fields__", {}
            )
            f = fields.get(k)
            if f is None:
                continue
            factory = getattr(f, "default_factory", None)
            defaults[k] = factory() if callable(factory) else f.default

        def run() -> None:
            vals = {
                k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in defaults.items()
            }

            def fold(writes: dict[str, Any]) -> None:
                for k, v in writes.items():
                    r = reducers.get(k)
                    vals[k] = r(vals[k], v) if r is not None and k in vals else v

            fold(inp)
            while True:
                for step in steps:
                    for out in [nodes[n](state(**vals)) for n in step]:
                        fold(out)
                if route(state(**vals)) == END:
                    return

        run()
        times = []
        for _ in range(repeat):
            cpu = time.process_time()
            run()
            times.append(time.process_time() - cpu)
        return statistics.median(times)

    def compile_time(self, name: str) -> float:
        ns = self.table("memory")
        for bname, builder in ns["compilation_benchmarks"]:
            if bname == name:
                start = time.perf_counter()
                ns["compile_graph"](builder)
                return time.perf_counter() - start
        raise KeyError(name)

    def serve(self) -> None:
        try:
            self._serve()
        finally:
            # The SQLite cells' databases: gigabytes after a full run.
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _serve(self) -> None:
        for line in sys.stdin:
            req = json.loads(line)
            try:
                op = req.pop("op")
                if op == "names":
                    ns = self.table("memory")
                    out: Any = {
                        "benchmarks": [b[0] for b in ns["benchmarks"]],
                        "compile": [b[0] for b in ns["compilation_benchmarks"]],
                    }
                elif op == "time":
                    out = self.time_once(**req)
                elif op == "outcome":
                    out = self.outcome(**req)
                elif op == "compile":
                    out = {"s": self.compile_time(**req)}
                elif op == "react_split":
                    out = self.react_split(**req)
                elif op == "floor":
                    out = {"cpu": self.floor(**req)}
                else:
                    raise ValueError(op)
                reply = {"ok": out}
            except Exception as e:  # reported to the parent, which prints it
                reply = {"error": f"{type(e).__name__}: {e}"}
            self.replies.write(json.dumps(reply) + "\n")
            self.replies.flush()


class _GcClock:
    """A ``gc.callbacks`` entry that adds up the CPU time of the collections it sees
    (the thread's, as the collector runs on the thread that triggers it)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.full = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.thread_time()
            return
        self.total += time.thread_time() - self._start
        self.full += info["generation"] == 2


def _canonical(value: Any) -> Any:
    """A JSON-like form in which both implementations' states compare equal when they
    hold the same data: messages as (type, content, tool-call names), models and
    dataclasses as their fields, ids left out (uuid4s differ run to run)."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if hasattr(value, "content") and hasattr(value, "type"):
        calls = [c["name"] for c in getattr(value, "tool_calls", None) or []]
        return {"type": value.type, "content": _canonical(value.content), "calls": len(calls)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _canonical(dump())
    if hasattr(value, "__dataclass_fields__"):
        return {f: _canonical(getattr(value, f)) for f in value.__dataclass_fields__}
    return value


def _ratio(r: float) -> str:
    """LangGraph's time over ironloop's: above 1, ironloop is faster."""
    return f"{r:11.1f}x" if r >= 1 else f"{r:11.3f}x"


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two canonical outcomes first differ, for the report."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'LangGraph' if k in a else 'this one'}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}/{i}")
    return f"{path}: {str(a)[:120]!r} against {str(b)[:120]!r}"


# ----------------------------------------------------------------------------------
# Parent: start the workers, alternate them, print the table.


class _Client:
    def __init__(self, impl: str) -> None:
        self.impl = impl
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", impl],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, timeout: float = 300.0, **req: Any) -> Any:
        """The worker's answer to ``req``; a worker silent for ``timeout`` seconds is
        killed (and started again for the next request) and the request fails."""
        import select

        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.proc.kill()
            self.proc.wait()
            self.__init__(self.impl)  # type: ignore[misc]
            raise RuntimeError(f"{self.impl} did not answer within {timeout:.0f} s (hung)")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.impl} worker exited (code {self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["ok"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _cells(names: list[str], only: list[str], savers: list[str]) -> list[tuple[str, str, str]]:
    cells = []
    for name in names:
        if only and not any(o in name for o in only):
            continue
        saver_of = "memory" if name.endswith("_checkpoint") else "none"
        for mode in ("sync", "async"):
            for saver in savers:
                if saver_of == "none" and saver != "none":
                    continue
                if saver_of == "memory" and saver == "none":
                    continue
                # LangGraph's SqliteSaver has no async methods (AsyncSqliteSaver is another
                # class on another connection type): SQLite rows are sync only.
                if saver == "sqlite" and mode == "async":
                    continue
                cells.append((name, mode, saver))
    return cells


def _print_floors(langgraph: Any, results: list[dict[str, Any]], repeat: int) -> None:
    """For the measured ``wide_*`` / ``pydantic_state`` cells without a saver (sync):
    the user's own work (the floor, CPU) and each side's part above it."""
    rows = [
        r
        for r in results
        if r.get("saver") == "none"
        and r.get("mode") == "sync"
        and r["benchmark"].startswith(("wide_", "pydantic_state"))
        and "ironloop_cpu_ms" in r
    ]
    if not rows:
        return
    print("\n# no saver, sync: the user's own work with no framework (floor) and each side's")
    print("# part above it (CPU ms, median)")
    print(
        f"{'':28} {'floor':>8} {'LangGraph':>10} {'ironloop':>10} {'LG part / ironloop part':>24}"
    )
    for r in rows:
        floor = langgraph.ask(op="floor", name=r["benchmark"], repeat=repeat)["cpu"] * 1e3
        lg, il = r["langgraph_cpu_ms"] - floor, r["ironloop_cpu_ms"] - floor
        r["floor_cpu_ms"] = floor
        share = f"{lg / il:.1f}x" if il > 0 else "ironloop at its floor"
        print(f"{r['benchmark']:28} {floor:8.2f} {lg:10.2f} {il:10.2f} {share:>24}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per cell (median)")
    ap.add_argument("--only", action="append", default=[], help="benchmarks whose name has this")
    ap.add_argument("--savers", default="none,memory,sqlite", help="of: none, memory, sqlite")
    ap.add_argument("--fast-langgraph", action="store_true", help="also time fast-langgraph")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if args.worker:
        _Worker(args.worker).serve()
        return 0
    if args.repeat < 3:
        ap.error("--repeat must be >= 3")
    savers = [s for s in args.savers.split(",") if s]
    if bad := set(savers) - set(SAVERS):
        ap.error(f"unknown saver(s): {', '.join(sorted(bad))}")

    src = fetch.sdist("langgraph")
    impls = ["langgraph", "ironloop"] + (["fast-langgraph"] if args.fast_langgraph else [])
    clients = {i: _Client(i) for i in impls}
    names = clients["langgraph"].ask(op="names")
    print(f"# LangGraph's bench/ from {src.name} (sha256-checked); python {sys.version.split()[0]}")
    print(
        f"# median of {args.repeat} alternating runs after one warm-up; ms of wall time, "
        "then of the process's CPU time (all its threads), then of that CPU time the "
        "cyclic garbage collector took"
    )
    head = f"{'benchmark':36} {'mode':5} {'saver':6} " + " ".join(f"{i:>14}" for i in impls)
    cpu_head = " ".join(f"{i[:8]:>8}" for i in impls)
    print(head + f" {'LG/ironloop':>12}   cpu {cpu_head} {'LG/ironloop':>12}   gc {cpu_head}")
    results: list[dict[str, Any]] = []
    failed = 0
    for name, mode, saver in _cells(names["benchmarks"], args.only, savers):
        row: dict[str, Any] = {"benchmark": name, "mode": mode, "saver": saver}
        # LangGraph and ironloop must both run the cell; a third column that fails or
        # hangs (fast-langgraph deadlocks on some) is reported as such, alone.
        active = dict(clients)
        notes: dict[str, str] = {}
        try:
            ref = clients["langgraph"].ask(op="outcome", name=name, mode=mode, saver=saver)
            for i, c in clients.items():
                if i == "langgraph":
                    continue
                try:
                    o = c.ask(op="outcome", name=name, mode=mode, saver=saver, timeout=60)
                except RuntimeError as e:
                    if i == "ironloop":
                        raise
                    notes[i], active = str(e), {k: v for k, v in active.items() if k != i}
                    continue
                if o != ref:
                    where = _first_difference(ref, o)
                    if i == "ironloop":
                        raise RuntimeError(f"{i} ends otherwise than LangGraph: {where}")
                    notes[i], active = (
                        f"ends otherwise: {where}",
                        {k: v for k, v in active.items() if k != i},
                    )
            samples: dict[str, list[float]] = {i: [] for i in active}
            cpus: dict[str, list[float]] = {i: [] for i in active}
            gcs: dict[str, list[float]] = {i: [] for i in active}
            fulls: dict[str, int] = {i: 0 for i in active}
            for c in active.values():
                c.ask(op="time", name=name, mode=mode, saver=saver)  # warm-up
            for _ in range(args.repeat):
                for i, c in active.items():
                    t = c.ask(op="time", name=name, mode=mode, saver=saver)
                    samples[i].append(t["s"])
                    cpus[i].append(t["cpu"])
                    gcs[i].append(t["gc"])
                    fulls[i] += t["full"]
            med = {i: statistics.median(s) * 1e3 for i, s in samples.items()}
            cpu = {i: statistics.median(s) * 1e3 for i, s in cpus.items()}
            row.update({f"{i}_ms": m for i, m in med.items()})
            row.update({f"{i}_cpu_ms": m for i, m in cpu.items()})
            # The collector's share: its median CPU ms a run and its full collections
            # over the timed runs (see ``_Worker.time_once``).
            row.update({f"{i}_gc_ms": statistics.median(s) * 1e3 for i, s in gcs.items()})
            row.update({f"{i}_gc_full": n for i, n in fulls.items()})
            row["samples_ms"] = {i: [x * 1e3 for x in s] for i, s in samples.items()}
            row.update({f"{i}_error": n for i, n in notes.items()})
            ratio = med["langgraph"] / med["ironloop"]
            row["ratio"] = ratio
            row["cpu_ratio"] = cpu["langgraph"] / cpu["ironloop"]
            cells = " ".join(f"{med[i]:14.1f}" if i in med else f"{'failed':>14}" for i in impls)
            cpu_cells = " ".join(f"{cpu[i]:8.1f}" if i in cpu else f"{'-':>8}" for i in impls)
            gc_cells = " ".join(
                f"{row[f'{i}_gc_ms']:8.1f}" if i in cpu else f"{'-':>8}" for i in impls
            )
            print(
                f"{name:36} {mode:5} {saver:6} {cells} {_ratio(ratio)}"
                f"   cpu {cpu_cells} {_ratio(row['cpu_ratio'])}   gc {gc_cells}",
                flush=True,
            )
            for i, n in notes.items():
                print(f"    {i}: {n}", flush=True)
        except RuntimeError as e:
            failed += 1
            row["error"] = str(e)
            print(f"{name:36} {mode:5} {saver:6} FAILED: {e}", flush=True)
        results.append(row)
    for name in names["compile"]:
        if args.only and not any(o in name for o in args.only):
            continue
        samples = {i: [] for i in impls}
        for _ in range(args.repeat):
            for i, c in clients.items():
                samples[i].append(c.ask(op="compile", name=name)["s"])
        med = {i: statistics.median(s) * 1e3 for i, s in samples.items()}
        ratio = med["langgraph"] / med["ironloop"]
        cells = " ".join(f"{med[i]:14.2f}" for i in impls)
        print(f"{name + ' (compile)':36} {'':5} {'':6} {cells} {_ratio(ratio)}", flush=True)
        results.append(
            {
                "benchmark": name,
                "mode": "compile",
                **{f"{i}_ms": m for i, m in med.items()},
                "ratio": ratio,
            }
        )
    if not args.only or any(o in "react_agent_100x" for o in args.only):
        print("\n# react_agent_100x, sync invoke: where the time goes (ms, median)")
        print(f"{'':16} {'run':>8} {'model':>8} {'tool':>8} {'framework':>10}")
        for i, c in clients.items():
            sp = c.ask(op="react_split", repeat=args.repeat)
            print(
                f"{i:16} "
                + " ".join(f"{sp[k] * 1e3:8.1f}" for k in ("run", "model", "tool"))
                + f" {sp['framework'] * 1e3:10.1f}",
                flush=True,
            )
            results.append({"benchmark": "react_agent_100x_split", "impl": i, **sp})
    _print_floors(clients["langgraph"], results, args.repeat)
    for c in clients.values():
        c.close()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"{len(results) - failed} cells measured, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
