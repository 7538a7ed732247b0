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
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    _coerce_message,
)

__all__ = [
    "AIMessage",
    "AIMessageChunk",
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
    of :func:`to_langchain` (an ``AIMessageChunk`` stays a chunk, with its
    ``tool_call_chunks``).

    Example:
        >>> from_langchain(to_langchain(HumanMessage("hi", id="1"))) == HumanMessage("hi", id="1")
        True
    """
    from ironloop._foreign import is_langchain_message

    if isinstance(messages, (list, tuple)) and not (
        isinstance(messages, tuple) and len(messages) == 2 and isinstance(messages[0], str)
    ):
        return [from_langchain(m) for m in messages]
    if is_langchain_message(messages):
        from ironloop._langchain import from_langchain as convert

        return convert(messages)
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


# --------------------------------------------------------------------------- pydantic


def _pydantic_core_schema(cls: type, source: Any, handler: Any) -> Any:
    """Lets pydantic models hold messages (``messages: Annotated[list[AnyMessage],
    add_messages]`` in a pydantic state): a message of ``cls`` is taken as it is, and
    what a message can be made from (its ``model_dump()`` dict, a ``("user", "hi")``
    tuple, ...) is made into one; dumping gives the message's dict."""
    from pydantic_core import core_schema

    def validate(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        try:
            msg = _coerce_message(value)
        except Exception as e:
            raise ValueError(f"not a message: {e}") from None
        if not isinstance(msg, cls):
            raise ValueError(f"expected {cls.__name__}, got {type(msg).__name__}")
        return msg

    return core_schema.no_info_plain_validator_function(
        validate,
        serialization=core_schema.plain_serializer_function_ser_schema(lambda m: m.model_dump()),
    )


def _pydantic_json_schema(cls: type, core_schema: Any, handler: Any) -> dict[str, Any]:
    return {"type": "object", "title": cls.__name__}


# Defined here rather than in Rust: pydantic is a Python concern, and optional.
BaseMessage.__get_pydantic_core_schema__ = classmethod(_pydantic_core_schema)  # type: ignore[method-assign, assignment]
BaseMessage.__get_pydantic_json_schema__ = classmethod(_pydantic_json_schema)  # type: ignore[method-assign, assignment]
