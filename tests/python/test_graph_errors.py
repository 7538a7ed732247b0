"""StateGraph errors: invalid updates, recursion limits, exceptions in nodes and routers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from graph_support import XS, chain, parallel

from ironloop import END, START, StateGraph
from ironloop.errors import GraphRecursionError, InvalidUpdateError

# ------------------------------------------------------------- invalid updates


def test_two_writes_to_a_last_value_channel_in_one_step_raise() -> None:
    app = parallel(lambda s: {"x": 1}, lambda s: {"x": 2})
    with pytest.raises(InvalidUpdateError, match="x"):
        app.invoke({"x": 0})
    with pytest.raises(ValueError):  # InvalidUpdateError is a ValueError
        app.invoke({"x": 0})


def test_writing_an_unknown_key_is_dropped_as_langgraph_drops_it() -> None:
    # LangGraph's _get_updates keeps only the keys that are channels of the state.
    app = chain(lambda s: {"nope": 1, "x": s["x"] + 1}).compile()
    assert app.invoke({"x": 0}) == {"x": 1}


def test_a_node_returning_a_non_dict_raises_invalid_update() -> None:
    app = chain(lambda s: 42).compile()
    with pytest.raises(InvalidUpdateError):
        app.invoke({"x": 0})


# ------------------------------------------------------------ recursion limits


def _loop(limit: int) -> Any:
    g = StateGraph(XS)
    g.add_node("step", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["x"] < limit else END, ["step", END])
    return g.compile()


def test_recursion_limit_from_config() -> None:
    app = _loop(1000)
    with pytest.raises(GraphRecursionError) as ei:
        app.invoke({"x": 0}, {"recursion_limit": 5})
    assert isinstance(ei.value, RecursionError)
    assert _loop(3).invoke({"x": 0}, {"recursion_limit": 10}) == {"x": 3}


def test_default_recursion_limit_is_langgraphs_10007() -> None:
    # n turns of the loop node take n steps after START's: 10,006 fit, 10,007 do not.
    assert _loop(10_006).invoke({"x": 0}) == {"x": 10_006}
    with pytest.raises(GraphRecursionError):
        _loop(10_007).invoke({"x": 0})


async def test_recursion_limit_under_ainvoke() -> None:
    with pytest.raises(GraphRecursionError):
        await _loop(1000).ainvoke({"x": 0}, {"recursion_limit": 4})


# ------------------------------------------------------------------ exceptions


class NodeFailed(Exception):
    pass


def test_an_exception_in_a_node_propagates_with_its_type() -> None:
    def boom(s: XS) -> dict[str, int]:
        raise NodeFailed("kaput")

    app = chain(lambda s: {"x": 1}, boom).compile()
    with pytest.raises(NodeFailed, match="kaput"):
        app.invoke({"x": 0})
    with pytest.raises(NodeFailed, match="kaput"):
        asyncio.run(app.ainvoke({"x": 0}))
    with pytest.raises(NodeFailed, match="kaput"):
        list(app.stream({"x": 0}))


def test_an_exception_in_an_async_node_and_in_a_router_propagates() -> None:
    async def boom(s: XS) -> dict[str, int]:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        chain(boom).compile().invoke({"x": 0})

    def bad_route(s: XS) -> str:
        raise NodeFailed("route")

    g = StateGraph(XS)
    g.add_node("a", lambda s: {}).add_edge(START, "a").add_conditional_edges("a", bad_route)
    with pytest.raises(NodeFailed, match="route"):
        g.compile().invoke({"x": 0})
