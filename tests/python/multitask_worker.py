"""A worker process for test_multitask_processes.py: one run of an agent on a thread,
whose result it prints as JSON.

    python multitask_worker.py sqlite|postgres TARGET SCHEMA THREAD STRATEGY TEXT DIR

TARGET is the SQLite file or the PostgreSQL URL. A user message starting with "work"
gets three calls of the ``slow`` tool, run one after another; each call appends its
label to DIR/ran, and the first one touches DIR/started, then sleeps until DIR/open
exists. Any other message gets the answer at once."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agent_support import call, turn

from ironloop import PostgresSaver, SqliteSaver, ToolNode, create_react_agent, tool
from ironloop.errors import CheckpointConflictError, RunRolledBackError
from ironloop.models import ScriptedChatModel


def respond(messages: list[Any]) -> Any:
    last = max(i for i, m in enumerate(messages) if m.type == "human")
    if messages[-1].type == "human" and messages[-1].text.startswith("work"):
        return turn(*(call("slow", f"c{i}", label=f"job{i}") for i in range(3)))
    n = sum(1 for m in messages[last:] if m.type == "tool")
    return f"answer to {messages[last].text} after {n} tool results"


def main() -> None:
    kind, target, schema, thread, strategy, text, d = sys.argv[1:8]
    box = Path(d)

    @tool
    def slow(label: str) -> str:
        """Works slowly on a label."""
        with open(box / "ran", "a") as f:
            f.write(f"{label}\n")
        if not (box / "started").exists():
            (box / "started").touch()
            deadline = time.monotonic() + 60
            while not (box / "open").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return f"did {label}"

    saver: Any = SqliteSaver(target) if kind == "sqlite" else PostgresSaver(target, schema=schema)
    agent = create_react_agent(
        ScriptedChatModel(respond),
        ToolNode([slow], strategy="sequential"),
        checkpointer=saver,
        version="v1",
    )
    config = {"configurable": {"thread_id": thread}, "multitask_strategy": strategy}
    try:
        out = agent.invoke({"messages": [("user", text)]}, config)
        msgs = out["messages"]
        print(json.dumps({"ok": [[m.type, m.text, getattr(m, "status", None)] for m in msgs]}))
    except (CheckpointConflictError, RunRolledBackError) as e:
        print(json.dumps({"error": type(e).__name__, "thread": e.thread_id, "message": str(e)}))
    sys.stdout.flush()
    # A rolled-back run's tool may still sleep in the background: not waited for.
    os._exit(0)


if __name__ == "__main__":
    main()
