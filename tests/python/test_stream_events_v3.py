"""``stream_events(version="v3")`` / ``astream_events(version="v3")``: LangGraph 1.2's
run streams and their projections (values, output, interrupts, lifecycle, subgraph
handles, messages, user transformers), on both lanes."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, StateGraph
from ironloop.checkpoint import InMemorySaver
from ironloop.stream import (
    AsyncGraphRunStream,
    GraphRunStream,
    StreamChannel,
    StreamTransformer,
    SubgraphRunStream,
)
from ironloop.types import interrupt


class S(TypedDict):
    items: Annotated[list[str], operator.add]


def _graph(**compile_kw: Any) -> Any:
    return (
        StateGraph(S)
        .add_node("a", lambda s: {"items": ["a"]})
        .add_node("b", lambda s: {"items": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile(**compile_kw)
    )


def _nested() -> Any:
    child = (
        StateGraph(S)
        .add_node("inner", lambda s: {"items": ["inner"]})
        .add_edge(START, "inner")
        .compile()
    )
    return (
        StateGraph(S)
        .add_node("child", child)
        .add_node("after", lambda s: {"items": ["after"]})
        .add_edge(START, "child")
        .add_edge("child", "after")
        .compile()
    )


def test_values_projection_and_output() -> None:
    run = _graph().stream_events({"items": []}, version="v3")
    assert isinstance(run, GraphRunStream)
    assert list(run.values) == [{"items": []}, {"items": ["a"]}, {"items": ["a", "b"]}]
    assert run.output == {"items": ["a", "b"]}
    assert run.interrupted is False and run.interrupts == []


def test_async_values_projection_and_output() -> None:
    async def main() -> tuple[list[Any], Any]:
        run = await _graph().astream_events({"items": []}, version="v3")
        assert isinstance(run, AsyncGraphRunStream)
        seen = [v async for v in run.values]
        return seen, await run.output()

    seen, output = asyncio.run(main())
    assert seen[-1] == output == {"items": ["a", "b"]}


def test_raw_events_are_numbered_and_tasks_left_out() -> None:
    events = list(_graph().stream_events({"items": []}, version="v3"))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    methods = {e["method"] for e in events}
    assert "values" in methods and "tasks" not in methods
    assert all(e["type"] == "event" and e["params"]["namespace"] == [] for e in events)


def test_interrupt_is_reported_and_resumable() -> None:
    def ask(state: S) -> dict[str, list[str]]:
        return {"items": [interrupt("name?")]}

    graph = (
        StateGraph(S)
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "1"}}
    run = graph.stream_events({"items": []}, config, version="v3")
    assert run.interrupted is True
    assert [i.value for i in run.interrupts] == ["name?"]
    from ironloop.types import Command

    resumed = graph.stream_events(Command(resume="bo"), config, version="v3")
    assert resumed.output == {"items": ["bo"]}


def test_failure_reaches_output_and_projections() -> None:
    def boom(state: S) -> dict[str, Any]:
        raise ValueError("no luck")

    graph = StateGraph(S).add_node("boom", boom).add_edge(START, "boom").compile()
    run = graph.stream_events({"items": []}, version="v3")
    with pytest.raises(ValueError, match="no luck"):
        list(run.values)
    with pytest.raises(ValueError, match="no luck"):
        _ = run.output


def test_lifecycle_of_a_subgraph() -> None:
    run = _nested().stream_events({"items": []}, version="v3")
    events = list(run.lifecycle)
    assert [e["event"] for e in events] == ["started", "completed"]
    ns = events[0]["namespace"]
    assert len(ns) == 1 and ns[0].startswith("child:")
    assert events[0]["graph_name"] == "child"
    assert events[0]["trigger_call_id"] == ns[0].split(":", 1)[1]
    assert run.output == {"items": ["inner", "after"]}


def test_subgraph_handles_have_their_own_values() -> None:
    run = _nested().stream_events({"items": []}, version="v3")
    handles = []
    for handle in run.subgraphs:
        assert isinstance(handle, SubgraphRunStream)
        handles.append((handle, list(handle.values)))
    [(handle, values)] = handles
    assert handle.graph_name == "child" and handle.status == "completed"
    assert values[-1] == {"items": ["inner"]}


class Counter(StreamTransformer):
    """Counts the values events; pushes each count to a named channel."""

    required_stream_modes = ("values",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.counts: StreamChannel[int] = StreamChannel("counts")
        self.n = 0

    def init(self) -> dict[str, Any]:
        return {"counts": self.counts}

    def process(self, event: Any) -> bool:
        if event["method"] == "values" and not event["params"]["namespace"]:
            self.n += 1
            self.counts.push(self.n)
        return True


def test_user_transformer_projection_and_forwarded_events() -> None:
    run = _graph().stream_events({"items": []}, version="v3", transformers=[Counter])
    events = list(run)
    assert [e["params"]["data"] for e in events if e["method"] == "custom:counts"] == [1, 2, 3]
    # the forwarded event comes before the event that caused it
    methods = [e["method"] for e in events]
    assert methods.index("custom:counts") < methods.index("values")
    assert "counts" in run.extensions and not hasattr(run, "counts")


def test_compiled_transformers_run_on_every_stream() -> None:
    run = _graph(transformers=[Counter]).stream_events({"items": []}, version="v3")
    assert list(run.extensions["counts"]) == [1, 2, 3]


def test_bad_arguments_say_what_to_do() -> None:
    graph = _graph()
    with pytest.raises(TypeError, match="scope-aware"):
        graph.stream_events({"items": []}, version="v3", transformers=[Counter()])
    with pytest.raises(TypeError, match="v3 owns"):
        graph.stream_events({"items": []}, version="v3", stream_mode="values")
    with pytest.raises(NotImplementedError, match="astream_events"):
        graph.stream_events({"items": []}, version="v2")

    class NeedsLoop(Counter):
        requires_async = True

    with pytest.raises(RuntimeError, match="astream_events"):
        graph.stream_events({"items": []}, version="v3", transformers=[NeedsLoop])


def test_one_subscriber_per_projection_and_tee() -> None:
    run = _graph().stream_events({"items": []}, version="v3")
    left, right = run.values.tee(2)
    assert list(left) == list(right)
    with pytest.raises(RuntimeError, match="tee"):
        iter(run.values)


def test_interleave_keeps_push_order() -> None:
    run = _graph().stream_events({"items": []}, version="v3", transformers=[Counter])
    names = [name for name, _ in run.interleave("values", "counts")]
    assert names == ["values", "counts"] * 3  # ValuesTransformer is registered first


def test_messages_projection_from_a_model_and_a_returned_message() -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from ironloop.graph import MessagesState

    model = GenericFakeChatModel(messages=iter([AIMessage("hello there")]))

    def call(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def canned(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("canned", id="c1")]}

    graph = (
        StateGraph(MessagesState)
        .add_node("call", call)
        .add_node("canned", canned)
        .add_edge(START, "call")
        .add_edge("call", "canned")
        .compile()
    )
    run = graph.stream_events({"messages": [("user", "hi")]}, version="v3")
    texts = [(m.node, str(m.text)) for m in run.messages]
    assert texts == [("call", "hello there"), ("canned", "canned")]


def test_entrypoint_stream_events() -> None:
    from ironloop.func import entrypoint

    @entrypoint()
    def double(n: int) -> int:
        return n * 2

    run = double.stream_events(4, version="v3")
    assert run.output == 8


def test_with_config_applies_to_stream_events() -> None:
    def ask(state: S) -> dict[str, list[str]]:
        return {"items": [interrupt("name?")]}

    graph = (
        StateGraph(S)
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    bound = graph.with_config({"configurable": {"thread_id": "bound"}})
    assert bound.stream_events({"items": []}, version="v3").interrupted is True
    assert graph.get_state({"configurable": {"thread_id": "bound"}}).next == ("ask",)
