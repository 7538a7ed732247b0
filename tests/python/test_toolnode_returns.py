"""ToolNode beyond one message per call, as LangGraph's ToolNode: a tool returning a
list of ``Command`` / ``ToolMessage`` (exactly one answering the call), the order of
a standalone node's outputs when tools return ``Command``s, ``InjectedState``
fields the state lacks when the parameter has a default, and error handlers limited
to the exception types they are annotated with."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from langchain_core.messages import AIMessage as LcAIMessage
from langchain_core.messages import ToolMessage as LcToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as lc_tool

from ironloop import (
    START,
    InjectedState,
    InjectedToolCallId,
    StateGraph,
    ToolNode,
    add_messages,
    tool,
)
from ironloop.messages import AIMessage, ToolMessage
from ironloop.types import Command, Send


def _call(name: str, call_id: str = "call-1", **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _state(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [AIMessage(content="", tool_calls=list(calls))]}


class _Returning(BaseTool):
    """A LangChain tool subclass (its own ``_run``) returning a configured value."""

    name: str = "returning"
    description: str = "Returns a configured value"
    value: Any = None

    def _run(self, **kwargs: Any) -> Any:
        return self.value


# ----------------------------------------------------------------- list returns


def test_list_of_command_and_tool_message_is_flattened_in_order() -> None:
    @tool
    def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Transfers."""
        return [
            Command(update={"foo": "bar"}),
            ToolMessage(content="done", tool_call_id=tool_call_id),
        ]

    out = ToolNode([transfer]).invoke(_state(_call("transfer")))
    assert isinstance(out, list) and len(out) == 2
    assert isinstance(out[0], Command) and out[0].update == {"foo": "bar"}
    assert [m.content for m in out[1]["messages"]] == ["done"]


def test_list_return_of_a_langchain_tool_subclass_reaches_the_node() -> None:
    value = [
        Command(update={"messages": [LcToolMessage(content="ok", tool_call_id="call-1")]}),
        Command(update={"foo": 1}),
    ]
    out = ToolNode([_Returning(value=value)]).invoke(_state(_call("returning")))
    assert [type(o) for o in out] == [Command, Command]
    assert out[1].update == {"foo": 1}


@pytest.mark.parametrize(
    ("answers", "count"),
    [([], 0), (["call-1", "call-1"], 2), (["other"], 0)],
    ids=["none", "two", "wrong-id"],
)
def test_list_return_must_answer_the_call_exactly_once(answers: list[str], count: int) -> None:
    value: list[Any] = [Command(update={"foo": "bar"})]
    value += [LcToolMessage(content="x", tool_call_id=i) for i in answers]
    node = ToolNode([_Returning(value=value)], handle_tool_errors=False)
    with pytest.raises(ValueError, match=f"{count} messages bound to tool_call_id"):
        node.invoke(_state(_call("returning")))
    # Handled by default: an error message for the model, the list dropped.
    out = ToolNode([_Returning(value=value)]).invoke(_state(_call("returning")))
    (msg,) = out["messages"]
    assert msg.status == "error"
    assert f"{count} messages bound to tool_call_id" in msg.content


def test_parent_commands_that_only_send_are_merged_last() -> None:
    @tool
    def fan(n: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Fans out."""
        return [
            Command(graph=Command.PARENT, goto=[Send("child", {"n": n})]),
            ToolMessage(content=f"sent {n}", tool_call_id=tool_call_id),
        ]

    out = ToolNode([fan]).invoke(_state(_call("fan", "a", n=1), _call("fan", "b", n=2)))
    assert [m.content for d in out[:-1] for m in d["messages"]] == ["sent 1", "sent 2"]
    last = out[-1]
    assert last.graph == Command.PARENT
    assert [s.arg for s in last.goto] == [{"n": 1}, {"n": 2}]


def test_commands_and_messages_keep_call_order() -> None:
    @tool
    def plain(x: int) -> int:
        """Plain."""
        return x

    @tool
    def go(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Routes."""
        msg = ToolMessage(content="went", tool_call_id=tool_call_id)
        return Command(update={"messages": [msg]}, goto="bob", graph=Command.PARENT)

    out = ToolNode([plain, go]).invoke(_state(_call("plain", "1", x=3), _call("go", "2")))
    assert isinstance(out[0], dict) and out[0]["messages"][0].content == "3"
    assert isinstance(out[1], Command) and out[1].goto == "bob"


def test_list_return_in_a_graph_writes_every_item() -> None:
    class State(TypedDict):
        messages: Annotated[list, add_messages]
        foo: str

    @tool
    def both(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Both."""
        return [
            Command(update={"foo": "set"}),
            ToolMessage(content="done", tool_call_id=tool_call_id),
        ]

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage(content="", tool_calls=[_call("both")])]}

    graph = (
        StateGraph(State)
        .add_node("agent", agent)
        .add_node("tools", ToolNode([both]))
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .compile()
    )
    out = graph.invoke({"messages": [], "foo": ""})
    assert out["foo"] == "set"
    assert [m.content for m in out["messages"]][-1] == "done"


# ------------------------------------------------------ optional injected fields


class _State(TypedDict):
    messages: Annotated[list, add_messages]
    city: NotRequired[str]


def _run_in_graph(tools: list[Any], state: dict[str, Any]) -> str:
    def agent(s: _State) -> dict[str, Any]:
        return {"messages": [LcAIMessage("", tool_calls=[_call(tools[0].name)])]}

    graph = (
        StateGraph(_State)
        .add_node("agent", agent)
        .add_node("tools", ToolNode(tools))
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .compile()
    )
    return str(graph.invoke(state)["messages"][-1].content)


def test_injected_field_missing_leaves_the_default() -> None:
    @tool
    def weather(city: Annotated[str | None, InjectedState("city")] = None) -> str:
        """Weather."""
        return "no city" if city is None else f"sunny in {city}"

    @lc_tool
    def lc_weather(city: Annotated[str | None, InjectedState("city")] = None) -> str:
        """Weather."""
        return "no city" if city is None else f"sunny in {city}"

    for t in (weather, lc_weather):
        assert _run_in_graph([t], {"messages": []}) == "no city"
        assert _run_in_graph([t], {"messages": [], "city": "Paris"}) == "sunny in Paris"


def test_injected_field_missing_without_default_is_an_error() -> None:
    @tool
    def weather(city: Annotated[str, InjectedState("city")]) -> str:
        """Weather."""
        return city

    # The graph's mistake, not the model's: raised to the caller, as LangGraph's.
    with pytest.raises(KeyError, match="city"):
        _run_in_graph([weather], {"messages": []})


def test_injected_state_of_a_pydantic_schema_is_the_model() -> None:
    from pydantic import BaseModel

    class State(BaseModel):
        messages: Annotated[list, add_messages]
        foo: str = ""

    @tool
    def read_foo(state: Annotated[State, InjectedState]) -> str:
        """Reads foo."""
        return f"{type(state).__name__}:{state.foo}"

    def agent(s: State) -> dict[str, Any]:
        return {"messages": [AIMessage(content="", tool_calls=[_call("read_foo")])]}

    graph = (
        StateGraph(State)
        .add_node("agent", agent)
        .add_node("tools", ToolNode([read_foo]))
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .compile()
    )
    out = graph.invoke({"messages": [], "foo": "bar"})
    assert out["messages"][-1].content == "State:bar"


# ------------------------------------------------------ typed error handlers


@tool
def fails(kind: str) -> str:
    """Raises the named error."""
    raise {"value": ValueError, "runtime": RuntimeError, "key": KeyError}[kind]("boom")


def test_error_handler_handles_only_the_types_it_is_annotated_with() -> None:
    def on_value(e: ValueError) -> str:
        return f"handled {type(e).__name__}"

    node = ToolNode([fails], handle_tool_errors=on_value)
    out = node.invoke(_state(_call("fails", kind="value")))
    assert out["messages"][0].content == "handled ValueError"
    with pytest.raises(RuntimeError, match="boom"):
        node.invoke(_state(_call("fails", kind="runtime")))
    # The policy as given stays readable (langgraph-supervisor re-makes nodes from it).
    assert node.handle_tool_errors is on_value


def test_error_handler_annotated_with_a_union_handles_each_member() -> None:
    def on_some(e: ValueError | KeyError) -> str:
        return "handled"

    node = ToolNode([fails], handle_tool_errors=on_some)
    for kind in ("value", "key"):
        assert node.invoke(_state(_call("fails", kind=kind)))["messages"][0].content == "handled"
    with pytest.raises(RuntimeError):
        node.invoke(_state(_call("fails", kind="runtime")))


def test_error_handler_without_annotation_handles_everything() -> None:
    node = ToolNode([fails], handle_tool_errors=lambda e: "any")
    assert node.invoke(_state(_call("fails", kind="runtime")))["messages"][0].content == "any"


def test_error_handler_annotated_with_a_non_exception_is_refused() -> None:
    def bad(e: ValueError | int) -> str:
        return ""

    with pytest.raises(ValueError, match="must be an Exception type"):
        ToolNode([fails], handle_tool_errors=bad)


@pytest.mark.parametrize("policy", [True, "handled", (Exception,), lambda e: "handled"])
def test_graph_bubble_up_from_a_tool_reaches_the_caller_whatever_the_policy(policy: Any) -> None:
    from ironloop.errors import GraphBubbleUp

    @tool
    def bubbles() -> str:
        """Bubbles up."""
        raise GraphBubbleUp("foo")

    with pytest.raises(GraphBubbleUp, match="foo"):
        ToolNode([bubbles], handle_tool_errors=policy).invoke(_state(_call("bubbles")))
