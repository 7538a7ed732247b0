"""Tool calls run through interceptors: ``ToolNode(wrap_tool_call=, awrap_tool_call=)``
and ``create_agent``'s ``wrap_tool_call`` middleware, one implementation.

Each call becomes a :class:`~ironloop._tool_call.ToolCallRequest`; the interceptor
chain (``chain_sync`` / ``chain_async``: the first outermost, an async-only one under
``invoke`` on its own loop, a sync-only one under ``ainvoke`` in a worker thread) may
answer it itself, change it, or call its ``execute`` handler any number of times.
``execute`` runs the request's one call on the Rust tool node (``call=``), so
validation, injection, timeouts, cancellation and permissions stay the engine's.
Calls of one message run concurrently: a thread each under ``invoke``,
``asyncio.gather`` under ``ainvoke``.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ironloop._tool_call import (
    ToolCallRequest,
    node_scope,
    request_runtime,
    runtime_class,
    scope_for,
    task_state,
)
from ironloop.errors import (
    GraphInterrupt,
    ParentCommand,
    ToolError,
    ToolInvalidArgsError,
    is_invalid_resume,
)
from ironloop.messages import AIMessage, ToolMessage
from ironloop.runtime import _scope
from ironloop.types import Command, Send

if TYPE_CHECKING:
    from ironloop._toolnode import ToolNode


#: LangGraph's text for a call to a tool the node does not have.
INVALID_TOOL = "Error: {name} is not a valid tool, try one of [{available}]."


def error_message(handle: Any, call: dict[str, Any], e: BaseException) -> ToolMessage:
    """The error ``ToolMessage`` for an exception that left the interceptors, under
    the node's ``handle_tool_errors`` policy (as the Rust node applies it to calls
    without interceptors); re-raises what the policy does not handle."""
    from ironloop.middleware.types import propagates  # the middleware package imports this

    if (
        handle is False
        or is_invalid_resume(e)
        or propagates(e)
        or getattr(e, "_ironloop_injection_error", False)
    ):
        # A resume value its interrupt's schema refused (the model cannot fix it), an
        # error a middleware ends the run with (ToolRetryMiddleware's on_failure), or
        # a state field a tool is to be given that the state lacks (the graph's fault).
        raise e
    # LangGraph's text: a tool's own exception by its repr; the engine's errors
    # (timeouts, refusals) by what they say; invalid arguments of a call by
    # LangChain's ToolInvocationError text, the error's own.
    if isinstance(e, ToolInvalidArgsError) and e.tool_name is not None:
        text = e.message
    else:
        detail = str(e) if isinstance(e, ToolError) else repr(e)
        text = f"Error: {detail}\n Please fix your mistakes."
    if isinstance(handle, str):
        text = handle
    elif isinstance(handle, (type, tuple)):
        if not isinstance(e, handle):
            raise e
    elif callable(handle):
        text = str(handle(e))
    return ToolMessage(
        content=text, name=call["name"], tool_call_id=call.get("id") or "", status="error"
    )


def checked(result: Any, strict: bool = True) -> Any:
    """What an interceptor returned. A standalone node hands anything back as it came
    (LangGraph's: a handler returning ``None`` gives ``{"messages": [None]}``); in a
    graph (``strict``) it must be a message or a command, which the state can take."""
    if strict and not isinstance(result, (ToolMessage, Command)):
        raise TypeError(
            f"a wrap_tool_call interceptor returned {type(result).__name__}: it must return "
            "a ToolMessage or a Command (what its execute handler returned, or its own)"
        )
    return result


#: What an interceptor in a graph may return (see :func:`checked`).
_ANSWERS: tuple[type, ...] = (ToolMessage, Command)


def _scope_store(scope: Any) -> Any:
    """The store of a node scope's runtime (``None`` without a scope or runtime)."""
    return getattr(scope.runtime, "store", None) if scope and scope.runtime else None


def _one_result(out: Any) -> Any:
    """The ``ToolMessage`` or ``Command`` of a one-call node output."""
    if isinstance(out, list):
        commands = [o for o in out if isinstance(o, Command)]
        if commands:
            return commands[0]
        dicts = [o for o in out if isinstance(o, dict)]
        if not dicts:
            return out[0]
        out = dicts[0]
    return next(iter(out.values()))[0]


class CallRunner:
    """Runs a ``ToolNode``'s calls through an interceptor chain.

    ``wraps``: ``(middleware, "wrap_tool_call")`` pairs, outermost first.
    ``execute_errors``: the error policy of ``execute`` (the node's own by default;
    ``create_agent`` lets tool exceptions reach its hooks). ``calls_of``: which calls of
    a state to run, as new dicts the runner may change (default: every call of the last
    AI message)."""

    def __init__(
        self,
        node: ToolNode,
        wraps: Sequence[tuple[Any, str]],
        *,
        execute_errors: Any = None,
        calls_of: Callable[[Any], list[Any]] | None = None,
    ) -> None:
        from ironloop.middleware.types import chain_async, chain_given, chain_sync

        runtime_class()  # made now (it may import langchain-core's tools), not in a run
        self.node = node
        self.execute_errors = execute_errors
        self.calls_of = calls_of
        self.handler = chain_sync(wraps, self._execute)
        self.ahandler = chain_async(wraps, self._aexecute)
        #: The chain with its innermost handler given per call (the engine's, see
        #: :meth:`run_sent`); ``None`` without interceptors.
        self.given = chain_given(wraps) if wraps else None
        #: Tools an interceptor handed in with ``override(tool=...)``: a node each.
        self._extra: dict[int, tuple[Any, Any]] = {}
        #: The node scope of the run whose sent calls this runner last ran: (the run's
        #: scope, its config, the ``NodeScope``); held, so `is` never matches a new run
        #: at a reused address.
        self._run_scope: tuple[Any, Any, Any] = (None, None, None)

    # --- input ---------------------------------------------------------------------------

    def parse(self, input: Any) -> tuple[list[dict[str, Any]], Any, str]:
        """The calls to run, the state their requests carry, and the input's shape."""
        key = self.node.messages_key
        if isinstance(input, list) and input and _is_call(input[-1]):
            return [dict(c) for c in input], task_state(), "tool_calls"
        if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            return [dict(input["tool_call"])], input["state"], "tool_calls"
        if isinstance(input, list):
            messages, kind = input, "list"
        elif isinstance(input, dict):
            messages, kind = input.get(key) or [], "dict"
        else:
            messages, kind = getattr(input, key, None) or [], "dict"
        if not messages:
            raise ValueError(
                f"ToolNode input has no messages: give a list of messages, a state with "
                f"{key!r}, or tool calls"
            )
        if self.calls_of is not None:
            # New dicts already (``pending_calls`` makes them from the Rust message).
            return list(self.calls_of(messages)), input, kind
        ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if ai is None:
            raise ValueError(
                "ToolNode found no AIMessage in its input: its last AI message's tool calls "
                "are what it runs"
            )
        return [dict(c) for c in ai.tool_calls], input, kind  # type: ignore[return-value]

    def requests(self, input: Any, store: Any) -> tuple[list[ToolCallRequest], str]:
        calls, state, kind = self.parse(input)
        out = []
        for call in calls:
            call.setdefault("type", "tool_call")
            out.append(
                ToolCallRequest._deferred(
                    call, self.node._originals.get(call["name"]), state, store
                )
            )
        return out, kind

    # --- execute: one call on the Rust node ----------------------------------------------

    def _target(self, request: ToolCallRequest) -> tuple[Any, dict[str, Any]] | ToolMessage:
        """The node core that runs ``request`` and the call to give it, or the error
        message for a call to a tool there is none of (the request's own call when the
        node reads it as it is: it never changes it)."""
        call = request.tool_call
        tool = request.tool
        node = self.node
        if tool is None:
            return ToolMessage(
                # The tools the model may call, in the order the Rust node names them.
                content=INVALID_TOOL.format(
                    name=call["name"], available=", ".join(node._core.runnable_names())
                ),
                name=call["name"],
                tool_call_id=call.get("id") or "",
                status="error",
            )
        name = str(getattr(tool, "name", ""))
        if node._originals.get(name) is tool or node._tools.get(name) is tool:
            core = node._core
        else:
            held = self._extra.get(id(tool))
            if held is None:
                from ironloop._toolnode import ToolNode

                extra = ToolNode([tool], handle_tool_errors=node.handle_tool_errors)
                held = self._extra[id(tool)] = (tool, extra._core)
            core = held[1]
            name = next(iter(held[1].tool_names()))
        if call["name"] == name:
            return core, call
        return core, {**call, "name": name}

    def _policy(self) -> Any:
        return self.node._error_policy if self.execute_errors is None else self.execute_errors

    def _start(self, request: ToolCallRequest, loop: Any = None) -> Any:
        """Starts ``request``'s one call on the Rust node: its output (``loop`` is
        ``None``) or an awaitable of it; a ``ToolMessage`` when no tool can run it.
        The tool is given the request's state and runtime."""
        target = self._target(request)
        if isinstance(target, ToolMessage):
            return target
        core, call = target
        kw = {"call": call, "store": request._store(), "handle_tool_errors": self._policy()}
        # The request itself while its runtime is deferred: made if the tool reads it.
        token = request_runtime.set(request.__dict__.get("runtime", request))
        try:
            if loop is None:
                return _one_result(core.invoke(request.state, **kw))
            return core.ainvoke(request.state, loop, **kw)
        finally:
            request_runtime.reset(token)

    def _execute(self, request: ToolCallRequest) -> Any:
        return self._start(request)

    async def _aexecute(self, request: ToolCallRequest) -> Any:
        started = self._start(request, asyncio.get_running_loop())
        return started if isinstance(started, ToolMessage) else _one_result(await started)

    # --- the node ------------------------------------------------------------------------

    def one(self, request: ToolCallRequest, strict: bool = False) -> Any:
        try:
            return checked(self.handler(request), strict)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return error_message(self.node._error_policy, request.tool_call, e)

    async def aone(self, request: ToolCallRequest, strict: bool = False) -> Any:
        try:
            return checked(await self.ahandler(request), strict)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return error_message(self.node._error_policy, request.tool_call, e)

    def invoke(
        self, input: Any, config: Any = None, store: Any = None, *, strict: bool = False
    ) -> Any:
        """Runs the input's calls; ``strict`` (a node in a graph) refuses an interceptor
        result that is neither a ``ToolMessage`` nor a ``Command``."""
        token = node_scope.set(scope_for(config, self.node._tool_list()))
        try:
            requests, kind = self.requests(input, self._store(store))
            if len(requests) <= 1:
                return self.output([self.one(r, strict) for r in requests], kind)
            pool = ThreadPoolExecutor(max_workers=min(len(requests), 32))
            try:
                futures = [
                    pool.submit(contextvars.copy_context().run, self.one, r, strict)
                    for r in requests
                ]
                return self.output([f.result() for f in futures], kind)
            finally:
                # Not `with`: its exit waits for every call, so a Ctrl-C (or a call's
                # `GraphInterrupt`) would wait for the slowest sibling to end.
                pool.shutdown(wait=False, cancel_futures=True)
        finally:
            node_scope.reset(token)

    async def ainvoke(
        self, input: Any, config: Any = None, store: Any = None, *, strict: bool = False
    ) -> Any:
        token = node_scope.set(scope_for(config, self.node._tool_list()))
        try:
            requests, kind = self.requests(input, self._store(store))
            results = await asyncio.gather(*(self.aone(r, strict) for r in requests))
            return self.output(list(results), kind)
        finally:
            node_scope.reset(token)

    def sent(self, call: dict[str, Any], state: Any, config: Any) -> Any:
        """The node's update for the one call a ``Send`` brought, with the graph's
        ``state``: :meth:`invoke` of its ``tool_call_with_context`` input, strict,
        without the input's parsing (the sync path of every wrapped agent tool call)."""
        token = node_scope.set(self._sent_scope(config))
        try:
            return self._sent_output(self.one(self._sent_request(call, state), True))
        finally:
            node_scope.reset(token)

    async def asent(self, call: dict[str, Any], state: Any, config: Any) -> Any:
        """The async form of :meth:`sent`."""
        token = node_scope.set(self._sent_scope(config))
        try:
            return self._sent_output(await self.aone(self._sent_request(call, state), True))
        finally:
            node_scope.reset(token)

    def run_sent(self, call: dict[str, Any], state: Any, config: Any, execute: Any) -> Any:
        """What :meth:`sent` answers a call with (a ``ToolMessage`` or a ``Command``),
        the chain's innermost handler ``execute`` given by the engine: the Rust tools
        node of ``create_agent`` runs the chain inside its task and hands each call a
        handler that runs the tool there (``src/bindings/graph/wrapped_tools.rs``).

        Called in the task's own context (a copy made for the task, which ends with it):
        the node scope set here needs no reset (resetting a variable costs a call
        ~1 k instructions)."""
        scope = self._sent_scope(config)
        node_scope.set(scope)
        request = self._sent_request(call, state, scope)
        try:
            result = self.given(request, execute)  # type: ignore[misc]
            return result if isinstance(result, _ANSWERS) else checked(result)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return error_message(self.node._error_policy, request.tool_call, e)

    def _sent_scope(self, config: Any) -> Any:
        """The node scope of a sent call: made once per run (its config and the node's
        tools are the run's, as the calls of one tools step share one), not once per
        call (making it cost a wrapped call ~9 k instructions)."""
        run = _scope.get()
        held = self._run_scope
        if held[0] is run and held[1] is config and run is not None:
            return held[2]
        scope = scope_for(config, self.node._tool_list())
        self._run_scope = (run, config, scope)
        return scope

    def _sent_output(self, result: Any) -> Any:
        """:meth:`output` of one call's result (a message needs no combining)."""
        if isinstance(result, ToolMessage):
            return {self.node.messages_key: [result]}
        return self.output([result], "tool_calls")

    def _sent_request(self, call: dict[str, Any], state: Any, scope: Any = None) -> ToolCallRequest:
        """The request of a sent call; ``scope``: the node scope just set (else read)."""
        call = dict(call)
        call.setdefault("type", "tool_call")
        tool = self.node._originals.get(call["name"])
        store = _scope_store(scope) if scope is not None else self._store(None)
        return ToolCallRequest._deferred(call, tool, state, store)  # type: ignore[no-any-return]

    def _store(self, store: Any) -> Any:
        return store if store is not None else _scope_store(node_scope.get())

    def output(self, results: list[Any], kind: str) -> Any:
        """The node's update, as LangGraph's ToolNode combines it: the messages (a list
        for a list input, else ``{messages_key: [...]}``); with ``Command`` s, a list in
        call order, each message as its own update, parent ``Send`` s merged into one."""
        key = self.node.messages_key
        flat: list[Any] = []
        for r in results:
            flat.extend(r if isinstance(r, list) else [r])
        if not any(isinstance(r, Command) for r in flat):
            return flat if kind == "list" else {key: flat}
        combined: list[Any] = []
        parent: Any = None
        for r in flat:
            goto = getattr(r, "goto", None)
            if (
                isinstance(r, Command)
                and r.graph == Command.PARENT
                and isinstance(goto, list)
                and all(isinstance(s, Send) for s in goto)
            ):
                if parent is None:
                    parent = Command(graph=Command.PARENT, goto=list(goto))
                else:
                    parent = Command(graph=Command.PARENT, goto=[*parent.goto, *goto])
            elif isinstance(r, Command):
                combined.append(r)
            else:
                combined.append([r] if kind == "list" else {key: [r]})
        if parent is not None:
            combined.append(parent)
        return combined

    def graph_node(self) -> Callable[[Any], Any]:
        """The node a graph runs for the wrapped ``ToolNode`` (sync and async forms).

        A task a ``Send`` of one tool call starts runs that call; the engine gives it
        the graph's state too (``send_state``, see ``__ironloop_send_state__`` in
        ``src/bindings/graph/describe.rs``): the call's request carries it, as
        LangChain's ``ToolCallWithContext`` does, without the ``Send`` holding a copy."""
        from ironloop.runtime import _run_config

        def tools(state: Any, send_state: Any = None) -> Any:
            if _is_sent(state, send_state):
                return self.sent(state, send_state, _run_config())
            return self.invoke(_with_state(state, send_state), _run_config(), strict=True)

        async def atools(state: Any, send_state: Any = None) -> Any:
            if _is_sent(state, send_state):
                return await self.asent(state, send_state, _run_config())
            return await self.ainvoke(_with_state(state, send_state), _run_config(), strict=True)

        tools.__ironloop_async__ = atools  # type: ignore[attr-defined]
        tools.__ironloop_send_state__ = True  # type: ignore[attr-defined]
        tools.__name__ = self.node.name
        return tools


def _is_call(x: Any) -> bool:
    return isinstance(x, dict) and x.get("type") == "tool_call"


#: The keys of a tool call (LangChain's ``ToolCall``), as a ``Send`` carries one.
_CALL_KEYS = frozenset({"name", "args", "id"})


def _is_sent(input: Any, state: Any) -> bool:
    """Whether a node's input is a ``Send`` 's one tool call, the graph's ``state``
    given beside it."""
    return state is not None and isinstance(input, dict) and _CALL_KEYS <= input.keys()


def _with_state(input: Any, state: Any) -> Any:
    """A node's input: a ``Send`` 's one tool call with the graph's ``state`` (the
    ``tool_call_with_context`` shape :meth:`CallRunner.parse` reads), else as given."""
    if not _is_sent(input, state):
        return input
    return {"__type": "tool_call_with_context", "tool_call": input, "state": state}
