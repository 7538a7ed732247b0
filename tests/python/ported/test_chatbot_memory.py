"""LangGraph docs, "Add memory" (a ``MessagesState`` chatbot with a checkpointer,
remembering a thread) and "Delete messages" (``RemoveMessage`` from langchain-core).
The docs' model is LangChain's fake chat model, handed ``state["messages"]`` as they
are (langchain-core messages under ironloop as under LangGraph). Only the imports
differ from the docs. Expected values: the output of the same programs under
LangGraph 1.2."""

import contextlib
import io

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, RemoveMessage

from ironloop import MemorySaver as InMemorySaver
from ironloop.graph import START, MessagesState, StateGraph


def _model() -> FakeMessagesListChatModel:
    return FakeMessagesListChatModel(
        responses=[AIMessage("Hi Bob! How can I help you today?"), AIMessage("Your name is Bob.")]
    )


def test_a_chatbot_remembers_its_thread() -> None:
    model = _model()
    seen = []

    def call_model(state: MessagesState):
        seen.append([m.content for m in state["messages"]])
        response = model.invoke(state["messages"])
        return {"messages": response}

    builder = StateGraph(MessagesState)
    builder.add_node(call_model)
    builder.add_edge(START, "call_model")
    checkpointer = InMemorySaver()
    graph = builder.compile(checkpointer=checkpointer)

    config = {"configurable": {"thread_id": "1"}}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for chunk in graph.stream(
            {"messages": [{"role": "user", "content": "hi! I'm bob"}]},
            config,
            stream_mode="values",
        ):
            chunk["messages"][-1].pretty_print()
        for chunk in graph.stream(
            {"messages": [{"role": "user", "content": "what's my name?"}]},
            config,
            stream_mode="values",
        ):
            chunk["messages"][-1].pretty_print()
    assert out.getvalue() == (
        "================================ Human Message =================================\n"
        "\n"
        "hi! I'm bob\n"
        "================================== Ai Message ==================================\n"
        "\n"
        "Hi Bob! How can I help you today?\n"
        "================================ Human Message =================================\n"
        "\n"
        "what's my name?\n"
        "================================== Ai Message ==================================\n"
        "\n"
        "Your name is Bob.\n"
    )
    # The second call saw the first exchange: the thread's memory.
    assert seen == [
        ["hi! I'm bob"],
        ["hi! I'm bob", "Hi Bob! How can I help you today?", "what's my name?"],
    ]
    state = graph.get_state(config)
    assert [m.type for m in state.values["messages"]] == ["human", "ai", "human", "ai"]
    assert state.next == ()


def test_delete_messages() -> None:
    model = _model()

    def call_model(state: MessagesState):
        response = model.invoke(state["messages"])
        return {"messages": response}

    def delete_messages(state):
        messages = state["messages"]
        if len(messages) > 2:
            # remove the earliest two messages
            return {"messages": [RemoveMessage(id=m.id) for m in messages[:2]]}

    builder = StateGraph(MessagesState)
    builder.add_sequence([call_model, delete_messages])
    builder.add_edge(START, "call_model")

    checkpointer = InMemorySaver()
    app = builder.compile(checkpointer=checkpointer)

    config = {"configurable": {"thread_id": "1"}}
    shown = []
    for event in app.stream(
        {"messages": [{"role": "user", "content": "hi! I'm bob"}]}, config, stream_mode="values"
    ):
        shown.append([(message.type, message.content) for message in event["messages"]])
    for event in app.stream(
        {"messages": [{"role": "user", "content": "what's my name?"}]}, config, stream_mode="values"
    ):
        shown.append([(message.type, message.content) for message in event["messages"]])
    hi, hello = ("human", "hi! I'm bob"), ("ai", "Hi Bob! How can I help you today?")
    name, bob = ("human", "what's my name?"), ("ai", "Your name is Bob.")
    assert shown == [[hi], [hi, hello], [hi, hello, name], [hi, hello, name, bob], [name, bob]]
