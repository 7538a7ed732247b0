"""Long threads: state loaded from snapshots (every few steps) must be the state the
full history gives, on every saver; the state a graph keeps between runs of a thread
must give way to what another saver object or process wrote; threads written before
snapshots existed keep working."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from pg_support import admin, new_saver, temp_schema

from ironloop import (
    END,
    START,
    Command,
    MemorySaver,
    SqliteSaver,
    StateGraph,
    add_messages,
    interrupt,
)
from ironloop.messages import HumanMessage

# Several snapshot intervals (a snapshot every 16 records).
STEPS = 71  # odd: `a` (which may end the loop) writes the odd counts


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[int], operator.add]
    messages: Annotated[list[Any], add_messages]
    answers: Annotated[list[str], operator.add]


def cfg(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"thread_id": thread}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def loop(saver: Any, limit: int = STEPS, ask_at: int | None = None, ran: list[str] | None = None):
    """`a` and `b` take turns adding 1 to `n` (and `n` to `log`, and a message) until
    `n` reaches `limit`; with `ask_at`, `a` asks for an answer when `n` is that."""

    def step(name: str):
        def run(s: S) -> dict[str, Any]:
            n = s.get("n", 0) + 1
            out: dict[str, Any] = {"n": n, "log": [n], "messages": [("ai", f"{name} {n}")]}
            if ask_at is not None and name == "a" and n == ask_at:
                out["answers"] = [interrupt(f"answer at {n}?")]
            if ran is not None:
                ran.append(f"{name}{n}")
            return out

        return run

    g = StateGraph(S)
    g.add_node("a", step("a"))
    g.add_node("b", step("b"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: END if s["n"] >= limit else "b")
    g.add_edge("b", "a")
    return g.compile(checkpointer=saver)


def texts(values: dict[str, Any]) -> list[str]:
    return [m.content for m in values.get("messages", [])]


def plain(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, "messages": texts(values)}


def check_every_checkpoint(saver: Any, thread: str) -> int:
    """Every checkpoint of the thread read by a fresh graph (nothing cached) equals its
    state in `get_state_history` (replayed from the thread's start). Returns how many."""
    history = list(loop(saver).get_state_history(cfg(thread)))
    for h in history:
        cold = loop(saver)
        got = cold.get_state(cfg(thread, h.config["configurable"]["checkpoint_id"]))
        assert plain(got.values) == plain(h.values), h.config
        assert got.next == h.next
        assert got.parent_config == h.parent_config
    assert plain(loop(saver).get_state(cfg(thread)).values) == plain(history[0].values)
    return len(history)


def test_long_thread_state_history_time_travel_and_update_state(saver: Any) -> None:
    app = loop(saver)
    out = app.invoke({"n": 0}, cfg("t"))
    assert out["n"] == STEPS and out["log"] == list(range(1, STEPS + 1))
    assert len(out["messages"]) == STEPS
    assert check_every_checkpoint(saver, "t") == STEPS + 2  # input, START, the steps

    # update_state on an old checkpoint branches off it.
    history = list(app.get_state_history(cfg("t")))
    old = history[STEPS // 2]
    new = app.update_state(old.config, {"log": [-1], "n": 1000}, as_node="a")
    got = loop(saver).get_state(new)
    assert got.values["log"] == old.values["log"] + [-1]
    assert got.values["n"] == 1000 and got.next == ()
    assert texts(got.values) == texts(old.values)

    # Time travel: run again from an early checkpoint; the fork goes to the limit.
    early = history[-5]
    out = loop(saver).invoke(None, early.config)
    assert out["n"] == STEPS
    assert out["log"] == early.values["log"] + list(range(early.values["n"] + 1, STEPS + 1))
    check_every_checkpoint(saver, "t")


def test_a_thread_paused_past_a_snapshot_resumes_where_it_stopped(saver: Any) -> None:
    ran: list[str] = []
    app = loop(saver, ask_at=41, ran=ran)
    out = app.invoke({"n": 0}, cfg("t"))
    assert "__interrupt__" in out and out["n"] == 40
    assert app.get_state(cfg("t")).next == ("a",)
    # Resumed by a graph that never saw the thread (cold: loads from the snapshot).
    ran.clear()
    resumed = loop(saver, ask_at=41, ran=ran)
    out = resumed.invoke(Command(resume="yes"), cfg("t"))
    assert out["n"] == STEPS and out["answers"] == ["yes"]
    assert ran[0] == "a41" and ran.count("a41") == 1, "nothing before the pause ran again"
    assert out["log"] == list(range(1, STEPS + 1))
    check_every_checkpoint(saver, "t")


@contextmanager
def one_store(kind: str, tmp_path: Path) -> Iterator[tuple[Any, Any, Callable[[str], Any]]]:
    """Two saver objects on one store, and a way to run SQL on the store."""
    if kind == "memory":
        m = MemorySaver()
        yield m, m, lambda sql: None
    elif kind == "sqlite":
        db = str(tmp_path / "checkpoints.db")
        with SqliteSaver(db) as s1, SqliteSaver(db) as s2:

            def run_sqlite(sql: str) -> Any:
                # In another process: a second SQLite library in this one (Python's)
                # would drop the saver's POSIX locks when it closes the file.
                code = (
                    "import json, sqlite3, sys\n"
                    "c = sqlite3.connect(sys.argv[1])\n"
                    "rows = c.execute(sys.argv[2]).fetchall()\n"
                    "c.commit()\n"
                    "print(json.dumps(rows))\n"
                )
                out = subprocess.run(
                    [sys.executable, "-c", code, db, sql],
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                return json.loads(out.stdout)

            yield s1, s2, run_sqlite
    else:
        with temp_schema() as schema, new_saver(schema) as s1, new_saver(schema) as s2:

            def run_pg(sql: str) -> Any:
                with admin() as c:
                    c.execute(f'SET search_path TO "{schema}"')
                    cur = c.execute(sql.replace("checkpoints", "ironloop_checkpoints"))
                    return cur.fetchall() if cur.description else None

            yield s1, s2, run_pg


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_state_kept_between_runs_gives_way_to_other_writers(kind: str, tmp_path: Path) -> None:
    """Two graphs on two saver objects of one store take turns on a thread: each sees
    the other's turns."""
    with one_store(kind, tmp_path) as (s1, s2, _):
        g1, g2 = chat(s1), chat(s2)
        for i in range(6):
            app = g1 if i % 2 == 0 else g2
            out = app.invoke({"messages": [HumanMessage(f"turn {i}")]}, cfg("t"))
            assert texts(out) == [t for j in range(i + 1) for t in (f"turn {j}", f"echo turn {j}")]
        assert g1.get_state(cfg("t")).values == g2.get_state(cfg("t")).values


def chat(saver: Any):
    class Chat(TypedDict):
        messages: Annotated[list[Any], add_messages]
        notes: list[str]

    def echo(s: Chat) -> dict[str, Any]:
        return {"messages": [("ai", f"echo {s['messages'][-1].content}")]}

    g = StateGraph(Chat)
    g.add_node("echo", echo)
    g.add_edge(START, "echo").add_edge("echo", END)
    return g.compile(checkpointer=saver)


def test_another_process_advancing_the_thread_is_seen(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    with SqliteSaver(db) as saver:
        app = chat(saver)
        app.invoke({"messages": [HumanMessage("mine 1")]}, cfg("t"))
        child = textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from test_snapshots import chat, cfg
            from ironloop import SqliteSaver
            from ironloop.messages import HumanMessage
            with SqliteSaver({db!r}) as s:
                chat(s).invoke({{"messages": [HumanMessage("theirs")]}}, cfg("t"))
            """
        )
        subprocess.run([sys.executable, "-c", child], check=True, timeout=60)
        out = app.invoke({"messages": [HumanMessage("mine 2")]}, cfg("t"))
        assert texts(out) == [
            "mine 1",
            "echo mine 1",
            "theirs",
            "echo theirs",
            "mine 2",
            "echo mine 2",
        ]


def test_values_changed_in_place_after_a_run_do_not_leak_into_the_next(saver: Any) -> None:
    class T(TypedDict):
        items: list[str]
        n: int

    g = StateGraph(T)
    g.add_node("add", lambda s: {"items": [*s.get("items", []), "x"], "n": s.get("n", 0) + 1})
    g.add_edge(START, "add").add_edge("add", END)
    app = g.compile(checkpointer=saver)
    out = app.invoke({"n": 0}, cfg("t"))
    out["items"].append("changed by the caller")
    out = app.invoke({"n": out["n"]}, cfg("t"))
    assert out["items"] == ["x", "x"]


# Records holding a snapshot, in any record format (see src/checkpoint/record/).
SNAPSHOTS = (
    "SELECT count(*) FROM checkpoints WHERE record LIKE '[5,%' OR record LIKE '[3,%' "
    "OR record LIKE '{\"snapshot\":%'"
)

# Format 4's sources stored as numbers (src/checkpoint/record/).
SOURCES = ("input", "loop", "update")


def format_2_without_snapshot(text: str) -> str:
    """A format-4 record holding a snapshot as format 2 (before the checksum and the
    snapshots) wrote it: tag 2, the source a string, one ``[node, channel, value]``
    per write, the metadata slot always there, no snapshot, no checksum."""
    items = json.loads(text)
    assert items[0] == 5, text
    items = items[:-2]  # the snapshot and the checksum
    source = items[2]
    items[2] = SOURCES[source] if isinstance(source, int) else source[0]
    items[4] = [[g[0], g[i], g[i + 1]] for g in items[4] for i in range(1, len(g), 2)]
    if len(items) == 6:
        items.append({})
    return json.dumps([2, *items[1:]], separators=(",", ":"))


def strip_snapshots(sql: Callable[[str], Any]) -> None:
    """Rewrites the thread's records holding a snapshot as format 2 wrote them."""
    for seq, text in sql("SELECT seq, record FROM checkpoints WHERE record LIKE '[5,%'"):
        old = format_2_without_snapshot(text).replace("'", "''")
        sql(f"UPDATE checkpoints SET record = '{old}' WHERE seq = {seq}")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_thread_written_without_snapshots_loads_and_gets_them(kind: str, tmp_path: Path) -> None:
    """The records rewritten as the previous format wrote them (no snapshot) load by
    replay, and the thread's next run adds snapshots. (MemorySaver: the Rust suite.)"""
    with one_store(kind, tmp_path) as (saver, _, sql):
        app = loop(saver)
        app.invoke({"n": 0}, cfg("t"))
        expected = plain(app.get_state(cfg("t")).values)
        assert sql(SNAPSHOTS)[0][0] > 0
        strip_snapshots(sql)
        assert sql(SNAPSHOTS)[0][0] == 0
        assert plain(loop(saver).get_state(cfg("t")).values) == expected
        check_every_checkpoint(saver, "t")
        out = loop(saver, limit=STEPS + 20).invoke({"n": STEPS + 1}, cfg("t"))
        assert out["n"] == STEPS + 20
        assert sql(SNAPSHOTS)[0][0] > 0
        check_every_checkpoint(saver, "t")
