"""What a LangChain callback handler records of a graph run is what it records under
LangGraph 1.2: each node's run is tagged ``graph:step:N`` and carries LangGraph's
``langgraph_step`` / ``langgraph_node`` / ``langgraph_triggers`` / ``langgraph_path`` /
``langgraph_checkpoint_ns`` metadata (a ``Send``'s as a push task; a functional API
``@task`` call's as a push task under its entrypoint's), what runs inside a node is
tagged ``seq:step:1`` and sees the node's namespace as ``checkpoint_ns``, the root run
is marked ``ls_integration="langgraph"``, and a ``ToolNode`` opens its node's run with
each tool's own run under it. The expected values were read off LangGraph 1.2.24 running
the same programs."""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from ironloop.checkpoint import InMemorySaver
from ironloop.func import entrypoint, task
from ironloop.graph import START, MessagesState, StateGraph
from ironloop.prebuilt import ToolNode
from ironloop.types import Send


class Runs(BaseCallbackHandler):
    """Every chain and tool run: its name, parent, tags and metadata."""

    def __init__(self) -> None:
        self.runs: dict[UUID, dict[str, Any]] = {}

    def _start(self, kind: str, name: Any, run_id: UUID, parent: UUID | None, kw: Any) -> None:
        self.runs[run_id] = {
            "kind": kind,
            "name": name,
            "parent": parent,
            "tags": kw.get("tags"),
            "metadata": dict(kw.get("metadata") or {}),
        }

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kw: Any) -> None:  # fmt: skip
        self._start("chain", kw.get("name"), run_id, parent_run_id, kw)

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID,
                      parent_run_id: UUID | None = None, **kw: Any) -> None:  # fmt: skip
        self._start("tool", kw.get("name") or serialized.get("name"), run_id, parent_run_id, kw)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.runs.values() if r["name"] == name]

    def one(self, name: str) -> dict[str, Any]:
        (run,) = self.named(name)
        return run

    def parent(self, run: dict[str, Any]) -> dict[str, Any] | None:
        return self.runs.get(run["parent"]) if run["parent"] else None


def _langgraph_meta(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run["metadata"].items() if k.startswith("langgraph_")}


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _graph() -> Any:
    inner = StateGraph(S)
    inner.add_node("i1", lambda s: {"x": ["i1"]})
    inner.add_edge(START, "i1")
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_node("sub", inner.compile())
    g.add_node("c", lambda s: {"x": ["c"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "sub")
    g.add_conditional_edges("sub", lambda s: [Send("c", {"x": ["1"]}), Send("c", {"x": ["2"]})])
    return g.compile(checkpointer=InMemorySaver())


def test_node_runs_carry_langgraphs_step_tags_and_metadata() -> None:
    runs = Runs()
    config: Any = {"callbacks": [runs], "configurable": {"thread_id": "t"}, "tags": ["mine"]}
    _graph().invoke({"x": []}, config)

    (root,) = [r for r in runs.runs.values() if r["parent"] is None]
    assert root["tags"] == ["mine"]
    assert root["metadata"]["ls_integration"] == "langgraph"
    assert root["metadata"]["thread_id"] == "t"

    a, b = runs.one("a"), runs.one("b")
    assert runs.parent(a) is root and runs.parent(b) is root
    assert sorted(a["tags"]) == ["graph:step:1", "mine"]
    assert sorted(b["tags"]) == ["graph:step:2", "mine"]
    meta = _langgraph_meta(a)
    assert meta.pop("langgraph_checkpoint_ns").startswith("a:")
    assert meta == {
        "langgraph_step": 1,
        "langgraph_node": "a",
        "langgraph_triggers": ("branch:to:a",),
        "langgraph_path": ("__pregel_pull", "a"),
    }
    assert a["metadata"]["ls_integration"] == "langgraph"
    assert a["metadata"]["thread_id"] == "t"


def test_a_sends_runs_are_push_tasks() -> None:
    runs = Runs()
    _graph().invoke({"x": []}, {"callbacks": [runs], "configurable": {"thread_id": "t"}})
    sends = runs.named("c")
    assert len(sends) == 2
    assert sorted(r["metadata"]["langgraph_path"] for r in sends) == [
        ("__pregel_push", 0, False),
        ("__pregel_push", 1, False),
    ]
    for r in sends:
        assert r["tags"] == ["graph:step:4"]
        assert r["metadata"]["langgraph_step"] == 4
        assert r["metadata"]["langgraph_triggers"] == ("__pregel_push",)


def test_a_subgraphs_nodes_are_its_own_under_the_parents_namespace() -> None:
    runs = Runs()
    _graph().invoke({"x": []}, {"callbacks": [runs], "configurable": {"thread_id": "t"}})
    sub, i1 = runs.one("sub"), runs.one("i1")
    sub_ns = sub["metadata"]["langgraph_checkpoint_ns"]
    assert sub["tags"] == ["graph:step:3"]
    # i1 runs inside the subgraph's own run, itself under the `sub` node's run.
    inner_root = runs.parent(i1)
    assert inner_root is not None and runs.parent(inner_root) is sub
    assert "seq:step:1" in inner_root["tags"]
    assert inner_root["metadata"]["checkpoint_ns"] == sub_ns
    assert i1["tags"] == ["graph:step:1"]
    assert i1["metadata"]["langgraph_node"] == "i1"
    assert i1["metadata"]["langgraph_step"] == 1
    assert i1["metadata"]["langgraph_checkpoint_ns"].startswith(sub_ns + "|i1:")


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


def test_a_tool_nodes_tools_report_under_its_run() -> None:
    def model(s: Any) -> Any:
        call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "model")
    g.add_edge("model", "tools")
    runs = Runs()
    out = g.compile().invoke({"messages": [("user", "hi")]}, {"callbacks": [runs]})
    assert out["messages"][-1].content == "3"

    tools, call = runs.one("tools"), runs.one("add")
    assert tools["kind"] == "chain" and call["kind"] == "tool"
    assert runs.parent(call) is tools
    assert tools["tags"] == ["graph:step:2"]
    assert call["tags"] == ["seq:step:1"]
    assert call["metadata"]["langgraph_node"] == "tools"
    assert call["metadata"]["checkpoint_ns"] == tools["metadata"]["langgraph_checkpoint_ns"]


def test_a_run_without_callbacks_opens_no_tool_node_run() -> None:
    g = StateGraph(MessagesState)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "tools")
    call = {"name": "add", "args": {"a": 2, "b": 2}, "id": "c1"}
    out = g.compile().invoke({"messages": [AIMessage("", tool_calls=[call])]})
    assert out["messages"][-1].content == "4"


@pytest.mark.parametrize("is_async", [False, True])
def test_entrypoint_and_task_runs_carry_langgraphs_metadata(is_async: bool) -> None:
    if is_async:

        @task
        async def double(n: int) -> int:
            return 2 * n

        @entrypoint(checkpointer=InMemorySaver())
        async def flow(n: int) -> int:
            return await double(n) + await double(n)

    else:

        @task
        def double(n: int) -> int:  # type: ignore[misc]
            return 2 * n

        @entrypoint(checkpointer=InMemorySaver())
        def flow(n: int) -> int:  # type: ignore[misc]
            return double(n).result() + double(n).result()

    runs = Runs()
    config: Any = {"callbacks": [runs], "configurable": {"thread_id": "f"}}
    if is_async:
        import asyncio

        assert asyncio.run(flow.ainvoke(1, config)) == 4
    else:
        assert flow.invoke(1, config) == 4

    workflow = runs.one("flow")
    step = workflow["metadata"]["langgraph_step"]
    assert workflow["tags"] == [f"graph:step:{step}"]
    assert workflow["metadata"]["langgraph_node"] == "flow"
    assert workflow["metadata"]["langgraph_path"] == ("__pregel_pull", "flow")
    assert workflow["metadata"]["langgraph_triggers"] == ("__start__",)

    calls = runs.named("double")
    assert len(calls) == 2
    paths = []
    for call in calls:
        assert runs.parent(call) is workflow
        assert call["tags"] == ["seq:step:1"]
        meta = call["metadata"]
        assert meta["langgraph_node"] == "double"
        assert meta["langgraph_step"] == step
        assert meta["langgraph_triggers"] == ("__pregel_push",)
        assert meta["langgraph_path"][:2] == ("__pregel_push", ("__pregel_pull", "flow"))
        assert meta["langgraph_path"][-1] is True
        assert isinstance(meta["langgraph_checkpoint_ns"], str)
        paths.append(meta["langgraph_path"])
    assert paths[0] != paths[1]


def test_an_entrypoint_warns_only_of_its_own_config_annotation() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @entrypoint()
        def plain(n: int) -> int:
            return n + 1

        @entrypoint()
        def typed(n: int, config: RunnableConfig) -> Any:
            return config["configurable"]["k"]

        assert plain.invoke(1) == 2
        assert typed.invoke(1, {"configurable": {"k": "v"}}) == "v"

    with pytest.warns(UserWarning, match="'config' parameter should be typed as 'RunnableConfig'"):

        @entrypoint()
        def loose(n: int, config: dict) -> Any:  # type: ignore[type-arg]
            return n
