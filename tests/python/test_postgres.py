"""PostgresSaver against a real server (IRONLOOP_TEST_POSTGRES_URL; scripts/test.sh
starts one): a thread paused by one worker and resumed by another, sync and async; the
connection lost in the middle of a run; connections the server ended while idle;
setup, closing and the errors a user can cause.

The generic checkpoint cases (history, time travel, update_state, pending writes...)
run on PostgresSaver too, in test_checkpoint.py."""

from __future__ import annotations

import asyncio
import operator
import socket
import threading
import time
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from pg_support import admin, new_saver, postgres_url, temp_schema, terminate, url_named

from ironloop import END, START, Command, PostgresSaver, StateGraph, interrupt
from ironloop.errors import CheckpointError, CheckpointStorageError, InvalidArgumentError


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]
    answer: Any


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _review_graph(saver: Any, ran: list[str]) -> Any:
    """prepare -> ask (interrupt) -> finish."""

    def prepare(s: S) -> dict[str, Any]:
        ran.append("prepare")
        return {"n": s.get("n", 0) + 1, "log": ["prepare"]}

    def ask(s: S) -> dict[str, Any]:
        ran.append("ask")
        return {"answer": interrupt({"question": "ship it?", "n": s["n"]}), "log": ["ask"]}

    def finish(s: S) -> dict[str, Any]:
        ran.append("finish")
        return {"log": [f"finish:{s['answer']}"]}

    g = StateGraph(S)
    g.add_node("prepare", prepare).add_node("ask", ask).add_node("finish", finish)
    g.add_edge(START, "prepare").add_edge("prepare", "ask").add_edge("ask", "finish")
    g.add_edge("finish", END)
    return g.compile(checkpointer=saver)


# ------------------------------------------------------------ two workers, one thread


def test_a_thread_paused_by_one_worker_is_resumed_by_another() -> None:
    with temp_schema() as schema:
        ran_a: list[str] = []
        with new_saver(schema) as saver_a:
            out = _review_graph(saver_a, ran_a).invoke({"n": 1}, cfg("t"))
        assert out["__interrupt__"][0].value == {"question": "ship it?", "n": 2}
        assert ran_a == ["prepare", "ask"]

        # Another worker: its own saver object and its own compiled graph.
        ran_b: list[str] = []
        with PostgresSaver.from_conn_string(postgres_url(), schema=schema) as saver_b:
            app_b = _review_graph(saver_b, ran_b)
            paused = app_b.get_state(cfg("t"))
            assert paused.next == ("ask",)
            assert paused.interrupts[0].value["question"] == "ship it?"
            out = app_b.invoke(Command(resume="yes"), cfg("t"))
        assert out == {"n": 2, "log": ["prepare", "ask", "finish:yes"], "answer": "yes"}
        # prepare is not run again; ask re-runs from its start to take the answer.
        assert ran_b == ["ask", "finish"]

        # A third saver sees the finished thread and its whole history.
        with new_saver(schema) as saver_c:
            app_c = _review_graph(saver_c, [])
            assert app_c.get_state(cfg("t")).values["log"] == ["prepare", "ask", "finish:yes"]
            assert app_c.get_state(cfg("t")).next == ()
            assert len(list(app_c.get_state_history(cfg("t")))) == 5  # input, START, 3 steps


async def test_async_workers_with_async_with() -> None:
    with temp_schema() as schema:
        ran: list[str] = []
        async with PostgresSaver(postgres_url(), schema=schema) as saver_a:
            await saver_a.asetup()
            out = await _review_graph(saver_a, ran).ainvoke({"n": 10}, cfg("t"))
            assert out["__interrupt__"][0].value["n"] == 11
        with pytest.raises(CheckpointStorageError, match="closed"):
            await saver_a.asetup()
        async with PostgresSaver(postgres_url(), schema=schema) as saver_b:
            app = _review_graph(saver_b, ran)
            out = await app.ainvoke(Command(resume="later"), cfg("t"))
            assert out["log"] == ["prepare", "ask", "finish:later"]
            assert ran == ["prepare", "ask", "ask", "finish"]
            await saver_b.aclose()
            await saver_b.aclose()  # idempotent


async def test_one_saver_serves_invoke_and_ainvoke_and_many_threads() -> None:
    with temp_schema() as schema, new_saver(schema, pool_size=4) as saver:
        app = _review_graph(saver, [])
        assert "__interrupt__" in app.invoke({"n": 0}, cfg("sync"))
        results = await asyncio.gather(*(app.ainvoke({"n": i}, cfg(f"a{i}")) for i in range(12)))
        assert all(r["__interrupt__"][0].value["n"] == i + 1 for i, r in enumerate(results))
        out = await app.ainvoke(Command(resume="async"), cfg("sync"))
        assert out["answer"] == "async"
        out = app.invoke(Command(resume="sync"), cfg("a3"))
        assert out["log"][-1] == "finish:sync"


# --------------------------------------------------------------- lost connections


def test_a_connection_lost_mid_run_fails_clearly_and_the_thread_continues() -> None:
    app_name = f"ironloop-pytest-{uuid.uuid4().hex[:8]}"
    killed: list[int] = []
    killers: list[threading.Thread] = []

    with temp_schema() as schema, new_saver(schema, url=url_named(app_name)) as saver:
        ran: list[str] = []

        def step_a(s: S) -> dict[str, Any]:
            ran.append("a")
            return {"log": ["a"]}

        def step_b(s: S) -> dict[str, Any]:
            ran.append("b")
            if ran.count("b") == 1:
                killers.append(_lose_the_connection_of_the_next_write(schema, app_name, killed))
            return {"log": ["b"]}

        def step_c(s: S) -> dict[str, Any]:
            ran.append("c")
            return {"log": ["c"]}

        g = StateGraph(S)
        g.add_node("a", step_a).add_node("b", step_b).add_node("c", step_c)
        g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
        app = g.compile(checkpointer=saver)

        with pytest.raises(CheckpointStorageError) as ei:
            app.invoke({"log": []}, cfg("t"))
        killers[0].join(30)
        assert killed == [1]
        msg = str(ei.value)
        assert "connection to the server was lost" in msg
        assert "invoke(None, config)" in msg
        assert "PostgresSaver(" in msg
        assert isinstance(ei.value, CheckpointError)

        # Nothing of b's step is visible: the thread stands after a.
        state = app.get_state(cfg("t"))
        assert state.values["log"] == ["a"]
        assert state.next == ("b",)

        # The same saver object continues from the last durable step.
        out = app.invoke(None, cfg("t"))
        assert out["log"] == ["a", "b", "c"]
        assert ran == ["a", "b", "b", "c"]


def _lose_the_connection_of_the_next_write(
    schema: str, app: str, killed: list[int]
) -> threading.Thread:
    """Holds the checkpoint table so that the engine's next write waits on the server,
    then ends the server process that runs it (in the background, once it waits)."""
    holder = admin()
    holder.autocommit = False
    holder.execute(f'LOCK TABLE "{schema}".ironloop_checkpoints IN ACCESS EXCLUSIVE MODE')

    def kill() -> None:
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                n = terminate(app, waiting_on_lock=True)
                if n:
                    killed.append(n)
                    return
                time.sleep(0.02)
        finally:
            holder.rollback()
            holder.close()

    t = threading.Thread(target=kill, daemon=True)
    t.start()
    return t


def test_connections_the_server_ended_while_idle_are_replaced() -> None:
    app_name = f"ironloop-pytest-{uuid.uuid4().hex[:8]}"
    with temp_schema() as schema, new_saver(schema, url=url_named(app_name)) as saver:
        app = _review_graph(saver, [])
        app.invoke({"n": 0}, cfg("t"))
        assert terminate(app_name) >= 1  # e.g. a server restart between two requests
        time.sleep(0.2)
        out = app.invoke(Command(resume="ok"), cfg("t"))
        assert out["answer"] == "ok"


# ----------------------------------------------------------- setup, close, errors


def test_setup_is_needed_once_and_says_so() -> None:
    with temp_schema() as schema:
        with PostgresSaver(postgres_url(), schema=schema) as saver:
            app = _review_graph(saver, [])
            with pytest.raises(CheckpointStorageError, match=r"call setup\(\)"):
                app.invoke({"n": 0}, cfg("t"))
            saver.setup()
            saver.setup()  # every start may call it
            assert "__interrupt__" in app.invoke({"n": 0}, cfg("t"))
        with admin() as c:
            rows = c.execute(
                f'SELECT version FROM "{schema}".ironloop_migrations ORDER BY version'
            ).fetchall()
        assert rows == [(1,), (2,), (3,), (4,), (5,), (6,)]


def test_closed_saver_and_context_manager() -> None:
    with temp_schema() as schema:
        with new_saver(schema) as saver:
            app = _review_graph(saver, [])
            app.invoke({"n": 0}, cfg("t"))
        assert "closed" in repr(saver)
        with pytest.raises(CheckpointStorageError, match="closed"):
            app.invoke(Command(resume="x"), cfg("t"))
        with pytest.raises(CheckpointStorageError, match="closed"):
            _review_graph(saver, [])  # compiling with a closed saver
        saver.close()  # idempotent


def test_connection_errors_are_clear_and_keep_the_password_out() -> None:
    with pytest.raises(CheckpointStorageError, match="not valid"):
        PostgresSaver("this is not a connection string")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(CheckpointStorageError) as ei:
        PostgresSaver(f"postgresql://me:s3cret@127.0.0.1:{port}/app", connect_timeout=3)
    msg = str(ei.value)
    assert f"127.0.0.1:{port}/app" in msg
    assert "check that the server runs" in msg
    assert "s3cret" not in msg
    with pytest.raises(InvalidArgumentError, match="connect_timeout"):
        PostgresSaver(postgres_url(), connect_timeout=-1)
    with pytest.raises(InvalidArgumentError, match="pool_size"):
        PostgresSaver(postgres_url(), pool_size=0)


def test_server_and_repr_name_the_server_not_the_password() -> None:
    with PostgresSaver(postgres_url()) as saver:
        assert "/" in saver.server and ":" in saver.server
        assert repr(saver) == f"PostgresSaver({saver.server!r})"
