"""LangGraph docs, "Use breakpoints" -> static breakpoints (``interrupt_before`` /
``interrupt_after`` at compile time, continued with ``None``), imports changed only.
Expected values: the output of the same program under LangGraph 1.2."""

import contextlib
import io

from typing_extensions import TypedDict

from ironloop import MemorySaver as InMemorySaver
from ironloop.graph import END, START, StateGraph


class State(TypedDict):
    input: str


def step_1(state):
    print("---Step 1---")
    pass


def step_2(state):
    print("---Step 2---")
    pass


def step_3(state):
    print("---Step 3---")
    pass


builder = StateGraph(State)
builder.add_node("step_1", step_1)
builder.add_node("step_2", step_2)
builder.add_node("step_3", step_3)
builder.add_edge(START, "step_1")
builder.add_edge("step_1", "step_2")
builder.add_edge("step_2", "step_3")
builder.add_edge("step_3", END)

# Set up a checkpointer
checkpointer = InMemorySaver()

graph = builder.compile(checkpointer=checkpointer, interrupt_before=["step_3"])

# Input
initial_input = {"input": "hello world"}


def test_run_to_the_breakpoint_then_continue() -> None:
    # The docs print each event; here events and the nodes' prints are compared apart:
    # ironloop's stream runs ahead of its consumer, so the two may interleave
    # differently (docs/decisions.md).
    # Thread
    thread = {"configurable": {"thread_id": "1"}}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # Run the graph until the first interruption
        events = list(graph.stream(initial_input, thread, stream_mode="values"))
    assert events == [{"input": "hello world"}]
    assert out.getvalue() == "---Step 1---\n---Step 2---\n"
    snapshot = graph.get_state(thread)
    assert snapshot.values == {"input": "hello world"}
    assert snapshot.next == ("step_3",)
    assert snapshot.metadata["step"] == 2 and snapshot.interrupts == ()

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # You can continue the graph execution by passing in `None` for the input
        events = list(graph.stream(None, thread, stream_mode="values"))
    assert events == [{"input": "hello world"}]
    assert out.getvalue() == "---Step 3---\n"


def test_before_and_after_one_node_in_the_updates_stream() -> None:
    graph = builder.compile(
        checkpointer=checkpointer, interrupt_before=["step_2"], interrupt_after=["step_2"]
    )
    thread = {"configurable": {"thread_id": "2"}}
    with contextlib.redirect_stdout(io.StringIO()):
        assert list(graph.stream(initial_input, thread)) == [
            {"step_1": None},
            {"__interrupt__": ()},
        ]
        assert list(graph.stream(None, thread)) == [{"step_2": None}, {"__interrupt__": ()}]
        assert list(graph.stream(None, thread)) == [{"step_3": None}]
        assert graph.invoke(initial_input, {"configurable": {"thread_id": "3"}}) == {
            "input": "hello world"
        }
