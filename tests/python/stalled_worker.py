"""A process for ``test_stalled.py``: runs threads into a node that never returns
(``stall``) to be SIGKILLed, or claims stalled threads and finishes them (``claim``).

    python stalled_worker.py stall SAVER DIR THREAD...
    python stalled_worker.py claim SAVER NAME STALE_AFTER

``SAVER`` is ``sqlite:PATH`` or ``postgres:SCHEMA:URL`` (as in ``fleet_worker.py``). In
``stall`` mode each thread's ``b`` node touches ``DIR/<thread>`` and sleeps; the test
kills the process once every thread is inside. In ``claim`` mode the process claims
stalled threads two at a time until none is left, resumes each with
``invoke(None, config)`` and prints the ids it claimed as JSON.
"""

from __future__ import annotations

import json
import operator
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from fleet_worker import cfg, open_saver

from ironloop import END, START, StateGraph
from ironloop.types import interrupt


class State(TypedDict):
    ask: bool
    log: Annotated[list, operator.add]


def build(saver: Any, stall_dir: Path | None = None) -> Any:
    def a(state: State) -> dict[str, Any]:
        return {"log": ["a"]}

    def gate(state: State) -> dict[str, Any]:
        if state["ask"]:
            return {"log": [f"gate:{interrupt('go on?')}"]}
        return {"log": ["gate"]}

    def b(state: State, config: Any) -> dict[str, Any]:
        if stall_dir is not None:
            (stall_dir / config["configurable"]["thread_id"]).touch()
            time.sleep(3600)
        return {"log": ["b"]}

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_node("gate", gate)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "gate")
    g.add_edge("gate", "b")
    g.add_edge("b", END)
    return g.compile(checkpointer=saver)


def main() -> None:
    mode, spec = sys.argv[1:3]
    saver = open_saver(spec, f"stalled-{mode}")
    if mode == "stall":
        app = build(saver, Path(sys.argv[3]))
        for tid in sys.argv[4:]:
            threading.Thread(
                target=app.invoke, args=({"ask": False, "log": []}, cfg(tid)), daemon=True
            ).start()
        time.sleep(3600)
    name, stale = sys.argv[3], float(sys.argv[4])
    app = build(saver)
    mine: list[str] = []
    while claimed := saver.claim_stalled(name, stale_after=stale, lease=60, limit=2):
        for tid in claimed:
            app.invoke(None, cfg(tid))
        mine.extend(claimed)
    print(json.dumps(mine))


if __name__ == "__main__":
    main()
