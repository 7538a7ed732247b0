"""LangGraph docs, "Use subgraphs" (shared state keys) and "Create branches" (fan-out
and fan-in), imports changed only. Expected values: the same programs' output under
LangGraph 1.2."""

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from ironloop.graph import END, START, StateGraph


class SubgraphState(TypedDict):
    foo: str  # shared with the parent graph
    bar: str


def subgraph_node_1(state: SubgraphState):
    return {"bar": "bar"}


def subgraph_node_2(state: SubgraphState):
    return {"foo": state["foo"] + state["bar"]}


subgraph_builder = StateGraph(SubgraphState)
subgraph_builder.add_node(subgraph_node_1)
subgraph_builder.add_node(subgraph_node_2)
subgraph_builder.add_edge(START, "subgraph_node_1")
subgraph_builder.add_edge("subgraph_node_1", "subgraph_node_2")
subgraph = subgraph_builder.compile()


class ParentState(TypedDict):
    foo: str


def node_1(state: ParentState):
    return {"foo": "hi! " + state["foo"]}


builder = StateGraph(ParentState)
builder.add_node("node_1", node_1)
builder.add_node("node_2", subgraph)
builder.add_edge(START, "node_1")
builder.add_edge("node_1", "node_2")
graph = builder.compile()


def test_a_subgraph_with_shared_keys() -> None:
    assert list(graph.stream({"foo": "foo"})) == [
        {"node_1": {"foo": "hi! foo"}},
        {"node_2": {"foo": "hi! foobar"}},
    ]


class State(TypedDict):
    aggregate: Annotated[list, operator.add]


def make(name: str) -> Any:
    def node(state: State):
        return {"aggregate": [name]}

    return node


branch_builder = StateGraph(State)
for name in "abcd":
    branch_builder.add_node(name, make(name))
branch_builder.add_edge(START, "a")
branch_builder.add_edge("a", "b")
branch_builder.add_edge("a", "c")
branch_builder.add_edge("b", "d")
branch_builder.add_edge("c", "d")
branch_builder.add_edge("d", END)
branch_graph = branch_builder.compile()


def test_fan_out_and_fan_in() -> None:
    assert branch_graph.invoke({"aggregate": []}) == {"aggregate": ["a", "b", "c", "d"]}
