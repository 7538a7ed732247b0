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

from ironloop import END, START, Runtime, StateGraph, get_runtime


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


def test_a_dict_context_becomes_the_context_schema_as_in_langgraph() -> None:
    app = _ctx_graph().compile()
    assert app.invoke({"x": []}, context={"user": "ann"}) == {"x": ["param:ann", "call:ann"]}
    chunks = list(app.stream({"x": []}, context={"user": "bo"}))
    assert chunks == [{"p": {"x": ["param:bo"]}}, {"c": {"x": ["call:bo"]}}]
    # Without a context_schema a dict stays a dict.
    seen: list[Any] = []
    g = StateGraph(S)
    g.add_node("n", lambda s: seen.append(get_runtime().context) or {})
    g.add_edge(START, "n")
    g.compile().invoke({"x": []}, context={"user": "cy"})
    assert seen == [{"user": "cy"}]


def test_a_dict_context_becomes_a_pydantic_context_schema() -> None:
    from pydantic import BaseModel

    class PCtx(BaseModel):
        user: str
        tier: int = 1

    g = StateGraph(S, context_schema=PCtx)
    g.add_node("n", lambda s: {"x": [repr(get_runtime().context)]})
    g.add_edge(START, "n")
    assert g.compile().invoke({"x": []}, context={"user": "ann"}) == {
        "x": ["PCtx(user='ann', tier=1)"]
    }


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
    with pytest.raises(ValueError, match="version='v2' is not supported"):
        list(app.stream({"x": []}, version="v2"))
