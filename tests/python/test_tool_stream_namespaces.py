"""LangGraph's ``tools`` stream across graphs: LangChain tools a node calls itself
report their calls (through a callback handler, as LangGraph's), a tool's
``ToolRuntime.emit_output_delta``, a paused call without an end, and a graph a node
invokes or streams reaching the stream of the run around it (``subgraphs=True``), a
sub-agent run by ``as_tool`` included."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_support import call, turn

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool

from ironloop import create_agent, create_react_agent
from ironloop import tool as il_tool
from ironloop.checkpoint import MemorySaver
from ironloop.errors import GraphDrained
from ironloop.graph import START, MessagesState, StateGraph
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import ToolNode, ToolRuntime
from ironloop.runtime import RunControl
from ironloop.types import Command, interrupt


@lc_tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def _one_node_graph(node: Any, checkpointer: Any = None) -> Any:
    g = StateGraph(MessagesState).add_node(node).add_edge(START, node.__name__)
    return g.compile(checkpointer=checkpointer)


def _chat_and_echo(state: MessagesState) -> dict[str, Any]:
    echo.invoke({"text": "done"})
    return {"messages": [GenericFakeChatModel(messages=iter(["one two"])).invoke("hi")]}


def _summary(part: dict[str, Any]) -> tuple[tuple[str, ...], str, str]:
    names = tuple(s.split(":")[0] for s in part["ns"])
    if part["type"] == "messages":
        return names, part["type"], part["data"][0].content
    if part["type"] == "tools":
        return names, part["type"], part["data"]["event"]
    return names, part["type"], ",".join(part["data"])


_CHAT_AND_ECHO = [
    ("tools", "tool-started"),
    ("tools", "tool-finished"),
    ("messages", "one"),
    ("messages", " "),
    ("messages", "two"),
]


def _tool_graph(caller_calls: list[dict[str, Any]], tools: list[Any], cp: Any = None) -> Any:
    def caller(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="", tool_calls=caller_calls)]}

    g = StateGraph(MessagesState).add_node("caller", caller).add_node("tools", ToolNode(tools))
    return g.add_edge(START, "caller").add_edge("caller", "tools").compile(checkpointer=cp)


def test_a_langchain_tool_a_node_calls_reports_its_call() -> None:
    parts = list(
        _one_node_graph(_chat_and_echo).stream(
            {"messages": []}, stream_mode=["messages", "tools"], version="v2"
        )
    )
    assert [_summary(p)[1:] for p in parts] == _CHAT_AND_ECHO
    started, finished = parts[0]["data"], parts[1]["data"]
    assert started["tool_name"] == "echo" and started["input"] == {"text": "done"}
    assert finished["tool_call_id"] == started["tool_call_id"]
    assert finished["output"] == "done"
    # Without the tools mode, nothing is reported.
    plain = _one_node_graph(_chat_and_echo).stream({"messages": []}, stream_mode="updates")
    assert [next(iter(c)) for c in plain] == ["_chat_and_echo"]


def test_emit_output_delta_reports_between_start_and_end_in_parallel_calls() -> None:
    @lc_tool
    def streamer(marker: str, runtime: ToolRuntime) -> str:
        """Emits its marker twice."""
        runtime.emit_output_delta(f"{marker}-1")
        runtime.emit_output_delta(f"{marker}-2")
        return marker

    calls = [call("streamer", "a", marker="A"), call("streamer", "b", marker="B")]
    graph = _tool_graph(calls, [streamer])
    evs = [c for _, _, c in graph.stream({"messages": []}, stream_mode=["tools"], subgraphs=True)]
    by_id: dict[str, list[str]] = {}
    for e in evs:
        by_id.setdefault(e["tool_call_id"], []).append(e.get("delta") or e["event"])
    assert by_id == {
        "a": ["tool-started", "A-1", "A-2", "tool-finished"],
        "b": ["tool-started", "B-1", "B-2", "tool-finished"],
    }
    # Outside a tools stream, emit_output_delta is a no-op.
    out = graph.invoke({"messages": []})
    assert [m.content for m in out["messages"] if m.type == "tool"] == ["A", "B"]


def test_emit_output_delta_of_a_tool_a_node_calls_itself() -> None:
    @lc_tool
    def chunks(text: str, runtime: ToolRuntime) -> str:
        """Streams its text letter by letter."""
        for ch in text:
            runtime.emit_output_delta(ch)
        return text

    def node(state: MessagesState) -> dict[str, Any]:
        # Called directly, the tool is handed its runtime by the caller.
        runtime = ToolRuntime(
            state=state,
            context=None,
            config={},
            stream_writer=lambda _: None,
            tool_call_id=None,
            store=None,
        )
        chunks.invoke({"text": "abc", "runtime": runtime})
        return {}

    evs = list(_one_node_graph(node).stream({"messages": []}, stream_mode="tools"))
    assert [e["event"] for e in evs] == ["tool-started"] + ["tool-output-delta"] * 3 + [
        "tool-finished"
    ]
    assert [e["delta"] for e in evs[1:4]] == ["a", "b", "c"]


def test_a_failing_call_ends_in_tool_error() -> None:
    @lc_tool
    def boom() -> str:
        """Raises."""
        raise ValueError("nope")

    evs = list(_tool_graph([call("boom", "t1")], [boom]).stream({}, stream_mode="tools"))
    assert [(e["event"], e["tool_call_id"]) for e in evs] == [
        ("tool-started", "t1"),
        ("tool-error", "t1"),
    ]
    assert "nope" in evs[1]["message"]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_paused_call_has_no_end_until_it_runs_again(asynchronous: bool) -> None:
    if asynchronous:

        @lc_tool
        async def ask() -> str:
            """Asks."""
            return str(interrupt("ok?"))

    else:

        @lc_tool
        def ask() -> str:
            """Asks."""
            return str(interrupt("ok?"))

    graph = _tool_graph([call("ask", "tc1")], [ask], MemorySaver())
    cfg = {"configurable": {"thread_id": "1"}}

    async def collect(inp: Any) -> list[str]:
        return [e["event"] async for e in graph.astream(inp, cfg, stream_mode="tools")]

    def events(inp: Any) -> list[str]:
        if asynchronous:
            return asyncio.run(collect(inp))
        return [e["event"] for e in graph.stream(inp, cfg, stream_mode="tools")]

    assert events({"messages": []}) == ["tool-started"]
    assert events(Command(resume="yes")) == ["tool-started", "tool-finished"]


def test_a_drained_graph_inside_a_tool_drains_the_run_without_a_tool_error() -> None:
    control = RunControl()

    def request_drain(state: MessagesState) -> dict[str, Any]:
        control.request_drain()
        return {}

    inner = (
        StateGraph(MessagesState)
        .add_node("request_drain", request_drain)
        .add_node("after", lambda state: {})
        .add_edge(START, "request_drain")
        .add_edge("request_drain", "after")
        .compile()
    )

    @lc_tool
    def drained() -> str:
        """Runs a graph that drains."""
        inner.invoke({"messages": []}, control=control)
        return "unreachable"

    seen: list[str] = []
    with pytest.raises(GraphDrained):
        for e in _tool_graph([call("drained", "d1")], [drained]).stream({}, stream_mode="tools"):
            seen.append(e["event"])
    assert seen == ["tool-started"]


@pytest.mark.parametrize("subgraphs", [False, True])
def test_a_graph_a_node_streams_reaches_the_parent_only_with_subgraphs(subgraphs: bool) -> None:
    child = _one_node_graph(_chat_and_echo)
    received: list[Any] = []

    def node(state: MessagesState) -> dict[str, Any]:
        received.extend(child.stream({"messages": []}, stream_mode=["tools", "updates"]))
        return {}

    parts = list(
        _one_node_graph(node).stream(
            {"messages": []}, stream_mode=["tools", "updates"], subgraphs=subgraphs, version="v2"
        )
    )
    # The node's own stream gets the child's events, without namespaces.
    assert [(m, c.get("event") or next(iter(c))) for m, c in received] == [
        ("tools", "tool-started"),
        ("tools", "tool-finished"),
        ("updates", "_chat_and_echo"),
    ]
    nested = [_summary(p) for p in parts if p["ns"]]
    if subgraphs:
        assert nested == [
            (("node",), "tools", "tool-started"),
            (("node",), "tools", "tool-finished"),
            (("node",), "updates", "_chat_and_echo"),
        ]
    else:
        assert nested == []
    assert [_summary(p) for p in parts if not p["ns"]] == [((), "updates", "node")]


def test_a_graph_on_a_thread_of_its_own_sends_only_model_and_tool_events() -> None:
    child = _one_node_graph(_chat_and_echo)

    def node(state: MessagesState) -> dict[str, Any]:
        child.invoke({"messages": []}, {"configurable": {"thread_id": "child"}})
        return {}

    def parts(subgraphs: bool) -> list[tuple[tuple[str, ...], str, str]]:
        it = _one_node_graph(node).stream(
            {"messages": []},
            stream_mode=["messages", "tools", "updates"],
            subgraphs=subgraphs,
            version="v2",
        )
        return [_summary(p) for p in it]

    # As LangGraph: at the caller's level, and none of the child's updates.
    assert parts(True) == [((), m, e) for m, e in _CHAT_AND_ECHO] + [((), "updates", "node")]
    assert parts(False) == [((), "updates", "node")]


def test_as_tool_sub_agent_steps_stream_under_the_calls_namespace() -> None:
    @il_tool
    def lookup(q: str) -> str:
        """Looks a thing up."""
        return f"found {q}"

    inner = create_react_agent(
        ScriptedChatModel(
            lambda ms: turn(call("lookup", "l1", q="x")) if ms[-1].type == "human" else "inner"
        ),
        [lookup],
    )
    agent = create_agent(
        ScriptedChatModel(
            lambda ms: turn(call("helper", "h1", input="x")) if ms[-1].type == "human" else "ok"
        ),
        [inner.as_tool("helper", "Asks the helper.")],
    )
    parts = list(
        agent.stream(
            {"messages": [("user", "go")]},
            stream_mode=["updates", "tools"],
            subgraphs=True,
            version="v2",
        )
    )
    nested = [p for p in parts if p["ns"]]
    assert all(p["ns"][0].startswith("tools:") for p in nested)
    assert [_summary(p)[1:] for p in nested] == [
        ("updates", "agent"),
        ("tools", "tool-started"),
        ("tools", "tool-finished"),
        ("updates", "tools"),
        ("updates", "agent"),
    ]
    own = [p["data"] for p in parts if not p["ns"] and p["type"] == "tools"]
    assert own[-1]["event"] == "tool-finished"
    assert own[-1]["child_loop_id"] and own[-1]["output"].text == "inner"
