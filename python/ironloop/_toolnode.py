"""``ToolNode``: runs the tool calls of the last AI message (the dispatch runs in
Rust, in ``src/prebuilt/tool_node.rs``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from ironloop._foreign import is_langchain_tool
from ironloop._ironloop import NativeTool, _ToolNodeCore
from ironloop._tool import Tool, tool

__all__ = ["ToolNode"]


Strategy = Literal["parallel", "sequential"] | tuple[Literal["batched"], int]
HandleToolErrors = (
    bool
    | str
    | Callable[[BaseException], str]
    | type[BaseException]
    | tuple[type[BaseException], ...]
)


class ToolNode:
    """Runs the tool calls of the last AI message and returns one ``ToolMessage`` per
    call, in call order. Dispatch runs in Rust: sync tools on a thread pool sized for
    I/O, async tools concurrently on the event loop.

    Args:
        tools: ``@tool`` objects, ``Tool`` objects, plain functions, or Rust tools
            (``NativeTool``, e.g. from ``ironloop.tools.workspace``).
        handle_tool_errors: ``True`` (default) turns every failure into an error
            ``ToolMessage`` the model can read; ``False`` re-raises; a string is used as
            the error text; a callable maps the exception to the text; an exception
            type (or tuple) handles only those and re-raises the rest.
        strategy: ``"parallel"`` (default), ``"sequential"`` or ``("batched", n)``.
        max_concurrency: at most this many calls in flight (``"parallel"`` only).
        messages_key: the state key holding the conversation (default ``"messages"``):
            the node reads the last AI message from it and writes its results to it.
        deny: tool names that may not run: a call to one gets an error ``ToolMessage``
            saying it is not allowed, and the tool never runs (enforced in Rust).
        allow_only: when given, only these tools may run; every other call is refused
            the same way. ``deny`` wins over ``allow_only``. Both are attributes too:
            setting them takes effect at the node's next step.

    Example:
        >>> from ironloop import tool, ToolNode
        >>> from ironloop.messages import AIMessage
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     "Adds."
        ...     return a + b
        >>> call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "1"}
        >>> ai = AIMessage(content="", tool_calls=[call])
        >>> ToolNode([add]).invoke({"messages": [ai]})["messages"][0].content
        '3'
    """

    def __init__(
        self,
        tools: Sequence[Tool | NativeTool | Callable[..., Any]],
        *,
        name: str = "tools",
        handle_tool_errors: HandleToolErrors = True,
        strategy: Strategy = "parallel",
        max_concurrency: int | None = None,
        messages_key: str = "messages",
        deny: Sequence[str] = (),
        allow_only: Sequence[str] | None = None,
    ) -> None:
        converted: list[Tool | NativeTool] = [_as_tool(t) for t in tools]
        names = [t.name for t in converted]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"ToolNode got several tools named {', '.join(map(repr, dupes))}")
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)
        ):
            raise TypeError(f"max_concurrency must be an int or None, got {max_concurrency!r}")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1 (or None), got {max_concurrency}")
        self.name = name
        self.tools_by_name: dict[str, Tool | NativeTool] = dict(zip(names, converted, strict=True))
        self.handle_tool_errors = handle_tool_errors
        self.strategy = strategy
        self.max_concurrency = max_concurrency
        self.messages_key = messages_key
        self._core = _ToolNodeCore(
            converted,
            strategy=strategy,
            max_concurrency=max_concurrency,
            handle_tool_errors=handle_tool_errors,
            messages_key=messages_key,
            deny=_names("deny", deny),
            allow_only=None if allow_only is None else _names("allow_only", allow_only),
        )

    @property
    def deny(self) -> list[str]:
        """The tools that may not run (sorted)."""
        return list(self._core.permissions()[0])

    @deny.setter
    def deny(self, names: Sequence[str]) -> None:
        self._core.set_permissions(_names("deny", names), self._core.permissions()[1])

    @property
    def allow_only(self) -> list[str] | None:
        """The only tools that may run (sorted), or ``None`` when every tool not
        denied may."""
        allow = self._core.permissions()[1]
        return None if allow is None else list(allow)

    @allow_only.setter
    def allow_only(self, names: Sequence[str] | None) -> None:
        allow = None if names is None else _names("allow_only", names)
        self._core.set_permissions(self._core.permissions()[0], allow)

    def allowed_tools(self) -> list[Tool | NativeTool]:
        """The tools the lists let run: what a model should be offered."""
        runnable = set(self._core.runnable_names())
        return [t for n, t in self.tools_by_name.items() if n in runnable]

    def invoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> Any:
        """Runs the calls; returns ``{messages_key: [...]}`` (or a list for a list input)."""
        return self._core.invoke(input, store=store, on_progress=on_progress)

    async def ainvoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> Any:
        """Like ``invoke``; async tools run on the running event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        return await self._core.ainvoke(input, loop, store=store, on_progress=on_progress)

    def __repr__(self) -> str:
        return f"ToolNode(tools={list(self.tools_by_name)!r})"


def _names(what: str, names: Any) -> list[str]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be a list of tool names, got {names!r}")
    return list(names)


def _as_tool(t: Any) -> Tool | NativeTool:
    """An ironloop tool from what a tool list may hold: ironloop tools as they are, a
    LangChain ``BaseTool`` adapted, a plain function decorated."""
    if isinstance(t, (Tool, NativeTool)):
        return t
    if is_langchain_tool(t):
        from ironloop._langchain import LangChainTool

        return LangChainTool(t)
    return tool(t)
