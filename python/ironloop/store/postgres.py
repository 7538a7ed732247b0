"""``PostgresStore``: LangGraph's PostgreSQL store, with its engine in Rust.

Items and their vectors are rows of two tables; a semantic search ranks the rows
under the namespace prefix by exact cosine similarity in Rust (the server needs no
extension).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from typing import Any, TypeVar

from ironloop._ironloop import _StoreCore
from ironloop.store._core import RustStore
from ironloop.store.base import IndexConfig, TTLConfig

__all__ = ["AsyncPostgresStore", "PostgresIndexConfig", "PostgresStore"]

_S = TypeVar("_S", bound="PostgresStore")


class PostgresIndexConfig(IndexConfig, total=False):
    """LangGraph's PostgreSQL index settings; ironloop ranks by exact cosine, so
    ``distance_type`` may only be ``"cosine"`` and ``ann_index_config`` is ignored."""

    distance_type: str
    ann_index_config: dict[str, Any]


def _dsn_of(conn: Any) -> str:
    """The connection string of ``conn``: a DSN, or a psycopg connection (whose
    parameters ironloop's own pool reuses)."""
    if isinstance(conn, str):
        return conn
    info = getattr(conn, "info", None)
    if info is not None and hasattr(info, "dsn"):
        dsn = info.dsn
        password = getattr(info, "password", None)
        return f"{dsn} password={password}" if password and "password=" not in dsn else dsn
    raise TypeError(
        f"PostgresStore takes a connection string or a psycopg connection, got "
        f"{type(conn).__name__}"
    )


class PostgresStore(RustStore):
    """Items in PostgreSQL, shared by every process that connects.

    ``PostgresStore("postgresql://user:pw@host/db")`` or LangGraph's
    ``PostgresStore.from_conn_string(dsn)`` (a context manager); call ``setup()``
    once per database.
    """

    _strict_filter_keys = True

    def __init__(
        self,
        conn: Any,
        *,
        pipe: Any = None,
        deserializer: Any = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        pool_size: int = 4,
    ) -> None:
        core = _StoreCore.postgres(_dsn_of(conn), index["dims"] if index else None, pool_size)
        super().__init__(core, index=index, ttl=ttl)

    @classmethod
    def _from_conn_string(
        cls: type[_S],
        conn_string: str,
        pool_config: dict[str, Any] | None,
        index: IndexConfig | None,
        ttl: TTLConfig | None,
    ) -> _S:
        """What both ``from_conn_string`` forms open (``pipeline`` needs nothing here:
        every batch is already one round of statements in one transaction)."""
        size = int((pool_config or {}).get("max_size", 4))
        return cls(conn_string, index=index, ttl=ttl, pool_size=size)

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: dict[str, Any] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> Iterator[PostgresStore]:
        with closing(cls._from_conn_string(conn_string, pool_config, index, ttl)) as store:
            yield store


class AsyncPostgresStore(PostgresStore):
    """LangGraph's async PostgreSQL store: the same store, opened with ``async
    with``."""

    @classmethod
    @asynccontextmanager  # type: ignore[override]
    async def from_conn_string(  # type: ignore[override]
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: dict[str, Any] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> AsyncIterator[AsyncPostgresStore]:
        with closing(cls._from_conn_string(conn_string, pool_config, index, ttl)) as store:
            yield store

    async def setup(self) -> None:  # type: ignore[override]
        await self.asetup()
