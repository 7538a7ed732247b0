"""ToolNode as LangGraph's words and raises it: the error texts a model reads (a tool's
own exception by its ``repr``, a call to a tool the node lacks naming the tools there
are), state injection for a bare message list, a missing injected state field raised
to the caller, and what a ``wrap_tool_call`` interceptor returns; plus
``create_react_agent``'s pre- and post-model hooks (LangGraph 1.2.24 ran the same
programs to fix the expected values)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import (
    START,
    InjectedState,
    StateGraph,
    ToolNode,
    add_messages,
    create_react_agent,
    tool,
)
from ironloop.graph import REMOVE_ALL_MESSAGES
from ironloop.messages import AIMessage, HumanMessage, RemoveMessage
from ironloop.models import ScriptedChatModel


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def fails(a: int) -> int:
    """Fails."""
    raise ValueError(f"bad {a}")


def ask(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)],
    )


class State(TypedDict):
    messages: Annotated[list, add_messages]
    foo: str


def in_graph(node: ToolNode) -> Any:
    return StateGraph(State).add_node("tools", node).add_edge(START, "tools").compile()


# --- error texts ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["invoke", "ainvoke", "graph", "interceptor"])
@pytest.mark.parametrize("handle", [True, (ValueError,)], ids=["true", "types"])
def test_a_tools_exception_reads_as_langgraphs_text(where: str, handle: Any) -> None:
    msg = ask(("fails", {"a": 1}), ("add", {"a": 1, "b": 2}))
    if where == "interceptor":
        node = ToolNode([fails, add], handle_tool_errors=handle, wrap_tool_call=lambda r, x: x(r))
        out = node.invoke({"messages": [msg]})["messages"]
    elif where == "graph":
        node = ToolNode([fails, add], handle_tool_errors=handle)
        out = in_graph(node).invoke({"messages": [msg], "foo": "x"})["messages"][1:]
    else:
        node = ToolNode([fails, add], handle_tool_errors=handle)
        run = node.invoke if where == "invoke" else lambda s: asyncio.run(node.ainvoke(s))
        out = run({"messages": [msg]})["messages"]
    bad, good = out
    assert bad.status == "error" and bad.tool_call_id == "c0"
    assert bad.content == "Error: ValueError('bad 1')\n Please fix your mistakes."
    assert good.content == "3"


@pytest.mark.parametrize("where", ["invoke", "graph", "interceptor"])
def test_an_unknown_tool_names_the_tools_there_are(where: str) -> None:
    msg = ask(("nope", {}))
    if where == "graph":
        out = in_graph(ToolNode([fails, add])).invoke({"messages": [msg], "foo": "x"})
        (reply,) = out["messages"][1:]
    else:
        wrap = {"wrap_tool_call": lambda r, x: x(r)} if where == "interceptor" else {}
        (reply,) = ToolNode([fails, add], **wrap).invoke({"messages": [msg]})["messages"]
    assert reply.status == "error" and reply.name == "nope"
    assert reply.content == "Error: nope is not a valid tool, try one of [add, fails]."


def test_invalid_arguments_read_as_langchains_invocation_error() -> None:
    # LangChain's ToolInvocationError text; the errors are the JSON Schema check's (in
    # Rust), each after its location, as LangChain's lines of pydantic's errors.
    (reply,) = ToolNode([add]).invoke({"messages": [ask(("add", {"a": 1}))]})["messages"]
    assert reply.status == "error"
    assert reply.content == (
        "Error invoking tool 'add' with kwargs {'a': 1} with error:\n"
        ' b: "b" is a required property\n'
        " Please fix the error and try again."
    )


def test_a_custom_text_and_false_are_unchanged() -> None:
    msg = {"messages": [ask(("fails", {"a": 2}))]}
    (reply,) = ToolNode([fails], handle_tool_errors="no luck").invoke(msg)["messages"]
    assert reply.content == "no luck"
    with pytest.raises(ValueError, match="bad 2"):
        ToolNode([fails], handle_tool_errors=False).invoke(msg)


# --- state injection ----------------------------------------------------------------------


def test_a_bare_message_list_is_injected_as_a_messages_state() -> None:
    seen: list[Any] = []

    @tool
    def look(state: Annotated[dict, InjectedState]) -> str:
        """Looks."""
        seen.append(state)
        return state["foo"]

    msg = ask(("look", {}))
    (reply,) = ToolNode([look]).invoke([msg])
    assert seen == [{"messages": [msg]}]
    assert (
        reply.status == "error"
        and reply.content == "Error: KeyError('foo')\n Please fix your mistakes."
    )


@tool
def wants_foo(foo: Annotated[str, InjectedState("foo")]) -> str:
    """Reads foo."""
    return foo


@pytest.mark.parametrize("handle", [True, "handled"])
def test_a_missing_injected_field_is_raised_to_the_caller(handle: Any) -> None:
    node = ToolNode([wants_foo], handle_tool_errors=handle)
    msg = ask(("wants_foo", {}))
    assert node.invoke({"messages": [msg], "foo": "bar"})["messages"][0].content == "bar"
    with pytest.raises(KeyError, match="foo"):
        node.invoke({"messages": [msg]})
    with pytest.raises(ValueError, match="requires graph state dict as input"):
        node.invoke([msg])
    with pytest.raises(KeyError, match="foo"):
        asyncio.run(node.ainvoke({"messages": [msg]}))


def test_a_missing_injected_field_fails_the_graph_run() -> None:
    class NoFoo(TypedDict):
        messages: Annotated[list, add_messages]

    graph = StateGraph(NoFoo).add_node("tools", ToolNode([wants_foo]))
    graph = graph.add_edge(START, "tools").compile()
    with pytest.raises(KeyError, match="foo"):
        graph.invoke({"messages": [ask(("wants_foo", {}))]})


# --- what an interceptor returns ----------------------------------------------------------


def test_a_standalone_node_hands_back_what_its_interceptor_returned() -> None:
    node = ToolNode([add], wrap_tool_call=lambda request, execute: None)
    assert node.invoke({"messages": [ask(("add", {"a": 1, "b": 2}))]}) == {"messages": [None]}


def test_in_a_graph_an_interceptor_must_return_a_message_or_a_command() -> None:
    node = ToolNode([add], wrap_tool_call=lambda request, execute: "3", handle_tool_errors=False)
    with pytest.raises(TypeError, match="must return a ToolMessage or a Command"):
        in_graph(node).invoke({"messages": [ask(("add", {"a": 1, "b": 2}))], "foo": "x"})


# --- create_react_agent's hooks -----------------------------------------------------------


def test_llm_input_messages_is_not_in_the_agents_output() -> None:
    model = ScriptedChatModel(lambda messages: f"saw {[m.text for m in messages]}")

    def pre(state: Any) -> dict[str, Any]:
        return {"llm_input_messages": [HumanMessage("Hello!")]}

    out = create_react_agent(model, [], pre_model_hook=pre).invoke({"messages": [("user", "hi?")]})
    assert set(out) == {"messages"}
    assert [m.text for m in out["messages"]] == ["hi?", "saw ['Hello!']"]

    def replace(state: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("Hello!")]}

    out = create_react_agent(model, [], pre_model_hook=replace).invoke(
        {"messages": [("user", "hi?")]}
    )
    assert [m.text for m in out["messages"]] == ["Hello!", "saw ['Hello!']"]


def test_after_a_post_model_hook_a_call_answered_before_is_not_run_again() -> None:
    ran: list[str] = []

    @tool
    def weather() -> str:
        """The weather."""
        ran.append("weather")
        return "sunny"

    again = {"content": "", "tool_calls": [{"name": "weather", "args": {}, "id": "1"}]}
    model = ScriptedChatModel([again, again, "never asked"])
    agent = create_react_agent(model, [weather], post_model_hook=lambda s: None)
    out = agent.invoke({"messages": [("user", "weather?")]})
    # The second answer repeats the id of a call already answered: the run ends there,
    # as LangGraph's router ends it, instead of looping.
    assert ran == ["weather"]
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
