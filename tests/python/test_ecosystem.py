"""LangGraph's ecosystem on ironloop: a package built on LangGraph, installed unmodified,
runs its README example the same when its ``langgraph`` imports are answered by
ironloop (``scripts/upstream/langgraph_shim.py``, as the upstream suites run) as under
LangGraph itself. Its own test suite runs in CI through ``scripts/upstream/suite.py``
(``--suite langgraph-supervisor``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent / "ecosystem"

_ON_IRONLOOP = """
import runpy, sys
sys.path.insert(0, {shim!r})
import langgraph_shim
langgraph_shim.install(lenient=True)
runpy.run_path({program!r}, run_name="__main__")
assert "ironloop._ironloop" in sys.modules, "ironloop did not run"
"""

_ON_LANGGRAPH = """
import runpy, sys
runpy.run_path({program!r}, run_name="__main__")
assert "ironloop._ironloop" not in sys.modules, "ironloop ran"
"""


def _run(template: str, program: Path) -> Any:
    code = template.format(shim=str(ROOT / "scripts" / "upstream"), program=str(program))
    run = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_langgraph_supervisor_readme_example_runs_as_under_langgraph() -> None:
    program = HERE / "supervisor_readme.py"
    ours = _run(_ON_IRONLOOP, program)
    theirs = _run(_ON_LANGGRAPH, program)
    assert ours == theirs
    # The supervisor handed off to both experts and answered with the math expert's sum.
    names = [name for _cls, name, _text, _calls in ours["transcript"]]
    assert "research_expert" in names and "math_expert" in names
    assert ours["transcript"][-1][2] == "The combined headcount is 1,782,317."
