"""The graphs ``ironloop serve`` serves (``ironloop.serve.graphs``): compiled again onto
the server's checkpointer and store, each agent still runs as the project made it."""

from __future__ import annotations

from typing import Any

from ironloop import MemorySaver, create_react_agent, tool
from ironloop.messages import AIMessage
from ironloop.serve.graphs import ServedGraph


class Scripted:
    """A model answering with its own name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def invoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> AIMessage:
        return AIMessage(content=f"{self.name} answers {messages[-1].content}")


@tool
def lookup(query: str) -> str:
    """Looks a query up."""
    return query


def test_served_agents_of_one_shape_keep_their_own_model_prompt_and_defaults() -> None:
    # Two agents of one shape (the same tool): one compiled graph underneath, each
    # with its own model and prompt, as the project made them.
    first = create_react_agent(Scripted("first"), [lookup], prompt="be brief", name="one")
    second = create_react_agent(Scripted("second"), [lookup], prompt="be long", name="two")
    saver = MemorySaver()
    for graph_id, graph, model in (("a", first, "first"), ("b", second, "second")):
        served = ServedGraph(graph_id, graph, graph.name, None, saver, None)
        config = {"configurable": {"thread_id": graph_id}}
        out = served.default.invoke({"messages": [{"role": "user", "content": "hi"}]}, config)
        assert out["messages"][-1].content == f"{model} answers hi"
        assert served.default.checkpointer is saver
        assert served.default.get_state(config).values["messages"][-1].content.startswith(model)
        assert served.default.run_defaults == graph.run_defaults
