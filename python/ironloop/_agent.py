"""``create_react_agent``: a model that calls tools until it answers."""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Callable, TypedDict

from ironloop._constants import END, START
from ironloop._ironloop import (
    AIMessage,
    BaseMessage,
    NativeTool,
    SystemMessage,
    _coerce_message,
    _json_schema_errors,
    tools_condition,
)
from ironloop._runtime import task_var
from ironloop._schema import type_schema
from ironloop._tool import Tool, compose_schema
from ironloop._toolnode import ToolNode
from ironloop.errors import ModelError
from ironloop.graph import CompiledStateGraph, StateGraph, add_messages

__all__ = ["AgentState", "create_react_agent"]


class AgentState(TypedDict):
    """The state of a ReAct agent: its conversation."""

    messages: Annotated[list[BaseMessage], add_messages]


class AgentStateWithStructuredResponse(AgentState, total=False):
    structured_response: Any


def _as_ai(resp: Any) -> AIMessage:
    if isinstance(resp, AIMessage):
        return resp
    if isinstance(resp, dict):
        d = dict(resp)
        d.setdefault("role", "assistant")
        msg = _coerce_message(d)
        if isinstance(msg, AIMessage):
            return msg
    if isinstance(resp, str):
        return AIMessage(content=resp)
    raise ModelError(
        f"the model returned {type(resp).__name__}: a model's invoke() must return an "
        "AIMessage or a {'role': 'assistant', ...} dict"
    )


def _merge_chunks(chunks: list[AIMessage]) -> AIMessage:
    """One message from streamed chunks: the text joined, the tool calls collected."""
    if not chunks:
        raise ModelError("the model's stream ended without any chunk")
    calls = [dict(c) for ch in chunks for c in ch.tool_calls]
    invalid = [dict(c) for ch in chunks for c in ch.invalid_tool_calls]
    usage = next((ch.usage_metadata for ch in reversed(chunks) if ch.usage_metadata), None)
    return AIMessage(
        content="".join(ch.text for ch in chunks),
        tool_calls=calls or None,
        invalid_tool_calls=invalid or None,
        usage_metadata=usage,
        id=chunks[0].id,
    )


def _from_composed(resp: AIMessage, schema: dict[str, Any], structured: bool) -> dict[str, Any]:
    """The agent's step from a ``{"calls", "output"}`` answer."""
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
    if calls:
        tool_calls = [
            {"name": c["name"], "args": c.get("args", {}), "id": f"call_{uuid.uuid4().hex[:24]}"}
            for c in calls
        ]
        return {"messages": [AIMessage(content="", tool_calls=tool_calls, id=resp.id)]}
    output = value.get("output")
    content = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    update: dict[str, Any] = {"messages": [AIMessage(content=content, id=resp.id)]}
    if structured and not isinstance(output, str):
        update["structured_response"] = output
    return update


def _accepts(fn: Any, name: str) -> bool:
    """Whether ``fn`` takes a keyword argument ``name`` (or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _structured(model: Any, fmt: Any, messages: list[BaseMessage]) -> Any:
    schema, convert = type_schema(fmt)
    if _accepts(model.invoke, "response_format"):
        resp = model.invoke(messages, tools=None, response_format=schema)
    else:
        # A model object without structured output: ask plainly, validate the JSON.
        resp = model.invoke(messages)
    text = _as_ai(resp).text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ModelError(f"the structured response is not JSON ({e}): {text[:200]!r}") from e
    errors = _json_schema_errors(schema, value)
    if errors:
        raise ModelError("the structured response does not match the schema: " + "; ".join(errors))
    return convert(value) if convert else value


def create_react_agent(
    model: Any,
    tools: Sequence[Tool | NativeTool | Callable[..., Any]] | ToolNode,
    *,
    prompt: str | SystemMessage | Callable[[Any], list[Any]] | None = None,
    response_format: Any = None,
    state_schema: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    name: str | None = None,
    debug: bool = False,
    tool_calling: str = "native",
    **kwargs: Any,
) -> CompiledStateGraph:
    """A graph with nodes ``"agent"`` (calls the model) and ``"tools"`` (runs its tool
    calls in parallel), looping until the model answers without tool calls.

    Every tool failure reaches the model as an error ``ToolMessage`` so it can correct
    itself. A tool made with ``return_direct=True`` ends the run with its result.

    ``tool_calling="schema"`` is for models without native tool calling: the model is
    asked for one JSON object matching ``compose_schema(tools, ...)`` —
    ``{"calls": [...], "output": ...}`` — through ``response_format=``; its calls run
    like native ones and ``output`` is the answer.

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
        >>> agent = create_react_agent(model, [add])
        >>> agent.invoke({"messages": [("user", "2+3?")]})["messages"][-1].content
        '5'
    """
    if not (hasattr(model, "invoke") or hasattr(model, "ainvoke")):
        raise TypeError(
            f"model must have invoke(messages, tools=None, tool_choice=None); got {type(model).__name__}"
        )
    tool_node = tools if isinstance(tools, ToolNode) else ToolNode(list(tools))
    tool_list = list(tool_node.tools_by_name.values())
    tool_dicts = [t.to_openai() for t in tool_list] or None
    direct = {t.name for t in tool_list if t.return_direct}
    schema = state_schema or (AgentStateWithStructuredResponse if response_format else AgentState)

    def model_input(state: Any) -> list[Any]:
        msgs = state["messages"] if isinstance(state, dict) else state.messages
        if prompt is None:
            return list(msgs)
        if isinstance(prompt, str):
            return [SystemMessage(content=prompt), *msgs]
        if isinstance(prompt, SystemMessage):
            return [prompt, *msgs]
        if callable(prompt):
            return list(prompt(state))
        raise TypeError(f"prompt must be a str, a SystemMessage or a function, got {prompt!r}")

    def agent(state: Any) -> dict[str, Any]:
        scratch = task_var.get(None)
        if scratch is not None and scratch.streams_messages and hasattr(model, "stream"):
            # stream_mode="messages": token chunks go out as they arrive.
            chunks = []
            for chunk in model.stream(model_input(state), tools=tool_dicts):
                chunk = _as_ai(chunk)
                scratch.write_message(chunk)
                chunks.append(chunk)
            return {"messages": [_merge_chunks(chunks)]}
        return {"messages": [_as_ai(model.invoke(model_input(state), tools=tool_dicts))]}

    async def aagent(state: Any) -> dict[str, Any]:
        scratch = task_var.get(None)
        if scratch is not None and scratch.streams_messages and hasattr(model, "astream"):
            chunks = []
            async for chunk in model.astream(model_input(state), tools=tool_dicts):
                chunk = _as_ai(chunk)
                scratch.write_message(chunk)
                chunks.append(chunk)
            return {"messages": [_merge_chunks(chunks)]}
        resp = await model.ainvoke(model_input(state), tools=tool_dicts)
        return {"messages": [_as_ai(resp)]}

    if tool_calling not in ("native", "schema"):
        raise ValueError(f"tool_calling must be 'native' or 'schema', got {tool_calling!r}")
    if tool_calling == "schema":
        out_schema = type_schema(response_format)[0] if response_format is not None else None
        composed = compose_schema(tool_list, out_schema)

        def agent(state: Any) -> dict[str, Any]:  # type: ignore[misc]
            resp = model.invoke(model_input(state), tools=None, response_format=composed)
            return _from_composed(_as_ai(resp), composed, response_format is not None)

        async def aagent(state: Any) -> dict[str, Any]:  # type: ignore[misc]
            resp = await model.ainvoke(model_input(state), tools=None, response_format=composed)
            return _from_composed(_as_ai(resp), composed, response_format is not None)

    node: Any = agent if hasattr(model, "invoke") else aagent
    if hasattr(model, "invoke") and hasattr(model, "ainvoke"):
        agent.__ironloop_async__ = aagent  # type: ignore[attr-defined]

    g = StateGraph(schema)
    g.add_node("agent", node)
    g.add_edge(START, "agent")
    after_agent = END
    if response_format is not None and tool_calling == "native":

        def generate_structured_response(state: Any) -> dict[str, Any]:
            return {"structured_response": _structured(model, response_format, model_input(state))}

        g.add_node("generate_structured_response", generate_structured_response)
        g.add_edge("generate_structured_response", END)
        after_agent = "generate_structured_response"
    if tool_list:
        g.add_node("tools", tool_node)
        if after_agent == END:
            g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
        else:

            def route_agent(state: Any) -> str:
                last = state["messages"][-1]
                return "tools" if getattr(last, "tool_calls", None) else after_agent

            g.add_conditional_edges("agent", route_agent, ["tools", after_agent])
        if direct:

            def route_tools(state: Any) -> str:
                for m in reversed(state["messages"]):
                    if m.type != "tool":
                        break
                    if m.name in direct and m.status == "success":
                        return END
                return "agent"

            g.add_conditional_edges("tools", route_tools, ["agent", END])
        else:
            g.add_edge("tools", "agent")
    else:
        g.add_edge("agent", after_agent)
    return g.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        name=name or "agent",
    )
