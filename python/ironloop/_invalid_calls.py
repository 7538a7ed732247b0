"""LangChain 1.5's answer to invalid tool calls (arguments that did not parse): an
error ``ToolMessage`` after their AI message before the next model call, so the model
learns its call did not run and providers accept the history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ironloop._ironloop import _has_invalid_calls
from ironloop.graph import REMOVE_ALL_MESSAGES
from ironloop.messages import RemoveMessage, ToolMessage


def _patch_invalid(messages: Sequence[Any]) -> list[Any] | None:
    """``messages`` with an error ``ToolMessage`` after each AI message for every invalid
    tool call (malformed arguments) no result answers yet, as LangChain 1.5's model
    node adds them, so the model learns its call did not run and providers accept the
    history; ``None`` when there is nothing to answer (the common case: no copy)."""
    if not _has_invalid_calls(messages):  # read in Rust: the whole history, every call
        return None
    answered = {m.tool_call_id for m in messages if m.type == "tool"}
    out: list[Any] = []
    for m in messages:
        out.append(m)
        if m.type != "ai":
            continue
        for call in m.invalid_tool_calls:
            call_id = call.get("id")
            if call_id is None or call_id in answered:
                continue
            name = call.get("name") or "unknown"
            out.append(
                ToolMessage(
                    content=f"Tool call {name} with id {call_id} could not be executed - "
                    "arguments were malformed or truncated.",
                    name=name,
                    tool_call_id=call_id,
                    status="error",
                )
            )
            answered.add(call_id)
    return out if len(out) > len(messages) else None


def _rewritten(patched: list[Any] | None) -> list[Any]:
    """The messages update's start when invalid calls were answered: the history
    replaced by its patched copy (the answers sit after their AI messages)."""
    return [] if patched is None else [RemoveMessage(id=REMOVE_ALL_MESSAGES), *patched]
