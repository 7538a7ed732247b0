"""Agents made per request share one compiled graph per *shape*.

``create_react_agent`` and ``create_agent`` are often called once per request, each
time with the same tools, hooks, middleware, schemas, checkpointer and store, and with
a prompt, model or name of the request's own. Compiling a graph every time (tool
schemas, state channels, the Rust graph) costs far more than the agent is worth, so
the graph is compiled once per shape and kept in :data:`templates`; each call gets a
light :class:`~ironloop.graph.CompiledStateGraph` over it that carries that agent's
:class:`AgentSettings` (model, prompt, name). The shared graph's nodes read them from
:data:`agent_var`, which the agent's :class:`BoundCore` sets around every run it
starts: the Rust engine runs nodes and tools in a copy of the context the run was
started in, so two agents of one shape run side by side, each with its own settings.

What makes a shape is compared by identity (``id``): the same tool functions, the same
checkpointer object... The cache keeps those objects alive while their entry is in it,
so an ``id`` cannot be reused by another object meanwhile, and holds at most
:data:`TEMPLATES_MAX` shapes (the oldest first out).
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ironloop import _tracing
from ironloop._ironloop import _shape_key
from ironloop._usage import _collectors
from ironloop.graph import CompiledStateGraph

#: How many compiled shapes are kept. Agents made per request with per-request
#: objects in their shape (a new checkpointer each time, say) miss the cache and
#: only cycle it; with shared ones every agent after the first is a hit.
TEMPLATES_MAX = 64


class AgentSettings:
    """What one agent has of its own over a shared graph: its model (as called), its
    prompt functions (``create_react_agent``), its system message (``create_agent``)
    and its name (put on its ``AIMessage`` s)."""

    __slots__ = ("_prompt", "_system", "aprompt", "model", "name", "native", "prompt")

    def __init__(
        self, model: Any, name: str | None, prompt: Any = None, system: Any = None
    ) -> None:
        self.model = model
        self.name = name
        #: ``create_react_agent``'s ``prompt`` as given; its sync and async functions
        #: (``prompt`` / ``aprompt``) are made when a node first reads one. An agent
        #: per request whose model step the engine runs never does, and two closures an
        #: agent were a third of the objects it made (W11).
        self._prompt = prompt
        #: A message, or the str it is made from when first read (an agent per request
        #: should not pay for a langchain-core message before its first run: W11).
        self._system = system
        #: The model step as the engine runs it without Python (``create_react_agent``
        #: with an ironloop HTTP model; see ``ironloop._agent._agent_model``).
        self.native: Any = None

    def __getattr__(self, name: str) -> Any:
        # Called only while a slot is unset: ``prompt`` and ``aprompt`` are filled
        # together at the first read, and then read as plain slots.
        if name not in ("prompt", "aprompt"):
            raise AttributeError(name)
        from ironloop._agent_prompt import _prompt_functions

        self.prompt, self.aprompt = _prompt_functions(self._prompt)
        return getattr(self, name)

    @property
    def system(self) -> Any:
        """The system message (``create_agent``'s ``system_prompt``), made once."""
        system = self._system
        if isinstance(system, str):
            from ironloop.messages import SystemMessage

            system = self._system = SystemMessage(content=system)
        return system


#: The settings of the agent whose run this is (set by :class:`BoundCore`).
agent_var: contextvars.ContextVar[AgentSettings] = contextvars.ContextVar("ironloop_agent")


class BoundCore:
    """A compiled graph's Rust core with one agent's settings: every run it starts
    (``invoke``, ``ainvoke``, ``stream``, and so ``astream``, ``batch``, a resume, the
    agent as a subgraph) starts with :data:`agent_var` set to them. State reads and
    writes (``get_state``, ``update_state``...) run no node and go straight through."""

    __slots__ = ("_core", "settings")

    def __init__(self, core: Any, settings: AgentSettings) -> None:
        self._core = core
        self.settings = settings

    def _agent(self) -> Any:
        """The agent's model step for the engine to run without Python, or ``None``
        (its node function calls the model): not while the run's model calls are
        observed from Python (token usage totalled, OpenTelemetry spans), nor while the
        model has extra request fields (``model_kwargs``, a dict that may change)."""
        native = self.settings.native
        if native is None:
            return None
        if _collectors.get() or self.settings.model.model_kwargs:
            return None
        if _tracing.ON and _tracing.tracer() is not None:
            return None
        return native

    def _started(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The core's ``method`` called with :data:`agent_var` set to the settings. The
        engine copies the caller's context when the call is made (not when a returned
        future is awaited or a stream read), so the settings need only be set around it."""
        token = agent_var.set(self.settings)
        try:
            return getattr(self._core, method)(*args, **kwargs, agent=self._agent())
        finally:
            agent_var.reset(token)

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        return self._started("invoke", args, kwargs)

    def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        return self._started("ainvoke", args, kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._started("stream", args, kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)


class Templates:
    """Compiled graphs by shape key, oldest first out (thread-safe)."""

    def __init__(self, size: int = TEMPLATES_MAX) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...] | None) -> Any:
        """The template compiled for ``key`` (``None``: not cached). A lookup takes no
        lock (one dict read is atomic) and does not reorder: this is every agent's
        path, and a shape pushed out by newer ones is simply compiled again."""
        if key is None:
            return None
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def put(self, key: tuple[Any, ...] | None, template: Any, pinned: Sequence[Any]) -> None:
        """Keeps ``template`` for ``key`` with the objects whose ids are in the key."""
        if key is None:
            return
        with self._lock:
            self._entries[key] = (template, tuple(pinned))
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


#: The one cache of agent graphs (``create_react_agent`` and ``create_agent`` keys
#: start with their own tag, so they never meet).
templates = Templates()


#: The cache key of a shape: ``shape_key(tag, flags, objects)`` is ``(tag, flags,
#: ids of objects)`` with ``flags`` hashable values, or ``None`` (build a graph of its
#: own) when one of ``objects`` (a list) is a ``dict`` or ``list``, whose contents could
#: change under an equal id. In Rust: an agent per request makes one every time.
shape_key = _shape_key


def names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``interrupt_before`` / ``interrupt_after`` as a hashable tuple."""
    if not value:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


_UNSET = object()


def bind(
    template: Any, settings: AgentSettings, name: str | None, defaults: dict[str, Any] | None = None
) -> Any:
    """An agent: ``template``'s graph run with ``settings``, each run's config starting
    from ``defaults``. A named agent's runs carry ``lc_agent_name`` in their metadata,
    as LangChain's ``create_agent(name=)``."""
    # A template is never changed once made, so what an agent copies of it is read
    # once: what ``CompiledStateGraph.__init__`` would set from it and the settings it
    # carries (an agent per request, W11, made them again each time).
    own = template.__dict__
    kept = own.get("_bound_attrs")
    if kept is None:
        kept = own["_bound_attrs"] = {
            "builder": template.builder,
            "checkpointer": template.checkpointer,
            "store": template.store,
        }
        # A setting the class holds already (``debug = False``...) is read from it:
        # the fewer keys an agent's ``__dict__`` has, the less making and collecting
        # it costs.
        for key, value in settings_of(template).items():
            if getattr(CompiledStateGraph, key, _UNSET) is not value:
                kept[key] = value
    agent: CompiledStateGraph[Any, Any, Any, Any] = CompiledStateGraph.__new__(CompiledStateGraph)
    attrs = agent.__dict__
    attrs.update(kept)
    attrs["_core"] = BoundCore(template._core, settings)
    attrs["name"] = name or "agent"
    run = dict(defaults) if defaults else {}
    if name:
        run["metadata"] = {**run.get("metadata", {}), "lc_agent_name": name}
    attrs["run_defaults"] = run or None
    return agent


#: What a compiled graph carries besides its engine graph: ``compile``'s arguments
#: (kept so that compiling the builder again gives the same graph) and what a user
#: sets on it afterwards (``graph.step_timeout = 5``), as LangGraph's ``Pregel``
#: attributes that its ``copy`` keeps.
_SETTINGS = (
    "interrupt_before_nodes",
    "interrupt_after_nodes",
    "cache",
    "debug",
    "stream_transformers",
    "serde_allowlist",
    "step_timeout",
    "run_defaults",
    "callback_run_name",
    "callback_run_output",
)


def settings_of(graph: Any) -> dict[str, Any]:
    """The :data:`_SETTINGS` ``graph`` was given (by ``compile`` or by its user)."""
    own = vars(graph)
    return {key: own[key] for key in _SETTINGS if key in own}


def recompiled(graph: Any, checkpointer: Any, store: Any, name: str) -> Any:
    """``graph``'s builder compiled again onto ``checkpointer`` and ``store``, as a
    server does with the graphs it serves (LangGraph's server copies the graph with
    them): with what ``graph`` was compiled with (its breakpoints, cache, allowlist,
    transformers) and what was set on it since (``step_timeout``), and an agent still
    run as ``graph`` runs: with its settings (its model, and so its model step without
    Python when the engine can take it) and its run defaults. A bare
    ``builder.compile`` would drop the breakpoints and run the agent's node in Python
    with the settings of the first agent of its shape."""
    compiled = graph.builder.compile(
        checkpointer=checkpointer,
        store=store,
        name=name,
        interrupt_before=list(graph.interrupt_before_nodes),
        interrupt_after=list(graph.interrupt_after_nodes),
        cache=graph.cache,
        serde_allowlist=graph.serde_allowlist,
        transformers=graph.stream_transformers,
    )
    core = graph._core
    if isinstance(core, BoundCore):
        compiled = CompiledStateGraph(
            compiled.builder, BoundCore(compiled._core, core.settings), checkpointer, store, name
        )
    compiled.__dict__.update(settings_of(graph))
    return compiled
