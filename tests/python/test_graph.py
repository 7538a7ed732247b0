"""StateGraph: state schemas and reducers, wiring and compile-time checks, super-step
semantics, Send / Command, recursion limits, errors, run methods and stream modes,
drawing, and interrupts (dynamic and static)."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import threading
import time
from typing import Annotated, Any, Literal, TypedDict

import pydantic
import pytest

from ironloop import (
    END,
    START,
    Command,
    InjectedToolCallId,
    Interrupt,
    MemorySaver,
    MessagesState,
    Send,
    StateGraph,
    ToolContext,
    ToolNode,
    add_messages,
    get_stream_writer,
    interrupt,
    tool,
    tools_condition,
)
from ironloop.errors import GraphRecursionError, InvalidUpdateError
from ironloop.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage

# ------------------------------------------------------------------------ helpers


class XS(TypedDict):
    x: int


class LogS(TypedDict, total=False):
    x: int
    log: Annotated[list[str], operator.add]


def _thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _chain(*fns: Any, schema: Any = XS) -> StateGraph:
    """START -> n0 -> n1 -> ... -> END."""
    g = StateGraph(schema)
    names = [f"n{i}" for i in range(len(fns))]
    for n, f in zip(names, fns):
        g.add_node(n, f)
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g


def _logger(name: str) -> Any:
    return lambda s: {"log": [name]}


# ------------------------------------------------------------------ state schemas


class TDState(TypedDict, total=False):
    count: int
    log: Annotated[list[str], operator.add]


@dataclasses.dataclass
class DCState:
    count: int = 0
    log: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)


class PDState(pydantic.BaseModel):
    count: int = 0
    log: Annotated[list[str], operator.add] = []


@pytest.mark.parametrize(
    "schema", [TDState, DCState, PDState], ids=["typeddict", "dataclass", "pydantic"]
)
def test_state_schemas(schema) -> None:
    seen: list[Any] = []

    def inc(state: Any) -> dict[str, Any]:
        seen.append(state)
        count = state["count"] if isinstance(state, dict) else state.count
        return {"count": count + 1, "log": [f"inc{count}"]}

    g = StateGraph(schema)
    g.add_node("a", inc)
    g.add_node("b", inc)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"count": 1})
    assert out == {"count": 3, "log": ["inc1", "inc2"]}
    # Nodes receive the state as the schema's type (a dict for a TypedDict).
    expected_type = dict if schema is TDState else schema
    assert all(isinstance(s, expected_type) for s in seen), [type(s) for s in seen]
    second = seen[1]
    assert (second["log"] if isinstance(second, dict) else second.log) == ["inc1"]


def test_node_may_return_a_dataclass_of_the_schema() -> None:
    def node(state: DCState) -> DCState:
        return DCState(count=state.count * 10, log=["x"])

    g = StateGraph(DCState)
    g.add_node("n", node).add_edge(START, "n").add_edge("n", END)
    assert g.compile().invoke({"count": 2, "log": ["start"]}) == {
        "count": 20,
        "log": ["start", "x"],
    }


def test_operator_add_reducer_accumulates_across_steps_and_input() -> None:
    g = _chain(_logger("a"), _logger("b"), _logger("c"), schema=LogS)
    assert g.compile().invoke({"log": ["in"]})["log"] == ["in", "a", "b", "c"]


def keep_max(a: int, b: int) -> int:
    return max(a, b)


class CallableReducerS(TypedDict, total=False):
    best: Annotated[int, keep_max]
    words: Annotated[str, lambda a, b: f"{a} {b}".strip()]


def test_any_python_callable_is_a_reducer() -> None:
    g = StateGraph(CallableReducerS)
    g.add_node("a", lambda s: {"best": 3, "words": "hello"})
    g.add_node("b", lambda s: {"best": 1, "words": "world"})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"best": 2, "words": ""})
    assert out == {"best": 3, "words": "hello world"}


def picky(a: int, b: int) -> int:
    raise ArithmeticError("nope")


class PickyS(TypedDict, total=False):
    v: Annotated[int, picky]


def test_a_failing_reducer_raises_and_names_the_channel() -> None:
    g = StateGraph(PickyS)
    g.add_node("a", lambda s: {"v": 1}).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(Exception, match="v") as ei:
        g.compile().invoke({"v": 0})
    assert "nope" in str(ei.value)


# ------------------------------------------------------------------- add_messages


def test_add_messages_appends_and_coerces_inputs() -> None:
    g = StateGraph(MessagesState)
    g.add_node("a", lambda s: {"messages": [AIMessage(content="one")]})
    g.add_node("b", lambda s: {"messages": AIMessage(content="two")})  # a single message
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"messages": [("user", "hi"), {"role": "user", "content": "yo"}]})
    msgs = out["messages"]
    assert [type(m) for m in msgs] == [HumanMessage, HumanMessage, AIMessage, AIMessage]
    assert [m.content for m in msgs] == ["hi", "yo", "one", "two"]
    assert all(m.id for m in msgs), "add_messages gives every message an id"
    assert len({m.id for m in msgs}) == 4


def test_add_messages_replaces_by_id_in_place() -> None:
    g = StateGraph(MessagesState)
    g.add_node("edit", lambda s: {"messages": [AIMessage(content="edited", id="m1")]})
    g.add_edge(START, "edit").add_edge("edit", END)
    out = g.compile().invoke(
        {
            "messages": [
                HumanMessage(content="q", id="h1"),
                AIMessage(content="draft", id="m1"),
                HumanMessage(content="more", id="h2"),
            ]
        }
    )
    assert [(m.id, m.content) for m in out["messages"]] == [
        ("h1", "q"),
        ("m1", "edited"),
        ("h2", "more"),
    ]


def test_add_messages_remove_message() -> None:
    g = StateGraph(MessagesState)
    g.add_node(
        "prune",
        lambda s: {"messages": [RemoveMessage(id=m.id) for m in s["messages"][:-1]]},
    )
    g.add_edge(START, "prune").add_edge("prune", END)
    inputs = [HumanMessage(content=str(i), id=f"h{i}") for i in range(4)]
    out = g.compile().invoke({"messages": inputs})
    assert [m.id for m in out["messages"]] == ["h3"]


def test_add_messages_function_directly() -> None:
    left = [HumanMessage(content="a", id="1"), AIMessage(content="b", id="2")]
    right = [
        AIMessage(content="B", id="2"),
        RemoveMessage(id="1"),
        HumanMessage(content="c", id="3"),
    ]
    merged = add_messages(left, right)
    assert [(m.id, m.content) for m in merged] == [("2", "B"), ("3", "c")]


def test_messages_state_with_extra_keys_in_a_subclass() -> None:
    class S(MessagesState, total=False):
        turns: Annotated[int, operator.add]

    g = StateGraph(S)
    g.add_node("a", lambda s: {"messages": [AIMessage(content="ok")], "turns": 1})
    g.add_edge(START, "a").add_edge("a", END)
    out = g.compile().invoke({"messages": [("user", "x")], "turns": 0})
    assert out["turns"] == 1
    assert isinstance(out["messages"][-1], BaseMessage)


# ---------------------------------------------------------------- nodes and edges


def test_sync_and_async_nodes_mix_under_invoke_and_ainvoke() -> None:
    async def double(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"x": s["x"] * 2}

    def inc(s: XS) -> dict[str, int]:
        return {"x": s["x"] + 1}

    app = _chain(inc, double, inc).compile()
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
    inner = _chain(lambda s: {"x": s["x"] * 10}, lambda s: {"x": s["x"] + 1}).compile()
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


async def _async_ask(s: AskS) -> dict[str, str]:
    await asyncio.sleep(0)
    return {"answer": interrupt("inner question")}


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
@pytest.mark.parametrize("node", ["sync", "async"])
def test_interrupt_inside_a_subgraph_pauses_the_parent(node, run) -> None:
    ask = _async_ask if node == "async" else (lambda s: {"answer": interrupt("inner question")})
    inner = StateGraph(AskS)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask").add_edge("ask", END)
    g = StateGraph(AskS)
    g.add_node("sub", inner.compile())
    g.add_node("after", lambda s: {"answers": [s["answer"]]})
    g.add_edge(START, "sub").add_edge("sub", "after").add_edge("after", END)
    app = g.compile(checkpointer=MemorySaver())

    def go(inp: Any) -> Any:
        return (
            app.invoke(inp, _thread())
            if run == "invoke"
            else asyncio.run(app.ainvoke(inp, _thread()))
        )

    out = go({"question": "q"})
    # LangGraph: the parent pauses on the subgraph's interrupt; "after" has not run.
    assert [i.value for i in out.get("__interrupt__", [])] == ["inner question"], out
    assert "answers" not in out
    assert app.get_state(_thread()).next == ("sub",)
    out = go(Command(resume="yes"))
    assert out["answer"] == "yes"
    assert out["answers"] == ["yes"]


def test_interrupts_in_a_nested_subgraph_resume_in_order() -> None:
    def form(s: AskS) -> dict[str, Any]:
        return {"answers": [interrupt("first?"), interrupt("second?")]}

    innermost = _chain(form, schema=AskS).compile()
    middle = _chain(innermost, schema=AskS).compile()
    app = _chain(lambda s: {"question": "asked"}, middle, schema=AskS).compile(
        checkpointer=MemorySaver()
    )
    assert [i.value for i in app.invoke({"question": "q"}, _thread())["__interrupt__"]] == [
        "first?"
    ]
    assert [i.value for i in app.invoke(Command(resume=1), _thread())["__interrupt__"]] == [
        "second?"
    ]
    out = app.invoke(Command(resume=2), _thread())
    assert out == {"question": "asked", "answers": [1, 2]}


def test_join_waits_for_both_sources_finishing_in_different_steps() -> None:
    c_calls: list[list[str]] = []

    def c(s: LogS) -> dict[str, Any]:
        c_calls.append(list(s["log"]))
        return {"log": ["c"]}

    g = StateGraph(LogS)
    for n in ("a", "b1", "b2"):
        g.add_node(n, _logger(n))
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
    g.add_node("a", _logger("a")).add_node("b", _logger("b"))
    g.add_node("c", lambda s: calls.append(1) or {"log": ["c"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], "c").add_edge("c", END)
    out = g.compile().invoke({"log": []})
    assert calls == [1]
    assert out["log"] == ["a", "b", "c"]


def test_join_does_not_fire_when_only_one_source_ran() -> None:
    g = StateGraph(LogS)
    g.add_node("a", _logger("a")).add_node("b", _logger("b")).add_node("c", _logger("c"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: END, [END, "b"])
    g.add_edge(["a", "b"], "c").add_edge("c", END)
    assert g.compile().invoke({"log": []})["log"] == ["a"]


def test_plain_edges_into_one_node_trigger_it_once_per_step() -> None:
    calls = []
    g = StateGraph(LogS)
    g.add_node("a", _logger("a")).add_node("b", _logger("b"))
    g.add_node("c", lambda s: calls.append(1) or {"log": ["c"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", "c").add_edge("b", "c")
    g.add_edge("c", END)
    g.compile().invoke({"log": []})
    assert calls == [1]


class RouteS(TypedDict, total=False):
    route: str
    log: Annotated[list[str], operator.add]


def _router_graph(path: Any, path_map: Any = None) -> Any:
    g = StateGraph(RouteS)
    g.add_node("start", _logger("start"))
    g.add_node("left", _logger("left"))
    g.add_node("right", _logger("right"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", path, path_map)
    g.add_edge("left", END).add_edge("right", END)
    return g.compile()


def test_conditional_edges_without_a_path_map() -> None:
    def path(s: RouteS) -> Literal["left", "right", "__end__"]:
        return {"l": "left", "r": "right"}.get(s["route"], END)

    app = _router_graph(path)
    assert app.invoke({"route": "l", "log": []})["log"] == ["start", "left"]
    assert app.invoke({"route": "r", "log": []})["log"] == ["start", "right"]
    assert app.invoke({"route": "x", "log": []})["log"] == ["start"]


def test_conditional_edges_with_a_dict_path_map() -> None:
    app = _router_graph(lambda s: s["route"], {"go_left": "left", "go_right": "right", "stop": END})
    assert app.invoke({"route": "go_left", "log": []})["log"] == ["start", "left"]
    assert app.invoke({"route": "go_right", "log": []})["log"] == ["start", "right"]
    assert app.invoke({"route": "stop", "log": []})["log"] == ["start"]


def test_conditional_edges_with_a_list_path_map() -> None:
    app = _router_graph(lambda s: s["route"], ["left", "right"])
    assert app.invoke({"route": "right", "log": []})["log"] == ["start", "right"]


def test_conditional_edges_returning_several_nodes_fans_out() -> None:
    app = _router_graph(lambda s: ["left", "right"])
    assert app.invoke({"route": "", "log": []})["log"] == ["start", "left", "right"]


def test_routing_to_a_key_missing_from_the_path_map_raises() -> None:
    app = _router_graph(lambda s: s["route"], {"a": "left"})
    with pytest.raises(ValueError, match="zzz"):
        app.invoke({"route": "zzz", "log": []})


def test_conditional_entry_point() -> None:
    g = StateGraph(RouteS)
    g.add_node("left", _logger("left")).add_node("right", _logger("right"))
    g.set_conditional_entry_point(lambda s: s["route"], ["left", "right"])
    g.add_edge("left", END).add_edge("right", END)
    assert g.compile().invoke({"route": "right", "log": []})["log"] == ["right"]


def test_add_sequence() -> None:
    def first(s: LogS) -> dict[str, Any]:
        return {"log": ["first"]}

    def second(s: LogS) -> dict[str, Any]:
        return {"log": ["second"]}

    g = StateGraph(LogS)
    g.add_sequence([first, second, ("third", _logger("third"))])
    g.add_edge(START, "first").add_edge("third", END)
    assert g.compile().invoke({"log": []})["log"] == ["first", "second", "third"]


# -------------------------------------------------------------- compile checks


def _two_nodes() -> StateGraph:
    g = StateGraph(XS)
    g.add_node("a", lambda s: {}).add_node("b", lambda s: {})
    return g


def test_compile_rejects_an_edge_to_an_unknown_node() -> None:
    g = _two_nodes().add_edge(START, "a").add_edge("a", "nowhere")
    with pytest.raises(ValueError, match="nowhere"):
        g.compile()


def test_compile_rejects_an_edge_from_an_unknown_node() -> None:
    g = _two_nodes().add_edge(START, "a").add_edge("ghost", "b")
    with pytest.raises(ValueError, match="ghost"):
        g.compile()


def test_compile_rejects_a_join_with_an_unknown_source() -> None:
    g = _two_nodes().add_edge(START, "a").add_edge(["a", "phantom"], "b")
    with pytest.raises(ValueError, match="phantom"):
        g.compile()


def test_compile_rejects_a_path_map_to_an_unknown_node() -> None:
    g = _two_nodes().add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "x", {"x": "missing_node"})
    with pytest.raises(ValueError, match="missing_node"):
        g.compile()


def test_compile_rejects_a_graph_without_an_entry_point() -> None:
    g = _two_nodes().add_edge("a", "b")
    with pytest.raises(ValueError, match=r"(?i)entry"):
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


# ------------------------------------------------------------------- super-steps


def _parallel(a: Any, b: Any, schema: Any = LogS) -> Any:
    g = StateGraph(schema)
    g.add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    return g.compile()


def test_async_nodes_of_one_step_run_concurrently() -> None:
    async def a(s: LogS) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"log": ["a"]}

    async def b(s: LogS) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"log": ["b"]}

    app = _parallel(a, b)
    t0 = time.perf_counter()
    assert app.invoke({"log": []})["log"] == ["a", "b"]
    assert time.perf_counter() - t0 < 0.35

    async def run() -> Any:
        t0 = time.perf_counter()
        out = await app.ainvoke({"log": []})
        return out, time.perf_counter() - t0

    out, elapsed = asyncio.run(run())
    assert out["log"] == ["a", "b"]
    assert elapsed < 0.35


def test_sync_nodes_of_one_step_run_concurrently() -> None:
    threads: set[int] = set()

    def a(s: LogS) -> dict[str, Any]:
        threads.add(threading.get_ident())
        time.sleep(0.2)
        return {"log": ["a"]}

    def b(s: LogS) -> dict[str, Any]:
        threads.add(threading.get_ident())
        time.sleep(0.2)
        return {"log": ["b"]}

    app = _parallel(a, b)
    t0 = time.perf_counter()
    assert app.invoke({"log": []})["log"] == ["a", "b"]
    assert time.perf_counter() - t0 < 0.35
    assert len(threads) == 2

    async def run() -> float:
        t0 = time.perf_counter()
        await app.ainvoke({"log": []})
        return time.perf_counter() - t0

    assert asyncio.run(run()) < 0.35


def test_sync_node_does_not_block_the_callers_event_loop() -> None:
    ticks = []

    def slow(s: XS) -> dict[str, int]:
        time.sleep(0.2)
        return {"x": 1}

    app = _chain(slow).compile()

    async def ticker() -> None:
        for _ in range(5):
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.02)

    async def run() -> None:
        await asyncio.gather(app.ainvoke({"x": 0}), ticker())

    asyncio.run(run())
    assert len(ticks) == 5
    assert ticks[-1] - ticks[0] < 0.18


def test_writes_of_a_step_are_invisible_to_siblings() -> None:
    seen: dict[str, Any] = {}

    class S(TypedDict, total=False):
        x: int
        y: int

    def a(s: S) -> dict[str, int]:
        time.sleep(0.05)
        seen["a"] = s.get("y")
        return {"x": 100}

    def b(s: S) -> dict[str, int]:
        time.sleep(0.1)  # a has returned by now
        seen["b"] = s.get("x")
        return {"y": 200}

    g = StateGraph(S)
    g.add_node("a", a).add_node("b", b)
    g.add_node("c", lambda s: seen.__setitem__("c", (s["x"], s["y"])) or {})
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], "c").add_edge("c", END)
    out = g.compile().invoke({"x": 1, "y": 2})
    assert seen == {"a": 2, "b": 1, "c": (100, 200)}
    assert out == {"x": 100, "y": 200}


def test_writes_of_one_step_go_through_the_reducer_in_task_order() -> None:
    def a(s: LogS) -> dict[str, Any]:
        time.sleep(0.05)  # finishes last, still applied first
        return {"log": ["a"]}

    out = _parallel(a, _logger("b")).invoke({"log": ["in"]})
    assert out["log"] == ["in", "a", "b"]


def test_two_writes_to_a_last_value_channel_in_one_step_raise() -> None:
    app = _parallel(lambda s: {"x": 1}, lambda s: {"x": 2})
    with pytest.raises(InvalidUpdateError, match="x"):
        app.invoke({"x": 0})
    with pytest.raises(ValueError):  # InvalidUpdateError is a ValueError
        app.invoke({"x": 0})


def test_writing_an_unknown_key_raises_invalid_update() -> None:
    app = _chain(lambda s: {"nope": 1}).compile()
    with pytest.raises(InvalidUpdateError, match="nope"):
        app.invoke({"x": 0})


def test_a_node_returning_a_non_dict_raises_invalid_update() -> None:
    app = _chain(lambda s: 42).compile()
    with pytest.raises(InvalidUpdateError):
        app.invoke({"x": 0})


class MapS(TypedDict, total=False):
    items: list[int]
    results: Annotated[list[int], operator.add]
    total: int


def test_send_fan_out_map_reduce() -> None:
    collect_calls = []
    args_seen = []

    def work(arg: dict[str, int]) -> dict[str, Any]:
        args_seen.append(arg)
        time.sleep(0.01 * (5 - arg["item"]))  # later items finish first
        return {"results": [arg["item"] * 2]}

    def collect(s: MapS) -> dict[str, Any]:
        collect_calls.append(list(s["results"]))
        return {"total": sum(s["results"])}

    g = StateGraph(MapS)
    g.add_node("work", work).add_node("collect", collect)
    g.add_conditional_edges(
        START, lambda s: [Send("work", {"item": i}) for i in s["items"]], ["work"]
    )
    g.add_edge("work", "collect").add_edge("collect", END)
    out = g.compile().invoke({"items": [1, 2, 3, 4]})
    assert out["results"] == [2, 4, 6, 8]  # in Send order, whatever the finish order
    assert out["total"] == 20
    assert collect_calls == [[2, 4, 6, 8]]
    assert sorted(a["item"] for a in args_seen) == [1, 2, 3, 4]


async def test_send_fan_out_under_ainvoke_runs_concurrently() -> None:
    async def work(arg: dict[str, int]) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"results": [arg["item"]]}

    g = StateGraph(MapS)
    g.add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in s["items"]])
    g.add_edge("work", END)
    t0 = time.perf_counter()
    out = await g.compile().ainvoke({"items": list(range(5))})
    assert time.perf_counter() - t0 < 0.35
    assert out["results"] == [0, 1, 2, 3, 4]


def test_command_goto_and_update_from_a_node() -> None:
    def decide(s: LogS) -> Command:
        return Command(update={"x": 5, "log": ["decide"]}, goto="b" if s["x"] > 0 else "c")

    g = StateGraph(LogS)
    g.add_node("decide", decide)
    g.add_node("b", lambda s: {"log": [f"b{s['x']}"]})
    g.add_node("c", _logger("c"))
    g.add_edge(START, "decide").add_edge("b", END).add_edge("c", END)
    app = g.compile()
    assert app.invoke({"x": 1, "log": []}) == {"x": 5, "log": ["decide", "b5"]}
    assert app.invoke({"x": -1, "log": []})["log"] == ["decide", "c"]


def test_command_goto_end_and_goto_sends() -> None:
    def fan(s: MapS) -> Command:
        if not s["items"]:
            return Command(goto=END)
        return Command(goto=[Send("work", {"item": i}) for i in s["items"]])

    g = StateGraph(MapS)
    g.add_node("fan", fan)
    g.add_node("work", lambda a: {"results": [a["item"] + 100]})
    g.add_edge(START, "fan").add_edge("work", END)
    app = g.compile()
    assert app.invoke({"items": [1, 2]})["results"] == [101, 102]
    assert app.invoke({"items": []}).get("results", []) == []


class ToolS(MessagesState, total=False):
    user_name: str


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"call{i}"} for i, (n, a) in enumerate(calls)],
    )


def _tool_graph(tools: list[Any], ai: AIMessage, schema: Any = ToolS, **compile_kw: Any) -> Any:
    g = StateGraph(schema)
    g.add_node("agent", lambda s: {"messages": [ai]})
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "agent").add_edge("agent", "tools").add_edge("tools", END)
    return g.compile(**compile_kw)


def test_command_goto_an_unknown_node_raises_naming_it() -> None:
    app = _chain(lambda s: Command(goto="nowhere")).compile()
    with pytest.raises(ValueError, match="nowhere"):
        app.invoke({"x": 0})


def test_command_update_as_a_list_of_pairs() -> None:
    app = _chain(lambda s: Command(update=[("x", 41)]), lambda s: {"x": s["x"] + 1}).compile()
    assert app.invoke({"x": 0}) == {"x": 42}


def test_many_sync_send_tasks_run_concurrently() -> None:
    def work(arg: dict[str, int]) -> dict[str, Any]:
        time.sleep(0.2)
        return {"results": [arg["item"]]}

    g = StateGraph(MapS)
    g.add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in s["items"]])
    g.add_edge("work", END)
    t0 = time.perf_counter()
    out = g.compile().invoke({"items": list(range(16))})
    assert out["results"] == list(range(16))
    assert time.perf_counter() - t0 < 0.6


def test_command_update_from_a_tool() -> None:
    @tool
    def set_name(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Remembers the user's name."""
        return Command(
            update={
                "user_name": name,
                "messages": [ToolMessage(content=f"saved {name}", tool_call_id=tool_call_id)],
            }
        )

    out = _tool_graph([set_name], _calls(("set_name", {"name": "Ann"}))).invoke(
        {"messages": [("user", "I'm Ann")]}
    )
    assert out["user_name"] == "Ann"
    last = out["messages"][-1]
    assert isinstance(last, ToolMessage)
    assert last.content == "saved Ann"
    assert last.tool_call_id == "call0"
    assert len(out["messages"]) == 3


def test_toolnode_with_tools_condition_loop_in_a_graph() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    turns = iter(
        [_calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})), AIMessage(content="done")]
    )
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [next(turns)]})
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent").add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    out = g.compile().invoke({"messages": [("user", "sum")]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "tool", "ai"]
    assert [m.content for m in out["messages"][2:4]] == ["3", "7"]


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


def test_default_recursion_limit_is_100() -> None:
    with pytest.raises(GraphRecursionError):
        _loop(150).invoke({"x": 0})
    assert _loop(60).invoke({"x": 0}) == {"x": 60}


async def test_recursion_limit_under_ainvoke() -> None:
    with pytest.raises(GraphRecursionError):
        await _loop(1000).ainvoke({"x": 0}, {"recursion_limit": 4})


class NodeFailed(Exception):
    pass


def test_an_exception_in_a_node_propagates_with_its_type() -> None:
    def boom(s: XS) -> dict[str, int]:
        raise NodeFailed("kaput")

    app = _chain(lambda s: {"x": 1}, boom).compile()
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
        _chain(boom).compile().invoke({"x": 0})

    def bad_route(s: XS) -> str:
        raise NodeFailed("route")

    g = StateGraph(XS)
    g.add_node("a", lambda s: {}).add_edge(START, "a").add_conditional_edges("a", bad_route)
    with pytest.raises(NodeFailed, match="route"):
        g.compile().invoke({"x": 0})


# ----------------------------------------------------------------------- runs


def _abc() -> Any:
    return _chain(lambda s: {"x": s["x"] + 1}, lambda s: {"x": s["x"] * 10}).compile()


def test_invoke_and_ainvoke() -> None:
    app = _abc()
    assert app.invoke({"x": 1}) == {"x": 20}
    assert asyncio.run(app.ainvoke({"x": 1})) == {"x": 20}


def test_batch_and_abatch() -> None:
    app = _abc()
    assert app.batch([{"x": 1}, {"x": 2}, {"x": 3}]) == [{"x": 20}, {"x": 30}, {"x": 40}]
    assert asyncio.run(app.abatch([{"x": 1}, {"x": 2}])) == [{"x": 20}, {"x": 30}]


async def test_abatch_runs_inputs_concurrently() -> None:
    async def slow(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.2)
        return {"x": s["x"] + 1}

    app = _chain(slow).compile()
    t0 = time.perf_counter()
    out = await app.abatch([{"x": i} for i in range(4)])
    assert out == [{"x": i + 1} for i in range(4)]
    assert time.perf_counter() - t0 < 0.35


def test_stream_values() -> None:
    assert list(_abc().stream({"x": 1})) == [{"x": 1}, {"x": 2}, {"x": 20}]
    assert list(_abc().stream({"x": 1}, stream_mode="values")) == [{"x": 1}, {"x": 2}, {"x": 20}]


def test_stream_updates() -> None:
    chunks = list(_abc().stream({"x": 1}, stream_mode="updates"))
    assert chunks == [{"n0": {"x": 2}}, {"n1": {"x": 20}}]


def test_stream_updates_of_parallel_nodes() -> None:
    chunks = list(_parallel(_logger("a"), _logger("b")).stream({"log": []}, stream_mode="updates"))
    assert {k for c in chunks for k in c} == {"a", "b"}
    assert {"a": {"log": ["a"]}} in chunks and {"b": {"log": ["b"]}} in chunks


def _custom_graph() -> Any:
    def node(s: XS) -> dict[str, int]:
        write = get_stream_writer()
        write({"progress": 0.5})
        write("half")
        return {"x": s["x"] + 1}

    def with_writer(s: XS, writer: Any) -> dict[str, int]:
        writer({"from": "writer-arg"})
        return {}

    return _chain(node, with_writer).compile()


def test_stream_custom_from_get_stream_writer() -> None:
    chunks = list(_custom_graph().stream({"x": 0}, stream_mode="custom"))
    assert chunks == [{"progress": 0.5}, "half", {"from": "writer-arg"}]


def test_get_stream_writer_outside_a_run_is_a_no_op_and_invoke_ignores_writes() -> None:
    get_stream_writer()("nothing")
    assert _custom_graph().invoke({"x": 0}) == {"x": 1}


async def _async_writer_node(s: XS) -> dict[str, int]:
    await asyncio.sleep(0)
    get_stream_writer()({"async": True})
    return {"x": s["x"] + 1}


def test_stream_custom_from_an_async_node() -> None:
    app = _chain(_async_writer_node).compile()
    assert list(app.stream({"x": 0}, stream_mode="custom")) == [{"async": True}]


async def test_astream_custom_from_an_async_node() -> None:
    app = _chain(_async_writer_node).compile()
    assert [c async for c in app.astream({"x": 0}, stream_mode="custom")] == [{"async": True}]


def test_stream_custom_from_tool_context_progress_in_a_toolnode() -> None:
    @tool
    def long_job(n: int, ctx: ToolContext) -> str:
        """Works in steps."""
        for i in range(n):
            ctx.progress({"tool": ctx.tool_name, "step": i})
        return "finished"

    app = _tool_graph([long_job], _calls(("long_job", {"n": 3})))
    chunks = list(app.stream({"messages": [("user", "go")]}, stream_mode="custom"))
    assert chunks == [{"tool": "long_job", "step": i} for i in range(3)]


def test_stream_several_modes_yields_pairs() -> None:
    items = list(_custom_graph().stream({"x": 0}, stream_mode=["updates", "custom"]))
    assert all(isinstance(i, tuple) and len(i) == 2 for i in items)
    modes = [m for m, _ in items]
    assert set(modes) == {"updates", "custom"}
    assert ("custom", {"progress": 0.5}) in items
    assert ("updates", {"n0": {"x": 1}}) in items
    # the custom chunk of n0 comes before n0's update
    assert items.index(("custom", {"progress": 0.5})) < items.index(("updates", {"n0": {"x": 1}}))
    values = list(_abc().stream({"x": 1}, stream_mode=["values"]))
    assert values == [("values", {"x": 1}), ("values", {"x": 2}), ("values", {"x": 20})]


def test_stream_debug() -> None:
    # LangGraph's shape: {"type": "task" | "task_result" | "checkpoint", "timestamp",
    # "step", "payload"}; task payloads carry "id" and "name", task results also
    # "result" / "error" / "interrupts", checkpoints "values" / "next" / "config".
    events = list(_abc().stream({"x": 1}, stream_mode="debug"))
    assert events, "debug mode yields events"
    for e in events:
        assert isinstance(e, dict)
        assert e["type"] in {"checkpoint", "task", "task_result"}, e
        assert isinstance(e.get("step"), int), e
        assert isinstance(e.get("timestamp"), str), e
        assert isinstance(e["payload"], dict), e
    tasks = [e["payload"] for e in events if e["type"] == "task"]
    results = [e["payload"] for e in events if e["type"] == "task_result"]
    checkpoints = [e["payload"] for e in events if e["type"] == "checkpoint"]
    assert [t["name"] for t in tasks] == ["n0", "n1"]
    assert [r["name"] for r in results] == ["n0", "n1"]
    assert all(r["error"] is None for r in results)
    assert checkpoints[-1]["values"] == {"x": 20}
    assert tuple(checkpoints[-1]["next"]) == ()


async def test_astream_modes() -> None:
    app = _custom_graph()
    values = [c async for c in app.astream({"x": 0})]
    assert values == [{"x": 0}, {"x": 1}, {"x": 1}]
    updates = [c async for c in app.astream({"x": 0}, stream_mode="updates")]
    assert updates[0] == {"n0": {"x": 1}}
    custom = [c async for c in app.astream({"x": 0}, stream_mode="custom")]
    assert custom == [{"progress": 0.5}, "half", {"from": "writer-arg"}]
    pairs = [c async for c in app.astream({"x": 0}, stream_mode=["values", "custom"])]
    assert ("values", {"x": 1}) in pairs and ("custom", "half") in pairs


async def test_astream_yields_chunks_as_they_happen() -> None:
    async def slow(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.2)
        return {"x": s["x"] + 1}

    app = _chain(slow, slow).compile()
    t0 = time.perf_counter()
    stamps = []
    async for _ in app.astream({"x": 0}, stream_mode="updates"):
        stamps.append(time.perf_counter() - t0)
    assert len(stamps) == 2
    assert stamps[0] < 0.35 <= stamps[1] + 0.1  # the first update arrived before the end


def test_abandoning_a_stream_early_leaves_the_graph_usable() -> None:
    app = _chain(*[lambda s: {"x": s["x"] + 1}] * 5).compile()
    for chunk in app.stream({"x": 0}, stream_mode="updates"):
        assert chunk == {"n0": {"x": 1}}
        break
    assert app.invoke({"x": 0}) == {"x": 5}


async def test_abandoning_an_astream_early_leaves_the_graph_usable() -> None:
    async def slow(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.05)
        return {"x": s["x"] + 1}

    app = _chain(slow, slow, slow).compile()
    async for chunk in app.astream({"x": 0}, stream_mode="updates"):
        assert chunk == {"n0": {"x": 1}}
        break
    assert await app.ainvoke({"x": 0}) == {"x": 3}


def test_stream_unknown_mode_raises() -> None:
    with pytest.raises(ValueError, match="nonsense"):
        list(_abc().stream({"x": 1}, stream_mode="nonsense"))


def test_draw_mermaid() -> None:
    g = StateGraph(RouteS)
    g.add_node("plan", _logger("plan")).add_node("act", _logger("act")).add_node(
        "check", _logger("c")
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


# ----------------------------------------------------------------- interrupts


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
    cfg = _thread()
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

    app = _chain(form, schema=AskS).compile(checkpointer=MemorySaver())
    cfg = _thread()
    assert [i.value for i in app.invoke({"question": "q"}, cfg)["__interrupt__"]] == ["name?"]
    out = app.invoke(Command(resume="Ann"), cfg)
    assert [i.value for i in out["__interrupt__"]] == ["age?"]
    out = app.invoke(Command(resume="33"), cfg)
    assert out["answers"] == ["Ann", "33"]
    assert "__interrupt__" not in out
    assert len(calls) == 3


async def test_interrupt_and_resume_under_ainvoke_with_an_async_node() -> None:
    async def ask(s: AskS) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"answer": interrupt("ok?")}

    app = _chain(ask, schema=AskS).compile(checkpointer=MemorySaver())
    cfg = _thread("async")
    out = await app.ainvoke({"question": "q"}, cfg)
    assert out["__interrupt__"][0].value == "ok?"
    out = await app.ainvoke(Command(resume="fine"), cfg)
    assert out["answer"] == "fine"


def test_interrupt_in_an_async_node_under_invoke() -> None:
    async def ask(s: AskS) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"answer": interrupt("ok?")}

    app = _chain(ask, schema=AskS).compile(checkpointer=MemorySaver())
    out = app.invoke({"question": "q"}, _thread())
    assert out["__interrupt__"][0].value == "ok?"
    assert app.invoke(Command(resume="fine"), _thread())["answer"] == "fine"


def test_interrupt_is_streamed_as_an_update() -> None:
    app = _chain(lambda s: {"answer": interrupt("stop here")}, schema=AskS).compile(
        checkpointer=MemorySaver()
    )
    chunks = list(app.stream({"question": "q"}, _thread(), stream_mode="updates"))
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

    app = _tool_graph([transfer], _calls(("transfer", {"amount": 50})), checkpointer=MemorySaver())
    cfg = _thread()
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


def _static_graph(**kw: Any) -> Any:
    g = StateGraph(LogS)
    for n in ("a", "b", "c"):
        g.add_node(n, _logger(n))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    return g.compile(checkpointer=MemorySaver(), **kw)


def test_interrupt_before_then_invoke_none_resumes() -> None:
    app = _static_graph(interrupt_before=["b"])
    cfg = _thread()
    out = app.invoke({"log": []}, cfg)
    assert out["log"] == ["a"]
    assert app.get_state(cfg).next == ("b",)
    out = app.invoke(None, cfg)
    assert out["log"] == ["a", "b", "c"]
    assert app.get_state(cfg).next == ()


def test_interrupt_after_then_invoke_none_resumes() -> None:
    app = _static_graph(interrupt_after=["a"])
    cfg = _thread()
    assert app.invoke({"log": []}, cfg)["log"] == ["a"]
    assert app.get_state(cfg).next == ("b",)
    assert app.invoke(None, cfg)["log"] == ["a", "b", "c"]


def test_interrupt_before_and_after_together() -> None:
    app = _static_graph(interrupt_before=["c"], interrupt_after=["a"])
    cfg = _thread()
    assert app.invoke({"log": []}, cfg)["log"] == ["a"]
    assert app.invoke(None, cfg)["log"] == ["a", "b"]
    assert app.get_state(cfg).next == ("c",)
    assert app.invoke(None, cfg)["log"] == ["a", "b", "c"]


def test_resume_without_a_pending_interrupt_raises() -> None:
    app = _static_graph()
    cfg = _thread()
    app.invoke({"log": []}, cfg)
    with pytest.raises(ValueError):
        app.invoke(Command(resume="x"), cfg)
