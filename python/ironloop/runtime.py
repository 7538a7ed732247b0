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

from ironloop._ironloop import _child_ns, _Drain, _install_task_runtime, _task_runtime
from ironloop._runtime import attempt_var, call_progress, writer_of

__all__ = [
    "DEFAULT_RUNTIME",
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
    "get_runtime",
]

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


class RunControl:
    """Stops a run cooperatively, as LangGraph's: ``invoke(input, config,
    control=control)``, then ``control.request_drain()`` from anywhere (a signal
    handler, another thread, a node) lets the step under way finish and be saved, and
    the run raises ``GraphDrained`` before its next step. Run the thread again with
    ``None`` as input to continue. One per run: a drained control stays drained.

    Example:
        >>> control = RunControl()
        >>> control.request_drain("deploy")
        >>> control.drain_requested, control.drain_reason
        (True, 'deploy')
    """

    __slots__ = ("_drain",)

    def __init__(self) -> None:
        self._drain = _Drain()

    def request_drain(self, reason: str = "shutdown") -> None:
        """Asks the run to stop before its next step (safe from any thread)."""
        self._drain.request(reason)

    @property
    def drain_requested(self) -> bool:
        return self._drain.reason is not None

    @property
    def drain_reason(self) -> str | None:
        return self._drain.reason


def _no_heartbeat() -> None:
    return None


def _no_writer(_payload: Any) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """What a node of a running graph can reach besides its state: the run's
    ``context``, the graph's ``store``, the ``custom`` stream's writer, ``heartbeat``
    (progress for an idle ``TimeoutPolicy``), where the task runs
    (``execution_info``) and the run's ``control`` (LangGraph's ``RunControl``)."""

    context: ContextT = None  # type: ignore[assignment]  # LangGraph's default
    store: Any = None
    stream_writer: Callable[[Any], None] = _no_writer
    heartbeat: Callable[[], None] = _no_heartbeat
    previous: Any = None
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None
    control: RunControl | None = None

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """``other``, with what it leaves unset (``None``, the no-op writer or
        heartbeat) taken from this runtime, as LangGraph's."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=self.stream_writer
            if other.stream_writer is _no_writer
            else other.stream_writer,
            heartbeat=self.heartbeat if other.heartbeat is _no_heartbeat else other.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def override(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy with the given fields replaced (the runtime itself is frozen)."""
        return dataclasses.replace(self, **overrides)

    def patch_execution_info(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy whose ``execution_info`` has the given fields replaced."""
        if self.execution_info is None:
            raise RuntimeError(
                "Cannot patch execution_info before it has been set: this runtime is not "
                "a running task's (get one from a node's `runtime` parameter)"
            )
        return dataclasses.replace(self, execution_info=self.execution_info.patch(**overrides))

    @property
    def drain_requested(self) -> bool:
        """Whether the run's ``control`` was asked to drain."""
        return self.control is not None and self.control.drain_requested

    @property
    def drain_reason(self) -> str | None:
        return None if self.control is None else self.control.drain_reason


#: LangGraph's runtime of nothing: no context, no store, no-op writer and heartbeat.
DEFAULT_RUNTIME: Runtime[Any] = Runtime()


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
    # In a task (the common case: every agent hook asks): made in Rust, with only
    # what tells the task's runtime apart, its fields made when first read
    # (`_TaskRuntime`); the last one made is given again while that is the same.
    runtime = _task_runtime()
    if runtime is not None:
        return runtime  # type: ignore[no-any-return]
    scope = _scope.get()
    if scope is None:
        raise RuntimeError("get_runtime() called outside of a graph run")
    # Outside a task (a router): the run's part only, made once per run.
    last = _last_runtime
    if last[0] is scope:
        return last[1]  # type: ignore[no-any-return]
    runtime = Runtime(context=scope[0], store=scope[1], server_info=_server_info(scope[2]))
    _remember(scope, runtime)
    return runtime


def _task_fields(runtime: Any) -> dict[str, Any]:
    """The fields of a task's runtime (all but ``execution_info``) put in its dict, at
    the first read of one: the run's part (made once per run), the task's writer and
    heartbeat."""
    fields = runtime.__dict__
    scope, scratch, _attempt, progress, _asked = runtime._of
    last = _last_runtime
    if last[0] is scope:
        run_part = last[1]
    else:
        run_part = _run_runtime(scope)
        _remember(scope, run_part)
    for name, value in run_part.__dict__.items():
        if name != "execution_info":
            fields[name] = value
    fields["stream_writer"] = writer_of(scratch)
    fields["heartbeat"] = _heartbeat(scratch, progress)
    return fields


_new = object.__new__


def _run_runtime(scope: Any) -> Runtime[Any]:
    """The part of a runtime every task of the run shares."""
    context, store, config = scope
    configurable = (config or {}).get("configurable") or {}
    return Runtime(
        context=context,
        store=store,
        server_info=_server_info(config),
        control=configurable.get(_CONTROL_KEY),
    )


def _execution_info(scope: Any, scratch: Any, attempt: tuple[int, float]) -> ExecutionInfo:
    """Where the task whose scratchpad is ``scratch`` runs, in its ``attempt``."""
    config = scope[2]
    configurable = (config or {}).get("configurable") or {}
    task_id = scratch.task_id
    # The task's own thread and namespace (`node:task_id` below its run's), as the
    # engine lends them to a graph run inside it; a run without checkpoints has none.
    nest = scratch.nest
    thread_id, ns = nest or (configurable.get("thread_id"), _child_ns("", scratch.node, task_id))
    run_id = None if config is None or config.get("run_id") is None else str(config["run_id"])
    return ExecutionInfo(
        checkpoint_id=task_id.split(":", 1)[0],
        checkpoint_ns=ns,
        task_id=task_id,
        thread_id=thread_id,
        run_id=run_id,
        node_attempt=attempt[0],
        node_first_attempt_time=attempt[1],
    )


class _Field:
    """A field of a task's :class:`Runtime` (a data descriptor, over the dataclass'
    default): its value in the instance's dict, made with the others on first read
    (``_task_fields``). Set by the dataclass' ``__init__`` (``replace``, ``override``),
    it is taken as given."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, runtime: Any, owner: Any = None) -> Any:
        if runtime is None:
            return getattr(Runtime, self.name)
        fields = runtime.__dict__
        if self.name not in fields:
            fields = _task_fields(runtime)
        return fields[self.name]

    def __set__(self, runtime: Any, value: Any) -> None:
        runtime.__dict__[self.name] = value


class _Info(_Field):
    """A task runtime's ``execution_info``: made on first read (most runtimes, every
    agent hook's, never are), from ``_of`` (the run's scope, the task's scratchpad and
    attempt, when it was asked for)."""

    __slots__ = ()

    def __get__(self, runtime: Any, owner: Any = None) -> Any:
        if runtime is None:
            return None
        fields = runtime.__dict__
        if "execution_info" not in fields:
            scope, scratch, attempt, _progress, asked = runtime._of
            attempt = attempt or (1, _first_attempt_time(scratch, asked))
            fields["execution_info"] = _execution_info(scope, scratch, attempt)
        return fields["execution_info"]


class _TaskRuntime(Runtime[Any]):
    """A running task's :class:`Runtime`: made with ``_of`` alone (the run's scope, the
    task's scratchpad, attempt and ``@task`` call's progress, when it was asked for),
    its fields made when first read. ``_of`` is a slot: set through its descriptor, it
    costs a third less than an attribute in the instance's dict."""

    __slots__ = ("_of",)


for _f in dataclasses.fields(Runtime):
    setattr(_TaskRuntime, _f.name, (_Info if _f.name == "execution_info" else _Field)(_f.name))
del _f
_set_of = _TaskRuntime._of.__set__  # type: ignore[attr-defined]


def _heartbeat(scratch: Any, progress: Any) -> Callable[[], None]:
    """``runtime.heartbeat`` of a task: progress for its node's idle timeout, and for
    the ``@task`` call it runs in (``progress``), if that has one."""
    if progress is None:
        return scratch.heartbeat  # type: ignore[no-any-return]

    def beat() -> None:
        progress.touch()
        scratch.heartbeat()

    return beat


#: Where ``invoke(..., control=)`` puts the run's ``RunControl`` in the config's
#: ``configurable`` (its drain flag goes beside it, for the engine: ``_DRAIN_KEY``).
_CONTROL_KEY = "__ironloop_control"
_DRAIN_KEY = "__ironloop_drain"

#: When recent tasks first asked for a runtime whose ``execution_info`` was read, by
#: task id: the ``node_first_attempt_time`` of a node run without a retry policy (whose
#: one attempt started about then). Bounded: a task asks while it runs, and tasks are
#: short-lived.
_first_times: dict[str, float] = {}


def _first_attempt_time(scratch: Any, asked: float) -> float:
    """The task's first attempt's time: when it asked for the first of its runtimes
    whose ``execution_info`` was read (``asked``, if this is that one). One attempt:
    its only one; every runtime of the task gives the same time."""
    key = scratch.task_id
    if len(_first_times) > 1024:
        _first_times.clear()
    return _first_times.setdefault(key, asked)


def _server_info(config: Any) -> ServerInfo | None:
    """What an Agent Server run puts in ``configurable`` (``assistant_id``,
    ``graph_id``, ``langgraph_auth_user``), as LangGraph reads it."""
    configurable = (config or {}).get("configurable") or {}
    assistant_id, graph_id = configurable.get("assistant_id"), configurable.get("graph_id")
    if assistant_id is None or graph_id is None:
        return None
    return ServerInfo(
        assistant_id=str(assistant_id),
        graph_id=str(graph_id),
        user=configurable.get("langgraph_auth_user"),
    )


def _with_control(config: Any, control: RunControl | None) -> Any:
    """``config`` carrying ``control`` (``invoke(..., control=)``): the engine reads its
    drain flag there, nodes their ``runtime.control``."""
    if control is None:
        return config
    if not isinstance(control, RunControl):
        raise TypeError(f"control must be a RunControl, got {control!r}")
    config = dict(config or {})
    config["configurable"] = {
        **(config.get("configurable") or {}),
        _CONTROL_KEY: control,
        _DRAIN_KEY: control._drain,
    }
    return config


#: The last run scope whose tasks share a Runtime, and that Runtime. Holding the scope
#: keeps it alive, so `is` never matches a new scope at a reused address.
_last_runtime: tuple[Any, Any] = (None, None)


def _remember(scope: Any, runtime: Any) -> None:
    global _last_runtime
    _last_runtime = (scope, runtime)


_install_task_runtime(_scope, attempt_var, call_progress, _new, _TaskRuntime, _set_of)


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
    if isinstance(context, dict):
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
