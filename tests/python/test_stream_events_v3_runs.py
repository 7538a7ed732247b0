"""What ``stream_events(version="v3")`` asks of the rest of ironloop: run options
passed on to the run (and to ``astream_events`` v1/v2's), v2 state as its schema's
class, and chat models streaming langchain-core's protocol events only in v3 runs."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessageChunk
from pydantic import BaseModel

from ironloop import END, START, StateGraph
from ironloop.checkpoint import InMemorySaver
from ironloop.graph import MessagesState


class S(TypedDict):
    message: str


def _two_steps() -> Any:
    return (
        StateGraph(S)
        .add_node("first", lambda s: {"message": s["message"] + " first"})
        .add_node("second", lambda s: {"message": s["message"] + " second"})
        .add_edge(START, "first")
        .add_edge("first", "second")
        .add_edge("second", END)
        .compile(checkpointer=InMemorySaver())
    )


def test_interrupt_before_reaches_the_run_on_every_version() -> None:
    async def main(version: str) -> Any:
        graph = _two_steps()
        config = {"configurable": {"thread_id": version}}
        if version == "v3":
            run = await graph.astream_events(
                {"message": "hi"}, config, version="v3", interrupt_before=["second"]
            )
            await run.output()
        else:
            async for _ in graph.astream_events(
                {"message": "hi"}, config, version=version, interrupt_before=["second"]
            ):
                pass
        return (await graph.aget_state(config)).next

    for version in ("v2", "v3"):
        assert asyncio.run(main(version)) == ("second",), version


class P(BaseModel):
    value: str
    items: Annotated[list[str], operator.add] = []


@dataclasses.dataclass
class D:
    value: str
    items: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)


def _typed(schema: Any) -> Any:
    return (
        StateGraph(schema)
        .add_node("a", lambda s: {"value": s.value + "_a", "items": ["a"]})
        .add_edge(START, "a")
        .compile()
    )


def test_v2_values_are_the_schema_class() -> None:
    for schema in (P, D):
        graph = _typed(schema)
        out = graph.invoke({"value": "x", "items": []}, version="v2")
        assert isinstance(out.value, schema) and out.value.value == "x_a"
        parts = list(graph.stream({"value": "x"}, stream_mode="values", version="v2"))
        assert all(isinstance(p["data"], schema) for p in parts)
        printed = graph.invoke({"value": "x", "items": []}, version="v2", print_mode="values")
        assert isinstance(printed.value, schema)
        # v1 keeps LangGraph's dicts
        assert graph.invoke({"value": "x", "items": []}) == {"value": "x_a", "items": ["a"]}
        run = graph.stream_events({"value": "x", "items": []}, version="v3")
        assert isinstance(run.output, schema)


def _model_graph(text: str) -> Any:
    model = GenericFakeChatModel(messages=iter([text]))
    return (
        StateGraph(MessagesState)
        .add_node("call", lambda s: {"messages": [model.invoke(s["messages"])]})
        .add_edge(START, "call")
        .compile()
    )


def test_model_events_stream_as_text_deltas_once() -> None:
    run = _model_graph("hello big world").stream_events({"messages": "hi"}, version="v3")
    streams = list(run.messages)
    assert len(streams) == 1  # the node's returned message is not shown again
    assert list(streams[0].text) == ["hello", " ", "big", " ", "world"]
    assert streams[0].node == "call"


def test_async_model_events() -> None:
    async def main() -> list[str]:
        run = await _model_graph("a b").astream_events({"messages": "hi"}, version="v3")
        return [d async for s in run.messages async for d in s.text]

    assert "".join(asyncio.run(main())) == "a b"


def test_a_nodes_own_v1_stream_keeps_chunks_under_a_v3_run() -> None:
    inner = _model_graph("nested")

    class Outer(TypedDict, total=False):
        kinds: list[str]

    def call_inner(state: Outer) -> dict[str, Any]:
        parts = list(inner.stream({"messages": "hi"}, stream_mode="messages"))
        return {"kinds": [type(p).__name__ for p, _ in parts]}

    outer = StateGraph(Outer).add_node("n", call_inner).add_edge(START, "n").compile()
    out = outer.stream_events({}, version="v3").output
    assert out["kinds"] and set(out["kinds"]) == {AIMessageChunk.__name__}
    # and after the v3 run, plain streams are v1 too
    again = _model_graph("again")
    parts = list(again.stream({"messages": "hi"}, stream_mode="messages"))
    assert parts and all(isinstance(p, AIMessageChunk) for p, _ in parts)
