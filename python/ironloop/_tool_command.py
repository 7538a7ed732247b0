"""A ``Command`` a tool returned, checked and completed as LangGraph's ``ToolNode``
does before the node hands it on (``_validate_tool_command``), for a ``ToolNode`` run
alone and in a graph alike (the Rust node calls :func:`checked_command`).

The update must fit the node's input: a dict (``{messages_key: [...], ...}``) for a
state or tool-call input, a list of messages for a list input. Its tool message
answering the call is named after the tool, on a copy (the tool's own ``Command`` is
left as it was). A command for this graph (``graph`` unset) must answer the call
with such a message: every tool call in the history needs its ``ToolMessage``.

A command that breaks these rules is a mistake in the tool's code, which the model
cannot fix: the ``ValueError`` reaches the caller whatever ``handle_tool_errors`` says
(LangGraph's default handler lets it through too).

Example:
    >>> from ironloop.messages import ToolMessage
    >>> from ironloop.types import Command
    >>> c = Command(update={"messages": [ToolMessage("done", tool_call_id="c1")]})
    >>> checked_command(c, "c1", "finish", "messages", False).update["messages"][0].name
    'finish'
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ironloop.graph import REMOVE_ALL_MESSAGES

__all__ = ["checked_command", "for_caller"]

#: The attribute marking an exception as a mistake in the graph's code, not in the
#: model's call: a ToolNode raises it whatever its ``handle_tool_errors`` (the Rust
#: node reads it, ``toolnode::is_injection_error``; a missing injected state field is
#: marked so by ``pytool::injection_error``).
_FOR_CALLER = "_ironloop_injection_error"


def for_caller(error: BaseException) -> BaseException:
    """``error`` marked for the caller (see ``_FOR_CALLER``)."""
    setattr(error, _FOR_CALLER, True)
    return error


def checked_command(command: Any, call_id: str, call_name: str, key: str, list_in: bool) -> Any:
    """``command`` as the node hands it on: a copy whose tool message answering the
    call ``call_id`` is named ``call_name``; ``key`` is the node's messages key and
    ``list_in`` whether its input was a list of messages. A command whose update is
    neither a dict nor a list is handed on as it is."""
    update = command.update
    if isinstance(update, dict):
        if list_in:
            raise for_caller(
                ValueError(
                    f"tool {call_name!r} returned a Command whose update is a dict "
                    f"({update!r}), but the ToolNode was given a list of messages: return "
                    f"Command(update=[ToolMessage(...), ...]) for a list input, or give the "
                    f"node a state with {key!r}"
                )
            )
        messages = update.get(key) or []
    elif isinstance(update, list):
        if not list_in:
            raise for_caller(
                ValueError(
                    f"tool {call_name!r} returned a Command whose update is a list of "
                    f"messages ({update!r}), but the ToolNode was given a state: return "
                    f"Command(update={{{key!r}: [ToolMessage(...), ...]}}) for a state input"
                )
            )
        messages = update
    else:
        return command
    if _removes_all(messages):
        return command
    answers = [
        _field(m, "type") == "tool" and _field(m, "tool_call_id") == call_id for m in messages
    ]
    if command.graph is None and not any(answers):
        raise for_caller(
            ValueError(
                f"tool {call_name!r} returned a Command whose update has no ToolMessage "
                f"answering its call (tool_call_id {call_id!r}); got {messages!r}. Every "
                "tool call in the history needs its ToolMessage: add "
                f"ToolMessage(..., tool_call_id=tool_call_id) to the update's {key!r} (take "
                "the id with an `Annotated[str, InjectedToolCallId]` parameter), or send "
                "the command to the parent graph (graph=Command.PARENT)"
            )
        )
    if not any(a and not isinstance(m, dict) for a, m in zip(answers, messages, strict=True)):
        return command
    named = [
        m.model_copy(update={"name": call_name}) if a and not isinstance(m, dict) else m
        for a, m in zip(answers, messages, strict=True)
    ]
    new_update = named if isinstance(update, list) else {**update, key: named}
    return dataclasses.replace(command, update=new_update)


def _field(m: Any, name: str) -> Any:
    """A message's field: a message object's attribute, or a message dict's key
    (``role`` standing for ``type``)."""
    if isinstance(m, dict):
        if name == "type":
            return m.get("type") or m.get("role")
        return m.get(name)
    return getattr(m, name, None)


def _removes_all(messages: Any) -> bool:
    """Whether the update is ``[RemoveMessage(id=REMOVE_ALL_MESSAGES)]`` alone."""
    return (
        isinstance(messages, list)
        and len(messages) == 1
        and _field(messages[0], "type") == "remove"
        and _field(messages[0], "id") == REMOVE_ALL_MESSAGES
    )
