"""StateGraph interrupts: interrupt() and resume in nodes, subgraphs, tools; static interrupts."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypedDict

import pytest
from graph_support import (
    abc_graph,
    ai_with_calls,
    chain,
    run,
    thread_config,
    tool_graph,
)

from ironloop import (
    END,
    START,
    Command,
    Interrupt,
    MemorySaver,
    StateGraph,
    ToolNode,
    interrupt,
    tool,
)
from ironloop.graph import MessagesState
from ironloop.messages import AIMessage, ToolMessage

# --------------------------------------------------------------------- dynamic


class AskS(TypedDict, total=False):
    question: str
    answer: str
    answers: list[str]


def test_interrupt_pauses_and_resume_returns_the_value() -> None:
    calls = []

    def ask(s: AskS) -> dict[str, str]:
        calls.append(1)
        reply = interrupt({"question": s["question"]})
        return {"answer": f"got {reply}"}

    g = StateGraph(AskS)
    g.add_node("ask", ask).add_node("after", lambda s: {"answers": [s["answer"]]})
    g.add_edge(START, "ask").add_edge("ask", "after").add_edge("after", END)
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    out = app.invoke({"question": "ship it?"}, cfg)
    assert "answer" not in out
    ints = out["__interrupt__"]
    assert len(ints) == 1
    assert isinstance(ints[0], Interrupt)
    assert ints[0].value == {"question": "ship it?"}
    assert ints[0].id
    snap = app.get_state(cfg)
    assert snap.next == ("ask",)
    assert [i.value for i in snap.interrupts] == [{"question": "ship it?"}]

    out = app.invoke(Command(resume="yes"), cfg)
    assert out == {"question": "ship it?", "answer": "got yes", "answers": ["got yes"]}
    assert "__interrupt__" not in out
    assert len(calls) == 2  # the node re-ran from its start
    assert app.get_state(cfg).next == ()


def test_two_interrupts_in_one_node_need_two_resumes() -> None:
    calls = []

    def form(s: AskS) -> dict[str, Any]:
        calls.append(1)
        first = interrupt("name?")
        second = interrupt("age?")
        return {"answers": [first, second]}

    app = chain(form, schema=AskS).compile(checkpointer=MemorySaver())
    cfg = thread_config()
    assert [i.value for i in app.invoke({"question": "q"}, cfg)["__interrupt__"]] == ["name?"]
    out = app.invoke(Command(resume="Ann"), cfg)
    assert [i.value for i in out["__interrupt__"]] == ["age?"]
    out = app.invoke(Command(resume="33"), cfg)
    assert out["answers"] == ["Ann", "33"]
    assert "__interrupt__" not in out
    assert len(calls) == 3


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_interrupt_and_resume_in_an_async_node(how) -> None:
    async def ask(s: AskS) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"answer": interrupt("ok?")}

    app = chain(ask, schema=AskS).compile(checkpointer=MemorySaver())
    out = run(app, how, {"question": "q"}, thread_config())
    assert out["__interrupt__"][0].value == "ok?"
    out = run(app, how, Command(resume="fine"), thread_config())
    assert out["answer"] == "fine"


def test_interrupt_is_streamed_as_an_update() -> None:
    app = chain(lambda s: {"answer": interrupt("stop here")}, schema=AskS).compile(
        checkpointer=MemorySaver()
    )
    chunks = list(app.stream({"question": "q"}, thread_config(), stream_mode="updates"))
    assert "__interrupt__" in chunks[-1]
    assert [i.value for i in chunks[-1]["__interrupt__"]] == ["stop here"]


def test_interrupt_outside_a_graph_raises() -> None:
    with pytest.raises(RuntimeError):
        interrupt("nope")


def test_interrupt_inside_a_tool_in_a_toolnode_pauses() -> None:
    runs = []

    @tool
    def transfer(amount: int) -> str:
        """Moves money after a human approves."""
        runs.append(amount)
        decision = interrupt({"approve_transfer": amount})
        return f"transfer of {amount}: {decision}"

    app = tool_graph(
        [transfer], ai_with_calls(("transfer", {"amount": 50})), checkpointer=MemorySaver()
    )
    cfg = thread_config()
    out = app.invoke({"messages": [("user", "pay")]}, cfg)
    assert [i.value for i in out["__interrupt__"]] == [{"approve_transfer": 50}]
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    assert app.get_state(cfg).next == ("tools",)
    out = app.invoke(Command(resume="approved"), cfg)
    assert "__interrupt__" not in out
    last = out["messages"][-1]
    assert isinstance(last, ToolMessage)
    assert last.content == "transfer of 50: approved"
    assert last.status == "success"
    assert runs == [50, 50]


# ---------------------------------------------------------------- in subgraphs


async def _async_ask(s: AskS) -> dict[str, str]:
    await asyncio.sleep(0)
    return {"answer": interrupt("inner question")}


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize("node", ["sync", "async"])
def test_interrupt_inside_a_subgraph_pauses_the_parent(node, how) -> None:
    ask = _async_ask if node == "async" else (lambda s: {"answer": interrupt("inner question")})
    inner = StateGraph(AskS)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask").add_edge("ask", END)
    g = StateGraph(AskS)
    g.add_node("sub", inner.compile())
    g.add_node("after", lambda s: {"answers": [s["answer"]]})
    g.add_edge(START, "sub").add_edge("sub", "after").add_edge("after", END)
    app = g.compile(checkpointer=MemorySaver())
    out = run(app, how, {"question": "q"}, thread_config())
    # LangGraph: the parent pauses on the subgraph's interrupt; "after" has not run.
    assert [i.value for i in out.get("__interrupt__", [])] == ["inner question"], out
    assert "answers" not in out
    assert app.get_state(thread_config()).next == ("sub",)
    out = run(app, how, Command(resume="yes"), thread_config())
    assert out["answer"] == "yes"
    assert out["answers"] == ["yes"]


def test_interrupts_in_a_nested_subgraph_resume_in_order() -> None:
    def form(s: AskS) -> dict[str, Any]:
        return {"answers": [interrupt("first?"), interrupt("second?")]}

    innermost = chain(form, schema=AskS).compile()
    middle = chain(innermost, schema=AskS).compile()
    app = chain(lambda s: {"question": "asked"}, middle, schema=AskS).compile(
        checkpointer=MemorySaver()
    )
    assert [i.value for i in app.invoke({"question": "q"}, thread_config())["__interrupt__"]] == [
        "first?"
    ]
    assert [i.value for i in app.invoke(Command(resume=1), thread_config())["__interrupt__"]] == [
        "second?"
    ]
    out = app.invoke(Command(resume=2), thread_config())
    assert out == {"question": "asked", "answers": [1, 2]}


# ---------------------------------------------------------------------- static


_static_graph = abc_graph


@pytest.mark.parametrize(
    "static", [{"interrupt_before": ["b"]}, {"interrupt_after": ["a"]}], ids=["before", "after"]
)
def test_static_interrupt_then_invoke_none_resumes(static) -> None:
    app = _static_graph(**static)
    cfg = thread_config()
    assert app.invoke({"log": []}, cfg)["log"] == ["a"]
    assert app.get_state(cfg).next == ("b",)
    assert app.invoke(None, cfg)["log"] == ["a", "b", "c"]
    assert app.get_state(cfg).next == ()


def test_interrupt_before_and_after_together() -> None:
    app = _static_graph(interrupt_before=["c"], interrupt_after=["a"])
    cfg = thread_config()
    assert app.invoke({"log": []}, cfg)["log"] == ["a"]
    assert app.invoke(None, cfg)["log"] == ["a", "b"]
    assert app.get_state(cfg).next == ("c",)
    assert app.invoke(None, cfg)["log"] == ["a", "b", "c"]


def test_resume_without_a_pending_interrupt_raises() -> None:
    app = _static_graph()
    cfg = thread_config()
    app.invoke({"log": []}, cfg)
    with pytest.raises(ValueError):
        app.invoke(Command(resume="x"), cfg)


def test_an_interrupt_inside_a_tool_is_not_logged_as_a_tool_failure(caplog: Any) -> None:
    # As LangGraph's docs' `book_hotel`: the pause is control flow, not an error.
    def book_hotel(hotel_name: str) -> str:
        """Book a hotel"""
        answer = interrupt(f"book {hotel_name}?")
        return f"booked {hotel_name}: {answer}"

    g = StateGraph(MessagesState).add_node("tools", ToolNode([book_hotel]))
    app = g.add_edge(START, "tools").compile(checkpointer=MemorySaver())
    call = {"name": "book_hotel", "args": {"hotel_name": "Ritz"}, "id": "c1"}
    config = {"configurable": {"thread_id": "hotel"}}
    caplog.set_level(logging.DEBUG, logger="ironloop")
    out = app.invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)
    assert [i.value for i in out["__interrupt__"]] == ["book Ritz?"]
    assert [r for r in caplog.records if r.name.startswith("ironloop")] == []
    out = app.invoke(Command(resume="yes"), config)
    assert out["messages"][-1].content == "booked Ritz: yes"
