"""The server's own records — threads and runs — in a SQLite database (the
checkpoints themselves are the checkpointer's). One connection, short statements
under a lock: every call returns in well under a millisecond."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .serde import RawJSON, dumps, loads

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    "values" TEXT,
    interrupts TEXT NOT NULL DEFAULT '{}',
    error TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    multitask_strategy TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, created_at);
"""

THREAD_STATUSES = ("idle", "busy", "interrupted", "error")
RUN_STATUSES = ("pending", "running", "error", "success", "timeout", "interrupted")


#: The current second (since the epoch) and its text, as ``now`` last wrote it: one
#: tuple, replaced whole, so a thread never reads one second's text with another's.
_second: tuple[int, str] = (-1, "")


def now() -> str:
    """The time in UTC as ``datetime.now(timezone.utc).isoformat()`` writes it (records
    sort by it as text), made without a ``datetime``: a run's records take it several
    times, and the date and time of day are formatted once a second."""
    global _second
    sec, micro = divmod(time.time_ns() // 1000, 1_000_000)
    seen, text = _second
    if sec != seen:
        t = time.gmtime(sec)
        text = (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:"
                f"{t.tm_min:02d}:{t.tm_sec:02d}")  # fmt: skip
        _second = (sec, text)
    return f"{text}.{micro:06d}+00:00" if micro else text + "+00:00"


def _contains(have: Any, want: Any) -> bool:
    """JSON containment, as the server's ``metadata`` / ``values`` filters read."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and _contains(have[k], v) for k, v in want.items()
        )
    return bool(have == want)


class Records:
    """Threads and runs, as the API returns them (dicts of JSON values). The SQL is
    written so PostgreSQL runs it too (``pg.PgRecords``)."""

    _db: Any

    def __init__(self, path: str | Path) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            # One server process owns its data folder (several share runs through
            # PostgreSQL): the file's locks are taken once, at the first statement, and
            # kept, not taken and dropped by every statement (~20 fcntl calls a run), and
            # a second server on the folder is refused at its start (``open_storage``).
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._script(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """The statements made inside, by this thread, committed together (one commit
        where there would be several: a run's start, a run's end)."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _exec(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of one statement (``?`` placeholders), each read by column name."""
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _count(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """How many rows one statement changed."""
        with self._lock:
            return int(self._db.execute(sql, args).rowcount)

    def _script(self, sql: str) -> None:
        """Statements without parameters (the schema)."""
        with self._lock:
            self._db.executescript(sql)

    # -- threads

    @staticmethod
    def _thread(row: Any, raw_values: bool = False) -> dict[str, Any]:
        values = row["values"]
        if values is not None:
            values = RawJSON(values) if raw_values else loads(values)
        return {
            "thread_id": row["thread_id"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "state_updated_at": row["state_updated_at"],
            "metadata": loads(row["metadata"]),
            "status": row["status"],
            "config": loads(row["config"]),
            "values": values,
            "interrupts": loads(row["interrupts"]),
            "error": None if row["error"] is None else loads(row["error"]),
        }

    def create_thread(self, thread_id: str, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """The new thread, or ``None`` if ``thread_id`` exists."""
        t = now()
        added = self._count(
            "INSERT INTO threads (thread_id, created_at, updated_at, state_updated_at, metadata,"
            " status, config) VALUES (?,?,?,?,?,?,?) ON CONFLICT (thread_id) DO NOTHING",
            (thread_id, t, t, t, dumps(metadata), "idle", "{}"),
        )
        if not added:
            return None
        # What the row now holds, without reading it back (a statement less per thread).
        return {"thread_id": thread_id, "created_at": t, "updated_at": t, "state_updated_at": t,
                "metadata": loads(dumps(metadata)), "status": "idle", "config": {},
                "values": None, "interrupts": {}, "error": None}  # fmt: skip

    def get_thread(
        self, thread_id: str, *, raw_values: bool = False, run_id: str | None = None
    ) -> dict[str, Any] | None:
        """The thread; with ``raw_values``, its ``values`` as the stored text (``RawJSON``:
        for a caller that answers them as they are). With ``run_id``, also whether the
        thread has that run (``"has_run"``), read by the same statement (``join`` needs
        both: a statement a run less)."""
        if run_id is None:
            rows = self._exec("SELECT * FROM threads WHERE thread_id = ?", (thread_id,))
            return self._thread(rows[0], raw_values) if rows else None
        rows = self._exec(
            "SELECT *, EXISTS (SELECT 1 FROM runs WHERE runs.run_id = ? AND runs.thread_id ="
            " threads.thread_id) AS has_run FROM threads WHERE thread_id = ?",
            (run_id, thread_id),
        )
        if not rows:
            return None
        thread = self._thread(rows[0], raw_values)
        thread["has_run"] = bool(rows[0]["has_run"])
        return thread

    def update_thread(self, thread_id: str, **fields: Any) -> None:
        """Sets the given columns (JSON ones encoded here, but ``RawJSON`` text, which is
        encoded already); ``updated_at`` is now."""
        sets, args = ["updated_at = ?"], [now()]
        for key, value in fields.items():
            if key in ("metadata", "config", "values", "interrupts", "error"):
                nothing = value is None and key in ("values", "error")  # SQL NULL
                if not nothing and type(value) is not RawJSON:
                    value = dumps(value)
            if key == "values":
                sets.append("state_updated_at = ?")
                args.append(args[0])
            sets.append(f'"{key}" = ?')
            args.append(value)
        self._exec(f"UPDATE threads SET {', '.join(sets)} WHERE thread_id = ?", (*args, thread_id))

    def search_threads(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        values: dict[str, Any] | None = None,
        status: str | None = None,
        ids: list[str] | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
    ) -> list[dict[str, Any]]:
        order = "DESC" if descending else "ASC"
        rows = self._exec(f"SELECT * FROM threads ORDER BY {sort_by} {order}, thread_id {order}")
        out = []
        wanted_ids = set(ids) if ids else None
        for row in rows:
            thread = self._thread(row)
            if wanted_ids is not None and thread["thread_id"] not in wanted_ids:
                continue
            if status and thread["status"] != status:
                continue
            if metadata and not _contains(thread["metadata"], metadata):
                continue
            if values and not _contains(thread["values"], values):
                continue
            out.append(thread)
        return out

    def delete_thread(self, thread_id: str) -> bool:
        self._count("DELETE FROM runs WHERE thread_id = ?", (thread_id,))
        return self._count("DELETE FROM threads WHERE thread_id = ?", (thread_id,)) > 0

    # -- runs

    @staticmethod
    def _run(row: Any) -> dict[str, Any]:
        return {
            "run_id": row["run_id"],
            "thread_id": row["thread_id"],
            "assistant_id": row["assistant_id"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "status": row["status"],
            "metadata": loads(row["metadata"]),
            "kwargs": loads(row["kwargs"]),
            "multitask_strategy": row["multitask_strategy"],
        }

    #: The columns a new run record fills (``run_values`` gives them).
    RUN_COLUMNS = ("run_id, thread_id, assistant_id, created_at, updated_at, status, metadata,"
                   " kwargs, multitask_strategy")  # fmt: skip

    @staticmethod
    def run_values(run: dict[str, Any]) -> tuple[Any, ...]:
        return (
            run["run_id"],
            run["thread_id"],
            run["assistant_id"],
            run["created_at"],
            run["updated_at"],
            run["status"],
            dumps(run["metadata"]),
            run["kwargs_json"],
            run["multitask_strategy"],
        )

    def put_run(self, run: dict[str, Any]) -> None:
        """A run this process starts now."""
        self._exec(
            f"INSERT INTO runs ({self.RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            self.run_values(run),
        )

    def set_run_status(self, run_id: str, status: str, at: str | None = None) -> str:
        """Sets the run's status, changed ``at`` (default: now); returns that time."""
        t = at or now()
        self._exec(
            "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?", (status, t, run_id)
        )
        return t

    def get_run(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        rows = self._exec(
            "SELECT * FROM runs WHERE run_id = ? AND thread_id = ?", (run_id, thread_id)
        )
        return self._run(rows[0]) if rows else None

    def list_runs(
        self, thread_id: str, limit: int, offset: int, status: str | None
    ) -> list[dict[str, Any]]:
        sql = "SELECT * FROM runs WHERE thread_id = ?"
        args: list[Any] = [thread_id]
        if status:
            sql += " AND status = ?"
            args.append(status)
        sql += " ORDER BY created_at DESC, run_id DESC LIMIT ? OFFSET ?"
        return [self._run(r) for r in self._exec(sql, (*args, limit, offset))]

    def has_unfinished(self, thread_id: str) -> bool:
        """Whether a run of the thread is pending or running (in any process)."""
        return bool(
            self._exec(
                "SELECT 1 FROM runs WHERE thread_id = ? AND status IN ('pending', 'running')"
                " LIMIT 1",
                (thread_id,),
            )
        )

    def unfinished_runs(self) -> list[dict[str, Any]]:
        rows = self._exec(
            "SELECT * FROM runs WHERE status IN ('pending', 'running') ORDER BY created_at"
        )
        return [self._run(r) for r in rows]

    def delete_run(self, run_id: str) -> bool:
        return self._count("DELETE FROM runs WHERE run_id = ?", (run_id,)) > 0
