"""LangGraph docs, "Use the graph API" -> "Define input and output schemas" and "Pass
private state between nodes", imports changed only. Expected values: the output of
the same programs under LangGraph 1.2."""

import contextlib
import io

from typing_extensions import TypedDict

from ironloop.graph import END, START, StateGraph


# Define the schema for the input
class InputState(TypedDict):
    question: str


# Define the schema for the output
class OutputState(TypedDict):
    answer: str


# Define the overall schema, combining both input and output
class OverallState(InputState, OutputState):
    pass


# Define the node that processes the input and generates an answer
def answer_node(state: InputState):
    # Example answer and an extra key
    return {"answer": "bye", "question": state["question"]}


# Build the graph with input and output schemas specified
builder = StateGraph(OverallState, input_schema=InputState, output_schema=OutputState)
builder.add_node(answer_node)  # Add the answer node
builder.add_edge(START, "answer_node")  # Define the starting edge
builder.add_edge("answer_node", END)  # Define the ending edge
graph = builder.compile()  # Compile the graph


def test_input_and_output_schemas() -> None:
    # Invoke the graph with an input and print the result
    assert graph.invoke({"question": "hi"}) == {"answer": "bye"}
    assert list(graph.stream({"question": "hi"}, stream_mode="values")) == [
        {"question": "hi"},
        {"question": "hi", "answer": "bye"},
    ]


# The overall state of the graph (this is the public state shared across nodes)
class PrivateOverallState(TypedDict):
    a: str


# Output from node_1 contains private data that is not part of the overall state
class Node1Output(TypedDict):
    private_data: str


# The private data is only shared between node_1 and node_2
def node_1(state: PrivateOverallState) -> Node1Output:
    output = {"private_data": "set by node_1"}
    print(f"Entered node `node_1`:\n\tInput: {state}.\n\tReturned: {output}")
    return output


# Node 2 input only requests the private data available after node_1
class Node2Input(TypedDict):
    private_data: str


def node_2(state: Node2Input) -> PrivateOverallState:
    output = {"a": "set by node_2"}
    print(f"Entered node `node_2`:\n\tInput: {state}.\n\tReturned: {output}")
    return output


# Node 3 only has access to the overall state (no access to private data from node_1)
def node_3(state: PrivateOverallState) -> PrivateOverallState:
    output = {"a": "set by node_3"}
    print(f"Entered node `node_3`:\n\tInput: {state}.\n\tReturned: {output}")
    return output


# Connect nodes in a sequence
# node_2 accepts private data from node_1, whereas
# node_3 does not see the private data.
private = (
    StateGraph(PrivateOverallState)
    .add_sequence([node_1, node_2, node_3])
    .add_edge(START, "node_1")
    .compile()
)


def test_private_state_between_nodes() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # Invoke the graph with the initial state
        response = private.invoke(
            {
                "a": "set at start",
            }
        )
    assert out.getvalue() == (
        "Entered node `node_1`:\n"
        "\tInput: {'a': 'set at start'}.\n"
        "\tReturned: {'private_data': 'set by node_1'}\n"
        "Entered node `node_2`:\n"
        "\tInput: {'private_data': 'set by node_1'}.\n"
        "\tReturned: {'a': 'set by node_2'}\n"
        "Entered node `node_3`:\n"
        "\tInput: {'a': 'set by node_2'}.\n"
        "\tReturned: {'a': 'set by node_3'}\n"
    )
    assert response == {"a": "set by node_3"}
