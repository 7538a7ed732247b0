"""``retry_policy`` on every kind of node, by one retry loop (``ironloop._retry``, whose
waits are the core's ``_Backoff``): a function node, a subgraph (run again from its
start, as LangGraph's), a ``ToolNode`` (all its calls again) and a LangChain
``Runnable``, given to ``add_node`` or as ``set_node_defaults``'s, sync and async."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from ironloop import MemorySaver
from ironloop.graph import END, START, MessagesState, StateGraph
from ironloop.prebuilt import ToolNode
from ironloop.types import RetryPolicy

FAST = RetryPolicy(initial_interval=0.001, jitter=False, max_attempts=3)


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _one_node_graph(schema: Any, node: Any, *, default: bool) -> StateGraph[Any]:
    """``node`` alone, its policy given to ``add_node`` or as the graph's default."""
    g: StateGraph[Any] = StateGraph(schema)
    if default:
        g.set_node_defaults(retry_policy=FAST)
        g.add_node("n", node)
    else:
        g.add_node("n", node, retry_policy=FAST)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    return g


def _run(graph: Any, value: Any, mode: str, config: Any = None) -> Any:
    if mode == "sync":
        return graph.invoke(value, config)
    return asyncio.run(graph.ainvoke(value, config))


def _flaky_subgraph(failures: int) -> tuple[Any, dict[str, int]]:
    """A subgraph ``a -> b`` whose ``b`` fails ``failures`` times (a connection error,
    which the default ``retry_on`` retries)."""
    calls = {"a": 0, "b": 0}

    def a(state: Log) -> Log:
        calls["a"] += 1
        return {"log": ["a"]}

    def b(state: Log) -> Log:
        calls["b"] += 1
        if calls["b"] <= failures:
            raise ConnectionError(f"down {calls['b']}")
        return {"log": ["b"]}

    sg: StateGraph[Log] = StateGraph(Log)
    sg.add_node("a", a)
    sg.add_node("b", b)
    sg.add_edge(START, "a")
    sg.add_edge("a", "b")
    sg.add_edge("b", END)
    return sg.compile(), calls


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("default", [False, True])
@pytest.mark.parametrize("saver", [False, True])
def test_a_subgraph_node_runs_again_from_its_start(mode: str, default: bool, saver: bool) -> None:
    sub, calls = _flaky_subgraph(2)
    graph = _one_node_graph(Log, sub, default=default).compile(
        checkpointer=MemorySaver() if saver else None
    )
    out = _run(graph, {"log": []}, mode, {"configurable": {"thread_id": "t"}})
    # As LangGraph 1.2: three attempts, each from the subgraph's start; only the last
    # attempt's writes reach the parent.
    assert out == {"log": ["a", "b"]}
    assert calls == {"a": 3, "b": 3}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_subgraph_node_fails_after_its_attempts(mode: str) -> None:
    sub, calls = _flaky_subgraph(5)
    graph = _one_node_graph(Log, sub, default=False).compile()
    with pytest.raises(ConnectionError, match="down 3"):
        _run(graph, {"log": []}, mode)
    assert calls["b"] == 3


def _flaky_tool(failures: int) -> tuple[Any, dict[str, int]]:
    calls = {"n": 0}

    @tool
    def flaky(x: int) -> str:
        """Answers after failing ``failures`` times."""
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError(f"down {calls['n']}")
        return f"ok {x}"

    return flaky, calls


CALL = AIMessage("", tool_calls=[{"name": "flaky", "args": {"x": 1}, "id": "c1"}])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("default", [False, True])
def test_a_tool_node_runs_its_calls_again(mode: str, default: bool) -> None:
    flaky, calls = _flaky_tool(2)
    node = ToolNode([flaky], handle_tool_errors=False)
    graph = _one_node_graph(MessagesState, node, default=default).compile()
    out = _run(graph, {"messages": [CALL]}, mode)
    assert [m.content for m in out["messages"]] == ["", "ok 1"]
    assert out["messages"][-1].tool_call_id == "c1"
    assert calls["n"] == 3


def test_a_tool_node_fails_after_its_attempts_and_is_still_a_tool_node() -> None:
    flaky, calls = _flaky_tool(5)
    node = ToolNode([flaky], handle_tool_errors=False)
    builder = _one_node_graph(MessagesState, node, default=False)
    with pytest.raises(ConnectionError, match="down 3"):
        builder.compile().invoke({"messages": [CALL]})
    assert calls["n"] == 3
    # The builder keeps the node as given (drawings, `get_state` see a ToolNode), and
    # the node alone still runs natively.
    assert builder.nodes["n"].runnable is node
    calls["n"] = 5
    assert node.invoke({"messages": [CALL]})["messages"][0].content == "ok 1"


def test_a_tool_node_error_turned_into_a_message_is_not_retried() -> None:
    flaky, calls = _flaky_tool(1)
    graph = _one_node_graph(MessagesState, ToolNode([flaky]), default=False).compile()
    out = graph.invoke({"messages": [CALL]})
    assert calls["n"] == 1
    assert "down 1" in out["messages"][-1].content


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_runnable_node_is_retried_in_both_forms(mode: str) -> None:
    calls = {"n": 0}

    def body(state: Log) -> Log:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise ConnectionError("down")
        return {"log": ["r"]}

    async def abody(state: Log) -> Log:
        return body(state)

    graph = _one_node_graph(Log, RunnableLambda(body, afunc=abody), default=False).compile()
    assert _run(graph, {"log": []}, mode) == {"log": ["r"]}
    assert calls["n"] == 3


def test_a_wrong_policy_on_a_subgraph_or_tool_node_says_what_it_takes() -> None:
    sub, _ = _flaky_subgraph(0)
    flaky, _ = _flaky_tool(0)
    for node in (sub, ToolNode([flaky])):
        with pytest.raises(TypeError, match="node 'n': retry_policy takes RetryPolicy objects"):
            StateGraph(MessagesState).add_node("n", node, retry_policy="twice")
