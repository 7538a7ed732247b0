"""The agents' routing after the model, one rule in the core
(``src/prebuilt/after_model.rs``): pending calls to the tools, back to the model when
every call is answered, else done. Python calls it (``_ironloop._after_model``); a
routing function made by ``after_model_router`` is run by the engine in Rust, over the
graph's own messages channel."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from ironloop import END, START, StateGraph, ToolNode, add_messages, create_react_agent, tool
from ironloop._agent import after_model_router, pending_calls, route_after_model
from ironloop._ironloop import _after_model
from ironloop.messages import AIMessage, HumanMessage, ToolMessage
from ironloop.models import ScriptedChatModel


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


def _ai(*ids: str) -> AIMessage:
    calls = [{"name": "add", "args": {"a": 1, "b": 2}, "id": i} for i in ids]
    return AIMessage("", tool_calls=calls)


def test_the_rule_from_python() -> None:
    asked = [HumanMessage("2+3?"), _ai("a", "b")]
    route, calls = _after_model(asked)
    assert route == "tools"
    assert calls == [
        {"name": "add", "args": {"a": 1, "b": 2}, "id": i, "type": "tool_call"} for i in "ab"
    ]
    half = [*asked, ToolMessage("3", tool_call_id="a")]
    assert [c["id"] for c in pending_calls(half)] == ["b"]
    answered = [*half, ToolMessage("3", tool_call_id="b")]
    assert _after_model(answered) == ("back", [])
    assert _after_model([HumanMessage("hi"), AIMessage("hello")]) == ("done", [])
    assert _after_model([]) == ("done", [])
    # Message-like inputs are read as messages, as everywhere else.
    assert _after_model([("user", "hi")]) == ("done", [])
    assert route_after_model(answered, "model", "end", lambda c: "tools") == "model"


class Chat(TypedDict):
    chat: Annotated[list, add_messages]


def test_the_engine_runs_the_rule_over_the_graphs_messages_channel() -> None:
    """A state whose messages channel is not named ``messages``: the engine's router
    reads ``chat`` (the graph's one messages channel), one task per pending call."""
    turns = iter([_ai("x", "y"), AIMessage("5")])

    def model(state: Any) -> Any:
        return {"chat": [next(turns)]}

    g = StateGraph(Chat)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([add], messages_key="chat"))
    g.add_edge(START, "model")
    router = after_model_router("should_continue", "model", END, per_call=True)
    g.add_conditional_edges("model", router, ["tools", END])
    g.add_edge("tools", "model")
    steps = [list(u) for u in g.compile().stream({"chat": [("user", "1+2 twice")]})]
    assert steps == [["model"], ["tools"], ["tools"], ["model"]]


def test_react_agent_v1_and_v2_route_by_the_same_rule() -> None:
    for version, tool_steps in (("v1", [["tools"]]), ("v2", [["tools"], ["tools"]])):
        model = ScriptedChatModel([_ai("p", "q"), "done"])
        agent = create_react_agent(model, [add], version=version, response_format=None)
        steps = [list(u) for u in agent.stream({"messages": [("user", "go")]})]
        assert steps == [["agent"], *tool_steps, ["agent"]], version
