"""Checkpointing with MemorySaver, SqliteSaver and PostgresSaver (each case runs
against all three; PostgreSQL in a schema of its own on IRONLOOP_TEST_POSTGRES_URL):
threads, get_state / history, update_state, time travel, restarts, serialisation
errors, sync + async use of one saver, closing, and pending writes on resume."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime
import itertools
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pydantic
import pytest

from ironloop import (
    END,
    START,
    Command,
    MessagesState,
    SqliteSaver,
    StateGraph,
    StateSnapshot,
    interrupt,
)
from ironloop.errors import CheckpointError, CheckpointNotFoundError, CheckpointStorageError
from ironloop.messages import AIMessage, HumanMessage
from ironloop.types import PregelTask


class S(TypedDict, total=False):
    x: int
    log: Annotated[list[str], operator.add]
    thing: Any


def cfg(thread: str = "t1", checkpoint_id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"thread_id": thread}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def _cid(config: dict[str, Any]) -> str:
    return config["configurable"]["checkpoint_id"]  # type: ignore[no-any-return]


class Counter:
    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def node(self, name: str, fn: Any = None) -> Any:
        def run(s: S) -> dict[str, Any]:
            self.calls[name] = self.calls.get(name, 0) + 1
            return fn(s) if fn else {"log": [name]}

        return run


def _abc(checkpointer: Any, counter: Counter | None = None, **kw: Any) -> Any:
    counter = counter or Counter()
    g = StateGraph(S)
    g.add_node("a", counter.node("a", lambda s: {"x": s.get("x", 0) + 1, "log": ["a"]}))
    g.add_node("b", counter.node("b", lambda s: {"x": s["x"] * 10, "log": ["b"]}))
    g.add_node("c", counter.node("c"))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    return g.compile(checkpointer=checkpointer, **kw)


# ----------------------------------------------------------------------- threads


def test_threads_are_isolated_and_accumulate(saver) -> None:
    app = _abc(saver)
    assert app.invoke({"x": 1, "log": ["one"]}, cfg("A")) == {
        "x": 20,
        "log": ["one", "a", "b", "c"],
    }
    assert app.invoke({"x": 5}, cfg("B")) == {"x": 60, "log": ["a", "b", "c"]}
    # A second run on thread A starts from its saved state.
    out = app.invoke({"log": ["two"]}, cfg("A"))
    assert out == {"x": 210, "log": ["one", "a", "b", "c", "two", "a", "b", "c"]}
    assert app.get_state(cfg("B")).values == {"x": 60, "log": ["a", "b", "c"]}


def test_a_checkpointed_graph_without_thread_id_raises(saver) -> None:
    app = _abc(saver)
    for bad in (None, {}, {"configurable": {}}):
        with pytest.raises(ValueError, match="thread_id"):
            app.invoke({"x": 1}, bad)
    with pytest.raises(ValueError, match="thread_id"):
        asyncio.run(app.ainvoke({"x": 1}))


def test_get_state_of_an_unknown_thread_is_empty(saver) -> None:
    snap = _abc(saver).get_state(cfg("nobody"))
    assert snap.values == {}
    assert snap.next == ()


def test_messages_survive_checkpointing(saver) -> None:
    g = StateGraph(MessagesState)
    g.add_node(
        "reply", lambda s: {"messages": [AIMessage(content=f"echo {s['messages'][-1].content}")]}
    )
    g.add_edge(START, "reply").add_edge("reply", END)
    app = g.compile(checkpointer=saver)
    app.invoke({"messages": [HumanMessage(content="hi", id="h-1")]}, cfg())
    out = app.invoke({"messages": [("user", "again")]}, cfg())
    msgs = out["messages"]
    assert [type(m).__name__ for m in msgs] == [
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
        "AIMessage",
    ]
    assert [m.content for m in msgs] == ["hi", "echo hi", "again", "echo again"]
    assert msgs[0].id == "h-1"
    assert len({m.id for m in msgs}) == 4
    restored = app.get_state(cfg()).values["messages"]
    assert [(m.type, m.content, m.id) for m in restored] == [
        (m.type, m.content, m.id) for m in msgs
    ]


# --------------------------------------------------------------------- get_state


def test_get_state_snapshot(saver) -> None:
    app = _abc(saver)
    app.invoke({"x": 1}, cfg())
    snap = app.get_state(cfg())
    assert isinstance(snap, StateSnapshot)
    assert snap.values == {"x": 20, "log": ["a", "b", "c"]}
    assert snap.next == ()
    assert snap.config["configurable"]["thread_id"] == "t1"
    assert _cid(snap.config)
    assert isinstance(snap.metadata, dict)
    assert snap.metadata["source"] == "loop"
    assert isinstance(snap.metadata["step"], int)
    created = datetime.datetime.fromisoformat(snap.created_at)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - created).total_seconds()) < 60
    assert snap.parent_config is not None
    assert _cid(snap.parent_config) != _cid(snap.config)
    assert snap.tasks == ()
    assert snap.interrupts == ()


def test_state_calls_from_inside_a_node_and_from_other_threads(saver) -> None:
    """get_state / update_state / get_state_history work from a node of a run this
    thread drives, and from threads reading while other threads run."""
    app = _abc(saver)
    app.invoke({"x": 1}, cfg("other"))
    seen: dict[str, Any] = {}

    def peek(s: S) -> dict[str, Any]:
        seen["values"] = app.get_state(cfg("other")).values
        seen["history"] = len(list(app.get_state_history(cfg("other"))))
        app.update_state(cfg("other"), {"x": 7})
        return {"x": s["x"] + 1}

    g = StateGraph(S)
    g.add_node("peek", peek)
    g.add_edge(START, "peek")
    assert g.compile(checkpointer=saver).invoke({"x": 1}, cfg("self")) == {"x": 2, "log": []}
    assert seen == {"values": {"x": 20, "log": ["a", "b", "c"]}, "history": 5}
    assert app.get_state(cfg("other")).values["x"] == 7

    def work(i: int) -> tuple[int, int]:
        out = app.invoke({"x": i}, cfg(f"w{i}"))
        return out["x"], app.get_state(cfg(f"w{i}")).values["x"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(16)))
    assert results == [((i + 1) * 10, (i + 1) * 10) for i in range(16)]


def test_get_state_while_paused_shows_next_and_tasks(saver) -> None:
    app = _abc(saver, interrupt_before=["b"])
    app.invoke({"x": 1}, cfg())
    snap = app.get_state(cfg())
    assert snap.values == {"x": 2, "log": ["a"]}
    assert snap.next == ("b",)
    assert len(snap.tasks) == 1
    assert isinstance(snap.tasks[0], PregelTask)
    assert snap.tasks[0].name == "b"
    assert snap.tasks[0].id


def test_get_state_of_an_interrupted_thread_lists_the_interrupt(saver) -> None:
    g = StateGraph(S)
    g.add_node("ask", lambda s: {"thing": interrupt({"q": "why?"})})
    g.add_edge(START, "ask").add_edge("ask", END)
    app = g.compile(checkpointer=saver)
    app.invoke({"x": 1}, cfg())
    snap = app.get_state(cfg())
    assert snap.next == ("ask",)
    assert [i.value for i in snap.interrupts] == [{"q": "why?"}]
    assert [i.value for i in snap.tasks[0].interrupts] == [{"q": "why?"}]
    app.invoke(Command(resume="because"), cfg())
    snap = app.get_state(cfg())
    assert snap.values["thing"] == "because"
    assert snap.interrupts == ()


def test_get_state_at_a_given_checkpoint(saver) -> None:
    app = _abc(saver)
    app.invoke({"x": 1}, cfg())
    hist = list(app.get_state_history(cfg()))
    older = next(h for h in hist if h.next == ("b",))
    snap = app.get_state(older.config)
    assert snap.values == {"x": 2, "log": ["a"]}
    assert snap.next == ("b",)
    assert _cid(snap.config) == _cid(older.config)


def test_get_state_history_newest_first_including_the_input(saver) -> None:
    app = _abc(saver)
    app.invoke({"x": 1}, cfg())
    hist = list(app.get_state_history(cfg()))
    assert len(hist) >= 4  # the input checkpoint and one per step
    assert hist[0].values == app.get_state(cfg()).values
    assert _cid(hist[0].config) == _cid(app.get_state(cfg()).config)
    steps = [h.metadata["step"] for h in hist]
    assert steps == sorted(steps, reverse=True) and len(set(steps)) == len(steps)
    assert hist[-1].metadata["source"] == "input"
    assert hist[-1].parent_config is None
    assert all(h.metadata["source"] == "loop" for h in hist[:-1])
    for newer, older in itertools.pairwise(hist):
        assert _cid(newer.parent_config) == _cid(older.config)
    nexts = [h.next for h in hist]
    assert nexts[:3] == [(), ("c",), ("b",)]
    assert list(app.get_state_history(cfg(), limit=2)) == hist[:2]
    before = list(app.get_state_history(cfg(), before=hist[1].config))
    assert [_cid(h.config) for h in before] == [_cid(h.config) for h in hist[2:]]
    # Another thread's history is its own.
    assert list(app.get_state_history(cfg("other"))) == []


# ------------------------------------------------------------------ update_state


def test_update_state_as_node_then_continue(saver) -> None:
    counter = Counter()
    app = _abc(saver, counter, interrupt_before=["b"])
    app.invoke({"x": 1}, cfg())
    new_config = app.update_state(cfg(), {"x": 7, "log": ["edited"]}, as_node="a")
    assert new_config["configurable"]["thread_id"] == "t1"
    assert _cid(new_config) != ""
    snap = app.get_state(cfg())
    assert _cid(snap.config) == _cid(new_config)
    assert snap.values == {"x": 7, "log": ["a", "edited"]}  # log went through its reducer
    assert snap.next == ("b",)
    # As LangGraph: an update's checkpoint is the step after its parent's.
    assert snap.metadata == {"source": "update", "step": 2, "parents": {}}
    out = app.invoke(None, cfg())
    assert out == {"x": 70, "log": ["a", "edited", "b", "c"]}
    assert counter.calls == {"a": 1, "b": 1, "c": 1}


def test_update_state_without_as_node_and_with_an_unknown_node(saver) -> None:
    app = _abc(saver, interrupt_before=["c"])
    app.invoke({"x": 1}, cfg())
    app.update_state(cfg(), {"x": 99})
    assert app.get_state(cfg()).values["x"] == 99
    assert app.invoke(None, cfg())["log"] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="nope"):
        app.update_state(cfg(), {"x": 1}, as_node="nope")


# ------------------------------------------------------------------- time travel


def test_time_travel_replays_and_forks(saver) -> None:
    counter = Counter()
    app = _abc(saver, counter)
    app.invoke({"x": 1}, cfg())
    hist = list(app.get_state_history(cfg()))
    before_b = next(h for h in hist if h.next == ("b",))
    old_ids = {_cid(h.config) for h in hist}

    out = app.invoke(None, cfg(checkpoint_id=_cid(before_b.config)))
    assert out == {"x": 20, "log": ["a", "b", "c"]}
    assert counter.calls == {"a": 1, "b": 2, "c": 2}  # replayed from b, a not re-run

    latest = app.get_state(cfg())
    assert latest.values == out
    new_hist = list(app.get_state_history(cfg()))
    new = [h for h in new_hist if _cid(h.config) not in old_ids]
    # As LangGraph: a copy of the checkpoint replayed (source "fork"), after b, after c.
    assert [h.metadata["source"] for h in new] == ["loop", "loop", "fork"]
    assert new[-1].next == ("b",)
    # The fork hangs off the old checkpoint; the old branch is still there.
    assert _cid(new[-1].parent_config) == _cid(before_b.config)
    assert old_ids <= {_cid(h.config) for h in new_hist}


def test_time_travel_with_an_edit(saver) -> None:
    app = _abc(saver)
    app.invoke({"x": 1}, cfg())
    before_b = next(h for h in app.get_state_history(cfg()) if h.next == ("b",))
    forked = app.update_state(before_b.config, {"x": 5}, as_node="a")
    assert _cid(app.get_state(forked).parent_config) == _cid(before_b.config)
    out = app.invoke(None, forked)
    assert out == {"x": 50, "log": ["a", "b", "c"]}
    assert app.get_state(cfg()).values["x"] == 50


def test_unknown_checkpoint_id_raises(saver) -> None:
    app = _abc(saver)
    app.invoke({"x": 1}, cfg())
    for call in (
        lambda: app.invoke(None, cfg(checkpoint_id="no-such-checkpoint")),
        lambda: app.get_state(cfg(checkpoint_id="no-such-checkpoint")),
    ):
        with pytest.raises(CheckpointNotFoundError, match="no-such-checkpoint") as ei:
            call()
        # Also what it used to be: a bad value in the config.
        assert isinstance(ei.value, ValueError)
        assert isinstance(ei.value, LookupError)
        assert (ei.value.thread_id, ei.value.checkpoint_id) == ("t1", "no-such-checkpoint")


# --------------------------------------------------------------------- resuming


def test_invoke_none_with_nothing_to_resume_raises(saver) -> None:
    with pytest.raises(ValueError):
        _abc(saver).invoke(None, cfg("fresh"))


def test_interrupt_resume_through_the_saver(saver) -> None:
    g = StateGraph(S)
    g.add_node("ask", lambda s: {"thing": interrupt("approve?"), "log": ["ask"]})
    g.add_node("done", lambda s: {"log": [f"done:{s['thing']}"]})
    g.add_edge(START, "ask").add_edge("ask", "done").add_edge("done", END)
    app = g.compile(checkpointer=saver)
    out = app.invoke({"x": 0}, cfg())
    assert out["__interrupt__"][0].value == "approve?"
    out = app.invoke(Command(resume={"ok": True}), cfg())
    assert out["thing"] == {"ok": True}
    assert out["log"] == ["ask", "done:{'ok': True}"]


# ---------------------------------------------------------------- serialisation


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(object(), "object"), (lambda: 1, "function"), ({"nested": [1, object()]}, "object")],
    ids=["object", "lambda", "nested"],
)
def test_unserialisable_state_raises_naming_channel_and_type(saver, value, type_name) -> None:
    g = StateGraph(S)
    g.add_node("put", lambda s: {"thing": value})
    g.add_edge(START, "put").add_edge("put", END)
    app = g.compile(checkpointer=saver)
    with pytest.raises(CheckpointError) as ei:
        app.invoke({"x": 1}, cfg())
    assert isinstance(ei.value, TypeError)
    msg = str(ei.value)
    assert "thing" in msg
    assert type_name in msg
    # Nothing after the failing step was saved as if it had succeeded.
    assert "thing" not in app.get_state(cfg()).values


def test_unserialisable_input_raises(saver) -> None:
    app = _abc(saver)
    with pytest.raises(CheckpointError, match="thing") as ei:
        app.invoke({"x": 1, "thing": object()}, cfg())
    assert isinstance(ei.value, TypeError)


def test_unserialisable_state_without_a_checkpointer_is_fine() -> None:
    marker = object()
    g = StateGraph(S)
    g.add_node("put", lambda s: {"thing": marker})
    g.add_edge(START, "put").add_edge("put", END)
    assert g.compile().invoke({"x": 1})["thing"] is marker


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Money(pydantic.BaseModel):
    amount: int
    currency: str


@pytest.mark.parametrize(
    "value", [Point(1, 2), Money(amount=5, currency="EUR")], ids=["dataclass", "pydantic"]
)
def test_structured_values_keep_their_type_across_a_resume(saver, value) -> None:
    g = StateGraph(S)
    g.add_node("put", lambda s: {"thing": value})
    g.add_node("wait", lambda s: {"x": interrupt("go on?")})
    g.add_node("use", lambda s: {"log": [type(s["thing"]).__name__]})
    g.add_edge(START, "put").add_edge("put", "wait").add_edge("wait", "use").add_edge("use", END)
    # `thing: Any` names no type: the graph restores this one because it is registered.
    app = g.compile(checkpointer=saver, serde_allowlist=[type(value)])
    app.invoke({"x": 0}, cfg())
    out = app.invoke(Command(resume=1), cfg())
    # LangGraph's serializer restores dataclasses and pydantic models as themselves.
    assert out["thing"] == value
    assert out["log"] == [type(value).__name__]


# ------------------------------------------------------------- sync and async


async def test_one_saver_under_invoke_and_ainvoke(saver) -> None:
    app = _abc(saver, interrupt_before=["c"])
    out = app.invoke({"x": 1}, cfg())
    assert out["log"] == ["a", "b"]
    out = await app.ainvoke(None, cfg())
    assert out["log"] == ["a", "b", "c"]
    out = await app.ainvoke({"x": 0}, cfg("async"))
    assert out["log"] == ["a", "b"]
    out = app.invoke(None, cfg("async"))
    assert out == {"x": 10, "log": ["a", "b", "c"]}
    chunks = [c async for c in app.astream({"log": ["more"]}, cfg("async"), stream_mode="updates")]
    # The pause before "c" shows as LangGraph's empty interrupt chunk.
    assert chunks == [
        {"a": {"x": 11, "log": ["a"]}},
        {"b": {"x": 110, "log": ["b"]}},
        {"__interrupt__": ()},
    ]


def test_batch_with_one_config_per_input(saver) -> None:
    app = _abc(saver)
    outs = app.batch([{"x": 1}, {"x": 2}], [cfg("b1"), cfg("b2")])
    assert [o["x"] for o in outs] == [20, 30]
    assert app.get_state(cfg("b2")).values["x"] == 30


async def test_concurrent_threads_on_one_saver(saver) -> None:
    async def slow(s: S) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return {"x": s["x"] + 1}

    g = StateGraph(S)
    g.add_node("a", slow).add_node("b", slow)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(checkpointer=saver)
    outs = await asyncio.gather(*(app.ainvoke({"x": i}, cfg(f"t{i}")) for i in range(8)))
    assert [o["x"] for o in outs] == [i + 2 for i in range(8)]
    for i in range(8):
        assert app.get_state(cfg(f"t{i}")).values["x"] == i + 2


# ------------------------------------------------------------ SQLite specifics


def test_sqlite_thread_continues_with_a_new_saver_object(tmp_path: Path) -> None:
    path = str(tmp_path / "durable.db")
    first = SqliteSaver(path)
    app = _abc(first, interrupt_before=["b"])
    app.invoke({"x": 1}, cfg())
    first.close()

    second = SqliteSaver(path)  # a "restarted process"
    counter = Counter()
    app2 = _abc(second, counter, interrupt_before=["b"])
    snap = app2.get_state(cfg())
    assert snap.values == {"x": 2, "log": ["a"]}
    assert snap.next == ("b",)
    # The input checkpoint (step -1), START's step (0) and a's step (1), as LangGraph.
    steps = [s.metadata["step"] for s in app2.get_state_history(cfg())]
    assert steps == [1, 0, -1]
    out = app2.invoke(None, cfg())
    assert out == {"x": 20, "log": ["a", "b", "c"]}
    assert counter.calls == {"b": 1, "c": 1}
    second.close()

    third = SqliteSaver.from_conn_string(path)
    assert _abc(third).get_state(cfg()).values == out
    third.close()


def test_sqlite_steps_of_a_run_need_no_index_entry(tmp_path: Path) -> None:
    """The engine's checkpoint ids grow with time (UUIDv7), so each step's row goes in
    without an entry in the id index (schema 4, ``src/checkpoint/sqlite.rs``: one
    b-tree per durable step); every checkpoint is still found by its id."""
    import sqlite3

    path = str(tmp_path / "ordered.db")
    saver = SqliteSaver(path)
    app = _abc(saver)
    for x in (1, 2, 3):
        app.invoke({"x": x}, cfg())
    history = list(app.get_state_history(cfg()))
    ids = [_cid(s.config) for s in history]
    assert ids == sorted(ids, reverse=True), ids
    for snap in history:
        assert app.get_state(cfg(checkpoint_id=_cid(snap.config))).values == snap.values
    saver.close()
    conn = sqlite3.connect(path)
    try:
        rows, indexed = conn.execute("SELECT count(*), count(sortkey) FROM checkpoints").fetchone()
    finally:
        conn.close()
    assert (rows, indexed) == (len(history), 0)


def test_sqlite_interrupt_resumes_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "hitl.db"

    def build(saver: Any) -> Any:
        g = StateGraph(S)
        g.add_node("ask", lambda s: {"thing": interrupt("sure?")})
        g.add_edge(START, "ask").add_edge("ask", END)
        return g.compile(checkpointer=saver)

    with SqliteSaver(path) as s1:
        assert build(s1).invoke({"x": 1}, cfg())["__interrupt__"][0].value == "sure?"
    with SqliteSaver(path) as s2:
        out = build(s2).invoke(Command(resume="yes"), cfg())
    assert out == {"x": 1, "log": [], "thing": "yes"}  # a reducer field starts at []


def test_sqlite_context_manager_and_close(tmp_path: Path) -> None:
    path = str(tmp_path / "cm.db")
    with SqliteSaver(path) as s:
        app = _abc(s)
        assert app.invoke({"x": 1}, cfg())["x"] == 20
    assert Path(path).exists()
    with pytest.raises(CheckpointStorageError, match="closed"):
        app.invoke({"x": 1}, cfg("after-close"))
    s.close()  # closing twice is harmless

    s2 = SqliteSaver(path)
    s2.close()
    with pytest.raises(CheckpointError):
        _abc(s2).invoke({"x": 1}, cfg())


def test_sqlite_file_is_written_before_invoke_returns(tmp_path: Path) -> None:
    path = str(tmp_path / "sync.db")
    with SqliteSaver(path) as s:
        _abc(s).invoke({"x": 1}, cfg())
        # A second, independent connection sees the final checkpoint right away.
        with SqliteSaver(path) as reader:
            assert _abc(reader).get_state(cfg()).values["log"] == ["a", "b", "c"]


# ---------------------------------------------------------------- pending writes

FAIL_ONCE = {"bad": True}


def _good_bad_graph(saver: Any, calls: dict[str, int], join: bool) -> Any:
    def good(s: S) -> dict[str, Any]:
        calls["good"] += 1
        return {"log": ["good"]}

    def bad(s: S) -> dict[str, Any]:
        calls["bad"] += 1
        if FAIL_ONCE["bad"]:
            raise ConnectionError("flaky")
        return {"log": ["bad"]}

    def after(s: S) -> dict[str, Any]:
        calls["after"] += 1
        return {"x": len(s["log"])}

    g = StateGraph(S)
    g.add_node("good", good).add_node("bad", bad).add_node("after", after)
    g.add_edge(START, "good").add_edge(START, "bad")
    if join:
        g.add_edge(["good", "bad"], "after")
    else:
        g.add_edge("good", "after").add_edge("bad", "after")
    g.add_edge("after", END)
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("join", [False, True], ids=["edges", "join"])
def test_resume_after_a_failure_does_not_rerun_successful_siblings(saver, join) -> None:
    calls = {"good": 0, "bad": 0, "after": 0}
    FAIL_ONCE["bad"] = True
    app = _good_bad_graph(saver, calls, join)
    with pytest.raises(ConnectionError, match="flaky"):
        app.invoke({"log": []}, cfg())
    assert calls == {"good": 1, "bad": 1, "after": 0}
    # As LangGraph: the current state shows what is left to run; the checkpoint read
    # by its id, the record of the step.
    now = app.get_state(cfg())
    assert now.next == ("bad",)
    assert set(app.get_state(now.config).next) == {"good", "bad"}

    FAIL_ONCE["bad"] = False
    out = app.invoke(None, cfg())
    assert calls["good"] == 1  # its saved writes were reused
    assert calls["bad"] == 2
    assert out["log"] == ["bad", "good"]  # a step's writes by node name, as LangGraph
    # What follows the step runs once, whether wired by two edges or a join.
    assert calls["after"] == 1
    assert out["x"] == 2


def test_pending_writes_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    calls = {"good": 0, "bad": 0, "after": 0}
    FAIL_ONCE["bad"] = True
    with SqliteSaver(path) as s1:
        with pytest.raises(ConnectionError):
            _good_bad_graph(s1, calls, join=False).invoke({"log": []}, cfg())
    FAIL_ONCE["bad"] = False
    with SqliteSaver(path) as s2:
        out = _good_bad_graph(s2, calls, join=False).invoke(None, cfg())
    assert calls == {"good": 1, "bad": 2, "after": 1}
    assert out == {"x": 2, "log": ["bad", "good"]}  # a step's writes by node name


def test_join_after_a_step_with_an_interrupt_fires_on_resume(saver) -> None:
    calls = {"quick": 0, "after": 0}

    def quick(s: S) -> dict[str, Any]:
        calls["quick"] += 1
        return {"log": ["quick"]}

    def ask(s: S) -> dict[str, Any]:
        return {"log": [f"ask:{interrupt('ok?')}"]}

    def after(s: S) -> dict[str, Any]:
        calls["after"] += 1
        return {"x": len(s["log"])}

    g = StateGraph(S)
    g.add_node("quick", quick).add_node("ask", ask).add_node("after", after)
    g.add_edge(START, "quick").add_edge(START, "ask").add_edge(["quick", "ask"], "after")
    g.add_edge("after", END)
    app = g.compile(checkpointer=saver)
    assert app.invoke({"log": []}, cfg())["__interrupt__"][0].value == "ok?"
    out = app.invoke(Command(resume="yes"), cfg())
    assert out["log"] == ["ask:yes", "quick"]  # a step's writes by node name
    assert calls == {"quick": 1, "after": 1}
    assert out["x"] == 2


async def test_pending_writes_under_ainvoke(saver) -> None:
    calls = {"good": 0}
    state = {"fail": True}

    async def good(s: S) -> dict[str, Any]:
        calls["good"] += 1
        return {"log": ["good"]}

    async def bad(s: S) -> dict[str, Any]:
        await asyncio.sleep(0.02)
        if state["fail"]:
            raise TimeoutError("slow service")
        return {"log": ["bad"]}

    g = StateGraph(S)
    g.add_node("good", good).add_node("bad", bad)
    g.add_edge(START, "good").add_edge(START, "bad").add_edge("good", END).add_edge("bad", END)
    app = g.compile(checkpointer=saver)
    with pytest.raises(TimeoutError):
        await app.ainvoke({"log": []}, cfg())
    state["fail"] = False
    out = await app.ainvoke(None, cfg())
    assert out["log"] == ["bad", "good"]  # a step's writes by node name, as LangGraph
    assert calls["good"] == 1
