"""Errors and messages as LangGraph 1.2 gives them: the texts of `StateGraph`'s wiring
checks, `add_sequence([])`, `add_messages` with duplicate `RemoveMessage`s, and
message equality with foreign types. Each expected text below is what LangGraph 1.2
raises for the same snippet."""

from __future__ import annotations

import re
from typing import Any, Literal, TypedDict

import pytest

from ironloop import END, START, StateGraph, add_messages
from ironloop.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage


class S(TypedDict):
    x: int


def _two() -> StateGraph:
    return StateGraph(S).add_node("a", lambda s: {}).add_node("b", lambda s: {})


def route(s: S) -> str:
    return "x"


def lit(s: S) -> Literal["b", "nope"]:
    return "b"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (
            lambda g: g.add_edge(START, "a").add_edge("a", "nowhere"),
            "Found edge ending at unknown node `nowhere`",
        ),
        (
            lambda g: g.add_edge(START, "a").add_edge("ghost", "b"),
            "Found edge starting at unknown node 'ghost'",
        ),
        (
            lambda g: g.add_edge(START, "a").add_conditional_edges("zz", route, ["b"]),
            "Found edge starting at unknown node 'zz'",
        ),
        (
            lambda g: g.add_edge(START, "a").add_conditional_edges("a", route, {"x": "missing"}),
            "At 'a' node, 'route' branch found unknown target 'missing'",
        ),
        (
            lambda g: g.add_edge(START, "a").add_conditional_edges(
                "a", lambda s: "x", {"x": "missing"}
            ),
            "At 'a' node, 'condition' branch found unknown target 'missing'",
        ),
        (
            lambda g: g.add_edge(START, "a").add_conditional_edges("a", route, ["missing"]),
            "At 'a' node, 'route' branch found unknown target 'missing'",
        ),
        (
            lambda g: g.add_edge(START, "a").add_conditional_edges("a", lit),
            "At 'a' node, 'lit' branch found unknown target 'nope'",
        ),
        (
            lambda g: g.add_edge("a", "b"),
            "Graph must have an entrypoint: add at least one edge from START to another node",
        ),
    ],
    ids=[
        "edge-to-unknown",
        "edge-from-unknown",
        "branch-from-unknown",
        "path-map-to-unknown",
        "lambda-branch-to-unknown",
        "path-list-to-unknown",
        "literal-to-unknown",
        "no-entry-point",
    ],
)
def test_compile_errors_read_as_langgraphs(wire: Any, message: str) -> None:
    g = _two()
    wire(g)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        g.compile()


def test_an_empty_graph_has_no_entry_point() -> None:
    with pytest.raises(ValueError, match=r"^Graph must have an entrypoint"):
        StateGraph(S).compile()


@pytest.mark.parametrize("kw", ["interrupt_before", "interrupt_after"])
def test_interrupt_on_an_unknown_node(kw: str) -> None:
    g = _two().add_edge(START, "a")
    with pytest.raises(ValueError, match=r"^Interrupt node `bogus` not found$"):
        g.compile(**{kw: ["bogus"]})


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: StateGraph(S).add_node(END, lambda s: {}), "Node `__end__` is reserved."),
        (lambda: StateGraph(S).add_node(START, lambda s: {}), "Node `__start__` is reserved."),
        (
            lambda: StateGraph(S).add_node("a:b", lambda s: {}),
            "':' is a reserved character and is not allowed in the node names.",
        ),
        (
            lambda: StateGraph(S).add_node("a|b", lambda s: {}),
            "'|' is a reserved character and is not allowed in the node names.",
        ),
        (lambda: _two().add_node("a", lambda s: {}), "Node `a` already present."),
        (lambda: _two().add_edge(END, "a"), "END cannot be a start node"),
        (lambda: _two().add_edge("a", START), "START cannot be an end node"),
        (lambda: _two().add_edge(["a", "phantom"], "b"), "Need to add_node `phantom` first"),
        (lambda: _two().add_edge(["a"], "zz"), "Need to add_node `zz` first"),
        (lambda: _two().add_edge(["a", END], "b"), "END cannot be a start node"),
        (lambda: StateGraph(S).add_sequence([]), "Sequence requires at least one node."),
    ],
    ids=[
        "node-END",
        "node-START",
        "colon-in-name",
        "bar-in-name",
        "duplicate-node",
        "edge-from-END",
        "edge-to-START",
        "join-from-unknown",
        "join-to-unknown",
        "join-from-END",
        "empty-sequence",
    ],
)
def test_builder_errors_read_as_langgraphs(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        build()


def test_add_sequence_refuses_a_name_already_in_the_graph() -> None:
    def f(s: S) -> dict[str, Any]:
        return {}

    for build in (
        lambda: StateGraph(S).add_sequence([f, f]),
        lambda: StateGraph(S).add_node("f", f).add_sequence([f]),
    ):
        with pytest.raises(
            ValueError, match=r"^Node names must be unique: node with the name 'f' already exists"
        ):
            build()


def test_add_sequence_of_pairs_chains_the_nodes() -> None:
    g = StateGraph(S).add_sequence([("p", lambda s: {"x": s["x"] + 1}), ("q", lambda s: {"x": 0})])
    assert list(g.nodes) == ["p", "q"]
    assert g.add_edge(START, "p").compile().invoke({"x": 1}) == {"x": 0}


# ----------------------------------------------------------------- add_messages


def _ids(msgs: list[Any]) -> list[str]:
    return [m.id for m in msgs]


def test_a_duplicate_remove_message_in_one_update_is_tolerated() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b", id="2")]
    out = add_messages(left, [RemoveMessage(id="1"), RemoveMessage(id="1")])
    assert _ids(out) == ["2"]


def test_a_removed_then_resent_message_is_replaced_in_place() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b", id="2")]
    out = add_messages(left, [RemoveMessage(id="1"), HumanMessage("c", id="1")])
    assert [(m.id, m.content) for m in out] == [("1", "c"), ("2", "b")]


def test_a_message_added_then_removed_in_one_update_is_gone() -> None:
    out = add_messages(
        [HumanMessage("a", id="1")], [HumanMessage("c", id="2"), RemoveMessage(id="2")]
    )
    assert _ids(out) == ["1"]


def test_removing_a_missing_id_still_raises() -> None:
    with pytest.raises(
        ValueError, match=r"^Attempting to delete a message with an ID that doesn't exist \('9'\)$"
    ):
        add_messages([HumanMessage("a", id="1")], [RemoveMessage(id="9")])


def test_duplicate_remove_inside_a_graph_run() -> None:
    from ironloop import MessagesState

    def prune(s: Any) -> dict[str, Any]:
        first = s["messages"][0].id
        return {"messages": [RemoveMessage(id=first), RemoveMessage(id=first)]}

    g = StateGraph(MessagesState).add_node("prune", prune).add_edge(START, "prune")
    out = g.compile().invoke({"messages": [("user", "one"), ("user", "two")]})
    assert [m.content for m in out["messages"]] == ["two"]


# --------------------------------------------------------------------- equality


@pytest.mark.parametrize(
    "msg",
    [
        HumanMessage("a", id="1"),
        AIMessage("a", id="1"),
        ToolMessage("a", tool_call_id="c", id="1"),
    ],
    ids=["human", "ai", "tool"],
)
def test_eq_returns_not_implemented_for_foreign_types(msg: Any) -> None:
    assert msg.__eq__(1) is NotImplemented
    assert msg.__eq__("a") is NotImplemented
    assert msg.__eq__({"role": "user", "content": "a"}) is NotImplemented
    assert (msg == "a") is False
    assert msg != "a"


def test_eq_defers_to_the_other_operand() -> None:
    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

    assert HumanMessage("a") == Anything()
    assert Anything() == HumanMessage("a")


def test_eq_and_ne_between_messages() -> None:
    assert HumanMessage("a", id="1") == HumanMessage("a", id="1")
    assert HumanMessage("a", id="1") != HumanMessage("a", id="2")
    assert HumanMessage("a", id="1") != AIMessage("a", id="1")
