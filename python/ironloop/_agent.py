"""``create_react_agent``: a model that calls tools until it answers."""

from __future__ import annotations

import json
import sys
import typing
import uuid
from collections.abc import Callable, Container, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from ironloop import messages as _messages
from ironloop._agent_prompt import (
    _get,
    _giving_prompt_kwargs,
    _is_system_message,
    _prompt_kwargs,
)
from ironloop._constants import END, START
from ironloop._dynamic_model import DynamicModel, is_model_function
from ironloop._foreign import is_langchain_runnable
from ironloop._ironloop import (
    NativeTool,
    _after_model,
    _AfterModelRoute,
    _AgentModel,
    _coerce_message,
    _json_schema_errors,
    _ToolDefs,
    tools_condition,
)
from ironloop._meta_fields import agent_tools
from ironloop._node_prep import _deprecated_kwargs
from ironloop._react_hooks import post_model_hook_router, with_llm_input_messages
from ironloop._runtime import task_var
from ironloop._schema import type_schema
from ironloop._shapes import AgentSettings, agent_var, bind, names, shape_key, templates
from ironloop._structured_output import model_structured, model_structured_async
from ironloop._tool import Tool, compose_schema
from ironloop._toolnode import ToolNode
from ironloop.errors import ModelError
from ironloop.graph import CompiledStateGraph, StateGraph, add_messages

if TYPE_CHECKING:
    from ironloop.messages import AIMessage
from ironloop.types import Send
from ironloop.warnings import LangGraphDeprecatedSinceV10

__all__ = ["AgentState", "create_react_agent"]


class _Conversation(TypedDict):
    messages: Annotated[list[_messages.BaseMessage], add_messages]


class AgentState(_Conversation, total=False):
    """The state of a ReAct agent (LangGraph's ``AgentState``): its conversation, and
    ``remaining_steps`` for schemas ported from LangGraph (ironloop does not fill it: a
    run past ``recursion_limit`` raises ``GraphRecursionError``).

    Example:
        >>> class State(AgentState):
        ...     user_name: str
        >>> sorted(State.__annotations__)
        ['messages', 'remaining_steps', 'user_name']
    """

    remaining_steps: int


class AgentStateWithStructuredResponse(AgentState, total=False):
    structured_response: Any


def _as_ai(resp: Any) -> AIMessage:
    if isinstance(resp, _messages.AIMessage):
        return resp
    if isinstance(resp, dict):
        d = dict(resp)
        d.setdefault("role", "assistant")
        msg = _coerce_message(d)
        if isinstance(msg, _messages.AIMessage):
            return msg
    if isinstance(resp, str):
        return _messages.AIMessage(content=resp)
    raise ModelError(
        f"the model returned {type(resp).__name__}: a model's invoke() must return an "
        "AIMessage or a {'role': 'assistant', ...} dict"
    )


def _merge_chunks(chunks: list[AIMessage]) -> AIMessage:
    """One message from streamed chunks: ``AIMessageChunk`` s added up (their
    fragments joined into calls); for plain ``AIMessage`` chunks, the text joined and
    the tool calls collected."""
    if not chunks:
        raise ModelError("the model's stream ended without any chunk")
    pieces = [c for c in chunks if isinstance(c, _messages.AIMessageChunk)]
    if len(pieces) == len(chunks):
        whole = pieces[0] + pieces[1:] if len(pieces) > 1 else pieces[0]
        return _messages.AIMessage(
            content=whole.content,
            tool_calls=[dict(c) for c in whole.tool_calls],
            invalid_tool_calls=[dict(c) for c in whole.invalid_tool_calls],
            usage_metadata=whole.usage_metadata,
            id=whole.id,
            name=whole.name,
            additional_kwargs=whole.additional_kwargs,
            response_metadata=whole.response_metadata,
        )
    calls = [dict(c) for ch in chunks for c in ch.tool_calls]
    invalid = [dict(c) for ch in chunks for c in ch.invalid_tool_calls]
    usage = next((ch.usage_metadata for ch in reversed(chunks) if ch.usage_metadata), None)
    # Provider fields come with the last piece that has them (the whole message's).
    extra = next((ch.additional_kwargs for ch in reversed(chunks) if ch.additional_kwargs), {})
    meta = next((ch.response_metadata for ch in reversed(chunks) if ch.response_metadata), {})
    return _messages.AIMessage(
        content="".join(ch.text for ch in chunks),
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=usage,
        id=chunks[0].id,
        additional_kwargs=dict(extra),
        response_metadata=dict(meta),
    )


def _schema_output_msg(output: Any, msg_id: Any, structured: bool) -> dict[str, Any]:
    """The agent's final step from a schema-mode ``output``."""
    content = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    update: dict[str, Any] = {"messages": [_messages.AIMessage(content=content, id=msg_id)]}
    if structured and not isinstance(output, str):
        update["structured_response"] = output
    return update


def _pending_schema_output(messages: Sequence[Any]) -> tuple[bool, Any]:
    """``(True, output)`` when the last answer carried an output with its calls and
    those calls have run (the messages end with their results): the run ends with it
    instead of asking the model again. Such an answer's message holds the output as
    its content, in JSON (``_from_composed``); a calls-only one has no content."""
    if not messages or messages[-1].type != "tool":
        return False, None
    for m in reversed(messages):
        if m.type == "ai":
            if not m.tool_calls or not m.text:
                return False, None
            try:
                return True, json.loads(m.text)
            except json.JSONDecodeError:
                return False, None
    return False, None


def _from_composed(resp: AIMessage, schema: dict[str, Any], structured: bool) -> dict[str, Any]:
    """The agent's step from a ``{"calls", "output"}`` answer. Calls run first; an
    output given with them is kept on the calls' message and ends the run after
    them (``_pending_schema_output``)."""
    text = resp.text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        # Not JSON: the model answered in prose; take it as the final answer.
        return {"messages": [resp]}
    errors = _json_schema_errors(schema, value)
    if errors:
        raise ModelError(
            "the model's answer does not match the {calls, output} schema: " + "; ".join(errors)
        )
    calls = value.get("calls") or []
    output = value.get("output")
    if calls:
        tool_calls = [
            {
                "name": c["_tool"],
                "args": {k: v for k, v in c.items() if k != "_tool"},
                "id": f"call_{uuid.uuid4().hex[:24]}",
            }
            for c in calls
        ]
        # An output given with the calls is kept as this message's content (in
        # JSON), so it is in the state and checkpointed until the calls have run.
        content = "" if output is None else json.dumps(output, ensure_ascii=False)
        return {
            "messages": [_messages.AIMessage(content=content, tool_calls=tool_calls, id=resp.id)]
        }
    return _schema_output_msg(output, resp.id, structured)


def _schema_keys(schema: Any) -> set[str]:
    try:
        return set(typing.get_type_hints(schema))
    except Exception:
        return set(getattr(schema, "model_fields", {}) or {})


# --- the agent loop, shared by create_react_agent and create_agent ----------------------


def pending_calls(messages: Sequence[Any]) -> list[Any]:
    """The calls of the last AI message that have no ToolMessage yet, as ``ToolCall``
    dicts (the core's ``pending_calls``: only the messages from the last AI message on
    are read, so the cost does not grow with the conversation)."""
    return _after_model(messages)[1]


def route_after_model(
    messages: Sequence[Any], loop: str, done: str, sends: Callable[[list[Any]], Any]
) -> Any:
    """Where the loop goes once the model (and its after-hooks) answered, by the core's
    one rule (``src/prebuilt/after_model.rs``): the pending tool calls to
    ``sends(calls)``, back to ``loop`` when every call is answered already (a reviewer
    rejected them, a hook answered them), else ``done``."""
    route, pending = _after_model(messages)
    if route == "tools":
        return sends(pending)
    return loop if route == "back" else done


def _sends(calls: Sequence[Any]) -> Any:
    """One task per call: a ``Send`` to the tools node each."""
    return [Send("tools", dict(c)) for c in calls]


def _to_tools(calls: Sequence[Any]) -> Any:
    """One visit of the tools node for all the calls (it reads them from the state)."""
    return "tools"


def after_model_router(name: str, back: str, done: str, *, per_call: bool) -> Any:
    """The routing function after an agent's model: :func:`route_after_model` over
    ``state["messages"]`` when called from Python, and marked so that ``compile``
    runs the same rule in Rust over the graph's messages channel (no call into Python
    per model step). ``per_call``: a ``Send`` per pending call, else one visit of the
    tools node."""
    sends = _sends if per_call else _to_tools

    def route(state: Any) -> Any:
        return route_after_model(_get(state, "messages"), back, done, sends)

    route.__name__ = route.__qualname__ = name
    route.__ironloop_router__ = _AfterModelRoute("tools", per_call, back, done)  # type: ignore[attr-defined]
    return route


def returned_direct(messages: Sequence[Any], direct: set[str]) -> bool:
    """LangGraph's ``create_react_agent`` rule: the run ends after the tools step when a
    ``return_direct`` tool answered in it (whatever its status, as LangGraph's), or when
    the last AI message called one (per-call tasks: the call may have run in another
    task of the step, whose result this task's routing does not see)."""
    m = None
    for m in reversed(messages):
        if m.type != "tool":
            break
        if m.name in direct:
            return True
    if m is not None and m.type == "ai" and m.tool_calls:
        return any(c["name"] in direct for c in m.tool_calls)
    return False


def all_returned_direct(messages: Sequence[Any], direct: set[str], tools: Container[str]) -> bool:
    """LangChain's ``create_agent`` rule: the run ends after the tools step when every
    call of the last AI message that ran one of the agent's tools ran a ``return_direct``
    one. The tool that ran is named by its result where there is one (a reviewer's edit
    may have run another tool than the call asked for), else by the call."""
    ai = None
    ran: dict[str, str] = {}
    for m in reversed(messages):
        if m.type == "ai":
            ai = m
            break
        if m.type == "tool" and m.name in tools:
            ran[m.tool_call_id] = m.name
    if ai is None:
        return False
    names = [name for c in ai.tool_calls if (name := ran.get(c["id"] or "", c["name"])) in tools]
    return bool(names) and all(name in direct for name in names)


def named(msg: AIMessage, name: str | None) -> AIMessage:
    """``msg`` named after the agent (LangGraph names the agent's messages)."""
    if msg.name != name:
        msg.name = name
    return msg


def _joins_chunks(scratch: Any, model: Any, method: str) -> bool:
    """Whether the agent streams ``model`` itself and joins its chunks: under
    ``stream_mode="messages"``, for a model that can stream and does not stream from
    its own ``invoke`` (ironloop's HTTP models do, and return the provider's whole
    message)."""
    return (
        scratch is not None
        and scratch.streams_messages
        and hasattr(model, method)
        and not getattr(model, "_streams_in_invoke", False)
    )


def call_model(model: Any, messages: list[Any], tools: Any, **kwargs: Any) -> AIMessage:
    """One model call; under ``stream_mode="messages"`` its chunks go to that stream as
    they arrive (when the model can stream)."""
    scratch = task_var.get(None)
    if _joins_chunks(scratch, model, "stream"):
        chunks = []
        for chunk in model.stream(messages, tools=tools, **kwargs):
            chunk = _as_ai(chunk)
            scratch.write_message(chunk)
            chunks.append(chunk)
        return _merge_chunks(chunks)
    if not hasattr(model, "invoke"):
        raise TypeError(
            f"{type(model).__name__} has only ainvoke(): run the agent with ainvoke / astream"
        )
    return _as_ai(model.invoke(messages, tools=tools, **kwargs))


async def acall_model(model: Any, messages: list[Any], tools: Any, **kwargs: Any) -> AIMessage:
    """The async form of :func:`call_model`."""
    scratch = task_var.get(None)
    if _joins_chunks(scratch, model, "astream"):
        chunks = []
        async for chunk in model.astream(messages, tools=tools, **kwargs):
            chunk = _as_ai(chunk)
            scratch.write_message(chunk)
            chunks.append(chunk)
        return _merge_chunks(chunks)
    if not hasattr(model, "ainvoke"):
        return call_model(model, messages, tools, **kwargs)
    return _as_ai(await model.ainvoke(messages, tools=tools, **kwargs))


#: What an HTTP model's step in an agent goes through in Python; the engine makes the
#: same call itself only while none of it is a subclass's or an instance's own
#: (checked for each agent by ``_AgentModel.of``).
_CALL_PATH = ("invoke", "ainvoke", "_invoke", "_ainvoke", "_args", "_done", "_streams_in_invoke")


def _agent_model(model: Any, tools: Any, prompt: Any, name: str | None) -> Any:
    """The agent's model step as the engine runs it without Python (an
    ``_AgentModel``), or ``None`` when the step needs Python: a model that is not one
    of ironloop's HTTP models as they are, or a prompt that is a function. Whether a
    run may use it is decided per run (``ironloop._shapes.BoundCore``)."""
    models = sys.modules.get("ironloop.models")
    if tools is None or models is None:
        return None
    if prompt is None:
        system = None
    elif isinstance(prompt, str):
        system = ("system", prompt)  # read as a SystemMessage by the engine, no object made
    elif _is_system_message(prompt):
        system = prompt
    else:
        return None
    return _AgentModel.of(model, models._HTTPChatModel, _CALL_PATH, tools, system, name)


def create_react_agent(
    model: Any,
    tools: Sequence[Tool | NativeTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: Any = None,
    response_format: Any = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: Any = None,
    context_schema: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    debug: bool = False,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
    tool_calling: str = "native",
    call_fields: Sequence[str] | None = None,
    **kwargs: Any,
) -> CompiledStateGraph:
    """A graph with nodes ``"agent"`` (calls the model) and ``"tools"`` (runs its tool
    calls), looping until the model answers without tool calls — LangGraph's
    ``create_react_agent``.

    ``model`` is an ironloop model, any object with ``invoke(messages, tools=None,
    tool_choice=None)``, a LangChain chat model (its tools are bound with its own
    ``bind_tools``), or a function ``(state, runtime) -> model`` (sync or async) that
    picks the model for each call. ``tools`` are ironloop tools, functions, LangChain tools, provider
    tool dicts (sent to the model only), or a ``ToolNode``.

    - ``prompt``: a str or ``SystemMessage`` put first, or a function (sync or async)
      or LangChain ``Runnable`` from the state to the model's input messages (a
      function naming ``config`` / ``store`` parameters is given the run's config and
      the graph's store, as in LangGraph).
    - ``response_format``: a schema (TypedDict, dataclass, pydantic model, JSON Schema)
      or ``(prompt, schema)``; after the loop, a node ``generate_structured_response``
      asks the model for it and stores it as ``structured_response``.
    - ``pre_model_hook`` / ``post_model_hook``: nodes run before / after every model
      call. The pre hook may return ``llm_input_messages`` (what the model is given
      instead of ``messages``, not stored in ``messages``); after the post hook, pending
      tool calls run, else the run ends.
    - ``context_schema``: the type of ``invoke(..., context=)`` (``runtime.context``).
    - ``state_schema``: a schema with ``messages`` (and ``structured_response`` when
      ``response_format`` is given), e.g. a subclass of ``AgentState``.
    - ``version``: ``"v2"`` (default) runs each tool call as its own ``tools`` task
      (``Send``); ``"v1"`` runs all calls of a message in one ``tools`` task.
    - ``name`` names the graph and the agent's ``AIMessage`` s.

    Every tool failure reaches the model as an error ``ToolMessage`` so it can correct
    itself. A tool made with ``return_direct=True`` ends the run with its result. A
    keyword ``create_react_agent`` does not take raises ``TypeError``.

    ``tool_calling="schema"`` (an ironloop addition) is for models without native tool
    calling: the model is asked for one JSON object matching
    ``compose_schema(tools, ...)`` — ``{"calls": [...], "output": ...}`` — through
    ``response_format=``; its calls run like native ones and ``output`` is the answer.

    ``call_fields`` (an ironloop addition) offers the Agent/Tool spec's call
    meta-fields (``"_reasoningForCall"``, ``"_outputPath"``, ``"_delegate"``) with every
    tool's arguments; see ``ironloop.with_call_fields`` for one tool at a time.

    Example:
        >>> from ironloop import create_react_agent, tool
        >>> from ironloop.models import ScriptedChatModel
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     "Adds."
        ...     return a + b
        >>> model = ScriptedChatModel([
        ...     {"content": "", "tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]},
        ...     "5",
        ... ])
        >>> agent = create_react_agent(model, [add], prompt="Be brief.")
        >>> agent.invoke({"messages": [("user", "2+3?")]})["messages"][-1].content
        '5'
    """
    # LangGraph 1.0's rename, warned about as LangGraph does.
    if kwargs:
        old = _deprecated_kwargs(
            "create_react_agent()",
            {k: kwargs.pop(k) for k in ("config_schema",) if k in kwargs},
            {"config_schema": ("context_schema", LangGraphDeprecatedSinceV10)},
        )
        context_schema = context_schema or old.get("context_schema")
    if kwargs:
        raise TypeError(f"create_react_agent() got unexpected keyword arguments: {kwargs}")
    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    if tool_calling not in ("native", "schema"):
        raise ValueError(f"tool_calling must be 'native' or 'schema', got {tool_calling!r}")
    if state_schema is not None:
        required = {"messages"} | (
            {"structured_response"} if response_format is not None else set()
        )
        missing = required - _schema_keys(state_schema)
        if missing:
            raise ValueError(f"Missing required key(s) {missing} in state_schema")
    if isinstance(model, str):
        from ironloop.models import init_model

        model = init_model(model)
    if is_model_function(model):
        model = DynamicModel(model)
    sync_model, async_model = hasattr(model, "invoke"), hasattr(model, "ainvoke")
    if not (sync_model or async_model):
        raise TypeError(
            f"model must have invoke(messages, tools=None, tool_choice=None); got {type(model).__name__}"
        )

    langchain_model = is_langchain_runnable(model)
    if langchain_model and tool_calling == "schema":
        raise ValueError("tool_calling='schema' is for ironloop models, not LangChain ones")
    settings = AgentSettings(model, name, prompt)
    if prompt is not None and not isinstance(prompt, str):
        settings.prompt  # noqa: B018 -- made now: a prompt of a wrong type raises here
    # The graph is compiled once per shape; this agent's model, prompt and name are its
    # own (see ironloop._shapes).
    shape: list[Any] = [tools] if isinstance(tools, ToolNode) else list(tools)
    shape += (
        response_format,
        pre_model_hook,
        post_model_hook,
        state_schema,
        checkpointer,
        store,
        context_schema,
    )
    flags = (
        sync_model,
        async_model,
        langchain_model,
        isinstance(model, DynamicModel),
        version,
        tool_calling,
        tuple(call_fields) if call_fields else (),
        () if prompt is None or isinstance(prompt, str) else _prompt_kwargs(prompt),
        names(interrupt_before),
        names(interrupt_after),
    )
    key = shape_key("create_react_agent", flags, shape)
    template = templates.get(key)
    if template is None:
        template = _react_template(
            settings,
            tools,
            response_format=response_format,
            pre_model_hook=pre_model_hook,
            post_model_hook=post_model_hook,
            state_schema=state_schema,
            context_schema=context_schema,
            checkpointer=checkpointer,
            store=store,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            version=version,
            tool_calling=tool_calling,
            call_fields=call_fields,
            prompt_kwargs=_prompt_kwargs(prompt),
        )
        templates.put(key, template, shape)
    graph, tool_list, builtin, tool_defs = template
    if langchain_model:
        from ironloop import _langchain

        settings.model = _langchain.agent_model(model, tool_list, builtin)
    elif isinstance(model, DynamicModel):
        settings.model = model.with_tools(tool_list, builtin)
    elif tool_calling == "native" and pre_model_hook is None:
        settings.native = _agent_model(model, tool_defs, prompt, name)
    agent = bind(graph, settings, name)
    if debug != agent.debug:  # LangGraph's `debug`: each run prints its updates and values
        agent.debug = debug
    return agent


def _react_template(
    first: AgentSettings,
    tools: Any,
    *,
    response_format: Any,
    pre_model_hook: Any,
    post_model_hook: Any,
    state_schema: Any,
    context_schema: Any,
    checkpointer: Any,
    store: Any,
    interrupt_before: Sequence[str] | None,
    interrupt_after: Sequence[str] | None,
    version: str,
    tool_calling: str,
    call_fields: Sequence[str] | None = None,
    prompt_kwargs: tuple[str, ...] = (),
) -> tuple[CompiledStateGraph, list[Any], list[dict[str, Any]], Any]:
    """The compiled graph of a ``create_react_agent`` shape, its tools, its provider
    tool dicts and the tools as the engine sends them (``None`` for a LangChain model). Its nodes call the model, prompt and name of the agent running it
    (``agent_var``; ``first``'s when the builder is compiled again by hand)."""
    model = first.model
    builtin: list[dict[str, Any]] = []
    if state_schema is None:
        state_schema = AgentStateWithStructuredResponse if response_format else AgentState
    if call_fields:
        if isinstance(tools, ToolNode):
            raise ValueError("call_fields needs the tools themselves, not a ToolNode")
        tools = agent_tools(list(tools), call_fields, _schema_keys(state_schema))
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        builtin = [t for t in tools if isinstance(t, dict)]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    if tool_node._runner() is not None:
        version = "v1"  # interceptors run every call of a message in one Python task
    tool_list = list(tool_node._tools.values())
    tool_dicts = [t.to_openai() for t in tool_list] + builtin or None
    langchain_model = is_langchain_runnable(model)
    tool_defs = None
    if langchain_model:
        tool_dicts = None  # bound to each agent's model (create_react_agent)
    else:
        try:
            tool_defs = _ToolDefs(tool_dicts)
        except TypeError:
            pass  # a tool the model refuses: its call raises, from Python, as before
    direct = {t.name for t in tool_list if t.return_direct}
    schema = state_schema
    if pre_model_hook is not None and "llm_input_messages" not in _schema_keys(schema):
        schema = with_llm_input_messages(schema)

    def input_state(state: Any) -> Any:
        """The state the prompt sees: ``messages`` replaced by the pre hook's
        ``llm_input_messages`` when it gave some."""
        if pre_model_hook is None:
            msgs = _get(state, "messages")
        else:
            msgs = _get(state, "llm_input_messages") or _get(state, "messages")
        if msgs is None:
            expected = (
                "'llm_input_messages' or 'messages' key" if pre_model_hook else "'messages' key"
            )
            raise ValueError(f"Expected input to call_model to have {expected}, but got {state}")
        if isinstance(state, dict):
            return {**state, "messages": msgs}
        return state.model_copy(update={"messages": msgs})

    def agent(state: Any, **kw: Any) -> dict[str, Any]:
        s = agent_var.get(first)
        model = s.model.resolve(state) if type(s.model) is DynamicModel else s.model
        msg = call_model(model, s.prompt(input_state(state), **kw), tool_dicts)
        return {"messages": [named(msg, s.name)]}

    async def aagent(state: Any, **kw: Any) -> dict[str, Any]:
        s = agent_var.get(first)
        model = await s.model.aresolve(state) if type(s.model) is DynamicModel else s.model
        messages = await s.aprompt(input_state(state), **kw)
        return {"messages": [named(await acall_model(model, messages, tool_dicts), s.name)]}

    if tool_calling == "schema":
        out_schema = type_schema(response_format)[0] if response_format is not None else None
        composed = compose_schema(tool_list, out_schema)

        def agent(state: Any, **kw: Any) -> dict[str, Any]:  # type: ignore[misc]
            done, output = _pending_schema_output(_get(state, "messages"))
            if done:
                return _schema_output_msg(output, None, response_format is not None)
            s = agent_var.get(first)
            resp = s.model.invoke(
                s.prompt(input_state(state), **kw), tools=None, response_format=composed
            )
            return _from_composed(_as_ai(resp), composed, response_format is not None)

        async def aagent(state: Any, **kw: Any) -> dict[str, Any]:  # type: ignore[misc]
            done, output = _pending_schema_output(_get(state, "messages"))
            if done:
                return _schema_output_msg(output, None, response_format is not None)
            s = agent_var.get(first)
            messages = await s.aprompt(input_state(state), **kw)
            resp = await s.model.ainvoke(messages, tools=None, response_format=composed)
            return _from_composed(_as_ai(resp), composed, response_format is not None)

    if prompt_kwargs:
        agent, aagent = _giving_prompt_kwargs(agent, aagent, prompt_kwargs)
    node: Any = agent if hasattr(model, "invoke") else aagent
    if tool_calling == "native" and pre_model_hook is None:
        # The engine runs this step itself when the run brings an ``_AgentModel``.
        node.__ironloop_model_node__ = True
    if hasattr(model, "invoke") and hasattr(model, "ainvoke"):
        agent.__ironloop_async__ = aagent  # type: ignore[attr-defined]

    # The pre hook's ``llm_input_messages`` is a key of the graph's state, not of what
    # it takes or returns (LangGraph keeps it in the agent node's input schema).
    io = (
        {}
        if schema is state_schema
        else {"input_schema": state_schema, "output_schema": state_schema}
    )
    g: StateGraph[Any, Any, Any, Any] = StateGraph(schema, context_schema=context_schema, **io)
    g.add_node("agent", node)
    entry = "agent"
    if pre_model_hook is not None:
        g.add_node("pre_model_hook", _as_node(pre_model_hook))
        g.add_edge("pre_model_hook", "agent")
        entry = "pre_model_hook"
    g.add_edge(START, entry)
    if post_model_hook is not None:
        g.add_node("post_model_hook", _as_node(post_model_hook))
        g.add_edge("agent", "post_model_hook")

    structured = response_format is not None and tool_calling == "native"
    if structured:
        fmt, fmt_prompt = response_format, None
        if isinstance(response_format, tuple):
            fmt_prompt, fmt = response_format

        def structured_input(state: Any) -> list[Any]:
            msgs = list(_get(state, "messages"))
            return [_messages.SystemMessage(content=fmt_prompt), *msgs] if fmt_prompt else msgs

        def generate_structured_response(state: Any) -> dict[str, Any]:
            msgs = structured_input(state)
            model = agent_var.get(first).model
            if type(model) is DynamicModel:
                model = model.resolve(state)
            if hasattr(model, "structured"):  # a LangChain model, tools bound
                return {"structured_response": model.structured(msgs, fmt)}
            return {"structured_response": model_structured(model, fmt, msgs)}

        async def agenerate_structured_response(state: Any) -> dict[str, Any]:
            msgs = structured_input(state)
            model = agent_var.get(first).model
            if type(model) is DynamicModel:
                model = await model.aresolve(state)
            if hasattr(model, "structured"):  # a LangChain model, tools bound
                return {"structured_response": await model.astructured(msgs, fmt)}
            return {"structured_response": await model_structured_async(model, fmt, msgs)}

        generate_structured_response.__ironloop_async__ = agenerate_structured_response  # type: ignore[attr-defined]
        g.add_node("generate_structured_response", generate_structured_response)
        g.add_edge("generate_structured_response", END)
    after = "generate_structured_response" if structured else END

    def compiled() -> tuple[CompiledStateGraph, list[Any], list[dict[str, Any]], Any]:
        graph = _compile(g, checkpointer, store, interrupt_before, interrupt_after, first.name)
        return graph, tool_list, builtin, tool_defs

    if not tool_list:
        g.add_edge("post_model_hook" if post_model_hook is not None else "agent", after)
        return compiled()

    if version == "v1" and post_model_hook is None and after == END:
        # The Rust router: no Python call to route.
        g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    elif post_model_hook is None:
        should_continue = after_model_router(
            "should_continue", after, after, per_call=version == "v2"
        )
        g.add_conditional_edges("agent", should_continue, ["tools", after])
    else:

        def should_continue(state: Any) -> Any:
            return "post_model_hook"

        g.add_conditional_edges("agent", should_continue, ["post_model_hook"])
        # The hook's own tool calls are run too: a Send per pending call.
        router = post_model_hook_router(entry, after)
        g.add_conditional_edges("post_model_hook", router, [entry, "tools", after])

    g.add_node("tools", tool_node)
    if direct:

        def route_tools(state: Any) -> str:
            return END if returned_direct(_get(state, "messages"), direct) else entry

        g.add_conditional_edges("tools", route_tools, [entry, END])
    else:
        g.add_edge("tools", entry)
    return compiled()


def _as_node(hook: Any) -> Any:
    """A hook as a graph node: a function as it is, a LangChain ``Runnable`` through
    its ``invoke`` / ``ainvoke``."""
    if is_langchain_runnable(hook):
        from ironloop import _langchain

        return _langchain.runnable_node(hook)
    if not callable(hook):
        raise TypeError(f"a model hook must be a function or a Runnable, got {type(hook).__name__}")
    return hook


def _compile(
    g: StateGraph,
    checkpointer: Any,
    store: Any,
    interrupt_before: Sequence[str] | None,
    interrupt_after: Sequence[str] | None,
    name: str | None,
) -> CompiledStateGraph:
    return g.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        name=name or "agent",
    )
