"""The tool-call path CPython 3.10 takes, tested on 3.11+ (issue 36).

CPython 3.10 does not export ``PyObject_Vectorcall``, so ``src/bindings/exiting.rs``
makes a tool's keyword call there through ``PyObject_Call`` (the arguments gathered
into a dict), inside the same guard that parks a thread CPython ends at exit. No
Python 3.10 runs on the machines that test this, so the environment variable
``IRONLOOP_TEST_VECTORCALL_FALLBACK=1`` (a test seam, read once per process) forces
that path; each case runs in a child process with and without it:

- tool calls (parameters positional-or-keyword with defaults, keyword-only, injected,
  nine of them, a tool that raises, arguments the schema refuses) through
  ``ToolNode.invoke`` / ``ainvoke`` and a ``create_react_agent`` run, and a graph
  run, give the same results either way;
- the shutdown reproducers of ``test_guarantees.py`` (the process exits while a
  sync tool still sleeps on the pool) exit with the expected status and no
  ``Fatal Python error`` with the fallback forced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_guarantees import SHUTDOWN, SHUTDOWN_RUNS, shutdown_runs

HERE = Path(__file__).parent
FORCE = {"IRONLOOP_TEST_VECTORCALL_FALLBACK": "1"}


def child(env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "vectorcall_child.py")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Fatal" not in proc.stderr, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_tool_calls_and_runs_give_the_same_results_through_the_fallback() -> None:
    plain = child({"IRONLOOP_TEST_VECTORCALL_FALLBACK": "0"})
    forced = child(FORCE)
    assert forced.pop("fallback") is True
    # On 3.11+ the unforced run used the exported function: the two paths differ.
    assert plain.pop("fallback") is (sys.version_info < (3, 11))
    assert forced == plain
    # And the results are the right ones, not merely the same.
    tn = forced["toolnode"]["invoke"]
    assert tn == [
        ["tool", "p=9", "success", "c1"],
        ["tool", "two=32", "success", "c2"],
        ["tool", "hi (c3)", "success", "c3"],
        ["tool", "k: 2 messages", "success", "c4"],
        ["tool", "18", "success", "c5"],
        tn[5],
        ["tool", "later 8", "success", "c7"],
        tn[7],
    ]
    assert tn[5][2:] == ["error", "c6"] and "ValueError('no 7')" in tn[5][1]
    assert tn[7][2:] == ["error", "c8"] and "is not of type" in tn[7][1]
    assert forced["toolnode"]["ainvoke"] == tn
    assert forced["toolnode"]["invoke_one"] == [["tool", "p=9", "success", "c1"]]
    agent = forced["agent"]
    assert [m[0] for m in agent] == ["human", "ai", *["tool"] * 4, "ai", "tool", "tool", "ai"]
    assert agent[5] == ["tool", "k: 2 messages", "success", "c4"]
    assert agent[7] == ["tool", "18", "success", "c5"]
    assert agent[-1][1] == "done"
    assert forced["graph"] == ["start", "first after 1", "second after 2"]


@pytest.mark.parametrize("scenario", list(SHUTDOWN))
def test_a_process_exits_cleanly_through_the_fallback(scenario: str) -> None:
    outcomes = shutdown_runs(scenario, SHUTDOWN_RUNS, env=FORCE)
    bad = [(rc, err) for rc, err in outcomes if rc != SHUTDOWN[scenario] or "Fatal" in err]
    assert not bad, f"{len(bad)} of {len(outcomes)} runs: {bad[0][0]}\n{bad[0][1][-2000:]}"
