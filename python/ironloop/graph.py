"""``StateGraph``: LangGraph's graph builder, compiled onto ironloop's Rust step loop.

Example:
    >>> from typing import TypedDict
    >>> from ironloop import StateGraph, START, END
    >>> class S(TypedDict):
    ...     count: int
    >>> g = StateGraph(S)
    >>> g = g.add_node("inc", lambda s: {"count": s["count"] + 1})
    >>> g = g.add_edge(START, "inc").add_edge("inc", END)
    >>> g.compile().invoke({"count": 1})
    {'count': 2}
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import typing
import warnings
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from typing import (
    Annotated,
    Any,
    Generic,
    TypedDict,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from typing_extensions import Self, TypeVar

from ironloop import _tracing
from ironloop._allowlist import SerdeAllowlist, allowlist
from ironloop._bound import BoundConfig
from ironloop._cache import cached_node
from ironloop._cache import namespace as cache_namespace
from ironloop._constants import END, START
from ironloop._interrupt import asked, validated
from ironloop._ironloop import (
    _child_ns,
    _coerce_message,
    _GraphCore,
    add_messages,
)
from ironloop._managed import with_managed
from ironloop._retry import with_retry
from ironloop._runtime import answers_var, scratch_lock, task_var
from ironloop._state import (
    as_update,
    input_schema_of,
    managed_keys,
    merge_channels,
    node_factory,
    schema_channels,
)
from ironloop._stream_v2 import aparts, as_output, parts
from ironloop._toolnode import ToolNode
from ironloop._usage import get_usage_metadata_callback
from ironloop.checkpoint import check_saver
from ironloop.errors import GraphInterrupt
from ironloop.messages import BaseMessage
from ironloop.runtime import _enter, _scope, _with_runtime
from ironloop.types import CachePolicy, Command, RetryPolicy, Send, StateSnapshot
from ironloop.warnings import LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10

__all__ = [
    "END",
    "START",
    "CompiledStateGraph",
    "MessagesState",
    "StateGraph",
    "add_messages",
    "get_stream_writer",
    "interrupt",
    "push_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"

#: Inside a subgraph run by a graph without checkpoints: the scratchpad of the outermost
#: graph's task, which holds that task's resume values.
_outer_task: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "ironloop_outer_task", default=None
)


class MessagesState(TypedDict):
    """A state with one ``messages`` channel merged by ``add_messages``."""

    messages: Annotated[list[BaseMessage], add_messages]


def interrupt(value: Any, *, response_schema: Any = None) -> Any:
    """Pauses the run and surfaces ``value`` to the caller as ``__interrupt__``.

    Resuming with ``graph.invoke(Command(resume=x), config)`` runs the node again from
    its start; this call then returns ``x`` (the k-th call returns the k-th resume
    value). Needs a checkpointer.

    ``response_schema`` (as LangGraph 1.2): what the answer must match, shown to the
    caller as JSON Schema in ``Interrupt.response_schema``. A pydantic model,
    ``TypedDict`` or dataclass validates the answer, which this call returns converted
    (a mismatch raises pydantic's ``ValidationError``); a dict is a JSON Schema shown
    as it is, the answer returned unchecked.

    Example:
        >>> def approve(state):
        ...     answer = interrupt({"question": "ship it?"})
        ...     return {"approved": answer == "yes"}
    """
    scratch = task_var.get(None)
    if scratch is None:
        raise RuntimeError(
            "interrupt() can only be called inside a graph node (or a tool a graph runs)"
        )
    question, adapter = asked(value, response_schema)
    # In a subgraph, the pause and the resume values belong to the parent's task.
    with scratch_lock:
        answer = (_outer_task.get() or scratch).interrupt(question)
    for taken in answers_var.get():  # the @task calls this runs in (ironloop.func)
        taken[0] += 1
    return validated(adapter, answer)


def push_message(message: Any, *, state_key: str | None = "messages") -> BaseMessage:
    """Sends ``message`` to the ``messages`` stream now and, unless ``state_key`` is
    ``None``, writes it to that state key with the node's own update (as LangGraph's
    ``langgraph.graph.message.push_message``). Returns the message. The message needs
    an id: a message object (ironloop's or LangChain's) with one, or a dict with one.

    Example:
        >>> from ironloop.messages import AIMessage
        >>> def node(state):
        ...     push_message(AIMessage("working on it", id="progress-1"))
        ...     return {}
    """
    scratch = task_var.get(None)
    if scratch is None:
        raise RuntimeError("Called get_config outside of a runnable context")
    given_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    if given_id is None:
        raise ValueError("Message ID is required")
    msg = _coerce_message(message)
    if scratch.streams_messages:
        scratch.write_message(msg)
    if state_key:
        scratch.push(state_key, msg)
    return msg  # type: ignore[no-any-return]


def _noop(_payload: Any) -> None:
    return None


def get_stream_writer() -> Callable[[Any], None]:
    """A function that sends a payload to the ``custom`` stream of the running graph
    (a no-op outside a graph run).

    Example:
        >>> def node(state):
        ...     get_stream_writer()({"progress": 0.5})
        ...     return {}
    """
    scratch = task_var.get(None)
    # As LangGraph's: a no-op unless the run streams `custom` (so a run that does not
    # can share one Runtime between its tasks, see `get_runtime`).
    return scratch.write if scratch is not None and scratch.streams_custom else _noop


def _task_writer(payload: Any) -> None:
    get_stream_writer()(payload)


def _wants(fn: Any) -> dict[str, bool]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    return {p: p in params for p in ("config", "store", "writer", "runtime")}


#: How LangGraph lets a node's ``config`` parameter be annotated (written as text under
#: ``from __future__ import annotations``).
_CONFIG_ANNOTATIONS = ("RunnableConfig", "Optional[RunnableConfig]", "RunnableConfig | None")


def _check_config_annotation(fn: Any) -> None:
    """Warns, as LangGraph does, when a node's ``config`` parameter is annotated with
    something other than ``RunnableConfig`` (or it or ``None``)."""
    try:
        param = inspect.signature(fn).parameters.get("config")
    except (TypeError, ValueError):
        return
    if param is None or param.annotation is inspect.Parameter.empty:
        return
    ann = param.annotation
    names = {getattr(a, "__name__", None) for a in (ann, *get_args(ann)) if a is not type(None)}
    if ann in _CONFIG_ANNOTATIONS or names == {"RunnableConfig"}:
        return
    warnings.warn(
        "The 'config' parameter should be typed as 'RunnableConfig' or "
        f"'RunnableConfig | None', not '{ann}'. ",
        UserWarning,
        stacklevel=4,
    )


def _deprecated_kwargs(
    where: str, kwargs: dict[str, Any], renames: dict[str, tuple[str, type[Warning]]]
) -> dict[str, Any]:
    """Takes LangGraph's deprecated keywords (``renames``: old name -> new name and
    warning class) out of ``kwargs``, warning as LangGraph does; returns their values
    under the new names. Any other keyword left is refused."""
    taken = {}
    for old, (new, category) in renames.items():
        if old in kwargs:
            warnings.warn(
                f"`{old}` is deprecated and will be removed. Please use `{new}` instead.",
                category,
                stacklevel=3,
            )
            taken[new] = kwargs.pop(old)
    if kwargs:
        raise TypeError(f"{where} got unexpected keyword argument(s): {sorted(kwargs)}")
    return taken


def _retried(name: str, action: Any, retry_policy: Any) -> Any:
    """A function node run again as ``retry_policy`` (one policy or several) says."""
    if isinstance(action, (ToolNode, CompiledStateGraph)):
        raise TypeError(
            f"node {name!r}: retry_policy is supported on function nodes, not on a "
            f"{type(action).__name__}; wrap it in a function that invokes it"
        )
    return with_retry(action, _retry_policies(f"node {name!r}", retry_policy), name)


def _retry_policies(where: str, retry_policy: Any) -> list[RetryPolicy]:
    """``retry_policy`` (one ``RetryPolicy`` or a sequence of them) as a list, or a
    ``TypeError`` naming ``where`` it was given."""
    if isinstance(retry_policy, RetryPolicy):
        return [retry_policy]
    policies = list(retry_policy) if isinstance(retry_policy, (list, tuple)) else [retry_policy]
    for p in policies:
        if not isinstance(p, RetryPolicy):
            raise TypeError(f"{where}: retry_policy takes RetryPolicy objects, got {p!r}")
    return policies


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _literal_ends(path: Any) -> list[str] | None:
    try:
        ret = get_type_hints(path).get("return")
    except Exception:  # any failure means "unknown"
        return None
    if get_origin(ret) is typing.Literal:
        return [str(a) for a in get_args(ret)]
    return None


@dataclasses.dataclass
class _Branch:
    source: str
    #: The branch's name in messages: its function's, or "condition" (as LangGraph).
    name: str
    path: Callable[..., Any]
    path_map: dict[Hashable, str] | None
    ends: list[str] | None
    #: The input schema the routing function declares, if any.
    schema: Any = None


#: The type parameters LangGraph's ``StateGraph`` and ``CompiledStateGraph`` take (with
#: its defaults), so that ``StateGraph[State]`` and annotations such as
#: ``CompiledStateGraph[State, Context, Input, Output]`` port.
StateT = TypeVar("StateT")
ContextT = TypeVar("ContextT", default=None)
InputT = TypeVar("InputT", default=StateT)
OutputT = TypeVar("OutputT", default=StateT)


class StateGraph(Generic[StateT, ContextT, InputT, OutputT]):
    """A graph whose nodes read and update a shared state.

    ``state_schema`` is a TypedDict, dataclass or pydantic model; a field annotated
    ``Annotated[T, reducer]`` combines writes with ``reducer`` (``operator.add``,
    ``add_messages`` or any function of two values) and starts at ``T()`` (``[]``,
    ``0``); other fields keep the last write and are absent until written. A schema
    without fields (``Annotated[list, operator.add]``, ``int``) makes the state one
    bare value that nodes receive and return.

    ``input_schema`` picks the input keys a run takes (others are dropped) and
    ``output_schema`` the keys it returns; both default to ``state_schema``. A node
    whose first parameter is annotated with another class sees only that class's keys,
    which may include keys no other schema has (private to the nodes that name them).
    """

    def __init__(
        self,
        state_schema: Any,
        context_schema: Any = None,
        *,
        input_schema: Any = None,
        output_schema: Any = None,
        **kwargs: Any,
    ) -> None:
        old = _deprecated_kwargs(
            "StateGraph()",
            kwargs,
            {
                "config_schema": ("context_schema", LangGraphDeprecatedSinceV10),
                "input": ("input_schema", LangGraphDeprecatedSinceV05),
                "output": ("output_schema", LangGraphDeprecatedSinceV05),
            },
        )
        context_schema = context_schema or old.get("context_schema")
        input_schema = input_schema or old.get("input_schema")
        output_schema = output_schema or old.get("output_schema")
        self.state_schema = state_schema
        self.context_schema = context_schema
        self.input_schema = input_schema or state_schema
        self.output_schema = output_schema or state_schema
        #: Each schema's channels; the graph's are all of them, in order of arrival.
        self.schemas: dict[Any, dict[str, dict[str, Any]]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        #: Managed values (``RemainingSteps``, ``IsLastStep``): filled for each node.
        self.managed: dict[str, Any] = {}
        for schema in (self.state_schema, self.input_schema, self.output_schema):
            self._add_schema(schema)
        #: The input schema each node declares (absent: the state schema).
        self.node_schemas: dict[str, Any] = {}
        #: ``add_node(..., metadata=)``: shown by ``get_graph().draw_mermaid()``.
        self.node_metadata: dict[str, dict[str, Any]] = {}
        #: ``add_node(..., cache_policy=)``: applied when ``compile`` is given a cache.
        self.cache_policies: dict[str, Any] = {}
        #: The nodes added with a ``retry_policy`` of their own (which wins over
        #: ``set_node_defaults``'s).
        self.retried: set[str] = set()
        #: ``set_node_defaults``: ``retry_policy`` and ``cache_policy`` for the nodes
        #: without their own, applied at ``compile``.
        self.node_defaults: dict[str, Any] = {}
        self.nodes: dict[str, Any] = {}
        self.edges: list[tuple[str, str]] = []
        self.joins: list[tuple[list[str], str]] = []
        self.branches: list[_Branch] = []
        self.compiled = False

    def _add_schema(self, schema: Any) -> None:
        if schema not in self.schemas:
            self.schemas[schema] = schema_channels(schema)
            merge_channels(self.channels, self.schemas[schema])
            self.managed.update(managed_keys(schema))

    def add_node(
        self,
        node: Any,
        action: Any = None,
        *,
        defer: bool = False,
        metadata: dict[str, Any] | None = None,
        input_schema: Any = None,
        retry_policy: Any = None,
        cache_policy: Any = None,
        destinations: Any = None,
        **kwargs: Any,
    ) -> Self:
        """Adds a node: ``add_node("name", fn)`` or ``add_node(fn)`` (named after it).
        ``fn`` may be sync or async, a ``ToolNode``, a compiled graph (a subgraph), or a
        LangChain ``Runnable`` (a tool, a chain: its ``invoke`` runs on the state).

        The node sees the keys of ``input_schema``, else of the class its first
        parameter is annotated with, else of the state schema. ``retry_policy`` (a
        ``RetryPolicy`` or a sequence of them) runs a failing function node again.
        ``metadata`` is shown in ``get_graph().draw_mermaid()``; ``destinations`` is
        taken and not used (LangGraph draws with it); ``cache_policy`` (a
        ``CachePolicy``) answers the node from the ``cache`` given to ``compile`` when
        its input was seen before; ``defer=True`` is refused."""
        old = _deprecated_kwargs(
            "add_node()",
            kwargs,
            {
                "retry": ("retry_policy", LangGraphDeprecatedSinceV05),
                "input": ("input_schema", LangGraphDeprecatedSinceV05),
            },
        )
        retry_policy = retry_policy or old.get("retry_policy")
        input_schema = input_schema or old.get("input_schema")
        if defer:
            raise NotImplementedError(
                "add_node(defer=True) is not supported: ironloop does not hold a node back "
                "until the run has nothing else to do; join the branches with "
                "add_edge([...], node) instead"
            )
        if cache_policy is not None and not isinstance(cache_policy, CachePolicy):
            raise TypeError(
                f"node {node!r}: cache_policy takes a CachePolicy, got {cache_policy!r}"
            )
        if action is None:
            action = node
            name = getattr(node, "name", None) or getattr(node, "__name__", None)
            if not isinstance(name, str):
                raise TypeError(f"cannot name node {node!r}: use add_node('name', fn)")
        else:
            name = node
        if not isinstance(name, str):
            raise TypeError(f"a node name must be a str, got {name!r}")
        if name in self.nodes:
            raise ValueError(f"Node `{name}` already present.")
        if name in (START, END):
            raise ValueError(f"Node `{name}` is reserved.")
        for character in ("|", ":"):
            if character in name:
                raise ValueError(
                    f"'{character}' is a reserved character and is not allowed in the node names."
                )
        graph_like = isinstance(action, (ToolNode, CompiledStateGraph))
        if not graph_like and not callable(action) and callable(getattr(action, "ainvoke", None)):
            # A LangChain `Runnable` (a tool, a chain): run on the state, as LangGraph.
            from ironloop._langchain import runnable_node

            action = runnable_node(action)
        if not callable(action) and not graph_like:
            raise TypeError(
                f"node {name!r}: expected a function, a compiled graph, a ToolNode or a "
                f"LangChain Runnable, got {type(action).__name__}"
            )
        if not isinstance(action, (ToolNode, CompiledStateGraph)):
            _check_config_annotation(action)
        schema = input_schema or input_schema_of(action)
        if retry_policy is not None:
            action = _retried(name, action, retry_policy)
            self.retried.add(name)
        if schema is not None:
            self._add_schema(schema)
            self.node_schemas[name] = schema
        self.nodes[name] = action
        if cache_policy is not None:
            self.cache_policies[name] = cache_policy
        if metadata:
            self.node_metadata[name] = dict(metadata)
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: Any = None,
        cache_policy: Any = None,
        error_handler: Any = None,
        timeout: Any = None,
    ) -> Self:
        """Policies for every function node of this graph that has none of its own
        from ``add_node``, applied at ``compile`` (so nodes added later get them too),
        as LangGraph's: ``retry_policy`` (a ``RetryPolicy`` or a sequence of them) and
        ``cache_policy`` (a ``CachePolicy``, used when ``compile`` is given a cache).
        Subgraphs do not inherit them. ``error_handler`` and ``timeout`` are refused:
        ironloop has no node error handlers or node timeouts yet."""
        if error_handler is not None or timeout is not None:
            given = "error_handler" if error_handler is not None else "timeout"
            raise NotImplementedError(
                f"set_node_defaults({given}=...) is not supported: ironloop has no node "
                "error handlers or node timeouts yet; catch the error (or bound the wait) "
                "inside the node's function instead"
            )
        if cache_policy is not None and not isinstance(cache_policy, CachePolicy):
            raise TypeError(
                f"set_node_defaults: cache_policy takes a CachePolicy, got {cache_policy!r}"
            )
        if retry_policy is not None:
            self.node_defaults["retry_policy"] = _retry_policies("set_node_defaults", retry_policy)
        if cache_policy is not None:
            self.node_defaults["cache_policy"] = cache_policy
        return self

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> Self:
        """Runs ``end_key`` after ``start_key``; with a list of sources, after all of them."""
        if isinstance(start_key, str):
            if start_key == END:
                raise ValueError("END cannot be a start node")
            if end_key == START:
                raise ValueError("START cannot be an end node")
            self.edges.append((start_key, end_key))
            return self
        # A join is checked now, as in LangGraph (a single edge at compile()).
        for start in start_key:
            if start == END:
                raise ValueError("END cannot be a start node")
            if start not in self.nodes:
                raise ValueError(f"Need to add_node `{start}` first")
        if end_key == START:
            raise ValueError("START cannot be an end node")
        if end_key != END and end_key not in self.nodes:
            raise ValueError(f"Need to add_node `{end_key}` first")
        self.joins.append((list(start_key), end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | list[str] | None = None,
    ) -> Self:
        """After ``source``, calls ``path(state)`` to choose the next node(s): a name,
        ``END``, a ``Send``, or a list of them; ``path_map`` maps its results to names."""
        if isinstance(path_map, list):
            mapping: dict[Hashable, str] | None = {p: p for p in path_map}
        elif path_map is None:
            mapping = None
        else:
            mapping = dict(path_map)
        ends = list(mapping.values()) if mapping else _literal_ends(path)
        name = getattr(path, "__name__", None)
        if not isinstance(name, str) or name == "<lambda>":
            name = "condition"
        schema = input_schema_of(path)
        if schema is not None:
            self._add_schema(schema)
        self.branches.append(_Branch(source, name, path, mapping, ends, schema))
        return self

    def add_sequence(self, nodes: Sequence[Any]) -> Self:
        """Adds nodes that run one after the other: functions (named after themselves)
        or ``(name, function)`` pairs. As in LangGraph, an empty sequence and a name
        already in the graph are refused (``ValueError``).

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     n: int
            >>> def double(s):
            ...     return {"n": s["n"] * 2}
            >>> g = StateGraph(S).add_sequence([double, ("inc", lambda s: {"n": s["n"] + 1})])
            >>> g.add_edge(START, "double").compile().invoke({"n": 3})
            {'n': 7}
        """
        if len(nodes) < 1:
            raise ValueError("Sequence requires at least one node.")
        previous: str | None = None
        for node in nodes:
            if isinstance(node, tuple) and len(node) == 2:
                name, node = node
            else:
                name = getattr(node, "name", None) or getattr(node, "__name__", type(node).__name__)
            if name in self.nodes:
                raise ValueError(
                    f"Node names must be unique: node with the name '{name}' already exists. "
                    "If you need to use two different runnables/callables with the same name "
                    "(for example, using `lambda`), please provide them as tuples "
                    "(name, runnable/callable)."
                )
            self.add_node(name, node)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> Self:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: Callable[..., Any], path_map: dict[Hashable, str] | list[str] | None = None
    ) -> Self:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> Self:
        return self.add_edge(key, END)

    def compile(
        self,
        checkpointer: Any = None,
        *,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        store: Any = None,
        cache: Any = None,
        debug: bool = False,
        name: str | None = None,
        serde_allowlist: SerdeAllowlist | None = None,
    ) -> CompiledStateGraph:
        """Checks the wiring (naming the node or edge at fault) and returns a runnable
        graph.

        ``cache`` (an ``InMemoryCache``, ``SqliteCache`` or other ``BaseCache``) holds
        the results of the nodes added with a ``cache_policy``.

        ``serde_allowlist``: enums, dataclasses and pydantic models (classes, or
        ``(module, qualname)`` pairs of a module the process imports) that loading a
        checkpoint restores besides the types the state schemas name. A stored value of
        any other type loads as its plain data with a ``CheckpointTypeWarning``;
        nothing a checkpoint names is imported."""
        ib = (
            [interrupt_before]
            if isinstance(interrupt_before, str)
            else list(interrupt_before or [])
        )
        ia = [interrupt_after] if isinstance(interrupt_after, str) else list(interrupt_after or [])
        check_saver(checkpointer)
        all_keys = list(self.channels)

        seen: dict[int, dict[str, Any]] = {}

        def reads(schema: Any) -> dict[str, Any]:
            """What a node or router with this input schema sees and receives (worked
            out once per schema: most nodes of a graph share the state's)."""
            if id(schema) not in seen:
                keys = list(self.schemas[schema])
                seen[id(schema)] = {
                    "reads": None if keys == all_keys else keys,
                    "factory": node_factory(schema, keys),
                }
            return seen[id(schema)]

        no_params = {"config": False, "store": False, "writer": False}
        nodes: list[dict[str, Any]] = []
        for name_, fn in self.nodes.items():
            if isinstance(fn, ToolNode) and fn._runner() is not None:
                # Interceptors are Python: the node runs them, each call's tool still
                # run by the Rust node.
                fn = fn._runner().graph_node()  # type: ignore[union-attr]
            node = {"name": name_, "func": fn, "is_async": False, "wants": no_params}
            if isinstance(fn, CompiledStateGraph):
                call, acall = fn._as_node(all_keys)
                node.update(func=call, afunc=acall)
            elif not isinstance(fn, ToolNode):
                default_retry = self.node_defaults.get("retry_policy")
                if (
                    default_retry is not None
                    and name_ not in self.retried
                    and not isinstance(self.nodes[name_], ToolNode)
                ):
                    fn = _retried(name_, fn, default_retry)
                afunc = getattr(fn, "__ironloop_async__", None)
                cache_policy = self.cache_policies.get(
                    name_, self.node_defaults.get("cache_policy")
                )
                if cache is not None and cache_policy is not None:
                    fn = cached_node(name_, fn, cache_policy, cache)
                    afunc = None
                if self.managed:
                    fn, afunc = with_managed(fn, self.managed), None
                wants = _wants(fn)
                if wants.pop("runtime"):
                    fn = _with_runtime(fn)
                node.update(func=fn, is_async=_is_async(fn), wants=wants, afunc=afunc)
            schema = self.node_schemas.get(name_, self.state_schema)
            nodes.append({"afunc": None, **node, **reads(schema)})
        branches = []
        for b in self.branches:
            # A routing function sees the keys of its own schema, else of its node's.
            source_reads = reads(self.node_schemas.get(b.source, self.state_schema))["reads"]
            desc = dict(reads(b.schema or self.node_schemas.get(b.source, self.state_schema)))
            if desc["reads"] is None and source_reads is not None:
                desc["reads"] = all_keys  # not what the node sees: the core's default
            branches.append(
                {
                    "source": b.source,
                    "name": b.name,
                    "path": b.path,
                    "path_map": b.path_map,
                    "ends": b.ends,
                    "is_async": _is_async(b.path),
                }
                | desc
            )
        core = _GraphCore(
            channels=list(self.channels.values()),
            nodes=nodes,
            edges=self.edges,
            joins=self.joins,
            branches=branches,
            # `True` (a subgraph that uses its parent's): no checkpoints of its own.
            checkpointer=None if checkpointer is True else checkpointer,
            interrupt_before=ib,
            interrupt_after=ia,
            store=store,
            input_keys=list(self.schemas[self.input_schema]),
            output_keys=list(self.schemas[self.output_schema]),
            serde_allowlist=allowlist(
                [*self.schemas, *self.node_schemas.values()], serde_allowlist
            ),
        )
        self.compiled = True
        compiled: Any = CompiledStateGraph(self, core, checkpointer, store, name or "LangGraph")
        compiled.cache = cache
        return compiled


def _check_run_options(durability: str | None, version: str) -> None:
    """``durability`` and ``version`` as LangGraph takes them, or a clear refusal."""
    if durability not in (None, "sync", "async", "exit"):
        raise ValueError(f"durability must be 'sync', 'async' or 'exit', got {durability!r}")
    if version not in ("v1", "v2"):
        raise ValueError(f"version must be 'v1' or 'v2', got {version!r}")


#: The keys a run's config keeps at its top level: langchain-core's ``CONFIG_KEYS``, and
#: ``multitask_strategy`` (a run option ironloop reads there, see ``Multitask``).
_CONFIG_KEYS = frozenset(
    {
        "tags",
        "metadata",
        "callbacks",
        "run_name",
        "max_concurrency",
        "recursion_limit",
        "configurable",
        "run_id",
        "multitask_strategy",
    }
)


def _with_durability(config: Any, durability: str | None) -> Any:
    """``config`` as a run reads it: any other top-level key (``{"thread_id": "1"}``)
    moved into ``configurable``, as langchain-core's ``ensure_config`` does, and
    ``durability`` where LangGraph keeps it (the engine reads it there)."""
    if config and any(k not in _CONFIG_KEYS and v is not None for k, v in config.items()):
        moved = {k: v for k, v in config.items() if k not in _CONFIG_KEYS and v is not None}
        config = {k: v for k, v in config.items() if k in _CONFIG_KEYS}
        config["configurable"] = {**(config.get("configurable") or {}), **moved}
    if durability is None:
        return config
    config = dict(config or {})
    config["configurable"] = {
        **(config.get("configurable") or {}),
        "__pregel_durability": durability,
    }
    return config


def _v2_modes(stream_mode: Any) -> list[str]:
    """v2 parts name their mode: the run streams as if modes were a list."""
    return [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)


def _modes(stream_mode: Any) -> Any:
    if isinstance(stream_mode, str):
        return stream_mode
    return list(stream_mode)


#: LangGraph's ``tasks`` and ``checkpoints`` stream modes: the payloads of ``debug``
#: events of these types (the engine streams them as ``debug``).
_DEBUG_VIEWS = {"tasks": ("task", "task_result"), "checkpoints": ("checkpoint",)}


def _debug_views(stream_mode: Any) -> tuple[Any, list[str] | None]:
    """The modes to ask the engine for, and the modes the caller asked for when
    ``tasks`` / ``checkpoints`` are among them (``None`` when they are not)."""
    wanted = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    if not any(m in _DEBUG_VIEWS for m in wanted):
        return _modes(stream_mode), None
    engine = list(dict.fromkeys("debug" if m in _DEBUG_VIEWS else m for m in wanted))
    return engine, wanted


def _reshape(item: Any, wanted: list[str], single: bool, subgraphs: bool) -> list[Any]:
    """One engine item (``(mode, chunk)`` or ``(ns, mode, chunk)``) as the items the
    caller's modes give: a ``debug`` event also feeds ``tasks`` / ``checkpoints``."""
    ns, mode, chunk = item if subgraphs else ((), *item)
    shown: list[tuple[str, Any]] = []
    if mode != "debug":
        shown.append((mode, chunk))
    else:
        if "debug" in wanted:
            shown.append(("debug", chunk))
        for view, kinds in _DEBUG_VIEWS.items():
            if view in wanted and chunk["type"] in kinds:
                shown.append((view, chunk["payload"]))
    out: list[Any] = []
    for m, c in shown:
        if single:
            out.append((ns, c) if subgraphs else c)
        else:
            out.append((ns, m, c) if subgraphs else (m, c))
    return out


def _viewed(it: Iterator[Any], wanted: list[str], single: bool, subgraphs: bool) -> Iterator[Any]:
    for item in it:
        yield from _reshape(item, wanted, single, subgraphs)


def _batch_configs(inputs: Sequence[Any], config: Any) -> list[Any]:
    """One config per input for ``batch``: ``config`` repeated, or a list of them (as
    many as the inputs, as LangChain's ``Runnable.batch`` requires)."""
    if not isinstance(config, list):
        return [config] * len(inputs)
    if len(config) != len(inputs):
        raise ValueError(
            f"batch got {len(config)} configs for {len(inputs)} inputs: pass one config "
            "for all of them, or a list with one per input"
        )
    return config


class CompiledStateGraph(Generic[StateT, ContextT, InputT, OutputT]):
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

    #: ``compile(cache=)``: where the nodes with a ``cache_policy`` keep results.
    cache: Any = None

    #: Metadata every run of this graph carries under its own ``config["metadata"]``
    #: (``create_agent(name=)`` puts ``lc_agent_name`` here, as LangChain's does, so
    #: the ``messages`` stream says which agent a chunk came from).
    run_metadata: dict[str, Any] | None = None

    def _run_config(self, config: Any, durability: str | None) -> Any:
        config = _with_durability(config, durability)
        if self.run_metadata is None:
            return config
        config = dict(config or {})
        config["metadata"] = {**self.run_metadata, **(config.get("metadata") or {})}
        return config

    @property
    def nodes(self) -> dict[str, Any]:
        return dict(self.builder.nodes)

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

    def invoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] = "values",
        durability: str | None = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        """Runs to the end (or to an interrupt) and returns the final state's output
        keys (``None`` when the run wrote none of them); a pause shows as
        ``result["__interrupt__"]``. ``context`` is the run's static context
        (see ``context_schema``), read by nodes as ``runtime.context``. As LangGraph:
        another ``stream_mode`` returns the list of the stream's chunks, and
        ``version="v2"`` a ``GraphOutput(value, interrupts)`` (or v2 chunks)."""
        _check_run_options(durability, version)
        if stream_mode != "values":
            return list(
                self.stream(
                    input,
                    config,
                    stream_mode=stream_mode,
                    context=context,
                    durability=durability,
                    version=version,
                )
            )
        config = self._run_config(config, durability)
        if version == "v2":
            with get_usage_metadata_callback() as usage:
                out = self.invoke(input, config, context=context)
            return as_output(out, usage.usage_metadata)
        token = _enter(context, self.store, self.builder.context_schema, config)
        nested, outer = self._nesting()
        trace = _tracing.start_run(self.name) if _tracing.ON else None
        try:
            out = self._core.invoke(input, config)
            out = _pause_parent(out) if nested else out
        except BaseException as e:
            if trace is not None:
                trace.end(e)
                trace = None
            raise
        finally:
            if trace is not None:
                trace.end()
            if outer is not None:
                _outer_task.reset(outer)
            _scope.reset(token)
        return out

    async def ainvoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] = "values",
        durability: str | None = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        """Like ``invoke``; async nodes and tools run on the running event loop."""
        import asyncio

        _check_run_options(durability, version)
        if stream_mode != "values":
            it = self.astream(
                input,
                config,
                stream_mode=stream_mode,
                context=context,
                durability=durability,
                version=version,
            )
            return [chunk async for chunk in it]
        config = self._run_config(config, durability)
        if version == "v2":
            with get_usage_metadata_callback() as usage:
                out = await self.ainvoke(input, config, context=context)
            return as_output(out, usage.usage_metadata)
        token = _enter(context, self.store, self.builder.context_schema, config)
        nested, outer = self._nesting()
        trace = _tracing.start_run(self.name) if _tracing.ON else None
        try:
            pending = self._core.ainvoke(input, config, asyncio.get_running_loop())
        finally:
            # The engine copied the context when the call was made.
            if trace is not None:
                trace.detach()
            if outer is not None:
                _outer_task.reset(outer)
            _scope.reset(token)
        try:
            out = await pending
            out = _pause_parent(out) if nested else out
        except BaseException as e:
            if trace is not None:
                trace.end(e)
            raise
        if trace is not None:
            trace.end()
        return out

    def _nesting(self) -> tuple[bool, contextvars.Token[Any] | None]:
        """Run inside a node of another graph (as a node, or called by a node's
        function) and without a checkpointer of its own, this graph is nested: a pause
        in it pauses that node's task. When the outer run keeps checkpoints, this one
        keeps its own in the same store under the task's namespace and continues
        where it paused when the task is resumed. Otherwise its ``interrupt()``s
        belong to the task itself, whose resume values answer them (the graph runs
        again from its start). Returns whether the run is nested, and the token to
        reset in the second case."""
        scratch = task_var.get(None)
        if self.checkpointer not in (None, True, False) or scratch is None:
            return False, None
        # `checkpointer=False`: no checkpoints, not even under the outer run's.
        if scratch.nests and self.checkpointer is not False:
            return True, None
        return True, _outer_task.set(_outer_task.get() or scratch)

    def stream(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] = "updates",
        subgraphs: bool = False,
        context: Any = None,
        durability: str | None = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Yields chunks as the run goes: for one mode the chunks, for a list of modes
        ``(mode, chunk)`` pairs. The default mode is ``"updates"`` (as LangGraph's):
        ``{node: update}`` as each node finishes, and ``{"__interrupt__": (Interrupt,
        ...)}`` when the run pauses. With ``subgraphs=True`` the events of subgraphs and
        sub-agents run inside come too, each item prefixed with its namespace (a
        tuple of ``"node:task"``; empty for this graph's own events). With
        ``version="v2"`` every chunk is LangGraph's v2 part: ``{"type": mode, "ns":
        namespace, "data": chunk}``, ``values`` parts with their ``"interrupts"``."""
        _check_run_options(durability, version)
        config = self._run_config(config, durability)
        modes = _v2_modes(stream_mode) if version == "v2" else stream_mode
        engine_modes, wanted = _debug_views(modes)
        token = _enter(context, self.store, self.builder.context_schema, config)
        trace = _tracing.start_run(self.name) if _tracing.ON else None
        try:
            it = self._core.stream(input, config, engine_modes, None, subgraphs)
        except BaseException as e:
            if trace is not None:
                trace.end(e)
                trace = None
            raise
        finally:
            if trace is not None:
                trace.detach()
            _scope.reset(token)
        if trace is not None:
            it = _traced(it, trace)
        if wanted is not None:
            it = _viewed(it, wanted, isinstance(modes, str), subgraphs)
        return parts(it, subgraphs) if version == "v2" else it

    async def astream(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] = "updates",
        subgraphs: bool = False,
        context: Any = None,
        durability: str | None = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        import asyncio

        _check_run_options(durability, version)
        if version == "v2":
            v1 = self.astream(
                input,
                config,
                stream_mode=_v2_modes(stream_mode),
                subgraphs=subgraphs,
                context=context,
                durability=durability,
            )
            async for part in aparts(v1, subgraphs):
                yield part
            return
        config = self._run_config(config, durability)
        engine_modes, wanted = _debug_views(stream_mode)
        token = _enter(context, self.store, self.builder.context_schema, config)
        trace = _tracing.start_run(self.name) if _tracing.ON else None
        try:
            it = self._core.stream(
                input, config, engine_modes, asyncio.get_running_loop(), subgraphs
            )
        except BaseException as e:
            if trace is not None:
                trace.end(e)
                trace = None
            raise
        finally:
            if trace is not None:
                trace.detach()
            _scope.reset(token)
        failed: BaseException | None = None
        try:
            while True:
                try:
                    item = await it.next()
                except StopAsyncIteration:
                    return
                if wanted is None:
                    yield item
                else:
                    for shown in _reshape(item, wanted, isinstance(stream_mode, str), subgraphs):
                        yield shown
        except Exception as e:
            failed = e
            raise
        finally:
            it.cancel()
            if trace is not None:
                trace.end(failed)

    def batch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        configs = _batch_configs(inputs, config)
        return [self.invoke(i, c) for i, c in zip(inputs, configs, strict=True)]

    async def abatch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        configs = _batch_configs(inputs, config)
        import asyncio

        return list(
            await asyncio.gather(
                *(self.ainvoke(i, c) for i, c in zip(inputs, configs, strict=True))
            )
        )

    def get_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's state at its latest (or the config's) checkpoint.

        A task that runs a subgraph (a compiled graph added as a node) shows where the
        subgraph keeps its checkpoints: ``task.state`` is the config naming its
        ``checkpoint_ns``, or, with ``subgraphs=True``, the subgraph's own
        ``StateSnapshot`` (e.g. where it paused on an ``interrupt()``).

        Example:
            >>> snap = app.get_state({"configurable": {"thread_id": "1"}}, subgraphs=True)
            >>> snap.tasks[0].state.next  # the paused subgraph's next nodes
            ('review',)
        """
        return self._state(config, subgraphs, None)

    async def aget_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        return self.get_state(config, subgraphs=subgraphs)

    def _state(self, config: dict[str, Any], subgraphs: bool, saver: Any) -> StateSnapshot:
        """``get_state`` of this graph, whose checkpoints are in ``saver`` when it runs
        as a subgraph (``None``: its own checkpointer)."""
        snap: StateSnapshot = self._core.get_state(config, saver)
        if not snap.tasks:
            return snap
        at = snap.config["configurable"]
        tasks = []
        for t in snap.tasks:
            sub = _subgraph_of(self.builder.nodes.get(t.name))
            if sub is not None:
                ns = _child_ns(at.get("checkpoint_ns", ""), t.name, t.id)
                cfg = {"configurable": {"thread_id": at["thread_id"], "checkpoint_ns": ns}}
                state = sub._state(cfg, True, saver or self.checkpointer) if subgraphs else cfg
                t = t._replace(state=state)
            tasks.append(t)
        return snap._replace(tasks=tuple(tasks))

    def get_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: Any = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """Every checkpoint of the thread, newest first; with ``filter``, those whose
        metadata holds each of its items (LangGraph's rule), ``limit`` counting what is
        yielded."""
        if not filter:
            yield from self._core.get_state_history(config, limit, before)
            return
        kept = 0
        for snap in self._core.get_state_history(config, None, before):
            metadata = snap.metadata or {}
            if all(metadata.get(k) == v for k, v in filter.items()):
                yield snap
                kept += 1
                if limit is not None and kept >= limit:
                    return

    async def aget_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: Any = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """``get_state_history`` for ``async for``."""
        for snap in self.get_state_history(config, filter=filter, before=before, limit=limit):
            yield snap

    def update_state(
        self, config: dict[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """Writes ``values`` as if ``as_node`` had returned them; returns the new
        checkpoint's config."""
        return self._core.update_state(config, values, as_node)  # type: ignore[no-any-return]

    async def aupdate_state(
        self, config: dict[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """``update_state`` for ``await``."""
        return self.update_state(config, values, as_node)

    def as_tool(self, name: str, description: str) -> Any:
        """This graph (an agent) as a tool with one string argument ``input``: the
        sub-agent runs to completion on it and its final answer is the result. Several
        calls in one AI message run concurrently."""
        from ironloop._tool import Tool

        async def run(input: str) -> str:
            out = await self.ainvoke({"messages": [("user", input)]})
            return str(out["messages"][-1].text)

        return Tool(
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

    def get_graph(self, config: Any = None, *, xray: Any = False) -> _DrawableGraph:
        return _DrawableGraph(self.builder)

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
                if not (dataclasses.is_dataclass(state) or hasattr(state, "model_fields")):
                    return state  # a bare value (a root state)
                state = as_update(state, self.name)
            return {k: v for k, v in state.items() if k in own}

        def give(out: Any) -> Any:
            if not isinstance(out, dict):
                return out
            return {k: v for k, v in out.items() if k in outer}

        def call(state: Any) -> Any:
            return give(self.invoke(take(state)))

        async def acall(state: Any) -> Any:
            return give(await self.ainvoke(take(state)))

        return call, acall

    def __repr__(self) -> str:
        return f"CompiledStateGraph(nodes={list(self.builder.nodes)!r})"


def _subgraph_of(node: Any) -> CompiledStateGraph[Any, Any, Any, Any] | None:
    """The graph whose checkpoints a node keeps in its task's namespace: the node itself
    (a subgraph), else one its function calls, found among the names the function
    refers to (its closure's and its module's), as LangGraph finds it for
    ``get_state(subgraphs=True)``. ``None`` for a node without one, or whose graph keeps
    none (``checkpointer=False``) or keeps them in a saver of its own."""
    if node is not None and not isinstance(node, (CompiledStateGraph, ToolNode)):
        try:
            refs = inspect.getclosurevars(inspect.unwrap(node))
        except TypeError:  # not a Python function: a callable object, a builtin
            return None
        found = [
            v
            for v in (*refs.nonlocals.values(), *refs.globals.values())
            if isinstance(v, CompiledStateGraph) and v.checkpointer is not False
        ]
        node = found[0] if found else None  # the first, as LangGraph's
    if isinstance(node, CompiledStateGraph) and node.checkpointer in (None, True):
        return node
    return None


def _traced(it: Iterator[Any], trace: Any) -> Iterator[Any]:
    """A stream whose run span ends when the stream does."""
    failed: BaseException | None = None
    try:
        yield from it
    except Exception as e:
        failed = e
        raise
    finally:
        trace.end(failed)


def _pause_parent(out: Any) -> Any:
    """A nested run's result; paused, it pauses the parent's task instead."""
    interrupts = out.get("__interrupt__") if isinstance(out, dict) else None
    if interrupts:
        raise GraphInterrupt(interrupts[0].value)
    return out


def _node_label(name: str, action: Any, metadata: dict[str, Any] | None) -> str:
    """A node's Mermaid label as langchain-core draws LangGraph's: its metadata (and a
    tool node's tools, ``__tools``) under its name."""
    shown = dict(metadata or {})
    tools = getattr(action, "tools_by_name", None) if isinstance(action, ToolNode) else None
    if tools:
        shown["__tools"] = list(tools)
    lines = []
    for key, value in shown.items():
        scalar = (str, int, float, bool)
        if isinstance(value, scalar):
            text = str(value)
        elif isinstance(value, (list, tuple, set)) and all(isinstance(v, scalar) for v in value):
            items = [str(v) for v in value]
            text = ", ".join(sorted(items) if isinstance(value, set) else items)
        else:
            continue
        lines.append(f"{key} = {text}")
    if not lines:
        return name
    return f"{name}<hr/><small><em>" + "\n".join(lines) + "</em></small>"


class _DrawableGraph:
    def __init__(self, builder: StateGraph[Any, Any, Any, Any]) -> None:
        self.builder = builder

    @property
    def nodes(self) -> list[str]:
        return [START, *self.builder.nodes, END]

    def draw_mermaid(self) -> str:
        """The graph as Mermaid flowchart text (solid edges; dotted for conditional)."""
        b = self.builder
        lines = ["---", "config:", "  flowchart:", "    curve: linear", "---", "graph TD;"]
        lines.append(f"\t{START}([<p>{START}</p>]):::first")
        for n, action in b.nodes.items():
            lines.append(f"\t{n}({_node_label(n, action, b.node_metadata.get(n))})")
        lines.append(f"\t{END}([<p>{END}</p>]):::last")
        # LangGraph's order: the edges sorted by (source, target), then the plain
        # edges into END; a node that leads nowhere gets one (the run ends there).
        edges: set[tuple[str, str, bool, str]] = set()
        for a, c in b.edges:
            edges.add((a, c, False, ""))
        for srcs, c in b.joins:
            edges.update((a, c, False, "") for a in srcs)
        for br in b.branches:
            if br.path_map:
                edges.update(
                    (br.source, t, True, "" if key == t else str(key))
                    for key, t in br.path_map.items()
                )
            elif br.ends:  # a router that declares no targets is not drawn, as there
                edges.update((br.source, t, True, "") for t in br.ends)
        into_end = {e for e in edges if e[1] == END and not e[2]}
        sources = {e[0] for e in edges}
        for t in {e[1] for e in edges} - sources - {END}:
            into_end.add((t, END, False, ""))
        for a, c, conditional, label in [*sorted(edges - into_end), *sorted(into_end)]:
            if not conditional:
                lines.append(f"\t{a} --> {c};")
            elif label:
                lines.append(f"\t{a} -. &nbsp;{label}&nbsp; .-> {c};")
            else:
                lines.append(f"\t{a} -.-> {c};")
        lines.append("\tclassDef default fill:#f2f0ff,line-height:1.2")
        lines.append("\tclassDef first fill-opacity:0")
        lines.append("\tclassDef last fill:#bfb6fc")
        return "\n".join(lines) + "\n"


# Re-exported for `from ironloop.graph import Send, Command`.
_ = (Send, Command, Union)
