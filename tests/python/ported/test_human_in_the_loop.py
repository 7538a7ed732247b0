"""LangGraph docs, "Interrupts" (human-in-the-loop) with persistence and time travel,
imports changed only. Expected values: the same program's output under LangGraph 1.2
(interrupt ids differ and are not compared)."""

from typing import TypedDict

from ironloop import MemorySaver as InMemorySaver
from ironloop.graph import START, StateGraph
from ironloop.types import Command, interrupt


class State(TypedDict):
    some_text: str


def human_node(state: State):
    value = interrupt({"text_to_revise": state["some_text"]})
    return {"some_text": value}


graph_builder = StateGraph(State)
graph_builder.add_node("human_node", human_node)
graph_builder.add_edge(START, "human_node")
checkpointer = InMemorySaver()
graph = graph_builder.compile(checkpointer=checkpointer)


def test_interrupt_then_resume() -> None:
    config = {"configurable": {"thread_id": "some_id"}}
    first = list(graph.stream({"some_text": "Original text"}, config=config))
    assert len(first) == 1
    (interrupt_,) = first[0]["__interrupt__"]
    assert interrupt_.value == {"text_to_revise": "Original text"}
    second = list(graph.stream(Command(resume="Edited text"), config=config))
    assert second == [{"human_node": {"some_text": "Edited text"}}]


def test_history_and_time_travel() -> None:
    config = {"configurable": {"thread_id": "travel"}}
    graph.invoke({"some_text": "Original text"}, config)
    graph.invoke(Command(resume="Edited text"), config)
    history = list(graph.get_state_history(config))
    assert [(s.metadata["step"], s.metadata["source"], s.next) for s in history] == [
        (1, "loop", ()),
        (0, "loop", ("human_node",)),
        (-1, "input", ("__start__",)),
    ]
    assert [s.values for s in history] == [
        {"some_text": "Edited text"},
        {"some_text": "Original text"},
        {},
    ]
    # Back to the checkpoint before human_node ran: it asks again.
    out = graph.invoke(None, history[1].config)
    assert [i.value for i in out["__interrupt__"]] == [{"text_to_revise": "Original text"}]
