"""LangChain callback runs of a graph run, as LangGraph opens them: one root chain run
per ``invoke`` / ``stream`` (named after the graph, or ``config["run_name"]``), under
which the functional API's entrypoint and its ``@task`` calls open child runs, and a
graph run inside a node or a task (a subgraph node, a graph a node or tool invokes,
a ``Send`` into a nested graph) opens its run as a child of the run it is inside, not
as a root of its own. A LangChain tracer or callback handler (``config["callbacks"]``)
thus sees one run tree per invoke, as under LangGraph.

The parent is found the way langchain-core finds it for its runnables: a run puts its
child callback manager in ``var_child_runnable_config`` before the engine copies the
caller's context, so every task (a copy of that context) and every LangChain model,
tool or graph called there reports under it.

Costs nothing unless callbacks are in force: with no ``callbacks`` in the run's
config nor in a LangChain run it is called from, no callback manager is made (and
langchain-core's runnables are not imported).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from contextlib import ExitStack
from contextvars import ContextVar
from typing import Any

from ironloop._constants import INTERRUPT
from ironloop._runtime import task_var
from ironloop._trace_policy import recorded

#: The LangGraph metadata and tags of the run of the node or ``@task`` call running
#: here (``langgraph_step``, ``langgraph_node``, ``langgraph_triggers``,
#: ``langgraph_path``, ``langgraph_checkpoint_ns``; the node's ``graph:step:N`` tag),
#: set only in a run with callbacks: the functional API's runs read it (an entrypoint
#: reports its own run; a ``@task`` call's run is derived from its caller's).
_run_meta: ContextVar[tuple[dict[str, Any], list[str]] | None] = ContextVar(
    "ironloop_callback_run_meta", default=None
)

#: The tag LangGraph's node runs give what runs inside them (a node is a sequence of
#: its function and its writes: the function is the first step).
_INSIDE_TAG = "seq:step:1"

#: The step of LangGraph's node sequence its first routing function runs as (after the
#: node's function and its writes; the next router is the next step): its run's tag.
_FIRST_ROUTER_STEP = 3

#: The root run of the graph run current here (set where it is entered: the context
#: the engine copies for its tasks and routers), which keeps its nodes' runs for their
#: routing functions' (``router_call``) and an entrypoint's return value.
_graph_run: ContextVar[ChainRun | None] = ContextVar("ironloop_callback_graph_run", default=None)


#: langchain-core's ``var_child_runnable_config``, once its module is imported.
_child_config: ContextVar[Any] | None = None


def _inherited() -> Any:
    """The callbacks of the LangChain run this code runs inside, or ``None`` (no such
    run: not even langchain-core's runnables are imported, which ironloop does not do
    for a run without callbacks). Every run asks: the variable is looked up once."""
    global _child_config
    if _child_config is None:
        module = sys.modules.get("langchain_core.runnables.config")
        if module is None:
            return None
        _child_config = module.var_child_runnable_config
    inherited = _child_config.get()
    return inherited.get("callbacks") if inherited else None


def _own_handlers_dropped(manager: Any) -> Any:
    """``manager`` without ironloop's stream and usage handlers (added by
    langchain-core's configure hooks from the calling task's context): each model
    call adds its own task's again, so an inherited copy would report its tokens
    twice, to the caller's task too."""
    for handler in list(manager.handlers):
        if type(handler).__module__.startswith("ironloop."):
            manager.remove_handler(handler)
    return manager


class ChainRun:
    """One open chain run; its child callback manager is the parent of what runs
    inside it while it is current (``enter``)."""

    def __init__(self, manager: Any, meta: dict[str, Any] | None = None) -> None:
        self.manager = manager
        self.meta = meta
        #: The callbacks of what runs inside: the parent of their runs is this one.
        #: Under a node's (or task's) run (``meta``: its LangGraph metadata) they see
        #: LangGraph's ``seq:step:1`` tag and the task's namespace as ``checkpoint_ns``.
        if meta is None:
            self.child = _own_handlers_dropped(manager.get_child())
        else:
            self.child = _tags_given_last(_own_handlers_dropped(manager.get_child(_INSIDE_TAG)))
            self.child.add_metadata({"checkpoint_ns": meta["langgraph_checkpoint_ns"]})
        #: Undoes what ``enter`` set, once (``leave``).
        self._entered = ExitStack()
        self._ended = False
        #: How many routing functions of this (a node's) run's task have run.
        self.routed = 0
        #: A graph run's: its nodes' runs by task id (see ``router_call``), and what
        #: its entrypoint returned (its output when its stream shows none).
        self.node_runs: dict[str, ChainRun] = {}
        self.returned: Any = None

    def enter(self, graph_run: bool = False) -> None:
        """Makes this run the parent of the LangChain runs started here from now on
        (in this context and the copies taken of it); a ``graph_run``'s tasks and
        routers find it as ``_graph_run``."""
        from langchain_core.runnables.config import var_child_runnable_config

        token = var_child_runnable_config.set({"callbacks": self.child})
        self._entered.callback(var_child_runnable_config.reset, token)
        if graph_run:
            self._entered.callback(_graph_run.reset, _graph_run.set(self))

    def leave(self) -> None:
        """The caller's parent is current again (its context was copied already)."""
        self._entered.close()

    def step_run(self, name: str, input: Any, tag: str) -> ChainRun:
        """A child run of this (a node's) run as a later step of LangGraph's node
        sequence, tagged ``tag``: a routing function's."""
        manager = _tags_given_last(self.manager.get_child(tag))
        if self.meta is not None:
            manager.add_metadata({"checkpoint_ns": self.meta["langgraph_checkpoint_ns"]})
        return ChainRun(manager.on_chain_start(None, input, name=name))

    def streamed(self, chunk: Any) -> bool:
        """Shows ``chunk`` as what the run streamed to the handlers that take streamed
        output (langchain-core's ``astream_events`` handler: an ``on_chain_stream``
        event), as LangGraph's task runs stream what they return when such a handler
        is in force. Whether one was."""
        tapped = False
        for handler in self.manager.handlers:
            if _streams_runs(handler):
                tapped = True
                for _ in handler.tap_output_iter(self.manager.run_id, iter([chunk])):
                    pass
        return tapped

    def end(self, output: Any = None, exc: BaseException | None = None) -> None:
        """Ends the run once: with ``exc``, as failed (an ``interrupt()`` pausing a
        nested run too, as LangGraph reports it)."""
        if self._ended:
            return
        self._ended = True
        if output is None:
            output = self.returned
        if exc is not None:
            self.manager.on_chain_error(exc)
        else:
            self.manager.on_chain_end(output)


def _streams_runs(handler: Any) -> bool:
    """Whether ``handler`` takes the runs' streamed output (langchain-core's
    ``_StreamingCallbackHandler``: ``astream_events``' and ``astream_log``'s; not
    ironloop's own stream handlers, as LangGraph leaves out its own)."""
    kind = type(handler)
    return not kind.__module__.startswith("ironloop.") and any(
        k.__name__ == "_StreamingCallbackHandler" for k in kind.__mro__
    )


def _tags_given_last(manager: Any) -> Any:
    """``manager`` with the tags its runs inherit (the caller's ``config["tags"]``)
    after its own (``graph:step:N``, ``seq:step:1``), in LangGraph's order: there a run's
    callback manager is made from its parent's child manager (which has the tag of the
    step) and its config's tags, which langchain-core adds again, last."""
    given = list(manager.inheritable_tags)
    if given and len(manager.tags) > len(given):
        manager.add_tags(given)
    return manager


def start_run(config: Any, name: str, input: Any) -> ChainRun | None:
    """The root run of a graph run about to start (a child run when it is started
    inside another LangChain run), or ``None`` when no callbacks are in force."""
    if not (config or {}).get("callbacks") and _inherited() is None:
        return None
    from langchain_core.runnables.config import ensure_config, get_callback_manager_for_config

    config = ensure_config(config)
    metadata = config["metadata"] = dict(config.get("metadata") or {})
    metadata.setdefault("ls_integration", "langgraph")  # as LangGraph marks its runs
    for key, value in (config.get("configurable") or {}).items():  # LangGraph shows them
        if _shown(key, value) and key not in metadata:
            metadata[key] = value
    manager = _own_handlers_dropped(get_callback_manager_for_config(config))
    run = ChainRun(
        manager.on_chain_start(
            None, input, name=config.get("run_name") or name, run_id=config.get("run_id")
        )
    )
    run.enter(graph_run=True)
    return run


def _shown(key: str, value: Any) -> bool:
    """A ``configurable`` key LangGraph copies into its runs' metadata: a plain value,
    not internal (``__``) nor a credential."""
    return (
        not key.startswith("__") and key != "api_key" and isinstance(value, (str, int, float, bool))
    )


def run_output(out: Any) -> Any:
    """A run's result as its root run's output: a paused run's state without its
    ``__interrupt__`` (LangGraph reports the state the run stopped with)."""
    if isinstance(out, dict) and INTERRUPT in out:
        return {k: v for k, v in out.items() if k != INTERRUPT}
    return out


def _inputs(signature: inspect.Signature | None, args: Any, kwargs: Any) -> Any:
    """A call's arguments by parameter name (LangGraph's task run inputs)."""
    if signature is not None:
        try:
            return dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:
            pass
    return args[0] if len(args) == 1 and not kwargs else {"args": args, **kwargs}


def _open(name: str, input: Any) -> ChainRun | None:
    """A child chain run of the run current here, with the LangGraph metadata and
    tags of the node or task call running here (``_run_meta``), entered."""
    parent = _inherited()
    if parent is None:
        return None
    from langchain_core.callbacks.manager import CallbackManager

    meta, tags = _run_meta.get() or (None, [])
    manager = CallbackManager.configure(
        inheritable_callbacks=parent, local_tags=tags, inheritable_metadata=meta
    )
    run = ChainRun(_tags_given_last(manager).on_chain_start(None, input, name=name), meta)
    run.enter()
    return run


def _node_meta(meta: dict[str, Any] | None) -> None:
    """Makes ``meta`` (a node's task metadata, from the engine) the metadata of the
    runs opened here, with the node's ``graph:step:N`` tag."""
    if meta is not None:
        _run_meta.set((meta, [f"graph:step:{meta['langgraph_step']}"]))


def enter_call(name: str, call_id: str, index: int) -> None:
    """In the context a ``@task`` call runs in: its run's metadata, derived from its
    caller's as LangGraph's push tasks (``__pregel_push`` triggers, a path under the
    caller's, a namespace of its own); nothing when no run reports to callbacks."""
    caller = _run_meta.get()
    if caller is None:
        return
    meta = dict(caller[0])
    meta["langgraph_node"] = name
    meta["langgraph_triggers"] = ("__pregel_push",)
    meta["langgraph_path"] = ("__pregel_push", caller[0].get("langgraph_path"), index, True)
    meta["langgraph_checkpoint_ns"] = f"{name}:{call_id}"
    _run_meta.set((meta, []))


def current_config(config: Any) -> Any:
    """``config`` with the callbacks of the run current here (a ``ToolNode``'s, for
    the tools it runs), when callbacks are in force: the parent of the runs started
    with it."""
    if not config or not config.get("callbacks"):
        return config
    inherited = _inherited()
    return config if inherited is None else {**config, "callbacks": inherited}


def traced_call(
    fn: Callable[..., Any],
    name: str,
    *,
    is_async: bool,
    first_only: bool = False,
    like: Callable[..., Any] | None = None,
) -> Any:
    """``fn`` reporting each call as a child chain run named ``name`` of the run it is
    called inside (an entrypoint's run, a ``@task`` call's), when callbacks are in
    force; otherwise ``fn`` called as it is. The run's inputs are the call's
    arguments by name (with ``first_only``, its first argument alone: an
    entrypoint's input), its output the call's result. ``is_async``: ``fn`` returns
    a coroutine (a retry or timeout wrapper may not say so itself); ``like``: the
    function whose parameters name the arguments (the one such a wrapper wraps)."""
    try:
        signature: inspect.Signature | None = inspect.signature(like or fn)
    except (TypeError, ValueError):
        signature = None

    def inputs(args: Any, kwargs: Any) -> Any:
        return args[0] if first_only and args else _inputs(signature, args, kwargs)

    if is_async:

        async def acall(*args: Any, **kwargs: Any) -> Any:
            run = _open(name, inputs(args, kwargs))
            if run is None:
                return await fn(*args, **kwargs)
            try:
                value = await fn(*args, **kwargs)
            except BaseException as e:
                run.end(exc=e)
                raise
            finally:
                run.leave()
            if run.streamed(value):
                import asyncio  # loaded: this is a coroutine

                # LangGraph's run ends once its stream is drained, after what the
                # loop had ready (the run's updates) is handed on: so here.
                await asyncio.sleep(0)
            run.end(value)
            return value

        return acall

    def call(*args: Any, **kwargs: Any) -> Any:
        run = _open(name, inputs(args, kwargs))
        if run is None:
            return fn(*args, **kwargs)
        try:
            value = fn(*args, **kwargs)
        except BaseException as e:
            run.end(exc=e)
            raise
        finally:
            run.leave()
        run.streamed(value)
        run.end(value)
        return value

    return call


def own_run(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a node function that reports its own run (an entrypoint's: its input and
    return value as LangGraph shows them): ``node_call`` only hands it its metadata."""
    fn.__dict__["_ironloop_own_run"] = True
    return fn


def node_call(
    name: str, fn: Callable[..., Any], meta: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """A graph node's function reporting its call as a child chain run named after the
    node (its input the node's input, its output what the node returned), under the
    graph's run, with LangGraph's ``graph:step:N`` tag and metadata (``meta``: the
    task's ``langgraph_step``, ``langgraph_node``, ...): called by the engine, only for
    a run with callbacks (what the run records follows the node's ``TracePolicy``,
    ``_trace_policy``). The call runs in its task's own context, where the run stays
    the parent of what the node calls, as it is for what the node calls with its
    ``config``."""
    if getattr(fn, "_ironloop_own_run", False):
        if meta is not None:  # an entrypoint's node: LangGraph's reads START directly
            meta = {**meta, "langgraph_triggers": ("__start__",)}

        def own(*args: Any, **kwargs: Any) -> Any:
            _node_meta(meta)  # in the task's own context: its coroutine's too
            return fn(*args, **kwargs)

        return own

    def call(*args: Any, **kwargs: Any) -> Any:
        _node_meta(meta)
        run = _open(name, recorded(fn, "process_inputs", args[0] if args else kwargs))
        if run is None:
            return fn(*args, **kwargs)
        _keep_for_routers(run)
        if isinstance(kwargs.get("config"), dict):  # what it calls with it: under it too
            kwargs["config"] = {**kwargs["config"], "callbacks": run.child}
        try:
            out = fn(*args, **kwargs)
        except BaseException as e:
            run.end(exc=e)
            raise
        if inspect.isawaitable(out):
            return _ended_when_awaited(run, out, fn)
        run.end(recorded(fn, "process_outputs", out))
        return out

    return call


def _keep_for_routers(run: ChainRun) -> None:
    """Keeps a node's run for the runs of the routing functions of its task (which the
    engine calls with the task's id), in its graph run's ``node_runs``."""
    root = _graph_run.get()
    scratch = task_var.get(None)
    if root is not None and scratch is not None:
        root.node_runs[scratch.task_id] = run


def entrypoint_returned(value: Any) -> None:
    """What an entrypoint returned, as its graph run's output (LangGraph's root run
    ends with it), when callbacks are in force."""
    root = _graph_run.get()
    if root is not None:
        root.returned = value


def router_call(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, the routing function of the conditional edge ``name``, reporting its
    call as a chain run under the run of the node whose task it routes, as LangGraph's:
    named ``name`` (a lambda's ``RunnableCallable``), tagged ``seq:step:3`` (the node's
    next router ``seq:step:4``...), its input the state it routes on (the call's last
    argument), its output what it returned. Called by the engine, only for a run with
    callbacks; ``fn`` is called as it is when no such node run is known."""
    shown = "RunnableCallable" if getattr(fn, "__name__", None) == "<lambda>" else name

    def call(*args: Any) -> Any:
        root = _graph_run.get()
        scratch = task_var.get(None)
        node = root.node_runs.get(scratch.task_id) if root and scratch is not None else None
        if node is None:
            return fn(*args)
        tag = f"seq:step:{_FIRST_ROUTER_STEP + node.routed}"
        node.routed += 1
        run = node.step_run(shown, args[-1] if args else None, tag)
        try:
            out = fn(*args)
        except BaseException as e:
            run.end(exc=e)
            raise
        if inspect.isawaitable(out):  # an async router's coroutine
            return _ended_when_awaited(run, out, fn)
        run.end(out)
        return out

    return call


async def _ended_when_awaited(run: ChainRun, pending: Any, fn: Callable[..., Any]) -> Any:
    try:
        out = await pending
    except BaseException as e:
        run.end(exc=e)
        raise
    run.end(recorded(fn, "process_outputs", out))
    return out


def node_run(context: Any, name: str, input: Any, meta: dict[str, Any]) -> ChainRun | None:
    """The chain run of a node the engine runs itself (a ``ToolNode``), opened and
    entered in ``context`` (the task's, which its tools' calls run in: their runs
    report under it); the engine ends it. ``None`` when no run reports to callbacks."""

    def opened() -> ChainRun | None:
        _node_meta(meta)
        return _open(name, input)

    run: ChainRun | None = context.run(opened)
    return run
