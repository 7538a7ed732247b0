"""``CompiledStateGraph.astream_events(version="v2")``: the events LangChain's chat UIs
consume, in the order LangGraph 1.2.24 gives them for the same graph."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from ironloop import START, StateGraph


class S(TypedDict):
    value: int


async def _inc(state: S) -> dict[str, int]:
    return {"value": state["value"] + 1}


def _double(state: S) -> dict[str, int]:
    return {"value": state["value"] * 2}


def _graph() -> Any:
    return (
        StateGraph(S)
        .add_node("a", _inc)
        .add_node("b", _double)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile()
    )


async def _events(graph: Any, config: Any = None) -> list[dict[str, Any]]:
    return [e async for e in graph.astream_events({"value": 1}, config, version="v2")]


def test_events_follow_langgraphs_order_and_shapes() -> None:
    events = asyncio.run(_events(_graph(), {"metadata": {"user": "u1"}}))
    shown = [(e["event"], e["name"], e["data"], len(e["parent_ids"])) for e in events]
    assert shown == [
        ("on_chain_start", "LangGraph", {"input": {"value": 1}}, 0),
        ("on_chain_start", "a", {"input": {"value": 1}}, 1),
        ("on_chain_stream", "a", {"chunk": {"value": 2}}, 1),
        ("on_chain_end", "a", {"output": {"value": 2}, "input": {"value": 1}}, 1),
        ("on_chain_stream", "LangGraph", {"chunk": {"a": {"value": 2}}}, 0),
        ("on_chain_start", "b", {"input": {"value": 2}}, 1),
        ("on_chain_stream", "b", {"chunk": {"value": 4}}, 1),
        ("on_chain_end", "b", {"output": {"value": 4}, "input": {"value": 2}}, 1),
        ("on_chain_stream", "LangGraph", {"chunk": {"b": {"value": 4}}}, 0),
        ("on_chain_end", "LangGraph", {"output": {"value": 4}}, 0),
    ]
    assert all(e["metadata"]["user"] == "u1" for e in events)
    assert [e["metadata"].get("langgraph_node") for e in events[1:4]] == ["a"] * 3
    # Every event of a task carries the run's id among its parents.
    assert {tuple(e["parent_ids"]) for e in events[1:4]} == {(events[0]["run_id"],)}


def test_leaving_the_stream_stops_the_run() -> None:
    started: list[str] = []

    async def slow(state: S) -> dict[str, int]:
        started.append("slow")
        await asyncio.sleep(5)
        return {}

    def never(state: S) -> dict[str, int]:
        started.append("never")
        return {}

    graph = (
        StateGraph(S)
        .add_node("a", _inc)
        .add_node("slow", slow)
        .add_node("never", never)
        .add_edge(START, "a")
        .add_edge("a", "slow")
        .add_edge("slow", "never")
        .compile()
    )

    async def main() -> None:
        stream = graph.astream_events({"value": 1}, version="v2")
        async for e in stream:
            if e["event"] == "on_chain_stream" and not e["parent_ids"]:
                assert e["data"]["chunk"] == {"a": {"value": 2}}
                break
        await stream.aclose()
        await asyncio.sleep(0.2)

    asyncio.run(main())
    assert "never" not in started


def test_other_versions_are_refused_naming_the_ones_supported() -> None:
    async def main() -> None:
        async for _ in _graph().astream_events({"value": 1}, version="v4"):
            pass

    with pytest.raises(ValueError, match=r"version='v3'.*'v2'.*'v1'"):
        asyncio.run(main())


def test_v1_events_as_langchains_v1_gives_them() -> None:
    # LangGraph 1.2.24 under LangChain's deprecated v1: the same events, no parent ids,
    # and the run's last update as its output.
    async def main() -> list[dict[str, Any]]:
        return [e async for e in _graph().astream_events({"value": 1}, version="v1")]

    with pytest.warns(DeprecationWarning, match="version='v1' is deprecated"):
        events = asyncio.run(main())
    v2 = asyncio.run(_events(_graph()))
    assert [(e["event"], e["name"]) for e in events] == [(e["event"], e["name"]) for e in v2]
    assert all(e["parent_ids"] == [] for e in events)
    assert events[-1]["data"] == {"output": {"b": {"value": 4}}}
