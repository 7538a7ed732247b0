"""The PostgreSQL server of the tests.

``IRONLOOP_TEST_POSTGRES_URL`` names it; ``scripts/test.sh`` starts a throwaway server
and sets it (``source scripts/postgres.sh`` does the same for a shell). Without it the
PostgreSQL tests fail, saying so: they are never skipped.

Each test gets a schema of its own (``temp_schema``), dropped at the end, so tests can
run against a shared server and leave nothing behind.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from ironloop import PostgresSaver


def postgres_url() -> str:
    url = os.environ.get("IRONLOOP_TEST_POSTGRES_URL", "")
    if not url:
        pytest.fail(
            "IRONLOOP_TEST_POSTGRES_URL is not set: the PostgresSaver tests need a server. "
            "Run `bash scripts/test.sh` (it starts a throwaway one), or `source "
            "scripts/postgres.sh` before pytest, or set it to postgresql://user@host:port/db "
            "of a server where the tests may create and drop schemas.",
            pytrace=False,
        )
    return url


def url_named(app: str, url: str | None = None) -> str:
    """The server's URL (or ``url``) with ``application_name`` set, to find a saver's
    connections."""
    url = url or postgres_url()
    if "://" in url:
        return f"{url}{'&' if '?' in url else '?'}application_name={app}"
    return f"{url} application_name={app}"


def admin() -> psycopg.Connection[Any]:
    """A plain connection (autocommit) for what the tests do behind the saver's back."""
    return psycopg.connect(postgres_url(), autocommit=True)


@contextmanager
def temp_schema() -> Iterator[str]:
    name = f"ironloop_pytest_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        with admin() as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def terminate(app: str, *, waiting_on_lock: bool = False) -> int:
    """Ends the server connections of ``application_name=app``; returns how many."""
    cond = " AND wait_event_type = 'Lock'" if waiting_on_lock else ""
    with admin() as c:
        row = c.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE application_name = %s{cond}",
            (app,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def sessions(app: str, *, waiting_on_lock: bool = False) -> int:
    """How many server connections of ``application_name=app`` there are."""
    cond = " AND wait_event_type = 'Lock'" if waiting_on_lock else ""
    with admin() as c:
        row = c.execute(
            f"SELECT count(*) FROM pg_stat_activity WHERE application_name = %s{cond}", (app,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def wait_sessions_gone(app: str, timeout: float = 30.0) -> None:
    """Waits until the server has ended every connection of ``application_name=app``.

    A client that dies (SIGKILL) does not end what its server connection is doing: the
    server runs the statements it had received, and commits them, before it notices
    the closed socket. So what a dead process saved is only known once its
    connections are gone."""
    deadline = time.monotonic() + timeout
    while (n := sessions(app)) > 0:
        assert time.monotonic() < deadline, f"{n} connections of {app!r} still open"
        time.sleep(0.01)


def new_saver(schema: str, **kw: Any) -> PostgresSaver:
    s = PostgresSaver(kw.pop("url", None) or postgres_url(), schema=schema, **kw)
    s.setup()
    return s
