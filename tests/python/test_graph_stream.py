"""StateGraph run methods (invoke, batch and their async twins) and stream modes."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest
from graph_support import XS, LogS, ai_with_calls, chain, log_node, parallel, tool_graph
from langchain_core.messages import AIMessage

from ironloop import MemorySaver, ToolContext, get_stream_writer, tool
from ironloop.graph import END, START, StateGraph, add_messages

# ------------------------------------------------------------------------ runs


def _abc() -> Any:
    return chain(lambda s: {"x": s["x"] + 1}, lambda s: {"x": s["x"] * 10}).compile()


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

    app = chain(slow).compile()
    t0 = time.perf_counter()
    out = await app.abatch([{"x": i} for i in range(4)])
    assert out == [{"x": i + 1} for i in range(4)]
    assert time.perf_counter() - t0 < 0.35


# ---------------------------------------------------------------- stream modes


def test_stream_values() -> None:
    assert list(_abc().stream({"x": 1}, stream_mode="values")) == [{"x": 1}, {"x": 2}, {"x": 20}]


def test_stream_defaults_to_updates_as_langgraph() -> None:
    assert list(_abc().stream({"x": 1})) == list(_abc().stream({"x": 1}, stream_mode="updates"))
    assert next(iter(_abc().stream({"x": 1}))) == {"n0": {"x": 2}}


def test_stream_updates() -> None:
    chunks = list(_abc().stream({"x": 1}, stream_mode="updates"))
    assert chunks == [{"n0": {"x": 2}}, {"n1": {"x": 20}}]


def test_stream_updates_of_parallel_nodes() -> None:
    chunks = list(parallel(log_node("a"), log_node("b")).stream({"log": []}, stream_mode="updates"))
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

    return chain(node, with_writer).compile()


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


@pytest.mark.parametrize("how", ["stream", "astream"])
def test_stream_custom_from_an_async_node(how) -> None:
    app = chain(_async_writer_node).compile()

    async def collect() -> list[Any]:
        return [c async for c in app.astream({"x": 0}, stream_mode="custom")]

    chunks = (
        list(app.stream({"x": 0}, stream_mode="custom"))
        if how == "stream"
        else asyncio.run(collect())
    )
    assert chunks == [{"async": True}]


def test_stream_custom_from_tool_context_progress_in_a_toolnode() -> None:
    @tool
    def long_job(n: int, ctx: ToolContext) -> str:
        """Works in steps."""
        for i in range(n):
            ctx.progress({"tool": ctx.tool_name, "step": i})
        return "finished"

    app = tool_graph([long_job], ai_with_calls(("long_job", {"n": 3})))
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
    app = chain(lambda s: {"x": s["x"] + 1}, lambda s: {"x": s["x"] * 10})
    config = {"configurable": {"thread_id": "debug"}}
    events = list(
        app.compile(checkpointer=MemorySaver()).stream({"x": 1}, config, stream_mode="debug")
    )
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
    values = [c async for c in app.astream({"x": 0}, stream_mode="values")]
    # The second node wrote nothing: no values chunk for its step (as LangGraph).
    assert values == [{"x": 0}, {"x": 1}]
    updates = [c async for c in app.astream({"x": 0})]
    assert updates[0] == {"n0": {"x": 1}}
    custom = [c async for c in app.astream({"x": 0}, stream_mode="custom")]
    assert custom == [{"progress": 0.5}, "half", {"from": "writer-arg"}]
    pairs = [c async for c in app.astream({"x": 0}, stream_mode=["values", "custom"])]
    assert ("values", {"x": 1}) in pairs and ("custom", "half") in pairs


async def test_astream_yields_chunks_as_they_happen() -> None:
    async def slow(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.2)
        return {"x": s["x"] + 1}

    app = chain(slow, slow).compile()
    t0 = time.perf_counter()
    stamps = []
    async for _ in app.astream({"x": 0}, stream_mode="updates"):
        stamps.append(time.perf_counter() - t0)
    assert len(stamps) == 2
    assert stamps[0] < 0.35 <= stamps[1] + 0.1  # the first update arrived before the end


def test_abandoning_a_stream_early_leaves_the_graph_usable() -> None:
    app = chain(*[lambda s: {"x": s["x"] + 1}] * 5).compile()
    for chunk in app.stream({"x": 0}, stream_mode="updates"):
        assert chunk == {"n0": {"x": 1}}
        break
    assert app.invoke({"x": 0}) == {"x": 5}


def test_a_sync_stream_runs_its_nodes_on_the_thread_that_pulls_it() -> None:
    # As invoke (and LangGraph's generator): no hand-over to other threads per node.
    ran_on: list[int] = []

    def node(s: XS) -> dict[str, int]:
        ran_on.append(threading.get_ident())
        return {"x": s["x"] + 1}

    app = chain(node, node, node).compile(checkpointer=MemorySaver())
    chunks = list(app.stream({"x": 0}, {"configurable": {"thread_id": "t"}}))
    assert chunks == [{"n0": {"x": 1}}, {"n1": {"x": 2}}, {"n2": {"x": 3}}]
    assert ran_on == [threading.get_ident()] * 3


def test_a_sync_stream_yields_each_steps_update_before_the_next_step_runs() -> None:
    # The caller has `n0`'s update while `n1` runs (`n1` waits for it).
    seen = threading.Event()

    def first(s: XS) -> dict[str, int]:
        return {"x": s["x"] + 1}

    def second(s: XS) -> dict[str, int]:
        return {"x": s["x"] * 10 if seen.wait(10) else -1}

    chunks = []
    for chunk in chain(first, second).compile().stream({"x": 1}):
        chunks.append(chunk)
        if "n0" in chunk:
            seen.set()
    assert chunks == [{"n0": {"x": 2}}, {"n1": {"x": 20}}]


@pytest.mark.parametrize(
    "modes, subgraphs",
    [("updates", False), ("updates", True), (["updates", "custom"], False),
     (["updates", "messages"], False)],
)  # fmt: skip
def test_a_sync_stream_takes_its_next_step_only_when_the_caller_asks(
    modes: Any, subgraphs: bool
) -> None:
    # As LangGraph's generator, whatever the modes: a caller that holds (or stops
    # reading, or raises while reading a step's events) holds the run before its next
    # step. With subgraphs or a mode whose events come from inside a task, the tasks
    # run on the pool, but the run is still driven by the caller.
    ran: list[str] = []

    def node(name: str) -> Any:
        def run(s: XS) -> dict[str, int]:
            ran.append(name)
            return {"x": s["x"] + 1}

        return run

    app = chain(node("a"), node("b"), node("c")).compile()
    it = iter(app.stream({"x": 0}, stream_mode=modes, subgraphs=subgraphs))
    first = next(it)
    assert "n0" in str(first)
    time.sleep(0.2)
    assert ran == ["a"], f"the run went on without its caller: {ran}"
    rest = list(it)
    assert ran == ["a", "b", "c"]
    assert len(rest) == 2


def test_a_sync_stream_yields_what_a_task_on_another_thread_writes_while_it_runs() -> None:
    # `a` and `b` run in one step: one of them on another thread. What it writes
    # reaches the caller while it still runs: it waits until the caller has it.
    taken = threading.Event()

    def waits(s: LogS) -> dict[str, list[str]]:
        get_stream_writer()("written")
        return {"log": ["released" if taken.wait(10) else "timed out"]}

    def quick(s: LogS) -> dict[str, list[str]]:
        return {"log": ["quick"]}

    out: list[Any] = []
    for a, b in [(waits, quick), (quick, waits)]:
        taken.clear()
        for mode, chunk in parallel(a, b).stream({"log": []}, stream_mode=["custom", "values"]):
            if chunk == "written":
                taken.set()
            out.append((mode, chunk))
        assert ("custom", "written") in out
        assert sorted(out[-1][1]["log"]) == ["quick", "released"], out


async def test_abandoning_an_astream_early_leaves_the_graph_usable() -> None:
    async def slow(s: XS) -> dict[str, int]:
        await asyncio.sleep(0.05)
        return {"x": s["x"] + 1}

    app = chain(slow, slow, slow).compile()
    async for chunk in app.astream({"x": 0}, stream_mode="updates"):
        assert chunk == {"n0": {"x": 1}}
        break
    assert await app.ainvoke({"x": 0}) == {"x": 3}


def test_stream_unknown_mode_raises() -> None:
    with pytest.raises(ValueError, match="nonsense"):
        list(_abc().stream({"x": 1}, stream_mode="nonsense"))


def test_what_a_run_shows_is_decided_by_that_run_not_an_earlier_one_of_the_graph() -> None:
    # A run without `updates` / `messages` builds no shown update and keeps no state
    # for the messages stream: a later run of the same compiled graph that asks for
    # them gets them, and one that does not still gets the state right.
    class S(TypedDict):
        messages: Annotated[list, add_messages]
        n: int

    def talk(s: S) -> dict[str, Any]:
        return {"messages": [AIMessage("hi", id="m1")], "n": s["n"] + 1}

    g = StateGraph(S)
    g.add_node("talk", talk)
    g.add_edge(START, "talk")
    g.add_edge("talk", END)
    app = g.compile()
    assert app.invoke({"messages": [], "n": 0})["n"] == 1
    updates = list(app.stream({"messages": [], "n": 0}, stream_mode="updates"))
    assert [u["talk"]["n"] for u in updates] == [1]
    shown = [m for m, _ in app.stream({"messages": [], "n": 0}, stream_mode="messages")]
    assert [m.content for m in shown] == ["hi"]
    assert app.invoke({"messages": [], "n": 5})["n"] == 6
