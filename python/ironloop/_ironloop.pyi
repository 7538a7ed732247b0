"""The native module (Rust, PyO3). Public names are re-exported by ``ironloop``."""

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal, final

from typing_extensions import disjoint_base

from ironloop.messages import ToolCall

__all__ = [
    "AIMessage",
    "BaseMessage",
    "HumanMessage",
    "RemoveMessage",
    "SystemMessage",
    "ToolContext",
    "ToolMessage",
    "_ToolNodeCore",
    "__version__",
]

__version__: str

@disjoint_base
class BaseMessage:
    """Base class of all messages; wraps a shared immutable value."""

    content: str | list[Any]
    id: str
    name: str | None
    @property
    def type(self) -> str: ...
    @property
    def text(self) -> str: ...
    def model_dump(self) -> dict[str, Any]: ...
    def pretty_repr(self) -> str: ...
    def pretty_print(self) -> None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class HumanMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        id: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> HumanMessage: ...

@final
class SystemMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        id: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> SystemMessage: ...

@final
class AIMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        tool_calls: Iterable[dict[str, Any]] | None = None,
        invalid_tool_calls: Iterable[dict[str, Any]] | None = None,
        usage_metadata: dict[str, int] | None = None,
        id: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> AIMessage: ...
    @property
    def tool_calls(self) -> list[ToolCall]: ...
    @property
    def invalid_tool_calls(self) -> list[dict[str, Any]]: ...
    @property
    def usage_metadata(self) -> dict[str, int] | None: ...

@final
class ToolMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        tool_call_id: str,
        name: str | None = None,
        status: Literal["success", "error"] = "success",
        artifact: Any = None,
        id: str | None = None,
        **kwargs: Any,
    ) -> ToolMessage: ...
    @property
    def tool_call_id(self) -> str: ...
    @property
    def status(self) -> Literal["success", "error"]: ...
    @property
    def artifact(self) -> Any: ...

@final
class RemoveMessage(BaseMessage):
    def __new__(cls, *, id: str) -> RemoveMessage: ...

@final
class ToolContext:
    """What a tool parameter typed ``ToolContext`` receives (hidden from the schema)."""

    __ironloop_inject__: str
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> str: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def state(self) -> Any: ...
    @property
    def store(self) -> Any: ...
    def progress(self, payload: Any) -> None: ...

@final
class _ToolNodeCore:
    def __new__(
        cls,
        tools: Iterable[Any],
        *,
        strategy: Any,
        max_concurrency: int | None = None,
        handle_tool_errors: Any,
    ) -> _ToolNodeCore: ...
    def invoke(
        self,
        input: Any,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> Any: ...
    def ainvoke(
        self,
        input: Any,
        event_loop: asyncio.AbstractEventLoop,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> Awaitable[Any]: ...
    def tool_names(self) -> list[str]: ...
