"""Helpers for the create_agent / middleware tests: one way to run an agent under
``invoke``, ``ainvoke`` or ``stream``, and a scripted model that records its calls."""

from __future__ import annotations

import asyncio
from typing import Any

from ironloop import tool

MODES = ("invoke", "ainvoke", "stream")


def run(agent: Any, inp: Any, config: Any = None, mode: str = "invoke", **kw: Any) -> Any:
    """The run's final state (with ``__interrupt__`` when it paused), whichever API."""
    if mode == "invoke":
        return agent.invoke(inp, config, **kw)
    if mode == "ainvoke":
        return asyncio.run(agent.ainvoke(inp, config, **kw))
    assert mode == "stream", mode
    last: Any = None
    interrupts: Any = None
    for chunk in agent.stream(inp, config, stream_mode=["values", "updates"], **kw):
        kind, data = chunk
        if kind == "values":
            last = data
        elif isinstance(data, dict) and "__interrupt__" in data:
            interrupts = data["__interrupt__"]
    if interrupts is not None:
        last = {**last, "__interrupt__": list(interrupts)}
    return last


def call(name: str, id_: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id_}


def turn(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    """A model answer with these tool calls."""
    return {"content": content, "tool_calls": list(calls)}


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@tool
def echo(text: str) -> str:
    """Echoes the text."""
    return text


def review_model(messages: list[Any]) -> dict[str, Any] | str:
    """A model that decides from the conversation alone (so a fresh process resumes it):
    first three calls, then an answer listing the tool results it got."""
    if messages[-1].type == "human":
        return turn(
            call("add", "c1", a=1, b=2),
            call("write_note", "c2", text="draft"),
            call("write_note", "c3", text="junk"),
        )
    results = [f"{m.tool_call_id}={m.text}" for m in messages if m.type == "tool"]
    return "done: " + "; ".join(results)


NOTES: list[str] = []


@tool
def write_note(text: str) -> str:
    """Writes a note."""
    NOTES.append(text)
    return f"wrote {text}"


def review_agent(checkpointer: Any, interrupt_mode: str = "batched") -> Any:
    """An agent that asks before write_note (any decision) and add (approve only)."""
    from ironloop import create_agent
    from ironloop.middleware import HumanInTheLoopMiddleware
    from ironloop.models import ScriptedChatModel

    return create_agent(
        ScriptedChatModel(review_model),
        [add, write_note],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "write_note": True,
                    "add": {"allowed_decisions": ["approve"], "description": "adds numbers"},
                },
                interrupt_mode=interrupt_mode,  # type: ignore[arg-type]
            )
        ],
        checkpointer=checkpointer,
    )


DECISIONS = [
    {"type": "approve"},
    {"type": "edit", "edited_action": {"name": "write_note", "args": {"text": "final"}}},
    {"type": "reject", "message": "not this one"},
]


def resume_in_child(db: str, thread: str) -> None:
    """Run by a child process: resume the paused thread with DECISIONS, print JSON."""
    import json

    from ironloop import Command, SqliteSaver

    agent = review_agent(SqliteSaver(db))
    out = agent.invoke(
        Command(resume={"decisions": DECISIONS}), {"configurable": {"thread_id": thread}}
    )
    print(
        json.dumps(
            {
                "notes": NOTES,
                "messages": [[m.type, m.text, getattr(m, "status", None)] for m in out["messages"]],
            }
        )
    )
