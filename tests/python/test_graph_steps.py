"""StateGraph super-steps: concurrency and writes within a step, Send fan-out and Command."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest
from graph_support import XS, LogS, ai_with_calls, chain, log_node, parallel, run, tool_graph

from ironloop import (
    END,
    START,
    Command,
    InjectedToolCallId,
    MessagesState,
    Send,
    StateGraph,
    ToolNode,
    tool,
    tools_condition,
)
from ironloop.messages import AIMessage, ToolMessage

# ----------------------------------------------------------------- super-steps


NAP = 0.5  # each node's sleep: run one after the other, a step takes 2 * NAP


def _napper(name: str, kind: str, threads: set[int]) -> Any:
    """A node that sleeps NAP seconds, blocking (recording its thread) or awaiting, then
    logs its name."""
    if kind == "async":

        async def anap(s: LogS) -> dict[str, Any]:
            await asyncio.sleep(NAP)
            return {"log": [name]}

        return anap

    def nap(s: LogS) -> dict[str, Any]:
        threads.add(threading.get_ident())
        time.sleep(NAP)
        return {"log": [name]}

    return nap


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_nodes_of_one_step_run_concurrently(kind) -> None:
    threads: set[int] = set()
    app = parallel(_napper("a", kind, threads), _napper("b", kind, threads))
    t0 = time.perf_counter()
    assert app.invoke({"log": []})["log"] == ["a", "b"]
    # Well under the serial 2 * NAP, with room for a loaded machine (0.55 s was seen
    # for two 0.2 s naps at load 10).
    assert time.perf_counter() - t0 < 1.8 * NAP
    if kind == "sync":
        assert len(threads) == 2

    async def timed() -> Any:
        t0 = time.perf_counter()
        out = await app.ainvoke({"log": []})
        return out, time.perf_counter() - t0

    out, elapsed = asyncio.run(timed())
    assert out["log"] == ["a", "b"]
    assert elapsed < 1.8 * NAP


def test_a_sync_caller_runs_only_a_steps_lone_task_itself() -> None:
    # `invoke` drives the run on the calling thread: a step's only task runs right
    # there (no hand-over to the pool); the tasks of a step of several all run on the
    # pool, at the same time (each waits for the other at a barrier), so that the
    # thread that drives the run is free to save each one's writes as it finishes
    # (tests/python/test_guarantees.py kills a run to show it).
    barrier = threading.Barrier(2, timeout=10)
    ran_on: dict[str, int] = {}

    def meet(name: str) -> Any:
        def node(s: LogS) -> dict[str, Any]:
            ran_on[name] = threading.get_ident()
            barrier.wait()
            return {"log": [name]}

        return node

    app = parallel(meet("a"), meet("b"))
    assert app.invoke({"log": []})["log"] == ["a", "b"]
    caller = threading.get_ident()
    assert caller not in ran_on.values(), ran_on

    def alone(s: LogS) -> dict[str, Any]:
        ran_on["alone"] = threading.get_ident()
        return {"log": ["alone"]}

    assert chain(alone, schema=LogS).compile().invoke({"log": []})["log"] == ["alone"]
    assert ran_on["alone"] == caller


@pytest.mark.parametrize("entry", ["ainvoke", "astream"])
def test_sync_node_does_not_block_the_callers_event_loop(entry: str) -> None:
    # The async run is polled on the caller's loop: its sync nodes must still run off
    # that loop's thread, or every other coroutine of the loop would wait for them.
    ticks = []
    threads: list[int] = []

    def slow(s: XS) -> dict[str, int]:
        threads.append(threading.get_ident())
        time.sleep(0.2)
        return {"x": 1}

    app = chain(slow, slow).compile()

    async def ticker() -> None:
        for _ in range(15):
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.02)

    async def streamed() -> Any:
        return [c async for c in app.astream({"x": 0})]

    async def run() -> Any:
        call = app.ainvoke({"x": 0}) if entry == "ainvoke" else streamed()
        out, _ = await asyncio.gather(call, ticker())
        return out

    out = asyncio.run(run())
    assert out == ({"x": 1} if entry == "ainvoke" else [{"n0": {"x": 1}}, {"n1": {"x": 1}}])
    assert threading.get_ident() not in threads
    assert len(ticks) == 15
    # 15 ticks 20 ms apart while two nodes sleep 0.2 s each: a blocked loop would
    # take at least 0.4 s.
    assert ticks[-1] - ticks[0] < 0.39


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

    out = parallel(a, log_node("b")).invoke({"log": ["in"]})
    assert out["log"] == ["in", "a", "b"]


# ------------------------------------------------------------------------ Send


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


async def _slow_async_work(arg: dict[str, int]) -> dict[str, Any]:
    await asyncio.sleep(0.2)
    return {"results": [arg["item"]]}


def _slow_sync_work(arg: dict[str, int]) -> dict[str, Any]:
    time.sleep(0.2)
    return {"results": [arg["item"]]}


@pytest.mark.parametrize(
    ("work", "how", "n", "limit"),
    [(_slow_async_work, "ainvoke", 5, 0.35), (_slow_sync_work, "invoke", 16, 0.6)],
    ids=["async-ainvoke", "sync-invoke"],
)
def test_send_tasks_run_concurrently(work, how, n, limit) -> None:
    g = StateGraph(MapS)
    g.add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in s["items"]])
    g.add_edge("work", END)
    app = g.compile()
    t0 = time.perf_counter()
    out = run(app, how, {"items": list(range(n))})
    assert time.perf_counter() - t0 < limit
    assert out["results"] == list(range(n))


# --------------------------------------------------------------------- Command


def test_command_goto_and_update_from_a_node() -> None:
    def decide(s: LogS) -> Command:
        return Command(update={"x": 5, "log": ["decide"]}, goto="b" if s["x"] > 0 else "c")

    g = StateGraph(LogS)
    g.add_node("decide", decide)
    g.add_node("b", lambda s: {"log": [f"b{s['x']}"]})
    g.add_node("c", log_node("c"))
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


def test_command_goto_an_unknown_node_raises_naming_it() -> None:
    app = chain(lambda s: Command(goto="nowhere")).compile()
    with pytest.raises(ValueError, match="nowhere"):
        app.invoke({"x": 0})


def test_command_update_as_a_list_of_pairs() -> None:
    app = chain(lambda s: Command(update=[("x", 41)]), lambda s: {"x": s["x"] + 1}).compile()
    assert app.invoke({"x": 0}) == {"x": 42}


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

    out = tool_graph([set_name], ai_with_calls(("set_name", {"name": "Ann"}))).invoke(
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
        [
            ai_with_calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})),
            AIMessage(content="done"),
        ]
    )
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [next(turns)]})
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent").add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    out = g.compile().invoke({"messages": [("user", "sum")]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "tool", "ai"]
    assert [m.content for m in out["messages"][2:4]] == ["3", "7"]
