"""Chat messages: langchain-core's classes when langchain-core is installed, else
ironloop's own, shaped like them.

Which classes a process uses is decided once, when a message class is first needed
(a name below read, or the engine making its first message for Python): if
``langchain_core`` can be imported, ``AIMessage``, ``HumanMessage``, ... here
*are* ``langchain_core.messages``'s classes (so both import paths are interchangeable
and every message a node, tool, hook, stream or result hands to Python code is a
langchain-core message, which LangChain's models, prompts and ``isinstance`` checks
accept). The Rust engine still holds each message as one shared immutable value and
makes its langchain-core object once; a node that returns a message gets the very
same object back. Without langchain-core the classes are ironloop's own, implemented
in Rust (``ironloop._ironloop``), with the same fields and methods. Importing
langchain-core takes ~130 ms, so the choice waits for the first use: ``import ironloop``
and a graph that never handles a message do not pay it.

Example:
    >>> from ironloop.messages import AIMessage, ToolCall
    >>> ai = AIMessage(content="", tool_calls=[ToolCall(name="add", args={"a": 1}, id="c1")])
    >>> ai.tool_calls[0]["name"], ai.tool_calls[0]["args"]
    ('add', {'a': 1})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ironloop import _ironloop
from ironloop._ironloop import (
    _choose_messages_on_first_use,
    _coerce_message,
    _use_langchain_messages,
)

__all__ = [
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "BaseMessage",
    "HumanMessage",
    "MESSAGE_TYPES",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "USES_LANGCHAIN",
    "from_langchain",
    "to_langchain",
]


def _langchain_messages() -> Any:
    """``langchain_core.messages``, or ``None`` when it cannot be imported (not
    installed, or a dependency of it missing)."""
    try:
        from langchain_core import messages
    except ImportError:
        return None
    return messages


#: The names whose value waits for the choice of classes (see the module's docstring):
#: all but the ones defined below.
_CHOSEN_LATER = frozenset(__all__) - {"ToolCall", "from_langchain", "to_langchain"}

if TYPE_CHECKING:
    # Type checkers see ironloop's own classes: langchain-core's have the same fields
    # and methods, and a checker cannot know which a process picks.
    from ironloop._ironloop import (
        AIMessage,
        AIMessageChunk,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
    )

    AnyMessage = BaseMessage
    #: Whether this process's message classes are langchain-core's.
    USES_LANGCHAIN: bool
    #: Every class a message object may have in this process, for ``isinstance``
    #: checks: the chosen base class and ironloop's own (still made by code that asks
    #: for ``ironloop._ironloop``'s classes by name).
    MESSAGE_TYPES: tuple[type, ...]


def _choose() -> None:
    """Makes this process's choice of message classes, once: tells the engine and
    sets the module's names. Called on the first read of one of them, or by the
    engine before it makes its first message for Python."""
    chosen = globals()
    if "USES_LANGCHAIN" in chosen:
        return
    lc = _langchain_messages()
    names = [
        "AIMessage",
        "AIMessageChunk",
        "BaseMessage",
        "HumanMessage",
        "RemoveMessage",
        "SystemMessage",
        "ToolMessage",
    ]
    source: Any = lc if lc is not None else _ironloop
    classes = {name: getattr(source, name) for name in names}
    if lc is not None:
        _use_langchain_messages({**classes, "BaseMessageChunk": lc.BaseMessageChunk})
    else:
        _use_langchain_messages(None)
    chosen.update(classes)
    chosen["AnyMessage"] = lc.AnyMessage if lc is not None else _ironloop.BaseMessage
    chosen["MESSAGE_TYPES"] = tuple({classes["BaseMessage"], _ironloop.BaseMessage})
    chosen["USES_LANGCHAIN"] = lc is not None


def __getattr__(name: str) -> Any:
    if name in _CHOSEN_LATER:
        _choose()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_choose_messages_on_first_use(_choose)


def to_langchain(messages: Any) -> Any:
    """A message (or a list of them) as langchain-core message(s); needs langchain-core.

    Takes ironloop messages, langchain-core ones (kept as they are) and the other forms
    ironloop accepts (``("user", "hi")``, ``{"role": ..., "content": ...}``). The result
    compares equal to the ironloop message it came from.

    Example:
        >>> from ironloop.messages import AIMessage
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
        >>> from ironloop.messages import HumanMessage
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
# (langchain-core's classes are pydantic models already.)
_ironloop.BaseMessage.__get_pydantic_core_schema__ = classmethod(_pydantic_core_schema)  # type: ignore[method-assign, assignment]
_ironloop.BaseMessage.__get_pydantic_json_schema__ = classmethod(_pydantic_json_schema)  # type: ignore[method-assign, assignment]
