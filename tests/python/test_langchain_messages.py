"""With langchain-core installed, the messages Python code sees are langchain-core's:
in nodes, routers, tools, streams, results and `get_state`; given back as the same
objects; with langchain-core's ids and equality. Without it (a subprocess that
cannot import it), ironloop's own classes, as before."""

from __future__ import annotations

import operator
import subprocess
import sys
import textwrap
from typing import Annotated, Any, TypedDict

import pydantic
import pytest
from langchain_core import messages as lc
from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.prompts import ChatPromptTemplate

import ironloop.messages as il
from ironloop import (
    InjectedToolCallId,
    MemorySaver,
    SqliteSaver,
    ToolNode,
    create_react_agent,
    tool,
)
from ironloop._ironloop import BaseMessage as OwnMessage
from ironloop._ironloop import HumanMessage as OwnHuman
from ironloop.graph import END, START, MessagesState, StateGraph, add_messages, interrupt
from ironloop.models import ScriptedChatModel
from ironloop.types import Command


def _is_lc(m: Any) -> bool:
    return isinstance(m, lc.BaseMessage) and not isinstance(m, OwnMessage)


def test_ironloops_classes_are_langchain_cores() -> None:
    assert il.USES_LANGCHAIN
    for name in ("AIMessage", "AIMessageChunk", "BaseMessage", "HumanMessage"):
        assert getattr(il, name) is getattr(lc, name)
    for name in ("RemoveMessage", "SystemMessage", "ToolMessage"):
        assert getattr(il, name) is getattr(lc, name)


def _echo_graph(seen: list[Any], checkpointer: Any = None) -> Any:
    def chat(state: MessagesState) -> dict[str, Any]:
        seen.append(list(state["messages"]))
        return {"messages": [lc.AIMessage(f"echo {len(state['messages'])}")]}

    b = StateGraph(MessagesState)
    b.add_node("chat", chat)
    b.add_edge(START, "chat")
    b.add_edge("chat", END)
    return b.compile(checkpointer=checkpointer)


def test_nodes_results_and_state_hold_langchain_messages() -> None:
    seen: list[Any] = []
    graph = _echo_graph(seen, MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = lc.HumanMessage("hi")
    out = graph.invoke(
        {"messages": [first, ("user", "two"), {"role": "user", "content": "3"}]}, config
    )
    assert all(_is_lc(m) for m in seen[0])
    assert [type(m) for m in out["messages"]] == [lc.HumanMessage] * 3 + [lc.AIMessage]
    # The input object itself is in the state and the result, and got an id.
    assert out["messages"][0] is first and seen[0][0] is first
    assert isinstance(first.id, str) and first.id
    state = graph.get_state(config)
    assert all(_is_lc(m) for m in state.values["messages"])
    assert state.values["messages"][-1].content == "echo 3"
    # What a node returned is what the next step reads (made once, not rebuilt).
    graph.invoke({"messages": [("user", "again")]}, config)
    assert seen[1][3] is out["messages"][3]


def test_a_message_returned_by_a_node_comes_back_as_itself() -> None:
    made: list[Any] = []
    read: list[Any] = []

    def make(state: MessagesState) -> dict[str, Any]:
        m = lc.AIMessage("x", id=None)
        made.append(m)
        return {"messages": [m]}

    def check(state: MessagesState) -> dict[str, Any]:
        read.append(state["messages"][-1])
        return {}

    b = StateGraph(MessagesState)
    b.add_node("make", make)
    b.add_node("check", check)
    b.add_edge(START, "make")
    b.add_edge("make", "check")
    out = b.compile().invoke({"messages": []})
    assert read[0] is made[0] and out["messages"][0] is made[0]
    assert made[0].id is not None  # set when the reducer took it, as LangGraph's


def test_ids_stay_as_given_and_match_langgraphs_placeholders() -> None:
    class AnyStr(str):
        def __eq__(self, other: object) -> bool:
            return isinstance(other, str)

        __hash__ = str.__hash__

    given = lc.AIMessage("a")
    given.id = AnyStr("a-1")  # as LangGraph's tests set them (the constructor makes a str)
    out = _echo_graph([]).invoke({"messages": [given]})
    assert type(out["messages"][0].id) is AnyStr
    expected = [lc.AIMessage("a"), lc.AIMessage("echo 1")]
    for m in expected:
        m.id = AnyStr("")
    assert out["messages"] == expected


def test_own_classes_equality_defers_to_unknown_types() -> None:
    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

    assert OwnHuman("hi") == Anything()
    assert OwnHuman("hi").__eq__(object()) is NotImplemented


def test_llm_invoke_on_the_state_messages_inside_a_node() -> None:
    llm = GenericFakeChatModel(messages=iter([lc.AIMessage("hello there")]))
    listed = FakeMessagesListChatModel(responses=[lc.AIMessage("second")])
    prompt = ChatPromptTemplate.from_messages([("system", "be brief"), ("placeholder", "{m}")])

    def chat(state: MessagesState) -> dict[str, Any]:
        first = llm.invoke(state["messages"])
        second = listed.invoke(prompt.invoke({"m": [*state["messages"], first]}))
        return {"messages": [first, second]}

    b = StateGraph(MessagesState)
    b.add_node("chat", chat)
    b.add_edge(START, "chat")
    out = b.compile().invoke({"messages": [("user", "hi")]})
    assert [m.content for m in out["messages"]] == ["hi", "hello there", "second"]
    assert [m.type for m in out["messages"]] == ["human", "ai", "ai"]


def test_messages_behave_as_langchain_cores() -> None:
    out = _echo_graph([]).invoke({"messages": [("user", "hi")]})
    ai = out["messages"][-1]
    assert ai.text == "echo 1"
    assert ai.model_dump()["type"] == "ai"
    assert "Ai Message" in ai.pretty_repr()
    assert ai.content_blocks == [{"type": "text", "text": "echo 1"}]

    class Holder(pydantic.BaseModel):
        message: lc.AnyMessage

    assert Holder(message=ai).message is ai


def test_tools_agents_and_streams_hand_langchain_messages() -> None:
    got: list[Any] = []

    @tool
    def add(a: int, b: int) -> str:
        """Adds."""
        return str(a + b)

    model = ScriptedChatModel(
        [
            lc.AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}]),
            "three",
        ]
    )

    def prompt(state: dict[str, Any]) -> list[Any]:
        got.extend(state["messages"])
        return [lc.SystemMessage("be brief"), *state["messages"]]

    agent = create_react_agent(model, [add], prompt=prompt)
    chunks = []
    updates = []
    for mode, item in agent.stream(
        {"messages": [("user", "1+2?")]}, stream_mode=["messages", "updates"]
    ):
        (chunks if mode == "messages" else updates).append(item)
    assert got and all(_is_lc(m) for m in got)
    assert chunks and all(_is_lc(c) for c, _meta in chunks)
    assert any(isinstance(c, lc.AIMessageChunk) for c, _meta in chunks)
    written = [m for u in updates for v in u.values() for m in (v or {}).get("messages", [])]
    assert {type(m) for m in written} == {lc.AIMessage, lc.ToolMessage}
    assert written[-1].content == "three"


def test_tool_returning_a_langchain_tool_message_and_the_tool_node() -> None:
    @tool
    def ping(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Pings."""
        return lc.ToolMessage("pong", tool_call_id=tool_call_id)

    ai = lc.AIMessage("", tool_calls=[{"name": "ping", "args": {}, "id": "p1"}])
    out = ToolNode([ping]).invoke({"messages": [ai]})
    assert type(out["messages"][0]) is lc.ToolMessage
    assert out["messages"][0].content == "pong" and out["messages"][0].tool_call_id == "p1"


def test_remove_message_command_and_update_state() -> None:
    saver = MemorySaver()
    graph = _echo_graph([], saver)
    config = {"configurable": {"thread_id": "r"}}
    out = graph.invoke({"messages": [lc.HumanMessage("a", id="h1")]}, config)
    graph.update_state(
        config, {"messages": [lc.RemoveMessage(id="h1"), lc.HumanMessage("b", id="h2")]}
    )
    values = graph.get_state(config).values["messages"]
    assert [m.id for m in values] == [out["messages"][1].id, "h2"]
    assert all(_is_lc(m) for m in values)

    def node(state: MessagesState) -> Command:
        return Command(update={"messages": [lc.AIMessage("by command", id="c")]}, goto=END)

    b = StateGraph(MessagesState)
    b.add_node("node", node)
    b.add_edge(START, "node")
    res = b.compile().invoke({"messages": []})
    assert type(res["messages"][0]) is lc.AIMessage and res["messages"][0].id == "c"


def test_checkpointed_messages_come_back_as_langchain_messages(tmp_path: Any) -> None:
    class State(TypedDict):
        messages: Annotated[list, add_messages]
        last: Any  # a message in a plain channel: written by the value codec
        log: Annotated[list, operator.add]

    def chat(state: State) -> dict[str, Any]:
        reply = lc.AIMessage("ok", id="a1", tool_calls=[{"name": "t", "args": {"x": 1}, "id": "c"}])
        return {"messages": [reply], "last": reply, "log": [reply]}

    b = StateGraph(State)
    b.add_node("chat", chat)
    b.add_edge(START, "chat")
    path = str(tmp_path / "c.db")
    config = {"configurable": {"thread_id": "s"}}
    b.compile(checkpointer=SqliteSaver(path)).invoke({"messages": [("user", "hi")]}, config)
    values = b.compile(checkpointer=SqliteSaver(path)).get_state(config).values
    for m in (values["messages"][-1], values["last"], values["log"][0]):
        assert type(m) is lc.AIMessage, type(m)
        assert m.id == "a1" and m.tool_calls[0]["args"] == {"x": 1}


def test_interrupt_and_resume_with_langchain_messages() -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": state["messages"][-1]})
        return {"messages": [lc.HumanMessage(answer)]}

    b = StateGraph(MessagesState)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    graph = b.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "i"}}
    first = graph.invoke({"messages": [lc.AIMessage("name?")]}, config)
    assert _is_lc(first["__interrupt__"][0].value["question"])
    out = graph.invoke(Command(resume="Bob"), config)
    assert [(type(m), m.content) for m in out["messages"]] == [
        (lc.AIMessage, "name?"),
        (lc.HumanMessage, "Bob"),
    ]


_WITHOUT_LANGCHAIN = textwrap.dedent(
    """
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "langchain_core" or name.startswith("langchain_core."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, Block())

    from typing import Any
    import ironloop.messages as il
    from ironloop import MemorySaver
    from ironloop.graph import START, MessagesState, StateGraph

    def chat(state: MessagesState) -> dict[str, Any]:
        assert all(type(m).__module__ == "ironloop.messages" for m in state["messages"])
        return {"messages": [il.AIMessage("echo", id="a1")]}

    b = StateGraph(MessagesState)
    b.add_node("chat", chat)
    b.add_edge(START, "chat")
    g = b.compile(checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "1"}}
    out = g.invoke({"messages": [il.HumanMessage("hi", id="h1")]}, cfg)
    assert not il.USES_LANGCHAIN
    assert "langchain_core" not in sys.modules
    assert il.AIMessage.__module__ == "ironloop.messages"
    assert out["messages"] == [il.HumanMessage("hi", id="h1"), il.AIMessage("echo", id="a1")]
    assert [type(m).__name__ for m in g.get_state(cfg).values["messages"]] == [
        "HumanMessage", "AIMessage"
    ]
    assert il.HumanMessage("x").id  # ironloop's own classes give every message an id
    print("OK")
    """
)


def test_without_langchain_core_ironloops_own_classes_are_used() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_LANGCHAIN], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "OK"


@pytest.mark.parametrize("kind", ["system_prompt", "prompt"])
def test_langchain_system_messages_as_agent_prompts(kind: str) -> None:
    from ironloop import create_agent

    seen: list[Any] = []

    def record(messages: list[Any]) -> Any:
        seen.append(messages)
        return "done"

    model = ScriptedChatModel(record)
    system = lc.SystemMessage("be terse")
    if kind == "system_prompt":
        agent = create_agent(model, [], system_prompt=system)
    else:
        agent = create_react_agent(model, [], prompt=system)
    out = agent.invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "done"
    assert seen[0][0].content == "be terse" and seen[0][0].type == "system"


def test_objects_ironloop_makes_equal_langchain_cores_own() -> None:
    """ironloop makes a message's object from the engine's value without re-validating
    it; the object is the one langchain-core's constructor makes, and shares nothing
    with any other."""
    from ironloop._ironloop import _coerce_messages

    made = _coerce_messages(
        [
            ("user", "hi"),
            {"role": "system", "content": [{"type": "text", "text": "be brief"}], "id": "s"},
            {
                "role": "assistant",
                "content": "",
                "id": "a",
                "name": "bot",
                "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "c1"}],
                "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
                "response_metadata": {"model_name": "m"},
            },
            {"role": "tool", "content": "3", "tool_call_id": "c1", "name": "add", "id": "t"},
            {"role": "tool", "content": "no", "tool_call_id": "c2", "status": "error", "id": "e"},
        ]
    )
    expected = [
        lc.HumanMessage("hi", id=made[0].id),
        lc.SystemMessage([{"type": "text", "text": "be brief"}], id="s"),
        lc.AIMessage(
            "",
            id="a",
            name="bot",
            tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
            response_metadata={"model_name": "m"},
        ),
        lc.ToolMessage("3", tool_call_id="c1", name="add", id="t"),
        lc.ToolMessage("no", tool_call_id="c2", status="error", id="e"),
    ]
    assert [type(m) for m in made] == [type(m) for m in expected]
    assert made == expected
    assert [m.model_dump() for m in made] == [m.model_dump() for m in expected]
    assert [m.pretty_repr() for m in made] == [m.pretty_repr() for m in expected]
    made[0].additional_kwargs["k"] = 1
    made[0].response_metadata["k"] = 1
    fresh = _coerce_messages([("user", "x")])[0]
    assert fresh.additional_kwargs == {} and fresh.response_metadata == {}
    assert made[2].tool_calls is not _coerce_messages([made[2].model_dump()])[0].tool_calls


def test_middleware_takes_and_hands_langchain_messages() -> None:
    from ironloop import create_agent
    from ironloop.middleware import (
        ModelRequest,
        SummarizationMiddleware,
        before_model,
        wrap_model_call,
    )

    seen: list[Any] = []

    @before_model
    def look(state: Any, runtime: Any) -> None:
        seen.extend(state["messages"])

    @wrap_model_call
    def answer_myself(request: ModelRequest, handler: Any) -> Any:
        seen.extend(request.messages)
        return lc.AIMessage("from the middleware", id="mw")

    agent = create_agent(ScriptedChatModel([]), [], middleware=[look, answer_myself])
    out = agent.invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "from the middleware"
    assert type(out["messages"][-1]) is lc.AIMessage and out["messages"][-1].id == "mw"
    assert seen and all(_is_lc(m) for m in seen)

    # A LangChain summary model is handed langchain-core messages it accepts.
    summary_model = FakeMessagesListChatModel(responses=[lc.AIMessage("they said hi")])
    summarize = SummarizationMiddleware(
        summary_model, trigger=("messages", 3), keep=("messages", 1)
    )
    agent = create_agent(
        FakeMessagesListChatModel(responses=[lc.AIMessage("ok")]), [], middleware=[summarize]
    )
    history = [lc.HumanMessage("hi"), lc.AIMessage("hello"), lc.HumanMessage("again")]
    out = agent.invoke({"messages": history})
    texts = [m.text for m in out["messages"]]
    assert any("they said hi" in t for t in texts), texts
    assert texts[-1] == "ok"


def test_add_messages_called_directly_keeps_and_ids_the_objects() -> None:
    a, b = lc.HumanMessage("a"), lc.AIMessage("b")
    out = add_messages([a], [b])
    assert out[0] is a and out[1] is b
    assert isinstance(a.id, str) and isinstance(b.id, str) and a.id != b.id
    assert [m.content for m in add_messages(out, [lc.RemoveMessage(id=a.id)])] == ["b"]
    replaced = add_messages(out, [lc.AIMessage("b2", id=b.id)])
    assert [m.content for m in replaced] == ["a", "b2"] and replaced[1].id == b.id
