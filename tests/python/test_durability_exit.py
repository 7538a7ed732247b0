"""``durability="exit"``: a run saves one checkpoint, when it ends, as LangGraph does.

Nothing is written while the run goes; when it finishes, pauses or fails, the state
where it ended is saved as one checkpoint (with the pending writes of a step that did
not complete), on every saver, under ``invoke``, ``ainvoke``, ``stream`` and
``astream``. ``get_state`` / ``get_state_history`` show one checkpoint per run, and a
paused run resumes. LangGraph 1.2.24 gives the same histories for these graphs.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, Command, StateGraph, add_messages, interrupt
from ironloop.messages import AIMessage, HumanMessage


class S(TypedDict, total=False):
    xs: Annotated[list, operator.add]
    n: int
    blob: dict
    messages: Annotated[list, add_messages]


def _drive(app: Any, inp: Any, cfg: dict[str, Any], path: str) -> Any:
    """Runs ``inp`` on ``app`` with ``durability="exit"`` through ``path``."""
    if path == "invoke":
        return app.invoke(inp, cfg, durability="exit")
    if path == "ainvoke":
        return asyncio.run(app.ainvoke(inp, cfg, durability="exit"))
    if path == "stream":
        for _ in app.stream(inp, cfg, durability="exit", stream_mode="values"):
            pass
        return app.get_state(cfg).values

    async def consume() -> None:
        async for _ in app.astream(inp, cfg, durability="exit", stream_mode="values"):
            pass

    asyncio.run(consume())
    return app.get_state(cfg).values


PATHS = ["invoke", "ainvoke", "stream", "astream"]


def _chain(saver: Any, seen: list[Any], last: Any) -> Any:
    """a -> b -> c -> last; every node looks at what the saver holds while it runs."""

    def step(name: str) -> Any:
        def node(s: S) -> dict[str, Any]:
            seen.append(app.get_state({"configurable": {"thread_id": "t"}}).metadata)
            return {
                "xs": [name],
                "n": s.get("n", 0) + 1,
                "blob": {"at": name, "rows": [{"i": i, "v": [i] * 5} for i in range(50)]},
                "messages": [AIMessage(content=name, id=f"m-{name}-{s.get('n', 0)}")],
            }

        return node

    g = StateGraph(S)
    for name in ("a", "b", "c"):
        g.add_node(name, step(name))
    g.add_node("last", last)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", "last")
    g.add_edge("last", END)
    app = g.compile(checkpointer=saver)
    return app


@pytest.mark.parametrize("path", PATHS)
def test_a_finished_run_saves_one_checkpoint_with_its_final_state(saver: Any, path: str) -> None:
    seen: list[Any] = []
    app = _chain(saver, seen, lambda s: {"xs": ["end"]})
    cfg = {"configurable": {"thread_id": "t"}}
    first = {"xs": [], "n": 0, "messages": [HumanMessage(content="hi", id="h0")]}
    _drive(app, first, cfg, path)
    assert seen == [None, None, None]  # nothing saved while the run ran
    state = app.get_state(cfg)
    assert state.values["xs"] == ["a", "b", "c", "end"] and state.values["n"] == 3
    assert state.values["blob"]["at"] == "c" and len(state.values["blob"]["rows"]) == 50
    assert [m.content for m in state.values["messages"]] == ["hi", "a", "b", "c"]
    assert state.next == () and state.metadata["step"] == 4
    assert state.metadata["source"] == "loop"
    # A second run on the thread: one more checkpoint, its parent the first run's.
    _drive(app, {"xs": ["z"], "messages": [HumanMessage(content="again", id="h1")]}, cfg, path)
    history = list(app.get_state_history(cfg))
    assert [h.metadata["step"] for h in history] == [10, 4]
    assert (
        history[0].parent_config["configurable"]["checkpoint_id"]
        == (history[1].config["configurable"]["checkpoint_id"])
    )
    assert history[0].values["xs"] == ["a", "b", "c", "end", "z", "a", "b", "c", "end"]
    assert history[1].values["xs"] == ["a", "b", "c", "end"]
    assert [m.content for m in history[0].values["messages"]] == [
        "hi",
        "a",
        "b",
        "c",
        "again",
        "a",
        "b",
        "c",
    ]
    assert [m.content for m in history[1].values["messages"]] == ["hi", "a", "b", "c"]
    # The same state from a saver that never saw the run (no cached state).
    fresh = _chain(saver, [], lambda s: {"xs": ["end"]})
    assert fresh.get_state(cfg).values == app.get_state(cfg).values


@pytest.mark.parametrize("path", PATHS)
def test_a_paused_run_saves_where_it_paused_and_resumes(saver: Any, path: str) -> None:
    def ask(s: S) -> dict[str, Any]:
        return {"xs": [interrupt("ok?")]}

    app = _chain(saver, [], ask)
    cfg = {"configurable": {"thread_id": "t"}}
    _drive(app, {"xs": [], "n": 0}, cfg, path)
    state = app.get_state(cfg)
    assert state.next == ("last",) and state.values["xs"] == ["a", "b", "c"]
    assert [i.value for t in state.tasks for i in t.interrupts] == ["ok?"]
    assert [h.metadata["step"] for h in app.get_state_history(cfg)] == [3]
    _drive(app, Command(resume="yes"), cfg, path)
    state = app.get_state(cfg)
    assert state.values["xs"] == ["a", "b", "c", "yes"] and state.next == ()
    assert [h.metadata["step"] for h in app.get_state_history(cfg)] == [4, 3]


@pytest.mark.parametrize("path", PATHS)
def test_a_failed_run_keeps_its_finished_siblings(saver: Any, path: str) -> None:
    """A step of two tasks where one fails: the run's checkpoint is the one before
    that step, and the sibling that finished is not run again on resume."""
    runs: list[str] = []
    fail = [True]

    def ok(s: S) -> dict[str, Any]:
        runs.append("ok")
        return {"xs": ["ok"]}

    def bad(s: S) -> dict[str, Any]:
        runs.append("bad")
        if fail[0]:
            raise RuntimeError("bad failed")
        return {"xs": ["bad"]}

    g = StateGraph(S)
    g.add_node("first", lambda s: {"xs": ["first"]})
    g.add_node("ok", ok)
    g.add_node("bad", bad)
    g.add_edge(START, "first").add_edge("first", "ok").add_edge("first", "bad")
    app = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="bad failed"):
        _drive(app, {"xs": []}, cfg, path)
    state = app.get_state(cfg)
    # (LangGraph's get_state also leaves out "ok", whose writes are pending, and shows
    # them in the values; ironloop's shows the checkpoint as saved, under every
    # durability.)
    assert "bad" in state.next and state.values["xs"][0] == "first"
    assert [h.metadata["step"] for h in app.get_state_history(cfg)] == [1]
    fail[0] = False
    runs.clear()
    _drive(app, None, cfg, path)
    assert runs == ["bad"]
    assert sorted(app.get_state(cfg).values["xs"]) == ["bad", "first", "ok"]


def test_a_router_failing_after_the_writes_saves_the_state_before_them(saver: Any) -> None:
    def route(s: S) -> str:
        if s["n"] == 2:
            raise RuntimeError("route failed")
        return "inc"

    g = StateGraph(S)
    g.add_node("inc", lambda s: {"n": s["n"] + 1, "xs": [s["n"]]})
    g.add_edge(START, "inc").add_conditional_edges("inc", route, ["inc", END])
    app = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="route failed"):
        app.invoke({"n": 0, "xs": []}, cfg, durability="exit")
    state = app.get_state(cfg)
    # The step that wrote n=2 never checkpointed: the saved state is the one before.
    assert state.values["n"] == 1 and state.values["xs"] == [0] and state.next == ("inc",)


def test_exit_and_sync_runs_mix_on_one_thread(saver: Any) -> None:
    """Records of "exit" runs (a snapshot and the run's messages) and of "sync" runs
    (deltas) follow each other on a chain: every checkpoint loads its own state."""
    app = _chain(saver, [], lambda s: {"xs": ["end"]})
    cfg = {"configurable": {"thread_id": "t"}}
    expected: list[list[str]] = []
    for i, d in enumerate(["exit", "sync", "exit", "exit", "sync"]):
        app.invoke(
            {"xs": [str(i)], "messages": [HumanMessage(content=str(i), id=f"u{i}")]},
            cfg,
            durability=d,
        )
        expected.append(list(app.get_state(cfg).values["xs"]))
    history = list(app.get_state_history(cfg))
    ends = [h.values["xs"] for h in history if h.next == ()]
    assert ends == expected[::-1]
    last = history[0].values
    assert [m.content for m in last["messages"]][-4:] == ["4", "a", "b", "c"]
    assert len(last["messages"]) == 5 * 4
