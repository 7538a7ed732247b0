"""LangGraph docs, "Call tools": a ``ToolNode`` of LangChain tools in a ReAct graph
(parallel tool calls, routed by ``tools_condition``'s rule). The docs' chat model is
LangChain's fake chat model with ``bind_tools``, handed the state's messages as they
are. Only the imports differ from the docs. The docs also call
``tool_node.invoke(...)`` by hand, outside a graph; LangGraph 1.2 refuses that
(``ValueError: Missing required config key 'N/A' for 'tools'``) while ironloop runs
it, so there is no LangGraph output to compare with and it is left out. Expected
values: the output of the same program under LangGraph 1.2."""

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from ironloop.graph import END, START, MessagesState, StateGraph
from ironloop.prebuilt import ToolNode, tools_condition


@tool
def get_weather(location: str):
    """Call to get the current weather."""
    if location.lower() in ["sf", "san francisco"]:
        return "It's 60 degrees and foggy."
    else:
        return "It's 90 degrees and sunny."


@tool
def get_coolest_cities():
    """Get a list of coolest cities"""
    return "nyc, sf"


tool_node = ToolNode([get_weather, get_coolest_cities])


class FakeToolCallingModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


def test_a_react_graph_with_tools_condition() -> None:
    model_with_tools = FakeToolCallingModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[{"name": "get_coolest_cities", "args": {}, "id": "c1"}],
                ),
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "get_weather", "args": {"location": "nyc"}, "id": "c2"},
                        {"name": "get_weather", "args": {"location": "sf"}, "id": "c3"},
                    ],
                ),
                AIMessage("NYC is 90 and sunny; SF is 60 and foggy."),
            ]
        )
    ).bind_tools([get_weather, get_coolest_cities])

    def should_continue(state: MessagesState):
        messages = state["messages"]
        last_message = messages[-1]
        if last_message.tool_calls:
            return "tools"
        return END

    def call_model(state: MessagesState):
        messages = state["messages"]
        response = model_with_tools.invoke(messages)
        return {"messages": [response]}

    builder = StateGraph(MessagesState)

    # Define the two nodes we will cycle between
    builder.add_node("call_model", call_model)
    builder.add_node("tools", tool_node)

    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", should_continue, ["tools", END])
    builder.add_edge("tools", "call_model")

    graph = builder.compile()

    shown = []
    for chunk in graph.stream(
        {"messages": [{"role": "user", "content": "what's the weather in the coolest cities?"}]},
        stream_mode="values",
    ):
        message = chunk["messages"][-1]
        shown.append(
            (message.type, message.content, [c["name"] for c in getattr(message, "tool_calls", [])])
        )
    assert shown == [
        ("human", "what's the weather in the coolest cities?", []),
        ("ai", "", ["get_coolest_cities"]),
        ("tool", "nyc, sf", []),
        ("ai", "", ["get_weather", "get_weather"]),
        ("tool", "It's 60 degrees and foggy.", []),
        ("ai", "NYC is 90 and sunny; SF is 60 and foggy.", []),
    ]

    # The same graph with the prebuilt router.
    assert tools_condition({"messages": [AIMessage("done")]}) == END
