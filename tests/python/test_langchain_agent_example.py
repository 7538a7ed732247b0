"""``examples/langchain_agent.py`` (a LangChain 1.x agent: LangChain tools and fake
chat model, ``HumanInTheLoopMiddleware``, ``SummarizationMiddleware``,
``TodoListMiddleware``) prints the same under ironloop and under LangChain 1.5 itself.
The LangChain run is the same file with its ironloop import lines replaced by
LangChain's — the only difference the port has — and it must not load ironloop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langchain_agent.py"

#: The example's ironloop imports and the LangChain imports they stand for.
PORTED_IMPORTS = {
    "from ironloop.agents import create_agent": "from langchain.agents import create_agent",
    "from ironloop.middleware import (": "from langchain.agents.middleware import (",
    "from ironloop.checkpoint import InMemorySaver": (
        "from langgraph.checkpoint.memory import InMemorySaver"
    ),
    "from ironloop.types import Command": "from langgraph.types import Command",
}

_UNDER_LANGCHAIN = """
import sys
source = sys.stdin.read()
exec(compile(source, {path!r}, "exec"), {{"__name__": "__main__"}})
assert not any(m.startswith("ironloop") for m in sys.modules), "ironloop was loaded"
"""


def _langchain_version() -> str:
    source = EXAMPLE.read_text()
    for ours, theirs in PORTED_IMPORTS.items():
        assert source.count(ours) == 1, ours
        source = source.replace(ours, theirs)
    leftover = [
        ln for ln in source.splitlines() if ln.startswith(("from ironloop", "import ironloop"))
    ]
    assert not leftover, f"the example imports more of ironloop than the port maps: {leftover}"
    return source


def _run(args: list[str], stdin: str | None = None) -> Any:
    run = subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_langchain_agent_example_prints_the_same_under_ironloop_and_langchain() -> None:
    ours = _run([str(EXAMPLE)])
    theirs = _run(["-c", _UNDER_LANGCHAIN.format(path=str(EXAMPLE))], _langchain_version())
    assert ours == theirs
    log = dict((entry[0], entry[1]) for entry in ours)
    # What the program shows happened: the reviewer saw the model's send_email call,
    # the plan is in the state, the edited call ran (and the model was told), and the
    # second turn folded the old messages into a summary.
    assert log["review"] == [
        ["send_email", {"to": "customer@example.com", "body": "Your order arrives Thursday."}]
    ]
    assert [t["status"] for t in log["todos"]] == ["in_progress", "pending"]
    edited = [m for m in log["after review"] if m["type"] == "tool"][-1]["content"]
    assert "Executed instead: send_email" in edited and edited.endswith("vip@example.com.")
    summary = log["after summary"]
    assert len(summary) < len(log["after review"]) + 2
    assert any("Order 42 was handled." in str(m["content"]) for m in summary)
