"""The server's records in PostgreSQL, for several server processes sharing one
database: the same tables as ``db.Records`` (in a schema of their own), and the runs
table as the queue of background runs.

A run is claimed with ``SELECT ... FOR UPDATE SKIP LOCKED`` (two servers never get
the same row) and held under a lease its owner renews; a server that dies stops
renewing, and another one claims its runs once the lease has run out."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from typing import Any

from .db import _SCHEMA, Records, now

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: The queue's columns, added to ``runs``: the server that holds the run and until when.
_QUEUE_SCHEMA = """
ALTER TABLE runs ADD COLUMN IF NOT EXISTS owner TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS runs_unfinished ON runs (created_at)
    WHERE status IN ('pending', 'running');
CREATE TABLE IF NOT EXISTS stream_events (
    id BIGSERIAL PRIMARY KEY,
    run_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    event TEXT NOT NULL,
    data TEXT NOT NULL
);
"""
_UNFINISHED = "('pending', 'running')"


def check_schema(schema: str) -> str:
    if not _SCHEMA_NAME.match(schema):
        raise ValueError(
            f"PostgreSQL schema {schema!r} is not a plain lower-case name "
            "(letters, digits and _, at most 63): choose one such as 'ironloop_serve'"
        )
    return schema


class PgRecords(Records):
    """``Records`` on one autocommit psycopg connection (short statements under a lock,
    as the SQLite ones), plus the run queue. ``worker`` names this server process in
    the ``owner`` column; ``lease`` is how long a claim lives without renewal."""

    def __init__(self, url: str, schema: str, worker: str, lease: float) -> None:
        import psycopg
        from psycopg.rows import dict_row

        self.schema, self.worker, self.lease = check_schema(schema), worker, lease
        try:
            self._db = psycopg.connect(
                url, autocommit=True, row_factory=dict_row,
                options=f"-c search_path={schema}", application_name=f"ironloop-serve {worker}",
            )  # fmt: skip
        except psycopg.Error as e:
            raise ConnectionError(
                f"cannot connect to PostgreSQL for the server's records ({e}): check --postgres"
            ) from None
        self._lock = threading.RLock()
        with self._lock, self._db.transaction():
            # Servers starting together: one creates the tables, the others wait.
            self._db.execute("SELECT pg_advisory_xact_lock(hashtext('ironloop serve setup'))")
            self._db.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            self._db.execute(_SCHEMA)
            self._db.execute(_QUEUE_SCHEMA)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock, self._db.transaction():
            yield

    def _exec(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            cur = self._db.execute(sql.replace("?", "%s"), args)
            return cur.fetchall() if cur.description is not None else []

    def _count(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._lock:
            return int(self._db.execute(sql.replace("?", "%s"), args).rowcount)

    def _script(self, sql: str) -> None:
        """Schema statements, one server at a time (concurrent CREATE TABLE IF NOT
        EXISTS can fail in PostgreSQL)."""
        with self._lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(hashtext('ironloop serve setup'))")
            self._db.execute(sql)

    def _lease_sql(self) -> str:
        return f"now() + make_interval(secs => {float(self.lease)})"

    def put_run(self, run: dict[str, Any]) -> None:
        """A run this process starts now: it holds it from the start."""
        self._exec(
            f"INSERT INTO runs ({self.RUN_COLUMNS}, owner, lease_until)"
            f" VALUES (?,?,?,?,?,?,?,?,?, ?, {self._lease_sql()})",
            (*self.run_values(run), self.worker),
        )

    def enqueue_run(self, run: dict[str, Any]) -> None:
        """A background run, for whichever server claims it first."""
        self._exec(
            f"INSERT INTO runs ({self.RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            self.run_values(run),
        )

    def claim_runs(self, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` runs for this server, oldest first: pending ones nobody holds,
        and unfinished ones whose holder's lease ran out (it died). Only a thread's
        oldest unfinished run is taken, so a thread's runs go in order — but for one
        that interrupts or rolls back the run before it: it is taken at once, and the
        engine's run lease steers that run wherever it runs."""
        rows = self._exec(
            f"UPDATE runs r SET owner = ?, lease_until = {self._lease_sql()} FROM ("
            f" SELECT c.run_id FROM runs c WHERE c.status IN {_UNFINISHED}"
            "  AND (c.owner IS NULL OR c.lease_until < now())"
            "  AND (c.multitask_strategy IN ('interrupt', 'rollback')"
            "   OR NOT EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = c.thread_id"
            f"   AND o.status IN {_UNFINISHED} AND o.created_at < c.created_at))"
            "  ORDER BY c.created_at LIMIT ? FOR UPDATE SKIP LOCKED) AS claimed"
            " WHERE r.run_id = claimed.run_id RETURNING r.*",
            (self.worker, limit),
        )
        return [self._run(r) for r in rows]

    def renew_leases(self) -> int:
        return self._count(
            f"UPDATE runs SET lease_until = {self._lease_sql()} WHERE owner = ?"
            f" AND status IN {_UNFINISHED}",
            (self.worker,),
        )

    def release_runs(self) -> int:
        """Hands this server's unfinished runs over: their leases end now."""
        return self._count(
            "UPDATE runs SET lease_until = now() - interval '1 second' WHERE owner = ?"
            f" AND status IN {_UNFINISHED}",
            (self.worker,),
        )

    def runs_before(self, thread_id: str, created_at: str) -> list[dict[str, Any]]:
        """The thread's unfinished runs made before ``created_at``: ``run_id``,
        ``owner`` (``None``: nobody has claimed it)."""
        return self._exec(
            "SELECT run_id, owner FROM runs WHERE thread_id = ? AND created_at < ?"
            f" AND status IN {_UNFINISHED}",
            (thread_id, created_at),
        )

    def cancel_queued(self, run_id: str) -> bool:
        """Marks a run nobody has claimed yet as interrupted."""
        return (
            self._count(
                "UPDATE runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?"
                " AND status = 'pending' AND owner IS NULL",
                (now(), run_id),
            )
            > 0
        )

    def run_status(self, run_id: str) -> str | None:
        rows = self._exec("SELECT status FROM runs WHERE run_id = ?", (run_id,))
        return str(rows[0]["status"]) if rows else None

    def notify(self, channel: str, payload: str) -> None:
        self._exec("SELECT pg_notify(?, ?)", (channel, payload))

    def put_event(self, run_id: str, event: str, data: str) -> int:
        """A stream event too large for a notification; its id goes in one instead."""
        rows = self._exec(
            "INSERT INTO stream_events (run_id, event, data) VALUES (?, ?, ?) RETURNING id",
            (run_id, event, data),
        )
        return int(rows[0]["id"])

    def get_event(self, event_id: int) -> tuple[str, str] | None:
        rows = self._exec("SELECT event, data FROM stream_events WHERE id = ?", (event_id,))
        return (str(rows[0]["event"]), str(rows[0]["data"])) if rows else None

    def forget_events(self) -> None:
        self._exec("DELETE FROM stream_events WHERE created_at < now() - interval '10 minutes'")
