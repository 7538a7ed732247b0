"""StateGraph wiring: nodes, subgraphs, edges, joins, conditional edges, compile checks, drawing."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest
from graph_support import XS, LogS, chain, log_node

from ironloop import END, START, MemorySaver, StateGraph
from ironloop.runtime import Runtime

# --------------------------------------------------------- nodes and subgraphs


def test_sync_and_async_nodes_mix_under_invoke_and_ainvoke() -> None:
    async def double(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"x": s["x"] * 2}

    def inc(s: XS) -> dict[str, int]:
        return {"x": s["x"] + 1}

    app = chain(inc, double, inc).compile()
    assert app.invoke({"x": 1}) == {"x": 5}
    assert asyncio.run(app.ainvoke({"x": 1})) == {"x": 5}


def test_node_named_after_the_function_and_none_return() -> None:
    calls = []

    def side_effect(s: XS) -> None:
        calls.append(s["x"])

    g = StateGraph(XS)
    g.add_node(side_effect)
    g.set_entry_point("side_effect")
    g.set_finish_point("side_effect")
    assert g.compile().invoke({"x": 7}) == {"x": 7}
    assert calls == [7]


def test_compiled_graph_as_a_subgraph_node() -> None:
    inner = chain(lambda s: {"x": s["x"] * 10}, lambda s: {"x": s["x"] + 1}).compile()
    g = StateGraph(XS)
    g.add_node("pre", lambda s: {"x": s["x"] + 1})
    g.add_node("sub", inner)
    g.add_node("post", lambda s: {"x": s["x"] + 2})
    g.add_edge(START, "pre").add_edge("pre", "sub").add_edge("sub", "post").add_edge("post", END)
    app = g.compile()
    assert app.invoke({"x": 1}) == {"x": 23}
    assert asyncio.run(app.ainvoke({"x": 1})) == {"x": 23}


class ParentS(TypedDict, total=False):
    foo: str
    other: int


class ChildS(TypedDict, total=False):
    foo: str
    bar: str


def test_subgraph_with_a_different_schema_shares_only_common_keys() -> None:
    # LangGraph's "shared state keys" subgraph pattern.
    seen: list[dict[str, Any]] = []

    def child_a(s: ChildS) -> dict[str, str]:
        seen.append(dict(s))
        return {"bar": "bar"}

    async def child_b(s: ChildS) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"foo": s["foo"] + s["bar"]}

    child = StateGraph(ChildS)
    child.add_node("child_a", child_a).add_node("child_b", child_b)
    child.add_edge(START, "child_a").add_edge("child_a", "child_b").add_edge("child_b", END)
    g = StateGraph(ParentS)
    g.add_node("greet", lambda s: {"foo": "hi! " + s["foo"]})
    g.add_node("sub", child.compile())
    g.add_edge(START, "greet").add_edge("greet", "sub").add_edge("sub", END)
    app = g.compile()
    assert app.invoke({"foo": "foo", "other": 1}) == {"foo": "hi! foobar", "other": 1}
    assert asyncio.run(app.ainvoke({"foo": "x"})) == {"foo": "hi! xbar"}
    assert seen[0] == {"foo": "hi! foo"}  # the child never sees the parent's private keys


# ------------------------------------------------------------- edges and joins


def test_join_waits_for_both_sources_finishing_in_different_steps() -> None:
    c_calls: list[list[str]] = []

    def c(s: LogS) -> dict[str, Any]:
        c_calls.append(list(s["log"]))
        return {"log": ["c"]}

    g = StateGraph(LogS)
    for n in ("a", "b1", "b2"):
        g.add_node(n, log_node(n))
    g.add_node("c", c)
    g.add_edge(START, "a").add_edge(START, "b1").add_edge("b1", "b2")
    g.add_edge(["a", "b2"], "c")
    g.add_edge("c", END)
    out = g.compile().invoke({"log": []})
    assert len(c_calls) == 1, c_calls
    assert set(c_calls[0]) == {"a", "b1", "b2"}
    assert out["log"][-1] == "c"
    assert out["log"].count("c") == 1


def test_join_of_sources_in_the_same_step_runs_target_once() -> None:
    calls = []
    g = StateGraph(LogS)
    g.add_node("a", log_node("a")).add_node("b", log_node("b"))
    g.add_node("c", lambda s: calls.append(1) or {"log": ["c"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], "c").add_edge("c", END)
    out = g.compile().invoke({"log": []})
    assert calls == [1]
    assert out["log"] == ["a", "b", "c"]


def test_join_does_not_fire_when_only_one_source_ran() -> None:
    g = StateGraph(LogS)
    g.add_node("a", log_node("a")).add_node("b", log_node("b")).add_node("c", log_node("c"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: END, [END, "b"])
    g.add_edge(["a", "b"], "c").add_edge("c", END)
    assert g.compile().invoke({"log": []})["log"] == ["a"]


def test_plain_edges_into_one_node_trigger_it_once_per_step() -> None:
    calls = []
    g = StateGraph(LogS)
    g.add_node("a", log_node("a")).add_node("b", log_node("b"))
    g.add_node("c", lambda s: calls.append(1) or {"log": ["c"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", "c").add_edge("b", "c")
    g.add_edge("c", END)
    g.compile().invoke({"log": []})
    assert calls == [1]


# ----------------------------------------------------------- conditional edges


class RouteS(TypedDict, total=False):
    route: str
    log: Annotated[list[str], operator.add]


def _router_graph(path: Any, path_map: Any = None) -> Any:
    g = StateGraph(RouteS)
    g.add_node("start", log_node("start"))
    g.add_node("left", log_node("left"))
    g.add_node("right", log_node("right"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", path, path_map)
    g.add_edge("left", END).add_edge("right", END)
    return g.compile()


def _route_by_letter(s: RouteS) -> Literal["left", "right", "__end__"]:
    return {"l": "left", "r": "right"}.get(s["route"], END)


@pytest.mark.parametrize(
    ("path", "path_map", "logs"),
    [
        (_route_by_letter, None, {"l": ["start", "left"], "r": ["start", "right"], "x": ["start"]}),
        (
            lambda s: s["route"],
            {"go_left": "left", "go_right": "right", "stop": END},
            {"go_left": ["start", "left"], "go_right": ["start", "right"], "stop": ["start"]},
        ),
        (lambda s: s["route"], ["left", "right"], {"right": ["start", "right"]}),
    ],
    ids=["without-a-path-map", "with-a-dict-path-map", "with-a-list-path-map"],
)
def test_conditional_edges(path, path_map, logs) -> None:
    app = _router_graph(path, path_map)
    for route, log in logs.items():
        assert app.invoke({"route": route, "log": []})["log"] == log, route


def test_conditional_edges_returning_several_nodes_fans_out() -> None:
    app = _router_graph(lambda s: ["left", "right"])
    assert app.invoke({"route": "", "log": []})["log"] == ["start", "left", "right"]


def test_routing_to_a_key_missing_from_the_path_map_raises() -> None:
    app = _router_graph(lambda s: s["route"], {"a": "left"})
    with pytest.raises(ValueError, match="zzz"):
        app.invoke({"route": "zzz", "log": []})


def test_conditional_entry_point() -> None:
    g = StateGraph(RouteS)
    g.add_node("left", log_node("left")).add_node("right", log_node("right"))
    g.set_conditional_entry_point(lambda s: s["route"], ["left", "right"])
    g.add_edge("left", END).add_edge("right", END)
    assert g.compile().invoke({"route": "right", "log": []})["log"] == ["right"]


def test_add_sequence() -> None:
    def first(s: LogS) -> dict[str, Any]:
        return {"log": ["first"]}

    def second(s: LogS) -> dict[str, Any]:
        return {"log": ["second"]}

    g = StateGraph(LogS)
    g.add_sequence([first, second, ("third", log_node("third"))])
    g.add_edge(START, "first").add_edge("third", END)
    assert g.compile().invoke({"log": []})["log"] == ["first", "second", "third"]


# -------------------------------------------------------------- compile checks


def _two_nodes() -> StateGraph:
    g = StateGraph(XS)
    g.add_node("a", lambda s: {}).add_node("b", lambda s: {})
    return g


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        (lambda g: g.add_edge(START, "a").add_edge("a", "nowhere"), "nowhere"),
        (lambda g: g.add_edge(START, "a").add_edge("ghost", "b"), "ghost"),
        (
            lambda g: g.add_edge(START, "a").add_conditional_edges(
                "a", lambda s: "x", {"x": "missing_node"}
            ),
            "missing_node",
        ),
        (lambda g: g.add_edge("a", "b"), r"(?i)entry"),
    ],
    ids=[
        "edge-to-an-unknown-node",
        "edge-from-an-unknown-node",
        "path-map-to-an-unknown-node",
        "graph-without-an-entry-point",
    ],
)
def test_compile_rejects(wire, match) -> None:
    g = _two_nodes()
    wire(g)
    with pytest.raises(ValueError, match=match):
        g.compile()


def test_duplicate_node_is_rejected_naming_it() -> None:
    g = StateGraph(XS)
    g.add_node("dup", lambda s: {})
    with pytest.raises(ValueError, match="dup"):
        g.add_node("dup", lambda s: {})


@pytest.mark.parametrize("kw", ["interrupt_before", "interrupt_after"])
def test_compile_rejects_an_interrupt_on_an_unknown_node(kw) -> None:
    g = _two_nodes().add_edge(START, "a").add_edge("a", END)
    with pytest.raises(ValueError, match="bogus"):
        g.compile(checkpointer=MemorySaver(), **{kw: ["bogus"]})


def test_reserved_node_names_are_rejected() -> None:
    with pytest.raises(ValueError):
        StateGraph(XS).add_node(END, lambda s: {})


# --------------------------------------------------------------------- drawing


def test_draw_mermaid() -> None:
    g = StateGraph(RouteS)
    g.add_node("plan", log_node("plan")).add_node("act", log_node("act")).add_node(
        "check", log_node("c")
    )
    g.add_edge(START, "plan").add_edge("plan", "act")
    g.add_conditional_edges("act", lambda s: s["route"], {"again": "plan", "done": "check"})
    g.add_edge("check", END)
    text = g.compile().get_graph().draw_mermaid()
    assert "graph TD" in text
    for n in ("plan", "act", "check", START, END):
        assert n in text
    assert f"{START} --> plan" in text
    assert "plan --> act" in text
    assert f"check --> {END}" in text
    assert "act -." in text and "-> plan" in text and "-> check" in text
    # Line for line LangGraph 1.2's edges: sorted, labels spaced, END edges last.
    edges = [line.strip() for line in text.splitlines() if "-->" in line or ".->" in line]
    assert edges == [
        "__start__ --> plan;",
        "act -. &nbsp;done&nbsp; .-> check;",
        "act -. &nbsp;again&nbsp; .-> plan;",
        "plan --> act;",
        "check --> __end__;",
    ]


def test_draw_mermaid_ends_a_node_that_leads_nowhere_and_shows_metadata() -> None:
    from ironloop import ToolNode, tool
    from ironloop.graph import MessagesState

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    g = StateGraph(MessagesState)
    g.add_node("b", lambda s: {}, metadata={"team": "x", "tags": ["p", "q"]})
    g.add_node("a", lambda s: {})
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "b").add_edge("b", "a").add_edge("a", "tools")
    text = g.compile().get_graph().draw_mermaid()
    assert "\tb(b<hr/><small><em>team = x\ntags = p, q</em></small>)" in text
    assert "\ttools(tools<hr/><small><em>__tools = add</em></small>)" in text
    assert [line.strip() for line in text.splitlines() if "-->" in line] == [
        "__start__ --> b;",
        "a --> tools;",
        "b --> a;",
        "tools --> __end__;",
    ]


def test_batch_with_a_config_list_of_another_length_says_so() -> None:
    graph = chain(lambda s: {"x": s["x"] + 1}).compile()
    assert graph.batch([{"x": 1}, {"x": 2}]) == [{"x": 2}, {"x": 3}]
    with pytest.raises(ValueError, match="batch got 1 configs for 2 inputs"):
        graph.batch([{"x": 1}, {"x": 2}], [{}])


def test_batch_and_abatch_pass_their_keyword_arguments_to_each_run() -> None:
    """As LangGraph's: ``context``, ``stream_mode`` and the other run options reach
    every input's run; ``return_exceptions=True`` makes a failure that input's result."""

    def add_step(s: XS, runtime: Runtime[Any]) -> dict[str, int]:
        if s["x"] < 0:
            raise ValueError("negative x")
        return {"x": s["x"] + runtime.context["step"]}

    graph = chain(add_step).compile()
    inputs = [{"x": 1}, {"x": 2}]
    assert graph.batch(inputs, context={"step": 10}) == [{"x": 11}, {"x": 12}]
    assert asyncio.run(graph.abatch(inputs, context={"step": 5})) == [{"x": 6}, {"x": 7}]
    # Another stream mode: each result is that run's list of chunks.
    assert graph.batch(inputs, context={"step": 1}, stream_mode="updates") == [
        [{"n0": {"x": 2}}],
        [{"n0": {"x": 3}}],
    ]
    mixed = [{"x": 1}, {"x": -1}]
    with pytest.raises(ValueError, match="negative x"):
        graph.batch(mixed, context={"step": 1})
    for out in (
        graph.batch(mixed, context={"step": 1}, return_exceptions=True),
        asyncio.run(graph.abatch(mixed, context={"step": 1}, return_exceptions=True)),
    ):
        assert out[0] == {"x": 2}
        assert isinstance(out[1], ValueError) and "negative x" in str(out[1])
