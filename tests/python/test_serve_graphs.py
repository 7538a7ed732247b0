"""The graphs ``ironloop serve`` serves (``ironloop.serve.graphs``): compiled again onto
the server's checkpointer and store, each agent still runs as the project made it."""

from __future__ import annotations

from typing import Any, TypedDict

from ironloop import END, START, MemorySaver, StateGraph, create_react_agent, tool
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


class Step(TypedDict):
    items: list[str]


def _steps_builder() -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Step)
    builder.add_node("first", lambda s: {"items": [*s["items"], "first"]})
    builder.add_node("second", lambda s: {"items": [*s["items"], "second"]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder


def test_a_served_graph_keeps_what_it_was_compiled_with_and_what_was_set_on_it() -> None:
    # LangGraph's server copies the compiled graph onto its checkpointer: its
    # compile-time breakpoints and the attributes set on it stay. A graph compiled
    # with interrupt_before=["second"] must stop there when served too.
    graph = _steps_builder().compile(interrupt_before=["second"], name="steps")
    graph.step_timeout = 7.5
    served = ServedGraph("steps", graph, graph.name, None, MemorySaver(), None)
    config = {"configurable": {"thread_id": "t"}}
    assert served.default.invoke({"items": []}, config) == {"items": ["first"]}
    assert served.default.get_state(config).next == ("second",)
    assert served.default.invoke(None, config) == {"items": ["first", "second"]}
    assert served.default.step_timeout == 7.5
    assert list(served.default.interrupt_before_nodes) == ["second"]


def test_a_served_agent_keeps_its_breakpoints() -> None:
    class Calls:
        def invoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> Any:
            call = {"name": "lookup", "args": {"query": "q"}, "id": "call_1"}
            return AIMessage(content="", tool_calls=[call])

    agent = create_react_agent(Calls(), [lookup], interrupt_before=["tools"])
    assert list(agent.interrupt_before_nodes) == ["tools"]
    served = ServedGraph("agent", agent, agent.name, None, MemorySaver(), None)
    config = {"configurable": {"thread_id": "t"}}
    served.default.invoke({"messages": [{"role": "user", "content": "hi"}]}, config)
    assert served.default.get_state(config).next == ("tools",)
