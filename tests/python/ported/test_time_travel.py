"""LangGraph docs, "Use time-travel": run a workflow, list its checkpoints with
``get_state_history``, edit an old one with ``update_state`` and resume from there (a
fork), imports changed only. The docs' ``init_chat_model(...)`` is LangChain's fake
LLM with the answers the docs show. Expected values: the output of the same program
under LangGraph 1.2."""

import uuid

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from typing_extensions import NotRequired, TypedDict

from ironloop import MemorySaver as InMemorySaver
from ironloop.graph import END, START, StateGraph

llm = FakeListChatModel(
    responses=[
        "Socks that go missing in the dryer",
        "Why do socks vanish in the dryer? They're on a sole-searching journey!",
        "Why did the chicken join a band? Because it had the drumsticks!",
    ]
)


class State(TypedDict):
    topic: NotRequired[str]
    joke: NotRequired[str]


def generate_topic(state: State):
    """LLM call to generate a topic for the joke"""
    msg = llm.invoke("Give me a funny topic for a joke")
    return {"topic": msg.content}


def write_joke(state: State):
    """LLM call to write a joke based on the topic"""
    msg = llm.invoke(f"Write a short joke about {state['topic']}")
    return {"joke": msg.content}


# Build workflow
workflow = StateGraph(State)

# Add nodes
workflow.add_node("generate_topic", generate_topic)
workflow.add_node("write_joke", write_joke)

# Add edges to connect nodes
workflow.add_edge(START, "generate_topic")
workflow.add_edge("generate_topic", "write_joke")
workflow.add_edge("write_joke", END)

# Compile
checkpointer = InMemorySaver()
graph = workflow.compile(checkpointer=checkpointer)

SOCKS = "Socks that go missing in the dryer"


def test_run_history_update_and_fork() -> None:
    config = {
        "configurable": {
            "thread_id": uuid.uuid4(),
        }
    }
    state = graph.invoke({}, config)
    assert state == {
        "topic": SOCKS,
        "joke": "Why do socks vanish in the dryer? They're on a sole-searching journey!",
    }

    # The states are returned in reverse chronological order.
    states = list(graph.get_state_history(config))
    assert [(s.next, s.metadata["step"], s.metadata["source"]) for s in states] == [
        ((), 2, "loop"),
        (("write_joke",), 1, "loop"),
        (("generate_topic",), 0, "loop"),
        (("__start__",), -1, "input"),
    ]

    # This is the state before last (states are listed in chronological order)
    selected_state = states[1]
    assert selected_state.next == ("write_joke",)
    assert selected_state.values == {"topic": SOCKS}

    new_config = graph.update_state(selected_state.config, values={"topic": "chickens"})
    assert sorted(new_config["configurable"]) == ["checkpoint_id", "checkpoint_ns", "thread_id"]

    assert graph.invoke(None, new_config) == {
        "topic": "chickens",
        "joke": "Why did the chicken join a band? Because it had the drumsticks!",
    }
    states = list(graph.get_state_history(config))
    assert [
        (s.metadata["step"], s.metadata["source"], s.next, s.values.get("topic")) for s in states
    ] == [
        (3, "loop", (), "chickens"),
        (2, "update", ("write_joke",), "chickens"),
        (2, "loop", (), SOCKS),
        (1, "loop", ("write_joke",), SOCKS),
        (0, "loop", ("generate_topic",), None),
        (-1, "input", ("__start__",), None),
    ]
    # The fork is the thread's latest state.
    assert graph.get_state(config).values["topic"] == "chickens"
