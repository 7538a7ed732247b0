"""Command and interrupts as LangGraph 1.2 has them (issue: LangGraph parity).

Each expectation is what the same program gives under LangGraph 1.2, except where
noted (and recorded in docs/decisions.md).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from graph_support import thread_config

from ironloop import START, Command, MemorySaver, StateGraph, interrupt


class S(TypedDict):
    x: Annotated[list, operator.add]


def _abc(first: str = "a") -> Any:
    def a(s: S) -> Command[Literal["b", "c"]]:
        return Command(update={"x": ["a"]}, goto="c")

    g = StateGraph(S)
    g.add_node("a", a)
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_node("c", lambda s: {"x": ["c"]})
    g.add_edge(START, "a")
    return g.compile(checkpointer=MemorySaver())


def test_a_node_annotated_command_of_literal_routes() -> None:
    assert _abc().invoke({"x": []}, thread_config("lit")) == {"x": ["a", "c"]}


def test_a_command_as_input_updates_and_routes() -> None:
    out = _abc().invoke(Command(goto="b", update={"x": ["in"]}), thread_config("goto"))
    # LangGraph 1.2 gives ["in", "in", "a", "b", "c"] (its input update is applied
    # twice); ironloop applies it once (docs/decisions.md).
    assert out == {"x": ["in", "a", "b", "c"]}


def test_command_parent_routes_the_parent_graph() -> None:
    def child(s: S) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="c", update={"x": ["child"]})

    sub = StateGraph(S)
    sub.add_node("child", child)
    sub.add_edge(START, "child")
    parent = StateGraph(S)
    parent.add_node("sub", sub.compile())
    parent.add_node("c", lambda s: {"x": ["c"]})
    parent.add_edge(START, "sub")
    assert parent.compile().invoke({"x": []}) == {"x": ["child", "c"]}


def test_resume_at_a_static_breakpoint_continues() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    app = g.compile(checkpointer=MemorySaver(), interrupt_before=["b"])
    cfg = thread_config("static")
    assert app.invoke({"x": []}, cfg) == {"x": ["a"]}
    assert app.invoke(Command(resume="go"), cfg) == {"x": ["a", "b"]}


def test_a_subgraph_invoked_inside_a_node_passes_its_interrupt_up() -> None:
    calls = {"inner": 0}

    def inner_node(s: S) -> dict[str, Any]:
        calls["inner"] += 1
        return {"x": [interrupt("inner?")]}

    inner = StateGraph(S)
    inner.add_node("i", inner_node)
    inner.add_edge(START, "i")
    inner_app = inner.compile()

    def outer_node(s: S) -> dict[str, Any]:
        return inner_app.invoke(s)

    outer = StateGraph(S)
    outer.add_node("o", outer_node)
    outer.add_edge(START, "o")
    app = outer.compile(checkpointer=MemorySaver())
    cfg = thread_config("inner")
    out = app.invoke({"x": []}, cfg)
    assert [i.value for i in out["__interrupt__"]] == ["inner?"]
    assert app.invoke(Command(resume="yes"), cfg) == {"x": ["yes"]}
    assert calls["inner"] == 2


def test_a_subgraph_compiled_with_checkpointer_true_uses_its_parents() -> None:
    inner = StateGraph(S)
    inner.add_node("pre", lambda s: {"x": ["pre"]})
    inner.add_node("ask", lambda s: {"x": [interrupt("q")]})
    inner.add_edge(START, "pre")
    inner.add_edge("pre", "ask")
    outer = StateGraph(S)
    outer.add_node("sub", inner.compile(checkpointer=True))
    outer.add_edge(START, "sub")
    app = outer.compile(checkpointer=MemorySaver())
    cfg = thread_config("ckpt-true")
    assert [i.value for i in app.invoke({"x": []}, cfg)["__interrupt__"]] == ["q"]
    assert app.invoke(Command(resume="ans"), cfg) == {"x": ["pre", "ans"]}


def test_a_steps_writes_do_not_depend_on_add_node_order() -> None:
    def build(order: list[str]) -> Any:
        g = StateGraph(S)
        for name in order:
            g.add_node(name, lambda s, name=name: {"x": [name]})
            g.add_edge(START, name)
        return g.compile()

    forward = build(["zed", "amy", "kim"]).invoke({"x": []})
    backward = build(["kim", "amy", "zed"]).invoke({"x": []})
    assert forward == backward == {"x": ["amy", "kim", "zed"]}
