"""What ``builder.nodes`` and ``compiled.nodes`` hold, in LangGraph's shapes: a
``StateNodeSpec`` per node added (``.runnable``, ``.metadata``, ``.input_schema``,
``.retry_policy``, ``.cache_policy``, ``.ends``, ``.defer``, ...) and, once compiled,
a ``PregelNode`` (``.bound``, ``.metadata``, ``.subgraphs``, ``.copy(update)``).

They describe the graph; the engine runs what ``StateGraph.actions`` holds (the same
functions, wrapped with their retries and timeouts), so code that reads a node back
(``builder.nodes["n"].runnable.func``, a callable object's counters, a react agent's
``nodes["agent"].bound.func``) sees the object it gave ``add_node``.

Example:
    >>> from typing import TypedDict
    >>> from ironloop import StateGraph, START
    >>> class S(TypedDict):
    ...     n: int
    >>> def inc(state: S) -> S:
    ...     return {"n": state["n"] + 1}
    >>> builder = StateGraph(S).add_node(inc).add_edge(START, "inc")
    >>> builder.nodes["inc"].runnable.func is inc
    True
    >>> builder.compile().nodes["inc"].bound.invoke({"n": 1})
    {'n': 2}
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from ironloop._compiled import CompiledStateGraph
from ironloop._node_prep import _is_async
from ironloop.types import CachePolicy, RetryPolicy, TimeoutPolicy


class NodeRunnable:
    """A function node as LangGraph's ``RunnableCallable`` shows it: ``func`` is the
    sync callable given to ``add_node`` (``None`` for an async one), ``afunc`` the
    async one, and ``invoke`` / ``ainvoke`` call it on an input (with ``config`` when
    it takes one) outside any run."""

    def __init__(self, func: Any, name: str) -> None:
        is_async = _is_async(func)
        self.func: Any = None if is_async else func
        self.afunc: Any = func if is_async else None
        self.name = name

    def _call(self, fn: Any, input: Any, config: Any) -> Any:
        try:
            takes_config = "config" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes_config = False
        return fn(input, config=config or {}) if takes_config else fn(input)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if self.func is None:
            import asyncio  # only here: a sync program never imports it (test_cold_paths)

            return asyncio.run(self.ainvoke(input, config))
        return self._call(self.func, input, config)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if self.afunc is None:
            return self._call(self.func, input, config)
        return await self._call(self.afunc, input, config)

    def __repr__(self) -> str:
        return f"NodeRunnable({self.name!r})"


def node_runnable(given: Any, name: str) -> Any:
    """What ``StateNodeSpec.runnable`` holds for the object given to ``add_node``: a
    graph, a ``ToolNode`` or a LangChain ``Runnable`` as it is (each has ``invoke``), a
    function or callable object as a :class:`NodeRunnable`, as LangGraph's
    ``coerce_to_runnable``."""
    if callable(getattr(given, "invoke", None)):
        return given
    return NodeRunnable(given, name)


@dataclasses.dataclass(slots=True)
class StateNodeSpec:
    """A node as ``add_node`` declared it (LangGraph's ``StateNodeSpec``)."""

    runnable: Any
    metadata: dict[str, Any] | None
    input_schema: Any
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None
    cache_policy: CachePolicy | None
    is_error_handler: bool = False
    error_handler_node: str | None = None
    ends: tuple[str, ...] | dict[str, str] | None = ()
    defer: bool = False
    timeout: TimeoutPolicy | None = None


def spec_ends(ends: dict[str, str | None]) -> tuple[str, ...] | dict[str, str]:
    """``StateNodeSpec.ends`` from the builder's targets-to-labels map: the targets, or
    the map when some have a label (LangGraph's ``destinations`` forms)."""
    if any(label is not None for label in ends.values()):
        return {k: v if v is not None else k for k, v in ends.items()}
    return tuple(ends)


class PregelNode:
    """A compiled graph's node (``compiled.nodes[name]``), as LangGraph's
    ``PregelNode``: ``bound`` is the node's runnable (``builder.nodes[name].runnable``),
    ``subgraphs`` the compiled graph it is, if any. ``copy(update)`` returns one with
    ``update``'s attributes replaced. It describes the node; changing it does not
    change how the graph runs."""

    def __init__(
        self,
        *,
        bound: Any,
        triggers: Sequence[str] = (),
        channels: str | list[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy | None = None,
        timeout: TimeoutPolicy | None = None,
        is_error_handler: bool = False,
        error_handler_node: str | None = None,
        subgraphs: Sequence[Any] | None = None,
    ) -> None:
        self.bound = bound
        self.triggers = list(triggers)
        self.channels = channels if channels is not None else []
        self.metadata = metadata
        self.tags = tags
        self.retry_policy = (
            (retry_policy,) if isinstance(retry_policy, RetryPolicy) else retry_policy
        )
        self.cache_policy = cache_policy
        self.timeout = timeout
        self.is_error_handler = is_error_handler
        self.error_handler_node = error_handler_node
        if subgraphs is None:
            subgraphs = [bound] if isinstance(bound, CompiledStateGraph) else []
        self.subgraphs = list(subgraphs)

    @classmethod
    def of(cls, spec: StateNodeSpec) -> PregelNode:
        return cls(
            bound=spec.runnable,
            metadata=spec.metadata,
            retry_policy=spec.retry_policy,
            cache_policy=spec.cache_policy,
            timeout=spec.timeout,
            is_error_handler=spec.is_error_handler,
            error_handler_node=spec.error_handler_node,
        )

    def copy(self, update: dict[str, Any]) -> PregelNode:
        return PregelNode(**{**self.__dict__, **update})

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.bound.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return await self.bound.ainvoke(input, config, **kwargs)

    def __repr__(self) -> str:
        return f"PregelNode(bound={self.bound!r})"
