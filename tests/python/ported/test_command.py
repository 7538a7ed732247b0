"""LangGraph docs, "Use the graph API" -> "Combine control flow and state updates with
Command" (``Command[Literal[...]]`` instead of edges) and "Navigate to a node in a
parent graph" (``Command(graph=Command.PARENT)``), imports changed only. The test fixes
``random.choice`` (LangGraph draws random numbers of its own, so a seed would not
give both libraries the same choices). Expected values: the output of the same
programs under LangGraph 1.2."""

import contextlib
import io
import operator
import random

from typing_extensions import Annotated, Literal, TypedDict

from ironloop.graph import START, StateGraph
from ironloop.types import Command


# Define graph state
class State(TypedDict):
    foo: str


# Define the nodes
def node_a(state: State) -> Command[Literal["node_b", "node_c"]]:
    print("Called A")
    value = random.choice(["b", "c"])
    # this is a replacement for a conditional edge function
    if value == "b":
        goto = "node_b"
    else:
        goto = "node_c"

    # note how Command allows you to BOTH update the graph state AND route to the next node
    return Command(
        # this is the state update
        update={"foo": value},
        # this is a replacement for an edge
        goto=goto,
    )


def node_b(state: State):
    print("Called B")
    return {"foo": state["foo"] + "b"}


def node_c(state: State):
    print("Called C")
    return {"foo": state["foo"] + "c"}


builder = StateGraph(State)
builder.add_edge(START, "node_a")
builder.add_node(node_a)
builder.add_node(node_b)
builder.add_node(node_c)
# NOTE: there are no edges between nodes A, B and C!

graph = builder.compile()


@contextlib.contextmanager
def choosing(value: str):
    """``random.choice`` returns ``value``; prints are captured."""
    real = random.choice
    random.choice = lambda seq: value
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            yield out
    finally:
        random.choice = real


def test_command_routes_and_updates() -> None:
    with choosing("c") as out:
        assert graph.invoke({"foo": ""}) == {"foo": "cc"}
    assert out.getvalue() == "Called A\nCalled C\n"
    with choosing("b") as out:
        assert list(graph.stream({"foo": ""})) == [
            {"node_a": {"foo": "b"}},
            {"node_b": {"foo": "bb"}},
        ]
    assert out.getvalue() == "Called A\nCalled B\n"
    assert sorted(graph.get_graph().nodes) == ["__end__", "__start__", "node_a", "node_b", "node_c"]


class ParentState(TypedDict):
    # NOTE: we define a reducer here
    foo: Annotated[str, operator.add]


def sub_node_a(state: ParentState):
    print("Called A")
    value = random.choice(["a", "b"])
    # this is a replacement for a conditional edge function
    if value == "a":
        goto = "node_b"
    else:
        goto = "node_c"

    # note how Command allows you to BOTH update the graph state AND route to the next node
    return Command(
        update={"foo": value},
        goto=goto,
        # this tells LangGraph to navigate to node_b or node_c in the parent graph
        # NOTE: this will navigate to the closest parent graph relative to the subgraph
        graph=Command.PARENT,
    )


subgraph = (
    StateGraph(ParentState).add_node("node_a", sub_node_a).add_edge(START, "node_a").compile()
)


def parent_node_b(state: ParentState):
    print("Called B")
    # NOTE: since we've defined a reducer, we don't need to manually append
    # new characters to existing 'foo' value. instead, reducer will append these
    # automatically (via operator.add)
    return {"foo": "b"}


def parent_node_c(state: ParentState):
    print("Called C")
    return {"foo": "c"}


parent_builder = StateGraph(ParentState)
parent_builder.add_edge(START, "subgraph")
parent_builder.add_node("subgraph", subgraph)
parent_builder.add_node("node_b", parent_node_b)
parent_builder.add_node("node_c", parent_node_c)
parent = parent_builder.compile()


def test_command_navigates_to_a_node_of_the_parent_graph() -> None:
    with choosing("b") as out:
        assert parent.invoke({"foo": ""}) == {"foo": "bc"}
    assert out.getvalue() == "Called A\nCalled C\n"
    with choosing("a") as out:
        assert parent.invoke({"foo": ""}) == {"foo": "ab"}
    assert out.getvalue() == "Called A\nCalled B\n"
