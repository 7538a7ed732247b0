"""``PostgresStore``: LangGraph's PostgreSQL store, with its engine in Rust.

Items are rows of LangGraph's own ``store`` table (a database LangGraph wrote is read
as it stands). When the server has the ``pgvector`` extension, ``setup()`` creates it
and the vectors are rows of LangGraph's ``store_vectors``, ranked by the server with
pgvector's distance operators; otherwise they are rows of ironloop's own table, ranked
exactly in Rust. Either way a search ranks by the index's ``distance_type``, exactly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, closing, contextmanager
from typing import Any, TypeVar

from ironloop._ironloop import _StoreCore
from ironloop._params import params_of
from ironloop.store._core import AsyncRustStore, RustStore
from ironloop.store.base import IndexConfig, TTLConfig

__all__ = ["AsyncPostgresStore", "PostgresIndexConfig", "PostgresStore"]

_S = TypeVar("_S", bound="PostgresStore")


class PostgresIndexConfig(IndexConfig, total=False):
    """LangGraph's PostgreSQL index settings. ``distance_type``: ``"cosine"``
    (default), ``"inner_product"`` or ``"l2"``. ``ann_index_config`` as LangGraph's,
    used when the server has pgvector: ``vector_type`` ``"vector"`` (default) or
    ``"halfvec"`` (pgvector >= 0.7) is the column's type. Without ``kind`` (or with
    ``"flat"``) no index is built and every search ranks exactly (LangGraph's default
    is an HNSW index: measured, its recall of the exact top 10 was too low to be a
    default; see docs/persistence.md). ``kind="hnsw"`` (``m``, ``ef_construction``) or
    ``"ivfflat"`` (``lists``) builds that index, which the search then uses:
    approximate, so a result may miss an item the exact ranking has."""

    distance_type: str
    ann_index_config: dict[str, Any]


def _engine_args(index: IndexConfig | None) -> dict[str, Any]:
    """The engine's PostgreSQL arguments from LangGraph's index config:
    ``distance``, ``vector_type``, ``ann_kind`` and ``ann_params``. What is left out
    is left to the engine's defaults, and the engine checks the names."""
    config: dict[str, Any] = dict(index or {})
    ann: dict[str, Any] = dict(config.get("ann_index_config") or {})
    args: dict[str, Any] = {"distance": str(config.get("distance_type") or "cosine")}
    if "vector_type" in ann:
        args["vector_type"] = ann.pop("vector_type")
    args["ann_kind"] = ann.pop("kind", None)
    params: list[tuple[str, int]] = []
    for name, value in ann.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"ann_index_config {name}={value!r}: expected a positive integer")
        # LangGraph names IVFFlat's list count `nlist`, pgvector `lists`.
        params.append(("lists" if name == "nlist" else str(name), value))
    args["ann_params"] = params
    return args


def _psycopg() -> tuple[Any, Any]:
    """psycopg and its ``dict_row``, or an error saying how to get them."""
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError:
        raise ImportError(
            "PostgresStore._cursor() opens a psycopg connection: pip install 'psycopg[binary]'"
        ) from None
    return psycopg, dict_row


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


def _opened(
    cls: type[_S],
    conn_string: str,
    *,
    pipeline: bool = False,
    pool_config: dict[str, Any] | None = None,
    index: IndexConfig | None = None,
    ttl: TTLConfig | None = None,
) -> _S:
    """What both ``from_conn_string`` forms open, and their one parameter list
    (``pipeline`` needs nothing here: every batch is already one round of statements
    in one transaction)."""
    size = int((pool_config or {}).get("max_size", 4))
    return cls(conn_string, index=index, ttl=ttl, pool_size=size)


class PostgresStore(RustStore):
    """Items in PostgreSQL, shared by every process that connects.

    ``PostgresStore("postgresql://user:pw@host/db")`` or LangGraph's
    ``PostgresStore.from_conn_string(dsn)`` (a context manager); call ``setup()``
    once per database.
    """

    _strict_filter_keys = True
    _distances = ("cosine", "inner_product", "l2")
    #: The schema's steps, in order, as the engine applies them in ``setup()`` and
    #: records them in ``store_migrations`` (LangGraph's attribute; the engine runs its
    #: own list, so assigning this changes nothing).
    MIGRATIONS: Sequence[str] = tuple(_StoreCore.postgres_migrations())

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
        self._dsn = _dsn_of(conn)
        core = _StoreCore.postgres(
            self._dsn, index["dims"] if index else None, pool_size, **_engine_args(index)
        )
        super().__init__(core, index=index, ttl=ttl)

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
        """LangGraph's ``_cursor()``: a psycopg cursor (rows as dicts, autocommit) on
        the store's database, for SQL the store's API does not offer. It is a
        connection of its own, closed when the block ends (the store's pool is in
        Rust); needs ``psycopg``."""
        psycopg, dict_row = _psycopg()
        with (
            psycopg.connect(self._dsn, autocommit=True) as conn,
            conn.cursor(row_factory=dict_row) as cur,
        ):
            yield cur

    @classmethod
    @contextmanager
    @params_of(_opened)
    def from_conn_string(cls, *args: Any, **kwargs: Any) -> Iterator[PostgresStore]:
        with closing(_opened(cls, *args, **kwargs)) as store:
            yield store


class AsyncPostgresStore(AsyncRustStore, PostgresStore):
    """LangGraph's async PostgreSQL store: the same store, opened with ``async
    with``, whose sync methods refuse to block the event loop they are called on."""

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[Any]:  # type: ignore[override]
        """LangGraph's async ``_cursor()``: an async psycopg cursor (rows as dicts,
        autocommit) on a connection of its own, closed when the block ends."""
        psycopg, dict_row = _psycopg()
        async with (
            await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn,
            conn.cursor(row_factory=dict_row) as cur,
        ):
            yield cur

    @classmethod
    @asynccontextmanager
    @params_of(_opened)
    async def from_conn_string(  # type: ignore[override]
        cls, *args: Any, **kwargs: Any
    ) -> AsyncIterator[AsyncPostgresStore]:
        with closing(_opened(cls, *args, **kwargs)) as store:
            yield store
