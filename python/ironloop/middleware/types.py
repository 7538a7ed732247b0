"""Middleware for ``create_agent``, in LangChain 1.x's shape
(``langchain.agents.middleware.types``): the ``AgentMiddleware`` base class, the
request / response objects its wrap hooks see, and the hook decorators.

A middleware is an object with any of six hooks:

- node-style ``before_agent``, ``before_model``, ``after_model``, ``after_agent``:
  ``(state, runtime) -> dict | None``, each its own graph node, returning a state update
  (or ``None``); with ``can_jump_to`` declared (``@hook_config`` or the decorator's
  argument) the update may hold ``jump_to`` (``"model"``, ``"tools"`` or ``"end"``);
- wrap-style ``wrap_model_call(request, handler)`` and ``wrap_tool_call(request,
  handler)``: they run around the model call / each tool call, may rewrite the request
  (``request.override(...)``), call ``handler`` zero or more times, or answer
  themselves.

Each hook may be written sync or async (``abefore_model``, ``awrap_model_call``, ...);
one definition serves both ``invoke`` and ``ainvoke``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, ClassVar, Generic, Literal

from typing_extensions import NotRequired, Required, TypedDict, TypeVar

from ironloop._tool_call import ToolCallRequest
from ironloop.graph import ContextT, add_messages
from ironloop.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from ironloop.types import Command, TracePolicy, omit_payload

__all__ = [
    "AgentMiddleware",
    "AgentState",
    "ContextT",
    "ExtendedModelResponse",
    "InputAgentState",
    "ModelCallResult",
    "ModelRequest",
    "ModelResponse",
    "OutputAgentState",
    "ResponseT",
    "OmitFromInput",
    "OmitFromOutput",
    "PrivateStateAttr",
    "ToolCallRequest",
    "TracePolicy",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "dynamic_prompt",
    "hook_config",
    "omit_payload",
    "wrap_model_call",
    "wrap_tool_call",
]

NODE_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
WRAP_HOOKS = ("wrap_model_call", "wrap_tool_call")


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: ``Annotated[T, OmitFromInput]``: a state field not taken from the run's input.
OmitFromInput = _Marker("OmitFromInput")
#: ``Annotated[T, OmitFromOutput]``: a state field not in the run's result.
OmitFromOutput = _Marker("OmitFromOutput")
#: Both: a middleware's private bookkeeping (counters, ...).
PrivateStateAttr = _Marker("PrivateStateAttr")


#: The type of an agent's structured response (``AgentState[ResponseT]``, ...).
ResponseT = TypeVar("ResponseT", default=Any)


class AgentState(TypedDict, Generic[ResponseT]):
    """The state of a ``create_agent`` agent: its conversation and, with
    ``response_format``, the ``structured_response``. A middleware's
    ``state_schema`` subclasses it to add fields. A ``typing_extensions.TypedDict``
    (pydantic reads those on every Python version) and generic in the structured
    response's type, as LangChain's.

    Example:
        >>> class Counted(AgentState):
        ...     turns: NotRequired[int]
        >>> sorted(Counted.__annotations__)
        ['messages', 'structured_response', 'turns']
    """

    messages: Required[Annotated[list[BaseMessage], add_messages]]
    structured_response: NotRequired[ResponseT]


class InputAgentState(TypedDict):
    """What an agent's input may hold: its conversation (messages or message dicts)."""

    messages: Required[Annotated[list[Any], add_messages]]


class OutputAgentState(TypedDict, Generic[ResponseT]):
    """What an agent's result holds: the conversation and any structured response."""

    messages: Required[Annotated[list[BaseMessage], add_messages]]
    structured_response: NotRequired[ResponseT]


#: A middleware's state schema (``AgentMiddleware[StateT, ContextT, ResponseT]``).
StateT = TypeVar("StateT", bound=AgentState[Any], default=AgentState[Any])


@dataclasses.dataclass(init=False)
class ModelRequest(Generic[ContextT]):
    """One model call as ``wrap_model_call`` sees it. ``override(...)`` makes a
    changed copy (the request itself is not changed).

    ``messages`` excludes the system message, which is ``system_message`` (also as
    the text ``system_prompt``, which the constructor takes too). ``tools`` are the
    tools offered (the agent's tool objects, as given, or provider tool dicts);
    ``model`` may be a model object or a ``"provider:model"`` string. Setting an
    attribute in place works but is deprecated, as in LangChain: use ``override``."""

    model: Any
    messages: list[Any]
    system_message: SystemMessage | None
    tool_choice: Any
    tools: list[Any]
    response_format: Any
    state: Any
    runtime: Any
    model_settings: dict[str, Any]

    def __init__(
        self,
        *,
        model: Any,
        messages: list[Any],
        system_message: SystemMessage | None = None,
        system_prompt: str | None = None,
        tool_choice: Any = None,
        tools: list[Any] | None = None,
        response_format: Any = None,
        state: Any = None,
        runtime: Any = None,
        model_settings: dict[str, Any] | None = None,
    ) -> None:
        if system_prompt is not None and system_message is not None:
            raise ValueError("Cannot specify both system_prompt and system_message")
        if system_prompt is not None:
            system_message = SystemMessage(content=system_prompt)
        put = object.__setattr__
        put(self, "model", model)
        put(self, "messages", messages)
        put(self, "system_message", system_message)
        put(self, "tool_choice", tool_choice)
        put(self, "tools", tools if tools is not None else [])
        put(self, "response_format", response_format)
        put(self, "state", state if state is not None else {"messages": []})
        put(self, "runtime", runtime)
        put(self, "model_settings", model_settings if model_settings is not None else {})

    @property
    def system_prompt(self) -> str | None:
        """The system message's text, or ``None``."""
        return None if self.system_message is None else self.system_message.text

    def __setattr__(self, name: str, value: Any) -> None:
        """In-place changes still work (``system_prompt`` sets the system message),
        with LangChain's ``DeprecationWarning``: ``override`` is the way."""
        if name.startswith("__"):  # typing's __orig_class__ of ModelRequest[Ctx](...)
            object.__setattr__(self, name, value)
            return
        warnings.warn(
            f"Direct attribute assignment to ModelRequest.{name} is deprecated. "
            f"Use request.override({name}=...) instead to create a new request "
            "with the modified attribute.",
            DeprecationWarning,
            stacklevel=2,
        )
        if name == "system_prompt":
            name, value = "system_message", None if value is None else SystemMessage(content=value)
        object.__setattr__(self, name, value)

    def override(self, **overrides: Any) -> ModelRequest[ContextT]:
        """A copy with ``overrides`` applied; ``system_prompt="..."`` sets the system
        message from text (``None`` removes it)."""
        if "system_prompt" in overrides:
            if "system_message" in overrides:
                raise ValueError("Cannot specify both system_prompt and system_message")
            text = overrides.pop("system_prompt")
            overrides["system_message"] = None if text is None else SystemMessage(content=text)
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"ModelRequest.override() got unknown fields {sorted(unknown)}")
        return dataclasses.replace(self, **overrides)


@dataclasses.dataclass
class ModelResponse(Generic[ResponseT]):
    """What a model call gave: its messages (usually one ``AIMessage``) and, with a
    ``response_format``, the structured response."""

    result: list[Any]
    structured_response: ResponseT | None = None


@dataclasses.dataclass
class ExtendedModelResponse(Generic[ResponseT]):
    """A ``wrap_model_call`` result with a state update beside the model's: the
    ``command``'s ``update`` is applied after the model node's own, through the
    state's reducers (its messages are added after the model's). Commands of nested
    middleware apply inner first; ``goto``, ``resume`` and ``graph`` are not
    supported there (``NotImplementedError``, as LangChain)."""

    model_response: ModelResponse[ResponseT]
    command: Command | None = None


ModelCallResult = ModelResponse | AIMessage | ExtendedModelResponse
ToolCallResult = ToolMessage | Command


def _no_update(self: Any, state: Any, runtime: Any) -> dict[str, Any] | None:
    """A node hook that changes nothing: ``AgentMiddleware``'s default."""
    return None


async def _no_update_async(self: Any, state: Any, runtime: Any) -> dict[str, Any] | None:
    """The async form of ``_no_update``."""
    return None


class AgentMiddleware(Generic[StateT, ContextT, ResponseT]):
    """The base of a middleware: override any hook (sync, async, or both).

    ``state_schema`` (a ``TypedDict`` subclassing ``AgentState``) adds state fields;
    ``tools`` adds tools to the agent; ``name`` (default: the class name) names the
    hook nodes ``"<name>.before_model"`` etc. and must be unique within an agent.

    Example:
        >>> class Shout(AgentMiddleware):
        ...     def wrap_model_call(self, request, handler):
        ...         return handler(request.override(system_prompt="SHOUT"))
        >>> Shout().name
        'Shout'
    """

    state_schema: Any = AgentState
    tools: Sequence[Any] = ()
    #: ``StreamTransformer`` factories the agent's ``stream_events(version="v3")``
    #: runs register (``ironloop.stream``).
    transformers: Sequence[Any] = ()
    #: What the callback runs of this middleware's hook nodes record of their input
    #: and output (``TracePolicy``); ``None``: the ``configure_trace_policy`` default.
    trace_policy: TracePolicy | None = None
    #: Whether this middleware's node-style hooks read the agent's tools through
    #: ``ironloop._create_agent.hook_tools`` (the hook node then sets them around each
    #: call; the others skip that, a fifth of a no-op hook's cost).
    _reads_hook_tools: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return type(self).__name__

    # The node hooks, each a node of the agent's graph once a middleware defines it
    # (sync, async, or both): ``before_agent`` once per run, before anything else;
    # ``before_model`` before every model call; ``after_model`` after every model
    # call, before its tool calls run; ``after_agent`` once per run, at its end. The
    # base's are one no-op (``overrides`` tells a middleware's own from it).
    before_agent = before_model = after_model = after_agent = _no_update
    abefore_agent = abefore_model = aafter_model = aafter_agent = _no_update_async

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse],
    ) -> ModelCallResult:
        """Around the model call: call ``handler`` (any number of times) or answer."""
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse]],
    ) -> ModelCallResult:
        """Async form of ``wrap_model_call``."""
        return await handler(request)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolCallResult]
    ) -> ToolCallResult:
        """Around one tool call: call ``handler`` (any number of times) or answer."""
        return handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolCallResult]],
    ) -> ToolCallResult:
        """Async form of ``wrap_tool_call``."""
        return await handler(request)


def hook_config(
    *, can_jump_to: Sequence[Literal["model", "tools", "end"]] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declares where a node-style hook method may jump (``jump_to`` in its update):
    ``@hook_config(can_jump_to=["end"])``."""
    _check_jumps(can_jump_to)

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__can_jump_to__ = list(can_jump_to or ())  # type: ignore[attr-defined]
        return fn

    return mark


def _check_jumps(can_jump_to: Sequence[str] | None) -> None:
    bad = [j for j in can_jump_to or () if j not in ("model", "tools", "end")]
    if bad:
        raise ValueError(f"can_jump_to takes 'model', 'tools' and 'end'; got {bad}")


def propagate(e: BaseException) -> BaseException:
    """Marks ``e``, which a middleware re-raises on purpose (``on_failure="error"``,
    an exception its ``retry_on`` excludes, one ``ToolErrorMiddleware`` leaves alone),
    to leave the tools node and end the run, as LangChain's does, instead of becoming
    the error ``ToolMessage`` ironloop makes of other tool failures."""
    e.__ironloop_propagate__ = True  # type: ignore[attr-defined]
    return e


def propagates(e: BaseException) -> bool:
    """Whether a middleware marked ``e`` with :func:`propagate`."""
    return bool(getattr(e, "__ironloop_propagate__", False))


# --- what create_agent asks of a middleware -------------------------------------------


def overrides(m: AgentMiddleware, hook: str) -> bool:
    """Whether ``m`` defines ``hook`` itself (not the base class's no-op)."""
    own = getattr(type(m), hook, None)
    return own is not None and own is not getattr(AgentMiddleware, hook)


def defined_hooks(m: AgentMiddleware) -> set[str]:
    """The hooks ``m`` defines, by their sync name, in either form."""
    return {h for h in (*NODE_HOOKS, *WRAP_HOOKS) if overrides(m, h) or overrides(m, "a" + h)}


def jumps_of(m: AgentMiddleware, hook: str) -> list[str]:
    """``can_jump_to`` of a node-style hook (either form)."""
    for name in (hook, "a" + hook):
        if overrides(m, name):
            jumps = getattr(getattr(type(m), name), "__can_jump_to__", None)
            if jumps:
                return list(jumps)
    return []


def run_sync(coro: Awaitable[Any]) -> Any:
    """Runs an async hook from sync code: on a fresh event loop, in this thread when
    none runs here, else in a helper thread (never nested in a running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(coro))
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(_awaited(coro))
        except BaseException as e:  # re-raised in the caller's thread
            out["error"] = e

    t = threading.Thread(target=target, name="ironloop-async-hook")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


async def _awaited(aw: Awaitable[Any]) -> Any:
    return await aw


def _hook_function(m: AgentMiddleware, name: str) -> Callable[..., Any] | None:
    """``m``'s hook ``name`` as a callable of ``(state, runtime)``: a decorator's
    function itself (one call less per step), else the bound method."""
    if not overrides(m, name):
        return None
    method = getattr(m, name)
    fn: Callable[..., Any] | None = getattr(method, "__hook_fn__", None)
    return fn if fn is not None else method


def node_hook(m: AgentMiddleware, hook: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The sync and async callables of a node-style hook, whichever form ``m`` wrote:
    a sync-only hook is called as it is under ``ainvoke``, an async-only one is run on
    its own loop under ``invoke``."""
    sync_fn = _hook_function(m, hook)
    async_fn = _hook_function(m, "a" + hook)
    if sync_fn is None:
        assert async_fn is not None

        def sync_fn(state: Any, runtime: Any) -> Any:
            return run_sync(async_fn(state, runtime))

    if async_fn is None:
        plain = sync_fn

        async def async_fn(state: Any, runtime: Any) -> Any:
            return plain(state, runtime)

    return sync_fn, async_fn


def _sync_hook(m: AgentMiddleware, hook: str) -> Callable[[Any, Any], Any]:
    """``m``'s wrap hook as a sync ``(request, handler)`` callable: an async-only one
    runs on its own loop with an async view of its handler."""
    fn = _hook_function(m, hook)
    if fn is not None:
        return fn
    afn = getattr(m, "a" + hook)

    def call(request: Any, handler: Callable[[Any], Any]) -> Any:
        async def ahandler(req: Any) -> Any:
            return handler(req)

        return run_sync(afn(request, ahandler))

    return call


def _async_hook(m: AgentMiddleware, hook: str) -> Callable[[Any, Any], Awaitable[Any]]:
    """``m``'s wrap hook as an async ``(request, handler)`` callable: a sync-only one
    runs in a worker thread, its handler handing the inner (async) call back to the
    running loop."""
    afn = _hook_function(m, "a" + hook)
    if afn is not None:
        return afn
    fn = getattr(m, hook)

    async def call(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        loop = asyncio.get_running_loop()

        async def inner_call(req: Any) -> Any:
            return await handler(req)

        def sync_handler(req: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(inner_call(req), loop).result()

        return await asyncio.to_thread(fn, request, sync_handler)

    return call


def chain_sync(
    wraps: Sequence[tuple[AgentMiddleware, str]], base: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    """``base`` wrapped by each middleware's ``hook``, the first outermost (LangChain's
    order)."""
    handler = base
    for m, hook in reversed(wraps):
        handler = _layer(_sync_hook(m, hook), handler)
    return handler


def _layer(fn: Callable[[Any, Any], Any], inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda request: fn(request, inner)


def chain_given(
    wraps: Sequence[tuple[AgentMiddleware, str]],
) -> Callable[[Any, Callable[[Any], Any]], Any]:
    """:func:`chain_sync` composed once, its innermost handler given per call:
    ``chain(request, handler)`` (a tools node's engine hands each call its own
    handler). One hook is called as it is; each further one adds a closure a call."""
    hooks = [_sync_hook(m, hook) for m, hook in wraps]

    def under(i: int) -> Callable[[Any, Callable[[Any], Any]], Any]:
        outer = hooks[i]
        if i + 1 == len(hooks):
            return outer
        inner = under(i + 1)
        return lambda request, handler: outer(request, lambda r: inner(r, handler))

    return under(0)


def chain_async(
    wraps: Sequence[tuple[AgentMiddleware, str]], base: Callable[[Any], Awaitable[Any]]
) -> Callable[[Any], Awaitable[Any]]:
    """The async form of :func:`chain_sync`."""
    handler = base
    for m, hook in reversed(wraps):
        handler = _alayer(_async_hook(m, hook), handler)
    return handler


def _alayer(
    fn: Callable[[Any, Any], Awaitable[Any]], inner: Callable[[Any], Awaitable[Any]]
) -> Callable[[Any], Awaitable[Any]]:
    async def call(request: Any) -> Any:
        return await fn(request, inner)

    return call


#: A model call through the ``wrap_model_call`` chain: the response and the
#: ``ExtendedModelResponse`` commands of every layer, inner first.
ModelOutcome = tuple[ModelResponse, list[Command]]


def split_model_result(value: Any, where: str) -> ModelOutcome:
    """A ``wrap_model_call`` hook's result as the ``ModelResponse`` its caller's
    handler returns, and its command: an ``AIMessage`` becomes a one-message response,
    an ``ExtendedModelResponse`` gives its ``model_response`` and ``command``."""
    if isinstance(value, ModelResponse):
        return value, []
    if isinstance(value, ExtendedModelResponse):
        return value.model_response, [] if value.command is None else [value.command]
    if isinstance(value, AIMessage):
        return ModelResponse(result=[value]), []
    raise TypeError(
        f"{where} returned {type(value).__name__}: a wrap_model_call hook must return a "
        "ModelResponse, an ExtendedModelResponse or an AIMessage (what its handler "
        "returned, or its own)"
    )


def chain_model_sync(
    wraps: Sequence[tuple[AgentMiddleware, str]], base: Callable[[Any], ModelResponse]
) -> Callable[[Any], ModelOutcome]:
    """The model call wrapped by each middleware's ``wrap_model_call``, first
    outermost: every handler returns a ``ModelResponse`` whatever the inner hook
    returned, and the commands of the layers that ran are kept (those of a retried
    inner call only from its last try), as LangChain composes them."""

    def innermost(request: Any) -> ModelOutcome:
        return base(request), []

    outcome: Callable[[Any], ModelOutcome] = innermost
    for m, hook in reversed(wraps):
        outcome = _model_layer(_sync_hook(m, hook), outcome, f"{m.name}.{hook}")
    return outcome


def _model_layer(
    fn: Callable[[Any, Any], Any], inner: Callable[[Any], ModelOutcome], where: str
) -> Callable[[Any], ModelOutcome]:
    def call(request: Any) -> ModelOutcome:
        inner_commands: list[Command] = []

        def handler(req: Any) -> ModelResponse:
            inner_commands.clear()
            response, commands = inner(req)
            inner_commands.extend(commands)
            return response

        response, own = split_model_result(fn(request, handler), where)
        return response, [*inner_commands, *own]

    return call


def chain_model_async(
    wraps: Sequence[tuple[AgentMiddleware, str]],
    base: Callable[[Any], Awaitable[ModelResponse]],
) -> Callable[[Any], Awaitable[ModelOutcome]]:
    """The async form of :func:`chain_model_sync`."""

    async def innermost(request: Any) -> ModelOutcome:
        return await base(request), []

    outcome: Callable[[Any], Awaitable[ModelOutcome]] = innermost
    for m, hook in reversed(wraps):
        outcome = _amodel_layer(_async_hook(m, hook), outcome, f"{m.name}.{hook}")
    return outcome


def _amodel_layer(
    fn: Callable[[Any, Any], Awaitable[Any]],
    inner: Callable[[Any], Awaitable[ModelOutcome]],
    where: str,
) -> Callable[[Any], Awaitable[ModelOutcome]]:
    async def call(request: Any) -> ModelOutcome:
        inner_commands: list[Command] = []

        async def handler(req: Any) -> ModelResponse:
            inner_commands.clear()
            response, commands = await inner(req)
            inner_commands.extend(commands)
            return response

        response, own = split_model_result(await fn(request, handler), where)
        return response, [*inner_commands, *own]

    return call


# --- decorators -----------------------------------------------------------------------


def _hook_decorator(hook: str) -> Callable[..., Any]:
    """``@before_model``, ``@wrap_tool_call``...: a middleware made of one ``hook``
    function. A node hook's function takes ``(state, runtime)`` and may say where it
    jumps (``can_jump_to=``); a wrap hook's takes ``(request, handler)``."""
    node = hook in NODE_HOOKS

    def decorator(
        func: Callable[..., Any] | None = None,
        *,
        state_schema: Any = None,
        tools: Sequence[Any] | None = None,
        can_jump_to: Sequence[Literal["model", "tools", "end"]] | None = None,
        name: str | None = None,
    ) -> Any:
        if can_jump_to is not None and not node:
            raise TypeError(f"{hook}() got an unexpected keyword argument 'can_jump_to'")
        _check_jumps(can_jump_to)

        def make(fn: Callable[..., Any]) -> AgentMiddleware:
            is_async = inspect.iscoroutinefunction(fn)
            method = _as_method(fn, is_async)
            if node:
                method.__can_jump_to__ = list(can_jump_to or ())  # type: ignore[attr-defined]
            return _make_class(
                fn, name, state_schema, tools, {("a" + hook) if is_async else hook: method}
            )

        return make(func) if func is not None else make

    decorator.__name__ = hook
    takes = "state, runtime" if node else "request, handler"
    jumps = " ``can_jump_to=``," if node else ""
    decorator.__doc__ = (
        f"Makes a middleware from a ``{hook}`` function ``({takes})`` (sync or async)."
        f" Used bare (``@{hook}``) or with ``state_schema=``, ``tools=``,{jumps} and"
        " ``name=``."
    )
    return decorator


def _as_method(fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    """``fn(a, b)`` as a hook method ``(self, a, b)``, async or not, marked with ``fn``
    (``__hook_fn__``: the function a hook node is traced as)."""
    if is_async:

        async def method(self: Any, a: Any, b: Any) -> Any:
            return await fn(a, b)

    else:

        def method(self: Any, a: Any, b: Any) -> Any:  # type: ignore[misc]
            return fn(a, b)

    method.__hook_fn__ = fn  # type: ignore[attr-defined]
    return method


def _make_class(
    fn: Callable[..., Any],
    name: str | None,
    state_schema: Any,
    tools: Sequence[Any] | None,
    methods: dict[str, Any],
) -> AgentMiddleware:
    cls_name = str(name or getattr(fn, "__name__", "Middleware"))
    attrs: dict[str, Any] = {
        **methods,
        "state_schema": state_schema or AgentState,
        "tools": list(tools or ()),
        "__doc__": fn.__doc__,
    }
    cls = type(cls_name, (AgentMiddleware,), attrs)
    return cls()  # type: ignore[no-any-return]


def interceptor(
    wrap: Callable[..., Any] | None, awrap: Callable[..., Any] | None
) -> AgentMiddleware:
    """``ToolNode(wrap_tool_call=, awrap_tool_call=)`` as one middleware with the given
    forms (either may be missing: the chain runs the other in its place)."""
    methods: dict[str, Any] = {}
    if wrap is not None:
        methods["wrap_tool_call"] = _as_method(wrap, False)
    if awrap is not None:
        methods["awrap_tool_call"] = _as_method(awrap, True)
    cls = type("ToolNodeInterceptor", (AgentMiddleware,), methods)
    return cls()  # type: ignore[no-any-return]


before_agent = _hook_decorator("before_agent")
before_model = _hook_decorator("before_model")
after_model = _hook_decorator("after_model")
after_agent = _hook_decorator("after_agent")
wrap_model_call = _hook_decorator("wrap_model_call")
wrap_tool_call = _hook_decorator("wrap_tool_call")


def dynamic_prompt(func: Callable[[ModelRequest], Any]) -> AgentMiddleware:
    """Makes a middleware that sets the system prompt of every model call from
    ``func(request)`` (a str or a ``SystemMessage``; sync or async)."""

    def system(value: Any) -> Any:
        return value if isinstance(value, SystemMessage) else SystemMessage(content=str(value))

    if inspect.iscoroutinefunction(func):

        async def amethod(self: Any, request: ModelRequest, handler: Any) -> Any:
            return await handler(request.override(system_message=system(await func(request))))

        return _make_class(func, None, None, None, {"awrap_model_call": amethod})

    def method(self: Any, request: ModelRequest, handler: Any) -> Any:
        return handler(request.override(system_message=system(func(request))))

    return _make_class(func, None, None, None, {"wrap_model_call": method})
