"""``create_agent``: LangChain 1.x's agent factory, with middleware, on ironloop's graph
engine. The loop (model node, tools node, routing) is the one ``create_react_agent``
uses (``ironloop._agent``); middleware adds nodes around it and wraps its calls."""

from __future__ import annotations

import contextvars
import typing
import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Optional, TypedDict

from ironloop._agent import (
    acall_model,
    after_model_router,
    all_returned_direct,
    call_model,
    named,
    pending_calls,
    route_after_model,
)
from ironloop._constants import END, START
from ironloop._foreign import is_langchain_runnable
from ironloop._invalid_calls import _patch_invalid, _rewritten
from ironloop._ironloop import _task_runtime
from ironloop._meta_fields import agent_tools
from ironloop._schema import _special
from ironloop._schema_types import _resolved_hints
from ironloop._shapes import AgentSettings, agent_var, bind, names, shape_key, templates
from ironloop._structured_output import Plan
from ironloop._tool_wrap import CallRunner
from ironloop._toolnode import ToolNode, _as_tool
from ironloop._trace_policy import middleware_policy, traced_as
from ironloop.errors import (
    ToolBlockedError,
    ToolInvalidArgsError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from ironloop.graph import CompiledStateGraph, StateGraph
from ironloop.messages import SystemMessage
from ironloop.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelOutcome,
    ModelRequest,
    ModelResponse,
    OmitFromInput,
    OmitFromOutput,
    PrivateStateAttr,
    chain_model_async,
    chain_model_sync,
    defined_hooks,
    jumps_of,
    node_hook,
)
from ironloop.models import init_model
from ironloop.runtime import get_runtime
from ironloop.stream._tool_calls import agent_transformers
from ironloop.types import Command, Send

__all__ = ["create_agent"]

#: The tool failures a tools step reports to the model itself, never to a
#: ``wrap_tool_call`` hook as an exception (LangChain's ``ToolInvocationError`` cases).
#: The config LangChain's ``create_agent`` binds to its graph (``.with_config``): an
#: agent's loop is bounded by its middleware, not by 25 steps.
_LANGCHAIN_RUN_DEFAULTS: dict[str, Any] = {
    "recursion_limit": 9_999,
    "metadata": {"ls_integration": "langchain_create_agent"},
}
_REPORTED = (ToolInvalidArgsError, ToolNotFoundError, ToolBlockedError, ToolTimeoutError)


#: The error of a model call offering tools the agent cannot run (LangChain's
#: ``DYNAMIC_TOOL_ERROR_TEMPLATE``): a ``wrap_model_call`` hook added them, and no
#: ``wrap_tool_call`` hook is there to run them, so a call of one could not be answered.
_UNKNOWN_TOOLS = """\
Middleware added tools that the agent doesn't know how to execute.

Unknown tools: {unknown}
Registered tools: {known}

This happens when middleware modifies `request.tools` in `wrap_model_call` to include
tools that weren't passed to `create_agent()`.

How to fix this:

Option 1: Register tools at agent creation (recommended for most cases)
    Pass the tools to `create_agent(tools=[...])` or set them on `middleware.tools`.

Option 2: Handle dynamic tools in middleware (for tools created at runtime)
    Implement `wrap_tool_call` to run the tools added dynamically, e.g. with
    `handler(request.override(tool=my_dynamic_tool))`."""


def _check_middleware(middleware: Sequence[Any]) -> list[AgentMiddleware]:
    out: list[AgentMiddleware] = []
    for m in middleware:
        if not isinstance(m, AgentMiddleware):
            raise TypeError(
                f"middleware must be AgentMiddleware instances (or made by the hook "
                f"decorators); got {type(m).__name__}"
            )
        out.append(m)
    names = [m.name for m in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise AssertionError(
            f"Please remove duplicate middleware instances: {', '.join(dupes)} (a "
            "middleware's name names its nodes; give one a different `name`)"
        )
    return out


def _not_a_state_schema(schema: Any, cause: Exception) -> Exception:
    return TypeError(
        f"a state_schema must be a TypedDict (like AgentState); got {schema!r}: {cause}"
    )


def _markers(tp: Any) -> tuple[Any, set[Any]]:
    """A field's type without ``Required`` / ``NotRequired``, and its
    ``Annotated`` markers."""
    while typing.get_origin(tp) in (*_special("Required"), *_special("NotRequired")):
        tp = typing.get_args(tp)[0]
    marks: set[Any] = set()
    if typing.get_origin(tp) is Annotated:
        marks = {id(m) for m in tp.__metadata__}
    return tp, marks


def _schemas(
    state_schema: Any, middleware: Sequence[AgentMiddleware], jumps: bool
) -> tuple[Any, Any, Any]:
    """The agent's state, input and output schemas: the fields of ``state_schema`` and
    of every middleware's, without the private ones in input / output."""
    fields: dict[str, Any] = {}
    private_in: set[str] = set()
    private_out: set[str] = set()
    for schema in [state_schema or AgentState, *(m.state_schema for m in middleware)]:
        if schema is None:
            continue
        hints = _resolved_hints(schema, _not_a_state_schema)
        for key, tp in hints.items():
            tp, marks = _markers(tp)
            fields[key] = tp
            if id(PrivateStateAttr) in marks or id(OmitFromInput) in marks:
                private_in.add(key)
            if id(PrivateStateAttr) in marks or id(OmitFromOutput) in marks:
                private_out.add(key)
    if "messages" not in fields:
        raise ValueError("Missing required key 'messages' in state_schema")
    if jumps:
        # typing.Optional, as LangChain's own schema writes the field (a value, not
        # an annotation).
        fields["jump_to"] = Optional[str]  # noqa: UP045
        private_in.add("jump_to")
        private_out.add("jump_to")
    make: Any = TypedDict  # a TypedDict made at run time, from the fields gathered
    state = make("AgentState", fields, total=False)
    if not (private_in or private_out):
        return state, None, None
    inp = make("AgentInput", {k: v for k, v in fields.items() if k not in private_in}, total=False)
    out = make(
        "AgentOutput", {k: v for k, v in fields.items() if k not in private_out}, total=False
    )
    return state, inp, out


def _appended(request: ModelRequest, state: Any) -> list[Any]:
    """Messages a ``wrap_model_call`` hook appended to ``request.messages`` in place:
    under LangChain they reach the state (the request holds the state's own list), so
    they are written before the model's answer here too."""
    messages, had = request.messages, state["messages"]
    if len(messages) <= len(had) or any(a is not b for a, b in zip(messages, had, strict=False)):
        return []
    return list(messages[len(had) :])


def _given(t: Any) -> Any:
    """The tool object a user gave for ``t`` (a LangChain tool for its adapter)."""
    return getattr(t, "lc_tool", None) or t


class _Builder:
    """What ``create_agent`` puts together; one instance per shape (see
    ``ironloop._shapes``): the model, system message and name are those of the agent
    running it (``agent_var``), ``first``'s when its builder is compiled again by hand."""

    def __init__(
        self,
        first: AgentSettings,
        tools: Any,
        middleware: list[AgentMiddleware],
        response_format: Any,
    ) -> None:
        self.first = first
        self.middleware = middleware
        # LangChain's strategies: a bare schema becomes an AutoStrategy, resolved per
        # model call; ToolStrategy's output tools are declared here, once.
        self.plan = Plan(response_format)
        self.response_format = self.plan.initial
        extra = [t for m in middleware for t in m.tools]
        if isinstance(tools, ToolNode):
            if extra:
                raise ValueError(
                    "middleware with tools needs create_agent(tools=[...]), not a ToolNode"
                )
            self.tool_node = tools
            self.builtin: list[dict[str, Any]] = []
        else:
            listed = [*(tools or ()), *extra]
            self.builtin = [t for t in listed if isinstance(t, dict)]
            self.tool_node = ToolNode([t for t in listed if not isinstance(t, dict)])
        from ironloop.middleware.permissions import ToolPermissions

        for m in middleware:
            if isinstance(m, ToolPermissions):
                m.apply(self.tool_node)
        self.core = self.tool_node._core
        self.tools = list(self.tool_node._tools.values())
        #: What hooks see in ``request.tools`` / ``request.tool``: the tool objects as the
        #: user gave them (a LangChain ``BaseTool`` itself, not ironloop's adapter).
        self.given = {t.name: _given(t) for t in self.tools}
        #: One-tool Rust nodes for the tools a ``wrap_tool_call`` hook put in a request
        #: that the agent was not given (LangChain's dynamic tools), by the tool's id.
        self.dynamic: dict[int, Any] = {}
        self.direct = {t.name for t in self.tools if t.return_direct}
        self.dicts: dict[int, dict[str, Any]] = {}
        hooks = {id(m): defined_hooks(m) for m in middleware}
        self.model_wraps = [
            (m, "wrap_model_call") for m in middleware if "wrap_model_call" in hooks[id(m)]
        ]
        self.tool_wraps = [
            (m, "wrap_tool_call") for m in middleware if "wrap_tool_call" in hooks[id(m)]
        ]
        self.hooks = hooks
        self.lc_models: dict[tuple[int, tuple[str, ...]], Any] = {}
        # What the model is offered, for the deny / allow lists it was computed under.
        self.offered_for: Any = None
        self.offered_tools: list[Any] = []
        self.offered_dicts: list[dict[str, Any]] | None = None

    @property
    def model(self) -> Any:
        return agent_var.get(self.first).model

    @property
    def name(self) -> str | None:
        return agent_var.get(self.first).name

    @property
    def system(self) -> SystemMessage | None:
        return agent_var.get(self.first).system  # type: ignore[no-any-return]

    # --- the model call ---------------------------------------------------------------

    def offered(self) -> list[Any]:
        """The tools offered to the model: the runnable ones (the Rust node's deny /
        allow lists as they stand now) and provider tool dicts."""
        lists = self.core.permissions()
        if lists != self.offered_for:
            self.offered_tools = [
                *(self.given[t.name] for t in self.tool_node.allowed_tools()),
                *self.builtin,
            ]
            self.offered_dicts = self.tool_dicts(self.offered_tools)
            self.offered_for = lists
        return self.offered_tools

    def request(self, state: Any, messages: list[Any] | None = None) -> ModelRequest:
        return ModelRequest(
            model=self.model,
            messages=list(state["messages"] if messages is None else messages),
            system_message=self.system,
            tools=self.offered(),
            response_format=self.response_format,
            state=state,
            runtime=get_runtime(),
        )

    def tool_dicts(self, tools: Sequence[Any]) -> list[dict[str, Any]] | None:
        out = []
        for t in tools:
            if isinstance(t, dict):
                out.append(t)
                continue
            d = self.dicts.get(id(t))
            if d is None:
                d = self.dicts[id(t)] = _as_tool(t).to_openai()
            out.append(d)
        return out or None

    def prepared(self, request: ModelRequest) -> tuple[Any, list[Any], Any, dict[str, Any], Any]:
        """The call's model, messages, tools, keywords and structured output strategy."""
        if not self.tool_wraps:
            unknown = [
                t.name
                for t in request.tools
                if not isinstance(t, dict) and getattr(t, "name", None) not in self.given
            ]
            if unknown:
                raise ValueError(_UNKNOWN_TOOLS.format(unknown=unknown, known=sorted(self.given)))
        model = init_model(request.model)
        messages = list(request.messages)
        if request.system_message is not None:
            messages.insert(0, request.system_message)
        kwargs = dict(request.model_settings)
        if request.tool_choice is not None:
            kwargs["tool_choice"] = request.tool_choice
        strategy = self.plan.effective(request.response_format, model)
        langchain = is_langchain_runnable(model)
        output_tools = self.plan.call_kwargs(strategy, model, kwargs, langchain=langchain)
        if langchain:
            bound = self.langchain_model(model, [*request.tools, *output_tools])
            return bound, messages, None, kwargs, strategy
        tools = self.tool_dicts(request.tools)
        if output_tools:
            tools = [*(tools or ()), *output_tools]
        return model, messages, tools, kwargs, strategy

    def langchain_model(self, model: Any, tools: Sequence[Any]) -> Any:
        from ironloop import _langchain

        objs = [t for t in tools if not isinstance(t, dict)]
        key = (id(model), tuple(t.name for t in objs) + tuple(map(str, map(id, tools))))
        bound = self.lc_models.get(key)
        if bound is None:
            dicts = [t for t in tools if isinstance(t, dict)]
            bound = self.lc_models[key] = _langchain.agent_model(model, objs, dicts)
        return bound

    def base_model(self, request: ModelRequest) -> ModelResponse:
        model, messages, tools, kwargs, strategy = self.prepared(request)
        msg = named(call_model(model, messages, tools, **kwargs), self.name)
        result, structured = self.plan.answer(msg, strategy)
        return ModelResponse(result=result, structured_response=structured)

    async def abase_model(self, request: ModelRequest) -> ModelResponse:
        model, messages, tools, kwargs, strategy = self.prepared(request)
        msg = named(await acall_model(model, messages, tools, **kwargs), self.name)
        result, structured = self.plan.answer(msg, strategy)
        return ModelResponse(result=result, structured_response=structured)

    def model_update(self, outcome: ModelOutcome, appended: Sequence[Any] = ()) -> Any:
        """The model node's update: the response's messages (and structured
        response), then each ``ExtendedModelResponse`` command's update, through the
        reducers in that order (a list of ``Command``s, as LangChain's node returns)."""
        response, commands = outcome
        update: dict[str, Any] = {"messages": [*appended, *response.result]}
        if response.structured_response is not None:
            update["structured_response"] = response.structured_response
        elif self.response_format is not None:
            # As LangChain: a call without one clears the last turn's, so that the
            # loop's exit test (a fresh structured response) is not fooled by it.
            update["structured_response"] = None
        if not commands:
            return update
        for c in commands:
            for what in ("goto", "resume", "graph"):
                if getattr(c, what, None):
                    raise NotImplementedError(
                        f"Command {what} is not yet supported in wrap_model_call middleware "
                        "(an ExtendedModelResponse's command may only update the state); "
                        "use jump_to from a before_model / after_model hook instead"
                    )
        return [Command(update=update), *commands]

    def structured_done(self, state: Any) -> bool:
        """Whether this turn's model call produced the structured response (then the
        loop ends once no ordinary tool call is pending)."""
        return self.response_format is not None and state.get("structured_response") is not None

    def model_node(self) -> Callable[[Any], Any]:
        plain = self.response_format is None and not self.model_wraps
        if plain and not is_langchain_runnable(self.model):
            return self.plain_model_node()
        handler = chain_model_sync(self.model_wraps, self.base_model)
        ahandler = chain_model_async(self.model_wraps, self.abase_model)

        def model(state: Any) -> dict[str, Any]:
            patched = _patch_invalid(state["messages"])
            request = self.request(state, patched)
            outcome = handler(request)  # a hook may append to request.messages in place
            seen = state if patched is None else {"messages": patched}
            return self.model_update(outcome, [*_rewritten(patched), *_appended(request, seen)])

        async def amodel(state: Any) -> dict[str, Any]:
            patched = _patch_invalid(state["messages"])
            request = self.request(state, patched)
            outcome = await ahandler(request)
            seen = state if patched is None else {"messages": patched}
            return self.model_update(outcome, [*_rewritten(patched), *_appended(request, seen)])

        model.__ironloop_async__ = amodel  # type: ignore[attr-defined]
        return model

    def plain_model_node(self) -> Callable[[Any], Any]:
        """The model node when no middleware wraps the model call: nobody sees a
        ``ModelRequest``, so none is made (the same call as ``base_model``)."""
        first = self.first

        def given(state: Any) -> tuple[Any, Any, list[Any]]:
            """The run's agent settings, the patched history (None: unchanged) and
            the messages the model is given (the system prompt first)."""
            self.offered()
            s = agent_var.get(first)
            patched = _patch_invalid(state["messages"])
            messages = [*(state["messages"] if patched is None else patched)]
            if s.system is not None:
                messages.insert(0, s.system)
            return s, patched, messages

        def model(state: Any) -> dict[str, Any]:
            s, patched, messages = given(state)
            msg = named(call_model(s.model, messages, self.offered_dicts), s.name)
            return {"messages": [*_rewritten(patched), msg]}

        async def amodel(state: Any) -> dict[str, Any]:
            s, patched, messages = given(state)
            msg = await acall_model(s.model, messages, self.offered_dicts)
            return {"messages": [*_rewritten(patched), named(msg, s.name)]}

        model.__ironloop_async__ = amodel  # type: ignore[attr-defined]
        return model

    # --- the tools node with wrap_tool_call hooks ----------------------------------------

    def tools_node(self) -> Callable[[Any], Any]:
        """The tools node when middleware wraps tool calls: the call a ``Send`` brings
        (one task per call, the graph's state given beside it) through the
        ``wrap_tool_call`` chain (``ironloop._tool_wrap``, the engine of
        ``ToolNode(wrap_tool_call=)`` too), its tool run by the Rust node (permissions
        included). A tool's exception reaches the hooks; what leaves them is answered
        under the node's ``handle_tool_errors``."""
        runner = CallRunner(
            self.tool_node, self.tool_wraps, execute_errors=_REPORTED, calls_of=pending_calls
        )
        node = runner.graph_node()
        # The engine's tool node runs the chain around each sent call (a sync run):
        # ``src/bindings/graph/wrapped_tools.rs``; this function is the node otherwise.
        node.__ironloop_wrapped_tools__ = (self.tool_node._core, runner)  # type: ignore[attr-defined]
        return node


#: The tools of the agent whose hook is running, by name, as the user gave them (what
#: ``hook_tools`` reads: ``HumanInTheLoopMiddleware`` shows a tool's schema to the
#: reviewer of its calls).
_hook_tools: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "ironloop_hook_tools", default=None
)


def hook_tools() -> dict[str, Any]:
    """The tools of the agent whose node-style hook is running, by name (empty outside
    one)."""
    return _hook_tools.get() or {}


def _hook_node(
    m: AgentMiddleware, hook: str, jumps: list[str], tools: dict[str, Any]
) -> Callable[[Any], Any]:
    """A node-style hook as a graph node: ``hook(state, runtime)``; with ``can_jump_to``
    the node always writes ``jump_to`` (the hook's, or ``None``) for its router. A
    middleware that says it reads them (``_reads_hook_tools``) sees the agent's
    ``tools`` through ``hook_tools()``."""
    sync_fn, async_fn = node_hook(m, hook)
    where = f"{m.name}.{hook}"

    def update(value: Any) -> Any:
        if value is None:
            return {"jump_to": None} if jumps else None
        if not isinstance(value, dict):
            if isinstance(value, Command):
                return value
            raise TypeError(
                f"{where} returned {type(value).__name__}: a hook returns a state update "
                "(a dict) or None"
            )
        jump = value.get("jump_to")
        if jump is not None and jump not in jumps:
            # LangChain ignores a jump the hook did not declare; so does ironloop, saying so.
            warnings.warn(
                f"{where} returned jump_to={jump!r}, but the hook may jump to "
                f"{jumps or 'nowhere'}: the jump is ignored; declare it with "
                "@hook_config(can_jump_to=[...]) or the decorator's can_jump_to=[...]",
                stacklevel=2,
            )
            value = {k: v for k, v in value.items() if k != "jump_to"}
            if not value and not jumps:
                return None
        if jumps and "jump_to" not in value:
            return {**value, "jump_to": None}
        return value

    shown = tools if m._reads_hook_tools else None
    # A node always runs in a task: its runtime straight from the engine
    # (`get_runtime`'s own first step), one Python call less a hook step.

    def node(state: Any) -> Any:
        token = None if shown is None else _hook_tools.set(shown)
        try:
            value = sync_fn(state, _task_runtime() or get_runtime())
        finally:
            if token is not None:
                _hook_tools.reset(token)
        return None if value is None and not jumps else update(value)

    async def anode(state: Any) -> Any:
        token = None if shown is None else _hook_tools.set(shown)
        try:
            value = await async_fn(state, _task_runtime() or get_runtime())
        finally:
            if token is not None:
                _hook_tools.reset(token)
        return None if value is None and not jumps else update(value)

    node.__ironloop_async__ = anode  # type: ignore[attr-defined]
    node.__name__ = where
    traced_as(node, middleware_policy(lambda: m.trace_policy))
    return node


def create_agent(
    model: Any,
    tools: Sequence[Any] | ToolNode | None = None,
    *,
    system_prompt: str | SystemMessage | None = None,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    response_format: Any = None,
    state_schema: Any = None,
    context_schema: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    debug: bool = False,
    name: str | None = None,
    cache: Any = None,
    call_fields: Sequence[str] | None = None,
    transformers: Sequence[Any] | None = None,
) -> CompiledStateGraph:
    """An agent graph as LangChain 1.x's ``create_agent``: node ``"model"`` calls the
    model, node ``"tools"`` runs its tool calls (each call its own task), looping until
    the model answers without tool calls; middleware adds its hook nodes
    (``"<name>.before_model"`` ...) and wraps the model and tool calls.

    - ``model``: a model object (ironloop, LangChain, or anything with
      ``invoke(messages, tools=None, tool_choice=None)``) or a ``"provider:model"``
      string (see :func:`init_model`).
    - ``tools``: tools, functions, LangChain tools, provider tool dicts, or a
      ``ToolNode`` (its ``deny`` / ``allow_only`` lists hold, enforced in Rust).
    - ``system_prompt``: put before the messages of every model call.
    - ``middleware``: ``AgentMiddleware`` instances; before-hooks run in list order,
      after-hooks in reverse, wraps nest with the first outermost.
    - ``response_format``: ``ToolStrategy(schema)``, ``ProviderStrategy(schema)`` (from
      ``ironloop.agents.structured_output``) or a bare schema (pydantic model,
      TypedDict, dataclass, JSON Schema dict), as LangChain 1.x; the value is stored as
      ``structured_response`` and ends the loop.
    - ``state_schema`` / ``context_schema``: extra state fields (a ``TypedDict``
      subclassing ``AgentState``) and the type of ``invoke(..., context=...)``, read
      as ``runtime.context`` by hooks and tools.
    - ``call_fields`` (an ironloop addition): the Agent/Tool spec's call meta-fields
      offered with every tool's arguments, as in ``create_react_agent``.
    - ``transformers``: ``stream_events(version="v3")`` transformer factories (see
      ``ironloop.stream._tool_calls.agent_transformers``).

    Example:
        >>> from ironloop import create_agent, tool
        >>> from ironloop.middleware import before_model
        >>> from ironloop.models import ScriptedChatModel
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     "Adds."
        ...     return a + b
        >>> seen = []
        >>> @before_model
        ... def count(state, runtime):
        ...     seen.append(len(state["messages"]))
        >>> model = ScriptedChatModel([
        ...     {"content": "", "tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]},
        ...     "5",
        ... ])
        >>> agent = create_agent(model, [add], system_prompt="Be brief.", middleware=[count])
        >>> agent.invoke({"messages": [("user", "2+3?")]})["messages"][-1].content
        '5'
        >>> seen
        [1, 3]
    """
    if cache is not None:
        raise TypeError(
            "create_agent(cache=...) is not supported by ironloop: node results are not "
            "cached; leave cache out"
        )
    mws = _check_middleware(middleware)
    if not (system_prompt is None or isinstance(system_prompt, (str, SystemMessage))):
        raise TypeError(
            f"system_prompt must be a str or a SystemMessage, got {type(system_prompt).__name__}"
        )
    # A str becomes its SystemMessage when the agent first reads it (AgentSettings).
    settings = AgentSettings(init_model(model), name, system=system_prompt)
    # The graph is compiled once per shape; this agent's model, system prompt and name
    # are its own (see ironloop._shapes). A LangChain model is bound to the tools per
    # model object, in the builder: such an agent gets a graph of its own.
    shape = [tools] if isinstance(tools, ToolNode) else list(tools or ())
    shape += [*mws, response_format, state_schema, context_schema, checkpointer, store]
    key = (
        None
        if is_langchain_runnable(settings.model)
        else shape_key(
            "create_agent",
            (
                isinstance(tools, ToolNode),
                names(interrupt_before),
                names(interrupt_after),
                tuple(call_fields or ()),
            ),
            shape,
        )
    )
    template = templates.get(key)
    if template is None:
        template = _agent_template(
            settings,
            tools,
            mws,
            response_format=response_format,
            state_schema=state_schema,
            context_schema=context_schema,
            checkpointer=checkpointer,
            store=store,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            call_fields=call_fields,
        )
        templates.put(key, template, shape)
    agent = bind(template, settings, name, _LANGCHAIN_RUN_DEFAULTS)
    if debug != agent.debug:  # LangGraph's `debug`: each run prints its updates and values
        agent.debug = debug
    agent.stream_transformers = agent_transformers(mws, transformers)
    return agent


def _agent_template(
    first: AgentSettings,
    tools: Any,
    mws: list[AgentMiddleware],
    *,
    response_format: Any,
    state_schema: Any,
    context_schema: Any,
    checkpointer: Any,
    store: Any,
    interrupt_before: Sequence[str] | None,
    interrupt_after: Sequence[str] | None,
    call_fields: Sequence[str] | None = None,
) -> CompiledStateGraph:
    """The compiled graph of a ``create_agent`` shape."""
    if call_fields:
        if isinstance(tools, ToolNode):
            raise ValueError("call_fields needs the tools themselves, not a ToolNode")
        # The state's keys are checked at each call (middleware may add some).
        tools = agent_tools(list(tools or ()), call_fields, None)
    b = _Builder(first, tools, mws, response_format)

    def nodes_of(hook: str, order: Sequence[AgentMiddleware]) -> list[tuple[str, Any, list[str]]]:
        return [(f"{m.name}.{hook}", m, jumps_of(m, hook)) for m in order if hook in b.hooks[id(m)]]

    before_agent = nodes_of("before_agent", mws)
    before_model = nodes_of("before_model", mws)
    after_model = nodes_of("after_model", list(reversed(mws)))
    after_agent = nodes_of("after_agent", list(reversed(mws)))
    jumps = any(
        j for group in (before_agent, before_model, after_model, after_agent) for _, _, j in group
    )
    schema, input_schema, output_schema = _schemas(state_schema, mws, jumps)
    g: StateGraph[Any, Any, Any, Any] = StateGraph(
        schema,
        context_schema=context_schema,
        input_schema=input_schema,
        output_schema=output_schema,
    )
    # As LangChain: wrap_tool_call middleware gets a tools node even with no tools given
    # (it may answer, or run, tools a wrap_model_call hook adds at run time).
    has_tools = bool(b.tools) or bool(b.tool_wraps)
    loop_entry = before_model[0][0] if before_model else "model"
    exit_node = after_agent[0][0] if after_agent else END
    entry = before_agent[0][0] if before_agent else loop_entry

    def sends(calls: list[Any]) -> Any:
        """One tools task per call, as LangChain's: a call's result is its task's own
        write, kept when a sibling's ``interrupt()`` pauses the step (with
        ``wrap_tool_call`` middleware too: ``_Builder.tools_node``)."""
        return [Send("tools", dict(c)) for c in calls]

    def decide_structured(state: Any) -> Any:
        """After the model and its after-hooks: tools, the loop, or the exit (also
        when the call answered with the structured response and nothing is pending)."""
        if b.structured_done(state) and not pending_calls(state["messages"]):
            return exit_node
        return route_after_model(state["messages"], loop_entry, exit_node, sends)

    decide_structured.__name__ = decide_structured.__qualname__ = "decide"
    # Without a response format the rule alone decides: compile runs it in Rust.
    decide: Callable[[Any], Any] = (
        decide_structured
        if b.response_format is not None
        else after_model_router("decide", loop_entry, exit_node, per_call=True)
    )

    def resolve(jump: str, state: Any) -> Any:
        if jump == "model":
            return loop_entry
        if jump == "end":
            return exit_node
        calls = pending_calls(state["messages"])
        if not calls:
            raise ValueError(
                "a hook returned jump_to='tools' but the last AI message has no pending tool calls"
            )
        return sends(calls)

    destinations = [loop_entry, exit_node] + (["tools"] if has_tools else [])

    def link(node: str, jumps_: list[str], default: Any) -> None:
        """The edge out of a hook node: to ``default`` (a node or the ``decide``
        router), or where its ``jump_to`` says."""
        if not jumps_:
            if callable(default):
                g.add_conditional_edges(node, default, destinations)
            else:
                g.add_edge(node, default)
            return

        def route(state: Any) -> Any:
            jump = state.get("jump_to")
            if jump:
                return resolve(jump, state)
            return default(state) if callable(default) else default

        route.__name__ = f"{node}.route"
        targets = list(dict.fromkeys([*destinations, *([] if callable(default) else [default])]))
        g.add_conditional_edges(node, route, targets)

    g.add_node("model", b.model_node())
    for group in (before_agent, before_model, after_model, after_agent):
        for node_name, m, j in group:
            hook = node_name.rsplit(".", 1)[1]
            g.add_node(node_name, _hook_node(m, hook, j, b.given))
    g.add_edge(START, entry)
    nxt: Any
    for i, (node_name, _, j) in enumerate(before_agent):
        nxt = before_agent[i + 1][0] if i + 1 < len(before_agent) else loop_entry
        link(node_name, j, nxt)
    for i, (node_name, _, j) in enumerate(before_model):
        nxt = before_model[i + 1][0] if i + 1 < len(before_model) else "model"
        link(node_name, j, nxt)
    if after_model:
        g.add_edge("model", after_model[0][0])
        for i, (node_name, _, j) in enumerate(after_model):
            nxt = after_model[i + 1][0] if i + 1 < len(after_model) else decide
            link(node_name, j, nxt)
    elif has_tools:
        g.add_conditional_edges("model", decide, destinations)
    elif b.response_format is not None:
        # No tools but a response format: the model is asked again until it gives one.
        g.add_conditional_edges("model", decide, destinations)
    else:
        g.add_edge("model", exit_node)
    for i, (node_name, _, j) in enumerate(after_agent):
        nxt = after_agent[i + 1][0] if i + 1 < len(after_agent) else END
        link(node_name, j, nxt)

    if has_tools:
        g.add_node("tools", b.tools_node() if b.tool_wraps else b.tool_node)
        if b.direct or b.response_format is not None:

            def after_tools(state: Any) -> Any:
                if b.structured_done(state):
                    return exit_node  # the model called an output tool beside others
                done = all_returned_direct(state["messages"], b.direct, b.given)
                return exit_node if done else loop_entry

            g.add_conditional_edges("tools", after_tools, [loop_entry, exit_node])
        else:
            g.add_edge("tools", loop_entry)
    return g.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        name=first.name or "agent",
    )
