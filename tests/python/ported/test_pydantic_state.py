"""LangGraph docs, "Use the graph API" -> "Use Pydantic models for graph state"
(validation of the input, runtime coercion of nested models, and a pydantic state
holding LangChain messages), imports changed only. Expected values: the output of the
same programs under LangGraph 1.2."""

import contextlib
import io
from typing import Annotated

from langchain_core.messages import AIMessage, AnyMessage
from pydantic import BaseModel, ValidationError

from ironloop.graph import END, START, StateGraph, add_messages


class OverallState(BaseModel):
    a: str


def node(state: OverallState):
    return {"a": "goodbye"}


builder = StateGraph(OverallState)
builder.add_node(node)
builder.add_edge(START, "node")
builder.add_edge("node", END)
graph = builder.compile()


def test_input_validation() -> None:
    assert graph.invoke({"a": "hello"}) == {"a": "goodbye"}
    try:
        graph.invoke({"a": 123})  # Should be a string
    except ValidationError as e:
        assert e.errors()[0]["loc"] == ("a",)
    else:
        raise AssertionError("An exception was not raised though `a` is an integer")


class NestedModel(BaseModel):
    value: str


class ComplexState(BaseModel):
    text: str
    count: int
    nested: NestedModel


def process_node(state: ComplexState):
    # Node receives a validated Pydantic object
    print(f"Input state type: {type(state).__name__}")
    print(f"Nested type: {type(state.nested).__name__}")
    return {
        "text": state.text + " processed",
        "count": state.count + 1,
        "nested": {"value": state.nested.value.upper()},
    }


def test_runtime_coercion_of_nested_models() -> None:
    builder = StateGraph(ComplexState)
    builder.add_node("process", process_node)
    builder.add_edge(START, "process")
    builder.add_edge("process", END)
    graph = builder.compile()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = graph.invoke({"text": "Hello", "count": 0, "nested": {"value": "test"}})
    assert out.getvalue() == "Input state type: ComplexState\nNested type: NestedModel\n"
    assert result == {"text": "Hello processed", "count": 1, "nested": {"value": "TEST"}}
    assert type(result["nested"]) is dict


class ChatState(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]
    context: str


def add_message(state: ChatState):
    return {"messages": [AIMessage(content="Hello there!")]}


def test_a_pydantic_state_with_langchain_messages() -> None:
    builder = StateGraph(ChatState)
    builder.add_node("add_message", add_message)
    builder.add_edge(START, "add_message")
    builder.add_edge("add_message", END)
    graph = builder.compile()
    message = {"role": "user", "content": "Hi"}
    result = graph.invoke({"messages": [message], "context": "Customer support chat"})
    assert [(m.type, m.content) for m in result["messages"]] == [
        ("human", "Hi"),
        ("ai", "Hello there!"),
    ]
    assert result["context"] == "Customer support chat"
    chunks = list(graph.stream({"messages": [message], "context": "c"}))
    assert [
        {k: [(m.type, m.content) for m in v["messages"]] for k, v in c.items()} for c in chunks
    ] == [{"add_message": [("ai", "Hello there!")]}]
