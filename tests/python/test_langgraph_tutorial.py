"""The same LangGraph tutorial-style program (``tutorial/support_bot.py``: a
LangChain model called with ``llm.invoke(state["messages"])``, a tool, an interrupt,
``update_state``) run under ironloop and under LangGraph prints the same transcript.
Under LangGraph the program's ironloop imports are mapped back to LangGraph's by
``scripts/ported_under_langgraph.py``; langchain-core is the one both use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).parent / "tutorial" / "support_bot.py"

_UNDER_LANGGRAPH = f"""
import runpy, sys
sys.path.insert(0, {str(ROOT / "scripts")!r})
from ported_under_langgraph import install_langgraph_as_ironloop
install_langgraph_as_ironloop()
runpy.run_path({str(PROGRAM)!r}, run_name="__main__")
assert not any(m == "ironloop._ironloop" for m in sys.modules), "ironloop ran"
"""


def _run(args: list[str]) -> Any:
    run = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_a_tutorial_program_prints_the_same_under_ironloop_and_langgraph() -> None:
    ours = _run([str(PROGRAM)])
    theirs = _run(["-c", _UNDER_LANGGRAPH])
    assert ours == theirs
    # And it did what the tutorial shows: the model read langchain-core messages,
    # the tool paused, the resume answered it, update_state added the thanks.
    log = dict((e[0], e[1:]) for e in ours)
    assert log["next"] == [["tools"]]
    assert log["interrupts"] == [[{"query": "Plan a trip?"}]]
    assert all(ok for step in log["seen"][0] for _cls, ok, _text in step)
    assert [m["content"] for m in log["final"][0]][-2:] == ["Thanks!", "You're welcome!"]
