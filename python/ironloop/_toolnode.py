"""``ToolNode``: runs the tool calls of the last AI message (the dispatch runs in
Rust, in ``src/prebuilt/tool_node.rs``)."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ironloop._foreign import is_langchain_tool
from ironloop._ironloop import NativeTool, _ToolNodeCore
from ironloop._params import params_of
from ironloop._tool import Tool, tool
from ironloop._tool_call import node_scope, scope_for

if TYPE_CHECKING:
    from ironloop._tool_wrap import CallRunner

__all__ = ["ToolNode"]


Strategy = Literal["parallel", "sequential"] | tuple[Literal["batched"], int]
HandleToolErrors = (
    bool
    | str
    | Callable[[BaseException], str]
    | type[BaseException]
    | tuple[type[BaseException], ...]
)
#: ``(request, execute) -> ToolMessage | Command``; the async form awaits ``execute``.
ToolCallWrapper = Callable[[Any, Callable[[Any], Any]], Any]
AsyncToolCallWrapper = Callable[[Any, Callable[[Any], Awaitable[Any]]], Awaitable[Any]]


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
        wrap_tool_call: an interceptor ``(request, execute) -> ToolMessage | Command``
            (LangGraph's): it sees each call as a ``ToolCallRequest`` and may answer it
            itself, change it (``request.override(...)``) or call ``execute`` any
            number of times. ``execute`` runs the call's tool, errors handled by
            ``handle_tool_errors``; what the interceptor raises is handled the same way.
        awrap_tool_call: the async form, used under ``ainvoke``. Either one alone serves
            both ``invoke`` and ``ainvoke``.
        tags: tags of the node (kept for LangGraph's signature).

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
        tags: list[str] | None = None,
        wrap_tool_call: ToolCallWrapper | None = None,
        awrap_tool_call: AsyncToolCallWrapper | None = None,
    ) -> None:
        converted: list[Tool | NativeTool] = [_as_tool(t) for t in tools]
        names = [t.name for t in converted]
        #: The tools as given (a LangChain tool stays one): what interceptors see.
        self._originals: dict[str, Any] = {
            n: t if is_langchain_tool(t) or isinstance(t, (Tool, NativeTool)) else c
            for n, t, c in zip(names, tools, converted, strict=True)
        }
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
        #: The tools the Rust node runs (a LangChain tool adapted), by name.
        self._tools: dict[str, Tool | NativeTool] = dict(zip(names, converted, strict=True))
        self.handle_tool_errors = handle_tool_errors
        #: The policy as the node applies it: a handler function limited to the
        #: exception types its first parameter is annotated with.
        self._error_policy = typed_handler(handle_tool_errors)
        self.strategy = strategy
        self.max_concurrency = max_concurrency
        self.messages_key = messages_key
        self.tags = list(tags) if tags else None
        for what, fn in (("wrap_tool_call", wrap_tool_call), ("awrap_tool_call", awrap_tool_call)):
            if fn is not None and not callable(fn):
                raise TypeError(f"ToolNode({what}=) takes a function, got {type(fn).__name__}")
        self.wrap_tool_call = wrap_tool_call
        self.awrap_tool_call = awrap_tool_call
        self._core = _ToolNodeCore(
            converted,
            strategy=strategy,
            max_concurrency=max_concurrency,
            handle_tool_errors=self._error_policy,
            messages_key=messages_key,
            deny=_names("deny", deny),
            allow_only=None if allow_only is None else _names("allow_only", allow_only),
        )
        if wrap_tool_call is not None or awrap_tool_call is not None:
            self._runner()  # made now: a run does not pay for its imports

    @property
    def tools_by_name(self) -> dict[str, Any]:
        """The tools by name, as they were given (a LangChain ``BaseTool`` stays one, as
        LangGraph's ``ToolNode.tools_by_name`` holds them); a plain function is the
        ironloop ``Tool`` made of it."""
        return self._originals

    @property
    def _handle_tool_errors(self) -> HandleToolErrors:
        # LangGraph's private spelling, which langgraph-supervisor reads to re-make a
        # ToolNode with the same settings.
        return self.handle_tool_errors

    @property
    def _messages_key(self) -> str:
        # As ``_handle_tool_errors``.
        return self.messages_key

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
        return [t for n, t in self._tools.items() if n in runnable]

    def _args(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> tuple[Any, dict[str, Any] | None, Any, Callable[[Any], None] | None]:
        """``invoke``'s and ``ainvoke``'s parameters (shown on both)."""
        return input, config, store, on_progress

    def _run(self, args: tuple[Any, Any, Any, Any], loop: Any) -> Any:
        """Both entry points' body: runs the calls (``loop`` is ``None``), or starts them
        on the running event ``loop`` and returns what to await."""
        input, config, store, on_progress = args
        runner = self._runner(_calls_given(input))
        if runner is not None:
            if loop is None:
                return runner.invoke(input, config, store)
            return runner.ainvoke(input, config, store)
        token = node_scope.set(scope_for(config, self._tool_list()))
        try:
            if store is None:
                store = _scope_store()
            if loop is None:
                return self._core.invoke(input, store=store, on_progress=on_progress)
            return self._core.ainvoke(input, loop, store=store, on_progress=on_progress)
        finally:
            node_scope.reset(token)

    @params_of(_args)
    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the calls; returns ``{messages_key: [...]}`` (or a list for a list input)."""
        return self._run(self._args(*args, **kwargs), None)

    @params_of(_args)
    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        """Like ``invoke``; async tools run on the running event loop."""
        import asyncio

        return await self._run(self._args(*args, **kwargs), asyncio.get_running_loop())

    def _tool_list(self) -> list[Any]:
        """The node's tools as given (``ToolRuntime.tools``)."""
        return list(self._originals.values())

    def _runner(self, calls_given: bool = False) -> CallRunner | None:
        """The runner of calls one by one (made once, on first use): the node's when it
        has ``wrap_tool_call`` / ``awrap_tool_call``, or, for an input of tool calls
        rather than messages (``calls_given``), one with no interceptor."""
        wrapped = self.wrap_tool_call is not None or self.awrap_tool_call is not None
        if not wrapped and not calls_given:
            return None
        runner: CallRunner | None = self.__dict__.get("_wrapped")
        if runner is None:
            from ironloop._tool_wrap import CallRunner
            from ironloop.middleware.types import interceptor

            wraps = []
            if wrapped:
                wrap = interceptor(self.wrap_tool_call, self.awrap_tool_call)
                wraps.append((wrap, "wrap_tool_call"))
            runner = self.__dict__["_wrapped"] = CallRunner(self, wraps)
        return runner

    def __repr__(self) -> str:
        return f"ToolNode(tools={list(self.tools_by_name)!r})"


def _calls_given(input: Any) -> bool:
    """Whether ``input`` gives tool calls (LangGraph's ``[tool_call, ...]`` or a
    ``tool_call_with_context`` dict) rather than messages."""
    if isinstance(input, list):
        return bool(input) and isinstance(input[-1], dict) and input[-1].get("type") == "tool_call"
    return isinstance(input, dict) and input.get("__type") == "tool_call_with_context"


def _handled_types(handler: Callable[..., Any]) -> tuple[type[BaseException], ...] | None:
    """The exception types a handler function's first parameter is annotated with (a
    type or a union of them), or ``None`` when it names none: it handles every
    exception (LangGraph's rule). A union with a non-exception type is a mistake."""
    try:
        params = list(inspect.signature(handler).parameters.values())
        hints = typing.get_type_hints(handler)
    except (TypeError, ValueError, NameError):  # no signature or unresolvable hints
        return None
    if not params:
        return None
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hint = hints.get(first.name)
    if hint is None:
        return None
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        if not all(isinstance(m, type) and issubclass(m, Exception) for m in members):
            raise ValueError(
                "handle_tool_errors: every type in the error handler's annotation must be an "
                f"Exception type (e.g. `def handler(e: ValueError | TypeError)`); got {hint}"
            )
        return tuple(members)
    if isinstance(hint, type) and issubclass(hint, Exception) and hint is not Exception:
        return (hint,)
    return None


def typed_handler(handle: Any) -> Any:
    """``handle_tool_errors`` as the node applies it: a handler function annotated with
    the exceptions it takes re-raises any other (so it reaches the caller, as in
    LangGraph); every other policy as it is."""
    if isinstance(handle, (bool, str, type, tuple)) or not callable(handle):
        return handle
    handled = _handled_types(handle)
    if handled is None:
        return handle

    def handle_typed(e: BaseException) -> Any:
        if isinstance(e, handled):
            return handle(e)
        raise e

    return handle_typed


def _scope_store() -> Any:
    """The store of LangGraph's runtime in a standalone call's config, if any."""
    scope = node_scope.get()
    return getattr(scope.runtime, "store", None) if scope and scope.runtime else None


def _names(what: str, names: Any) -> list[str]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be a list of tool names, got {names!r}")
    return list(names)


def _as_tool(t: Any) -> Tool | NativeTool:
    """An ironloop tool from what a tool list may hold: ironloop tools as they are, a
    LangChain ``BaseTool`` adapted, a plain function decorated."""
    if isinstance(t, Tool) and getattr(t, "_building", False):
        raise TypeError(
            f"tool {t.name!r} has no function: finish it with .call(fn) before giving it "
            "to an agent"
        )
    if isinstance(t, (Tool, NativeTool)):
        return t
    if is_langchain_tool(t):
        from ironloop._langchain_tools import LangChainTool

        return LangChainTool(t)
    return tool(t)
