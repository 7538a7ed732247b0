"""LangGraph docs, "Use the graph API" -> "Add runtime configuration"
(``context_schema``, ``Runtime[ContextSchema]`` and ``get_runtime``), imports changed
only. The docs' ``get_llm(provider)`` is a string here. Expected values: the output of
the same program under LangGraph 1.2."""

from dataclasses import dataclass

from typing_extensions import TypedDict

from ironloop.graph import END, START, StateGraph
from ironloop.runtime import Runtime, get_runtime


@dataclass
class ContextSchema:
    llm_provider: str = "openai"


class State(TypedDict):
    question: str
    answer: str


def node_a(state: State, runtime: Runtime[ContextSchema]):
    llm = runtime.context.llm_provider
    return {"answer": f"{llm} answers {state['question']}"}


def node_b(state: State):
    runtime = get_runtime(ContextSchema)
    return {"answer": state["answer"] + f" (checked by {runtime.context.llm_provider})"}


builder = StateGraph(State, context_schema=ContextSchema)
builder.add_node(node_a)
builder.add_node(node_b)
builder.add_edge(START, "node_a")
builder.add_edge("node_a", "node_b")
builder.add_edge("node_b", END)
graph = builder.compile()

ANSWER = {"question": "hi", "answer": "anthropic answers hi (checked by anthropic)"}


def test_context_as_an_instance_and_as_a_dict() -> None:
    assert (
        graph.invoke({"question": "hi"}, context=ContextSchema(llm_provider="anthropic")) == ANSWER
    )
    assert graph.invoke({"question": "hi"}, context={"llm_provider": "anthropic"}) == ANSWER


def test_context_in_a_stream() -> None:
    assert list(graph.stream({"question": "q"}, context=ContextSchema("mistral"))) == [
        {"node_a": {"answer": "mistral answers q"}},
        {"node_b": {"answer": "mistral answers q (checked by mistral)"}},
    ]


def test_no_context_is_none() -> None:
    try:
        graph.invoke({"question": "hi"})
    except AttributeError as e:
        assert str(e) == "'NoneType' object has no attribute 'llm_provider'"
    else:
        raise AssertionError("no context, yet runtime.context had llm_provider")
