"""The tags and the routers' runs a LangChain callback handler sees, as under LangGraph
1.2: the config's tags come after the run's own (``graph:step:N``, ``seq:step:1``), and
a conditional edge's routing function reports a run named for it under the run of the
node it routes from (tagged ``seq:step:3``, a step of LangGraph's node sequence), its
input the state it routes on and its output what it returned. Read off LangGraph 1.2.24
running the same programs."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda

from ironloop.checkpoint import InMemorySaver
from ironloop.func import entrypoint, task
from ironloop.graph import END, START, StateGraph


class Starts(BaseCallbackHandler):
    """Each chain run's name, tags, parent's name, input and output, in start order."""

    def __init__(self) -> None:
        self.runs: dict[UUID, dict[str, Any]] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kw: Any) -> None:  # fmt: skip
        parent = self.runs.get(parent_run_id) if parent_run_id else None
        self.runs[run_id] = {
            "name": kw.get("name"),
            "tags": kw.get("tags"),
            "parent": parent["name"] if parent else None,
            "input": inputs,
            "metadata": kw.get("metadata") or {},
        }

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        self.runs[run_id]["output"] = outputs

    def shown(self) -> list[tuple[Any, Any, Any]]:
        return [(r["name"], r["tags"], r["parent"]) for r in self.runs.values()]


class _State(TypedDict):
    x: Annotated[list[int], operator.add]


def _graph() -> Any:
    def a(state: _State) -> dict[str, Any]:
        RunnableLambda(lambda v: v, name="inner").invoke(1)
        return {"x": [1]}

    def b(state: _State) -> dict[str, Any]:
        return {"x": [2]}

    def route(state: _State) -> str:
        return "b" if state["x"] == [1] else END

    builder = StateGraph(_State)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", route, ["b", END])
    builder.add_edge("b", END)
    return builder.compile()


def test_the_configs_tags_come_after_the_runs_own() -> None:
    starts = Starts()
    _graph().invoke({"x": []}, {"callbacks": [starts], "tags": ["mine"]})
    shown = starts.shown()
    assert ("LangGraph", ["mine"], None) in shown
    assert ("a", ["graph:step:1", "mine"], "LangGraph") in shown
    assert ("inner", ["seq:step:1", "mine"], "a") in shown
    assert ("b", ["graph:step:2", "mine"], "LangGraph") in shown


def test_a_routers_run_is_under_its_nodes_run() -> None:
    starts = Starts()
    _graph().invoke({"x": []}, {"callbacks": [starts]})
    (routed,) = [r for r in starts.runs.values() if r["name"] == "route"]
    assert (routed["tags"], routed["parent"]) == (["seq:step:3"], "a")
    assert routed["input"] == {"x": [1]}  # the state with its node's writes
    assert routed["output"] == "b"
    assert routed["metadata"]["langgraph_node"] == "a"
    assert routed["metadata"]["langgraph_step"] == 1
    # Without callbacks the router runs as it is.
    assert _graph().invoke({"x": []}) == {"x": [1, 2]}


def test_an_entrypoints_and_its_tasks_runs_take_the_configs_tags_last() -> None:
    @task
    def inc(x: int) -> int:
        return x + 1

    @entrypoint(checkpointer=InMemorySaver())
    def flow(x: int) -> int:
        return inc(x).result()

    starts = Starts()
    config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [starts], "tags": ["mine"]}
    assert flow.invoke(1, config) == 2
    assert starts.shown() == [
        ("LangGraph", ["mine"], None),
        ("flow", ["graph:step:0", "mine"], "LangGraph"),
        ("inc", ["seq:step:1", "mine"], "flow"),
    ]
