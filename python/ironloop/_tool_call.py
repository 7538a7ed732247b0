"""``ToolCallRequest`` and ``ToolRuntime``: one tool call as a ``wrap_tool_call``
interceptor sees it, and what a tool may ask to be given (LangGraph's
``langgraph.prebuilt.tool_node`` names, shared by ``ToolNode(wrap_tool_call=)`` and
``create_agent``'s middleware).

``ToolRuntime`` is injected into a tool parameter annotated with it (``runtime:
ToolRuntime``, also ``ToolRuntime[Ctx, State]``), LangChain tools included: the engine
hands the tool a ``ToolContext`` and this module makes the ``ToolRuntime`` from it and
from what the running ``ToolNode`` or graph knows (context, config, store, stream
writer, execution info).

Example:
    >>> req = ToolCallRequest(tool_call={"name": "add", "args": {"a": 1}, "id": "c1"},
    ...                       tool=None, state={"messages": []}, runtime=None)
    >>> req.override(tool_call={**req.tool_call, "args": {"a": 2}}).tool_call["args"]
    {'a': 2}
"""

from __future__ import annotations

import contextvars
import dataclasses
import types
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Optional

from typing_extensions import TypeVar

from ironloop._runtime import task_var, writer_of
from ironloop.runtime import _scope

__all__ = ["ToolCallRequest", "ToolRuntime"]

# Defaults as LangGraph's, so ``ToolRuntime[Ctx]`` is a valid annotation.
ContextT = TypeVar("ContextT", default=None)
StateT = TypeVar("StateT", default=dict)


@dataclasses.dataclass
class ToolCallRequest:
    """One tool call as ``wrap_tool_call`` sees it: the call (``{"name", "args",
    "id"}``), the tool that would run it (``None`` when the node has none by that
    name: the interceptor may answer it, or ``override(tool=...)`` with one), the
    state and the call's :class:`ToolRuntime`.

    Change a request with :meth:`override` (a new request); assigning a field still
    works but warns, as in LangGraph."""

    tool_call: dict[str, Any]
    tool: Any
    state: Any
    runtime: Any

    @classmethod
    def _of(cls, tool_call: dict[str, Any], tool: Any, state: Any, runtime: Any) -> Any:
        """A new request, its fields set straight (a tools node makes one per call; the
        dataclass' ``__init__`` goes through ``__setattr__``'s deprecation check once a
        field, which has nothing to warn about in a new request: 0.85 → 0.23 µs)."""
        request = object.__new__(cls)
        request.__dict__.update(tool_call=tool_call, tool=tool, state=state, runtime=runtime)
        return request

    @classmethod
    def _deferred(cls, tool_call: dict[str, Any], tool: Any, state: Any, store: Any) -> Any:
        """A new request whose ``runtime`` is made when first read (most interceptors
        never read it; making it cost a wrapped call ~10 k instructions of its ~80 k):
        from what the call sees now (the node's scope, the graph run, the task), so a
        later read gives what an eager one would have."""
        request = object.__new__(cls)
        request.__dict__.update(
            tool_call=tool_call,
            tool=tool,
            state=state,
            _pending=(
                tool_call.get("id"),
                store,
                node_scope.get(),
                _scope.get(),
                task_var.get(None),
            ),
        )
        return request

    def __getattr__(self, name: str) -> Any:
        # Only called for what the instance lacks: ``runtime`` of a deferred request.
        fields = self.__dict__
        if name != "runtime" or "_pending" not in fields:
            raise AttributeError(f"'ToolCallRequest' object has no attribute {name!r}")
        call_id, store, scope, graph, scratch = fields.pop("_pending")
        runtime = fields["runtime"] = _runtime_of(
            fields["state"], call_id, store, scope, graph, scratch
        )
        return runtime

    def _store(self) -> Any:
        """``runtime.store``, without making a deferred runtime."""
        fields = self.__dict__
        pending = fields.get("_pending")
        if pending is None:
            return getattr(fields.get("runtime"), "store", None)
        _, store, scope, graph, _ = pending
        return _store_of(store, scope.runtime if scope is not None else None, graph)

    def __setattr__(self, name: str, value: Any) -> None:
        fields = self.__dict__
        if name == "runtime" and fields.pop("_pending", None) is not None:
            fields["runtime"] = None  # a deferred runtime is a field set all the same
        if name in fields:
            warnings.warn(
                f"Setting attribute '{name}' on ToolCallRequest is deprecated. Use the "
                "override() method instead to create a new instance with modified values.",
                DeprecationWarning,
                stacklevel=2,
            )
        object.__setattr__(self, name, value)

    def override(self, **overrides: Any) -> ToolCallRequest:
        """A copy with ``overrides`` applied (``tool_call=``, ``tool=``, ``state=``,
        ``runtime=``). A new ``state`` is also the runtime's, so the tool sees it
        through ``InjectedState`` and ``ToolRuntime`` alike."""
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(
                f"ToolCallRequest.override() got unknown fields {sorted(unknown)}; it "
                "takes tool_call, tool, state and runtime"
            )
        request = dataclasses.replace(self, **overrides)
        runtime: Any = request.runtime
        fields = getattr(runtime, "__dataclass_fields__", None)  # a ToolRuntime (not None)
        if "state" in overrides and not isinstance(runtime, type) and "state" in (fields or ()):
            object.__setattr__(
                request, "runtime", dataclasses.replace(runtime, state=request.state)
            )
        return request


def _no_writer(_payload: Any) -> None:
    return None


_new = object.__new__


@dataclasses.dataclass
class _RuntimeFields(Generic[ContextT, StateT]):
    """The fields of ``ToolRuntime`` (made a dataclass, with langchain-core's marker as
    a base, by :func:`runtime_class`)."""

    __ironloop_inject__ = "runtime"

    state: StateT
    context: ContextT
    config: dict[str, Any]
    stream_writer: Callable[[Any], None]
    tool_call_id: str | None
    store: Any
    tools: list[Any] = dataclasses.field(default_factory=list)
    execution_info: Any = None
    server_info: Any = None

    def emit_output_delta(self, delta: Any) -> None:
        """Reports a partial result of this call on the ``tools`` stream (a
        ``tool-output-delta`` event, as LangGraph's); the model never reads it. A
        no-op where the run does not stream ``tools``."""
        _emit_output_delta(self, delta)


#: The writer of the LangChain tool call running here that a node started itself,
#: set by the ``tools`` stream's callback handler (``_langchain_tool_stream``) for the
#: call's duration: ``ToolRuntime.emit_output_delta`` of that call writes to it.
tool_call_writer: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "ironloop_tool_call_writer", default=None
)

#: Where a runtime made for a call the engine runs keeps that call's ``ToolContext``.
_CONTEXT_ATTR = "_ironloop_tool_context"


def _emit_output_delta(runtime: Any, delta: Any) -> None:
    """``ToolRuntime.emit_output_delta``: the engine's call reports through its
    ``ToolContext`` (the engine's ``tools`` stream), any other LangChain tool call
    through the writer the stream's handler set for it."""
    ctx = runtime.__dict__.get(_CONTEXT_ATTR)
    if ctx is not None:
        ctx.update(delta)
        return
    writer = tool_call_writer.get()
    if writer is not None:
        writer(delta)


_runtime_cls: list[type] = []

_TOOL_RUNTIME_DOC = """What a tool is given when it declares a parameter of this type
(LangGraph's and LangChain's ``ToolRuntime``): the graph ``state``, the run's ``context``,
the ``config``, the ``custom`` stream's ``stream_writer``, the ``tool_call_id``, the
``store``, the node's ``tools``, and ``execution_info`` / ``server_info``;
``emit_output_delta(delta)`` reports a partial result on the ``tools`` stream. The
parameter is hidden from the schema the model sees (``def whoami(runtime: ToolRuntime)
-> str``)."""


def runtime_class() -> type:
    """``ToolRuntime``, made on first use: with langchain-core installed it derives from
    its marker for arguments injected by type (so a LangChain tool leaves a
    ``ToolRuntime`` parameter out of its schema); importing that module costs about a
    second, which ``import ironloop`` does not pay."""
    if not _runtime_cls:
        fields: Any = _RuntimeFields
        generic = fields[ContextT, StateT]  # ``ToolRuntime[Ctx, State]`` stays valid
        try:
            from langchain_core.tools.base import _DirectlyInjectedToolArg

            bases: tuple[Any, ...] = (generic, _DirectlyInjectedToolArg)
        except ImportError:
            bases = (generic,)
        namespace: dict[str, Any] = {
            "__doc__": _TOOL_RUNTIME_DOC,
            "__qualname__": "ToolRuntime",
            # Real types, not this module's strings: pydantic (a LangChain tool's
            # schema) resolves them where the class says it lives.
            "__annotations__": {
                "state": StateT,
                "context": ContextT,
                "config": dict[str, Any],
                "stream_writer": Callable[[Any], None],
                "tool_call_id": Optional[str],  # noqa: UP045 (evaluated on 3.10 too)
                "store": Any,
                "tools": list[Any],
                "execution_info": Any,
                "server_info": Any,
            },
            "tools": dataclasses.field(default_factory=list),
            "execution_info": None,
            "server_info": None,
            "emit_output_delta": _RuntimeFields.emit_output_delta,
        }
        made = types.new_class("ToolRuntime", bases, exec_body=lambda ns: ns.update(namespace))
        cls: type = dataclasses.dataclass(made)
        cls.__module__ = "ironloop.prebuilt.tool_node"  # where it is imported from
        _runtime_cls.append(cls)
    return _runtime_cls[0]


def __getattr__(name: str) -> Any:
    if name == "ToolRuntime":
        return runtime_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    ToolRuntime = _RuntimeFields


@dataclasses.dataclass(frozen=True)
class NodeScope:
    """What a standalone ``ToolNode`` call gives its tools' runtimes: the config it was
    called with, LangGraph's runtime in it (``configurable["__pregel_runtime"]``, how
    LangGraph hands a node its runtime) and the node's tools."""

    config: dict[str, Any]
    runtime: Any
    tools: list[Any]


#: Set around a ``ToolNode`` call (standalone, or a wrapped node in a graph).
node_scope: contextvars.ContextVar[NodeScope | None] = contextvars.ContextVar(
    "ironloop_tool_node_scope", default=None
)

#: The runtime of the request a ``wrap_tool_call`` handler is executing, or the request
#: itself while its runtime is deferred: the tool gets it (with the request's state), so
#: an interceptor's ``override(runtime=...)`` counts.
request_runtime: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "ironloop_request_runtime", default=None
)


def scope_for(config: Any, tools: list[Any]) -> NodeScope:
    """The scope of a ``ToolNode`` call given ``config`` (made with its fields set
    straight: a tools step makes one, and a frozen dataclass' ``__init__`` sets each
    field through ``object.__setattr__``)."""
    config = dict(config or {})
    runtime = (config.get("configurable") or {}).get("__pregel_runtime")
    scope = _new(NodeScope)
    scope.__dict__.update(config=config, runtime=runtime, tools=tools)
    return scope  # type: ignore[no-any-return]


def task_state() -> Any:
    """The state of the graph task this is called in, as its node gets it from an edge
    (a dict, or its input schema's object), else ``{}``: what a ``ToolNode`` given bare
    tool calls (a ``Send("tools", [call])``, or a call from inside a node) hands its
    tools, as LangGraph's reads the task's state for them."""
    scratch = task_var.get(None)
    state = scratch.read_state() if scratch is not None else None
    return {} if state is None else state


def make_runtime(state: Any, tool_call_id: str | None, store: Any = None) -> Any:
    """The ``ToolRuntime`` of a call: from the ``ToolNode`` call's scope, else from the
    running graph (its context, store, config and stream writer)."""
    return _runtime_of(
        state, tool_call_id, store, node_scope.get(), _scope.get(), task_var.get(None)
    )


def _runtime_of(
    state: Any, tool_call_id: str | None, store: Any, scope: Any, graph: Any, scratch: Any
) -> Any:
    """:func:`make_runtime` given the node's ``scope``, the graph run's and the task's
    scratchpad (as the context held them when the call was made)."""
    base = scope.runtime if scope is not None else None
    config: dict[str, Any] = {}
    if scope is not None and scope.config:
        config = scope.config
    elif graph is not None and graph[2] is not None:
        config = graph[2]
    context = getattr(base, "context", None) if base is not None else None
    if context is None and graph is not None:
        context = graph[0]
    store = _store_of(store, base, graph)
    writer = getattr(base, "stream_writer", None) if base is not None else None
    if writer is None:
        writer = writer_of(scratch) if graph is not None else _no_writer
    # Its fields set straight, as ``ToolCallRequest._of`` (a call of a wrapped tools
    # node makes one; the dataclass' ``__init__`` with nine keywords cost 1.1 µs).
    runtime: Any = _new(runtime_class())
    runtime.__dict__.update(
        state=state,
        context=context,
        config=config,
        stream_writer=writer,
        tool_call_id=tool_call_id,
        store=store,
        tools=list(scope.tools) if scope is not None else [],
        execution_info=getattr(base, "execution_info", None) if base is not None else None,
        server_info=getattr(base, "server_info", None) if base is not None else None,
    )
    return runtime


def _store_of(store: Any, base: Any, graph: Any) -> Any:
    """A call's store: the one given, else the node scope's runtime's, else the graph
    run's."""
    if store is None:
        store = getattr(base, "store", None) if base is not None else None
        if store is None and graph is not None:
            store = graph[1]
    return store


def from_context(ctx: Any) -> Any:
    """The ``ToolRuntime`` for a tool the engine handed a ``ToolContext``: the running
    request's own runtime under a ``wrap_tool_call`` handler, else one made for it."""
    given: Any = request_runtime.get()
    if isinstance(given, ToolCallRequest):
        given = given.runtime  # deferred until a tool reads it
    runtime: Any = None
    if _runtime_cls and isinstance(given, _runtime_cls[0]):
        if getattr(given, "tool_call_id", None) == ctx.tool_call_id:
            runtime = given
    if runtime is None:
        runtime = make_runtime(ctx.state, ctx.tool_call_id, ctx.store)
    # Not a field: the call's partial results go to the engine's `tools` stream.
    runtime.__dict__[_CONTEXT_ATTR] = ctx
    return runtime
