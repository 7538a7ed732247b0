"""LangGraph docs, "Workflows and agents": "Prompt chaining" (a gate routing on the
first answer) and "Parallelization" (three model calls fanned out, then aggregated),
imports changed only. The docs' ``init_chat_model(...)`` is a LangChain runnable that
answers each prompt with a fixed text (the calls run in parallel, so a list of answers
handed out in call order would not be the same from run to run). Expected values: the
output of the same programs under LangGraph 1.2."""

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from typing_extensions import TypedDict

from ironloop.graph import END, START, StateGraph

ANSWERS = {
    "Write a short joke about cats": "Cats nap all day",
    "Make this joke funnier by adding wordplay: Cats nap all day": "Cats are purr-fect nappers",
    "Add a surprising twist to this joke: Cats are purr-fect nappers": "...until the vacuum wakes",
    "Write a short joke about dogs": "Why do dogs run? For fun!",
    "Write a joke about dogs": "Dogs fetch, cats judge!",
    "Write a story about dogs": "A dog found a bone.",
    "Write a poem about dogs": "Loyal paws at the door.",
}
llm = RunnableLambda(lambda prompt: AIMessage(ANSWERS[prompt]))


# Graph state
class State(TypedDict):
    topic: str
    joke: str
    improved_joke: str
    final_joke: str


# Nodes
def generate_joke(state: State):
    """First LLM call to generate initial joke"""

    msg = llm.invoke(f"Write a short joke about {state['topic']}")
    return {"joke": msg.content}


def check_punchline(state: State):
    """Gate function to check if the joke has a punchline"""

    # Simple check - does the joke contain "?" or "!"
    if "?" in state["joke"] or "!" in state["joke"]:
        return "Pass"
    return "Fail"


def improve_joke(state: State):
    """Second LLM call to improve the joke"""

    msg = llm.invoke(f"Make this joke funnier by adding wordplay: {state['joke']}")
    return {"improved_joke": msg.content}


def polish_joke(state: State):
    """Third LLM call for final polish"""
    msg = llm.invoke(f"Add a surprising twist to this joke: {state['improved_joke']}")
    return {"final_joke": msg.content}


# Build workflow
workflow = StateGraph(State)

# Add nodes
workflow.add_node("generate_joke", generate_joke)
workflow.add_node("improve_joke", improve_joke)
workflow.add_node("polish_joke", polish_joke)

# Add edges to connect nodes
workflow.add_edge(START, "generate_joke")
workflow.add_conditional_edges(
    "generate_joke", check_punchline, {"Fail": "improve_joke", "Pass": END}
)
workflow.add_edge("improve_joke", "polish_joke")
workflow.add_edge("polish_joke", END)

# Compile
chain = workflow.compile()


def test_prompt_chaining() -> None:
    state = chain.invoke({"topic": "cats"})
    assert state == {
        "topic": "cats",
        "joke": "Cats nap all day",
        "improved_joke": "Cats are purr-fect nappers",
        "final_joke": "...until the vacuum wakes",
    }
    # A joke with a punchline passes the gate and ends the run.
    assert list(chain.stream({"topic": "dogs"}, stream_mode="updates")) == [
        {"generate_joke": {"joke": "Why do dogs run? For fun!"}}
    ]


class ParallelState(TypedDict):
    topic: str
    joke: str
    story: str
    poem: str
    combined_output: str


# Nodes
def call_llm_1(state: ParallelState):
    """First LLM call to generate initial joke"""

    msg = llm.invoke(f"Write a joke about {state['topic']}")
    return {"joke": msg.content}


def call_llm_2(state: ParallelState):
    """Second LLM call to generate story"""

    msg = llm.invoke(f"Write a story about {state['topic']}")
    return {"story": msg.content}


def call_llm_3(state: ParallelState):
    """Third LLM call to generate poem"""

    msg = llm.invoke(f"Write a poem about {state['topic']}")
    return {"poem": msg.content}


def aggregator(state: ParallelState):
    """Combine the joke, story and poem into a single output"""

    combined = f"Here's a story, joke, and poem about {state['topic']}!\n\n"
    combined += f"STORY:\n{state['story']}\n\n"
    combined += f"JOKE:\n{state['joke']}\n\n"
    combined += f"POEM:\n{state['poem']}"
    return {"combined_output": combined}


# Build workflow
parallel_builder = StateGraph(ParallelState)

# Add nodes
parallel_builder.add_node("call_llm_1", call_llm_1)
parallel_builder.add_node("call_llm_2", call_llm_2)
parallel_builder.add_node("call_llm_3", call_llm_3)
parallel_builder.add_node("aggregator", aggregator)

# Add edges to connect nodes
parallel_builder.add_edge(START, "call_llm_1")
parallel_builder.add_edge(START, "call_llm_2")
parallel_builder.add_edge(START, "call_llm_3")
parallel_builder.add_edge("call_llm_1", "aggregator")
parallel_builder.add_edge("call_llm_2", "aggregator")
parallel_builder.add_edge("call_llm_3", "aggregator")
parallel_builder.add_edge("aggregator", END)
parallel_workflow = parallel_builder.compile()


def test_parallelization() -> None:
    state = parallel_workflow.invoke({"topic": "dogs"})
    assert state["combined_output"] == (
        "Here's a story, joke, and poem about dogs!\n\n"
        "STORY:\nA dog found a bone.\n\n"
        "JOKE:\nDogs fetch, cats judge!\n\n"
        "POEM:\nLoyal paws at the door."
    )
    updates = list(parallel_workflow.stream({"topic": "dogs"}, stream_mode="values"))
    assert [sorted(u) for u in updates] == [
        ["topic"],
        ["joke", "poem", "story", "topic"],
        ["combined_output", "joke", "poem", "story", "topic"],
    ]
