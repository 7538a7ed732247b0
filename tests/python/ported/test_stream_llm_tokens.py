"""LangGraph docs, "Stream outputs" -> "LLM tokens": ``stream_mode="messages"`` with
a LangChain chat model called inside a node of a dataclass state, alone and with
``updates``, imports changed only. The docs' ``init_chat_model(...)`` is LangChain's
``GenericFakeChatModel``, which streams word by word. Expected values: the output of
the same program under LangGraph 1.2 (its metadata has more keys than
``langgraph_node``; see docs/decisions.md)."""

from dataclasses import dataclass

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from ironloop.graph import START, StateGraph


@dataclass
class MyState:
    topic: str
    joke: str = ""


llm = GenericFakeChatModel(
    messages=iter(
        [
            AIMessage("Why did the ice cream truck break down? It had a rocky road!"),
            AIMessage("Why do cats love ice cream? Purr-fect scoops!"),
        ]
    )
)


def call_model(state: MyState):
    """Call the LLM to generate a joke about a topic"""
    llm_response = llm.invoke([{"role": "user", "content": f"Generate a joke about {state.topic}"}])
    return {"joke": llm_response.content}


graph = StateGraph(MyState).add_node(call_model).add_edge(START, "call_model").compile()


def test_llm_tokens() -> None:
    printed = []
    for message_chunk, metadata in graph.stream(
        {"topic": "ice cream"},
        stream_mode="messages",
    ):
        if message_chunk.content:
            printed.append(message_chunk.content)
            assert metadata["langgraph_node"] == "call_model"
    assert "|".join(printed) == (
        "Why| |did| |the| |ice| |cream| |truck| |break| |down?| |It| |had| |a| |rocky| |road!"
    )

    items = list(graph.stream({"topic": "cats"}, stream_mode=["messages", "updates"]))
    tokens = [(type(c).__name__, c.content) for mode, (c, _) in items[:-1]]
    assert tokens == [
        ("AIMessageChunk", word)
        for word in ["Why", " ", "do", " ", "cats", " ", "love", " ", "ice", " ", "cream?"]
        + [" ", "Purr-fect", " ", "scoops!"]
    ]
    assert items[-1] == (
        "updates",
        {"call_model": {"joke": "Why do cats love ice cream? Purr-fect scoops!"}},
    )
