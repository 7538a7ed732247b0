"""Crash safety of durable runs ("nothing is lost": a durable run killed at any
instant resumes from its last completed step).

A child process (``crash_child.py``) runs a ~40-step graph with a ``SqliteSaver``; it
mixes single-node steps with steps of 2-3 concurrent tasks (a conditional fan-out joined
by ``add_edge([a, b, c], "join")``, ``Send`` fan-out gathered by an edge, and a static
fan-out). The test SIGKILLs it at random moments and restarts it (``invoke(None, cfg)``)
until a run exits 0, then checks the result against an uninterrupted reference run.

How a kill is placed: the child prints ``READY`` once its saver is open; the test then
waits ``uniform(20 ms, 300 ms)`` and sends ``SIGKILL`` (if the child has not finished by
then). Nodes sleep a random 0-20 ms before and after their side effect, so kills land
before an effect, between an effect and the save of the node's result, inside a step
whose other tasks already saved their writes, during the engine's own checkpoint work,
and during resume. Each round kills at least ``MIN_KILLS_PER_ROUND`` times (starting
another fresh thread/db if the first one finished sooner); ``ROUNDS`` rounds make at
least 24 kills over the suite.

Side effects and the rule checked
---------------------------------
Each node execution appends one line ``<key> pid=<pid>`` to a log (one ``write`` on an
``O_APPEND`` fd, then ``fsync``) and adds ``<key>`` to the state's ``ran`` list. A key
names a logical execution (``node:counter`` or ``worker:counter:i``), so an
uninterrupted run logs every key exactly once.

After every kill (the child is dead and reaped, nothing else touches the files) the test
records the log length ``L_k`` and the *committed* set ``C_k``: the keys in ``ran`` of
the thread's latest checkpoint (public ``get_state``) plus the keys in the saved pending
writes of tasks completed inside the unfinished step (rows of the ``writes`` table for
that checkpoint that have the ``__done__`` marker; these are the writes the engine
promises to reuse; the table layout is the one documented in ``src/checkpoint/sqlite.rs``,
read here because ``get_state().tasks`` does not carry finished tasks' results).

A node's side effect may legitimately happen twice only when the process was killed
after the effect and before the node's result was saved (at-least-once in that window).
So the test asserts:

1. **No completed node re-runs:** no key of ``C_k`` appears in the log after ``L_k``.
2. **No duplicate within one process:** a pid never logs the same key twice.
3. **Nothing is lost:** ``C_k`` is a subset of ``C_(k+1)`` and of the final ``ran``.
4. **Same result:** the final state equals the reference run's state exactly, and the
   set of logged keys equals the set of keys in the final ``ran``.

(1) and (2) together are exactly "a key appears again only after a kill at which it had
run but was not saved": if a key is logged at positions p1 < p2, p2 is in a later
process (2), so p1's process was killed at some ``k`` with ``p1 <= L_k < p2``, and
by (1) the key was not in ``C_k``.

Reproducing: every assertion message carries the seed and the base seed to rerun with
(``IRONLOOP_CRASH_SEED=<base>``; round ``r`` uses ``base + r``). The seed fixes the kill
delays and the nodes' sleeps, but where a kill lands also depends on scheduling, so a
rerun is close, not identical.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import crash_child

from ironloop import END, START, Send, SqliteSaver, StateGraph

CHILD = str(Path(__file__).resolve().parent / "crash_child.py")
BASE_SEED = int(os.environ.get("IRONLOOP_CRASH_SEED") or random.SystemRandom().randrange(2**31))
ROUNDS = 4
MIN_KILLS_PER_ROUND = 6
MAX_THREADS_PER_ROUND = 4
MAX_CYCLES_PER_THREAD = 80
KILL_DELAY = (0.020, 0.300)
READY_TIMEOUT = 15.0
FINISH_TIMEOUT = 30.0


def _repro(seed: int) -> str:
    return f"[seed={seed}; rerun with IRONLOOP_CRASH_SEED={BASE_SEED}]"


def _read_log(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        key, pid = line.rsplit(" pid=", 1)
        out.append((key, int(pid)))
    return out


def _committed(db: Path, thread: str) -> tuple[set[str], int]:
    """The keys whose node result is durably saved: those in the latest checkpoint's
    ``ran`` plus those in completed tasks' pending writes. Also returns how many
    completed tasks had pending writes (a step that was partly done)."""
    if not db.exists():
        return set(), 0
    saver = SqliteSaver(str(db))
    try:
        snap = crash_child.build_graph(saver).get_state(crash_child.config(thread))
    finally:
        saver.close()
    keys = set(snap.values.get("ran", []))
    cid = snap.config["configurable"].get("checkpoint_id")
    if cid is None:
        return keys, 0
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute(
            "SELECT task_id, channel, value FROM writes WHERE thread_id = ? AND checkpoint_id = ?",
            (thread, cid),
        ).fetchall()
    finally:
        conn.close()
    done = {t for t, ch, _ in rows if ch == "__done__"}
    for t, ch, v in rows:
        if t in done and ch == "ran":
            keys.update(json.loads(v))
    return keys, len(done)


@dataclass
class Kill:
    pid: int
    delay: float
    log_len: int
    committed: set[str]
    in_flight: set[str]  # effect logged, result not saved
    partial_tasks: int  # completed tasks of the unfinished step with saved writes


@dataclass
class ThreadRun:
    seed: int
    db: Path
    log: Path
    thread: str
    kills: list[Kill] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    final: dict[str, Any] | None = None

    def describe(self) -> str:
        lines = [f"{_repro(self.seed)} thread={self.thread} db={self.db}"]
        for i, k in enumerate(self.kills):
            lines.append(
                f"  kill {i}: pid={k.pid} after {k.delay * 1000:.0f} ms, log_len={k.log_len}, "
                f"committed={len(k.committed)}, in_flight={sorted(k.in_flight)}, "
                f"partial_tasks={k.partial_tasks}"
            )
        lines.append("  log:")
        lines += [f"    {n:3d} {key} pid={pid}" for n, (key, pid) in enumerate(_read_log(self.log))]
        lines.append(f"  final state: {self.final}")
        return "\n".join(lines)


def _spawn(run: ThreadRun, child_seed: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, CHILD, str(run.db), str(run.log), run.thread, str(child_seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(run.db.parent),
    )


def _wait_ready(proc: subprocess.Popen[bytes], run: ThreadRun) -> bytes:
    """Reads the child's stdout (unbuffered) up to its ``READY`` line; returns whatever
    it printed after that line."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + READY_TIMEOUT
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            break
        buf += chunk
    first, _, rest = buf.partition(b"\n")
    if first.strip() != b"READY":
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(
            f"child did not start (rc={proc.returncode}, first line {first!r}):\n"
            f"{(buf + out).decode(errors='replace')}\n{err.decode(errors='replace')}\n"
            + run.describe()
        )
    return rest


def _result(out: str) -> dict[str, Any]:
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]
    raise AssertionError(f"no RESULT line in the child's output:\n{out}")


def _run_with_kills(run: ThreadRun, rng: random.Random) -> None:
    """Starts the child, kills it after a random delay, and restarts it until a run
    finishes; records every kill."""
    for _cycle in range(MAX_CYCLES_PER_THREAD):
        proc = _spawn(run, rng.randrange(2**31))
        run.pids.append(proc.pid)
        try:
            head = _wait_ready(proc, run)
            delay = rng.uniform(*KILL_DELAY)
            try:
                raw_out, raw_err = proc.communicate(timeout=delay)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                raw_out, raw_err = proc.communicate()
            out = (head + raw_out).decode(errors="replace")
            err = raw_err.decode(errors="replace")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode == -signal.SIGKILL:
            effects = _read_log(run.log)
            committed, partial = _committed(run.db, run.thread)
            logged = {k for k, _ in effects}
            run.kills.append(
                Kill(proc.pid, delay, len(effects), committed, logged - committed, partial)
            )
            continue
        if proc.returncode != 0:
            pytest.fail(
                f"a resumed run failed (rc={proc.returncode}):\nstdout:\n{out}\nstderr:\n{err}\n"
                + run.describe()
            )
        run.final = _result(out)
        return
    pytest.fail(f"no run finished after {MAX_CYCLES_PER_THREAD} restarts\n" + run.describe())


def _check(run: ThreadRun, reference: dict[str, Any]) -> None:
    why = run.describe()
    effects = _read_log(run.log)
    assert {p for _, p in effects} <= set(run.pids), why

    # 2. no duplicate within one process
    per_pid = Counter(effects)
    dups = sorted(f"{k} (pid {p}) x{n}" for (k, p), n in per_pid.items() if n > 1)
    assert not dups, f"a process ran the same node execution twice: {dups}\n" + why

    # 1. no completed node re-runs
    for i, k in enumerate(run.kills):
        again = sorted({key for key, _ in effects[k.log_len :]} & k.committed)
        assert not again, (
            f"completed node(s) re-ran after kill {i} (their results were saved before the "
            f"kill, yet their side effects happened again): {again}\n" + why
        )

    # 3. nothing is lost
    final = set(reference["ran"])
    for i, (a, b) in enumerate(itertools.pairwise(run.kills)):
        lost = sorted(a.committed - b.committed)
        assert not lost, f"saved results disappeared between kill {i} and {i + 1}: {lost}\n" + why
    for i, k in enumerate(run.kills):
        extra = sorted(k.committed - final)
        assert not extra, f"kill {i}: committed keys not in the final state: {extra}\n" + why

    # 4. the same result as without crashes
    assert run.final == reference, "the resumed run's final state differs from the reference\n" + (
        f"expected: {reference}\n" + why
    )

    # 4. the effects are exactly the executions in the final state
    logged = {key for key, _ in effects}
    assert logged == final, (
        f"missing effects: {sorted(final - logged)}; unexpected effects: "
        f"{sorted(logged - final)}\n" + why
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The uninterrupted run's final state (child process, fresh db), cross-checked
    against the same graph run in memory without a checkpointer."""
    d = tmp_path_factory.mktemp("crash_reference")
    run = ThreadRun(BASE_SEED, d / "ref.sqlite", d / "ref.log", "reference")
    proc = _spawn(run, BASE_SEED)
    raw_out, raw_err = proc.communicate(timeout=FINISH_TIMEOUT)
    out, err = raw_out.decode(), raw_err.decode()
    assert proc.returncode == 0, f"reference run failed:\n{out}\n{err}"
    state = _result(out)
    in_memory = crash_child.build_graph(None).invoke(dict(crash_child.INITIAL))
    assert state == in_memory
    assert state["counter"] == crash_child.ITERATIONS + 1
    keys = [k for k, _ in _read_log(run.log)]
    assert sorted(keys) == sorted(state["ran"]) and len(set(keys)) == len(keys)
    return state


@pytest.mark.parametrize("round_no", range(ROUNDS))
def test_sigkill_at_random_points_resumes_to_same_state(
    round_no: int, reference: dict[str, Any], tmp_path: Path
) -> None:
    seed = BASE_SEED + round_no
    rng = random.Random(seed)
    started = time.monotonic()
    runs: list[ThreadRun] = []
    while sum(len(r.kills) for r in runs) < MIN_KILLS_PER_ROUND:
        assert len(runs) < MAX_THREADS_PER_ROUND, (
            f"{_repro(seed)} only {sum(len(r.kills) for r in runs)} kills in "
            f"{len(runs)} threads (the child finished before the kills landed)"
        )
        j = len(runs)
        run = ThreadRun(
            seed, tmp_path / f"t{j}.sqlite", tmp_path / f"t{j}.log", f"crash-{round_no}-{j}"
        )
        runs.append(run)
        _run_with_kills(run, rng)
        _check(run, reference)
    kills = [k for r in runs for k in r.kills]
    print(
        f"\nround {round_no} {_repro(seed)}: {len(runs)} thread(s), {len(kills)} kills, "
        f"{sum(1 for k in kills if k.in_flight)} between an effect and its save, "
        f"{sum(1 for k in kills if k.partial_tasks)} inside a partly saved step, "
        f"{sum(1 for k in kills if not k.committed)} before the first save; "
        f"{time.monotonic() - started:.1f} s"
    )
    assert len(kills) >= MIN_KILLS_PER_ROUND


# Deterministic companions: a step whose other tasks finished and saved their writes
# while one task died. A node raising stands in for the crash (the engine keeps the
# finished tasks' writes either way), so this path is hit every time, not only when a
# random kill lands there.


class _FanState(TypedDict):
    ran: Annotated[list, operator.add]


def _fanout_graph(kind: str, saver: Any, calls: Counter[str], fail: set[str]) -> Any:
    def node(name: str) -> Any:
        def fn(state: Any) -> dict[str, Any]:
            key = name if kind != "send" or name != "w" else f"w{state['i']}"
            calls[key] += 1
            if key in fail:
                fail.discard(key)
                raise RuntimeError(f"simulated crash in {key}")
            return {"ran": [key]}

        return fn

    g = StateGraph(_FanState)
    for n in ("a", "b", "c", "w", "merge", "after"):
        g.add_node(n, node(n))
    if kind == "join":
        g.add_edge(START, "a").add_edge(START, "b").add_edge(START, "c")
        g.add_edge(["a", "b", "c"], "merge")
    elif kind == "edges":
        g.add_edge(START, "a").add_edge(START, "b").add_edge(START, "c")
        for n in ("a", "b", "c"):
            g.add_edge(n, "merge")
    else:
        g.add_conditional_edges(START, lambda s: [Send("w", {"ran": [], "i": i}) for i in range(3)])
        g.add_edge("w", "merge")
    g.add_edge("merge", "after").add_edge("after", END)
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("kind", ["join", "edges", "send"])
def test_step_with_a_failed_task_resumes_without_rerunning_finished_ones(
    kind: str, tmp_path: Path
) -> None:
    calls: Counter[str] = Counter()
    failing = "w1" if kind == "send" else "b"
    ok = "w0" if kind == "send" else "a"
    saver = SqliteSaver(str(tmp_path / "cp.sqlite"))
    graph = _fanout_graph(kind, saver, calls, {failing})
    cfg = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="simulated crash"):
        graph.invoke({"ran": []}, cfg)
    assert graph.get_state(cfg).next, "the failed step should still be pending"
    out = graph.invoke(None, cfg)
    saver.close()

    expected = _fanout_graph(kind, None, Counter(), set()).invoke({"ran": []})
    assert out == expected, f"{kind}: resumed {out}, uninterrupted {expected}"
    assert calls[ok] == 1, f"{kind}: a task that finished before the failure ran again: {calls}"
    assert calls[failing] == 2, calls
    assert calls["merge"] == 1 and calls["after"] == 1, calls
