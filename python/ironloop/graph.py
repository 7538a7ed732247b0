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

import warnings
from collections.abc import Callable, Hashable, Sequence
from datetime import timedelta
from typing import (
    Annotated,
    Any,
    ClassVar,
    Generic,
    TypedDict,
    Union,
)

from typing_extensions import Self

from ironloop import messages as _messages
from ironloop._allowlist import SerdeAllowlist, allowlist
from ironloop._cache import cached_node
from ironloop._compiled import CompiledStateGraph, ContextT, InputT, OutputT, StateT
from ironloop._constants import END, START
from ironloop._error_handler import HANDLER_PREFIX, handler_node, node_guards
from ironloop._ironloop import (
    _GraphCore,
    add_messages,
)
from ironloop._managed import with_managed
from ironloop._node_calls import get_stream_writer, interrupt, push_message
from ironloop._node_prep import (
    _Branch,
    _check_config_annotation,
    _deprecated_kwargs,
    _is_async,
    _literal_ends,
    _node_ends,
    _retried,
    _retry_policies,
    _wants,
)
from ironloop._node_spec import StateNodeSpec, node_runnable, spec_ends
from ironloop._saver_api import remember_graph
from ironloop._state import (
    input_schema_of,
    managed_keys,
    merge_channels,
    node_factory,
    schema_channels,
)
from ironloop._timeout import refuse_sync, timed_task
from ironloop._toolnode import ToolNode
from ironloop.checkpoint import check_saver
from ironloop.errors import GraphInterrupt
from ironloop.runtime import _with_runtime
from ironloop.types import (
    CachePolicy,
    Command,
    RetryPolicy,
    Send,
    StateSnapshot,
    TimeoutPolicy,
)
from ironloop.warnings import LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10

__all__ = [
    "END",
    "START",
    "CompiledStateGraph",
    "MessageGraph",
    "MessagesState",
    "StateGraph",
    "add_messages",
    "get_stream_writer",
    "interrupt",
    "push_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"


class MessagesState(TypedDict):
    """A state with one ``messages`` channel merged by ``add_messages``."""

    messages: Annotated[list[_messages.BaseMessage], add_messages]


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

    #: A run's input is applied with its input checkpoint, whose tasks are what
    #: ``START`` leads to: no ``START`` step (set by ``@entrypoint``'s graph, which
    #: LangGraph runs so).
    _direct_input: ClassVar[bool] = False

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
        #: Where a node that returns ``Command(goto=)`` may go, by target (its label
        #: or ``None``): ``add_node(destinations=)`` or a ``Command[Literal[...]]``
        #: return annotation. Only ``get_graph()`` draws them, as LangGraph's.
        self.node_ends: dict[str, dict[str, str | None]] = {}
        #: ``add_node(..., cache_policy=)``: applied when ``compile`` is given a cache.
        self.cache_policies: dict[str, Any] = {}
        #: ``add_node(..., error_handler=)``: each node's handler node (by name).
        self.error_handlers: dict[str, str] = {}
        #: ``add_node(..., timeout=)``, coerced.
        self.timeouts: dict[str, TimeoutPolicy] = {}
        #: The nodes added with a ``retry_policy`` of their own (which wins over
        #: ``set_node_defaults``'s).
        self.retried: set[str] = set()
        #: The own ``retry_policy`` of the subgraph and ``ToolNode`` nodes: they are
        #: kept as given, and retried at ``compile`` around the callables they run as.
        self.graph_retries: dict[str, list[RetryPolicy]] = {}
        #: The nodes added with ``defer=True``.
        self.deferred: set[str] = set()
        #: ``set_node_defaults``: ``retry_policy`` and ``cache_policy`` for the nodes
        #: without their own, applied at ``compile``.
        self.node_defaults: dict[str, Any] = {}
        #: Each node as ``add_node`` declared it, in LangGraph's shape (``.runnable``
        #: holds the object given, see ``_node_spec``).
        self.nodes: dict[str, StateNodeSpec] = {}
        #: What the engine runs for each node: its function wrapped with its retries
        #: and timeouts, a ``ToolNode`` or a compiled subgraph.
        self.actions: dict[str, Any] = {}
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
        error_handler: Callable[..., Any] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        **kwargs: Any,
    ) -> Self:
        """Adds a node: ``add_node("name", fn)`` or ``add_node(fn)`` (named after it).
        ``fn`` may be sync or async, a ``ToolNode``, a compiled graph (a subgraph), or a
        LangChain ``Runnable`` (a tool, a chain: its ``invoke`` runs on the state).

        The node sees the keys of ``input_schema``, else of the class its first
        parameter is annotated with, else of the state schema. ``retry_policy`` (a
        ``RetryPolicy`` or a sequence of them) runs a failing node again, of any kind
        (a subgraph from its start, a ``ToolNode`` all its calls), as LangGraph's.
        ``metadata`` is shown in ``get_graph().draw_mermaid()``; ``destinations`` (the
        nodes a ``Command(goto=)`` from it may reach: names, or names to labels) is
        drawn by ``get_graph()``, as LangGraph's; ``cache_policy`` (a
        ``CachePolicy``) answers the node from the ``cache`` given to ``compile`` when
        its input was seen before; ``defer=True`` holds the node back, when it is
        triggered while other tasks are due, until the run has nothing else to do
        (a summary after fan-outs of different lengths), as LangGraph's. ``error_handler`` (a
        function taking the state and, annotated ``NodeError``, the failure) runs in
        the node's place when it fails after its retries; ``timeout`` (seconds, a
        ``timedelta`` or a ``TimeoutPolicy``) bounds an async node's run: each
        attempt of it, with a ``retry_policy`` (retrying ``NodeTimeoutError`` when the
        policy's ``retry_on`` says so)."""
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
        if cache_policy is not None and not isinstance(cache_policy, CachePolicy):
            raise TypeError(
                f"node {node!r}: cache_policy takes a CachePolicy, got {cache_policy!r}"
            )
        if action is None:
            action = node
            name = getattr(node, "name", None) or getattr(node, "__name__", None)
            if name is None and callable(node):
                name = type(node).__name__  # a callable object: its class's, as LangGraph
            if not isinstance(name, str):
                raise TypeError(f"cannot name node {node!r}: use add_node('name', fn)")
        else:
            name = node
        given = action
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
        policy = declared_timeout = TimeoutPolicy.coerce(timeout)
        if retry_policy is not None:
            if graph_like:
                self.graph_retries[name] = _retry_policies(f"node {name!r}", retry_policy)
            else:
                if policy is not None:
                    # Each attempt gets the whole timeout and a timed-out attempt is
                    # retried (`retry_on=NodeTimeoutError`), as LangGraph: the attempts
                    # are timed inside the retry loop, as an `@task`'s are.
                    refuse_sync(action, f"node {name!r}")
                    action, policy = timed_task(action, policy, name), None
                action = _retried(name, action, retry_policy)
            self.retried.add(name)
        if schema is not None:
            self._add_schema(schema)
            self.node_schemas[name] = schema
        self.actions[name] = action
        ends = _node_ends(destinations, action)
        handler = f"{HANDLER_PREFIX}{name}" if error_handler is not None else None
        self.nodes[name] = StateNodeSpec(
            node_runnable(given, name),
            metadata,
            schema or self.state_schema,
            retry_policy,
            cache_policy,
            error_handler_node=handler,
            ends=spec_ends(ends),
            defer=defer,
            timeout=declared_timeout,
        )
        if defer:
            self.deferred.add(name)
        if policy is not None:
            self.timeouts[name] = policy
        if handler is not None and error_handler is not None:
            self.error_handlers[name] = handler
            self.actions[handler] = handler_node(error_handler)
            self.nodes[handler] = StateNodeSpec(
                node_runnable(error_handler, handler),
                None,
                self.state_schema,
                None,
                None,
                is_error_handler=True,
            )
        if cache_policy is not None:
            self.cache_policies[name] = cache_policy
        if metadata:
            self.node_metadata[name] = dict(metadata)
        if ends:
            self.node_ends[name] = ends
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: Any = None,
        cache_policy: Any = None,
        error_handler: Callable[..., Any] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> Self:
        """Policies for every node of this graph that has none of its own
        from ``add_node``, applied at ``compile`` (so nodes added later get them too),
        as LangGraph's: ``retry_policy`` (a ``RetryPolicy`` or a sequence of them) and
        ``cache_policy`` (a ``CachePolicy``, used when ``compile`` is given a cache).
        ``error_handler`` handles the failure of every node without its own (not of
        the handlers), ``timeout`` bounds every node without its own, handlers
        included. Subgraphs do not inherit them."""
        if error_handler is not None:
            self.node_defaults["error_handler"] = error_handler
        if timeout is not None:
            self.node_defaults["timeout"] = TimeoutPolicy.coerce(timeout)
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
        transformers: Sequence[Any] | None = None,
    ) -> CompiledStateGraph:
        """Checks the wiring (naming the node or edge at fault) and returns a runnable
        graph.

        ``cache`` (an ``InMemoryCache``, ``SqliteCache`` or other ``BaseCache``) holds
        the results of the nodes added with a ``cache_policy``.

        ``serde_allowlist``: enums, dataclasses and pydantic models (classes, or
        ``(module, qualname)`` pairs of a module the process imports) that loading a
        checkpoint restores besides the types the state schemas name. A stored value of
        any other type loads as its plain data with a ``CheckpointTypeWarning``;
        nothing a checkpoint names is imported.

        ``debug=True``: every run prints its ``updates`` and ``values`` chunks as they
        come, as LangGraph's (a run's own ``debug=`` or ``print_mode=`` wins)."""
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
        all_nodes, guards = node_guards(
            self.actions, self.error_handlers, self.timeouts, self.node_defaults
        )
        default_retry = self.node_defaults.get("retry_policy")
        for name_, fn in all_nodes.items():
            # A function node's own policy wraps it already (`add_node`).
            retry = self.graph_retries.get(name_, None if name_ in self.retried else default_retry)
            if isinstance(fn, ToolNode) and (retry is not None or fn._runner() is not None):
                # Interceptors and retries are Python: the node runs them, each call's
                # tool still run by the Rust node.
                fn = fn._runner(calls_given=True).graph_node()  # type: ignore[union-attr]
            node = {"name": name_, "func": fn, "is_async": False, "wants": no_params}
            if isinstance(fn, CompiledStateGraph):
                call, acall = fn._as_node(all_keys)
                if retry is not None:
                    call, acall = _retried(name_, call, retry), _retried(name_, acall, retry)
                # The parent's config goes on to the subgraph's run (see `_as_node`).
                node.update(func=call, afunc=acall, wants={**no_params, "config": True})
            elif not isinstance(fn, ToolNode):
                if retry is not None:
                    fn = _retried(name_, fn, retry)
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
            nodes.append(
                {
                    "afunc": None,
                    **node,
                    **reads(schema),
                    **guards[name_],
                    "defer": name_ in self.deferred,
                }
            )
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
            # `True`: a subgraph that keeps one history per node in its parent's saver.
            checkpointer=checkpointer,
            interrupt_before=ib,
            interrupt_after=ia,
            store=store,
            input_keys=list(self.schemas[self.input_schema]),
            output_keys=list(self.schemas[self.output_schema]),
            serde_allowlist=allowlist(
                [*self.schemas, *self.node_schemas.values()], serde_allowlist
            ),
            direct_input=self._direct_input,
        )
        self.compiled = True
        compiled: Any = CompiledStateGraph(self, core, checkpointer, store, name or "LangGraph")
        compiled.cache = cache
        remember_graph(checkpointer, compiled)  # the savers' LangGraph API reads through it
        compiled.interrupt_before_nodes, compiled.interrupt_after_nodes = ib, ia
        compiled.debug = debug
        compiled.stream_transformers = tuple(transformers or ())
        compiled.serde_allowlist = serde_allowlist
        return compiled


class MessageGraph(StateGraph[Any, Any, Any, Any]):
    """LangGraph's deprecated graph whose whole state is one list of messages merged by
    ``add_messages``: nodes receive the list and return messages to add. Use a
    ``StateGraph`` with a ``messages`` key (``MessagesState``) instead."""

    def __init__(self) -> None:
        warnings.warn(
            "MessageGraph is deprecated in LangGraph v1.0.0, to be removed in v2.0.0. "
            "Please use StateGraph with a `messages` key instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        super().__init__(Annotated[list[_messages.BaseMessage], add_messages])


# Re-exported for `from ironloop.graph import Send, Command` (and the other types this
# module offered before its split).
_ = (Send, Command, Union, RetryPolicy, StateSnapshot, GraphInterrupt)
