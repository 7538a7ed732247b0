"""Several worker processes on one PostgreSQL: one is killed mid-run, another continues
its thread from the last step it saved.

    python examples/postgres_workers.py [POSTGRES_URL] [--workers N] [--schema NAME]

The URL comes from the argument or from ``DATABASE_URL`` (``source scripts/postgres.sh``
starts a throwaway server and sets ``IRONLOOP_TEST_POSTGRES_URL``, which works too). No
model and no API key: the nodes are plain functions that sleep as a model call would.

What happens:

1. ``N`` worker processes start; worker ``i`` runs thread ``job-i`` through four steps
   (``plan -> research -> draft -> review``), each node recording which worker ran it.
2. While ``worker-2`` is inside ``draft``, this script SIGKILLs it. ``job-2`` is now a
   *stalled* thread: its latest checkpoint has a task to run and nothing saves it.
3. Workers that are done with their own thread poll ``saver.claim_stalled(...)``. Once
   ``job-2`` has been idle for ``STALE_AFTER`` seconds one of them claims it (atomically:
   never two) and continues it with ``invoke(None, config)``: ``plan`` and ``research``
   are not run again, ``draft`` runs again because it never finished.
4. The script prints who ran each step of each thread.
"""

from __future__ import annotations

import argparse
import itertools
import operator
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import Annotated, Any, TypedDict

from ironloop import END, START, PostgresSaver, StateGraph

STEPS = ["plan", "research", "draft", "review"]
STEP_SECONDS = 0.4  # what a model call might take
STALE_AFTER = 2.0  # longer than any step: a live run saves a checkpoint at every step


class Job(TypedDict):
    topic: str
    done_by: Annotated[list[str], operator.add]


def build(saver: PostgresSaver, worker: str) -> Any:
    def step(name: str) -> Any:
        def run(state: Job, config: Any) -> dict[str, Any]:
            thread = config["configurable"]["thread_id"]
            print(f"[{worker}] {thread}: {name} ...", flush=True)
            time.sleep(STEP_SECONDS)
            return {"done_by": [f"{name}@{worker}"]}

        return run

    g: StateGraph[Job] = StateGraph(Job)
    for name in STEPS:
        g.add_node(name, step(name))
    g.add_edge(START, STEPS[0])
    for a, b in itertools.pairwise(STEPS):
        g.add_edge(a, b)
    g.add_edge(STEPS[-1], END)
    return g.compile(checkpointer=saver)


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def worker(url: str, schema: str, name: str, mine: str, threads: list[str]) -> None:
    """Runs its own thread, then continues stalled threads until every thread is done."""
    with PostgresSaver(url, schema=schema) as saver:
        app = build(saver, name)
        app.invoke({"topic": f"topic of {mine}", "done_by": []}, cfg(mine))
        print(f"[{name}] {mine}: finished", flush=True)
        while any(app.get_state(cfg(t)).next for t in threads):
            for thread in saver.claim_stalled(name, stale_after=STALE_AFTER):
                step = app.get_state(cfg(thread)).next[0]
                print(
                    f"[{name}] claimed {thread}: it stalled (its worker stopped mid-step); "
                    f"continuing at {step!r}",
                    flush=True,
                )
                app.invoke(None, cfg(thread))
                print(f"[{name}] {thread}: finished", flush=True)
            time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", help="postgresql://user:password@host:port/db")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--schema", default="ironloop_example")
    parser.add_argument("--worker", nargs=2, metavar=("NAME", "THREAD"), help=argparse.SUPPRESS)
    parser.add_argument("--threads", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = args.url or os.environ.get("DATABASE_URL") or os.environ.get("IRONLOOP_TEST_POSTGRES_URL")
    if not url:
        parser.error("give the server's URL (or set DATABASE_URL)")
    if args.worker:
        worker(url, args.schema, args.worker[0], args.worker[1], args.threads.split(","))
        return 0
    if args.workers < 2:
        parser.error("--workers must be at least 2 (one is killed)")

    with PostgresSaver(url, schema=args.schema) as saver:
        saver.setup()
    run = uuid.uuid4().hex[:6]  # this run's threads are new
    jobs = {f"worker-{i}": f"job-{i}-{run}" for i in range(1, args.workers + 1)}
    print(f"{args.workers} workers on {saver.server}, schema {args.schema!r}", flush=True)

    victim, victim_job = "worker-2", jobs["worker-2"]
    in_draft = threading.Event()
    procs = {}
    for name, job in jobs.items():
        cmd = [sys.executable, __file__, url, "--schema", args.schema]
        cmd += ["--worker", name, job, "--threads", ",".join(jobs.values())]
        procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)

    def relay(name: str, p: subprocess.Popen[str]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            print(line, end="", flush=True)
            if line.startswith(f"[{victim}] {victim_job}: draft"):
                in_draft.set()

    readers = [threading.Thread(target=relay, args=i) for i in procs.items()]
    for r in readers:
        r.start()
    if not in_draft.wait(60):
        print("worker-2 never reached 'draft'", file=sys.stderr)
        return 1
    time.sleep(STEP_SECONDS / 2)
    procs[victim].send_signal(signal.SIGKILL)
    procs[victim].wait()
    print(f"*** killed {victim} (SIGKILL) in the middle of {victim_job}'s 'draft' step", flush=True)

    status = 0
    for name, p in procs.items():
        if name != victim and p.wait(timeout=120) != 0:
            print(f"{name} failed", file=sys.stderr)
            status = 1
    for r in readers:
        r.join()

    print("\nwho ran each step:")
    with PostgresSaver(url, schema=args.schema) as saver:
        app = build(saver, "report")
        for job in jobs.values():
            state = app.get_state(cfg(job))
            done = "done" if not state.next else f"NOT DONE (next: {state.next})"
            print(f"  {job}: {' '.join(state.values['done_by'])}  [{done}]")
            if state.next:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
