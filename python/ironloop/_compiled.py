"""``CompiledStateGraph``: what ``StateGraph.compile`` returns, a runnable graph over
the Rust engine (runs, streams, state inspection, use as a subgraph)."""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import typing
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from typing import (
    Any,
    Generic,
)

from typing_extensions import Self, TypeVar

from ironloop import _callbacks, _drawing, _tracing
from ironloop._bound import BoundConfig
from ironloop._cache import namespace as cache_namespace
from ironloop._compiled_state import StateAccess
from ironloop._constants import INTERRUPT
from ironloop._graph_jsonschema import jsonschema
from ironloop._ironloop import _RunOptions
from ironloop._node_calls import _outer_task
from ironloop._params import params_of
from ironloop._run_options import (
    _as_run_config,
    _batch_configs,
    _check_run_options,
    _debug_views,
    _in_agent,
    _output,
    _OverStream,
    _print_modes,
    _reshape,
    _v2_modes,
    _viewed,
)
from ironloop._runtime import task_var
from ironloop._state import as_update
from ironloop._stream_v2 import aparts, parts, schema_mapper
from ironloop._usage import get_usage_metadata_callback
from ironloop.errors import GraphInterrupt
from ironloop.runtime import RunControl, _enter, _scope, _with_control
from ironloop.stream._entry import run_scope
from ironloop.stream._methods import StreamEvents
from ironloop.warnings import LangGraphDeprecatedSinceV10

if typing.TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph

    from ironloop._node_spec import PregelNode
    from ironloop.graph import StateGraph

#: The type parameters LangGraph's ``StateGraph`` and ``CompiledStateGraph`` take (with
#: its defaults), so that ``StateGraph[State]`` and annotations such as
#: ``CompiledStateGraph[State, Context, Input, Output]`` port.
StateT = TypeVar("StateT")
ContextT = TypeVar("ContextT", default=None)
InputT = TypeVar("InputT", default=StateT)
OutputT = TypeVar("OutputT", default=StateT)


class CompiledStateGraph(StateAccess, StreamEvents, Generic[StateT, ContextT, InputT, OutputT]):
    """A runnable graph: ``invoke / ainvoke / stream / astream / batch / abatch``,
    state inspection (``get_state``, ``get_state_history``, ``update_state``) and
    ``get_graph().draw_mermaid()``."""

    def __init__(
        self,
        builder: StateGraph[Any, Any, Any, Any],
        core: Any,
        checkpointer: Any,
        store: Any,
        name: str,
    ) -> None:
        self.builder = builder
        self._core = core
        self.checkpointer = checkpointer
        self.store = store
        self.name = name

    #: ``compile(interrupt_before=, interrupt_after=)``, by LangGraph's names.
    interrupt_before_nodes: Sequence[str] = ()
    interrupt_after_nodes: Sequence[str] = ()

    #: ``compile(cache=)``: where the nodes with a ``cache_policy`` keep results.
    cache: Any = None

    #: LangGraph's ``graph.step_timeout``: seconds a step's tasks may take together.
    #: Past it the tasks still running are stopped (async nodes are cancelled) and the
    #: run raises ``TimeoutError``; the writes of the tasks that finished are kept.
    step_timeout: float | None = None

    #: ``compile(debug=True)``: every run prints its ``updates`` and ``values`` chunks
    #: as LangGraph's ``debug`` does (a run's own ``debug=`` wins).
    debug: bool = False

    #: The config every run of this graph starts from, under its own (its
    #: ``metadata`` merged, a key it gives itself winning): ``create_agent`` puts
    #: LangChain's ``recursion_limit`` of 9,999 and ``ls_integration`` /
    #: ``lc_agent_name`` metadata here, as LangChain's ``.with_config`` does, so the
    #: ``messages`` stream says which agent a chunk came from.
    run_defaults: dict[str, Any] | None = None

    #: ``compile(transformers=)``: the ``StreamTransformer`` factories every
    #: ``stream_events(version="v3")`` run of this graph adds to the built-in ones.
    stream_transformers: tuple[Any, ...] = ()

    #: ``compile(serde_allowlist=)``: the types loading a checkpoint restores besides
    #: the schemas' own (kept to compile the builder again, as a server does).
    serde_allowlist: Any = None

    #: The name of a run's LangChain callback run (``None``: the graph's name) and
    #: what its output shows of the run's result (an entrypoint's: its value).
    callback_run_name: str | None = None
    callback_run_output: Callable[[Any], Any] | None = None

    @property
    def _v2_output(self) -> Any:
        """``version="v2"`` values as the output schema (pydantic / dataclass)."""
        return schema_mapper(self.builder.output_schema)

    @property
    def _v2_state(self) -> Any:
        """``version="v2"`` checkpoint values as the state schema."""
        return schema_mapper(self.builder.state_schema)

    @property
    def nodes(self) -> dict[str, PregelNode]:
        """Each node as LangGraph's ``PregelNode`` (``.bound``: the object given to
        ``add_node``, as a runnable; ``.subgraphs``; ``.copy(update)``)."""
        from ironloop._node_spec import PregelNode

        return {name: PregelNode.of(spec) for name, spec in self.builder.nodes.items()}

    @property
    def context_schema(self) -> Any:
        """The type of ``invoke(..., context=)`` the graph was built with, as LangGraph's
        ``Pregel.context_schema``."""
        return self.builder.context_schema

    def copy(self, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy of this graph with ``update``'s attributes replaced
        (``{"name": ...}``, ``{"step_timeout": ...}``), as LangGraph's ``copy``. The
        copy shares the builder and the engine's compiled graph, which holds the
        checkpointer and store: those are given to ``compile`` instead."""
        engine_held = sorted({"checkpointer", "store", "builder", "_core"} & set(update or {}))
        if engine_held:
            raise ValueError(
                f"copy(update=) cannot replace {engine_held}: the engine's compiled graph "
                "holds them; call builder.compile(...) again with the new ones"
            )
        out = copy.copy(self)
        out.__dict__.update(update or {})
        return out

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Drops the cached results of ``nodes`` (default: every node with a
        ``cache_policy``)."""
        if self.cache is not None:
            self.cache.clear(self._cached_namespaces(nodes))

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        if self.cache is not None:
            await self.cache.aclear(self._cached_namespaces(nodes))

    def with_config(self, config: Any = None, **kwargs: Any) -> BoundConfig:
        """This graph with ``config`` under every call's config (LangChain's
        ``Runnable.with_config``)."""
        return BoundConfig(self, {**(config or {}), **kwargs})

    def _cached_namespaces(self, nodes: Sequence[str] | None) -> list[tuple[str, ...]]:
        if nodes is not None:
            names: Any = nodes
        elif "cache_policy" in self.builder.node_defaults:
            names = self.builder.nodes  # every node may have cached under the default
        else:
            names = self.builder.cache_policies
        return [cache_namespace(n) for n in names]

    def _prepare(
        self,
        config: Any,
        kwargs: dict[str, Any],
        durability: str | None,
        version: str,
        **options: Any,
    ) -> tuple[Any, _RunOptions]:
        """Every run's prologue: LangGraph's deprecated keywords and ``version``
        checked, ``config`` as the run reads it, and the run's options as one typed
        object, checked once in the core (``durability``, ``interrupt_before`` /
        ``interrupt_after``, and for a stream its modes and ``subgraphs``)."""
        if kwargs or version != "v1":
            durability = _check_run_options(durability, version, kwargs)
        config = _as_run_config(config)
        if self.run_defaults is not None:
            given = config or {}
            config = {**self.run_defaults, **given}
            if "metadata" in self.run_defaults:
                config["metadata"] = {
                    **self.run_defaults["metadata"],
                    **(given.get("metadata") or {}),
                }
        config = _in_agent(config)
        return config, _RunOptions(durability=durability, step_timeout=self.step_timeout, **options)

    def _stream_call(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] = "updates",
        subgraphs: bool = False,
        context: Any = None,
        durability: str | None = None,
        version: str = "v1",
        interrupt_before: str | Sequence[str] | None = None,
        interrupt_after: str | Sequence[str] | None = None,
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> tuple[Any, Any, str, bool, Any, _RunOptions, list[str] | None, bool]:
        """``stream``'s and ``astream``'s parameters (shown on both) and one prologue:
        ``control`` into the config, then ``_prepare``. Returns the call's input,
        context, version and ``subgraphs``, the run's config and options, the modes to
        reshape, the caller's own when ``tasks`` / ``checkpoints`` are among them
        (``None`` when not), and whether one mode was asked for by name (items are bare
        chunks)."""
        if control is not None:
            config = _with_control(config, control)
        modes = _v2_modes(stream_mode) if version == "v2" else stream_mode
        printed = _print_modes(kwargs, self.debug) if kwargs or self.debug else ()
        engine_modes, wanted = _debug_views(modes, printed)
        config, opts = self._prepare(
            config, kwargs, durability, version, stream_mode=engine_modes,
            subgraphs=subgraphs, interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
        )  # fmt: skip
        return input, context, version, subgraphs, config, opts, wanted, isinstance(modes, str)

    def _entered(self, context: Any, config: Any, input: Any, nest: bool = False) -> _Started:
        """Around the call that starts a run: the run's scope (its ``context``, store
        and config, which the engine copies when the call is made), its trace span,
        its LangChain callback run (``_callbacks``), and with ``nest``, the task it
        pauses when nested (see ``_nesting``). The run is started with ``run.config``:
        ``config`` whose ``callbacks`` are the callback run's, for its nodes and tools.
        A class, not a generator: every run enters it."""
        return _Started(self, context, config, input, nest)

    def _invoke_call(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] = "values",
        durability: str | None = None,
        version: str = "v1",
        interrupt_before: str | Sequence[str] | None = None,
        interrupt_after: str | Sequence[str] | None = None,
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> tuple[Any, Any, str, _Invocation]:
        """``invoke``'s and ``ainvoke``'s parameters (shown on both) and one prologue;
        returns the call's input, context and version, and the call. Another
        ``stream_mode``, or a run that prints (``debug`` / ``print_mode``), is collected
        from the run's stream (``via``, with the ``stream`` call's keywords but
        ``context``); otherwise the run's typed options, checked in the core."""
        if control is not None:
            config = _with_control(config, control)
        breaks = {"interrupt_before": interrupt_before, "interrupt_after": interrupt_after}
        printed = _print_modes(kwargs, self.debug) if kwargs or self.debug else ()
        if stream_mode != "values" or printed:
            via = _OverStream(stream_mode, version, printed, self._v2_output)
            streamed = {"durability": durability, **breaks, **via.options, **kwargs}
            return input, context, version, _Invocation(config, via=via, streamed=streamed)
        config, opts = self._prepare(config, kwargs, durability, version, **breaks)
        return input, context, version, _Invocation(config, opts=opts)

    @params_of(_invoke_call)
    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        """Runs to the end (or to an interrupt) and returns the final state's output
        keys (``None`` when the run wrote none of them); a pause shows as
        ``result["__interrupt__"]``. ``context`` is the run's static context
        (see ``context_schema``), read by nodes as ``runtime.context``. As LangGraph:
        another ``stream_mode`` returns the list of the stream's chunks, and
        ``version="v2"`` a ``GraphOutput(value, interrupts)`` (or v2 chunks);
        ``interrupt_before`` / ``interrupt_after`` replace the compiled ones."""
        input, context, version, call = self._invoke_call(*args, **kwargs)
        if call.via is not None:
            with _usage(call.via.usage_version) as usage:
                items = list(self.stream(input, call.config, context=context, **call.streamed))
            return call.via.result(items, usage)
        if version != "v2":
            return self._invoked(input, context, call)
        with get_usage_metadata_callback() as usage:
            out = self._invoked(input, context, call)
        return _output(out, usage, self._v2_output)

    def _invoked(self, input: Any, context: Any, call: _Invocation) -> Any:
        """``invoke``'s run, once its call is read (and a v2 call's usage counted)."""
        with self._entered(context, call.config, input, True) as run:
            out = run.result(self._core.invoke(input, run.config, options=call.opts))
            run.end()
        return out

    @params_of(_invoke_call)
    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        """Like ``invoke``; async nodes and tools run on the running event loop."""
        input, context, version, call = self._invoke_call(*args, **kwargs)
        if call.via is not None:
            with _usage(call.via.usage_version) as usage:
                it = self.astream(input, call.config, context=context, **call.streamed)
                items = [chunk async for chunk in it]
            return call.via.result(items, usage)
        if version != "v2":
            return await self._ainvoked(input, context, call)
        with get_usage_metadata_callback() as usage:
            out = await self._ainvoked(input, context, call)
        return _output(out, usage, self._v2_output)

    async def _ainvoked(self, input: Any, context: Any, call: _Invocation) -> Any:
        """``ainvoke``'s run, once its call is read (and a v2 call's usage counted)."""
        import asyncio

        stopped = asyncio.Event()
        with self._entered(context, call.config, input, nest=True) as run:
            pending = self._core.ainvoke(
                input, run.config, _loop(), options=call.opts, stopped=stopped
            )
        try:
            out = run.result(await pending)
        except asyncio.CancelledError as e:
            # Cancelled by its caller: the run's nodes get their `CancelledError`
            # (and clean up) before the caller goes on, as LangGraph's.
            run.end(e)
            await stopped.wait()
            raise
        except BaseException as e:
            run.end(e)
            raise
        run.end()
        return out

    def _nesting(self, config: Any) -> tuple[bool, contextvars.Token[Any] | None]:
        """Run inside a node of another graph (as a node, or called by a node's
        function) and without a checkpointer of its own, this graph is nested: a pause
        in it pauses that node's task. When the outer run keeps checkpoints, this one
        keeps its own in the same store under the task's namespace and continues
        where it paused when the task is resumed. Otherwise its ``interrupt()``s
        belong to the task itself, whose resume values answer them (the graph runs
        again from its start). A graph compiled with a checkpointer of its own is
        nested too when the outer run keeps checkpoints and no thread is given: as
        in LangGraph, the outer run's checkpointer wins. Returns whether the run is
        nested, and the token to reset in the second case."""
        scratch = task_var.get(None)
        if scratch is None:
            return False, None
        if self.checkpointer not in (None, True, False):
            conf = (config or {}).get("configurable") or {}
            return (True, None) if scratch.nests and "thread_id" not in conf else (False, None)
        # `checkpointer=False`: no checkpoints, not even under the outer run's.
        if scratch.nests and self.checkpointer is not False:
            return True, None
        return True, _outer_task.set(_outer_task.get() or scratch)

    @params_of(_stream_call)
    def stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Yields chunks as the run goes: for one mode the chunks, for a list of modes
        ``(mode, chunk)`` pairs. The default mode is ``"updates"`` (as LangGraph's):
        ``{node: update}`` as each node finishes, and ``{"__interrupt__": (Interrupt,
        ...)}`` when the run pauses. With ``subgraphs=True`` the events of subgraphs and
        sub-agents run inside come too, each item prefixed with its namespace (a
        tuple of ``"node:task"``; empty for this graph's own events). With
        ``version="v2"`` every chunk is LangGraph's v2 part: ``{"type": mode, "ns":
        namespace, "data": chunk}``, ``values`` parts with their ``"interrupts"``."""
        input, context, version, subgraphs, config, opts, wanted, single = self._stream_call(
            *args, **kwargs
        )
        with self._entered(context, config, input) as run, run_scope(version):
            it = self._core.stream(input, run.config, opts)
        if run.trace is not None or run.chain is not None:
            it = _traced(it, run)
        if wanted is not None:
            it = _viewed(it, wanted, single, subgraphs)
        return parts(it, subgraphs, self._v2_output, self._v2_state) if version == "v2" else it

    @params_of(_stream_call)
    async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """``stream`` for ``async for``; async nodes and tools run on the running event
        loop."""
        input, context, version, subgraphs, config, opts, wanted, single = self._stream_call(
            *args, **kwargs
        )
        with self._entered(context, config, input) as run, run_scope(version):
            it = self._core.stream(input, run.config, opts, _loop())
        items = _aitems(it, run, wanted, single, subgraphs)
        try:
            v2 = version == "v2"
            async for item in (
                aparts(items, subgraphs, self._v2_output, self._v2_state) if v2 else items
            ):
                yield item
        finally:
            await items.aclose()  # the run stops when the consumer does

    def batch(
        self,
        inputs: Sequence[Any],
        config: Any = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``invoke`` on each input, in order, with the same keyword arguments
        (``context``, ``durability``, ``stream_mode``...), as LangGraph's; with
        ``return_exceptions=True`` a failed input's exception is its result."""
        configs = _batch_configs(inputs, config)
        out: list[Any] = []
        for i, c in zip(inputs, configs, strict=True):
            try:
                out.append(self.invoke(i, c, **kwargs))
            except Exception as e:
                if not return_exceptions:
                    raise
                out.append(e)
        return out

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: Any = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``batch`` for ``await``: the inputs run concurrently."""
        configs = _batch_configs(inputs, config)
        import asyncio

        runs = (self.ainvoke(i, c, **kwargs) for i, c in zip(inputs, configs, strict=True))
        return list(await asyncio.gather(*runs, return_exceptions=return_exceptions))

    def as_tool(self, name: str, description: str) -> Any:
        """This graph (an agent) as a tool with one string argument ``input``: the
        sub-agent runs to completion on it and its final answer is the result. Several
        calls in one AI message run concurrently.

        Under an agent's tools node each call runs the sub-agent under a run id of its
        own and records it on the call (``ToolContext.set_child_loop_id``): the call's
        ``tool-finished`` event and tool message carry it, so a UI can tie the
        sub-agent's run to the call. The sub-agent runs nested in the call's task, as a
        subgraph does (its steps reach a parent streamed with ``subgraphs=True`` under
        the call's namespace, its interrupts pause the call's task)."""
        import uuid

        from ironloop._ironloop import ToolContext
        from ironloop._tool import Tool

        async def run(input: str, ctx: ToolContext | None = None) -> str:
            run_id = str(uuid.uuid4())
            if ctx is not None:
                ctx.set_child_loop_id(run_id)
            out = await self.ainvoke({"messages": [("user", input)]}, {"run_id": run_id})
            return str(out["messages"][-1].text)

        tool = Tool(
            name,
            description,
            parameters={
                "type": "object",
                "properties": {
                    "input": {"type": "string", "description": "The task for the sub-agent."}
                },
                "required": ["input"],
            },
            func=run,
        )
        # The tools node hands `ctx` in; run on its own (`tool.invoke`), it is None.
        tool._injected = {"ctx": ("context", None)}
        return tool

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON Schema of the input (the input schema's keys), as LangGraph's."""
        return jsonschema(self.builder.input_schema, "LangGraphInput")

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON Schema of the output (the output schema's keys), as LangGraph's."""
        return jsonschema(self.builder.output_schema, "LangGraphOutput")

    def get_context_jsonschema(self, config: Any = None) -> dict[str, Any] | None:
        """The JSON Schema of the run's ``context`` (``None`` without a context schema)."""
        schema = self.builder.context_schema
        return None if schema is None else jsonschema(schema, None)

    def config_schema(self, *, include: Sequence[str] | None = None) -> Any:
        """Deprecated (LangGraph 1.0): the context schema, which took the config
        schema's place; use ``get_context_jsonschema()``."""
        warnings.warn(
            "`config_schema` is deprecated. Use `get_context_jsonschema` for the relevant "
            "schema instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.builder.context_schema

    def get_config_jsonschema(self, *, include: Sequence[str] | None = None) -> Any:
        """Deprecated (LangGraph 1.0): use ``get_context_jsonschema()``."""
        warnings.warn(
            "`get_config_jsonschema` is deprecated. Use `get_context_jsonschema` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.get_context_jsonschema()

    def get_graph(self, config: Any = None, *, xray: int | bool = False) -> Graph:
        """The wiring as langchain-core's drawable ``Graph`` (``draw_mermaid()``,
        ``draw_ascii()``, ``to_json()``; ``nodes[name].data`` is the node's function,
        ``ToolNode`` or subgraph), as LangGraph's; ``xray`` draws subgraphs' nodes
        (``True``, or how many levels deep)."""
        return _drawing.draw(self, xray)

    async def aget_graph(self, config: Any = None, *, xray: int | bool = False) -> Graph:
        return _drawing.draw(self, xray)

    def _as_node(self, parent_keys: Sequence[str]) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """This graph as a node of a parent graph (sync and async forms). As in
        LangGraph, the two states may differ: the subgraph gets the parent's values for
        the keys it has, and the parent takes back the keys it has.

        An ``interrupt()`` inside the subgraph pauses the parent (its node), and the
        parent's resume values answer it. With a checkpointer on the parent, the
        subgraph keeps its own checkpoints under the task's ``checkpoint_ns`` and
        continues where it paused; without one it runs again from its start."""
        own = set(self.builder.channels)
        outer = set(parent_keys)

        def take(state: Any) -> Any:
            if not isinstance(state, dict):
                if not (dataclasses.is_dataclass(state) or hasattr(type(state), "model_fields")):
                    return state  # a bare value (a root state)
                state = as_update(state, self.name)
            return {k: v for k, v in state.items() if k in own}

        def give(out: Any) -> Any:
            if not isinstance(out, dict):
                return out
            return {k: v for k, v in out.items() if k in outer}

        def call(state: Any, config: Any = None) -> Any:
            return give(self.invoke(take(state), _nested_config(config)))

        async def acall(state: Any, config: Any = None) -> Any:
            return give(await self.ainvoke(take(state), _nested_config(config)))

        return call, acall

    def __repr__(self) -> str:
        return f"CompiledStateGraph(nodes={list(self.builder.nodes)!r})"


#: What a subgraph's run does not take from its parent node's config: where the
#: parent's own checkpoints are (the engine lends the subgraph its thread and
#: namespace, and shows them in its nodes' config) and options of the parent's run.
_PARENT_ONLY = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"})
_PARENT_RUN_ONLY = frozenset({"configurable", "multitask_strategy", "run_id", "callbacks"})


def _nested_config(config: Any) -> Any:
    """The config a subgraph node runs its graph with: its parent's (``configurable``
    keys, ``metadata``, ``recursion_limit``, durability), as LangGraph passes it on."""
    if not isinstance(config, dict):
        return None
    out = {k: v for k, v in config.items() if k not in _PARENT_RUN_ONLY}
    conf = config.get("configurable") or {}
    out["configurable"] = {k: v for k, v in conf.items() if k not in _PARENT_ONLY}
    return out


@dataclasses.dataclass
class _Invocation:
    """An ``invoke`` / ``ainvoke`` call after its prologue: the run's config and either
    its typed options (``opts``) or, run over the stream, how the stream's chunks make
    the result (``via``) and the ``stream`` call's keywords (``streamed``)."""

    config: Any
    opts: _RunOptions | None = None
    via: _OverStream | None = None
    streamed: dict[str, Any] = dataclasses.field(default_factory=dict)


class _Started:
    """A run about to be started (``with graph._entered(...) as run``): on entering, its
    scope, trace span and LangChain callback run (``None`` when not traced / no
    callbacks), each ended once, and whether it runs nested (see ``_nesting``); on
    leaving, all of it undone."""

    #: Until entered: not nested, not traced, no callback run.
    nested = False
    trace: _tracing.RunTrace | None = None
    chain: _callbacks.ChainRun | None = None
    _result: Any = None
    _outer: contextvars.Token[Any] | None = None

    def __init__(self, graph: Any, context: Any, config: Any, input: Any, nest: bool) -> None:
        self._graph, self._context, self.config, self._input, self._nest = (
            graph, context, config, input, nest
        )  # fmt: skip
        self.output: Callable[[Any], Any] = graph.callback_run_output or _callbacks.run_output

    def __enter__(self) -> _Started:
        graph, config = self._graph, self.config
        chain = _callbacks.start_run(config, graph.callback_run_name or graph.name, self._input)
        if chain is not None:
            config = {**config, "callbacks": chain.child} if config else {"callbacks": chain.child}
        try:
            self._token = _enter(self._context, graph.store, graph.builder.context_schema, config)
        except BaseException as e:
            if chain is not None:  # refused before it started: the run ends as failed
                chain.leave()
                chain.end(exc=e)
            raise
        if self._nest:
            self.nested, self._outer = graph._nesting(config)
        if _tracing.ON:
            self.trace = _tracing.start_run(graph.name)
        self.chain, self.config = chain, config
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is not None:
                self.end(exc)
        finally:
            if self.trace is not None:
                self.trace.detach()
            if self.chain is not None:
                self.chain.leave()
            if self._outer is not None:
                _outer_task.reset(self._outer)
            _scope.reset(self._token)

    def result(self, out: Any) -> Any:
        self._result = out
        return _pause_parent(out) if self.nested else out

    def end(self, exc: BaseException | None = None) -> None:
        if self.trace is not None:
            self.trace.end(exc)
            self.trace = None
        if self.chain is not None:
            self.chain.end(None if exc else self.output(self._result), exc)


@contextlib.contextmanager
def _usage(version: str) -> Iterator[Any]:
    """The token usage a ``version="v2"`` result reports, totalled over the run
    (``None`` for v1)."""
    if version != "v2":
        yield None
        return
    with get_usage_metadata_callback() as usage:
        yield usage


def _loop() -> Any:
    import asyncio

    return asyncio.get_running_loop()


def _traced(it: Iterator[Any], run: _Started) -> Iterator[Any]:
    """A stream whose run span ends when the stream does."""
    failed: BaseException | None = None
    try:
        yield from it
    except Exception as e:
        failed = e
        raise
    finally:
        run.end(failed)


async def stream_events(
    graph: Any,
    name: str,
    input: Any,
    config: dict[str, Any] | None,
    version: str,
    context: Any,
    durability: str | None,
    **kwargs: Any,
) -> AsyncGenerator[dict[str, Any], None]:
    """``astream_events`` of ``graph`` (a compiled graph or an entrypoint, whose
    ``astream`` takes the engine's modes with ``subgraphs=True``), its run named
    ``name``; ``kwargs`` (``interrupt_before``, ``control``...) go to ``astream``
    as the caller gave them."""
    if version not in ("v1", "v2"):
        raise ValueError(
            f"astream_events takes version='v3' (LangGraph's run streams), 'v2' "
            f"(LangChain's current events) or 'v1', "
            f"got {version!r}"
        )
    import uuid

    from ironloop._events import SOURCES, EventsView

    metadata = dict((config or {}).get("metadata") or {})
    view = EventsView(str(uuid.uuid4()), name, metadata, version)
    yield view.start(input)
    stream = graph.astream(
        input,
        config,
        stream_mode=list(SOURCES),
        subgraphs=True,
        context=context,
        durability=durability,
        **kwargs,
    )
    try:
        async for ns, mode, chunk in stream:
            for event in view.on(mode, chunk, ns):
                yield event
    finally:
        await stream.aclose()
    for event in view.end():
        yield event


async def _aitems(
    it: Any, run: _Started, wanted: list[str] | None, single: bool, subgraphs: bool
) -> AsyncGenerator[Any, None]:
    """The items of the engine's async stream (with ``wanted``, reshaped as the
    caller's ``tasks`` / ``checkpoints`` modes show them); the run is cancelled when
    this ends, and its span ends with it."""
    failed: BaseException | None = None
    ended = False  # the run's stream ended (its last item, or its failure)
    try:
        while True:
            try:
                item = await it.next()
            except StopAsyncIteration:
                ended = True
                return
            except Exception:
                ended = True
                raise
            if wanted is None:
                yield item
            else:
                for shown in _reshape(item, wanted, single, subgraphs):
                    yield shown
    except Exception as e:
        failed = e
        raise
    finally:
        it.cancel()
        run.end(failed)
        if not ended:  # closed early: wait for the cancelled run to stop
            await _stopped(it)


async def _stopped(it: Any) -> None:
    """Waits for a cancelled run to end: its nodes have seen their `CancelledError`
    and the writes of those that finished are saved when the consumer goes on (as
    LangGraph's, whose stream ends only then). What it still sends is dropped."""
    while True:
        try:
            await it.next()
        except (StopAsyncIteration, Exception):  # its end, or its failure (cancelled)
            break
    # The run handed its nodes' `cancel()` to this loop before its end, which may have
    # been queued already (no loop turn): one turn runs those, one more the cancelled
    # nodes' `except CancelledError` blocks.
    import asyncio

    for _ in range(2):
        await asyncio.sleep(0)


def _pause_parent(out: Any) -> Any:
    """A nested run's result; paused, it pauses the parent's task instead."""
    interrupts = out.get(INTERRUPT) if isinstance(out, dict) else None
    if interrupts:
        raise GraphInterrupt(interrupts[0].value)
    return out
