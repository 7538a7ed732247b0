"""Child program for ``test_func.py``: a functional-API run that kills itself.

Usage::

    python func_crash_child.py DBPATH LOGPATH

The entrypoint calls task ``a`` (which logs ``a pid=<pid>``), then task ``b``. On the
first run (no log yet) ``b`` SIGKILLs the process once ``a``'s result is
saved; on the next run (``invoke(None, cfg)``: the thread is mid-step) ``b`` logs and
returns, and the child prints ``RESULT <json>``.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from ironloop import SqliteSaver
from ironloop.func import entrypoint, task


def main(db: str, log: str) -> None:
    saver = SqliteSaver(db)
    cfg = {"configurable": {"thread_id": "t"}}

    def effect(name: str) -> None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{name} pid={os.getpid()}\n".encode())
        os.fsync(fd)
        os.close(fd)

    @task
    def a(x: int) -> int:
        effect("a")
        return x + 1

    @task
    def b(x: int, first_run: bool) -> int:
        if first_run:
            os.kill(os.getpid(), signal.SIGKILL)
        effect("b")
        return x * 10

    first = not os.path.exists(log)

    @entrypoint(checkpointer=saver)
    def flow(x: int) -> dict[str, int]:
        got = a(x).result()
        return {"a": got, "b": b(got, first).result()}

    out = flow.invoke(1, cfg) if first else flow.invoke(None, cfg)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
