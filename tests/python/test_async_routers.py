"""``async def`` routing functions in ``add_conditional_edges``: awaited under
``ainvoke`` / ``astream`` as LangGraph awaits them (a node name, a list, ``Send``s,
``END``, through a ``path_map``), their exceptions raised as they are; under a sync
``invoke`` / ``stream`` LangGraph 1.2's ``TypeError``."""

from __future__ import annotations

import asyncio
import contextvars
import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, MemorySaver, Send, StateGraph


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


def _node(name: str) -> Any:
    def run(s: S) -> dict[str, Any]:
        return {"log": [name]}

    return run


def _graph(router: Any, path_map: Any = None, **kw: Any) -> Any:
    """``start`` → router → any of ``a``, ``b``, ``c`` → END."""
    g = StateGraph(S)
    g.add_node("start", _node("start"))
    for name in ("a", "b", "c"):
        g.add_node(name, _node(name))
        g.add_edge(name, END)
    g.add_edge(START, "start")
    g.add_conditional_edges("start", router, path_map)
    return g.compile(**kw)


def _ainvoke(app: Any, inp: Any, config: Any = None) -> Any:
    return asyncio.run(app.ainvoke(inp, config))


def test_an_async_router_returns_a_node_name() -> None:
    seen: list[Any] = []

    async def route(s: S) -> str:
        await asyncio.sleep(0.001)
        seen.append(dict(s))
        return "b" if s["n"] > 1 else "a"

    app = _graph(route)
    assert _ainvoke(app, {"n": 2}) == {"n": 2, "log": ["start", "b"]}
    assert _ainvoke(app, {"n": 0}) == {"n": 0, "log": ["start", "a"]}
    # It saw the state after its node's step.
    assert seen == [{"n": 2, "log": ["start"]}, {"n": 0, "log": ["start"]}]


def test_an_async_router_returns_a_list_of_nodes_that_run_in_one_step() -> None:
    async def route(s: S) -> list[str]:
        return ["c", "a"]

    app = _graph(route)
    out = _ainvoke(app, {"n": 1})
    assert out["log"][0] == "start" and sorted(out["log"][1:]) == ["a", "c"]
    # One state per step: the input, `start`'s, then `a` and `c` together.
    steps = asyncio.run(_values(app, {"n": 1}))
    assert [len(v["log"]) for v in steps] == [0, 1, 3]


async def _values(app: Any, inp: Any) -> list[Any]:
    return [chunk async for chunk in app.astream(inp, stream_mode="values")]


def test_an_async_router_returns_sends() -> None:
    class W(TypedDict, total=False):
        items: list[int]
        out: Annotated[list[int], operator.add]

    async def fan_out(s: W) -> list[Send]:
        await asyncio.sleep(0)
        return [Send("square", {"items": [i]}) for i in s["items"]]

    def square(s: W) -> dict[str, Any]:
        return {"out": [s["items"][0] ** 2]}

    g = StateGraph(W)
    g.add_node("square", square)
    g.add_conditional_edges(START, fan_out, ["square"])
    g.add_edge("square", END)
    out = _ainvoke(g.compile(), {"items": [1, 2, 3]})
    assert out == {"items": [1, 2, 3], "out": [1, 4, 9]}


def test_an_async_router_returns_end() -> None:
    async def stop(s: S) -> str:
        return END

    assert _ainvoke(_graph(stop), {"n": 1}) == {"n": 1, "log": ["start"]}


def test_an_async_router_through_a_path_map() -> None:
    async def route(s: S) -> bool:
        return s["n"] > 0

    app = _graph(route, {True: "c", False: END})
    assert _ainvoke(app, {"n": 1}) == {"n": 1, "log": ["start", "c"]}
    assert _ainvoke(app, {"n": 0}) == {"n": 0, "log": ["start"]}

    async def unknown(s: S) -> str:
        return "nowhere"

    with pytest.raises(ValueError, match="not in its path_map"):
        _ainvoke(_graph(unknown, {"x": "a"}), {"n": 1})


def test_an_async_router_is_also_a_callable_object() -> None:
    class Router:
        async def __call__(self, s: S) -> str:
            return "a"

    assert _ainvoke(_graph(Router()), {"n": 1}) == {"n": 1, "log": ["start", "a"]}


def test_an_exception_in_an_async_router_is_raised_as_it_is() -> None:
    class Refused(Exception):
        pass

    async def route(s: S) -> str:
        await asyncio.sleep(0)
        raise Refused("no route today")

    with pytest.raises(Refused, match="no route today") as e:
        _ainvoke(_graph(route), {"n": 1})
    assert e.value.__traceback__ is not None

    async def bad(s: S) -> int:
        return 5

    with pytest.raises(TypeError, match="must return a node name"):
        _ainvoke(_graph(bad), {"n": 1})


def test_an_async_router_under_astream() -> None:
    async def route(s: S) -> str:
        await asyncio.sleep(0.001)
        return "b"

    app = _graph(route)

    async def main() -> tuple[list[Any], list[Any]]:
        updates = [c async for c in app.astream({"n": 1}, stream_mode="updates")]
        values = [c async for c in app.astream({"n": 1}, stream_mode="values")]
        return updates, values

    updates, values = asyncio.run(main())
    assert updates == [{"start": {"log": ["start"]}}, {"b": {"log": ["b"]}}]
    assert values[-1] == {"n": 1, "log": ["start", "b"]}


def test_an_async_router_runs_in_the_callers_context_and_with_a_checkpointer() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def route(s: S) -> str:
        return "a" if var.get() == "caller" else "b"

    app = _graph(route, checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def main() -> Any:
        var.set("caller")
        return await app.ainvoke({"n": 1}, config)

    assert asyncio.run(main()) == {"n": 1, "log": ["start", "a"]}
    history = list(app.get_state_history(config))
    assert [h.next for h in history] == [(), ("a",), ("start",), ("__start__",)]


def test_an_async_router_under_sync_invoke_is_langgraphs_type_error() -> None:
    async def route(s: S) -> str:
        return "a"

    app = _graph(route)
    message = (
        'No synchronous function provided to "route".\n'
        "Either initialize with a synchronous function or invoke via the async API "
        "(ainvoke, astream, etc.)"
    )
    with pytest.raises(TypeError) as e:
        app.invoke({"n": 1})
    assert str(e.value) == message
    with pytest.raises(TypeError) as e:
        list(app.stream({"n": 1}))
    assert str(e.value) == message


def test_a_sync_router_returning_a_coroutine_says_to_declare_it_async() -> None:
    async def later(s: S) -> str:
        return "a"

    def route(s: S) -> Any:
        return later(s)

    with pytest.raises(TypeError, match="declare it `async def`"):
        _ainvoke(_graph(route), {"n": 1})
