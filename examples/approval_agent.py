"""An agent that asks before it writes, offline.

``create_agent`` with the workspace tools (``read_file``, ``write_file``, ... run in
Rust, confined to a scratch directory) and ``HumanInTheLoopMiddleware``: every
``write_file`` call pauses the run with one interrupt listing all pending writes. A
scripted reviewer answers with ``Command(resume={"decisions": [...]})``: it approves
one write, edits another (the file gets the reviewer's content) and rejects a third
(the model is told why, and the file is never written). The agent's state lives in a
SQLite file, so the review could happen in another process, hours later.
``ToolPermissions`` keeps ``bash`` away from the model altogether.

    pip install . && python examples/approval_agent.py
    python examples/approval_agent.py --keep      # keep the scratch workspace

To let a real model drive, pass ``"openai:gpt-4o-mini"`` (or any model object) to
``create_agent`` instead of the scripted model.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ironloop import Command, SqliteSaver, create_agent
from ironloop.messages import BaseMessage
from ironloop.middleware import HumanInTheLoopMiddleware, ToolPermissions
from ironloop.models import ScriptedChatModel
from ironloop.tools import workspace


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def model_turn(messages: list[BaseMessage]) -> dict[str, Any] | str:
    """What the model does next, decided from the conversation (a real model would)."""
    if messages[-1].type == "human":
        return {"content": "", "tool_calls": [call("read_file", path="notes.md")]}
    if messages[-1].type == "tool" and messages[-1].name == "read_file":
        return {
            "content": "I'll write the three files the notes ask for.",
            "tool_calls": [
                call("write_file", path="CHANGELOG.md", content="# Changelog\n\n- 0.1.0\n"),
                call("write_file", path="LICENSE", content="All rights reserved.\n"),
                call("write_file", path="secrets.env", content="TOKEN=abc123\n"),
            ],
        }
    results = [m for m in messages if m.type == "tool" and m.name == "write_file"]
    done = sum(getattr(m, "status", None) == "success" for m in results)
    return f"Wrote {done} of {len(results)} files; the reviewer turned down the rest."


def reviewer(request: dict[str, Any]) -> dict[str, Any]:
    """A person reading the pending writes: one decision per listed call, in order."""
    decisions = []
    for action in request["action_requests"]:
        path = action["args"]["path"]
        if path == "LICENSE":  # right file, wrong text
            edited = {**action["args"], "content": "MIT License\n"}
            decisions.append(
                {"type": "edit", "edited_action": {"name": action["name"], "args": edited}}
            )
        elif path.endswith(".env"):
            decisions.append({"type": "reject", "message": "never write secrets to the repo"})
        else:
            decisions.append({"type": "approve"})
    return {"decisions": decisions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch workspace")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="ironloop-approval-"))
    (root / "notes.md").write_text("Add a CHANGELOG, a LICENSE (MIT) and the .env file.\n")
    saver = SqliteSaver(str(root / ".agent.db"))
    try:
        model = ScriptedChatModel(model_turn)
        agent = create_agent(
            model,
            workspace(root, allow_bash=True),
            system_prompt="You maintain this repository.",
            middleware=[
                HumanInTheLoopMiddleware(interrupt_on={"write_file": True}),
                ToolPermissions(deny=["bash"]),
            ],
            checkpointer=saver,
        )
        config = {"configurable": {"thread_id": "approval-demo"}}
        out = agent.invoke({"messages": [("user", "Do what notes.md says.")]}, config)
        while "__interrupt__" in out:
            (pending,) = out["__interrupt__"]
            print(f"paused for review of {len(pending.value['action_requests'])} call(s):")
            for action in pending.value["action_requests"]:
                print(f"  {action['name']} {action['args']['path']}")
            answer = reviewer(pending.value)
            print("decisions:", ", ".join(d["type"] for d in answer["decisions"]))
            out = agent.invoke(Command(resume=answer), config)

        print("conversation:")
        for m in out["messages"]:
            if m.type == "tool":
                print(f"  [{m.status}] {m.name}: {m.text.splitlines()[0] if m.text else ''}")
            elif m.type == "ai" and m.text:
                print(f"  ai: {m.text}")
        print("files:")
        for p in sorted(root.iterdir()):
            if not p.name.startswith("."):
                print(f"  {p.name}: {p.read_text().strip()!r}")
        offered = [t["function"]["name"] for t in model.calls[0][1] or []]
        print("tools offered to the model:", ", ".join(offered))
    finally:
        saver.close()
        if args.keep:
            print("workspace kept at", root)
        else:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
