"""Chat messages, shaped like langchain-core's.

The classes are implemented in Rust: a message object wraps a shared immutable
value, so passing long histories around costs nothing.

Example:
    >>> from ironloop.messages import AIMessage, ToolCall
    >>> ai = AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}])
    >>> ai.tool_calls[0]["name"], ai.tool_calls[0].args
    ('add', {'a': 1})
"""

from __future__ import annotations

from typing import Any

from ironloop._ironloop import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    _coerce_message,
)

__all__ = [
    "AIMessage",
    "AnyMessage",
    "BaseMessage",
    "HumanMessage",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "from_langchain",
    "to_langchain",
]

AnyMessage = BaseMessage


def to_langchain(messages: Any) -> Any:
    """A message (or a list of them) as langchain-core message(s); needs langchain-core.

    Takes ironloop messages, langchain-core ones (kept as they are) and the other forms
    ironloop accepts (``("user", "hi")``, ``{"role": ..., "content": ...}``). The result
    compares equal to the ironloop message it came from.

    Example:
        >>> lc = to_langchain(AIMessage("hi", id="a1"))
        >>> type(lc).__module__.split(".")[0], lc.content, lc == AIMessage("hi", id="a1")
        ('langchain_core', 'hi', True)
    """
    from ironloop._langchain import to_langchain as convert

    return convert(messages)


def from_langchain(messages: Any) -> Any:
    """A langchain-core message (or a list of them) as ironloop message(s); the inverse
    of :func:`to_langchain`. ``AIMessageChunk`` s become ``AIMessage`` s.

    Example:
        >>> from_langchain(to_langchain(HumanMessage("hi", id="1"))) == HumanMessage("hi", id="1")
        True
    """
    if isinstance(messages, (list, tuple)) and not (
        isinstance(messages, tuple) and len(messages) == 2 and isinstance(messages[0], str)
    ):
        return [from_langchain(m) for m in messages]
    return _coerce_message(messages)


class ToolCall(dict):  # type: ignore[type-arg]
    """A tool call: the dict ``{"name", "args", "id", "type": "tool_call"}`` that
    langchain-core uses, whose keys are also attributes.

    Example:
        >>> c = ToolCall(name="add", args={"a": 1, "b": 2}, id="call_1")
        >>> c["args"] == c.args
        True
    """

    def __init__(self, name: str, args: dict[str, Any], id: str | None = None, **extra: Any):
        super().__init__(name=name, args=args, id=id, type="tool_call", **extra)

    @property
    def name(self) -> str:
        return self["name"]  # type: ignore[no-any-return]

    @property
    def args(self) -> dict[str, Any]:
        return self["args"]  # type: ignore[no-any-return]

    @property
    def id(self) -> str | None:
        return self["id"]  # type: ignore[no-any-return]

    @property
    def type(self) -> str:
        return "tool_call"
