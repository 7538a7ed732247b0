"""The execution paths of ``test_guarantees.py``: one way to build each shape that runs
tool calls (a ``ToolNode`` alone, with and without interceptors, a graph of nodes,
``create_react_agent`` v1 and v2 and with a ``ToolNode(wrap_tool_call=)``,
``create_agent`` with and without a ``wrap_tool_call`` hook) and one way to run it
under each entry point (``invoke``, ``ainvoke``, ``stream``, ``astream``), shared with
the child processes the SIGKILL cases start (``guarantee_child.py``)."""

from __future__ import annotations

import asyncio
import operator
import os
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from ironloop import END, START, StateGraph, ToolNode, create_agent, create_react_agent
from ironloop.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ironloop.middleware import AgentMiddleware
from ironloop.models import ScriptedChatModel

# Shapes that run a model's tool calls.
AGENTS = ("react_v1", "react_v2", "react_wrap", "create_agent", "create_agent_wrap")
MODES = ("invoke", "ainvoke", "stream", "astream")
SYNC_MODES = ("invoke", "stream")
ASYNC_MODES = ("ainvoke", "astream")


def call(name: str, id_: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id_}


def scripted(calls: list[dict[str, Any]], log: Callable[[str], None] | None = None) -> Any:
    """A model that asks for ``calls`` once, then answers ``done``. ``log`` is told
    ``model`` when the first answer is made (the SIGKILL cases' side effect)."""

    def model(messages: list[Any]) -> Any:
        if messages[-1].type == "human":
            if log is not None:
                log("model")
            return {"content": "", "tool_calls": calls}
        return "done"

    return ScriptedChatModel(model)


class PassThrough(AgentMiddleware):
    """A ``wrap_tool_call`` hook that only hands each call on: the tools node is then
    the Python node that runs the calls through the hooks."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


def agent(
    shape: str,
    tools: list[Any],
    calls: list[dict[str, Any]],
    checkpointer: Any = None,
    log: Callable[[str], None] | None = None,
) -> Any:
    model = scripted(calls, log)
    if shape == "react_v1":
        return create_react_agent(model, tools, checkpointer=checkpointer, version="v1")
    if shape == "react_v2":
        return create_react_agent(model, tools, checkpointer=checkpointer, version="v2")
    if shape == "react_wrap":
        return create_react_agent(model, toolnode(tools, wrapped=True), checkpointer=checkpointer)
    if shape == "create_agent":
        return create_agent(model, tools, checkpointer=checkpointer)
    assert shape == "create_agent_wrap", shape
    return create_agent(model, tools, middleware=[PassThrough()], checkpointer=checkpointer)


def ask(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A ToolNode's input: one AI message with ``calls``."""
    return {"messages": [AIMessage(content="", tool_calls=calls)]}


async def _alast(app: Any, inp: Any, config: Any) -> Any:
    last = None
    async for chunk in app.astream(inp, config, stream_mode="values"):
        last = chunk
    return last


def run(app: Any, mode: str, inp: Any, config: Any = None) -> Any:
    """The final state (a ToolNode's output) under ``mode``."""
    if mode == "invoke":
        return app.invoke(inp, config)
    if mode == "ainvoke":
        return asyncio.run(app.ainvoke(inp, config))
    if mode == "stream":
        last = None
        for chunk in app.stream(inp, config, stream_mode="values"):
            last = chunk
        return last
    assert mode == "astream", mode
    return asyncio.run(_alast(app, inp, config))


async def arun(app: Any, mode: str, inp: Any, config: Any = None) -> Any:
    """``run`` for the async modes, inside a running loop."""
    if mode == "ainvoke":
        return await app.ainvoke(inp, config)
    assert mode == "astream", mode
    return await _alast(app, inp, config)


def tool_messages(out: Any) -> list[ToolMessage]:
    msgs: list[BaseMessage] = out["messages"] if isinstance(out, dict) else out
    return [m for m in msgs if isinstance(m, ToolMessage)]


def _hand_on(request: Any, execute: Any) -> Any:
    return execute(request)


async def _ahand_on(request: Any, execute: Any) -> Any:
    return await execute(request)


def toolnode(tools: list[Any], wrapped: bool = False) -> ToolNode:
    """A ``ToolNode``; ``wrapped``: with interceptors that only hand each call on (its
    calls then go one by one through the Python interceptor runner)."""
    if wrapped:
        return ToolNode(tools, wrap_tool_call=_hand_on, awrap_tool_call=_ahand_on)
    return ToolNode(tools)


def human(text: str = "go") -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text)]}


class Effects:
    """Durable side effects: one line ``<key>`` appended (and fsynced) per effect, so a
    parent process can see which work finished before it killed the child."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, key: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{key}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def count(self, key: str) -> int:
        try:
            with open(self.path) as f:
                return sum(1 for line in f if line.strip() == key)
        except FileNotFoundError:
            return 0


class Fan(TypedDict):
    ran: Annotated[list[str], operator.add]


def fan_graph(effects: Effects, slow: float, checkpointer: Any) -> Any:
    """START -> [fast, slow] -> END: a step of a 50 ms task beside a slow one."""

    def fast(s: Fan) -> dict[str, Any]:
        time.sleep(0.05)
        effects("fast")
        return {"ran": ["fast"]}

    def slow_node(s: Fan) -> dict[str, Any]:
        time.sleep(slow)
        effects("slow")
        return {"ran": ["slow"]}

    g = StateGraph(Fan)
    g.add_node("fast", fast)
    g.add_node("slow", slow_node)
    g.add_edge(START, "fast")
    g.add_edge(START, "slow")
    g.add_edge("fast", END)
    g.add_edge("slow", END)
    return g.compile(checkpointer=checkpointer)


def durable_app(shape: str, effects: Effects, slow: float, checkpointer: Any) -> Any:
    """The shape of a SIGKILL case. ``graph``: ``fan_graph``. An agent: the model asks
    for a 50 ms tool and a slow one; the key that must not run twice is ``fast`` for
    the shapes that run each call as a task of its own (``react_v2``,
    ``create_agent``), ``model`` for those that run all calls in one task (the model's
    task is then the finished one)."""
    from ironloop import tool

    if shape == "graph":
        return fan_graph(effects, slow, checkpointer)

    @tool
    def quick(n: int) -> str:
        """Answers after 50 ms."""
        time.sleep(0.05)
        effects("fast")
        return f"quick {n}"

    @tool
    def lengthy(n: int) -> str:
        """Answers after a while."""
        time.sleep(slow)
        effects("slow")
        return f"lengthy {n}"

    calls = [call("quick", "c1", n=1), call("lengthy", "c2", n=2)]
    return agent(shape, [quick, lengthy], calls, checkpointer, log=effects)


def finished_key(shape: str) -> str:
    """What ``durable_app`` logs when the task that must not run again finishes."""
    return "model" if shape in ("react_v1", "react_wrap", "create_agent_wrap") else "fast"


def durable_input(shape: str) -> Any:
    return {"ran": []} if shape == "graph" else human()
