"""A worker of the fleet in ``test_fleet.py``: it takes jobs from a shared directory and
resumes stalled threads it claims from the saver.

Usage::

    python fleet_worker.py ROOT SAVER NAME THREADS STALE_AFTER

``SAVER`` is ``sqlite:PATH`` or ``postgres:SCHEMA:URL``. The process runs ``THREADS``
Python threads, each a worker named ``NAME-<i>``, all on one saver, prints ``READY`` and
works until ``ROOT/stop`` exists.

The jobs (one file per job; taking one is an atomic ``os.rename``)::

    ROOT/todo/<thread>.start            run the thread from its input
    ROOT/todo/<thread>.resume.<pauser>  answer its interrupt; never taken by <pauser>
    ROOT/taken/<job>.<worker>           a job being run by <worker>
    ROOT/done/<thread>                  finished

A worker with no job to take claims a stalled thread (``claim_stalled``: a run whose
worker was killed mid-step) and continues it with ``invoke(None, config)``. A job ends
by renaming its ``taken`` file: to ``done/<thread>``, or to a resume job naming this
worker when the run paused on ``interrupt()`` (so another worker answers it). The
test moves a killed worker's ``taken`` files back (see ``test_fleet.recover``).

Every node's side effect is one line ``<thread> <node> <token> <worker>`` appended to
``ROOT/effects.log`` (one ``write`` on an ``O_APPEND`` fd) with a fresh token, which it
also adds to the state's ``ran`` list, so the test can tell which execution of a node
was the one the thread kept.
"""

from __future__ import annotations

import itertools
import operator
import os
import random
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pg_support import url_named

from ironloop import END, START, PostgresSaver, SqliteSaver, StateGraph
from ironloop.types import Command, interrupt

# The nodes in order; "ask" pauses on interrupt() and takes the answer.
BEFORE = ["s1", "s2"]
AFTER = ["s3", "s4"]
NODES = [*BEFORE, "ask", *AFTER]
NAP = 0.004  # each node sleeps uniform(0, NAP) before and after its side effect


class State(TypedDict):
    tid: str
    n: int
    ran: Annotated[list, operator.add]
    answer: Any


def effect(root: Path | None, tid: str, node: str, worker: str) -> str:
    """The node's side effect (none when ``root`` is None); returns its token."""
    token = uuid.uuid4().hex[:12]
    if root is None:
        return token
    fd = os.open(root / "effects.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{tid} {node} {token} {worker}\n".encode())
    finally:
        os.close(fd)
    return token


def build_graph(saver: Any, root: Path | None) -> Any:
    def step(node: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            time.sleep(random.uniform(0, NAP))
            token = effect(root, state["tid"], node, threading.current_thread().name)
            time.sleep(random.uniform(0, NAP))
            return {"n": state["n"] + 1, "ran": [f"{node}:{token}"]}

        return run

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt({"question": "go on?", "thread": state["tid"]})
        time.sleep(random.uniform(0, NAP))
        token = effect(root, state["tid"], "ask", threading.current_thread().name)
        return {"answer": answer, "ran": [f"ask:{token}"]}

    g = StateGraph(State)
    for node in [*BEFORE, *AFTER]:
        g.add_node(node, step(node))
    g.add_node("ask", ask)
    g.add_edge(START, NODES[0])
    for a, b in itertools.pairwise(NODES):
        g.add_edge(a, b)
    g.add_edge(NODES[-1], END)
    return g.compile(checkpointer=saver)


def app_name(process: str) -> str:
    """The ``application_name`` of worker process ``process``'s PostgreSQL connections
    (how the test tells when the server is done with a killed worker's statements)."""
    return f"ironloop-fleet-{process}"


def open_saver(spec: str, process: str) -> Any:
    kind, _, rest = spec.partition(":")
    if kind == "sqlite":
        return SqliteSaver(rest)
    schema, _, url = rest.partition(":")
    return PostgresSaver(url_named(app_name(process), url), schema=schema, pool_size=4)


def cfg(tid: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def take_job(root: Path, me: str) -> tuple[str, str, str, Path] | None:
    """A job from ``todo`` (thread, kind, pauser, taken path), or None."""
    names = os.listdir(root / "todo")
    random.shuffle(names)
    for name in names:
        tid, kind, *rest = name.split(".")
        pauser = rest[0] if rest else ""
        if pauser == me:
            continue  # a thread this worker paused is answered by another one
        taken = root / "taken" / f"{name}.{me}"
        try:
            os.rename(root / "todo" / name, taken)
        except FileNotFoundError:
            continue  # another worker took it
        return tid, kind, pauser, taken
    return None


def finish(root: Path, tid: str, out: dict[str, Any], taken: Path, me: str) -> None:
    if "__interrupt__" in out:
        os.rename(taken, root / "todo" / f"{tid}.resume.{me}")
    else:
        os.rename(taken, root / "done" / tid)


def work(root: Path, app: Any, saver: Any, me: str, stale_after: float) -> None:
    threading.current_thread().name = me
    while not (root / "stop").exists():
        job = take_job(root, me)
        if job is not None:
            tid, kind, pauser, taken = job
            if kind == "start":
                out = app.invoke({"tid": tid, "n": 0, "ran": [], "answer": None}, cfg(tid))
            else:
                answer = {"paused_by": pauser, "sent_by": me}
                out = app.invoke(Command(resume=answer), cfg(tid))
            finish(root, tid, out, taken, me)
            continue
        claimed = saver.claim_stalled(me, stale_after=stale_after, limit=1)
        if not claimed:
            time.sleep(0.02)
            continue
        tid = claimed[0]
        taken = root / "taken" / f"{tid}.stalled.{me}"
        taken.touch()
        with open(root / "claims.log", "a") as log:
            log.write(f"{tid}\n")
        out = app.invoke(None, cfg(tid))
        finish(root, tid, out, taken, me)


def main() -> None:
    root, spec, name, threads, stale = sys.argv[1:6]
    rootp = Path(root)
    saver = open_saver(spec, name)
    app = build_graph(saver, rootp)

    def run(me: str) -> None:
        try:
            work(rootp, app, saver, me, float(stale))
        except BaseException:
            # Any error (a conflict: two runs on one thread) ends the whole process,
            # which the test sees.
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(3)

    pool = [
        threading.Thread(target=run, args=(f"{name}-{i}",), daemon=True)
        for i in range(int(threads))
    ]
    for t in pool:
        t.start()
    print("READY", flush=True)
    for t in pool:
        t.join()


if __name__ == "__main__":
    main()
