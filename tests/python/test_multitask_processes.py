"""Multitask strategies across processes: a run on a thread holds the thread's run
lease in the store (an OFD lock beside a SQLite file, a session advisory lock on
PostgreSQL), so a second run from another process follows its
``multitask_strategy`` as a run of the same process would. And the lease dies with
its process: after a SIGKILL the thread runs again at once.

Each run is a real process (``multitask_worker.py``) whose tool sleeps until the test
opens a gate, so the test knows where the first run is when the second arrives."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_support import admin, postgres_url, temp_schema

from ironloop import PostgresSaver, SqliteSaver, ToolNode, create_react_agent
from ironloop.models import ScriptedChatModel

HERE = Path(__file__).parent
WAIT = 60


class Store:
    """The store the processes share, and what the test sees of it."""

    def __init__(self, kind: str, target: str, schema: str, box: Path) -> None:
        self.kind, self.target, self.schema, self.box = kind, target, schema, box
        self.saver: Any = (
            SqliteSaver(target) if kind == "sqlite" else PostgresSaver(target, schema=schema)
        )
        if kind == "postgres":
            self.saver.setup()

    def start(self, strategy: str, text: str, thread: str = "t") -> subprocess.Popen[str]:
        args = [self.kind, self.target, self.schema, thread, strategy, text, str(self.box)]
        return subprocess.Popen(
            [sys.executable, str(HERE / "multitask_worker.py"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=HERE,
        )

    def wait_started(self, p: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + WAIT
        while not (self.box / "started").exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the first run's tool never started"
            time.sleep(0.01)

    def wait_asked(self, ask: str, thread: str = "t") -> None:
        """Waits until a run asks the holder of ``thread``'s lease to ``ask``
        ("interrupt" or "rollback"), as the store carries it: a lock on the thread's
        ask byte of the ``-runs`` file, a notification on PostgreSQL."""
        deadline = time.monotonic() + WAIT
        if self.kind == "sqlite":
            base = (fnv1a(thread) >> 4) << 2
            offset = base + (1 if ask == "interrupt" else 2)
            fd = os.open(self.target + "-runs", os.O_RDWR)
            try:
                while not locked(fd, offset):
                    assert time.monotonic() < deadline, "the ask never came"
                    time.sleep(0.01)
            finally:
                os.close(fd)
            return
        with admin() as c:
            c.execute("LISTEN ironloop_runs")
            want = f"{ask[0]} {fnv1a(self.schema_prefix() + thread):016x}"
            # A waiting run asks again every time it finds the lease held.
            while True:
                assert time.monotonic() < deadline, "the ask never came"
                if any(n.payload == want for n in c.notifies(timeout=0.1)):
                    return

    def schema_prefix(self) -> str:
        return f'"{self.schema}".'

    def open(self) -> None:
        (self.box / "open").touch()

    def ran(self) -> list[str]:
        f = self.box / "ran"
        return f.read_text().split() if f.exists() else []

    def agent(self) -> Any:
        """The workers' agent as far as reading its threads goes."""
        return create_react_agent(
            ScriptedChatModel(lambda _: "unused"), ToolNode([]), checkpointer=self.saver
        )

    def messages(self, thread: str = "t") -> list[Any]:
        values = self.agent().get_state({"configurable": {"thread_id": thread}}).values
        return [[m.type, m.text] for m in values.get("messages", [])]


def fnv1a(key: str) -> int:
    """The stable hash ironloop keys a thread's lease by (``checkpoint/lease.rs``)."""
    h = 0xCBF29CE484222325
    for b in key.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def locked(fd: int, offset: int) -> bool:
    """Whether another open file holds a lock on byte ``offset`` of ``fd``'s file
    (``F_OFD_GETLK``; ``struct flock`` as Linux lays it out on 64-bit)."""
    query = struct.pack("hh4xqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
    kind = struct.unpack("hh4xqqi4x", fcntl.fcntl(fd, fcntl.F_OFD_GETLK, query))[0]
    return bool(kind != fcntl.F_UNLCK)


def result(p: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = p.communicate(timeout=WAIT)
    assert p.returncode == 0, err
    return json.loads(out)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: Any, tmp_path: Path) -> Iterator[Store]:
    box = tmp_path / "box"
    box.mkdir()
    if request.param == "sqlite":
        s = Store("sqlite", str(tmp_path / "runs.db"), "", box)
        yield s
        s.saver.close()
    else:
        with temp_schema() as schema:
            s = Store("postgres", postgres_url(), schema, box)
            yield s
            s.saver.close()


def first_turn(answer: str = "answer to work first after 3 tool results") -> list[Any]:
    return [
        ["human", "work first"],
        ["ai", ""],
        ["tool", "did job0", "success"],
        ["tool", "did job1", "success"],
        ["tool", "did job2", "success"],
        ["ai", answer, None],
    ]


def test_reject_refuses_a_second_process_and_the_first_run_goes_on(store: Store) -> None:
    first = store.start("reject", "work first")
    store.wait_started(first)
    second = result(store.start("reject", "second"))
    assert second["error"] == "ThreadBusyError", second
    assert second["thread"] == "t"
    assert 'thread "t" already has a run in progress in another process' in second["message"]
    assert first.poll() is None, "the first run goes on"
    store.open()
    out = result(first)["ok"]
    assert [m[:2] for m in out] == [m[:2] for m in first_turn()]
    assert store.ran() == ["job0", "job1", "job2"]
    # Once it ended, the thread is free at once.
    again = result(store.start("reject", "later"))["ok"]
    assert again[-1][:2] == ["ai", "answer to later after 0 tool results"]


def test_enqueue_runs_after_the_run_of_another_process(store: Store) -> None:
    first = store.start("reject", "work first")
    store.wait_started(first)
    second = store.start("enqueue", "second")
    time.sleep(1.0)
    assert second.poll() is None, "the follow-up waits for the current run"
    store.open()
    result(first)
    out = result(second)["ok"]
    assert [m[:2] for m in out] == [
        *[m[:2] for m in first_turn()],
        ["human", "second"],
        ["ai", "answer to second after 0 tool results"],
    ]
    assert store.ran() == ["job0", "job1", "job2"]


def test_interrupt_stops_the_run_of_another_process_between_its_calls(store: Store) -> None:
    first = store.start("reject", "work first")
    store.wait_started(first)  # job0 sleeps
    second = store.start("interrupt", "second")
    store.wait_asked("interrupt")
    # The holder looks for asks every 50 ms.
    time.sleep(0.5)
    assert second.poll() is None, "the new input waits for the safe point"
    store.open()
    out1 = result(first)["ok"]
    out2 = result(second)["ok"]
    # job0 finished; job1 and job2 never started, and are answered as skipped.
    assert store.ran() == ["job0"]
    tools = [m for m in out1 if m[0] == "tool"]
    assert [m[2] for m in tools] == ["success", "error", "error"]
    assert all("a new user message arrived before this call started" in m[1] for m in tools[1:])
    assert out1[-1][0] == "tool", "the interrupted caller gets the state where it stopped"
    assert [m[:2] for m in out2[-2:]] == [
        ["human", "second"],
        ["ai", "answer to second after 0 tool results"],
    ]
    assert store.messages() == [m[:2] for m in out2]


def test_rollback_stops_the_run_of_another_process_and_discards_it(store: Store) -> None:
    zero = result(store.start("reject", "zero"))["ok"]
    first = store.start("reject", "work first")
    store.wait_started(first)  # job0 sleeps
    second = store.start("rollback", "second")
    store.wait_asked("rollback")
    # The holder looks for asks every 50 ms; its run is cancelled then. The call under
    # way is sync Python code run on the caller's thread: it finishes (the gate opens),
    # the calls after it never start.
    time.sleep(0.5)
    store.open()
    out1 = result(first)
    assert out1["error"] == "RunRolledBackError", out1
    assert out1["thread"] == "t"
    assert store.ran() == ["job0"]
    out2 = result(second)["ok"]
    assert [m[:2] for m in out2] == [
        *[m[:2] for m in zero],
        ["human", "second"],
        ["ai", "answer to second after 0 tool results"],
    ]
    assert store.messages() == [m[:2] for m in out2]
    # The stopped run's checkpoints left the history: one linear chain without it.
    history = list(store.agent().get_state_history({"configurable": {"thread_id": "t"}}))
    ids = [h.config["configurable"]["checkpoint_id"] for h in history]
    parents = [h.parent_config["configurable"]["checkpoint_id"] for h in history[:-1]]
    assert parents == ids[1:], "the history forked"
    for h in history:
        assert "work first" not in [m.text for m in h.values.get("messages", [])]


def test_a_killed_process_holds_no_lease(store: Store) -> None:
    first = store.start("reject", "work first")
    store.wait_started(first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    # Its lease went with it: a new run (rejecting) takes the thread at once.
    out = result(store.start("reject", "second"))
    assert "ok" in out, out
    assert out["ok"][-1][:2] == ["ai", "answer to second after 0 tool results"]
