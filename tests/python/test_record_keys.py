"""Checkpoint records under a key (``key=``, ``encrypt=``, ``accept_unkeyed=``, or
``IRONLOOP_CHECKPOINT_KEY``): a record edited behind the saver's back, written with
another key or without one is refused with ``CheckpointIntegrityError``; encrypted
records hold none of the state in clear. SQLite and PostgreSQL (on
IRONLOOP_TEST_POSTGRES_URL, a schema per test), and MemorySaver for the round trip."""

from __future__ import annotations

import asyncio
import operator
import secrets
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from pg_support import admin, new_saver, postgres_url, temp_schema

from ironloop import END, START, MemorySaver, PostgresSaver, SqliteSaver, StateGraph
from ironloop.errors import (
    CheckpointError,
    CheckpointIntegrityError,
    InvalidArgumentError,
)

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
SECRET = "the vault code is 4711"


class S(TypedDict, total=False):
    note: str
    log: Annotated[list[str], operator.add]


def _graph(saver: Any) -> Any:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"], "note": s["note"] + "!"})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return g.compile(checkpointer=saver)


def _cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _run(saver: Any, thread: str = "t") -> None:
    out = _graph(saver).invoke({"note": SECRET}, _cfg(thread))
    assert out == {"note": SECRET + "!", "log": ["a", "b"]}


def _records(path: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(path)) as c:
        return list(c.execute("SELECT checkpoint_id, record FROM checkpoints ORDER BY seq"))


def _set_record(path: Path, checkpoint_id: str, text: str) -> None:
    with closing(sqlite3.connect(path)) as c, c:
        c.execute(
            "UPDATE checkpoints SET record = ? WHERE checkpoint_id = ?", (text, checkpoint_id)
        )


def _one_byte_changed(text: str) -> str:
    """``text`` with one digit of the record's body changed (a forger's edit of a
    value: the record stays well-formed JSON)."""
    i = next(i for i in range(3, len(text)) if text[i].isdigit())
    return text[:i] + ("2" if text[i] == "1" else "1") + text[i + 1 :]


# ------------------------------------------------------------------------- SQLite


@pytest.mark.parametrize("encrypt", [False, True])
def test_sqlite_record_edited_behind_the_savers_back_is_refused(
    tmp_path: Path, encrypt: bool
) -> None:
    path = tmp_path / "keyed.db"
    with SqliteSaver(path, key=KEY, encrypt=encrypt) as s:
        _run(s)
    records = _records(path)
    assert len(records) == 4  # the input's, then one per step
    assert any(SECRET in text for _, text in records) is not encrypt
    # Read back as written, by a new saver with the key.
    with SqliteSaver(path, key=KEY) as s:
        snap = _graph(s).get_state(_cfg())
        assert snap.values == {"note": SECRET + "!", "log": ["a", "b"]}
        assert len(list(_graph(s).get_state_history(_cfg()))) == 4
    # One byte changed in the latest record: refused, naming the record and the causes.
    latest_id, latest = records[-1]
    _set_record(path, latest_id, _one_byte_changed(latest))
    with SqliteSaver(path, key=KEY) as s:
        with pytest.raises(CheckpointIntegrityError) as e:
            _graph(s).get_state(_cfg())
        assert latest_id in str(e.value)
        assert "another key" in str(e.value) and "tampered" in str(e.value)
        assert isinstance(e.value, CheckpointError)
        with pytest.raises(CheckpointIntegrityError):
            _graph(s).invoke(None, _cfg())
    # Restored, it reads again.
    _set_record(path, latest_id, latest)
    with SqliteSaver(path, key=KEY) as s:
        assert _graph(s).get_state(_cfg()).values["note"] == SECRET + "!"


def test_sqlite_an_unkeyed_record_forged_with_a_valid_checksum_is_refused(tmp_path: Path) -> None:
    """The unkeyed checksum is computable by anyone: a record copied from an unkeyed
    store (valid checksum, same ids) into a keyed one is refused."""
    keyed, plain = tmp_path / "keyed.db", tmp_path / "plain.db"
    with SqliteSaver(keyed, key=KEY) as s:
        _run(s)
    # The same thread written without a key, then its records swapped in by id.
    with SqliteSaver(plain) as s:
        _run(s)
    forged = dict(_records(plain))
    latest_id = _records(keyed)[-1][0]
    unkeyed_text = next(iter(forged.values()))
    _set_record(keyed, latest_id, unkeyed_text)
    with SqliteSaver(keyed, key=KEY) as s:
        with pytest.raises(CheckpointIntegrityError, match="accept_unkeyed"):
            _graph(s).get_state(_cfg())


def test_sqlite_wrong_key_or_no_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keyed.db"
    with SqliteSaver(path, key=KEY, encrypt=True) as s:
        _run(s)
    with SqliteSaver(path, key=OTHER_KEY) as s:
        with pytest.raises(CheckpointIntegrityError, match="does not match the saver's key"):
            _graph(s).get_state(_cfg())
    with SqliteSaver(path) as s:
        with pytest.raises(CheckpointIntegrityError, match="encrypted with a key"):
            _graph(s).get_state(_cfg())


def test_sqlite_unkeyed_records_need_accept_unkeyed(tmp_path: Path) -> None:
    """Records written before the key was set are refused by default; with
    ``accept_unkeyed=True`` the thread reads and goes on, its new records keyed."""
    path = tmp_path / "legacy.db"
    with SqliteSaver(path) as s:
        _run(s)
    with SqliteSaver(path, key=KEY) as s:
        with pytest.raises(CheckpointIntegrityError, match="accept_unkeyed=True"):
            _graph(s).get_state(_cfg())
    with SqliteSaver(path, key=KEY, accept_unkeyed=True) as s:
        assert _graph(s).get_state(_cfg()).values["note"] == SECRET + "!"
        out = _graph(s).invoke({"note": "again"}, _cfg())
        assert out["log"] == ["a", "b", "a", "b"]
    assert _records(path)[-1][1].endswith('"]')  # the new ones carry a code
    with SqliteSaver(path) as s:
        with pytest.raises(CheckpointIntegrityError, match="has none"):
            _graph(s).get_state(_cfg())


def test_key_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.db"
    monkeypatch.setenv("IRONLOOP_CHECKPOINT_KEY", secrets.token_hex(32))
    with SqliteSaver(path) as s:
        _run(s)
    monkeypatch.delenv("IRONLOOP_CHECKPOINT_KEY")
    with SqliteSaver(path) as s:
        with pytest.raises(CheckpointIntegrityError, match="IRONLOOP_CHECKPOINT_KEY"):
            _graph(s).get_state(_cfg())
    monkeypatch.setenv("IRONLOOP_CHECKPOINT_KEY", "too short")
    with pytest.raises(InvalidArgumentError, match="IRONLOOP_CHECKPOINT_KEY"):
        SqliteSaver(path)


# ------------------------------------------------------------------ the arguments


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: MemorySaver(**kw),
        lambda **kw: SqliteSaver(":memory:", **kw),
        lambda **kw: SqliteSaver.from_conn_string(":memory:", **kw),
    ],
)
def test_keys_are_checked_when_the_saver_is_made(make: Callable[..., Any]) -> None:
    for bad in (b"", b"x" * 16, b"x" * 33, "short", "g" * 64):
        with pytest.raises(InvalidArgumentError, match="must be 32 bytes") as e:
            make(key=bad)
        assert isinstance(e.value, ValueError)
        assert "token_hex" in str(e.value)
    with pytest.raises(TypeError, match="bytes"):
        make(key=12345)
    with pytest.raises(InvalidArgumentError, match="encrypt=True needs a key"):
        make(encrypt=True)
    # Every accepted spelling of a key.
    for good in (KEY, bytearray(KEY), "k" * 32, secrets.token_hex(32)):
        make(key=good)


@pytest.mark.parametrize("encrypt", [False, True])
def test_memory_saver_with_a_key_round_trips_sync_and_async(encrypt: bool) -> None:
    saver = MemorySaver(key=KEY, encrypt=encrypt)
    _run(saver, "sync")
    app = _graph(saver)

    async def main() -> dict[str, Any]:
        return await app.ainvoke({"note": "x"}, _cfg("async"))  # type: ignore[no-any-return]

    assert asyncio.run(main()) == {"note": "x!", "log": ["a", "b"]}
    assert app.get_state(_cfg("sync")).values["note"] == SECRET + "!"
    assert len(list(app.get_state_history(_cfg("async")))) == 4


# --------------------------------------------------------------------- PostgreSQL


def _pg_set_record(schema: str, checkpoint_id: str, text: str) -> None:
    with admin() as c:
        c.execute(
            f'UPDATE "{schema}".ironloop_checkpoints SET record = %s '
            "WHERE checkpoint_id = %s::uuid",
            (text, checkpoint_id),
        )


@pytest.mark.parametrize("encrypt", [False, True])
def test_postgres_record_edited_behind_the_savers_back_is_refused(encrypt: bool) -> None:
    with temp_schema() as schema:
        s = new_saver(schema, key=KEY, encrypt=encrypt)
        _run(s)
        s.close()
        with admin() as c:
            rows = c.execute(
                f'SELECT checkpoint_id::text, record FROM "{schema}".ironloop_checkpoints '
                "ORDER BY seq DESC"
            ).fetchall()
        assert len(rows) == 4
        assert any(SECRET in text for _, text in rows) is not encrypt
        latest_id, latest = rows[0]
        _pg_set_record(schema, latest_id, _one_byte_changed(latest))
        s = PostgresSaver(postgres_url(), schema=schema, key=KEY)
        try:
            with pytest.raises(CheckpointIntegrityError, match="another key") as e:
                _graph(s).get_state(_cfg())
            assert latest_id in str(e.value)
            _pg_set_record(schema, latest_id, latest)
            assert _graph(s).get_state(_cfg()).values["note"] == SECRET + "!"
        finally:
            s.close()
        # Another key (accepting unkeyed records changes nothing for keyed ones).
        s = PostgresSaver(postgres_url(), schema=schema, key=OTHER_KEY, accept_unkeyed=True)
        try:
            with pytest.raises(CheckpointIntegrityError, match="does not match"):
                _graph(s).get_state(_cfg())
        finally:
            s.close()


def test_sqlite_pending_writes_are_under_the_key_too(tmp_path: Path) -> None:
    """A step that paused on ``interrupt()`` keeps its finished task's write and the
    interrupt as pending writes: encrypted in the file, and a value edited there is
    refused when the thread resumes."""
    from ironloop import Command, interrupt

    def build(saver: Any) -> Any:
        g = StateGraph(S)
        g.add_node("done", lambda s: {"log": [SECRET]})
        g.add_node("ask", lambda s: {"note": interrupt("the vault question")})
        g.add_edge(START, "done").add_edge(START, "ask")
        g.add_edge("done", END).add_edge("ask", END)
        return g.compile(checkpointer=saver)

    path = tmp_path / "writes.db"
    with SqliteSaver(path, key=KEY, encrypt=True) as s:
        assert build(s).invoke({"note": "x"}, _cfg())["__interrupt__"]
    with closing(sqlite3.connect(path)) as c:
        writes = list(c.execute("SELECT task_id, idx, value FROM writes"))
    assert writes and all(v.startswith("!e") for _, _, v in writes)
    assert not any(SECRET in v or "vault" in v for _, _, v in writes)
    task_id, idx, value = writes[0]
    with closing(sqlite3.connect(path)) as c, c:
        c.execute(
            "UPDATE writes SET value = ? WHERE task_id = ? AND idx = ?",
            (writes[-1][2] if len(writes) > 1 else value[:-2] + "AA", task_id, idx),
        )
    with SqliteSaver(path, key=KEY) as s:
        with pytest.raises(CheckpointIntegrityError, match="pending write"):
            build(s).invoke(Command(resume="42"), _cfg())
    with closing(sqlite3.connect(path)) as c, c:
        c.execute(
            "UPDATE writes SET value = ? WHERE task_id = ? AND idx = ?", (value, task_id, idx)
        )
    with SqliteSaver(path, key=KEY) as s:
        out = build(s).invoke(Command(resume="42"), _cfg())
    assert out == {"note": "42", "log": [SECRET]}
