"""The stores where users use them: ``InjectedStore`` tools, ``runtime.store`` in
nodes, ``create_react_agent(store=)`` and ``create_agent(store=)``, sync and async,
on every backend; and ``examples/memory_agent.py`` remembering across a restart."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from pg_support import admin, temp_schema
from test_store import DIMS, embed, make

from ironloop import InjectedStore, StateGraph, create_agent, create_react_agent, tool
from ironloop.models import ScriptedChatModel
from ironloop.runtime import Runtime

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memory_agent.py"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    with temp_schema() as schema:
        s = make(str(request.param), tmp_path, schema, index={"dims": DIMS, "embed": embed})
        yield s
        s.close()
        if request.param == "postgres":
            with admin() as c:
                c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@tool
def save(fact: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Save a fact.

    Args:
        fact: the fact
    """
    store.put(("facts",), fact.split()[0], {"text": fact})
    return "saved"


@tool
async def asave(fact: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Save a fact (async).

    Args:
        fact: the fact
    """
    await store.aput(("facts",), fact.split()[0], {"text": fact})
    return "saved"


@tool
async def afind(query: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Find a fact.

    Args:
        query: what to look for
    """
    found = await store.asearch(("facts",), query=query, limit=1)
    return found[0].value["text"] if found else "nothing"


def script(tool_name: str, args: dict[str, Any]) -> ScriptedChatModel:
    return ScriptedChatModel(
        [{"content": "", "tool_calls": [{"name": tool_name, "args": args}]}, "done"]
    )


def test_react_agent_tools_reach_the_store_sync_and_async(store: Any) -> None:
    agent = create_react_agent(script("save", {"fact": "tea is green"}), [save], store=store)
    agent.invoke({"messages": [("user", "remember")]})
    assert store.get(("facts",), "tea").value == {"text": "tea is green"}

    async def run() -> list[Any]:
        a = create_react_agent(script("asave", {"fact": "dog barks"}), [asave], store=store)
        await a.ainvoke({"messages": [("user", "remember")]})
        b = create_react_agent(script("afind", {"query": "dog"}), [afind], store=store)
        return (await b.ainvoke({"messages": [("user", "find")]}))["messages"]

    messages = asyncio.run(run())
    assert [m.content for m in messages if m.type == "tool"] == ["dog barks"]


def test_create_agent_tools_reach_the_store(store: Any) -> None:
    agent = create_agent(script("save", {"fact": "cat sleeps"}), [save], store=store)
    agent.invoke({"messages": [("user", "remember")]})
    assert [i.key for i in store.search(("facts",), query="cat")][:1] == ["cat"]


def test_nodes_reach_the_store_through_the_runtime(store: Any) -> None:
    class S(TypedDict):
        q: str
        found: list[str]

    def write(state: S, runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.store is store
        runtime.store.put(("notes",), "n1", {"text": "coffee time"})
        runtime.store.put(("notes",), "n2", {"text": "fish tank"})
        return {}

    async def read(state: S, runtime: Runtime[Any]) -> dict[str, Any]:
        hits = await runtime.store.asearch(("notes",), query=state["q"], limit=1)
        return {"found": [h.key for h in hits]}

    g = StateGraph(S)
    g.add_node("write", write)
    g.add_node("read", read)
    g.add_edge("__start__", "write")
    g.add_edge("write", "read")
    app = g.compile(store=store)
    assert app.invoke({"q": "fish", "found": []})["found"] == ["n2"]
    assert asyncio.run(app.ainvoke({"q": "coffee", "found": []}))["found"] == ["n1"]


def test_memory_agent_example_remembers_across_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(db)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "[monday] agent: Noted: I'll keep that in mind." in lines
    assert "[friday] agent: You told me you prefer green tea, so: a pot of sencha?" in lines
    assert db.exists()


def test_functional_api_reaches_the_store_sync_and_async(store: Any) -> None:
    """``@entrypoint(store=)``: the entrypoint's ``store`` parameter and, inside a
    ``@task``, ``get_runtime().store`` are the store given, on every backend, sync and
    async; what one run writes the next run finds by meaning."""
    from ironloop.func import entrypoint, task
    from ironloop.runtime import get_runtime

    @task
    def remember(key: str, text: str) -> str:
        get_runtime().store.put(("prefs",), key, {"text": text})
        return key

    @entrypoint(store=store)
    def save(facts: dict[str, str], *, store: Any) -> list[str]:
        assert store is get_runtime().store
        return [remember(k, t).result() for k, t in facts.items()]

    assert save.invoke({"p1": "cat red", "p2": "tea coffee tea"}) == ["p1", "p2"]
    assert store.get(("prefs",), "p2").value == {"text": "tea coffee tea"}

    @task
    async def recall(query: str) -> list[str]:
        hits = await get_runtime().store.asearch(("prefs",), query=query, limit=1)
        return [h.key for h in hits]

    @entrypoint(store=store)
    async def find(query: str, *, store: Any) -> dict[str, Any]:
        await store.aput(("prefs",), "p3", {"text": "dog fish"})
        return {"best": await recall(query), "p3": (await store.aget(("prefs",), "p3")).value}

    out = asyncio.run(find.ainvoke("coffee"))
    assert out == {"best": ["p2"], "p3": {"text": "dog fish"}}
    assert [h.key for h in store.search(("prefs",), query="fish", limit=1)] == ["p3"]
