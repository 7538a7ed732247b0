"""Finding stalled runs: ``list_stalled`` and ``claim_stalled`` on threads whose worker
was SIGKILLed mid-step, with claimers in several processes at once (PostgreSQL and one
SQLite file), and the arguments' errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pg_support import postgres_url, temp_schema
from stalled_worker import build

from ironloop import MemorySaver, PostgresSaver, SqliteSaver
from ironloop.errors import InvalidArgumentError
from ironloop.types import Command

HERE = Path(__file__).parent
WORKER = str(HERE / "stalled_worker.py")
STUCK = [f"stuck-{i:02d}" for i in range(30)]
STALE = 0.3


def cfg(tid: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def stall(spec: str, tmp_path: Path) -> None:
    """Runs STUCK into node ``b`` in a child process and SIGKILLs it there."""
    inside = tmp_path / "inside"
    inside.mkdir()
    child = subprocess.Popen([sys.executable, WORKER, "stall", spec, str(inside), *STUCK], cwd=HERE)
    deadline = time.monotonic() + 60
    while len(os.listdir(inside)) < len(STUCK):
        assert child.poll() is None, "the stalling worker exited by itself"
        assert time.monotonic() < deadline, f"only {len(os.listdir(inside))} threads got stuck"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()


def fleet_claims(saver: Any, spec: str, tmp_path: Path) -> None:
    app = build(saver)
    app.invoke({"ask": False, "log": []}, cfg("finished"))
    assert "__interrupt__" in app.invoke({"ask": True, "log": []}, cfg("paused"))
    stall(spec, tmp_path)
    time.sleep(STALE + 0.2)
    # The killed worker's threads, not the finished one nor the one waiting for a person.
    stalled = saver.list_stalled(stale_after=STALE)
    assert sorted(stalled) == STUCK
    assert len(saver.list_stalled(stale_after=STALE, limit=5)) == 5
    assert saver.list_stalled(stale_after=3600) == []
    # Five claimers at once: every stuck thread is claimed by exactly one of them.
    claimers = [
        subprocess.Popen(
            [sys.executable, WORKER, "claim", spec, f"claimer{i}", str(STALE)],
            cwd=HERE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(5)
    ]
    claimed: list[str] = []
    for c in claimers:
        out, _ = c.communicate(timeout=120)
        assert c.returncode == 0
        claimed.extend(json.loads(out))
    assert sorted(claimed) == STUCK, "a thread was claimed twice, or not at all"
    for tid in STUCK:
        state = app.get_state(cfg(tid))
        assert state.values["log"] == ["a", "gate", "b"] and not state.next
    assert saver.list_stalled(stale_after=0.001) == []
    # The paused thread, answered, finishes.
    assert app.invoke(Command(resume="yes"), cfg("paused"))["log"] == ["a", "gate:yes", "b"]


def test_postgres_stalled_threads_are_claimed_once_by_concurrent_workers(
    tmp_path: Path,
) -> None:
    url = postgres_url()
    with temp_schema() as schema, PostgresSaver(url, schema=schema) as saver:
        saver.setup()
        fleet_claims(saver, f"postgres:{schema}:{url}", tmp_path)


def test_sqlite_stalled_threads_are_claimed_once_by_concurrent_workers(tmp_path: Path) -> None:
    db = tmp_path / "stalled.db"
    with SqliteSaver(db) as saver:
        fleet_claims(saver, f"sqlite:{db}", tmp_path)


def test_claim_arguments_are_checked() -> None:
    saver = MemorySaver()
    for bad in (0, -1.5, float("nan"), float("inf")):
        with pytest.raises(InvalidArgumentError, match="stale_after must be a positive number"):
            saver.list_stalled(stale_after=bad)
    with pytest.raises(TypeError):
        saver.list_stalled(stale_after="1")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="lease must be a positive number"):
        saver.claim_stalled("w", lease=0)
    with pytest.raises(InvalidArgumentError, match="owner must name the worker"):
        saver.claim_stalled("")
    with pytest.raises(InvalidArgumentError, match="limit must be at least 1"):
        saver.claim_stalled("w", limit=0)
    assert saver.list_stalled() == [] and saver.claim_stalled("w") == []
