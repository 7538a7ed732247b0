"""A LangGraph tutorial-style program ("Add human-in-the-loop controls", "Customize
state"): a ``MessagesState`` graph whose node calls a LangChain chat model with
``llm.invoke(state["messages"])``, a ``ToolNode`` routed by ``tools_condition``, a
tool that pauses with ``interrupt``, a resume with ``Command``, and ``update_state``.
Written against ironloop's imports; ``test_langgraph_tutorial.py`` runs it as it is and
under LangGraph (its imports mapped back, ``scripts/ported_under_langgraph.py``) and
compares what it prints.

Run as a script, it prints one JSON document: the transcript of every step."""

import json

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from ironloop import MemorySaver
from ironloop.graph import START, MessagesState, StateGraph, interrupt
from ironloop.prebuilt import ToolNode, tools_condition
from ironloop.types import Command


@tool
def human_assistance(query: str) -> str:
    """Request assistance from a human."""
    human_response = interrupt({"query": query})
    return human_response["data"]


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"It's always sunny in {city}."


class FakeToolCallingModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


llm = FakeToolCallingModel(
    messages=iter(
        [
            AIMessage(
                "Let me check.",
                id="ai-1",
                tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "w1"}],
            ),
            AIMessage(
                "",
                id="ai-2",
                tool_calls=[
                    {"name": "human_assistance", "args": {"query": "Plan a trip?"}, "id": "h1"}
                ],
            ),
            AIMessage("Paris is sunny and an expert agrees: go.", id="ai-3"),
            AIMessage("You're welcome!", id="ai-4"),
        ]
    )
).bind_tools([human_assistance, get_weather])

seen = []


def chatbot(state: MessagesState):
    seen.append(
        [(type(m).__name__, isinstance(m, BaseMessage), m.content) for m in state["messages"]]
    )
    message = llm.invoke(state["messages"])
    return {"messages": [message]}


graph_builder = StateGraph(MessagesState)
graph_builder.add_node("chatbot", chatbot)
graph_builder.add_node("tools", ToolNode(tools=[human_assistance, get_weather]))
graph_builder.add_conditional_edges("chatbot", tools_condition)
graph_builder.add_edge("tools", "chatbot")
graph_builder.add_edge(START, "chatbot")
graph = graph_builder.compile(checkpointer=MemorySaver())


def shown(m):
    out = {"class": type(m).__name__, "type": m.type, "content": m.content}
    if isinstance(m, AIMessage) and m.tool_calls:
        out["tool_calls"] = [(c["name"], c["args"], c["id"]) for c in m.tool_calls]
    if isinstance(m, ToolMessage):
        out["tool_call_id"] = m.tool_call_id
        out["name"] = m.name
    return out


def main():
    config = {"configurable": {"thread_id": "1"}}
    log = []
    user = HumanMessage("What's the weather in Paris? Then ask an expert.")
    for event in graph.stream({"messages": [user]}, config, stream_mode="values"):
        log.append(["values", [shown(m) for m in event["messages"]]])
    snapshot = graph.get_state(config)
    log.append(["next", list(snapshot.next)])
    log.append(["interrupts", [i.value for i in snapshot.interrupts]])
    for event in graph.stream(
        Command(resume={"data": "Go in spring."}), config, stream_mode="updates"
    ):
        for node, update in event.items():
            log.append(["update", node, [shown(m) for m in update["messages"]]])
    graph.update_state(
        config, {"messages": [HumanMessage("Thanks!", id="thanks")]}, as_node="tools"
    )
    log.append(
        ["after update_state", [shown(m) for m in graph.get_state(config).values["messages"]]]
    )
    final = graph.invoke(None, config)
    log.append(["final", [shown(m) for m in final["messages"]]])
    log.append(["ids", [m.id for m in final["messages"] if m.type == "ai"]])
    log.append(["seen", seen])
    print(json.dumps(log, indent=1))


if __name__ == "__main__":
    main()
