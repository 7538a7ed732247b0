"""Control-flow values for graphs, shaped as in LangGraph: ``Send``, ``Command``,
``Interrupt``, ``StateSnapshot`` and ``StateUpdate``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

from ironloop._constants import INTERRUPT
from ironloop._retry import default_retry_on
from ironloop._timeout import TimeoutPolicy
from ironloop._trace_policy import TracePolicy, omit_payload
from ironloop.warnings import LangGraphDeprecatedSinceV10, LangGraphDeprecatedSinceV11

__all__ = [
    "CachePolicy",
    "Command",
    "GraphOutput",
    "Interrupt",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StateUpdate",
    "TimeoutPolicy",
    "TracePolicy",
    "omit_payload",
]


class Send:
    """Runs ``node`` in the next step with ``arg`` as its input (map-reduce fan-out).
    ``timeout`` (seconds, a ``timedelta`` or a ``TimeoutPolicy``; a number is a
    ``run_timeout``) times this one task instead of the node's own timeout, as
    LangGraph 1.2's; it travels with the task, also through a checkpoint.

    Example:
        >>> def fan_out(state):
        ...     return [Send("work", {"item": x}) for x in state["items"]]
    """

    __slots__ = ("arg", "node", "timeout")

    def __init__(
        self, node: str, arg: Any, *, timeout: float | timedelta | TimeoutPolicy | None = None
    ) -> None:
        self.node = node
        self.arg = arg
        self.timeout = TimeoutPolicy.coerce(timeout)

    def __repr__(self) -> str:
        if self.timeout is None:
            return f"Send(node={self.node!r}, arg={self.arg!r})"
        return f"Send(node={self.node!r}, arg={self.arg!r}, timeout={self.timeout!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Send) and (self.node, self.arg, self.timeout) == (
            other.node,
            other.arg,
            other.timeout,
        )

    __hash__ = None  # type: ignore[assignment]


N = TypeVar("N")


@dataclass
class Command(Generic[N]):
    """Updates the state and/or routes from a node or a tool, or resumes an interrupt.
    ``Command[Literal["a", "b"]]`` annotates a node that routes to ``a`` or ``b``;
    ``graph=Command.PARENT`` sends the command to the graph that runs this one as a
    node.

    Example:
        >>> def node(state):
        ...     return Command(update={"count": 1}, goto="next_node")
        >>> # graph.invoke(Command(resume="yes"), config) answers an interrupt()
    """

    graph: str | None = None
    update: Any = None
    resume: Any = None
    goto: str | Send | Sequence[str | Send] = ()

    PARENT: ClassVar[str] = "__parent__"

    def __repr__(self) -> str:
        # As LangGraph's: only the fields that are set (``Command(goto=Send(...))``).
        shown = ((f.name, getattr(self, f.name)) for f in fields(self))
        return "Command({})".format(", ".join(f"{k}={v!r}" for k, v in shown if v))


@dataclass(frozen=True)
class Interrupt:
    """A pause requested by ``interrupt(value)`` (or ``interrupt_before/after``)."""

    value: Any
    id: str = field(default="")
    #: The schema of the value expected when resuming, as in LangGraph (``None``: any).
    response_schema: Any = field(default=None, kw_only=True)

    @property
    def interrupt_id(self) -> str:
        """LangGraph's former name of ``id`` (deprecated, as there)."""
        warnings.warn(
            "`interrupt_id` is deprecated. Use `id` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.id


class PregelTask(NamedTuple):
    id: str
    name: str
    path: tuple[Any, ...] = ()
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any = None


class RetryPolicy(NamedTuple):
    """How a node is retried when it fails (``add_node(..., retry_policy=...)``), as
    LangGraph's: up to ``max_attempts`` attempts in all, waiting ``initial_interval``
    seconds before the second, ``backoff_factor`` times longer before each next one (at
    most ``max_interval``, plus up to a second when ``jitter``). ``retry_on`` says which
    exceptions are retried: a class, a sequence of classes, or a predicate; the default
    retries connection errors and HTTP 5xx answers, not programming errors.

    Example:
        >>> RetryPolicy(max_attempts=5).max_attempts
        5
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )


@dataclass(frozen=True)
class Overwrite:
    """Replaces a reducer channel's value instead of folding ``value`` in, as
    LangGraph's: ``return {"items": Overwrite(["only"])}``. One task of a step may
    overwrite a channel (two raise ``InvalidUpdateError``); the channel's other writes
    in that step are dropped. ``{"__overwrite__": value}`` is the same write.

    Example:
        >>> Overwrite(["b"]).value
        ['b']
    """

    value: Any


OVERWRITE = "__overwrite__"


def _overwritten(value: Any) -> tuple[Any] | None:
    """``(v,)`` when ``value`` is an overwrite of ``v`` (an :class:`Overwrite`, its
    ``{"__overwrite__": v}`` form, or the ``{"type": "__overwrite__", "value": v}``
    form JSON makes of one), else ``None``: read by the engine for each write to a
    reducer channel."""
    if type(value) is Overwrite:
        return (value.value,)
    if type(value) is dict and len(value) <= 2:
        if len(value) == 1 and OVERWRITE in value:
            return (value[OVERWRITE],)
        if value.get("type") == OVERWRITE and "value" in value and len(value) == 2:
            return (value["value"],)
    return None


def _default_cache_key(*args: Any, **kwargs: Any) -> str | bytes:
    """LangGraph's default cache key: the pickled arguments (dicts made order-free)."""
    import pickle

    return pickle.dumps((_freeze(args), _freeze(kwargs)), protocol=5, fix_imports=False)


def _freeze(obj: Any, depth: int = 0) -> Any:
    if depth > 10:
        return obj
    if isinstance(obj, dict):
        return tuple(sorted((k, _freeze(v, depth + 1)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return tuple(_freeze(v, depth + 1) for v in obj)
    return obj


KeyFuncT = TypeVar("KeyFuncT", bound=Callable[..., "str | bytes"])


@dataclass(frozen=True)
class CachePolicy(Generic[KeyFuncT]):
    """Caches a node's or task's results (``add_node(..., cache_policy=)``, ``@task(
    cache_policy=)``) in the graph's ``cache`` (``compile(cache=InMemoryCache())``), as
    LangGraph's: the key is ``key_func`` of the input (default: the input pickled),
    and an entry lives ``ttl`` seconds (``None``: until cleared).

    Example:
        >>> CachePolicy(ttl=60).ttl
        60
    """

    key_func: KeyFuncT = _default_cache_key  # type: ignore[assignment]
    ttl: int | None = None


class StateSnapshot(NamedTuple):
    """A thread's state at one checkpoint (``graph.get_state(config)``)."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...] = ()


class StateUpdate(NamedTuple):
    """One update of ``bulk_update_state`` (as LangGraph's): ``values`` written as if
    node ``as_node`` had returned them. ``as_node="__input__"`` saves ``values`` as new
    input and ``"__copy__"`` copies the checkpoint beside it (a fork). ``task_id``
    (LangGraph's choice among several tasks of one node) must be ``None``: ironloop
    applies an update to the node, not to one of its tasks."""

    values: dict[str, Any] | Any | None
    as_node: str | None = None
    task_id: str | None = None


def __getattr__(name: str) -> Any:
    # `from ironloop.types import interrupt`, as `langgraph.types` offers it; defined in
    # `ironloop.graph` (which imports this module), hence looked up on first use.
    if name == "interrupt":
        from ironloop.graph import interrupt

        return interrupt
    raise AttributeError(f"module 'ironloop.types' has no attribute {name!r}")


OutputT = TypeVar("OutputT")


def _warn_v1_access(how: str) -> None:
    """LangGraph's deprecation warning for reading a ``GraphOutput`` as a v1 result
    (``how``: the reader's spelling), shown at the caller of the dunder method."""
    warnings.warn(
        f"Accessing GraphOutput via `{how}` is deprecated. Use `result.value` to "
        "access the output value directly, or `result.interrupts` for interrupts.",
        LangGraphDeprecatedSinceV11,
        stacklevel=3,
    )


@dataclass(frozen=True)
class GraphOutput(Generic[OutputT]):
    """What ``invoke`` / ``ainvoke`` return with ``version="v2"`` (as LangGraph's):
    the output and, apart, the interrupts that paused the run. ironloop adds
    ``usage_metadata``: the run's token usage by model name, summed over every model
    call of the run, its tools' and sub-agents' included (see
    ``ironloop.get_usage_metadata_callback``).

    Example:
        >>> out = app.invoke({"x": 1}, config, version="v2")
        >>> out.value, out.interrupts
        ({'x': 2}, ())
        >>> out.usage_metadata
        {}
    """

    value: OutputT
    interrupts: tuple[Interrupt, ...] = ()
    usage_metadata: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False)

    def __getitem__(self, key: str) -> Any:
        """``result[key]`` as a v1 result (deprecated, as in LangGraph)."""
        _warn_v1_access("result[key]")
        if key == INTERRUPT:
            return self.interrupts
        if isinstance(self.value, dict):
            return self.value[key]
        try:
            return getattr(self.value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        _warn_v1_access("key in result")
        if key == INTERRUPT:
            return bool(self.interrupts)
        if isinstance(self.value, dict):
            return key in self.value
        return isinstance(key, str) and hasattr(self.value, key)
