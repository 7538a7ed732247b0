"""``create_agent``'s ``wrap_tool_call`` chain run from the engine's tool node (issue 41
item 5): a sync run's sent call goes through the chain inside the tools task, its
innermost handler a native object that runs the tool there; an async run, and a
``ToolNode(wrap_tool_call=)`` in a user's graph, keep the Python node. Whichever path,
what the hooks and the run show is the same."""

from __future__ import annotations

import time
from typing import Annotated, Any

import pytest
from agent_support import MODES, call, run, turn

from ironloop import END, START, InjectedState, StateGraph, ToolNode, create_agent, tool
from ironloop import interrupt as pause
from ironloop.checkpoint import InMemorySaver
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware import AgentState, wrap_tool_call
from ironloop.models import ScriptedChatModel
from ironloop.types import Command

RUNS: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    RUNS.append(f"add:{a}+{b}")
    return a + b


@tool
def mul(a: int, b: int) -> int:
    """Multiplies."""
    return a * b


@tool
def boom(a: int) -> int:
    """Fails."""
    raise ValueError(f"no {a}")


@tool(timeout=0.05)
def slow(a: int) -> int:
    """Sleeps past its time limit."""
    time.sleep(1.0)
    return a


def agent(calls: list[dict[str, Any]], tools: list[Any], hooks: list[Any], **kw: Any) -> Any:
    return create_agent(ScriptedChatModel([turn(*calls), "done"]), tools, middleware=hooks, **kw)


def tool_messages(out: Any) -> list[Any]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("mode", MODES)
def test_each_run_mode_takes_its_path(mode: str) -> None:
    handlers: list[str] = []

    @wrap_tool_call
    def seen(request: Any, handler: Any) -> Any:
        handlers.append(type(handler).__name__)
        return handler(request)

    out = run(
        agent([call("add", "1", a=1, b=2)], [add], [seen]), {"messages": [("user", "x")]}, mode=mode
    )
    assert [m.content for m in tool_messages(out)] == ["3"]
    # A sync run: the engine's handler; an async run: the Python node's (a sync hook
    # runs in a worker thread, handed a function).
    assert handlers == (["function"] if mode == "ainvoke" else ["_ToolCallHandler"])


def test_a_tool_node_with_an_interceptor_in_a_graph_keeps_the_python_node() -> None:
    handlers: list[str] = []

    def seen(request: Any, execute: Any) -> Any:
        handlers.append(type(execute).__name__)
        return execute(request)

    def model(state: Any) -> Any:
        return {"messages": [AIMessage(content="", tool_calls=[call("add", "1", a=2, b=2)])]}

    g = StateGraph(AgentState)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([add], wrap_tool_call=seen))
    g.add_edge(START, "model")
    g.add_edge("model", "tools")
    g.add_edge("tools", END)
    out = g.compile().invoke({"messages": [("user", "x")]})
    assert [m.content for m in tool_messages(out)] == ["4"] and handlers != ["_ToolCallHandler"]


@pytest.mark.parametrize("mode", MODES)
def test_the_handler_runs_the_tool_each_time_and_sees_the_request(mode: str) -> None:
    RUNS.clear()

    @wrap_tool_call
    def twice(request: Any, handler: Any) -> Any:
        first = handler(request)
        changed = request.override(tool_call={**request.tool_call, "args": {"a": 10, "b": 5}})
        second = handler(changed)
        assert isinstance(first, ToolMessage) and first.content == "3"
        return second

    out = run(
        agent([call("add", "1", a=1, b=2)], [add], [twice]),
        {"messages": [("user", "x")]},
        mode=mode,
    )
    (msg,) = tool_messages(out)
    assert (msg.content, msg.tool_call_id, msg.name) == ("15", "1", "add")
    assert RUNS == ["add:1+2", "add:10+5"]


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_may_answer_swap_the_tool_or_catch_its_error(mode: str) -> None:
    @wrap_tool_call
    def hook(request: Any, handler: Any) -> Any:
        name = request.tool_call["name"]
        if name == "ghost":
            return ToolMessage(content="answered", tool_call_id=request.tool_call["id"])
        if name == "add":
            return handler(request.override(tool=mul))  # another tool runs the call
        try:
            return handler(request)
        except ValueError as e:
            return ToolMessage(content=f"caught {e}", tool_call_id=request.tool_call["id"])

    calls = [call("ghost", "1"), call("add", "2", a=3, b=4), call("boom", "3", a=7)]
    out = run(agent(calls, [add, boom], [hook]), {"messages": [("user", "x")]}, mode=mode)
    assert [m.content for m in tool_messages(out)] == ["answered", "12", "caught no 7"]


@pytest.mark.parametrize("mode", MODES)
def test_time_limits_and_unknown_tools_answer_through_the_hooks(mode: str) -> None:
    statuses: list[str] = []

    @wrap_tool_call
    def hook(request: Any, handler: Any) -> Any:
        result = handler(request)
        statuses.append(result.status)
        return result

    calls = [call("slow", "1", a=1), call("nope", "2")]
    out = run(agent(calls, [slow], [hook]), {"messages": [("user", "x")]}, mode=mode)
    texts = [m.content for m in tool_messages(out)]
    assert "0.05" in texts[0] and "nope is not a valid tool" in texts[1]
    assert statuses == ["error", "error"]


@pytest.mark.parametrize("mode", MODES)
def test_a_tools_command_and_what_raises_out_of_the_hooks(mode: str) -> None:
    class Counted(AgentState[Any]):
        count: int

    @tool
    def bump(n: int) -> Any:
        """Bumps."""
        return Command(
            update={"count": n, "messages": [ToolMessage(content="bumped", tool_call_id="1")]}
        )

    @wrap_tool_call
    def hook(request: Any, handler: Any) -> Any:
        if request.tool_call["name"] == "add":
            raise RuntimeError("refused")
        return handler(request)

    a = agent(
        [call("bump", "1", n=4), call("add", "2", a=1, b=1)],
        [bump, add],
        [hook],
        state_schema=Counted,
    )
    out = run(a, {"messages": [("user", "x")], "count": 0}, mode=mode)
    assert out["count"] == 4
    bumped, refused = (m.content for m in tool_messages(out))
    assert bumped == "bumped" and "refused" in refused


@tool
def read_note(prefix: str, state: Annotated[dict, InjectedState]) -> str:
    """Reads the state's note."""
    return prefix + state["note"]


class Notes(AgentState[Any]):
    note: str


@pytest.mark.parametrize("mode", MODES)
def test_the_tool_sees_the_requests_state(mode: str) -> None:
    @wrap_tool_call
    def hook(request: Any, handler: Any) -> Any:
        return handler(request.override(state={**request.state, "note": "changed"}))

    a = agent([call("read_note", "1", prefix="p:")], [read_note], [hook], state_schema=Notes)
    out = run(a, {"messages": [("user", "x")], "note": "n"}, mode=mode)
    assert [m.content for m in tool_messages(out)] == ["p:changed"]


@pytest.mark.parametrize("mode", MODES)
def test_an_interrupt_in_a_tool_pauses_and_resumes(mode: str) -> None:
    @tool
    def ask(q: str) -> str:
        """Asks."""
        return f"{q}={pause(q)}"

    @wrap_tool_call
    def hook(request: Any, handler: Any) -> Any:
        return handler(request)

    a = agent([call("ask", "1", q="ok?")], [ask], [hook], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"i-{mode}"}}
    paused = run(a, {"messages": [("user", "x")]}, config, mode=mode)
    assert paused["__interrupt__"][0].value == "ok?"
    final = run(a, Command(resume="yes"), config, mode=mode)
    assert [m.content for m in tool_messages(final)] == ["ok?=yes"]


def test_the_updates_stream_shows_the_tools_chunk() -> None:
    @wrap_tool_call
    def hook(request: Any, handler: Any) -> Any:
        return handler(request)

    a = agent([call("add", "1", a=1, b=1)], [add], [hook])
    chunks = list(a.stream({"messages": [("user", "x")]}, stream_mode="updates"))
    tools = [c["tools"] for c in chunks if "tools" in c]
    assert len(tools) == 1
    (msg,) = tools[0]["messages"]
    assert isinstance(msg, ToolMessage) and (msg.content, msg.tool_call_id) == ("2", "1")
