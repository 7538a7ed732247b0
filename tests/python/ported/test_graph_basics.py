"""LangGraph docs, "Use the graph API": "Define and update state" (a messages state
with LangChain messages) and "Create a sequence of steps" (``add_sequence``), imports
changed only. Expected values: the output of the same programs under LangGraph 1.2
(message ids are random and not compared)."""

import contextlib
import io

from langchain_core.messages import AIMessage, AnyMessage
from typing_extensions import Annotated, TypedDict

from ironloop.graph import START, StateGraph, add_messages


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    extra_field: int


def node(state: State):
    messages = state["messages"]
    new_message = AIMessage("Hello!")
    return {"messages": messages + [new_message], "extra_field": 10}


graph = StateGraph(State).add_node(node).set_entry_point("node").compile()


def test_define_and_update_state() -> None:
    input_message = {"role": "user", "content": "Hi"}
    result = graph.invoke({"messages": [input_message]})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for message in result["messages"]:
            message.pretty_print()
    assert out.getvalue() == (
        "================================ Human Message =================================\n"
        "\n"
        "Hi\n"
        "================================== Ai Message ==================================\n"
        "\n"
        "Hello!\n"
    )
    assert result["extra_field"] == 10
    assert [(m.type, m.content) for m in result["messages"]] == [("human", "Hi"), ("ai", "Hello!")]
    assert all(m.id for m in result["messages"])


class SequenceState(TypedDict):
    value_1: str
    value_2: int


def step_1(state: SequenceState):
    return {"value_1": "a"}


def step_2(state: SequenceState):
    current_value_1 = state["value_1"]
    return {"value_1": f"{current_value_1} b"}


def step_3(state: SequenceState):
    return {"value_2": 10}


graph_builder = StateGraph(SequenceState).add_sequence([step_1, step_2, step_3])
graph_builder.add_edge(START, "step_1")
sequence = graph_builder.compile()


def test_a_sequence_of_steps() -> None:
    assert sequence.invoke({"value_1": "c"}) == {"value_1": "a b", "value_2": 10}
    assert list(sequence.stream({"value_1": "c"})) == [
        {"step_1": {"value_1": "a"}},
        {"step_2": {"value_1": "a b"}},
        {"step_3": {"value_2": 10}},
    ]
