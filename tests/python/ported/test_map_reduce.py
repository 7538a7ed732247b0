"""LangGraph docs, "Map-reduce with Send" (graph API how-to), imports changed only.

Expected values: the output of the same program under LangGraph 1.2.
"""

import operator
from typing import Annotated

from typing_extensions import TypedDict

from ironloop.graph import END, START, StateGraph
from ironloop.types import Send


class OverallState(TypedDict):
    topic: str
    subjects: list
    jokes: Annotated[list, operator.add]
    best_selected_joke: str


class JokeState(TypedDict):
    subject: str


def generate_topics(state: OverallState):
    return {"subjects": ["lions", "elephants", "penguins"]}


def generate_joke(state: JokeState):
    joke_map = {
        "lions": "Why don't lions like fast food? Because they can't catch it!",
        "elephants": "Why don't elephants use computers? They're afraid of the mouse!",
        "penguins": "Why don't penguins like talking to strangers at parties? "
        "Because they find it hard to break the ice.",
    }
    return {"jokes": [joke_map[state["subject"]]]}


def continue_to_jokes(state: OverallState):
    return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]


def best_joke(state: OverallState):
    return {"best_selected_joke": "penguins"}


builder = StateGraph(OverallState)
builder.add_node("generate_topics", generate_topics)
builder.add_node("generate_joke", generate_joke)
builder.add_node("best_joke", best_joke)
builder.add_edge(START, "generate_topics")
builder.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"])
builder.add_edge("generate_joke", "best_joke")
builder.add_edge("best_joke", END)
graph = builder.compile()


LIONS = "Why don't lions like fast food? Because they can't catch it!"
ELEPHANTS = "Why don't elephants use computers? They're afraid of the mouse!"
PENGUINS = (
    "Why don't penguins like talking to strangers at parties? "
    "Because they find it hard to break the ice."
)


def test_map_reduce_streams_as_langgraph() -> None:
    steps = [step for step in graph.stream({"topic": "animals"})]
    assert steps[0] == {"generate_topics": {"subjects": ["lions", "elephants", "penguins"]}}
    # The three jokes run in parallel: each update streams when its task finishes.
    assert sorted(s["generate_joke"]["jokes"][0] for s in steps[1:4]) == sorted(
        [LIONS, ELEPHANTS, PENGUINS]
    )
    assert steps[4:] == [{"best_joke": {"best_selected_joke": "penguins"}}]


def test_map_reduce_reduces_in_send_order() -> None:
    out = graph.invoke({"topic": "animals"})
    assert out == {
        "topic": "animals",
        "subjects": ["lions", "elephants", "penguins"],
        "jokes": [LIONS, ELEPHANTS, PENGUINS],
        "best_selected_joke": "penguins",
    }
