"""Markers for tool parameters that the runtime fills in instead of the model.

They are used exactly as in LangGraph, as ``typing.Annotated`` metadata::

    from typing import Annotated, Any
    from ironloop import tool, InjectedState, InjectedStore, InjectedToolCallId

    @tool
    def remember(
        fact: str,
        messages: Annotated[list, InjectedState("messages")],
        store: Annotated[Any, InjectedStore()],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> str:
        '''Remember a fact.'''
        ...

Injected parameters are hidden from the JSON Schema the model sees. Each marker can
be given as the class itself or as an instance. Every marker carries the attribute
``__ironloop_inject__`` naming what is injected; the schema builder keys on it (the
native ``ToolContext`` class marks itself the same way, with ``"context"``).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["InjectedState", "InjectedStore", "InjectedToolCallId"]


class _InjectedArg:
    """Base class of the injection markers (not public)."""

    __ironloop_inject__: ClassVar[str] = ""
    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class InjectedState(_InjectedArg):
    """Inject the graph state (or one field of it) into a tool parameter.

    ``Annotated[dict, InjectedState]`` receives the whole state;
    ``Annotated[list, InjectedState("messages")]`` receives only ``state["messages"]``.

    Example::

        @tool
        def count_messages(messages: Annotated[list, InjectedState("messages")]) -> int:
            '''Count the messages so far.'''
            return len(messages)
    """

    __ironloop_inject__: ClassVar[str] = "state"
    __slots__ = ("field",)

    def __init__(self, field: str | None = None) -> None:
        if field is not None and not isinstance(field, str):
            raise TypeError(
                f"InjectedState(field) takes the name of a state field as a str, "
                f"got {type(field).__name__}"
            )
        self.field: str | None = field

    def __repr__(self) -> str:
        return "InjectedState()" if self.field is None else f"InjectedState({self.field!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InjectedState) and other.field == self.field

    def __hash__(self) -> int:
        return hash((InjectedState, self.field))


class InjectedStore(_InjectedArg):
    """Inject the graph's long-term store (e.g. ``InMemoryStore``) into a tool parameter.

    Usable as ``Annotated[Any, InjectedStore]`` or ``Annotated[Any, InjectedStore()]``.

    Example::

        @tool
        def recall(key: str, store: Annotated[Any, InjectedStore()]) -> str:
            '''Look a fact up.'''
            item = store.get(("facts",), key)
            return item.value if item else "unknown"
    """

    __ironloop_inject__: ClassVar[str] = "store"
    __slots__ = ()


class InjectedToolCallId(_InjectedArg):
    """Inject the id of the tool call being executed into a tool parameter.

    Usable as ``Annotated[str, InjectedToolCallId]``; handy for building a
    ``ToolMessage`` or a ``Command`` inside the tool.

    Example::

        @tool
        def ack(tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
            '''Acknowledge.'''
            return ToolMessage(content="ok", tool_call_id=tool_call_id)
    """

    __ironloop_inject__: ClassVar[str] = "tool_call_id"
    __slots__ = ()
