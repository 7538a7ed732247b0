"""``PostgresStore`` as LangGraph's PostgreSQL store: its schema (a database LangGraph
wrote reads as it stands), ``MIGRATIONS``, ``_cursor()``, the three ``distance_type``
rankings and a pool that lets the database go after ``close()``.

Each case runs in a schema or a database of its own on the tests' server
(``IRONLOOP_TEST_POSTGRES_URL``).
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pg_support import admin, postgres_url, temp_schema

from ironloop.store import InMemoryStore, PostgresStore, SqliteStore
from ironloop.store.postgres import AsyncPostgresStore

DIMS = 3


def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic vectors of different lengths: ``"x y z"`` reads as numbers."""
    return [[float(x) for x in t.split()] for t in texts]


def dsn_in(schema: str) -> str:
    with admin() as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    url = postgres_url()
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def dsn() -> Iterator[str]:
    with temp_schema() as schema:
        yield dsn_in(schema)


# LangGraph's own DDL for its `store` table (langgraph-checkpoint-postgres 3.2.0's
# MIGRATIONS, `ttl_minutes INT` as it ships), and a row as it writes them.
LANGGRAPH_SCHEMA = [
    "CREATE TABLE store (prefix text NOT NULL, key text NOT NULL, value jsonb NOT NULL, "
    "created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP, "
    "updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP, "
    "PRIMARY KEY (prefix, key))",
    "ALTER TABLE store ADD COLUMN expires_at TIMESTAMP WITH TIME ZONE, ADD COLUMN ttl_minutes INT",
    "CREATE TABLE store_migrations (v INTEGER PRIMARY KEY)",
    "INSERT INTO store_migrations VALUES (0), (1), (2), (3)",
    "INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES "
    "('users.42', 'prefs', '{\"theme\": \"dark\"}', '2025-01-02 03:04:05+00', "
    "'2025-01-02 03:04:05+00')",
]


@contextmanager
def schema_with(statements: list[str]) -> Iterator[str]:
    """A schema of its own holding what ``statements`` make: its connection string."""
    with temp_schema() as schema:
        dsn = dsn_in(schema)
        with admin() as c:
            c.execute(f'SET search_path TO "{schema}"')
            for statement in statements:
                c.execute(statement)
        yield dsn


def test_a_database_langgraph_wrote_is_read_and_written_as_it_stands() -> None:
    with schema_with(LANGGRAPH_SCHEMA) as dsn, PostgresStore.from_conn_string(dsn) as store:
        store.setup()
        item = store.get(("users", "42"), "prefs")
        assert item is not None and item.value == {"theme": "dark"}
        assert item.created_at.isoformat() == "2025-01-02T03:04:05+00:00"
        # LangGraph's INT column takes ironloop's TTL (whole minutes there).
        store.put(("users", "42"), "mood", {"now": "calm"}, ttl=5)
        assert [i.key for i in store.search(("users",))] == ["mood", "prefs"]
        with store._cursor() as cur:
            cur.execute(
                "SELECT ttl_minutes, expires_at > now() AS later FROM store WHERE key = 'mood'"
            )
            assert cur.fetchone() == {"ttl_minutes": 5, "later": True}
            cur.execute("SELECT max(v) AS v FROM store_migrations")
            assert cur.fetchone()["v"] == len(PostgresStore.MIGRATIONS) - 1


def test_migrations_are_the_steps_setup_applies_and_may_run_again(dsn: str) -> None:
    assert PostgresStore.MIGRATIONS[0].startswith("CREATE TABLE IF NOT EXISTS store (")
    assert all(
        m.split()[0] in ("CREATE", "ALTER", "INSERT", "DO") for m in PostgresStore.MIGRATIONS
    )
    assert SqliteStore.MIGRATIONS[0].startswith("CREATE TABLE IF NOT EXISTS ironloop_store")
    with PostgresStore.from_conn_string(dsn) as store:
        store.put(("a",), "k", {"v": 1})
        with store._cursor() as cur:
            cur.execute("DROP TABLE store_migrations")
        store.setup()  # every step again: each is idempotent
        assert store.get(("a",), "k").value == {"v": 1}  # type: ignore[union-attr]


# The tables an earlier ironloop made (its own `ironloop_store`, text values and epoch
# seconds), with an item and its vector.
EARLIER_IRONLOOP_SCHEMA = [
    'CREATE TABLE ironloop_store (prefix TEXT COLLATE "C" NOT NULL, key TEXT NOT NULL, '
    "value TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
    "updated_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION, "
    "ttl_minutes DOUBLE PRECISION, PRIMARY KEY (prefix, key))",
    'CREATE TABLE ironloop_store_vectors (prefix TEXT COLLATE "C" NOT NULL, '
    "key TEXT NOT NULL, field TEXT NOT NULL, embedding BYTEA NOT NULL, "
    "PRIMARY KEY (prefix, key, field))",
    "INSERT INTO ironloop_store VALUES ('users.42', 'prefs', '{\"theme\": \"dark\"}', "
    "1735787045.0, 1735787045.0, NULL, NULL)",
]


def test_items_an_earlier_ironloop_stored_move_into_langgraphs_table() -> None:
    with (
        schema_with(EARLIER_IRONLOOP_SCHEMA) as dsn,
        PostgresStore.from_conn_string(dsn) as store,
    ):
        store.setup()
        item = store.get(("users", "42"), "prefs")
        assert item is not None and item.value == {"theme": "dark"}
        assert item.created_at.isoformat() == "2025-01-02T03:04:05+00:00"
        with store._cursor() as cur:
            cur.execute("SELECT count(*) AS n FROM ironloop_store_copied_to_store")
            assert cur.fetchone()["n"] == 1  # kept, renamed: copied once, nothing lost
        store.setup()
        assert [i.key for i in store.search(("users",))] == ["prefs"]


def test_sql_against_langgraphs_columns_means_the_same(dsn: str) -> None:
    """What LangGraph's tests do behind the store's back: an expiry moved into the past
    hides the item; ``updated_at`` moved orders a listing."""
    with PostgresStore.from_conn_string(dsn) as store:
        for k in ("a", "b", "c"):
            store.put(("p",), k, {"k": k}, ttl=10)
        with store._cursor() as cur:
            cur.execute("UPDATE store SET expires_at = NOW() - INTERVAL '1 minute' WHERE key = 'b'")
            for key, secs in (("a", 3), ("c", 1)):
                cur.execute(
                    "UPDATE store SET updated_at = NOW() - (%s * INTERVAL '1 second') "
                    "WHERE key = %s",
                    (secs, key),
                )
        assert store.get(("p",), "b") is None
        assert [i.key for i in store.search(("p",))] == ["c", "a"]
        assert store.sweep_ttl() == 1


@pytest.mark.parametrize(
    ("distance", "best", "score"),
    [
        ("cosine", "short", 1.0),  # same direction as the query
        ("inner_product", "long", 10.0),  # the largest dot product
        ("l2", "near", -math.sqrt(0.1**2 + 0.3**2)),  # the nearest point
    ],
)
def test_each_distance_type_ranks_and_scores_as_langgraphs(
    dsn: str, distance: str, best: str, score: float
) -> None:
    index = {"dims": DIMS, "embed": embed, "fields": ["v"], "distance_type": distance}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.put(("d",), "short", {"v": "0.1 0 0"})
        store.put(("d",), "near", {"v": "0.9 0.3 0"})
        store.put(("d",), "long", {"v": "10 10 0"})
        hits = store.search(("d",), query="1 0 0", limit=3)
        assert hits[0].key == best
        assert hits[0].score == pytest.approx(score, abs=1e-5)


def test_a_distance_or_vector_type_not_supported_says_what_is() -> None:
    index = {"dims": DIMS, "embed": embed, "distance_type": "l2"}
    with pytest.raises(ValueError, match="distance_type='l2' is not supported by InMemoryStore"):
        InMemoryStore(index=index)  # type: ignore[arg-type]
    bad = {"dims": DIMS, "embed": embed, "ann_index_config": {"vector_type": "bit"}}
    with pytest.raises(ValueError, match="vector_type='bit' is not supported"):
        PostgresStore(postgres_url(), index=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'cosine', 'inner_product' or 'l2'"):
        PostgresStore(postgres_url(), index={**index, "distance_type": "hamming"})  # type: ignore[typeddict-item]


def test_close_lets_the_database_be_dropped() -> None:
    """After ``close()`` neither the pool nor ``_cursor()`` holds a connection: the
    database can be dropped at once (PostgreSQL refuses while one is open)."""
    name = f"ironloop_pytest_{uuid.uuid4().hex[:12]}"
    with admin() as c:
        c.execute(f"CREATE DATABASE {name}")
    try:
        url = postgres_url().split("?", 1)[0].rsplit("/", 1)[0] + f"/{name}"
        ttl = {"default_ttl": 1.0, "sweep_interval_minutes": 0.001}
        with PostgresStore.from_conn_string(url, pool_config={"max_size": 10}, ttl=ttl) as s:  # type: ignore[arg-type]
            for i in range(20):
                s.put(("n",), str(i), {"i": i})
            with s._cursor() as cur:
                cur.execute("SELECT 1")
    finally:
        with admin() as c:
            c.execute(f"DROP DATABASE {name}")  # fails if a connection stayed


def test_the_async_store_refuses_sync_calls_on_its_loop(dsn: str) -> None:
    async def main() -> list[Any]:
        async with AsyncPostgresStore.from_conn_string(dsn) as store:
            with pytest.raises(asyncio.InvalidStateError, match="use the a… methods"):
                store.put(("x",), "k", {"v": 1})
            await store.aput(("x",), "k", {"v": 1})
            async with store._cursor() as cur:
                await cur.execute("SELECT value FROM store")
                return await cur.fetchall()

    assert asyncio.run(main()) == [{"value": {"v": 1}}]
