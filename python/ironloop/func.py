"""LangGraph's functional API: ``@entrypoint`` and ``@task``.

An entrypoint is a graph of one node (the decorated function) run by the Rust step
loop like any graph: it has a thread's checkpoints, ``interrupt()`` /
``Command(resume=...)``, streaming, ``get_state`` and history. A task called from a
running entrypoint (or from any graph node, or from another task) returns a future at
once and runs concurrently (sync functions on threads, coroutines on the caller's
loop); its result is saved as a pending write of the step as soon as it returns
(``graph::Calls`` in the engine), so when the step runs the entrypoint again —
resumed after an interrupt, or continued after a crash — a finished task is not run
again: its call gets the saved result.

A call's identity is its place: the id of the task that makes it and how many calls
that task made before it. An entrypoint must therefore call its tasks in the same order
on every attempt, as in LangGraph.

Example:
    >>> from ironloop.func import entrypoint, task
    >>> @task
    ... def double(x: int) -> int:
    ...     return 2 * x
    >>> @entrypoint()
    ... def workflow(xs: list[int]) -> list[int]:
    ...     futures = [double(x) for x in xs]
    ...     return [f.result() for f in futures]
    >>> workflow.invoke([1, 2, 3])
    [2, 4, 6]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import importlib
import inspect
import threading
import typing
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar
from typing import get_args as typing_args
from typing import get_origin as typing_origin

from ironloop._bound import BoundConfig
from ironloop._cache import cache_key
from ironloop._cache import namespace as cache_namespace
from ironloop._callbacks import enter_call, entrypoint_returned, own_run, traced_call
from ironloop._constants import END, INTERRUPT, START
from ironloop._func_events import callback_events
from ironloop._func_stream import _DROP, _with_custom, entry_item, entry_result, entry_value
from ironloop._node_prep import _check_config_annotation
from ironloop._retry import with_retry
from ironloop._runtime import answers_var, scratch_lock, task_var
from ironloop._schema_convert import _ConverterBuilder
from ironloop._schema_types import _is_dataclass_type, _is_pydantic_model
from ironloop._timeout import TimeoutPolicy, refuse_sync, timed_task
from ironloop.stream._methods import StreamEvents
from ironloop.types import RetryPolicy, StateSnapshot

if TYPE_CHECKING:  # the node's annotation LangGraph's (and ironloop's) check accepts
    from langchain_core.runnables import RunnableConfig

__all__ = ["entrypoint", "task"]

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

#: The calls made so far by the task running here: ``(its id, [how many])``, so that
#: each call gets the next id. Set anew for every task (an entrypoint's attempt, a
#: task's run).
_caller: contextvars.ContextVar[tuple[Any, str, list[int]] | None] = contextvars.ContextVar(
    "ironloop_caller", default=None
)

#: The cache of the entrypoint running here (``@entrypoint(cache=)``): where tasks
#: with a ``cache_policy`` keep their results.
_cache_var: contextvars.ContextVar[Any] = contextvars.ContextVar("ironloop_cache", default=None)

#: The tasks the running entrypoint call started (its own and its tasks' tasks): when
#: it pauses on ``interrupt()``, the ones still running finish and save their results
#: first, as LangGraph's step waits for its tasks, so a resume finds them done.
_started: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "ironloop_started_tasks", default=None
)


def _note_started(future: Any) -> Any:
    started = _started.get()
    if started is not None:
        started.append(future)
    return future


def _is_pause(e: BaseException) -> bool:
    from ironloop.errors import GraphBubbleUp

    return isinstance(e, GraphBubbleUp)


#: Threads for sync tasks: many, as tasks mostly wait (on a model, a tool, a service).
_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _threads() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="ironloop-task")
        return _pool


class _TaskFuture(concurrent.futures.Future):  # type: ignore[type-arg]
    """A task's future: ``.result()`` waits for it; ``await`` works too (LangGraph's
    ``SyncAsyncFuture``)."""

    def __await__(self) -> Any:
        return asyncio.wrap_future(self).__await__()


def _next_call(name: str) -> tuple[Any, str, int]:
    """The running task's scratchpad, the id of the call about to be made and how many
    calls the task made before it."""
    scratch = task_var.get(None)
    caller = _caller.get()
    if scratch is None:
        raise RuntimeError(
            f"task {name!r} was called outside of a running graph: call it from an "
            "@entrypoint, a graph node or another task"
        )
    if caller is None or caller[0] is not scratch:  # the first call of this graph task
        caller = (scratch, scratch_id(scratch), [0])
        _caller.set(caller)
    _, parent, count = caller
    index = count[0]
    count[0] += 1
    return scratch, str(uuid.uuid5(uuid.NAMESPACE_URL, f"{parent}|{index}|{name}")), index


def _renamed(kwargs: dict[str, Any], old: str, new: str, value: Any, since: str) -> Any:
    """``value``, or the value given under the deprecated name ``old`` (with
    LangGraph's warning)."""
    if old not in kwargs:
        return value
    given = kwargs.pop(old)
    try:  # LangGraph's warning classes, when ironloop has them
        lgw = importlib.import_module("ironloop.warnings")
        category: type[Warning] = getattr(lgw, f"LangGraphDeprecatedSince{since}")
    except (ImportError, AttributeError):
        category = DeprecationWarning
    warnings.warn(
        f"`{old}` is deprecated and will be removed. Please use `{new}` instead.",
        category,
        stacklevel=3,
    )
    return value if value is not None else given


def _name_of(func: Any) -> str:
    """A task's default name: its function's (a ``functools.partial``'s function's)."""
    while isinstance(func, functools.partial):
        func = func.func
    return str(getattr(func, "__name__", None) or type(func).__name__)


def _refuse_generators(func: Any, what: str) -> None:
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise NotImplementedError(
            f"{what} {getattr(func, '__name__', func)!r} is a generator function: generators "
            "are not supported in the functional API; return the result (use "
            "get_stream_writer() to stream values as they are made)"
        )


def scratch_id(scratch: Any) -> str:
    return str(scratch.task_id)


def _call_context(call_id: str, name: str, index: int) -> contextvars.Context:
    """The context a call runs in: its own calls are numbered from 0 under its id,
    the resume values its ``interrupt()`` s take are counted for it (and for the
    calls it runs inside), and its LangChain run has LangGraph's metadata."""
    context = contextvars.copy_context()
    context.run(_caller.set, (task_var.get(None), call_id, [0]))
    context.run(answers_var.set, (*answers_var.get(), [0]))
    context.run(enter_call, name, call_id, index)
    return context


def _record(scratch: Any, call_id: str, name: str, value: Any, answers: int) -> None:
    """Saves a call's result (see ``scratch_lock``)."""
    with scratch_lock:
        scratch.record_call(call_id, name, value, answers)
    _debug_result(scratch, call_id, name, value, None)


def _debug_result(scratch: Any, call_id: str, name: str, value: Any, error: Any) -> None:
    """``debug``: a call's ``task_result`` (not for a pause: LangGraph shows none)."""
    if scratch.streams_debug and not (error is not None and _is_pause(error)):
        scratch.debug_call_result(call_id, name, value, error)


def _answers() -> int:
    """How many resume values the call running here took."""
    counters = answers_var.get()
    return counters[-1][0] if counters else 0


class _Task(Generic[R]):
    """A function made a task by ``@task``: calling it returns a future."""

    def __init__(
        self,
        func: Callable[..., Any],
        name: str | None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None,
        cache_policy: Any,
        timeout: TimeoutPolicy | None = None,
    ) -> None:
        self.func = func
        self.name = name or _name_of(func)
        self.retry_policy = retry_policy
        self.cache_policy = cache_policy
        self.is_async = inspect.iscoroutinefunction(func)
        # Each attempt timed, as LangGraph's: the timeout inside the retries.
        body = func if timeout is None else timed_task(func, timeout, self.name)
        if retry_policy is not None:
            policies = (
                [retry_policy] if isinstance(retry_policy, RetryPolicy) else list(retry_policy)
            )
            body = with_retry(body, policies, self.name)
        self._body = traced_call(body, self.name, is_async=self.is_async, like=func)
        if not isinstance(func, functools.partial):
            functools.update_wrapper(self, func)

    def _restored(self, value: Any) -> Any:
        """A result found in the checkpoint, as LangGraph's task gives it back: the
        object it returned (see :func:`_as_annotated`)."""
        return _as_annotated(self.func, "return", value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        scratch, call_id, index = _next_call(self.name)
        if scratch.streams_debug:  # LangGraph's push task, run or found done
            scratch.debug_call_start(call_id, self.name, (args, kwargs))
        with scratch_lock:
            found, value = scratch.call_saved(call_id)
        if found:
            value = self._restored(value)
        cache = _cache_var.get() if self.cache_policy is not None else None
        if not found and cache is not None:
            key = (cache_namespace(self.name), cache_key(self.cache_policy, *args, **kwargs))
            hit = cache.get([key])
            if key in hit:
                found, value = True, hit[key]
                _record(scratch, call_id, self.name, value, 0)
        try:
            loop = asyncio.get_running_loop() if self.is_async else None
        except RuntimeError:
            loop = None
        if loop is not None:  # an async task called from async code: on its loop
            return self._start_on(loop, scratch, (call_id, index), found, value, args, kwargs)
        # A sync task, or an async one called from sync code: on a thread (with a loop
        # of its own for a coroutine).
        future: _TaskFuture = _TaskFuture()
        if found:
            future.set_result(value)
            return future
        context = _call_context(call_id, self.name, index)
        _threads().submit(context.run, self._run_sync, future, scratch, call_id, args, kwargs)
        return _note_started(future)

    def _run_sync(
        self,
        future: _TaskFuture,
        scratch: Any,
        call_id: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            value = self._body(*args, **kwargs)
            if self.is_async:
                value = asyncio.run(value)
            _record(scratch, call_id, self.name, value, _answers())
            self._cache(args, kwargs, value)
        except BaseException as e:  # handed to whoever waits on the future
            _debug_result(scratch, call_id, self.name, None, e)
            future.set_exception(e)
        else:
            future.set_result(value)

    def _start_on(
        self,
        loop: asyncio.AbstractEventLoop,
        scratch: Any,
        call: tuple[str, int],
        found: bool,
        value: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        if found:
            done = loop.create_future()
            done.set_result(value)
            return done
        call_id = call[0]
        context = _call_context(call_id, self.name, call[1])
        return _note_started(
            loop.create_task(self._run_async(scratch, call_id, args, kwargs), context=context)
        )

    async def _run_async(
        self, scratch: Any, call_id: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        try:
            value = await self._body(*args, **kwargs)
        except BaseException as e:
            _debug_result(scratch, call_id, self.name, None, e)
            raise
        # Saved from a thread: the loop is not held while the write is stored.
        await asyncio.get_running_loop().run_in_executor(
            _threads(), _record, scratch, call_id, self.name, value, _answers()
        )
        self._cache(args, kwargs, value)
        return value

    def _cache(self, args: tuple[Any, ...], kwargs: dict[str, Any], value: Any) -> None:
        """Keeps ``value`` in the running entrypoint's cache, if the task has a policy."""
        cache = _cache_var.get() if self.cache_policy is not None else None
        if cache is not None:
            key = (cache_namespace(self.name), cache_key(self.cache_policy, *args, **kwargs))
            cache.set({key: (value, self.cache_policy.ttl)})

    def clear_cache(self, cache: Any) -> None:
        """Drops this task's cached results from ``cache``."""
        cache.clear([cache_namespace(self.name)])

    async def aclear_cache(self, cache: Any) -> None:
        await cache.aclear([cache_namespace(self.name)])

    def __repr__(self) -> str:
        return f"<task {self.name}>"


def task(
    __func_or_none__: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: Any = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Makes a function a task: calling it inside a running entrypoint or graph node
    returns a future (``.result()``, or ``await`` it) and runs it concurrently; its
    result is saved with the step, so a resumed or recovered run does not run it again.

    ``retry_policy`` retries it as a node's; ``cache_policy`` caches its results in the
    entrypoint's ``cache``; ``timeout`` (seconds, a ``timedelta`` or a
    ``TimeoutPolicy``) bounds each attempt of an async task (``NodeTimeoutError``)."""
    retry_policy = _renamed(kwargs, "retry", "retry_policy", retry_policy, "V05")
    if kwargs:
        raise TypeError(f"task() got unexpected keyword argument(s): {sorted(kwargs)}")
    policy = TimeoutPolicy.coerce(timeout)

    def decorate(func: Callable[..., Any]) -> _Task[Any]:
        if not callable(func):
            raise TypeError(f"@task decorates a function, got {type(func).__name__}")
        _refuse_generators(func, "task")
        if policy is not None:
            refuse_sync(func, f"@task {name or _name_of(func)!r}")
        return _Task(func, name, retry_policy, cache_policy, policy)

    if __func_or_none__ is not None:
        return decorate(__func_or_none__)
    return decorate


class _EntryState(TypedDict, total=False):
    """An entrypoint's state: its input, what it returned and what it saved for the
    next run of the thread (``previous``)."""

    input: Any
    value: Any
    save: Any


@dataclass
class _Final(Generic[R, S]):
    value: R
    save: S


def _params(func: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return set()


class entrypoint:
    """Makes a function a workflow: ``@entrypoint(checkpointer=...)`` over a function
    of one input, which may also take ``previous`` (what the thread's last run
    returned, or saved with :class:`entrypoint.final`), ``config``, ``writer``,
    ``store`` and ``runtime``. The result runs like a compiled graph (``invoke``,
    ``stream``, ``get_state``, ...)."""

    final = _Final

    def __init__(
        self,
        checkpointer: Any = None,
        store: Any = None,
        cache: Any = None,
        context_schema: Any = None,
        cache_policy: Any = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        retry_policy = _renamed(kwargs, "retry", "retry_policy", retry_policy, "V05")
        context_schema = _renamed(kwargs, "config_schema", "context_schema", context_schema, "V10")
        if kwargs:
            raise TypeError(f"entrypoint() got unexpected keyword argument(s): {sorted(kwargs)}")
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.context_schema = context_schema
        self.cache_policy = cache_policy
        self.retry_policy = retry_policy
        #: Bounds each run of the entrypoint's function (async only), as a node's.
        self.timeout = TimeoutPolicy.coerce(timeout)

    def __call__(self, func: Callable[..., Any]) -> EntrypointGraph:
        if not callable(func):
            raise TypeError(f"@entrypoint decorates a function, got {type(func).__name__}")
        _refuse_generators(func, "entrypoint")
        _check_config_annotation(func)  # the user's own `config` parameter, as LangGraph
        if self.timeout is not None:
            refuse_sync(func, f"@entrypoint {getattr(func, '__name__', '')!r}")
        return EntrypointGraph(func, self)


def _output(out: Any) -> tuple[Any, Any]:
    """What an entrypoint's return value gives: (the run's output, what is saved)."""
    if isinstance(out, _Final):
        return out.value, out.save
    return out, out


def _as_annotated(func: Callable[..., Any], name: str, value: Any) -> Any:
    """``value`` loaded from a checkpoint as the pydantic model or dataclass that
    ``func``'s annotation of ``name`` (a parameter, or ``"return"``) names: a
    checkpoint keeps such a value, not one of the types the graph's schemas name, as
    its plain data (a dict), and LangGraph's entrypoints and tasks see the object."""
    if not isinstance(value, dict):
        return value
    try:
        tp = typing.get_type_hints(func).get(name)
    except Exception:  # annotations that do not resolve: the value as it is
        return value
    if _is_pydantic_model(tp):
        return tp.model_validate(value)  # type: ignore[union-attr]
    if _is_dataclass_type(tp):
        return _ConverterBuilder().converter(tp)(value)  # type: ignore[misc]
    return value


def _node_for(func: Callable[..., Any], cache: Any) -> Callable[..., Any]:
    """The graph node that runs the entrypoint function."""
    wants = _params(func)
    first = next(iter(inspect.signature(func).parameters), None)
    if first is None:
        raise TypeError(
            f"entrypoint {getattr(func, '__name__', func)!r} must take one input parameter"
        )
    input_name: str = first
    name, is_async = getattr(func, "__name__", "entrypoint"), inspect.iscoroutinefunction(func)
    call = traced_call(func, name, is_async=is_async, first_only=True)  # its LangChain run

    def kwargs(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if "previous" in wants:
            kw["previous"] = state.get("save")
        if "config" in wants:
            kw["config"] = config
        if {"writer", "store", "runtime"} & wants:
            from ironloop.graph import get_stream_writer
            from ironloop.runtime import get_runtime

            runtime: Any = get_runtime()
            if "writer" in wants:
                kw["writer"] = get_stream_writer()
            if "store" in wants:
                kw["store"] = runtime.store
            if "runtime" in wants:
                kw["runtime"] = type(runtime)(
                    context=runtime.context,
                    store=runtime.store,
                    stream_writer=runtime.stream_writer,
                    previous=state.get("save"),
                )
        return kw

    def enter(state: dict[str, Any], config: RunnableConfig) -> tuple[list[Any], Any, Any]:
        """Sets the run's task context up; returns the list the tasks it starts go in,
        and the function's input and keywords."""
        _caller.set(None)
        _cache_var.set(cache)
        started: list[Any] = []
        _started.set(started)
        given = _as_annotated(func, input_name, state.get("input"))
        return started, given, kwargs(state, config)

    def result(out: Any) -> dict[str, Any]:
        value, save = _output(out)
        entrypoint_returned(value)
        return {"value": value, "save": save}

    if inspect.iscoroutinefunction(func):

        async def anode(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            started, given, kw = enter(state, config)
            try:
                return result(await call(given, **kw))
            except BaseException as e:
                if _is_pause(e):  # the tasks under way finish and save first
                    await asyncio.gather(
                        *(asyncio.wrap_future(f) if isinstance(f, _TaskFuture) else f
                          for f in started),
                        return_exceptions=True,
                    )  # fmt: skip
                raise

        return own_run(anode)

    def node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        started, given, kw = enter(state, config)
        try:
            return result(call(given, **kw))
        except BaseException as e:
            if _is_pause(e):  # the tasks under way finish and save first
                concurrent.futures.wait(
                    [f for f in started if isinstance(f, concurrent.futures.Future)]
                )
            raise

    return own_run(node)


def _json_schema(tp: Any, title: str | None) -> dict[str, Any]:
    """``tp``'s JSON Schema (pydantic's), titled ``title`` as LangGraph titles it."""
    try:
        from pydantic import TypeAdapter
    except ImportError as e:  # pragma: no cover - pydantic is optional
        raise ImportError("JSON Schemas of an entrypoint need pydantic installed") from e
    schema: dict[str, Any] = TypeAdapter(tp).json_schema()
    if title is not None:
        schema["title"] = title
    return schema


def _run_value(out: Any) -> Any:
    """The entrypoint's return value, as its LangChain run's output (paused: none)."""
    return None if isinstance(out, dict) and INTERRUPT in out else entry_value(out)


#: The class ``_entry_graph`` made, once.
_entry_graph_made: list[type[Any]] = []


def _entry_graph() -> type[Any]:
    """The builder of an entrypoint's graph: a ``StateGraph`` whose input is its first
    step's own, as LangGraph's entrypoint reads its input itself (it runs in step 0,
    after the input checkpoint of step -1, with no ``__start__`` step between)."""
    if not _entry_graph_made:
        from ironloop.graph import StateGraph

        _entry_graph_made.append(type("_EntryGraph", (StateGraph,), {"_direct_input": True}))
    return _entry_graph_made[0]


class EntrypointGraph(StreamEvents):
    """What ``@entrypoint`` makes of a function: a graph of one node named after it,
    run as LangGraph runs an entrypoint (the input in, the return value out)."""

    def __init__(self, func: Callable[..., Any], options: entrypoint) -> None:
        self.func = func
        self.name = getattr(func, "__name__", "entrypoint")
        node = _node_for(func, options.cache)
        builder: Any = _entry_graph()(
            _EntryState, context_schema=options.context_schema, input_schema=_EntryState
        )
        builder.add_node(
            self.name, node, retry_policy=options.retry_policy, timeout=options.timeout
        )
        builder.add_edge(START, self.name)
        builder.add_edge(self.name, END)
        self.builder = builder
        self.checkpointer = options.checkpointer
        self.store = options.store
        self.cache = options.cache
        self._graph = builder.compile(
            checkpointer=options.checkpointer, store=options.store, name=self.name
        )
        # LangChain callbacks see LangGraph's run tree: a root run, the entrypoint's.
        self._graph.callback_run_name = "LangGraph"
        self._graph.callback_run_output = _run_value
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    # -- input and output -------------------------------------------------------------

    @staticmethod
    def _input(value: Any) -> Any:
        from ironloop.types import Command

        if value is None or isinstance(value, Command):
            return value
        return {"input": value}

    @staticmethod
    def _result(out: Any) -> Any:
        return entry_result(out)

    def _reshape(self, item: Any, stream_mode: Any) -> Any:
        """A stream item of the inner graph as the entrypoint's."""
        return entry_item(self.name, item, stream_mode)

    def _snapshot(self, s: StateSnapshot) -> StateSnapshot:
        values: Any = entry_value(s.values) if s.values else None
        return s._replace(values=values)

    # -- running ----------------------------------------------------------------------

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """Runs the entrypoint on ``input`` (or resumes it: ``Command(resume=...)``,
        ``None``) and returns what it returned."""
        return self._result(self._graph.invoke(self._input(input), config, **kwargs))

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self._result(await self._graph.ainvoke(self._input(input), config, **kwargs))

    def stream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Streams the run: ``updates`` are ``{task_or_entrypoint_name: result}``,
        ``values`` the entrypoint's return value; ``custom`` and ``messages`` as a
        graph's."""
        mode = stream_mode or "updates"
        inner, keep = _with_custom(mode)
        for item in self._graph.stream(self._input(input), config, stream_mode=inner, **kwargs):
            item = keep(item)
            if item is not _DROP:
                yield self._reshape(item, mode)

    async def astream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        mode = stream_mode or "updates"
        inner, keep = _with_custom(mode)
        async for item in self._graph.astream(
            self._input(input), config, stream_mode=inner, **kwargs
        ):
            item = keep(item)
            if item is not _DROP:
                yield self._reshape(item, mode)

    def _own_v2_events(self, input: Any, config: Any, run: dict[str, Any]) -> Any:
        """An entrypoint's v2 events are made from its run's callback runs (see
        ``_func_events``); ``None`` where they cannot be."""
        return callback_events(self, input, config, run)

    def _events_name(self) -> str:
        """An entrypoint's run is named ``LangGraph`` in v1 / v2 events, as LangGraph's
        (``astream_events``: the entrypoint's task, its updates, the models' tokens;
        ``stream_events(version="v3")``: ``run.values`` are its return values)."""
        return "LangGraph"

    def batch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        return [
            self._result(o)
            for o in self._graph.batch([self._input(i) for i in inputs], config, **kwargs)
        ]

    async def abatch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        outs = await self._graph.abatch([self._input(i) for i in inputs], config, **kwargs)
        return [self._result(o) for o in outs]

    # -- state ------------------------------------------------------------------------

    def get_state(self, config: Any, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's state: ``values`` is what the entrypoint last returned."""
        return self._snapshot(self._graph.get_state(config, subgraphs=subgraphs))

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> StateSnapshot:
        return self._snapshot(await self._graph.aget_state(config, subgraphs=subgraphs))

    def get_state_history(self, config: Any, **kwargs: Any) -> Iterator[StateSnapshot]:
        for s in self._graph.get_state_history(config, **kwargs):
            yield self._snapshot(s)

    async def aget_state_history(self, config: Any, **kwargs: Any) -> AsyncIterator[StateSnapshot]:
        async for s in self._graph.aget_state_history(config, **kwargs):
            yield self._snapshot(s)

    def update_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        """Sets what the entrypoint returned (and saved) on the thread."""
        value, save = _output(values)
        return self._graph.update_state(config, {"value": value, "save": save}, as_node=self.name)

    async def aupdate_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        value, save = _output(values)
        return await self._graph.aupdate_state(
            config, {"value": value, "save": save}, as_node=self.name
        )

    def get_graph(self, config: Any = None, *, xray: Any = False) -> Any:
        return self._graph.get_graph(config, xray=xray)

    def _hints(self) -> dict[str, Any]:
        import typing

        try:
            return typing.get_type_hints(self.func)
        except Exception:
            return {}

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON Schema of the input, from the function's first parameter's type."""
        first = next(iter(inspect.signature(self.func).parameters))
        return _json_schema(self._hints().get(first, Any), "LangGraphInput")

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON Schema of the output, from the function's return type (the value
        type of an ``entrypoint.final[Value, Save]``)."""
        ret = self._hints().get("return", Any)
        if ret is _Final:
            ret = Any
        elif typing_origin(ret) is _Final:
            ret = typing_args(ret)[0]
        return _json_schema(ret, "LangGraphOutput")

    def get_context_jsonschema(self, config: Any = None) -> dict[str, Any] | None:
        schema = self.builder.context_schema
        return None if schema is None else _json_schema(schema, None)

    @property
    def context_schema(self) -> Any:
        """``@entrypoint(context_schema=)``: the type of the runs' ``context``."""
        return self.builder.context_schema

    def config_schema(self, *, include: Sequence[str] | None = None) -> Any:
        """Deprecated (LangGraph 1.0): the context schema; use ``get_context_jsonschema()``."""
        return self._graph.config_schema(include=include)

    def with_config(self, config: Any = None, **kwargs: Any) -> BoundConfig:
        """This entrypoint with ``config`` under every call's config."""
        return BoundConfig(self, {**(config or {}), **kwargs})

    # -- as a node of a graph ---------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<entrypoint {self.name}>"
