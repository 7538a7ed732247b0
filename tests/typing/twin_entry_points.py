"""Calls of entry points whose async twins share their parameter list
(``ironloop._params.params_of``), as a user's type checker sees them: a graph's
``invoke`` / ``ainvoke`` / ``stream`` / ``astream`` and state methods, a store's
one-op forms, ``@tool`` with keywords. ``scripts/test.sh`` checks it with mypy
(``tests/typing/``); ``tests/python/test_twin_entry_points.py`` runs it.

    python tests/typing/twin_entry_points.py
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from ironloop import tool
from ironloop.checkpoint import MemorySaver
from ironloop.graph import END, START, StateGraph
from ironloop.store import InMemoryStore


class State(TypedDict):
    n: int


def inc(state: State) -> dict[str, int]:
    return {"n": state["n"] + 1}


@tool("add", description="Adds two numbers.", return_direct=False, timeout=5.0)
def add(a: int, b: int) -> int:
    return a + b


async def run_async(graph: Any, config: dict[str, Any]) -> int:
    out = await graph.ainvoke({"n": 2}, config, durability="sync", version="v1")
    chunks = [c async for c in graph.astream({"n": 0}, config, stream_mode="values")]
    assert chunks[-1] == {"n": 1}
    await graph.aupdate_state(config, {"n": 9}, as_node="inc")
    history = [s async for s in graph.aget_state_history(config, limit=1)]
    assert history[0].values == {"n": 9}
    return int(out["n"])


def main() -> dict[str, Any]:
    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    graph = builder.compile(checkpointer=MemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "typed"}}
    out = graph.invoke({"n": 1}, config, context=None, interrupt_before=None)
    assert list(graph.stream({"n": 1}, config, stream_mode="updates", subgraphs=False))
    asynced = asyncio.run(run_async(graph, config))

    store = InMemoryStore()
    store.put(("docs",), "a", {"text": "hi"}, None, ttl=None)
    found = store.search(("docs",), filter={"text": "hi"}, limit=5)
    assert store.list_namespaces(prefix=("docs",), max_depth=1) == [("docs",)]
    return {"invoke": out["n"], "ainvoke": asynced, "searched": len(found), "tool": add.name}


if __name__ == "__main__":
    print(main())
