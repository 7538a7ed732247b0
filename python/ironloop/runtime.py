"""The run-scoped context of a graph run, as LangGraph's ``langgraph.runtime``.

``StateGraph(State, context_schema=Ctx)`` declares what a run is given with
``invoke(input, config, context=Ctx(...))``; nodes read it through a ``runtime``
parameter or :func:`get_runtime`.

Example:
    >>> from dataclasses import dataclass
    >>> from typing import TypedDict
    >>> from ironloop import START, StateGraph
    >>> from ironloop.runtime import Runtime
    >>> @dataclass
    ... class Ctx:
    ...     user: str
    >>> class S(TypedDict):
    ...     greeting: str
    >>> def greet(state: S, runtime: Runtime[Ctx]) -> dict:
    ...     return {"greeting": f"hi {runtime.context.user}"}
    >>> g = StateGraph(S, context_schema=Ctx)
    >>> _ = g.add_node("greet", greet).add_edge(START, "greet")
    >>> g.compile().invoke({}, context=Ctx(user="ann"))
    {'greeting': 'hi ann'}
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ironloop._runtime import task_var

__all__ = ["ExecutionInfo", "Runtime", "ServerInfo", "get_runtime"]

ContextT = TypeVar("ContextT")


@dataclasses.dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Where a node (or tool) runs: LangGraph's read-only ``Runtime.execution_info``.

    ``thread_id`` is ``None`` without a checkpointer's thread, ``run_id`` when the
    config gives none; ``node_attempt`` counts from 1 under a ``retry_policy``.

    Example:
        >>> info = ExecutionInfo(checkpoint_id="c1", checkpoint_ns="", task_id="t1")
        >>> info.patch(node_attempt=2).node_attempt, info.node_attempt
        (2, 1)
    """

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    run_id: str | None = None
    node_attempt: int = 1
    node_first_attempt_time: float | None = None

    def patch(self, **overrides: Any) -> ExecutionInfo:
        """A copy with ``overrides`` applied (the object itself is frozen)."""
        return dataclasses.replace(self, **overrides)


@dataclasses.dataclass(frozen=True, slots=True)
class ServerInfo:
    """What an Agent Server run knows of its deployment (LangGraph's ``ServerInfo``):
    ``None`` in ``Runtime.server_info`` outside a server."""

    assistant_id: str
    graph_id: str
    user: Any = None


@dataclasses.dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """What a node of a running graph can reach besides its state: the run's
    ``context``, the graph's ``store`` and the ``custom`` stream's writer."""

    context: ContextT = None  # type: ignore[assignment]  # LangGraph's default
    store: Any = None
    stream_writer: Callable[[Any], None] = lambda _payload: None
    previous: Any = None
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None


#: The running graph's context, store and config (the dict given to ``invoke`` /
#: ``stream``): set around a run, and seen by its nodes and tools (they run in a copy
#: of the caller's context).
_scope: contextvars.ContextVar[tuple[Any, Any, Any] | None] = contextvars.ContextVar(
    "ironloop_runtime", default=None
)


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The :class:`Runtime` of the graph run this is called from (a node, a tool, a
    router). ``context_schema`` only narrows the type for checkers.

    Raises ``RuntimeError`` outside a graph run, as LangGraph does."""
    scope = _scope.get()
    if scope is None:
        raise RuntimeError("get_runtime() called outside of a graph run")
    # Without a `custom` stream every task of the run has the same Runtime: made once
    # (a frozen dataclass costs ~2 µs to build, a hook node's whole budget). This test
    # is `get_stream_writer() is _noop`, inlined: it runs for every hook call.
    scratch = task_var.get(None)
    if scratch is None or not scratch.streams_custom:
        last = _last_runtime
        if last[0] is scope:
            return last[1]
    from ironloop._node_calls import _noop, get_stream_writer

    writer = get_stream_writer()
    context, store, _config = scope
    runtime: Runtime[Any] = Runtime(context=context, store=store, stream_writer=writer)
    if writer is _noop:
        _remember(scope, runtime)
    return runtime


#: The last run scope whose tasks share a Runtime, and that Runtime. Holding the scope
#: keeps it alive, so `is` never matches a new scope at a reused address.
_last_runtime: tuple[Any, Any] = (None, None)


def _remember(scope: Any, runtime: Any) -> None:
    global _last_runtime
    _last_runtime = (scope, runtime)


def _coerce_context(context_schema: Any, context: Any) -> Any:
    """A ``dict`` given as the context of a graph whose ``context_schema`` is a
    dataclass or a pydantic model, made an instance of it (as LangGraph does, so
    ``invoke(..., context={"user": "ann"})`` reads as ``runtime.context.user``)."""
    if not isinstance(context, dict) or not isinstance(context_schema, type):
        return context
    is_pydantic = hasattr(context_schema, "model_validate")
    if dataclasses.is_dataclass(context_schema) or is_pydantic:
        return context_schema(**context)
    return context


def _enter(
    context: Any, store: Any, context_schema: Any = None, config: Any = None
) -> contextvars.Token[tuple[Any, Any, Any] | None]:
    """Scopes a run; a run inside another (a subgraph) inherits what it is not given."""
    context = _coerce_context(context_schema, context)
    outer = _scope.get()
    if outer is not None:
        context = outer[0] if context is None else context
        store = outer[1] if store is None else store
        config = outer[2] if config is None else config
    return _scope.set((context, store, config))


def _run_config() -> dict[str, Any] | None:
    """The config the running graph was given (``invoke(input, config)``), for what
    reads it outside a node's ``config`` parameter (a LangChain tool's
    ``RunnableConfig``); ``None`` outside a run or when none was given."""
    scope = _scope.get()
    return None if scope is None else scope[2]


def _with_runtime(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a node with a ``runtime`` parameter, given the run's :class:`Runtime`."""
    if inspect.iscoroutinefunction(fn):

        async def arun(state: Any, **kw: Any) -> Any:
            return await fn(state, runtime=get_runtime(), **kw)

        return arun

    def run(state: Any, **kw: Any) -> Any:
        return fn(state, runtime=get_runtime(), **kw)

    return run
