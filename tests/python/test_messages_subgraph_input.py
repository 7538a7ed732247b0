"""``messages`` streamed from a subgraph (issue 40, LangGraph's
``test_root_messages_only_shows_root_scope``): the messages a subgraph's tasks start
with are not news, as LangGraph's handler marks a task's input seen. So a message the
subgraph's reducer made from its input (``"hi"`` becomes a ``HumanMessage`` with an
id) is not shown again when the parent's node that ran the subgraph returns it, and
the root scope of a v3 run shows no message made inside the subgraph. Without subgraph
events the parent's node shows what it returns, as LangGraph's does.

Each expected value is what the same program gives under LangGraph 1.2.24.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage

from ironloop import END, START, MessagesState, StateGraph


class Outer(TypedDict):
    messages: Annotated[list[Any], operator.add]
    done: bool


def _graph() -> Any:
    """`pre`, then a subgraph whose node answers; the subgraph's messages reducer turns
    the parent's `"hi"` into a message of its own."""

    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": AIMessage(content="from subgraph", id="sub-msg-1")}

    inner = (
        StateGraph(MessagesState)
        .add_node("answer", answer)
        .add_edge(START, "answer")
        .add_edge("answer", END)
        .compile()
    )
    return (
        StateGraph(Outer)
        .add_node("pre", lambda state: {"done": False})
        .add_node("inner", inner)
        .add_edge(START, "pre")
        .add_edge("pre", "inner")
        .add_edge("inner", END)
        .compile()
    )


def test_a_subgraphs_input_message_is_not_streamed_again_at_the_root() -> None:
    chunks = list(
        _graph().stream({"messages": ["hi"], "done": False}, stream_mode="messages", subgraphs=True)
    )
    shown = [
        (len(ns), type(m).__name__, m.content, meta["langgraph_node"]) for ns, (m, meta) in chunks
    ]
    assert shown == [(1, "AIMessage", "from subgraph", "answer")]


def test_without_subgraph_events_the_parent_node_shows_what_it_returns() -> None:
    chunks = list(_graph().stream({"messages": ["hi"], "done": False}, stream_mode="messages"))
    shown = [(type(m).__name__, m.content, meta["langgraph_node"]) for m, meta in chunks]
    assert shown == [
        ("HumanMessage", "hi", "inner"),
        ("AIMessage", "from subgraph", "inner"),
    ]


def test_a_v3_runs_root_messages_leave_out_the_subgraphs() -> None:
    run = _graph().stream_events({"messages": ["hi"], "done": False}, version="v3")
    assert list(run.messages) == []

    run = _graph().stream_events({"messages": ["hi"], "done": False}, version="v3")
    inside = [[s.output.text for s in handle.messages] for handle in run.subgraphs]
    assert inside == [["from subgraph"]]
