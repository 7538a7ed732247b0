"""ToolNode's inputs and outputs as LangGraph's: the messages a standalone node makes
have no id (a graph's ``add_messages`` gives them one), a ``Command`` a tool returns
is checked against the node's input and its answering message named after the tool,
a node given bare tool calls hands its tools the state of the graph task it runs in
(``Send("tools", [call])``, or a call from inside a node), and a ``ToolNode`` works
in a graph whose messages key keeps its last value (no ``add_messages``)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import ToolMessage as LcToolMessage
from pydantic import BaseModel

from ironloop import (
    START,
    InjectedState,
    InjectedToolCallId,
    StateGraph,
    ToolNode,
    add_messages,
    tool,
)
from ironloop.messages import AIMessage, RemoveMessage, ToolMessage
from ironloop.prebuilt.tool_node import ToolCallWithContext, ToolRuntime
from ironloop.types import Command, Send


def _call(name: str, call_id: str = "c1", **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _ai(*calls: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


# ------------------------------------------------------------ ids of made messages


def test_standalone_messages_the_node_makes_have_no_id() -> None:
    node = ToolNode([add])
    out = node.invoke({"messages": [_ai(_call("add", a=1, b=2), _call("nope", "c2"))]})
    assert out["messages"] == [
        LcToolMessage(content="3", tool_call_id="c1", name="add"),
        LcToolMessage(
            content="Error: nope is not a valid tool, try one of [add].",
            tool_call_id="c2",
            name="nope",
            status="error",
        ),
    ]
    # Bare tool calls in, a dict out, as LangGraph's.
    out = node.invoke([_call("add", a=2, b=2)])
    assert out == {"messages": [LcToolMessage(content="4", tool_call_id="c1", name="add")]}


def test_a_message_the_tool_returns_keeps_its_id() -> None:
    @tool
    def own(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Answers itself."""
        return ToolMessage(content="mine", tool_call_id=tool_call_id, id="kept")

    (msg,) = ToolNode([own]).invoke([_ai(_call("own"))])
    assert msg.id == "kept"


def test_in_a_graph_tool_messages_get_ids() -> None:
    class State(TypedDict):
        messages: Annotated[list, add_messages]

    graph = StateGraph(State).add_node("tools", ToolNode([add])).add_edge(START, "tools").compile()
    out = graph.invoke({"messages": [_ai(_call("add", a=1, b=1), _call("add", "c2", a=2, b=2))]})
    ids = [m.id for m in out["messages"][1:]]
    assert all(ids) and len(set(ids)) == 2


# ------------------------------------------------------------ commands tools return


@tool
def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
    """Hands off."""
    msg = ToolMessage(content="Transferred", tool_call_id=tool_call_id)
    return Command(update={"messages": [msg]}, goto="bob", graph=Command.PARENT)


def test_a_commands_answering_message_is_named_after_the_tool() -> None:
    out = ToolNode([add, transfer]).invoke(
        {"messages": [_ai(_call("add", "1", a=1, b=2), _call("transfer", "2"))]}
    )
    assert out == [
        {"messages": [LcToolMessage(content="3", tool_call_id="1", name="add")]},
        Command(
            update={
                "messages": [
                    LcToolMessage(content="Transferred", tool_call_id="2", name="transfer")
                ]
            },
            goto="bob",
            graph=Command.PARENT,
        ),
    ]


def test_the_tools_own_command_is_left_as_it_was() -> None:
    made: list[Command] = []

    @tool
    def go(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Goes."""
        made.append(Command(update=[ToolMessage(content="ok", tool_call_id=tool_call_id)]))
        return made[-1]

    (out,) = ToolNode([go]).invoke([_ai(_call("go"))])
    assert out.update[0].name == "go"
    assert made[0].update[0].name is None


def _returning(update: Any, graph: str | None = None) -> Any:
    @tool
    def shaped() -> Any:
        """Returns a command."""
        return Command(update=update, graph=graph)

    return shaped


@pytest.mark.parametrize("handle_tool_errors", [True, False])
@pytest.mark.parametrize(
    ("update", "list_in", "says"),
    [
        ([ToolMessage(content="x", tool_call_id="c1")], False, "update is a list"),
        ({"messages": [ToolMessage(content="x", tool_call_id="c1")]}, True, "update is a dict"),
        ({"messages": []}, False, "no ToolMessage answering its call"),
        ({"messages": [ToolMessage(content="x", tool_call_id="other")]}, False, "'c1'"),
    ],
    ids=["list-for-state", "dict-for-list", "no-answer", "wrong-id"],
)
def test_a_command_that_does_not_fit_reaches_the_caller(
    update: Any, list_in: bool, says: str, handle_tool_errors: bool
) -> None:
    node = ToolNode([_returning(update)], handle_tool_errors=handle_tool_errors)
    given: Any = [_ai(_call("shaped"))] if list_in else {"messages": [_ai(_call("shaped"))]}
    with pytest.raises(ValueError, match=says):
        node.invoke(given)


def test_a_command_to_the_parent_or_removing_all_needs_no_answer() -> None:
    parent = ToolNode([_returning({"messages": []}, Command.PARENT)])
    assert parent.invoke({"messages": [_ai(_call("shaped"))]}) == [
        Command(update={"messages": []}, graph=Command.PARENT)
    ]
    remove_all = [RemoveMessage(id="__remove_all__")]
    out = ToolNode([_returning({"messages": remove_all})]).invoke(
        {"messages": [_ai(_call("shaped"))]}
    )
    assert out[0].update == {"messages": remove_all}


# ----------------------------------------------- the state of bare tool calls


@tool
def record(runtime: ToolRuntime) -> str:
    """Records the state it gets."""
    SEEN.append(runtime.state)
    return "ok"


SEEN: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()


def test_bare_calls_outside_a_graph_see_an_empty_state() -> None:
    ToolNode([record]).invoke([_call("record")])
    assert SEEN == [{}]


def test_bare_calls_from_a_node_see_that_nodes_state() -> None:
    class State(TypedDict):
        value: str

    def call_tools(state: State) -> dict[str, Any]:
        ToolNode([record]).invoke([_call("record")])
        return {}

    inner = StateGraph(State).add_node(call_tools).add_edge(START, "call_tools").compile()
    outer = (
        StateGraph(State)
        .add_node("inner", inner)
        .add_conditional_edges(START, lambda _: [Send("inner", {"value": "sent"})], ["inner"])
        .compile()
    )
    outer.invoke({"value": "outer"})
    assert SEEN == [{"value": "sent"}]


class _Typed(TypedDict):
    messages: list
    foo: str


class _Model(BaseModel):
    messages: list
    foo: str


@dataclasses.dataclass
class _Data:
    messages: list
    foo: str


@pytest.mark.parametrize("schema", [_Typed, _Model, _Data], ids=["typeddict", "pydantic", "dc"])
@pytest.mark.parametrize("by", ["edge", "send"])
def test_a_tool_node_on_a_last_value_messages_key(schema: Any, by: str) -> None:
    seen: list[tuple[Any, Any]] = []

    @tool
    def look(runtime: ToolRuntime, state: Annotated[Any, InjectedState]) -> str:
        """Looks at the state."""
        seen.append((runtime.state, state))
        return "looked"

    call = _call("look")
    route: Any = (lambda _: "tools") if by == "edge" else (lambda _: [Send("tools", [call])])
    graph = (
        StateGraph(schema)
        .add_node("agent", lambda _: {"messages": [_ai(call)]})
        .add_node("tools", ToolNode([look]))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", route, ["tools"])
        .compile()
    )
    out = graph.invoke({"messages": [], "foo": "bar"})
    # The key keeps its last value: the tool messages replace the AI message.
    assert [(m.type, m.content) for m in out["messages"]] == [("tool", "looked")]
    ((runtime_state, state),) = seen
    assert type(runtime_state) is type(state) is (dict if schema is _Typed else schema)
    foo = state["foo"] if isinstance(state, dict) else state.foo
    assert foo == "bar"


def test_send_of_calls_to_a_tool_node_on_a_messages_channel() -> None:
    class State(TypedDict):
        messages: Annotated[list, add_messages]
        foo: str

    calls = [_call("record", "c1"), _call("record", "c2")]
    graph = (
        StateGraph(State)
        .add_node("agent", lambda _: {"messages": [_ai(*calls)]})
        .add_node("tools", ToolNode([record]))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", lambda _: [Send("tools", calls)], ["tools"])
        .compile()
    )
    out = graph.invoke({"messages": [], "foo": "bar"})
    assert [m.tool_call_id for m in out["messages"][1:]] == ["c1", "c2"]
    assert [s["foo"] for s in SEEN] == ["bar", "bar"]


def test_a_tool_call_with_context_gives_its_state_to_the_tools() -> None:
    class State(TypedDict):
        messages: Annotated[list, add_messages]
        foo: str

    call = _call("record")

    def route(state: State) -> list[Send]:
        given = {**state, "foo": "inlined"}
        sent = ToolCallWithContext(__type="tool_call_with_context", tool_call=call, state=given)
        return [Send("tools", sent)]

    graph = (
        StateGraph(State)
        .add_node("agent", lambda _: {"messages": [_ai(call)]})
        .add_node("tools", ToolNode([record]))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", route, ["tools"])
        .compile()
    )
    out = graph.invoke({"messages": [], "foo": "bar"})
    assert out["messages"][-1].content == "ok"
    assert [s["foo"] for s in SEEN] == ["inlined"]
