"""Many workers on one store, SIGKILLed at random: nothing lost, mixed or done twice.

A fleet of worker processes (``fleet_worker.py``) shares one saver and a job directory.
Every thread runs ``s1 -> s2 -> ask -> s3 -> s4``: ``ask`` pauses on ``interrupt()``, and
the worker that paused a thread leaves a resume job that only *another* worker takes.
Meanwhile the test SIGKILLs a random worker process every ``KILL_EVERY`` seconds and
starts a new one; a killed worker's threads come back two ways:

* a thread killed mid-step is **stalled**: once ``stale_after`` passes, a worker with
  nothing else to do claims it (``claim_stalled``) and continues it with
  ``invoke(None, config)``;
* the killed worker's job files are sorted out by :func:`recover`, once nothing of the
  killed process can still change the store (on PostgreSQL: once the server has ended
  its connections, see :func:`settle`): a thread with no checkpoint yet is started
  again, a thread paused on its interrupt gets its resume job back, a finished one is
  marked done, and a stalled one is left to the claimers.

Then, for every thread:

1. the final state is the reference one (the nodes' results in order, the answer sent
   by a worker other than the one that paused the thread);
2. its history is one linear chain (each checkpoint's parent is the one before it) with
   the reference's steps and ``next`` tasks: nothing lost, mixed or forked;
3. no completed node's side effect happened twice: the execution the thread kept (its
   token in ``ran``) logged its effect exactly once, and no execution of that node
   logged one after it. (An execution killed after its effect and before its save may
   log one *before*: that is the at-least-once window a crash leaves, and its token is
   not in the state.)

Variants: Postgres (4 processes, 200 threads, >= 20 kills), one SQLite file shared by 4
processes, and one SQLite file used by 100 Python threads in one process (killing the
process kills them all at once).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_support import admin, postgres_url, sessions, temp_schema, wait_sessions_gone

from ironloop import MemorySaver, PostgresSaver, SqliteSaver
from ironloop.types import Command

sys.path.insert(0, str(Path(__file__).resolve().parent))
import itertools

from fleet_worker import NODES, app_name, build_graph, cfg

WORKER = str(Path(__file__).resolve().parent / "fleet_worker.py")
SEED = int(os.environ.get("IRONLOOP_FLEET_SEED") or random.SystemRandom().randrange(2**31))


@dataclass
class Fleet:
    root: Path
    spec: str  # the workers' SAVER argument
    saver: Any  # the test's own saver on the same store
    processes: int
    threads: int  # Python threads (workers) per process
    # How long a thread must be idle to be claimed: longer than any step takes, waits
    # for the GIL and the store included (100 threads in one process on 2 cores wait).
    stale_after: float = 1.0

    def __post_init__(self) -> None:
        for d in ("todo", "taken", "done"):
            (self.root / d).mkdir(parents=True)
        self.app = build_graph(self.saver, self.root)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.generation = 0
        self.kills = 0

    def start(self, slot: int) -> None:
        self.generation += 1
        name = f"w{slot}g{self.generation}"
        args = [str(self.root), self.spec, name, str(self.threads), str(self.stale_after)]
        with open(self.root / f"{name}.err", "w") as err:
            p = subprocess.Popen(
                [sys.executable, WORKER, *args], stdout=subprocess.DEVNULL, stderr=err
            )
        self.procs[name] = p

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                err = (self.root / f"{name}.err").read_text()
                pytest.fail(f"worker {name} exited with {p.returncode} (seed {SEED}):\n{err}")

    def kill_one(self, rng: random.Random) -> None:
        name = rng.choice(sorted(self.procs))
        p = self.procs.pop(name)
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.kills += 1
        recover(self, name)
        self.start(int(name[1 : name.index("g")]))

    def stop(self) -> None:
        (self.root / "stop").touch()
        for p in self.procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def done(self) -> int:
        return len(os.listdir(self.root / "done"))


def settle(fleet: Fleet, process: str) -> None:
    """Waits until the killed ``process`` can no longer change the store.

    SQLite: at once (its writes were made by the process itself, now dead). PostgreSQL:
    the server runs, and commits, the statements it had received from a client that
    then died: a worker killed just after sending its input checkpoint's ``put_next``
    can have that checkpoint appear *after* it was reaped. Had :func:`recover` read the
    thread before that, it would give the start job again, and the thread would get a
    second input checkpoint (the history's extra ``__start__`` of seeds 936790520,
    748961639 and 1665782136). So it waits for the server to end the process's
    connections (its ``application_name``, see ``fleet_worker.app_name``)."""
    if fleet.spec.startswith("postgres:"):
        wait_sessions_gone(app_name(process))


def recover(fleet: Fleet, process: str) -> None:
    """Puts back the jobs the killed process's workers had taken (see the module doc)."""
    settle(fleet, process)
    for name in os.listdir(fleet.root / "taken"):
        tid, kind, *rest = name.split(".")
        worker = rest[-1]
        if not worker.startswith(f"{process}-"):
            continue
        taken = fleet.root / "taken" / name
        state = fleet.app.get_state(cfg(tid))
        if state.created_at is None:
            # No checkpoint yet (an input checkpoint's values are empty: that one is
            # stalled, and a claimer continues it).
            os.rename(taken, fleet.root / "todo" / f"{tid}.start")
        elif not state.next:
            os.rename(taken, fleet.root / "done" / tid)
        elif state.interrupts and not answered(fleet, tid):
            # Still waiting for its answer: the resume job again, for another worker
            # than the one that paused it. (get_state lists an interrupt whose answer
            # was saved too, as LangGraph does; such a thread is stalled, not waiting.)
            pauser = rest[0] if kind == "resume" else worker
            os.rename(taken, fleet.root / "todo" / f"{tid}.resume.{pauser}")
        else:
            taken.unlink()  # stalled: a claimer continues it


def answered(fleet: Fleet, tid: str) -> bool:
    """Whether the answer to the thread's interrupt was saved (its ``__resume__`` pending
    write), read from the store's tables as ``src/checkpoint/{postgres,sqlite}.rs``
    document them: the public API does not say which interrupts were answered."""
    kind, _, rest = fleet.spec.partition(":")
    if kind == "sqlite":
        # In another process: a second SQLite library in this one (Python's, beside
        # ironloop's) would drop the saver's file locks when it closes (POSIX locks
        # are per process), which can corrupt the file.
        query = (
            "import sqlite3, sys, json; c = sqlite3.connect(sys.argv[1]); print(json.dumps("
            "c.execute('SELECT channel FROM writes WHERE thread_id = ?1 AND checkpoint_id = "
            "(SELECT c.checkpoint_id FROM threads t JOIN checkpoints c "
            "ON c.seq > t.no << 32 AND c.seq < (t.no + 1) << 32 WHERE t.thread_id = ?1 "
            "ORDER BY c.seq DESC LIMIT 1)', (sys.argv[2],)).fetchall()))"
        )
        out = subprocess.run(
            [sys.executable, "-c", query, rest, tid], capture_output=True, text=True, check=True
        )
        rows = json.loads(out.stdout)
    else:
        schema = rest.partition(":")[0]
        with admin() as c:
            rows = c.execute(
                f'SELECT w.channel FROM "{schema}".ironloop_writes w '
                f'JOIN "{schema}".ironloop_threads t ON t.thread_id = w.thread_id '
                "AND t.latest_id = w.checkpoint_id WHERE w.thread_id = %s",
                (tid,),
            ).fetchall()
    return ("__resume__",) in [tuple(r) for r in rows]


def reference() -> tuple[list[tuple[int, tuple[str, ...]]], dict[str, Any]]:
    """One uninterrupted run: the history's (step, next) oldest first, and the state."""
    app = build_graph(MemorySaver(), None)
    app.invoke({"tid": "ref", "n": 0, "ran": [], "answer": None}, cfg("ref"))
    app.invoke(Command(resume={"paused_by": "a", "sent_by": "b"}), cfg("ref"))
    hist = list(app.get_state_history(cfg("ref")))[::-1]
    return [(s.metadata["step"], s.next) for s in hist], app.get_state(cfg("ref")).values


def run_fleet(fleet: Fleet, n_threads: int, kills: int) -> None:
    """Runs the fleet until every thread is done, killing a random worker process
    ``kills`` times, spread over the work: the k-th kill once about k/(kills+1) of the
    threads are done, after a random delay."""
    rng = random.Random(SEED)
    for i in range(n_threads):
        (fleet.root / "todo" / f"t{i:03d}.start").touch()
    for slot in range(fleet.processes):
        fleet.start(slot)
    deadline = time.monotonic() + 150
    next_kill = time.monotonic() + rng.uniform(0.05, 0.3)
    try:
        # The kills that waiting for a killed worker's connections (``settle``) let fall
        # behind the work still happen, on idle workers, once every thread is done.
        while fleet.done() < n_threads or fleet.kills < kills:
            assert time.monotonic() < deadline, (
                f"the fleet did not finish: {fleet.done()}/{n_threads} done after "
                f"{fleet.kills} kills (seed {SEED})"
            )
            fleet.check_alive()
            due = fleet.done() >= n_threads * fleet.kills // (kills + 1)
            if fleet.kills < kills and due and time.monotonic() >= next_kill:
                fleet.kill_one(rng)
                next_kill = time.monotonic() + rng.uniform(0.02, 0.15)
            time.sleep(0.005)
    finally:
        fleet.stop()
    assert fleet.kills == kills, f"{fleet.kills} kills, not {kills} (seed {SEED})"
    check(fleet, n_threads)


def check(fleet: Fleet, n_threads: int) -> None:
    # Threads killed mid-step were continued by other workers through claim_stalled.
    claims = (
        (fleet.root / "claims.log").read_text().split()
        if (fleet.root / "claims.log").exists()
        else []
    )
    assert claims, f"no stalled thread was claimed over {fleet.kills} kills (seed {SEED})"
    ref_steps, ref_state = reference()
    effects: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in (fleet.root / "effects.log").read_text().splitlines():
        tid, node, token, _worker = line.split(" ")
        effects[(tid, node)].append(token)
    for i in range(n_threads):
        tid = f"t{i:03d}"
        where = f"thread {tid} (seed {SEED})"
        state = fleet.app.get_state(cfg(tid))
        v = state.values
        # 1. The reference final state.
        assert not state.next, where
        assert [r.split(":")[0] for r in v["ran"]] == NODES, (where, v)
        assert v["n"] == ref_state["n"] == len(NODES) - 1, (where, v)
        answer = v["answer"]
        assert answer["paused_by"] and answer["sent_by"], (where, answer)
        assert answer["paused_by"] != answer["sent_by"], (where, answer)
        # 2. One linear chain with the reference's steps.
        hist = list(fleet.app.get_state_history(cfg(tid)))
        assert [(s.metadata["step"], s.next) for s in hist[::-1]] == ref_steps, where
        for newer, older in itertools.pairwise(hist):
            assert newer.parent_config is not None, where
            parent = newer.parent_config["configurable"]["checkpoint_id"]
            assert parent == older.config["configurable"]["checkpoint_id"], where
        assert hist[-1].parent_config is None, where
        # 3. No completed node's side effect twice.
        for entry in v["ran"]:
            node, token = entry.split(":")
            logged = effects[(tid, node)]
            assert logged.count(token) == 1, (where, node, logged)
            assert logged[-1] == token, (
                f"{where}: {node} ran again after its result was saved: {logged}"
            )


# ------------------------------------------------------------------------------ tests


@pytest.mark.watchdog(180)
def test_postgres_fleet_of_4_processes_200_threads_with_kills(tmp_path: Path) -> None:
    url = postgres_url()
    with temp_schema() as schema:
        with PostgresSaver(url, schema=schema) as saver:
            saver.setup()
            fleet = Fleet(tmp_path, f"postgres:{schema}:{url}", saver, processes=4, threads=1)
            run_fleet(fleet, n_threads=200, kills=24)
            assert saver.list_stalled(stale_after=0.001) == []


def test_a_killed_workers_input_checkpoint_committed_after_its_death_is_not_started_again(
    tmp_path: Path,
) -> None:
    """The fleet's race, made deterministic: the server commits a killed worker's
    first save (its input checkpoint, with the first step's) after the worker was
    reaped. A lock holds that statement until the worker is dead and :func:`recover`
    has started; without
    :func:`settle`, recover reads "no checkpoint" and gives the start job again (and the
    thread gets a second input checkpoint). Then the fleet finishes the thread, which
    must have the reference's history.

    The hold is a row of the thread in the threads table, inserted by a transaction
    left open and then rolled back: the worker's first save (an insert of that row)
    waits for it at execution, with its statement sent whole (a table lock would stop
    it earlier, while it is prepared, before it is sent)."""
    url = postgres_url()
    with temp_schema() as schema, PostgresSaver(url, schema=schema) as saver:
        saver.setup()
        fleet = Fleet(tmp_path, f"postgres:{schema}:{url}", saver, processes=2, threads=1)
        (fleet.root / "todo" / "t000.start").touch()
        with admin() as lock, lock.transaction():
            lock.execute(
                f'INSERT INTO "{schema}".ironloop_threads (thread_id, latest_id) '
                "VALUES ('t000', 'held')"
            )
            fleet.start(0)
            worker = next(iter(fleet.procs))
            deadline = time.monotonic() + 30
            while sessions(app_name(worker), waiting_on_lock=True) == 0:
                fleet.check_alive()
                assert time.monotonic() < deadline, "the worker never reached its put_next"
                time.sleep(0.01)
            p = fleet.procs.pop(worker)
            p.send_signal(signal.SIGKILL)
            p.wait()
            assert fleet.app.get_state(cfg("t000")).created_at is None
            recovering = threading.Thread(target=recover, args=(fleet, worker))
            recovering.start()
            # Recover has read the store, or waits for the server: either way before
            # the statement can commit (the lock is released below).
            recovering.join(timeout=1.0)
            raise psycopg.Rollback()  # the hold goes: the statement runs and commits
        recovering.join()
        assert not (fleet.root / "todo" / "t000.start").exists(), (
            "recover gave the start job again although the killed worker's input "
            "checkpoint was still to commit"
        )
        # The killed worker's first save: its input checkpoint and the first step's,
        # one transaction (durability "sync").
        history = [s.next for s in fleet.app.get_state_history(cfg("t000"))]
        assert history == [("s1",), ("__start__",)], "the killed worker's first save"
        fleet.start(0)
        fleet.start(1)
        deadline = time.monotonic() + 60
        try:
            while fleet.done() < 1:
                fleet.check_alive()
                assert time.monotonic() < deadline, "the thread was not finished"
                time.sleep(0.01)
        finally:
            fleet.stop()
        check(fleet, 1)


@pytest.mark.watchdog(180)
def test_sqlite_fleet_of_4_processes_on_one_file_with_kills(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    with SqliteSaver(db) as saver:
        fleet = Fleet(tmp_path / "jobs", f"sqlite:{db}", saver, processes=4, threads=1)
        run_fleet(fleet, n_threads=120, kills=10)
        assert saver.list_stalled(stale_after=0.001) == []


@pytest.mark.watchdog(180)
def test_sqlite_100_python_threads_in_one_process_with_kills(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    with SqliteSaver(db) as saver:
        fleet = Fleet(
            tmp_path / "jobs", f"sqlite:{db}", saver, processes=1, threads=100, stale_after=4.0
        )
        run_fleet(fleet, n_threads=200, kills=3)
        assert saver.list_stalled(stale_after=0.001) == []
