"""Sync entry points and their async twins that share one parameter list
(``ironloop._params.params_of``): both show the list (``inspect.signature``, so
``help()`` and editors), take the same arguments, and refuse the same wrong ones. Also
``with`` / ``async with`` shared by the closing objects, and the v1-access warnings of
``GraphOutput``, shown at the caller's line."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import sqlite3
import sys
import warnings
from pathlib import Path
from typing import Any, TypedDict

import pytest

from ironloop.checkpoint import MemorySaver
from ironloop.errors import StoreError
from ironloop.graph import END, START, StateGraph
from ironloop.mcp import McpToolset
from ironloop.store import (
    AsyncPostgresStore,
    BaseStore,
    InMemoryStore,
    PostgresStore,
    SqliteStore,
)
from ironloop.types import GraphOutput

PROGRAM = Path(__file__).resolve().parents[1] / "typing" / "twin_entry_points.py"


class State(TypedDict):
    n: int


def _graph() -> Any:
    g = StateGraph(State)
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    return g.compile(checkpointer=MemorySaver())


def _params(fn: Any) -> list[tuple[str, Any, Any]]:
    """A signature without its return annotation: what a caller may pass."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize(
    ("sync", "twin"),
    [
        ("invoke", "ainvoke"),
        ("stream", "astream"),
        ("get_state_history", "aget_state_history"),
        ("update_state", "aupdate_state"),
    ],
)
def test_a_graph_entry_point_and_its_twin_show_one_parameter_list(sync: str, twin: str) -> None:
    graph = _graph()
    assert _params(getattr(graph, sync)) == _params(getattr(graph, twin))
    assert _params(getattr(graph, sync))[0][0] != "self"  # bound: self is not shown


def test_invoke_and_stream_show_langgraphs_keywords_and_defaults() -> None:
    graph = _graph()
    invoke = inspect.signature(graph.invoke).parameters
    stream = inspect.signature(graph.stream).parameters
    assert list(invoke)[:2] == ["input", "config"]
    assert invoke["stream_mode"].default == "values"
    assert stream["stream_mode"].default == "updates"
    assert stream["subgraphs"].default is False
    for name in ("context", "durability", "version", "interrupt_before", "interrupt_after"):
        assert invoke[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert stream[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(graph.invoke).return_annotation == "Any"
    assert inspect.signature(graph.astream).return_annotation == "AsyncIterator[Any]"


def test_the_twins_take_the_same_arguments() -> None:
    graph = _graph()
    cfg = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 1}, cfg) == {"n": 2}
    assert asyncio.run(graph.ainvoke(input={"n": 5}, config=cfg, durability="sync")) == {"n": 6}
    other = {"configurable": {"thread_id": "s"}}
    assert list(graph.stream({"n": 1}, other, stream_mode="values")) == [{"n": 1}, {"n": 2}]

    async def streamed() -> list[Any]:
        return [c async for c in graph.astream({"n": 1}, other, stream_mode=["values"])]

    assert asyncio.run(streamed()) == [("values", {"n": 1}), ("values", {"n": 2})]
    new = asyncio.run(graph.aupdate_state(cfg, {"n": 40}, as_node="inc"))
    assert graph.get_state(new).values == {"n": 40}

    async def history() -> list[Any]:
        return [s async for s in graph.aget_state_history(cfg, limit=2)]

    assert [s.values for s in asyncio.run(history())] == [{"n": 40}, {"n": 6}]


def test_the_twins_refuse_a_missing_input_naming_it() -> None:
    graph = _graph()
    with pytest.raises(TypeError, match="'input'"):
        graph.invoke()
    with pytest.raises(TypeError, match="'input'"):
        asyncio.run(graph.ainvoke())
    with pytest.raises(TypeError, match="'input'"):
        graph.stream(config={})


@pytest.mark.parametrize(
    ("sync", "twin"),
    [("search", "asearch"), ("put", "aput"), ("list_namespaces", "alist_namespaces")],
)
def test_a_stores_one_op_forms_show_langgraphs_parameters(sync: str, twin: str) -> None:
    store = InMemoryStore()
    assert _params(getattr(store, sync)) == _params(getattr(store, twin))
    assert _params(getattr(BaseStore, sync)) == _params(getattr(BaseStore, twin))


def test_store_signatures_are_langgraphs() -> None:
    kw = inspect.Parameter.KEYWORD_ONLY
    search = inspect.signature(InMemoryStore().search).parameters
    assert search["namespace_prefix"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert [(n, p.default) for n, p in search.items() if p.kind is kw] == [
        ("query", None),
        ("filter", None),
        ("limit", 10),
        ("offset", 0),
        ("refresh_ttl", None),
    ]
    put = inspect.signature(InMemoryStore().put).parameters
    assert list(put) == ["namespace", "key", "value", "index", "ttl"]
    assert put["ttl"].kind is kw
    listing = inspect.signature(InMemoryStore().list_namespaces).parameters
    assert [(n, p.default) for n, p in listing.items()] == [
        ("prefix", None),
        ("suffix", None),
        ("max_depth", None),
        ("limit", 100),
        ("offset", 0),
    ]
    opened = _params(PostgresStore.from_conn_string)
    assert opened == _params(AsyncPostgresStore.from_conn_string)
    assert [p[0] for p in opened] == ["conn_string", "pipeline", "pool_config", "index", "ttl"]


def test_a_stores_twins_do_the_same() -> None:
    store = InMemoryStore()
    store.put(("a", "b"), "k", {"x": 1})
    asyncio.run(store.aput(("a", "c"), "k", {"x": 2}, None))
    assert [i.value for i in store.search(("a",), filter={"x": 2})] == [{"x": 2}]
    assert len(asyncio.run(store.asearch(("a",), limit=1, offset=1))) == 1
    assert len(asyncio.run(store.asearch(("a",), offset=2))) == 0
    assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]
    assert asyncio.run(store.alist_namespaces(suffix=("c",))) == [("a", "c")]
    with pytest.raises(TypeError, match="'namespace_prefix'"):
        store.search()


def test_mcp_stdio_and_astdio_show_one_parameter_list() -> None:
    params = _params(McpToolset.stdio)
    assert params == _params(McpToolset.astdio)
    assert [p[0] for p in params] == ["command", "args", "env", "cwd", "options"]


def test_leaving_with_or_async_with_closes_a_store(tmp_path: Path) -> None:
    async def use() -> SqliteStore:
        async with SqliteStore(sqlite3.connect(tmp_path / "a.db")) as store:
            assert isinstance(store, SqliteStore)
            store.put(("n",), "k", {"v": 1})
        return store

    store = asyncio.run(use())
    with pytest.raises(StoreError, match="closed"):
        store.get(("n",), "k")
    with SqliteStore(sqlite3.connect(tmp_path / "b.db")) as other:
        other.put(("n",), "k", {"v": 1})
    with pytest.raises(StoreError, match="closed"):
        other.get(("n",), "k")


def test_graph_output_v1_access_warns_at_the_callers_line() -> None:
    out = GraphOutput({"x": 1})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        assert out["x"] == 1 and "x" in out
    assert [str(w.message).split(" is ")[0] for w in seen] == [
        "Accessing GraphOutput via `result[key]`",
        "Accessing GraphOutput via `key in result`",
    ]
    assert {(w.filename, w.lineno) for w in seen} == {(__file__, line)}


def test_the_typed_program_runs() -> None:
    spec = importlib.util.spec_from_file_location("twin_entry_points", PROGRAM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main() == {"invoke": 2, "ainvoke": 3, "searched": 1, "tool": "add"}


def test_a_tool_nodes_twins_show_one_parameter_list_and_take_the_same_arguments() -> None:
    from ironloop import ToolNode, tool
    from ironloop.messages import AIMessage

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    node = ToolNode([add])
    assert _params(node.invoke) == _params(node.ainvoke)
    assert [p[0] for p in _params(node.invoke)] == ["input", "config", "store", "on_progress"]
    ai = AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "1"}])
    assert node.invoke({"messages": [ai]})["messages"][0].content == "3"
    out = asyncio.run(node.ainvoke(input={"messages": [ai]}, config=None, store=None))
    assert out["messages"][0].content == "3"
    with pytest.raises(TypeError, match="unexpected keyword"):
        node.invoke({"messages": [ai]}, bogus=1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        asyncio.run(node.ainvoke({"messages": [ai]}, bogus=1))
