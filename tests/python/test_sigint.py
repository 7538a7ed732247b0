"""Ctrl-C stops a sync ``invoke`` that waits in Rust: a real SIGINT sent to a child
process raises ``KeyboardInterrupt`` there within 200 ms, whatever the run waits on
(two 30 s sync tools, two 30 s async tools, a 30 s bash command, a model request that
never answers); what can be stopped is stopped (asyncio tasks cancelled, the bash
command's process group killed, the HTTP connection dropped); the thread's checkpoint
is consistent and ``invoke(None, config)`` continues it to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CHILD = Path(__file__).with_name("sigint_child.py")
BUDGET = 0.200


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by its parent) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def interrupt(scenario: str, tmp_path: Path, *, inherit_ignored: bool = False) -> dict[str, str]:
    """Runs the child, sends SIGINT once it waits, and returns its tagged lines.

    ``inherit_ignored`` starts the child with SIGINT ignored, as a pytest run in the
    background of a non-interactive shell passes it on (exec keeps an ignored signal).
    """
    work = tmp_path / "work"
    work.mkdir()
    argv = [sys.executable, str(CHILD), scenario, str(tmp_path / "db.sqlite"), str(work)]
    if inherit_ignored:
        argv = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert first.strip() == "WAITING", first + proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.3)  # let every slow part start
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert proc.returncode == 0, out + err
    latency = float(lines["INTERRUPTED"]) - sent
    assert latency < BUDGET, f"KeyboardInterrupt came {latency * 1000:.0f} ms after SIGINT"
    lines["latency"] = str(latency)
    print(f"{scenario}: KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT")
    return lines


def test_two_sync_tools(tmp_path: Path) -> None:
    lines = interrupt("sync_tools", tmp_path)
    # One task per call (a `Send` each), as LangGraph.
    assert json.loads(lines["STATE"]) == {"next": ["tools", "tools"], "messages": 2}
    assert json.loads(lines["RESULT"])[-1] == "done: sync 1; sync 2"


def test_an_inherited_ignored_sigint_does_not_hide_ctrl_c(tmp_path: Path) -> None:
    # The child answers Ctrl-C whatever the test runner inherited, so this file holds
    # when the suite runs as a background job.
    lines = interrupt("sync_tools", tmp_path, inherit_ignored=True)
    assert json.loads(lines["RESULT"])[-1] == "done: sync 1; sync 2"


def test_two_async_tools(tmp_path: Path) -> None:
    lines = interrupt("async_tools", tmp_path)
    assert lines["CANCELLED"] == "True", "the asyncio tasks were not cancelled"
    assert json.loads(lines["STATE"]) == {"next": ["tools", "tools"], "messages": 2}
    assert json.loads(lines["RESULT"])[-1] == "done: async 1; async 2"


def test_bash_command_and_its_background_process_are_killed(tmp_path: Path) -> None:
    lines = interrupt("bash", tmp_path)
    work = tmp_path / "work"
    pids = [int((work / name).read_text()) for name in ("sh.pid", "bg.pid")]
    deadline = time.monotonic() + 2
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(alive(p) for p in pids), "the bash command outlived the interrupt"
    assert json.loads(lines["STATE"]) == {"next": ["tools"], "messages": 2}
    assert "quick" in json.loads(lines["RESULT"])[-1]


def test_model_request_that_never_answers(tmp_path: Path) -> None:
    lines = interrupt("model", tmp_path)
    assert lines["DROPPED"] == "True", "the HTTP request was not dropped"
    assert json.loads(lines["STATE"]) == {"next": ["agent"], "messages": 1}
    assert json.loads(lines["RESULT"])[-1] == "answered"
