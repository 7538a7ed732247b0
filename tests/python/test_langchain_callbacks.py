"""LangChain callback handlers see a graph run as LangGraph shows it: one root chain run
per invoke / stream, a child run per node call, the functional API's entrypoint and
``@task`` calls as child runs, and a graph run inside a node (a subgraph node, a
``Send`` into one, a graph a node invokes) as a child of the node's run, never a
second root."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import tool

from ironloop.checkpoint import InMemorySaver
from ironloop.func import entrypoint, task
from ironloop.graph import END, START, StateGraph, add_messages
from ironloop.prebuilt import ToolNode
from ironloop.types import Command, Send, interrupt


class Recorder(BaseCallbackHandler):
    """Records every chain run: name, parent, inputs, then output or error."""

    def __init__(self) -> None:
        self.runs: dict[UUID, dict[str, Any]] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kwargs: Any) -> None:  # fmt: skip
        self.runs[run_id] = {
            "name": kwargs.get("name"),
            "parent": parent_run_id,
            "inputs": inputs,
            "tags": kwargs.get("tags"),
            "metadata": kwargs.get("metadata"),
        }

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.runs[run_id]["outputs"] = outputs

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.runs[run_id]["error"] = error

    def roots(self) -> list[dict[str, Any]]:
        return [r for r in self.runs.values() if r["parent"] is None]

    def children(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        run_id = next(k for k, v in self.runs.items() if v is run)
        return [r for r in self.runs.values() if r["parent"] == run_id]

    def ended(self) -> bool:
        return all("outputs" in r or "error" in r for r in self.runs.values())


class Overall(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]


class Joke(TypedDict):
    subject: str


def _send_graph(checkpointer: Any = None) -> Any:
    sub = StateGraph(Joke, output_schema=Overall)
    sub.add_node("edit", lambda s: {"subject": s["subject"] + "!"})
    sub.add_node("tell", lambda s: {"jokes": [f"joke about {s['subject']}"]})
    sub.add_edge(START, "edit")
    sub.add_edge("edit", "tell")
    sub.add_edge("tell", END)
    builder = StateGraph(Overall)
    builder.add_node("joke", sub.compile())
    builder.add_conditional_edges(
        START, lambda s: [Send("joke", {"subject": x}) for x in s["subjects"]]
    )
    builder.add_edge("joke", END)
    return builder.compile(checkpointer=checkpointer)


def test_one_root_run_with_a_child_run_per_send_into_a_nested_graph() -> None:
    rec = Recorder()
    out = _send_graph().invoke({"subjects": ["cats", "dogs"]}, {"callbacks": [rec]})
    assert sorted(out["jokes"]) == ["joke about cats!", "joke about dogs!"]
    [root] = rec.roots()
    assert root["name"] == "LangGraph"
    assert root["inputs"] == {"subjects": ["cats", "dogs"]}
    assert root["outputs"] == out
    nodes = rec.children(root)  # one run per Send
    assert sorted((r["name"], r["inputs"]["subject"]) for r in nodes) == [
        ("joke", "cats"),
        ("joke", "dogs"),
    ]
    for node in nodes:
        [nested] = rec.children(node)
        assert nested["name"] == "LangGraph"
        assert nested["inputs"] == node["inputs"]
        assert [r["name"] for r in rec.children(nested)] == ["edit", "tell"]
    assert rec.ended()


def test_a_paused_run_ends_its_root_run_with_the_state_and_its_nested_ones_as_paused() -> None:
    class S(TypedDict):
        x: int

    inner = StateGraph(S)
    inner.add_node("ask", lambda s: {"x": interrupt("why?")})
    inner.add_edge(START, "ask")
    builder = StateGraph(S)
    builder.add_node("sub", inner.compile())
    builder.add_edge(START, "sub")
    graph = builder.compile(checkpointer=InMemorySaver(), name="outer")
    rec = Recorder()
    config: Any = {"configurable": {"thread_id": "t"}, "callbacks": [rec]}
    assert "__interrupt__" in graph.invoke({"x": 1}, config)
    [root] = rec.roots()
    assert root["name"] == "outer"
    assert root["outputs"] == {"x": 1}  # the state, without `__interrupt__`
    assert root["metadata"]["thread_id"] == "t"
    [node] = rec.children(root)
    [nested] = rec.children(node)
    assert type(node["error"]).__name__ == type(nested["error"]).__name__ == "GraphInterrupt"


def test_run_name_tags_and_a_failing_node() -> None:
    class S(TypedDict):
        x: int

    inner = StateGraph(S)
    inner.add_node("inc", lambda s: {"x": s["x"] + 1})
    inner.add_edge(START, "inc")
    compiled_inner = inner.compile()

    def boom(s: S) -> dict[str, Any]:
        raise ValueError("boom")

    builder = StateGraph(S)
    builder.add_node("a", lambda s: compiled_inner.invoke(s))  # no config passed
    builder.add_node("b", boom)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    rec = Recorder()
    with pytest.raises(ValueError, match="boom"):
        builder.compile().invoke({"x": 1}, {"callbacks": [rec], "run_name": "mine", "tags": ["t"]})
    [root] = rec.roots()
    assert root["name"] == "mine"
    assert root["tags"] == ["t"]
    assert isinstance(root["error"], ValueError)
    a, b = rec.children(root)
    assert (a["name"], a["inputs"], a["outputs"]) == ("a", {"x": 1}, {"x": 2})
    assert (b["name"], b["inputs"], type(b["error"])) == ("b", {"x": 2}, ValueError)
    [nested] = rec.children(a)  # invoked without a config: under the node's run still
    assert nested["inputs"] == {"x": 1}
    assert nested["outputs"] == {"x": 2}


def test_entrypoint_and_tasks_are_child_runs() -> None:
    @task
    def double(number: int) -> int:
        return number * 2

    @entrypoint(checkpointer=InMemorySaver())
    def flow(numbers: list[int]) -> list[int]:
        doubled = [f.result() for f in [double(n) for n in numbers]]
        answer = interrupt("go?")
        return [d + answer for d in doubled]

    rec = Recorder()
    config: Any = {"configurable": {"thread_id": "1"}, "callbacks": [rec]}
    list(flow.stream([1, 2], config))
    [root] = rec.roots()
    assert root["name"] == "LangGraph"
    [run] = rec.children(root)
    assert run["name"] == "flow"
    assert run["inputs"] == [1, 2]  # a tracer shows it as {"input": [1, 2]}
    assert type(run["error"]).__name__ == "GraphInterrupt"
    tasks = rec.children(run)
    assert sorted((t["name"], t["inputs"]["number"], t["outputs"]) for t in tasks) == [
        ("double", 1, 2),
        ("double", 2, 4),
    ]
    rec2 = Recorder()
    assert flow.invoke(Command(resume=10), {**config, "callbacks": [rec2]}) == [12, 14]
    [root2] = rec2.roots()
    assert root2["outputs"] == [12, 14]
    assert [r["name"] for r in rec2.children(root2)] == ["flow"]  # saved tasks do not rerun


def test_async_entrypoint_task_failure_is_its_runs_error() -> None:
    @task
    async def fails(number: int) -> int:
        raise RuntimeError("nope")

    @entrypoint()
    async def flow(number: int) -> str:
        try:
            await fails(number)
        except RuntimeError:
            return "caught"
        return "not caught"

    rec = Recorder()
    assert asyncio.run(flow.ainvoke(3, {"callbacks": [rec]})) == "caught"
    [root] = rec.roots()
    [run] = rec.children(root)
    [failed] = rec.children(run)
    assert failed["name"] == "fails"
    assert failed["inputs"] == {"number": 3}
    assert isinstance(failed["error"], RuntimeError)
    assert run["outputs"] == "caught"


def test_a_graph_called_from_a_langchain_runnable_is_its_child_run() -> None:
    graph = _send_graph()
    rec = Recorder()
    outer = RunnableLambda(lambda x: graph.invoke(x), name="caller")
    outer.invoke({"subjects": ["owls"]}, {"callbacks": [rec]})
    [root] = rec.roots()
    assert root["name"] == "caller"
    [run] = rec.children(root)
    assert run["name"] == "LangGraph"
    assert len(rec.children(run)) == 1


def test_astream_reports_one_root_run_and_leaves_no_parent_behind() -> None:
    rec = Recorder()

    async def main() -> list[Any]:
        graph = _send_graph()
        return [c async for c in graph.astream({"subjects": ["a", "b"]}, {"callbacks": [rec]})]

    assert len(asyncio.run(main())) == 2
    assert len(rec.roots()) == 1
    assert rec.ended()
    assert var_child_runnable_config.get() is None
    rec.runs.clear()
    _send_graph().invoke({"subjects": ["a"]})  # no callbacks: nothing reported
    assert rec.runs == {}


def test_models_and_tools_a_node_calls_with_its_config_report_under_the_run() -> None:
    class S(TypedDict):
        messages: Annotated[list[Any], add_messages]

    @tool
    def shout(text: str) -> str:
        """Shouts."""
        return text.upper()

    step = RunnableLambda(lambda x: x, name="step")

    def caller(state: S, config: Any) -> dict[str, Any]:
        step.invoke("hi", config)  # the node's config: its callbacks are the run's
        call = {"name": "shout", "args": {"text": "hi"}, "id": "c1"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    builder = StateGraph(S)
    builder.add_node("caller", caller)
    builder.add_node("tools", ToolNode([shout]))
    builder.add_edge(START, "caller")
    builder.add_edge("caller", "tools")
    tools_seen: list[Any] = []

    class ToolRecorder(Recorder):
        def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID,
                          parent_run_id: UUID | None = None, **kwargs: Any) -> None:  # fmt: skip
            tools_seen.append(parent_run_id)

    rec = ToolRecorder()
    out = builder.compile().invoke({"messages": []}, {"callbacks": [rec]})
    assert out["messages"][-1].content == "HI"
    [root] = rec.roots()
    assert [r["name"] for r in rec.children(root)] == ["caller", "tools"]
    [caller_run, tools_run] = rec.children(root)
    assert [r["name"] for r in rec.children(caller_run)] == ["step"]
    tools_id = next(k for k, v in rec.runs.items() if v is tools_run)
    # The tool's run is a child of the tools node's run, as under LangGraph.
    assert tools_seen == [tools_id]
    assert tools_run["outputs"]["messages"][-1].content == "HI"


def test_callbacks_are_decided_per_run_on_one_compiled_graph() -> None:
    # Whether nodes report chain runs is looked up once per run: a run without
    # callbacks before or after one with them changes nothing for that one.
    class S(TypedDict):
        x: int

    builder = StateGraph(S)
    builder.add_node("inc", lambda s: {"x": s["x"] + 1})
    builder.add_edge(START, "inc")
    app = builder.compile()
    assert app.invoke({"x": 1}) == {"x": 2}
    rec = Recorder()
    assert app.invoke({"x": 1}, {"callbacks": [rec]}) == {"x": 2}
    [root] = rec.roots()
    [inc] = rec.children(root)
    assert (inc["name"], inc["inputs"], inc["outputs"]) == ("inc", {"x": 1}, {"x": 2})
    assert app.invoke({"x": 2}) == {"x": 3}
    assert len(rec.runs) == 2
