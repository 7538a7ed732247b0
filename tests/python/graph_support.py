"""Schemas and graph builders shared by the graph tests, and `run` (invoke or ainvoke) for any."""

from __future__ import annotations

import asyncio
import itertools
import operator
from typing import Annotated, Any, TypedDict

from ironloop import END, START, MemorySaver, MessagesState, StateGraph, ToolNode
from ironloop.messages import AIMessage


class XS(TypedDict):
    x: int


class LogS(TypedDict, total=False):
    x: int
    log: Annotated[list[str], operator.add]


class ToolS(MessagesState, total=False):
    user_name: str


def thread_config(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def run(app: Any, how: str, *args: Any) -> Any:
    """``app.invoke(*args)``, or ``app.ainvoke(*args)`` on a fresh event loop."""
    if how == "invoke":
        return app.invoke(*args)
    assert how == "ainvoke", how
    return asyncio.run(app.ainvoke(*args))


def chain(*fns: Any, schema: Any = XS) -> StateGraph:
    """START -> n0 -> n1 -> ... -> END."""
    g = StateGraph(schema)
    names = [f"n{i}" for i in range(len(fns))]
    for n, f in zip(names, fns, strict=True):
        g.add_node(n, f)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g


def log_node(name: str) -> Any:
    """A node that appends its name to ``log``."""
    return lambda s: {"log": [name]}


def abc_graph(**compile_kw: Any) -> Any:
    """START -> a -> b -> c -> END, each node appending its name to ``log``, compiled
    with a ``MemorySaver``."""
    g = StateGraph(LogS)
    for n in ("a", "b", "c"):
        g.add_node(n, log_node(n))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    return g.compile(checkpointer=MemorySaver(), **compile_kw)


def parallel(a: Any, b: Any, schema: Any = LogS) -> Any:
    """START -> a, b (one super-step) -> END, compiled."""
    g = StateGraph(schema)
    g.add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    return g.compile()


def ai_with_calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    """One AIMessage whose tool calls have the ids ``call0, call1, ...``."""
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"call{i}"} for i, (n, a) in enumerate(calls)],
    )


def tool_graph(tools: list[Any], ai: AIMessage, schema: Any = ToolS, **compile_kw: Any) -> Any:
    """START -> agent (answers ``ai``) -> tools (a ToolNode) -> END, compiled."""
    g = StateGraph(schema)
    g.add_node("agent", lambda s: {"messages": [ai]})
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "agent").add_edge("agent", "tools").add_edge("tools", END)
    return g.compile(**compile_kw)
