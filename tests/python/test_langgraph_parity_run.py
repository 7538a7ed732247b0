"""Run semantics as LangGraph 1.2 has them (issue: LangGraph parity, run semantics).

Each expectation is what the same program gives under LangGraph 1.2.
"""

from __future__ import annotations

import asyncio
import operator
import time
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import (
    END,
    START,
    InjectedStore,
    InMemoryStore,
    MessagesState,
    Runtime,
    StateGraph,
    ToolNode,
    get_runtime,
    tool,
)
from ironloop.messages import AIMessage


class S(TypedDict):
    x: Annotated[list, operator.add]


def test_a_conditional_edge_sees_only_its_own_nodes_writes() -> None:
    seen: list[list[str]] = []

    def route(s: S) -> str:
        seen.append(list(s["x"]))
        return END

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_conditional_edges("a", route, [END])
    assert g.compile().invoke({"x": []}) == {"x": ["a", "b"]}
    assert seen == [["a"]]


async def test_an_async_failure_cancels_its_siblings() -> None:
    cancelled = asyncio.Event()

    async def fail(s: S) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    async def long(s: S) -> dict[str, Any]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"x": ["long"]}

    g = StateGraph(S)
    g.add_node("fail", fail)
    g.add_node("long", long)
    g.add_edge(START, "fail")
    g.add_edge(START, "long")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="boom") as ei:
        await g.compile().ainvoke({"x": []})
    assert time.perf_counter() - t0 < 2, "the run waited for the sibling instead of cancelling it"
    assert any(n.startswith("During task with name 'fail'") for n in ei.value.__notes__)
    await asyncio.wait_for(cancelled.wait(), 2)


@dataclass
class Ctx:
    user: str


def _ctx_graph() -> Any:
    def with_param(s: S, runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"x": [f"param:{runtime.context.user}"]}

    async def with_call(s: S) -> dict[str, Any]:
        return {"x": [f"call:{get_runtime(Ctx).context.user}"]}

    g = StateGraph(S, context_schema=Ctx)
    g.add_node("p", with_param)
    g.add_node("c", with_call)
    g.add_edge(START, "p")
    g.add_edge("p", "c")
    return g


def test_context_reaches_nodes_through_runtime_and_get_runtime() -> None:
    app = _ctx_graph().compile()
    assert app.invoke({"x": []}, context=Ctx(user="ann")) == {"x": ["param:ann", "call:ann"]}
    assert asyncio.run(app.ainvoke({"x": []}, context=Ctx(user="bo"))) == {
        "x": ["param:bo", "call:bo"]
    }
    chunks = list(app.stream({"x": []}, context=Ctx(user="cy")))
    assert chunks == [{"p": {"x": ["param:cy"]}}, {"c": {"x": ["call:cy"]}}]


def test_a_subgraph_sees_its_parents_context() -> None:
    inner = _ctx_graph().compile()
    outer = StateGraph(S, context_schema=Ctx)
    outer.add_node("inner", inner)
    outer.add_edge(START, "inner")
    out = outer.compile().invoke({"x": []}, context=Ctx(user="dee"))
    assert out == {"x": ["param:dee", "call:dee"]}


def test_runtime_carries_the_store_and_get_runtime_outside_a_run_raises() -> None:
    from ironloop import InMemoryStore

    store = InMemoryStore()

    def node(s: S, runtime: Runtime[None]) -> dict[str, Any]:
        return {"x": [runtime.store is store, runtime.context]}

    g = StateGraph(S)
    g.add_node("n", node)
    g.add_edge(START, "n")
    assert g.compile(store=store).invoke({"x": []}) == {"x": [True, None]}
    with pytest.raises(RuntimeError, match="outside of a graph run"):
        get_runtime()


async def test_sqlite_saver_as_an_async_context_manager(tmp_path: Any) -> None:
    from ironloop import SqliteSaver

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_edge(START, "a")
    path = str(tmp_path / "async.db")
    async with SqliteSaver(path) as saver:
        app = g.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t"}}
        assert await app.ainvoke({"x": []}, cfg) == {"x": ["a"]}
    with pytest.raises(Exception, match="closed"):
        app.invoke({"x": []}, cfg)
    with SqliteSaver(path) as again:
        assert g.compile(checkpointer=again).get_state(cfg).values == {"x": ["a"]}


def test_durability_and_version_are_taken_or_refused_clearly() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_edge(START, "a")
    app = g.compile()
    for d in ("sync", "async"):
        assert app.invoke({"x": []}, durability=d) == {"x": ["a"]}
    assert list(app.stream({"x": []}, version="v1")) == [{"a": {"x": ["a"]}}]
    with pytest.raises(ValueError, match="durability='exit' is not supported"):
        app.invoke({"x": []}, durability="exit")
    with pytest.raises(ValueError, match="durability must be"):
        app.invoke({"x": []}, durability="later")
    with pytest.raises(ValueError, match="version must be 'v1' or 'v2', got 'v3'"):
        list(app.stream({"x": []}, version="v3"))


def _store_tool_graph(**compile_kw: Any) -> Any:
    @tool
    def recall(key: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Recall a fact."""
        item = store.get(("facts",), key)
        return item.value["text"] if item else "nothing"

    g = StateGraph(MessagesState)
    g.add_node("tools", ToolNode([recall]))
    g.add_edge(START, "tools")
    ai = AIMessage("", tool_calls=[{"name": "recall", "args": {"key": "k"}, "id": "c1"}])
    return g.compile(**compile_kw), {"messages": [ai]}


NO_STORE = (
    "Cannot inject store into tools with InjectedStore annotations - please compile your "
    "graph with a store."
)


def test_a_tool_that_injects_the_store_needs_one() -> None:
    app, inp = _store_tool_graph()
    # LangGraph raises ValueError (not a ToolMessage for the model, not None injected).
    with pytest.raises(ValueError) as e:
        app.invoke(inp)
    assert str(e.value) == NO_STORE
    with pytest.raises(ValueError, match="compile your graph with a store"):
        asyncio.run(app.ainvoke(inp))

    store = InMemoryStore()
    store.put(("facts",), "k", {"text": "remembered"})
    app, inp = _store_tool_graph(store=store)
    assert app.invoke(inp)["messages"][-1].content == "remembered"
