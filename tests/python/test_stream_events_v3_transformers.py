"""``ironloop.stream``'s transformers on their own and in runs: subgraph outcomes on
``run.lifecycle``, async subgraph handles, the data projections, ``schedule``d async
work and the ``before_builtins`` lane."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import START, StateGraph
from ironloop.checkpoint import InMemorySaver
from ironloop.stream import (
    CheckpointsTransformer,
    CustomTransformer,
    StreamChannel,
    StreamTransformer,
    UpdatesTransformer,
)
from ironloop.stream.transformers import MessagesTransformer
from ironloop.types import interrupt


class S(TypedDict):
    items: Annotated[list[str], operator.add]


def _nested(inner_node: Any, checkpointer: Any = None) -> Any:
    child = StateGraph(S).add_node("inner", inner_node).add_edge(START, "inner").compile()
    return (
        StateGraph(S)
        .add_node("child", child)
        .add_edge(START, "child")
        .compile(checkpointer=checkpointer)
    )


def test_lifecycle_reports_a_failed_subgraph_and_the_run_raises() -> None:
    def boom(state: S) -> dict[str, Any]:
        raise RuntimeError("inner broke")

    run = _nested(boom).stream_events({"items": []}, version="v3")
    seen = []
    with pytest.raises(RuntimeError, match="inner broke"):
        for event in run.lifecycle:
            seen.append(event)
    assert [e["event"] for e in seen] == ["started", "failed"]
    assert "inner broke" in seen[1]["error"]


def test_lifecycle_reports_an_interrupted_subgraph() -> None:
    def ask(state: S) -> dict[str, Any]:
        return {"items": [interrupt("ok?")]}

    graph = _nested(ask, InMemorySaver())
    run = graph.stream_events({"items": []}, {"configurable": {"thread_id": "1"}}, version="v3")
    assert [e["event"] for e in run.lifecycle] == ["started", "interrupted"]
    assert run.interrupted


def test_async_subgraph_handles() -> None:
    async def main() -> list[tuple[str | None, Any, str]]:
        graph = _nested(lambda s: {"items": ["in"]})
        run = await graph.astream_events({"items": []}, version="v3")
        out = []
        async for handle in run.subgraphs:
            values = [v async for v in handle.values]
            out.append((handle.graph_name, values[-1], handle.status))
        return out

    assert asyncio.run(main()) == [("child", {"items": ["in"]}, "completed")]


def test_data_projections() -> None:
    from ironloop import get_stream_writer

    def node(state: S) -> dict[str, Any]:
        get_stream_writer()({"step": 1})
        return {"items": ["n"]}

    graph = (
        StateGraph(S).add_node("n", node).add_edge(START, "n").compile(checkpointer=InMemorySaver())
    )
    run = graph.stream_events(
        {"items": []},
        {"configurable": {"thread_id": "d"}},
        version="v3",
        transformers=[CustomTransformer, UpdatesTransformer, CheckpointsTransformer],
    )
    custom: list[Any] = []
    updates: list[Any] = []
    checkpoints: list[Any] = []
    for name, item in run.interleave("custom", "updates", "checkpoints"):
        {"custom": custom, "updates": updates, "checkpoints": checkpoints}[name].append(item)
    assert custom == [{"step": 1}]
    assert updates == [{"n": {"items": ["n"]}}]
    assert checkpoints and checkpoints[-1]["values"] == {"items": ["n"]}


class Scored(StreamTransformer):
    """Scores each values event in a scheduled task (the async lane only)."""

    requires_async = True
    required_stream_modes = ("values",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.scores: StreamChannel[int] = StreamChannel("scores")

    def init(self) -> dict[str, Any]:
        return {"scores": self.scores}

    def process(self, event: Any) -> bool:
        if event["method"] == "values" and not event["params"]["namespace"]:

            async def score(n: int) -> None:
                await asyncio.sleep(0)
                self.scores.push(n)

            self.schedule(score(len(event["params"]["data"]["items"])))
        return True


def test_scheduled_work_finishes_before_the_run_ends() -> None:
    graph = _nested(lambda s: {"items": ["x"]})

    async def main() -> list[Any]:
        run = await graph.astream_events({"items": []}, version="v3", transformers=[Scored])
        events = [e async for e in run]
        return [e["params"]["data"] for e in events if e["method"] == "custom:scores"]

    assert sorted(asyncio.run(main())) == [0, 1]
    with pytest.raises(RuntimeError, match="astream_events"):
        graph.stream_events({"items": []}, version="v3", transformers=[Scored])


def test_before_builtins_transformers_see_events_first() -> None:
    order: list[str] = []

    class Early(StreamTransformer):
        before_builtins = True

        def init(self) -> dict[str, Any]:
            return {}

        def process(self, event: Any) -> bool:
            order.append("early")
            return True

    class Probe(MessagesTransformer):
        def process(self, event: Any) -> bool:
            order.append("messages")
            return super().process(event)

    from ironloop.stream._mux import StreamMux

    mux = StreamMux(factories=[Probe, Early])
    mux.push(
        {
            "type": "event",
            "method": "custom",
            "params": {"namespace": [], "timestamp": 0, "data": 1},
        }
    )
    assert order == ["early", "messages"]
