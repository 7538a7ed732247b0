"""An entrypoint's steps, debug stream and ``astream_events`` as LangGraph 1.2 has them:
its input is written with the input checkpoint (step -1, source ``input``, the
entrypoint its task) and the entrypoint runs in step 0, with no ``__start__`` step
between (two checkpoints a run); a resumed run streams the checkpoint it resumes
first, its tasks' questions in it (any graph's, as LangGraph's); ``astream_events``
of an entrypoint are made from its run's LangChain callback runs (the root
``LangGraph`` run, the entrypoint's tagged ``graph:step:N``, each ``@task`` call's
tagged ``seq:step:1``, each streaming what it returned). Read off LangGraph 1.2.24
running the same programs."""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from ironloop.checkpoint import InMemorySaver
from ironloop.func import entrypoint, task
from ironloop.graph import START, StateGraph
from ironloop.types import Command, interrupt


def _cfg() -> Any:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _steps(graph: Any, config: Any) -> list[tuple[int, str, tuple[str, ...]]]:
    return [
        (s.metadata["step"], s.metadata["source"], s.next) for s in graph.get_state_history(config)
    ]


def test_an_entrypoint_runs_in_step_0_after_its_input_checkpoint() -> None:
    @task
    def double(x: int) -> int:
        return 2 * x

    @entrypoint(checkpointer=InMemorySaver())
    def flow(x: int) -> int:
        return double(x).result()

    config = _cfg()
    assert flow.invoke(1, config) == 2
    assert _steps(flow, config) == [(0, "loop", ()), (-1, "input", ("flow",))]
    assert flow.invoke(2, config) == 4
    assert _steps(flow, config) == [
        (2, "loop", ()),
        (1, "input", ("flow",)),
        (0, "loop", ()),
        (-1, "input", ("flow",)),
    ]
    assert [s.values for s in flow.get_state_history(config)] == [4, 2, 2, None]


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_an_entrypoints_debug_stream_and_its_resume(durability: str) -> None:
    @task
    def falsy() -> bool:
        return False

    @entrypoint(checkpointer=InMemorySaver())
    def flow(state: dict[str, int]) -> Any:
        falsy().result()
        return interrupt("test")

    config = _cfg()
    first = list(flow.stream({"a": 5}, config, stream_mode="debug", durability=durability))
    assert [(c["type"], c["step"], c["payload"]["name"] if "name" in c["payload"] else None)
            for c in first] == [
        ("checkpoint", -1, None),
        ("task", 0, "flow"),
        ("task", 0, "falsy"),
        ("task_result", 0, "falsy"),
        ("task_result", 0, "flow"),
    ]  # fmt: skip
    checkpoint = first[0]["payload"]
    assert checkpoint["metadata"] == {"parents": {}, "source": "input", "step": -1}
    assert checkpoint["next"] == ["flow"] and checkpoint["values"] is None
    assert [t["interrupts"] for t in checkpoint["tasks"]] == [()]
    assert first[1]["payload"]["input"] == {"a": 5}
    assert first[1]["payload"]["triggers"] == ("__start__",)
    (asked,) = first[-1]["payload"]["interrupts"]

    resumed = list(
        flow.stream(Command(resume="yes"), config, stream_mode="debug", durability=durability)
    )
    # The checkpoint it resumes first, with the question its task asked.
    again = resumed[0]
    assert (again["type"], again["step"]) == ("checkpoint", -1)
    assert again["payload"]["config"] == checkpoint["config"]
    assert again["payload"]["metadata"] == {"parents": {}, "source": "input", "step": -1}
    assert again["payload"]["parent_config"] is None
    (entry,) = again["payload"]["tasks"]
    assert entry["name"] == "flow" and entry["interrupts"] == (asked,)
    assert [(c["type"], c["step"]) for c in resumed[1:]] == [
        ("task", 0),
        ("task", 0),  # `falsy`, found done: no result
        ("task_result", 0),
        ("checkpoint", 0),
    ]
    assert resumed[-2]["payload"]["result"] == {"__end__": "yes"}
    assert resumed[-1]["payload"]["metadata"] == {"parents": {}, "source": "loop", "step": 0}
    assert flow.get_state(config).values == "yes"


class _State(TypedDict):
    x: Annotated[list[str], operator.add]


def _asking_graph() -> Any:
    def ask(state: _State) -> dict[str, Any]:
        return {"x": [interrupt("q")]}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_resumed_graph_streams_the_checkpoint_it_resumes_first() -> None:
    graph = _asking_graph()
    config = _cfg()
    first = list(graph.stream({"x": []}, config, stream_mode="debug"))
    paused = [c for c in first if c["type"] == "checkpoint"][-1]
    (asked,) = first[-1]["payload"]["interrupts"]

    resumed = list(graph.stream(Command(resume="a"), config, stream_mode="debug"))
    head = resumed[0]
    assert head["type"] == "checkpoint"
    assert head["step"] == paused["step"] == 0
    assert head["payload"]["config"] == paused["payload"]["config"]
    assert head["payload"]["metadata"]["source"] == "loop"
    (entry,) = head["payload"]["tasks"]
    assert entry["name"] == "ask" and entry["interrupts"] == (asked,)
    assert [c["type"] for c in resumed[1:]] == ["task", "task_result", "checkpoint"]

    # The checkpoints view shows it too; a run without a checkpoint to resume shows none.
    config = _cfg()
    list(graph.stream({"x": []}, config))
    (head, *_) = graph.stream(Command(resume="b"), config, stream_mode="checkpoints")
    assert head["metadata"]["step"] == 0 and head["next"] == ["ask"]
    # Continuing a finished thread streams its last checkpoint, and nothing runs.
    (last,) = graph.stream(None, config, stream_mode="checkpoints")
    assert (last["metadata"]["step"], last["next"], last["values"]) == (1, [], {"x": ["b"]})


def test_astream_events_of_an_entrypoint_are_its_callback_runs() -> None:
    @task
    async def double(n: int) -> int:
        await asyncio.sleep(0.01)
        return 2 * n

    @entrypoint(checkpointer=InMemorySaver())
    async def flow(n: int) -> int:
        return await double(n) + 1

    config: Any = {"configurable": {"thread_id": "e"}}

    async def events() -> list[dict[str, Any]]:
        await flow.ainvoke(1, config)  # the second run's entrypoint runs in step 2
        return [e async for e in flow.astream_events(1, config, version="v2")]

    got = asyncio.run(events())
    # Each run's events in order, the runs nested (how the root's updates interleave
    # with the entrypoint's own events depends on the event loop's timing).
    shown = [(e["event"], e["name"]) for e in got]
    assert [x for x in shown if x[1] != "LangGraph"] == [
        ("on_chain_start", "flow"),
        ("on_chain_start", "double"),
        ("on_chain_stream", "double"),
        ("on_chain_end", "double"),
        ("on_chain_stream", "flow"),
        ("on_chain_end", "flow"),
    ]
    assert shown[0] == ("on_chain_start", "LangGraph")
    assert shown[-2:] == [("on_chain_stream", "LangGraph"), ("on_chain_end", "LangGraph")]
    assert shown.index(("on_chain_stream", "LangGraph")) > shown.index(("on_chain_end", "double"))
    by = {(e["event"], e["name"]): e for e in got}
    root = by["on_chain_start", "LangGraph"]
    entry = by["on_chain_start", "flow"]
    call = by["on_chain_start", "double"]
    assert (root["tags"], root["parent_ids"]) == ([], [])
    assert root["metadata"]["ls_integration"] == "langgraph"
    assert entry["tags"] == ["graph:step:2"] and entry["parent_ids"] == [root["run_id"]]
    assert entry["metadata"]["langgraph_step"] == 2
    assert entry["metadata"]["langgraph_triggers"] == ("__start__",)
    assert call["tags"] == ["seq:step:1"]
    assert call["parent_ids"] == [root["run_id"], entry["run_id"]]
    assert call["data"] == {"input": {"n": 1}}
    assert by["on_chain_stream", "double"]["data"] == {"chunk": 2}
    assert by["on_chain_end", "double"]["data"] == {"output": 2, "input": {"n": 1}}
    assert by["on_chain_end", "flow"]["data"] == {"output": 3, "input": 1}
    assert [e["data"]["chunk"] for e in got if e["event"] == "on_chain_stream"
            and e["name"] == "LangGraph"] == [{"double": 2}, {"flow": 3}]  # fmt: skip
