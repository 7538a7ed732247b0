"""Child program for ``test_crash.py``: one durable graph run that may be SIGKILLed.

Usage::

    python crash_child.py DBPATH LOGPATH THREAD [SEED]

Builds the graph of :func:`build_graph` with a ``SqliteSaver`` on ``DBPATH`` and runs
thread ``THREAD`` to the end:

* no checkpoint yet           -> ``invoke(INITIAL, cfg)``
* a checkpoint with ``next``  -> ``invoke(None, cfg)`` (resume after a crash)
* a finished checkpoint       -> nothing to run (killed after the last save)

then prints ``RESULT <final state as JSON>`` and exits 0. It prints ``READY`` once the
saver is open and the graph compiled, so the parent can time its kill from there.

Every node performs a *side effect*: it appends one line ``<key> pid=<pid>`` to
``LOGPATH`` (``O_APPEND``, one ``write``, ``fsync``), where ``<key>`` names the logical
execution (``node:counter`` or ``worker:counter:i``; ``counter`` grows by one per loop
iteration, so a key is unique in an uninterrupted run). The same key is also added to
the state's ``ran`` list (an ``operator.add`` channel), so the test can tell which
executions are committed. Each node sleeps a random few milliseconds before and after
its effect so that kills land before the effect, between the effect and the save, and
during the engine's own work.

The graph (``counter`` counts loop iterations; the run ends after ``ITERATIONS``)::

    START -> head --(counter % 4 == 1)--> solo ------------------------------> head
                  --(counter % 4 == 2)--> [a, b, c] in parallel -> join (a,b,c) -> head
                  --(counter % 4 == 3)--> Send("worker", i) x 2..3 -> gather ---> head
                  --(counter % 4 == 0)--> fork -> [p, q] (static edges) --------> head
                  --(counter > ITERATIONS)--> END

About 40 super-steps; every other step or so has 2-3 tasks running concurrently.
"""

from __future__ import annotations

import json
import operator
import os
import random
import sys
import time
from typing import Annotated, Any, TypedDict

from ironloop import END, START, Send, SqliteSaver, StateGraph

ITERATIONS = 14
INITIAL: dict[str, Any] = {"counter": 0, "ran": [], "total": 0}
# Each node sleeps uniform(0, NAP) seconds before its effect and again after it.
NAP = 0.020


class State(TypedDict):
    counter: int
    ran: Annotated[list, operator.add]
    total: Annotated[int, operator.add]


class _Effects:
    """The side-effect log: one durable append per node execution."""

    def __init__(self, path: str, seed: int | None) -> None:
        self.path = path
        self.rng = random.Random(seed)

    def nap(self) -> None:
        time.sleep(self.rng.uniform(0.0, NAP))

    def effect(self, key: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{key} pid={os.getpid()}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def run(self, key: str) -> None:
        self.nap()  # a kill here: the effect has not happened
        self.effect(key)
        self.nap()  # a kill here: effect done, result not saved (may legitimately redo)


def build_graph(saver: Any, log_path: str | None = None, seed: int | None = None) -> Any:
    """The test graph compiled with ``saver``. With ``log_path=None`` the nodes do no
    effects and do not sleep (for reading state only)."""
    fx = _Effects(log_path, seed) if log_path else None

    def step(key: str) -> None:
        if fx is not None:
            fx.run(key)

    def head(state: State) -> dict[str, Any]:
        c = state["counter"] + 1
        step(f"head:{c}")
        return {"counter": c, "ran": [f"head:{c}"]}

    def route(state: State) -> Any:
        c = state["counter"]
        if c > ITERATIONS:
            return END
        mode = c % 4
        if mode == 1:
            return "solo"
        if mode == 2:
            return ["a", "b", "c"]
        if mode == 3:
            n = 2 + (c // 4) % 2
            return [Send("worker", {"counter": c, "i": i}) for i in range(n)]
        return "fork"

    def plain(name: str, total: int = 0) -> Any:
        def node(state: State) -> dict[str, Any]:
            key = f"{name}:{state['counter']}"
            step(key)
            return {"ran": [key], "total": total}

        node.__name__ = name
        return node

    def worker(arg: dict[str, Any]) -> dict[str, Any]:
        key = f"worker:{arg['counter']}:{arg['i']}"
        step(key)
        return {"ran": [key], "total": 100 * arg["counter"] + arg["i"]}

    g = StateGraph(State)
    g.add_node("head", head)
    g.add_node("solo", plain("solo", 1))
    for name, t in (("a", 2), ("b", 3), ("c", 4), ("join", 5), ("gather", 6), ("fork", 7)):
        g.add_node(name, plain(name, t))
    g.add_node("p", plain("p", 8))
    g.add_node("q", plain("q", 9))
    g.add_node("worker", worker)
    g.add_edge(START, "head")
    g.add_conditional_edges("head", route)
    g.add_edge("solo", "head")
    g.add_edge(["a", "b", "c"], "join")
    g.add_edge("join", "head")
    g.add_edge("worker", "gather")
    g.add_edge("gather", "head")
    g.add_edge("fork", "p")
    g.add_edge("fork", "q")
    g.add_edge("p", "head")
    g.add_edge("q", "head")
    return g.compile(checkpointer=saver)


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 500}


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    db, log, thread = argv[1:4]
    seed = int(argv[4]) if len(argv) == 5 else None
    saver = SqliteSaver(db)
    graph = build_graph(saver, log, seed)
    cfg = config(thread)
    print("READY", flush=True)
    snap = graph.get_state(cfg)
    if snap.next:
        out = graph.invoke(None, cfg)
    elif "checkpoint_id" in snap.config["configurable"]:
        out = dict(snap.values)  # finished before the previous run was killed
    else:
        out = graph.invoke(INITIAL, cfg)
    print("RESULT " + json.dumps(out, sort_keys=True), flush=True)
    saver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
