"""LangGraph docs, "Use subgraphs" -> "Invoke a graph from a node" (a subgraph with a
different state schema, called inside a node function), streamed with its subgraph
outputs (``subgraphs=True``), imports changed only. Expected values: the output of
the same program under LangGraph 1.2 (a namespace is compared by its node name)."""

from typing_extensions import TypedDict

from ironloop.graph import START, StateGraph


# Define subgraph
class SubgraphState(TypedDict):
    # note that none of these keys are shared with the parent graph state
    bar: str
    baz: str


def subgraph_node_1(state: SubgraphState):
    return {"baz": "baz"}


def subgraph_node_2(state: SubgraphState):
    return {"bar": state["bar"] + state["baz"]}


subgraph_builder = StateGraph(SubgraphState)
subgraph_builder.add_node(subgraph_node_1)
subgraph_builder.add_node(subgraph_node_2)
subgraph_builder.add_edge(START, "subgraph_node_1")
subgraph_builder.add_edge("subgraph_node_1", "subgraph_node_2")
subgraph = subgraph_builder.compile()


# Define parent graph
class ParentState(TypedDict):
    foo: str


def node_1(state: ParentState):
    return {"foo": "hi! " + state["foo"]}


def node_2(state: ParentState):
    # Transform the state to the subgraph state
    response = subgraph.invoke({"bar": state["foo"]})
    # Transform response back to the parent state
    return {"foo": response["bar"]}


builder = StateGraph(ParentState)
builder.add_node("node_1", node_1)
builder.add_node("node_2", node_2)
builder.add_edge(START, "node_1")
builder.add_edge("node_1", "node_2")
graph = builder.compile()


def test_a_subgraph_invoked_from_a_node() -> None:
    assert graph.invoke({"foo": "foo"}) == {"foo": "hi! foobaz"}
    chunks = [
        (tuple(n.split(":")[0] for n in ns), data)
        for ns, data in graph.stream({"foo": "foo"}, subgraphs=True)
    ]
    assert chunks == [
        ((), {"node_1": {"foo": "hi! foo"}}),
        (("node_2",), {"subgraph_node_1": {"baz": "baz"}}),
        (("node_2",), {"subgraph_node_2": {"bar": "hi! foobaz"}}),
        ((), {"node_2": {"foo": "hi! foobaz"}}),
    ]
