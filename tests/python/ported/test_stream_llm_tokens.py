"""LangGraph docs, "Stream outputs" -> "LLM tokens": ``stream_mode="messages"`` with
a LangChain chat model called inside a node of a dataclass state, alone and with
``updates``, and "Filter by LLM invocation" (models tagged, an async node, the
stream filtered by ``metadata["tags"]``), imports changed only. The docs' ``init_chat_model(...)`` is LangChain's
``GenericFakeChatModel``, which streams word by word. Expected values: the output of
the same programs under LangGraph 1.2 (its metadata has keys ironloop's lacks:
``langgraph_triggers``, ``langgraph_path``, checkpoint namespaces; see
docs/decisions.md)."""

import contextlib
import io
from dataclasses import dataclass

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typing_extensions import TypedDict

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


# "Filter by LLM invocation": tags on the models, the stream filtered by them.
joke_model = GenericFakeChatModel(
    messages=iter([AIMessage("Why was the cat sitting on the computer?")]),
    tags=["joke"],
)
poem_model = GenericFakeChatModel(
    messages=iter([AIMessage("Soft paws tread the moonlit floor")]),
    tags=["poem"],
)


class State(TypedDict):
    topic: str
    joke: str
    poem: str


async def call_model(state, config):
    topic = state["topic"]
    print("Writing joke...")
    # Note: Passing the config through explicitly is required for python < 3.11
    # Since context var support wasn't added before then: https://docs.python.org/3/library/asyncio-task.html#creating-tasks
    joke_response = await joke_model.ainvoke(
        [{"role": "user", "content": f"Write a joke about {topic}"}],
        config,
    )
    print("\n\nWriting poem...")
    poem_response = await poem_model.ainvoke(
        [{"role": "user", "content": f"Write a short poem about {topic}"}],
        config,
    )
    return {"joke": joke_response.content, "poem": poem_response.content}


tagged = StateGraph(State).add_node(call_model).add_edge(START, "call_model").compile()


async def test_filter_by_llm_invocation() -> None:
    printed = []
    with contextlib.redirect_stdout(io.StringIO()):
        async for msg, metadata in tagged.astream({"topic": "cats"}, stream_mode="messages"):
            if metadata["tags"] == ["joke"]:
                printed.append(msg.content)
            assert metadata["langgraph_node"] == "call_model"
            assert metadata["langgraph_step"] == 1
            assert metadata["ls_provider"] == "genericfakechatmodel"
    assert "|".join(printed) == "Why| |was| |the| |cat| |sitting| |on| |the| |computer?"
