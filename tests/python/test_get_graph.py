"""``get_graph()`` returns langchain-core's drawable ``Graph``, as LangGraph's: nodes by
name with their runnable as ``data``, LangGraph's edges, ``xray`` expanding subgraphs,
``draw_ascii``; and the graph's input/output/context JSON Schemas."""

from __future__ import annotations

import dataclasses
import operator
from typing import Annotated, Literal, TypedDict

import pytest
from langchain_core.runnables.graph import Edge, Graph

from ironloop import END, START, StateGraph, ToolNode, tool
from ironloop.graph import add_messages
from ironloop.messages import AnyMessage
from ironloop.types import Command
from ironloop.warnings import LangGraphDeprecatedSinceV10


class S(TypedDict):
    log: Annotated[list[str], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]


def _step(name: str):  # type: ignore[no-untyped-def]
    def step(state: S) -> dict[str, list[str]]:
        return {"log": [name]}

    return step


def _inner() -> StateGraph:  # type: ignore[type-arg]
    g = StateGraph(S)
    g.add_node("i1", _step("i1")).add_node("i2", _step("i2"))
    g.add_edge(START, "i1").add_edge("i1", "i2")
    return g


def test_nodes_are_langchain_core_nodes_whose_data_is_the_node() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    tools = ToolNode([add])
    sub = _inner().compile()
    g = StateGraph(S)
    g.add_node("agent", _step("agent"), metadata={"team": "x"})
    g.add_node("tools", tools).add_node("sub", sub)
    g.add_edge(START, "agent").add_edge("agent", "tools").add_edge("tools", "sub")
    drawn = g.compile(interrupt_before=["tools"]).get_graph()
    assert isinstance(drawn, Graph)
    assert list(drawn.nodes) == [START, "agent", "tools", "sub", END]
    # What langgraph-swarm reads to find an agent's handoff tools.
    assert drawn.nodes["tools"].data is tools
    assert drawn.nodes["sub"].data is sub
    assert drawn.nodes["agent"].metadata == {"team": "x"}
    assert drawn.nodes["tools"].metadata == {"__interrupt": "before", "__tools": ["add"]}
    assert "sub --> __end__;" in drawn.draw_mermaid()


def test_edges_are_langgraphs_with_router_labels_and_command_destinations() -> None:
    def route(state: S) -> str:
        return "b"

    def b(state: S) -> Command[Literal["c", "__end__"]]:
        return Command(goto="c")

    g = StateGraph(S)
    g.add_node("a", _step("a")).add_node("b", b).add_node("c", _step("c"))
    g.add_node("d", _step("d"), destinations={"c": "to c"})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", route, {"b": "b", "other": "d"})
    drawn = g.compile().get_graph()
    assert drawn.edges == [
        Edge(START, "a", None, False),
        Edge("a", "b", None, True),
        Edge("a", "d", "other", True),
        Edge("b", END, None, True),
        Edge("b", "c", None, True),
        Edge("d", "c", "to c", True),
        Edge("c", END, None, False),
    ]


def test_xray_draws_a_subgraphs_nodes_in_its_place() -> None:
    g = StateGraph(S)
    g.add_node("a", _step("a")).add_node("sub", _inner().compile())
    g.add_edge(START, "a").add_edge("a", "sub")
    app = g.compile()
    assert list(app.get_graph().nodes) == [START, "a", "sub", END]
    drawn = app.get_graph(xray=True)
    assert list(drawn.nodes) == [START, "a", END, "sub:i1", "sub:i2"]
    assert {(e.source, e.target) for e in drawn.edges} == {
        (START, "a"),
        ("a", "sub:i1"),
        ("sub:i1", "sub:i2"),
        ("sub:i2", END),
    }
    assert "subgraph sub" in drawn.draw_mermaid()


def test_draw_ascii_draws_every_node() -> None:
    g = StateGraph(S)
    g.add_node("first", _step("a")).add_node("second", _step("b"))
    g.add_edge(START, "first").add_edge("first", "second")
    text = g.compile().get_graph().draw_ascii()
    for name in (START, "first", "second", END):
        assert name in text


@dataclasses.dataclass
class DataState:
    name: str
    count: int | None
    note: str | None = None
    tags: list[str] = dataclasses.field(default_factory=list)
    required_too: str = dataclasses.field(default=...)  # type: ignore[assignment]


class Ctx(TypedDict):
    user: str


def test_jsonschemas_are_langgraphs() -> None:
    g = StateGraph(DataState, context_schema=Ctx)
    g.add_node("n", lambda s: {}).add_edge(START, "n")
    app = g.compile()
    schema = app.get_input_jsonschema()
    assert schema["title"] == "LangGraphInput"
    # A field that may be None is optional, as LangGraph's pydantic model makes it.
    assert set(schema["required"]) == {"name", "required_too"}
    assert set(schema["properties"]) == {"name", "count", "note", "tags", "required_too"}
    assert app.get_output_jsonschema()["title"] == "LangGraphOutput"
    assert app.get_context_jsonschema() == {
        "properties": {"user": {"title": "User", "type": "string"}},
        "required": ["user"],
        "title": "Ctx",
        "type": "object",
    }
    typed = StateGraph(S).add_node("n", lambda s: {}).add_edge(START, "n").compile()
    assert typed.get_input_jsonschema()["title"] == "S"
    assert typed.get_context_jsonschema() is None
    with pytest.warns(LangGraphDeprecatedSinceV10, match="get_context_jsonschema"):
        assert app.config_schema() is Ctx
    with pytest.warns(LangGraphDeprecatedSinceV10, match="get_context_jsonschema"):
        assert app.get_config_jsonschema() == app.get_context_jsonschema()


def test_a_callable_object_node_is_named_after_its_class() -> None:
    class Shout:
        def __call__(self, state: S) -> dict[str, list[str]]:
            return {"log": ["shout"]}

    g = StateGraph(S).add_node(Shout()).add_edge(START, "Shout")
    assert list(g.compile().get_graph().nodes) == [START, "Shout", END]
    assert g.compile().invoke({"log": []})["log"] == ["shout"]


def test_an_entrypoints_context_schema_and_its_deprecated_config_schema() -> None:
    from ironloop.func import entrypoint

    @entrypoint(context_schema=Ctx)
    def flow(x: int) -> int:
        return x

    assert flow.context_schema is Ctx
    with pytest.warns(LangGraphDeprecatedSinceV10, match="get_context_jsonschema"):
        assert flow.config_schema() is Ctx
