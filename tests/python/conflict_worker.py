"""A worker process for test_conflicts.py: resumes a paused thread of the review
graph and prints what happened as JSON.

    python conflict_worker.py sqlite|postgres TARGET SCHEMA THREAD GATE_DIR ANSWER

TARGET is the SQLite file or the PostgreSQL URL. The node waits (up to 10 s) until the
other worker is inside it too, or was refused (then it leaves its mark in GATE_DIR as
well), so both runs try to run the thread at the same time."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from conflict_graph import build

from ironloop import Command, PostgresSaver, SqliteSaver
from ironloop.errors import CheckpointConflictError, ThreadBusyError


def main() -> None:
    kind, target, schema, thread, gate, answer = sys.argv[1:7]

    def wait_for_the_other() -> None:
        Path(gate, str(os.getpid())).touch()
        deadline = time.monotonic() + 10
        while len(os.listdir(gate)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)

    saver: Any = SqliteSaver(target) if kind == "sqlite" else PostgresSaver(target, schema=schema)
    with saver:
        app = build(saver, wait_for_the_other)
        try:
            out = app.invoke(Command(resume=answer), {"configurable": {"thread_id": thread}})
            print(json.dumps({"ok": out["log"]}))
        except ThreadBusyError as e:
            Path(gate, str(os.getpid())).touch()  # the other one need not wait
            print(json.dumps({"busy": e.thread_id, "message": str(e)}))
        except CheckpointConflictError as e:
            print(json.dumps({"conflict": e.thread_id, "message": str(e)}))


if __name__ == "__main__":
    main()
