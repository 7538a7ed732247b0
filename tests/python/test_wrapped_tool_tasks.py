"""Tool calls under ``wrap_tool_call`` middleware are one task each, as LangChain
1.5's (a ``Send`` per call): a call that finished keeps its result when a sibling's
``interrupt()`` pauses the step (shown in the paused state, never run again on
resume), and each task's tools still see the graph's state, which the engine hands
the task rather than a copy travelling in each ``Send``. (LangChain 1.5.2's
``test_tool_retry_parallel_interrupt_with_successful_sibling``, ported.)"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest
from agent_support import call, turn

from ironloop import (
    END,
    START,
    InjectedState,
    Send,
    StateGraph,
    ToolNode,
    add_messages,
    create_agent,
    tool,
)
from ironloop import interrupt as pause
from ironloop.checkpoint import InMemorySaver
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware import AgentState, ToolRetryMiddleware, wrap_tool_call
from ironloop.models import ScriptedChatModel
from ironloop.types import Command

RUNS: list[str] = []


@tool
def ask_human(value: str) -> str:
    """Asks a human."""
    RUNS.append(f"ask:{value}")
    return f"Human said: {pause('approve?')}"


@tool
def work(value: str) -> str:
    """Works."""
    RUNS.append(f"work:{value}")
    return f"Success: {value}"


def tool_results(state: Any) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in state["messages"] if isinstance(m, ToolMessage)}


def agent(middleware: list[Any]) -> Any:
    model = ScriptedChatModel(
        [turn(call("ask_human", "1", value="a"), call("work", "2", value="b")), "done"]
    )
    return create_agent(
        model, [ask_human, work], middleware=middleware, checkpointer=InMemorySaver()
    )


@wrap_tool_call
def passthrough(request: Any, handler: Any) -> Any:
    return handler(request)


async def _arun(a: Any, config: Any) -> tuple[Any, Any]:
    paused = await a.ainvoke({"messages": [("user", "both")]}, config)
    return paused, await a.ainvoke(Command(resume="yes"), config)


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
@pytest.mark.parametrize(
    "middleware",
    [
        pytest.param(lambda: [passthrough], id="passthrough"),
        pytest.param(
            lambda: [ToolRetryMiddleware(max_retries=2, initial_delay=0.01, jitter=False)],
            id="retry",
        ),
    ],
)
def test_a_finished_sibling_survives_an_interrupt(api: str, middleware: Any) -> None:
    RUNS.clear()
    a = agent(middleware())
    config = {"configurable": {"thread_id": f"t-{api}"}}
    if api == "invoke":
        paused = a.invoke({"messages": [("user", "both")]}, config)
        final = a.invoke(Command(resume="yes"), config)
    else:
        paused, final = asyncio.run(_arun(a, config))
    assert "__interrupt__" in paused
    assert tool_results(paused) == {"2": "Success: b"}
    assert "__interrupt__" not in final
    assert tool_results(final) == {"1": "Human said: yes", "2": "Success: b"}
    # The sibling ran once; the interrupted call ran again from its start on resume.
    assert RUNS.count("work:b") == 1 and RUNS.count("ask:a") == 2
    # The results follow the calls' order in the conversation.
    assert [m.tool_call_id for m in final["messages"] if m.type == "tool"] == ["1", "2"]


class Notes(AgentState[Any]):
    note: str


@tool
def read_note(prefix: str, state: Annotated[dict, InjectedState]) -> str:
    """Reads the state's note."""
    return prefix + state["note"]


def test_each_call_task_sees_the_state() -> None:
    seen: list[int] = []

    @wrap_tool_call
    def count(request: Any, handler: Any) -> Any:
        seen.append(len(request.state["messages"]))
        return handler(request)

    model = ScriptedChatModel(
        [turn(call("read_note", "1", prefix="a:"), call("read_note", "2", prefix="b:")), "ok"]
    )
    a = create_agent(model, [read_note], state_schema=Notes, middleware=[count])
    out = a.invoke({"messages": [("user", "read")], "note": "hello"})
    assert tool_results(out) == {"1": "a:hello", "2": "b:hello"}
    # Each request carried the conversation up to the model's calls.
    assert seen == [2, 2]


class S(TypedDict):
    messages: Annotated[list, add_messages]
    note: str


def test_a_send_of_one_call_to_a_wrapped_tool_node_in_a_graph() -> None:
    # A graph of the user's: its router sends each call to a ToolNode with an
    # interceptor; the task gets the state beside the call.
    node = ToolNode([read_note], wrap_tool_call=lambda request, execute: execute(request))
    calls = [call("read_note", "1", prefix="x:"), call("read_note", "2", prefix="y:")]

    def model(state: S) -> dict[str, Any]:
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    g = StateGraph(S)
    g.add_node("model", model)
    g.add_node("tools", node)
    g.add_edge(START, "model")
    g.add_conditional_edges(
        "model", lambda s: [Send("tools", dict(c)) for c in s["messages"][-1].tool_calls]
    )
    g.add_edge("tools", END)
    out = g.compile().invoke({"messages": [("user", "go")], "note": "n"})
    assert tool_results(out) == {"1": "x:n", "2": "y:n"}
