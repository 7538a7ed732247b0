"""``SqliteStore``: LangGraph's SQLite store, with its engine in Rust.

The items and their vectors live in one SQLite database (the SQLite built into
ironloop: no loadable extension is needed from Python's ``sqlite3``); a semantic
search ranks them by exact cosine similarity in Rust.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from ironloop._ironloop import _StoreCore
from ironloop.store._core import AsyncRustStore, RustStore
from ironloop.store.base import IndexConfig, TTLConfig

__all__ = ["AsyncSqliteStore", "SqliteIndexConfig", "SqliteStore"]


class SqliteIndexConfig(IndexConfig, total=False):
    """LangGraph's SQLite index settings: ``text_fields`` is its name for
    ``fields``; ``distance_type`` is accepted and must be ``"cosine"`` (what ironloop
    ranks by)."""

    text_fields: list[str] | None
    distance_type: str


def _path_of(conn: sqlite3.Connection | str | os.PathLike[str]) -> str:
    """The database file a connection (or path) names; ``:memory:`` for a private
    in-memory database (whose data ironloop's own connection cannot share)."""
    if isinstance(conn, (str, os.PathLike)):
        return os.fspath(conn)
    if isinstance(conn, sqlite3.Connection):
        for _, name, file in conn.execute("PRAGMA database_list").fetchall():
            if name == "main":
                return file or ":memory:"
        return ":memory:"
    raise TypeError(
        f"SqliteStore takes a database path or a sqlite3.Connection, got {type(conn).__name__}"
    )


class SqliteStore(RustStore):
    """Items in a SQLite file, kept across restarts; ``SqliteStore("memory.db")`` or
    ``SqliteStore(sqlite3.connect("memory.db"))`` (LangGraph's form: ironloop opens
    the same file with its own connection).

    Example:
        >>> with SqliteStore.from_conn_string(":memory:") as store:
        ...     store.setup()
        ...     store.put(("docs",), "a", {"text": "hello"})
        ...     store.get(("docs",), "a").value
        {'text': 'hello'}
    """

    _strict_filter_keys = True
    #: The schema's steps, in order, as the engine applies them when the store opens
    #: and in ``setup()`` (LangGraph's attribute; the engine runs its own list, so
    #: assigning this changes nothing).
    MIGRATIONS: Sequence[str] = tuple(_StoreCore.sqlite_migrations())

    def __init__(
        self,
        conn: sqlite3.Connection | str | os.PathLike[str],
        *,
        deserializer: Any = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.path = _path_of(conn)
        core = _StoreCore.sqlite(self.path, index["dims"] if index else None)
        super().__init__(core, index=index, ttl=ttl)

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> Iterator[SqliteStore]:
        """A store on the database at ``conn_string`` (a path, or ``:memory:``),
        closed when the block ends."""
        store = cls(conn_string, index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.close()


class AsyncSqliteStore(AsyncRustStore, SqliteStore):
    """LangGraph's async SQLite store: the same store, opened with ``async with``,
    whose sync methods refuse to block the event loop they are called on."""

    @classmethod
    @asynccontextmanager  # type: ignore[override]
    async def from_conn_string(  # type: ignore[override]
        cls,
        conn_string: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> AsyncIterator[AsyncSqliteStore]:
        store = cls(conn_string, index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.close()
