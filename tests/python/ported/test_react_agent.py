"""LangGraph docs, "Agents" (``create_react_agent`` with a LangChain chat model and a
LangChain ``@tool``) and "Add human-in-the-loop" (``interrupt()`` inside a tool of the
agent, approved or edited with ``Command(resume=...)``), imports changed only. The
docs' ``init_chat_model("anthropic:...")`` is LangChain's fake chat model with
``bind_tools`` (as LangGraph's own tests fake it). Expected values: the output of the
same programs under LangGraph 1.2 (which also warns that ``create_react_agent`` moved
to ``langchain.agents``)."""

import contextlib
import io

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from ironloop import MemorySaver as InMemorySaver
from ironloop.prebuilt import create_react_agent
from ironloop.types import Command, interrupt


class FakeToolCallingModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


@tool
def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


def _weather_model(city: str, answer: str) -> FakeToolCallingModel:
    call = {"name": "get_weather", "args": {"city": city}, "id": "call_1"}
    return FakeToolCallingModel(
        messages=iter([AIMessage("", tool_calls=[call]), AIMessage(answer)])
    )


def test_a_react_agent_with_a_langchain_model_and_tool() -> None:
    model = _weather_model("sf", "It's always sunny in sf!")
    agent = create_react_agent(
        model=model, tools=[get_weather], prompt="You are a helpful assistant"
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "what is the weather in sf"}]})
    assert sorted(result) == ["messages"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for m in result["messages"]:
            m.pretty_print()
    assert out.getvalue() == (
        "================================ Human Message =================================\n"
        "\n"
        "what is the weather in sf\n"
        "================================== Ai Message ==================================\n"
        "Tool Calls:\n"
        "  get_weather (call_1)\n"
        " Call ID: call_1\n"
        "  Args:\n"
        "    city: sf\n"
        "================================= Tool Message =================================\n"
        "Name: get_weather\n"
        "\n"
        "It's always sunny in sf!\n"
        "================================== Ai Message ==================================\n"
        "\n"
        "It's always sunny in sf!\n"
    )
    tool_message = result["messages"][2]
    assert (tool_message.name, tool_message.tool_call_id) == ("get_weather", "call_1")


def test_the_agents_updates_stream() -> None:
    model = _weather_model("nyc", "It's sunny in nyc.")
    agent = create_react_agent(
        model=model, tools=[get_weather], prompt="You are a helpful assistant"
    )
    shown = []
    for chunk in agent.stream(
        {"messages": [{"role": "user", "content": "what is the weather in nyc"}]},
        stream_mode="updates",
    ):
        for node, update in chunk.items():
            shown.append((node, [(type(m).__name__, m.content) for m in update["messages"]]))
    assert shown == [
        ("agent", [("AIMessage", "")]),
        ("tools", [("ToolMessage", "It's always sunny in nyc!")]),
        ("agent", [("AIMessage", "It's sunny in nyc.")]),
    ]


# An example of a sensitive tool that requires human review / approval
def book_hotel(hotel_name: str):
    """Book a hotel"""
    response = interrupt(
        f"Trying to call `book_hotel` with args {{'hotel_name': {hotel_name}}}. "
        "Please approve or suggest edits."
    )
    if response["type"] == "accept":
        pass
    elif response["type"] == "edit":
        hotel_name = response["args"]["hotel_name"]
    else:
        raise ValueError(f"Unknown response type: {response['type']}")
    return f"Successfully booked a stay at {hotel_name}."


def _hotel_agent(answer: str):
    call = {"name": "book_hotel", "args": {"hotel_name": "McKittrick Hotel"}, "id": "call_1"}
    model = FakeToolCallingModel(
        messages=iter([AIMessage("", tool_calls=[call]), AIMessage(answer)])
    )
    checkpointer = InMemorySaver()
    return create_react_agent(model=model, tools=[book_hotel], checkpointer=checkpointer)


def _show(chunk):
    out = {}
    for k, v in chunk.items():
        if k == "__interrupt__":
            out[k] = [i.value for i in v]
        else:
            out[k] = [(type(m).__name__, m.content) for m in v["messages"]]
    return out


QUESTION = (
    "Trying to call `book_hotel` with args {'hotel_name': McKittrick Hotel}. "
    "Please approve or suggest edits."
)


def test_an_interrupt_in_a_tool_accepted() -> None:
    agent = _hotel_agent("Successfully booked a stay at McKittrick Hotel.")
    config = {"configurable": {"thread_id": "1"}}
    first = [
        _show(c)
        for c in agent.stream(
            {"messages": [{"role": "user", "content": "book a stay at McKittrick hotel"}]},
            config,
        )
    ]
    assert first == [{"agent": [("AIMessage", "")]}, {"__interrupt__": [QUESTION]}]
    assert agent.get_state(config).next == ("tools",)
    second = [_show(c) for c in agent.stream(Command(resume={"type": "accept"}), config)]
    assert second == [
        {"tools": [("ToolMessage", "Successfully booked a stay at McKittrick Hotel.")]},
        {"agent": [("AIMessage", "Successfully booked a stay at McKittrick Hotel.")]},
    ]


def test_an_interrupt_in_a_tool_edited() -> None:
    agent = _hotel_agent("Booked the Grand Hotel instead.")
    config = {"configurable": {"thread_id": "2"}}
    list(agent.stream({"messages": [{"role": "user", "content": "book a stay"}]}, config))
    resume = Command(resume={"type": "edit", "args": {"hotel_name": "Grand Hotel"}})
    assert [_show(c) for c in agent.stream(resume, config)] == [
        {"tools": [("ToolMessage", "Successfully booked a stay at Grand Hotel.")]},
        {"agent": [("AIMessage", "Booked the Grand Hotel instead.")]},
    ]
