"""One run, and one writer, per thread: of two runs of one thread started at once in
two processes, the second is refused at once (ThreadBusyError, a
CheckpointConflictError naming the thread: the first holds the thread's run lease), and
the history stays linear. On SQLite (one file) and PostgreSQL (one database). A writer
that takes no lease (``update_state``) is refused by the one-writer rule instead."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from conflict_graph import build
from pg_support import postgres_url, temp_schema

from ironloop import END, START, Command, MemorySaver, PostgresSaver, SqliteSaver, StateGraph
from ironloop.errors import CheckpointConflictError, CheckpointError, ThreadBusyError

HERE = Path(__file__).parent


class Log(TypedDict):
    log: Annotated[list[str], lambda a, b: a + b]


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _race(kind: str, target: str, schema: str, tmp_path: Path) -> None:
    saver: Any = SqliteSaver(target) if kind == "sqlite" else PostgresSaver(target, schema=schema)
    with saver:
        if kind == "postgres":
            saver.setup()
        app = build(saver)
        assert app.invoke({"log": []}, cfg("t"))["__interrupt__"][0].value == "go?"
        gate = tmp_path / "gate"
        gate.mkdir()
        worker = [sys.executable, str(HERE / "conflict_worker.py"), kind, target, schema, "t"]
        workers = [
            subprocess.Popen(
                [*worker, str(gate), answer],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=HERE,
            )
            for answer in ("left", "right")
        ]
        results = []
        for w in workers:
            out, err = w.communicate(timeout=60)
            assert w.returncode == 0, err
            results.append(json.loads(out))
        won = [r["ok"] for r in results if "ok" in r]
        lost = [r for r in results if "busy" in r]
        assert len(won) == 1 and len(lost) == 1, results
        assert lost[0]["busy"] == "t"
        assert 'thread "t" already has a run in progress in another process' in (lost[0]["message"])
        # The winner's history, and only it.
        state = app.get_state(cfg("t"))
        assert state.values["log"] == won[0]
        assert won[0] in (["ask:left", "done"], ["ask:right", "done"])
        history = list(app.get_state_history(cfg("t")))
        ids = [h.config["configurable"]["checkpoint_id"] for h in history]
        parents = [h.parent_config["configurable"]["checkpoint_id"] for h in history[:-1]]
        assert parents == ids[1:], "the history forked"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_processes_resuming_one_thread(kind: str, tmp_path: Path) -> None:
    if kind == "sqlite":
        _race("sqlite", str(tmp_path / "race.db"), "", tmp_path)
    else:
        with temp_schema() as schema:
            _race("postgres", postgres_url(), schema, tmp_path)


def test_two_threads_of_one_process_on_one_memory_saver() -> None:
    """In one process the second run does not even start: the run registry refuses it
    at once (ThreadBusyError, a CheckpointConflictError) while the first runs."""
    saver = MemorySaver()
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        inside.set()
        assert leave.wait(10)

    app = build(saver, hold)
    app.invoke({"log": []}, cfg("t"))
    results: list[Any] = []

    def resume(answer: str) -> None:
        try:
            results.append(app.invoke(Command(resume=answer), cfg("t"))["log"])
        except CheckpointError as e:
            results.append(e)

    first = threading.Thread(target=resume, args=("left",))
    first.start()
    assert inside.wait(10)
    resume("right")
    leave.set()
    first.join(30)
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1 and isinstance(errors[0], ThreadBusyError), results
    assert isinstance(errors[0], CheckpointConflictError)
    assert errors[0].thread_id == "t"
    assert app.get_state(cfg("t")).values["log"] == ["ask:left", "done"]


@pytest.mark.parametrize("durability", ["async", "exit"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_run_whose_saves_lag_still_loses_to_another_writer(
    kind: str, durability: str, tmp_path: Path
) -> None:
    """With ``durability="async"`` or ``"exit"`` the steps' saves are batched; when
    another writer advances the thread meanwhile, one of them gets
    CheckpointConflictError, the history stays linear, and no part of a refused batch
    is visible."""
    saver: Any = MemorySaver() if kind == "memory" else SqliteSaver(str(tmp_path / "lag.db"))

    def build_app(interfere: bool) -> Any:
        g = StateGraph(Log)

        def step(name: str) -> Any:
            def node(s: Log) -> dict[str, Any]:
                if interfere and name == "n5":
                    other.update_state(cfg("t"), {"log": ["other"]})
                return {"log": [name]}

            return node

        names = [f"n{i}" for i in range(8)]
        for n in names:
            g.add_node(n, step(n))
        g.add_edge(START, names[0])
        for a, b in itertools.pairwise(names):
            g.add_edge(a, b)
        g.add_edge(names[-1], END)
        return g.compile(checkpointer=saver)

    other = build_app(False)
    app = build_app(True)
    before = other.invoke({"log": []}, cfg("t"))["log"]
    with pytest.raises(CheckpointConflictError) as e:
        app.invoke({"log": ["again"]}, cfg("t"), durability=durability)
    assert e.value.thread_id == "t"
    state = other.get_state(cfg("t"))
    log = state.values["log"]
    if durability == "async":
        # Either writer may win: the update (the run fails at its next save), or the
        # run's batch saved first (then the update inside n5 is the one refused,
        # and the run fails with it). Never both, never a fork.
        assert log[-1] == "other" or "other" not in log, log
    # The history is linear: every checkpoint's parent is the next older one.
    history = list(other.get_state_history(cfg("t")))
    ids = [h.config["configurable"]["checkpoint_id"] for h in history]
    parents = [h.parent_config["configurable"]["checkpoint_id"] for h in history[:-1]]
    assert parents == ids[1:], "the history forked"
    if durability == "exit":
        # Nothing of the refused run: its whole batch went in one transaction.
        assert state.values["log"] == [*before, "other"]
        assert len(history) == 11  # the first run's 10 checkpoints and the update
    if kind == "sqlite":
        saver.close()
