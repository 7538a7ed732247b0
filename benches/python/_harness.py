"""Shared helpers for the Python benchmarks: timing, machine info, result table, JSON dump.

Timing follows BENCHMARKS.md: each figure is the median of at least 3 repetitions
(with min and max), after ``warmup`` untimed runs. A ``check`` callable, when given,
validates every run's result outside the timed region, so a broken run never counts.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any, TypeVar

T = TypeVar("T")
Check = Callable[[Any], None] | None

MIN_REPEAT = 3
IMPLS = ("ironloop", "langgraph")


@dataclass(frozen=True)
class Stats:
    """Median / min / max of the timed samples (seconds unless ``scaled``)."""

    median: float
    min: float
    max: float
    samples: tuple[float, ...] = ()

    @classmethod
    def of(cls, samples: list[float]) -> Stats:
        return cls(statistics.median(samples), min(samples), max(samples), tuple(samples))

    def scaled(self, factor: float) -> Stats:
        """The same figures multiplied by ``factor`` (e.g. 1e3 for ms, 1e6 / n for µs per call)."""
        return Stats(
            self.median * factor,
            self.min * factor,
            self.max * factor,
            tuple(s * factor for s in self.samples),
        )


def _check_repeat(repeat: int, warmup: int) -> None:
    if repeat < MIN_REPEAT:
        raise ValueError(f"repeat must be >= {MIN_REPEAT} (got {repeat})")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0 (got {warmup})")


def measure(fn: Callable[[], T], repeat: int = 5, warmup: int = 1, check: Check = None) -> Stats:
    """Time ``fn()`` ``repeat`` times after ``warmup`` untimed calls; ``check`` every result."""
    _check_repeat(repeat, warmup)
    for _ in range(warmup):
        result = fn()
        if check is not None:
            check(result)
        del result
    samples: list[float] = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - t0)
        if check is not None:
            check(result)
        del result
    return Stats.of(samples)


def measure_pair(
    a: Callable[[], tuple[T, float]],
    b: Callable[[], tuple[T, float]],
    check: tuple[Check, Check] = (None, None),
    repeat: int = 5,
    warmup: int = 1,
) -> tuple[Stats, Stats]:
    """Two workloads, one repetition of each in turn, so that both see the same state
    of the machine. Each function times itself (it may prepare untimed first) and
    returns its result and the seconds of its timed part; ``check`` checks each one's
    result."""
    wall = measure_alternating([a, b], list(check), repeat, warmup)[0]
    return wall[0], wall[1]


def measure_alternating(
    fns: list[Callable[[], tuple[T, float]]],
    checks: list[Check],
    repeat: int = 5,
    warmup: int = 1,
) -> tuple[list[Stats], list[Stats]]:
    """Several workloads, one repetition of each in turn, so that all see the same state
    of the machine (on a shared, loaded machine a side measured in a block of its own
    sees another load). Each function times itself and returns its result and the
    seconds of its timed part; ``checks`` check each one's result. Returns the wall
    times and the process CPU times (every thread's: the engine's workers count) of
    each function's whole call, which waiting for a core does not inflate."""
    _check_repeat(repeat, warmup)
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for i in range(warmup + repeat):
        for fn, chk, out, out_cpu in zip(fns, checks, wall, cpu, strict=True):
            gc.collect()
            c0 = time.process_time()
            result, seconds = fn()
            spent = time.process_time() - c0
            if i >= warmup:
                out.append(seconds)
                out_cpu.append(spent)
            if chk is not None:
                chk(result)
            del result
    return [Stats.of(w) for w in wall], [Stats.of(c) for c in cpu]


async def ameasure_pair(
    a: tuple[Callable[[], Awaitable[T]], Check],
    b: tuple[Callable[[], Awaitable[T]], Check],
    repeat: int = 5,
    warmup: int = 1,
) -> tuple[Stats, Stats]:
    """Like :func:`ameasure` for two coroutine functions (each with its check), one
    repetition of each in turn, so that both see the same state of the machine."""
    _check_repeat(repeat, warmup)
    samples: tuple[list[float], list[float]] = ([], [])
    for i in range(warmup + repeat):
        for (coro_fn, check), out in zip((a, b), samples, strict=True):
            gc.collect()
            t0 = time.perf_counter()
            result = await coro_fn()
            if i >= warmup:
                out.append(time.perf_counter() - t0)
            if check is not None:
                check(result)
            del result
    return Stats.of(samples[0]), Stats.of(samples[1])


async def ameasure(
    coro_fn: Callable[[], Awaitable[T]], repeat: int = 5, warmup: int = 1, check: Check = None
) -> Stats:
    """Like :func:`measure`, for a coroutine function, awaited on the running loop."""
    _check_repeat(repeat, warmup)
    for _ in range(warmup):
        result = await coro_fn()
        if check is not None:
            check(result)
        del result
    samples: list[float] = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = await coro_fn()
        samples.append(time.perf_counter() - t0)
        if check is not None:
            check(result)
        del result
    return Stats.of(samples)


@dataclass
class Row:
    """One workload: its target and, per implementation, Stats (in ``unit``) or an error."""

    workload: str
    what: str
    unit: str  # "ms" or "µs/call"
    target: float  # upper bound for ironloop's median, in ``unit`` (inf: none)
    stats: dict[str, Stats] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    # A target relative to LangGraph: ironloop at least this many times faster.
    min_ratio: float | None = None
    # What the hardware and CPython allow for the same work, measured in the same run
    # (e.g. a plain asyncio.gather of W1's coroutines), in ``unit``; and the target for
    # ironloop's median over the floor's (ironloop at most this many times the floor).
    floor: Stats | None = None
    floor_what: str = ""
    max_over_floor: float | None = None

    @property
    def over_floor(self) -> float | None:
        """ironloop median / floor median (how many times its floor ironloop costs)."""
        il = self.stats.get("ironloop")
        if il is None or self.floor is None or self.floor.median <= 0:
            return None
        return il.median / self.floor.median

    @property
    def ratio(self) -> float | None:
        """LangGraph median / ironloop median (how many times faster ironloop is)."""
        il, lg = self.stats.get("ironloop"), self.stats.get("langgraph")
        if il is None or lg is None or il.median <= 0:
            return None
        return lg.median / il.median

    @property
    def verdict(self) -> str:
        if "ironloop" in self.errors:
            return "FAIL"
        il = self.stats.get("ironloop")
        if il is None:
            return "-"
        ratio = self.ratio
        if self.min_ratio is not None and ratio is not None and ratio < self.min_ratio:
            return "MISS"
        over = self.over_floor
        if self.max_over_floor is not None and over is not None and over > self.max_over_floor:
            return "MISS"
        return "PASS" if il.median <= self.target else "MISS"

    @property
    def target_text(self) -> str:
        parts = [f"≤ {self.target:g}"] if self.target != float("inf") else []
        if self.min_ratio is not None:
            parts.append(f"≥ {self.min_ratio:g}× LG")
        if self.max_over_floor is not None:
            parts.append(f"≤ {self.max_over_floor:g}× floor")
        return ", ".join(parts) or "-"


class _NoLangChain:
    """A ``sys.meta_path`` finder that refuses ``langchain_core``: ironloop then runs as
    on a machine without it (its own message classes)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "langchain_core" or name.startswith("langchain_core."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the bench)")
        return None


def block_langchain() -> None:
    """Makes ``langchain_core`` unimportable in this process (call before importing
    ironloop): the "without langchain-core" side of a same-machine comparison."""
    if any(m.startswith("langchain_core") or m == "ironloop" for m in sys.modules):
        raise RuntimeError("block_langchain() must run before ironloop or langchain_core import")
    sys.meta_path.insert(0, _NoLangChain())


def machine_info() -> dict[str, Any]:
    """Machine, interpreter, package versions and the date, for the report header."""

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    cpu_model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": {
            d: version(d)
            for d in (
                "ironloop",
                "langgraph",
                "langgraph-prebuilt",
                "langchain-core",
                "langgraph-checkpoint-postgres",
            )
        },
    }


def print_header(title: str, info: dict[str, Any], argv: list[str] | None = None) -> None:
    print(f"# {title}")
    print(f"date:     {info['date']}")
    print(f"machine:  {info['cpu_count']} CPUs ({info['cpu_model']}), {info['platform']}")
    print(f"python:   {info['python']}")
    print("packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()))
    cmd = argv if argv is not None else sys.argv
    print("command:  python " + " ".join(cmd))
    print()


def _fmt(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _fmt_stats(row: Row, impl: str) -> str:
    if impl in row.errors:
        return "FAILED"
    s = row.stats.get(impl)
    if s is None:
        return "-"
    return f"{_fmt(s.median)} ({_fmt(s.min)}–{_fmt(s.max)})"


def print_table(rows: list[Row]) -> None:
    """Per workload: ironloop and LangGraph median (min–max), the ratio, the target,
    PASS/MISS; with the floor median (min–max) and ironloop ÷ floor when a row has one."""
    floors = any(r.floor is not None for r in rows)
    header = [
        "workload",
        "unit",
        "ironloop median (min–max)",
        "langgraph median (min–max)",
        "LG/ironloop",
    ]
    if floors:
        header += ["floor median (min–max)", "ironloop/floor"]
    header += ["target", "verdict"]
    table = [header]
    for r in rows:
        ratio = r.ratio
        line = [
            r.workload,
            r.unit,
            _fmt_stats(r, "ironloop"),
            _fmt_stats(r, "langgraph"),
            "-" if ratio is None else f"{ratio:.1f}×",
        ]
        if floors:
            f, over = r.floor, r.over_floor
            line.append("-" if f is None else f"{_fmt(f.median)} ({_fmt(f.min)}–{_fmt(f.max)})")
            line.append("-" if over is None else f"{over:.2f}×")
        table.append([*line, r.target_text, r.verdict])
    for r in rows:
        print(f"{r.workload}: {r.what}")
        if r.floor_what:
            print(f"    floor: {r.floor_what}")
    print()
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for n, line in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        for impl, err in r.errors.items():
            print(f"{r.workload} {impl}: FAILED: {err}")


def add_json_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", metavar="PATH", default=None, help="also write the results as JSON to PATH"
    )


def dump_json(path: str | None, info: dict[str, Any], rows: list[Row], **extra: Any) -> None:
    """Write machine info, the run's parameters (``extra``) and every row to ``path``."""
    if not path:
        return
    payload = {
        **info,
        **extra,
        "results": [
            {
                "workload": r.workload,
                "what": r.what,
                "unit": r.unit,
                "target": None if r.target == float("inf") else r.target,
                "min_ratio": r.min_ratio,
                "ratio_langgraph_over_ironloop": r.ratio,
                "floor": None if r.floor is None else asdict(r.floor),
                "floor_what": r.floor_what or None,
                "ratio_ironloop_over_floor": r.over_floor,
                "max_over_floor": r.max_over_floor,
                "verdict": r.verdict,
                "stats": {k: asdict(v) for k, v in r.stats.items()},
                "errors": r.errors,
            }
            for r in rows
        ],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"\nresults written to {path}")
