"""LangGraph docs, "Interrupts": "Validate human input" (``interrupt()`` in a loop
until the answer is valid) and "Resume multiple interrupts with one invocation"
(parallel nodes paused at once, resumed by interrupt id), imports changed only.
Expected values: the output of the same programs under LangGraph 1.2 (interrupt ids
differ and are not compared)."""

import operator
from typing import Annotated

from typing_extensions import TypedDict

from ironloop import MemorySaver as InMemorySaver
from ironloop.graph import END, START, StateGraph
from ironloop.types import Command, interrupt


class State(TypedDict):
    age: int


def get_age_node(state: State):
    prompt = "What is your age?"

    while True:
        answer = interrupt(prompt)

        # Validate the input
        if isinstance(answer, int) and answer > 0:
            # Valid input - continue
            break
        else:
            # Invalid input - ask again with a more specific prompt
            prompt = f"'{answer} is not a valid age. What is your age?"

    return {"age": answer}


def test_validate_human_input() -> None:
    builder = StateGraph(State)
    builder.add_node("get_age", get_age_node)
    builder.add_edge(START, "get_age")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}

    first = graph.invoke({"age": 0}, config)
    assert [i.value for i in first["__interrupt__"]] == ["What is your age?"]
    second = graph.invoke(Command(resume="thirty"), config)
    assert [i.value for i in second["__interrupt__"]] == [
        "'thirty is not a valid age. What is your age?"
    ]
    third = graph.invoke(Command(resume=-1), config)
    assert [i.value for i in third["__interrupt__"]] == [
        "'-1 is not a valid age. What is your age?"
    ]
    assert graph.invoke(Command(resume=30), config) == {"age": 30}


class ParallelState(TypedDict):
    vals: Annotated[list[str], operator.add]


def node_a(state):
    answer = interrupt("question_a")
    return {"vals": [f"a:{answer}"]}


def node_b(state):
    answer = interrupt("question_b")
    return {"vals": [f"b:{answer}"]}


def test_resume_multiple_interrupts_with_one_invocation() -> None:
    graph = (
        StateGraph(ParallelState)
        .add_node("a", node_a)
        .add_node("b", node_b)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END)
        .compile(checkpointer=InMemorySaver())
    )

    config = {"configurable": {"thread_id": "1"}}

    # Step 1: invoke — both parallel nodes hit interrupt() and pause
    interrupted_result = graph.invoke({"vals": []}, config)
    assert interrupted_result["vals"] == []
    assert sorted(i.value for i in interrupted_result["__interrupt__"]) == [
        "question_a",
        "question_b",
    ]

    # Step 2: resume all pending interrupts at once
    resume_map = {i.id: f"answer for {i.value}" for i in interrupted_result["__interrupt__"]}
    result = graph.invoke(Command(resume=resume_map), config)

    assert result == {"vals": ["a:answer for question_a", "b:answer for question_b"]}
