"""Child program for ``test_sigint.py``: an agent run that the parent interrupts with a
real SIGINT while it waits on something slow.

Usage::

    python sigint_child.py SCENARIO DBPATH WORKDIR

``SCENARIO`` is what the run waits on when the signal comes:

* ``sync_tools``  — two parallel sync tools that sleep 30 s
* ``async_tools`` — two parallel async tools that sleep 30 s (``CANCELLED True``
  once their asyncio tasks were cancelled)
* ``bash``        — the workspace ``bash`` tool running ``sleep 30`` (and a
  ``setsid``-less background ``sleep``), whose process ids it writes to WORKDIR
* ``model``       — a model request to a local server that never answers
  (``DROPPED True`` once the client closed that connection)

The child prints ``WAITING`` once the slow part started, then catches the
``KeyboardInterrupt`` and prints ``INTERRUPTED <time.monotonic()>`` (the parent
compares it with when it sent the signal: both read the same system clock). It then
prints ``STATE <json>`` (the thread's saved state: what runs next, how many messages),
continues the thread with ``invoke(None, config)`` (the slow parts are quick now) and
prints ``RESULT <json>`` with the final messages. A run that is not interrupted
prints ``NOT INTERRUPTED`` and exits 3.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ironloop import SqliteSaver, create_react_agent, tool
from ironloop.models import OpenAIChat, ScriptedChatModel
from ironloop.tools import workspace

SLOW = {"on": True}
STARTED = threading.Event()
CANCELLED = threading.Event()


def announce() -> None:
    if not STARTED.is_set():
        STARTED.set()
        print("WAITING", flush=True)


@tool
def slow_sync(n: int) -> str:
    """Sleeps, then answers."""
    if SLOW["on"]:
        announce()
        time.sleep(30)
    return f"sync {n}"


@tool
async def slow_async(n: int) -> str:
    """Sleeps asynchronously, then answers."""
    if SLOW["on"]:
        announce()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            CANCELLED.set()
            raise
    return f"async {n}"


def scripted(tool_name: str, args: list[dict[str, Any]]) -> Any:
    """A model that asks for ``tool_name`` once per args, then answers with the results."""

    def model(messages: list[Any]) -> Any:
        if messages[-1].type == "human":
            calls = [{"name": tool_name, "args": a, "id": f"c{i}"} for i, a in enumerate(args)]
            return {"content": "", "tool_calls": calls}
        return "done: " + "; ".join(m.text for m in messages if m.type == "tool")

    return ScriptedChatModel(model)


class Hanging:
    """An OpenAI-compatible server on localhost that never answers its first request
    (it records when the client drops that connection) and answers the later ones."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.dropped = threading.Event()
        self.requests = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            self.requests += 1
            target = self.hang if self.requests == 1 else self.answer
            threading.Thread(target=target, args=(conn,), daemon=True).start()

    def hang(self, conn: socket.socket) -> None:
        announce()
        while conn.recv(65536):
            pass
        self.dropped.set()

    def answer(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        while len(body) < length:
            body += conn.recv(65536)
        reply = json.dumps(
            {
                "id": "r1",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "answered"},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(reply)}\r\nconnection: close\r\n\r\n".encode()
            + reply
        )
        conn.close()


def build(scenario: str, workdir: Path) -> tuple[Any, Any]:
    """The agent, and the server of the model scenario (else None)."""
    if scenario == "sync_tools":
        return create_react_agent(
            scripted("slow_sync", [{"n": 1}, {"n": 2}]), [slow_sync], checkpointer=SAVER
        ), None
    if scenario == "async_tools":
        return create_react_agent(
            scripted("slow_async", [{"n": 1}, {"n": 2}]), [slow_async], checkpointer=SAVER
        ), None
    if scenario == "bash":
        tools = workspace(workdir, allow_bash=True, bash_timeout=60)
        command = (
            "if [ -e done ]; then echo quick; exit 0; fi; "
            "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; "
            "echo started > started; sleep 30"
        )

        def model(messages: list[Any]) -> Any:
            if messages[-1].type == "human":
                return {
                    "content": "",
                    "tool_calls": [{"name": "bash", "args": {"command": command}, "id": "c0"}],
                }
            return "done: " + "; ".join(m.text for m in messages if m.type == "tool")

        return create_react_agent(ScriptedChatModel(model), tools, checkpointer=SAVER), None
    assert scenario == "model", scenario
    server = Hanging()
    model = OpenAIChat("m", base_url=server.url, api_key="k", max_retries=0, timeout=None)
    return create_react_agent(model, [], checkpointer=SAVER), server


def answer_ctrl_c() -> None:
    """Makes SIGINT raise ``KeyboardInterrupt`` here, as in a user's terminal, whatever
    this process inherited: a pytest started with SIGINT ignored (a background job of a
    non-interactive shell, ``trap '' INT``, ``nohup``-like wrappers) passes the ignore on
    through exec, and Python then installs no handler, so the signal would be dropped and
    the run never interrupted. A blocked SIGINT is inherited the same way."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def main() -> int:
    answer_ctrl_c()
    scenario, db, workdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    global SAVER
    SAVER = SqliteSaver.from_conn_string(db)
    agent, server = build(scenario, workdir)
    config = {"configurable": {"thread_id": "t1"}}
    if scenario == "bash":

        def watch() -> None:
            while not (workdir / "started").exists():
                time.sleep(0.01)
            announce()

        threading.Thread(target=watch, daemon=True).start()
    try:
        agent.invoke({"messages": [("user", "go")]}, config)
    except KeyboardInterrupt:
        print(f"INTERRUPTED {time.monotonic()}", flush=True)
    else:
        print("NOT INTERRUPTED", flush=True)
        return 3
    if server is not None:
        print(f"DROPPED {server.dropped.wait(5)}", flush=True)
    if scenario == "async_tools":
        print(f"CANCELLED {CANCELLED.wait(5)}", flush=True)
    snap = agent.get_state(config)
    print(
        "STATE " + json.dumps({"next": list(snap.next), "messages": len(snap.values["messages"])}),
        flush=True,
    )
    SLOW["on"] = False
    (workdir / "done").touch()
    out = agent.invoke(None, config)
    print("RESULT " + json.dumps([m.text for m in out["messages"]]), flush=True)
    return 0


SAVER: Any = None

if __name__ == "__main__":
    sys.exit(main())
