"""``PostgresStore`` on a server with pgvector: ``setup()`` finds the extension, the
vectors go to LangGraph's ``store_vectors`` table (a ``vector(dims)`` column) and a
search ranks exactly by default (no index: the Rust copy of that table), or with the
index asked for (``kind="hnsw"``: the server ranks, approximately), giving what the
exact search in Rust gives on a server without pgvector, whatever the
``distance_type``. A database LangGraph's own store wrote with pgvector is searched as
it stands, and what a LangGraph process writes later is seen.

Two servers: ``IRONLOOP_TEST_PGVECTOR_URL`` (``source scripts/pgvector.sh``: PostgreSQL
with pgvector, from the ``pgserver`` package) and ``IRONLOOP_TEST_POSTGRES_URL``
(``source scripts/postgres.sh``: Debian's, without it). Each case gets a database of
its own on each.
"""

from __future__ import annotations

import math
import os
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from pg_support import postgres_url

from ironloop.store import PostgresStore, PutOp

DIMS = 4


def pgvector_url() -> str:
    url = os.environ.get("IRONLOOP_TEST_PGVECTOR_URL", "")
    if not url:
        pytest.fail(
            "IRONLOOP_TEST_PGVECTOR_URL is not set: these tests need a PostgreSQL server "
            "with pgvector. Run `bash scripts/test.sh`, or `source scripts/pgvector.sh` "
            "before pytest, or set it to postgresql://user@host:port/db of such a server.",
            pytrace=False,
        )
    return url


@contextmanager
def database(server: str) -> Iterator[str]:
    """A new database on the server at ``server``: its URL; dropped after."""
    name = f"ironloop_pgv_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    try:
        yield server.split("?", 1)[0].rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as c:
            c.execute(f"DROP DATABASE {name} WITH (FORCE)")


def sql(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute(statement, params).fetchall()


def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic vectors: ``"1 2 0 -1"`` reads as numbers."""
    return [[float(x) for x in t.split()] for t in texts]


def vec(i: int) -> str:
    """An item's vector text, spread over the four dimensions (and a zero vector)."""
    if i == 7:
        return "0 0 0 0"
    return " ".join(str(round(math.sin((i + 1) * (d + 1.3)) * (1 + i % 5), 3)) for d in range(DIMS))


def fill(store: PostgresStore) -> None:
    """Items under two namespaces: two embedded fields each, some not indexed, some
    expired, one replaced and one deleted."""
    for i in range(40):
        ns = ("users", "a") if i % 2 else ("users", "b", "deep")
        value = {"title": vec(i), "body": vec(i + 100), "n": i, "kind": "odd" if i % 3 else "three"}
        store.put(ns, f"k{i}", value, index=False if i % 11 == 5 else None)
    store.put(("users", "a"), "k1", {"title": vec(3), "body": vec(4), "n": 1, "kind": "odd"})
    store.delete(("users", "b", "deep"), "k2")
    store.put(("users", "a"), "gone", {"title": vec(9), "body": vec(9), "n": 0}, ttl=0.0001)
    store.put(("other",), "x", {"title": vec(1), "body": vec(1), "n": 99})


def searches(store: PostgresStore) -> list[list[tuple[str, str, float | None]]]:
    queries: list[dict[str, Any]] = [
        {"query": vec(5)},
        {"query": vec(12), "limit": 5, "offset": 3},
        {"query": vec(20), "filter": {"kind": "three"}, "limit": 20},
        {"query": vec(30), "filter": {"n": {"$gt": 10}}, "limit": 4, "offset": 2},
        {"query": "0 0 0 0", "limit": 3},
        {"query": vec(33), "limit": 100},
    ]
    out = []
    for q in queries:
        for prefix in [("users",), ("users", "a"), ()]:
            hits = store.search(prefix, **q)
            out.append([("/".join(h.namespace), h.key, h.score) for h in hits])
    return out


def same(
    a: list[list[tuple[str, str, float | None]]], b: list[list[tuple[str, str, float | None]]]
) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert [(n, k) for n, k, _ in x] == [(n, k) for n, k, _ in y]
        for (_, _, s), (_, _, t) in zip(x, y, strict=True):
            assert (s is None) == (t is None)
            if s is not None and t is not None:
                assert s == pytest.approx(t, abs=1e-4)


@pytest.mark.parametrize(
    ("distance", "ann"),
    [("cosine", {}), ("cosine", {"kind": "flat"}), ("inner_product", {}), ("l2", {})],
)
def test_pgvector_ranks_as_the_exact_search_without_it(distance: str, ann: dict[str, Any]) -> None:
    # The default (no kind) and kind="flat" build no index: exact, so the same results
    # (an HNSW index's recall is test_an_hnsw_index_finds_what_the_exact_search_finds).
    index = {
        "dims": DIMS,
        "embed": embed,
        "fields": ["title", "body"],
        "distance_type": distance,
        "ann_index_config": ann,
    }
    results = {}
    with database(pgvector_url()) as with_pgvector, database(postgres_url()) as without:
        for url in (with_pgvector, without):
            with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
                store.setup()
                fill(store)
                time.sleep(0.05)  # the TTL item expires
                results[url] = searches(store)
        # The pgvector path was the one taken: the vectors are in LangGraph's table,
        # and none in ironloop's own; without pgvector there is no such table.
        assert sql(with_pgvector, "SELECT count(*) FROM store_vectors")[0][0] > 50
        assert sql(with_pgvector, "SELECT count(*) FROM ironloop_store_vectors")[0][0] == 0
        assert sql(without, "SELECT to_regclass('store_vectors')")[0][0] is None
        same(results[with_pgvector], results[without])
    first = results[with_pgvector][0]
    assert len(first) == 10 and all(s is not None for _, _, s in first)
    scores = [s for _, _, s in first]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def many(rng: random.Random, n: int, dims: int) -> list[str]:
    return [" ".join(str(round(rng.uniform(-1, 1), 4)) for _ in range(dims)) for _ in range(n)]


def fill_many(store: PostgresStore, vectors: list[str]) -> None:
    """Items ``i`` under ``("w", str(i % 3))``; the ones with ``i % 4 == 1`` expire at
    once, and ``tag`` is ``"rare"`` for one in 25, so that a filtered or expiring page
    needs more than the first window of candidates."""
    store.batch(
        [
            PutOp(
                ("w", str(i % 3)),
                f"k{i}",
                {"v": v, "i": i, "tag": "rare" if i % 25 == 0 else "common"},
                ttl=0.0001 if i % 4 == 1 else None,
            )
            for i, v in enumerate(vectors)
        ]
    )


MANY_QUERIES: list[dict[str, Any]] = [
    {"limit": 10},
    {"limit": 5, "offset": 7},
    {"limit": 6, "filter": {"tag": "rare"}},
    {"limit": 3, "offset": 2, "filter": {"tag": "rare", "i": {"$gt": 100}}},
    {"limit": 30, "filter": {"tag": "rare"}},
]


@pytest.mark.parametrize("distance", ["cosine", "l2"])
def test_filters_and_expiry_widen_the_window_to_the_exact_page(distance: str) -> None:
    """Most candidates fail the filter or have expired: the page is still the exact
    search's (kind="flat"), compared with the Rust path on a server without pgvector."""
    rng = random.Random(7)
    vectors, queries = many(rng, 600, 8), many(rng, 6, 8)
    index = {
        "dims": 8,
        "embed": embed,
        "fields": ["v"],
        "distance_type": distance,
        "ann_index_config": {"kind": "flat"},
    }
    results: dict[str, list[list[tuple[str, str, float | None]]]] = {}
    with database(pgvector_url()) as with_pgvector, database(postgres_url()) as without:
        for url in (with_pgvector, without):
            with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
                store.setup()
                fill_many(store, vectors)
                time.sleep(0.05)  # the TTL items expire
                results[url] = [
                    [("/".join(h.namespace), h.key, h.score) for h in hits]
                    for q in queries
                    for prefix in [("w",), ("w", "1"), ()]
                    for hits in [store.search(prefix, query=q, **kw) for kw in MANY_QUERIES]
                ]
    same(results[with_pgvector], results[without])
    pages = results[with_pgvector]
    # The filtered pages are full (24 rare items, 6 of them expired: 18 live; 6 under w/1).
    assert [len(p) for p in pages[:5]] == [10, 5, 6, 3, 18]
    assert all(int(k[1:]) % 4 != 1 for p in pages for _, k, _ in p)


def test_an_hnsw_index_finds_what_the_exact_search_finds() -> None:
    """An HNSW index (opt-in) is approximate: its pages are checked for recall against
    the default's (exact), filtered and expiring pages included."""
    rng = random.Random(11)
    vectors, queries = many(rng, 3000, 16), many(rng, 20, 16)
    base = {"dims": 16, "embed": embed, "fields": ["v"]}
    pages: dict[str, list[list[tuple[str, str, float | None]]]] = {}
    with database(pgvector_url()) as hnsw, database(pgvector_url()) as flat:
        for url, ann in ((hnsw, {"kind": "hnsw"}), (flat, {})):
            with PostgresStore.from_conn_string(
                url, index={**base, "ann_index_config": ann}
            ) as store:  # type: ignore[arg-type]
                store.setup()
                fill_many(store, vectors)
                time.sleep(0.05)
                pages[url] = [
                    [("/".join(h.namespace), h.key, h.score) for h in hits]
                    for q in queries
                    for hits in [store.search(("w",), query=q, **kw) for kw in MANY_QUERIES]
                ]
        (indexdef,) = sql(
            hnsw,
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'store_vectors' AND indexname = 'store_vectors_embedding_idx'",
        )[0]
        assert "USING hnsw" in indexdef
    found = wanted = 0
    for approx, exact in zip(pages[hnsw], pages[flat], strict=True):
        assert len(approx) == len(exact)  # widening fills the page as the exact one
        keys = {(n, k) for n, k, _ in exact}
        found += sum((n, k) in keys for n, k, _ in approx)
        wanted += len(exact)
        scores = [s for _, _, s in approx]
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        assert all(int(k[1:]) % 4 != 1 for _, k, _ in approx)
    assert found / wanted >= 0.95, f"recall {found}/{wanted}"


def test_setup_makes_langgraphs_vector_tables_and_the_index_asked_for() -> None:
    hnsw = {"kind": "hnsw", "m": 8, "ef_construction": 32}
    with database(pgvector_url()) as url:
        index = {"dims": DIMS, "embed": embed, "fields": ["title"]}
        flat = {**index, "ann_index_config": {"kind": "flat"}}
        with PostgresStore.from_conn_string(url, index=flat) as store:  # type: ignore[arg-type]
            store.setup()
        column = sql(
            url,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'store_vectors'::regclass AND attname = 'embedding'",
        )
        assert column == [(f"vector({DIMS})",)]
        assert sql(url, "SELECT v FROM vector_migrations ORDER BY v") == [(0,), (1,)]
        assert (
            sql(
                url,
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'store_vectors' "
                "AND indexname = 'store_vectors_embedding_idx'",
            )
            == []
        )
        # A later setup() with an index builds it (LangGraph's third step).
        with PostgresStore.from_conn_string(
            url, index={**index, "ann_index_config": hnsw}
        ) as store:  # type: ignore[arg-type]
            store.setup()
        (indexdef,) = sql(
            url, "SELECT indexdef FROM pg_indexes WHERE indexname = 'store_vectors_embedding_idx'"
        )[0]
        assert "USING hnsw (embedding vector_cosine_ops)" in indexdef
        assert "m='8'" in indexdef and "ef_construction='32'" in indexdef
        assert sql(url, "SELECT v FROM vector_migrations ORDER BY v") == [(0,), (1,), (2,)]
    # No kind: no index (LangGraph's setup() would build an HNSW one: approximate),
    # and a search is exact.
    with database(pgvector_url()) as url:
        with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
            store.setup()
        assert sql(url, "SELECT v FROM vector_migrations ORDER BY v") == [(0,), (1,)]
        assert (
            sql(
                url,
                "SELECT 1 FROM pg_indexes WHERE tablename = 'store_vectors' "
                "AND indexname = 'store_vectors_embedding_idx'",
            )
            == []
        )
    # kind="hnsw" with pgvector's own settings.
    with database(pgvector_url()) as url:
        hnsw_only = {**index, "ann_index_config": {"kind": "hnsw"}}
        with PostgresStore.from_conn_string(url, index=hnsw_only) as store:  # type: ignore[arg-type]
            store.setup()
        (indexdef,) = sql(
            url, "SELECT indexdef FROM pg_indexes WHERE indexname = 'store_vectors_embedding_idx'"
        )[0]
        assert indexdef.endswith("USING hnsw (embedding vector_cosine_ops)")


@pytest.mark.parametrize("ann", [{}, {"kind": "hnsw"}])
def test_a_zero_vector_is_found_with_score_zero_as_langgraphs_in_memory_store(
    ann: dict[str, Any],
) -> None:
    """pgvector's cosine distance to a zero vector is NaN; the default exact search
    ranks it as LangGraph's ``InMemoryStore`` does: similarity 0, after every positive
    match and before every negative one. An HNSW index leaves zero vectors out (as
    LangGraph's does): when its answer runs short of the page, the exact scan that
    completes it finds them the same way."""
    with database(pgvector_url()) as url:
        index = {"dims": 2, "embed": embed, "fields": ["v"], "ann_index_config": ann}
        with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
            store.put(("z",), "same", {"v": "1 0"})
            store.put(("z",), "zero", {"v": "0 0"})
            store.put(("z",), "opposite", {"v": "-1 0"})
            hits = store.search(("z",), query="1 0.1")
            assert [h.key for h in hits] == ["same", "zero", "opposite"]
            assert hits[1].score == 0.0


def test_deleting_or_unindexing_an_item_removes_its_vectors() -> None:
    with database(pgvector_url()) as url:
        index = {"dims": DIMS, "embed": embed, "fields": ["title"]}
        with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
            store.put(("n",), "a", {"title": vec(1)})
            store.put(("n",), "b", {"title": vec(2)})
            store.put(("n",), "c", {"title": vec(3)})
            store.delete(("n",), "a")
            store.put(("n",), "b", {"title": vec(2)}, index=False)
            keys = sql(url, "SELECT key FROM store_vectors ORDER BY key")
            assert keys == [("c",)]
            hits = store.search(("n",), query=vec(2))
            assert [(h.key, h.score is None) for h in hits] == [("c", False), ("b", True)]


def test_a_database_langgraph_wrote_with_pgvector_is_searched_as_it_stands() -> None:
    """LangGraph's own ``PostgresStore`` (langgraph-checkpoint-postgres) sets up and
    writes the database; ironloop's reads its vectors and ranks as LangGraph does."""
    from langgraph.store.postgres import PostgresStore as LangGraphStore

    index = {"dims": DIMS, "embed": embed, "fields": ["title"]}
    with database(pgvector_url()) as url:
        with LangGraphStore.from_conn_string(url, index=index) as theirs:  # type: ignore[arg-type]
            theirs.setup()
            # No zero vector: LangGraph's cosine score for it is NaN, ranked first.
            for i in [i for i in range(12) if i != 7]:
                theirs.put(("docs",), f"d{i}", {"title": vec(i), "i": i})
            expected = [(h.key, h.score) for h in theirs.search(("docs",), query=vec(4), limit=5)]
        with PostgresStore.from_conn_string(url, index=index) as ours:  # type: ignore[arg-type]
            ours.setup()
            got = [(h.key, h.score) for h in ours.search(("docs",), query=vec(4), limit=5)]
            ours.put(("docs",), "new", {"title": vec(4), "i": 99})
            assert ours.search(("docs",), query="1 1 1 1", limit=1)[0].key != "later"
            # A LangGraph process writes while ours holds its copy of the vectors:
            # the next search sees the new item (store_vectors' trigger).
            with LangGraphStore.from_conn_string(url, index=index) as theirs:  # type: ignore[arg-type]
                theirs.put(("docs",), "later", {"title": "9 9 9 9", "i": 100})
            (best,) = ours.search(("docs",), query="1 1 1 1", limit=1)
            assert (best.key, best.score) == ("later", pytest.approx(1.0, abs=1e-6))
        assert [k for k, _ in got] == [k for k, _ in expected]
        for (_, s), (_, t) in zip(got, expected, strict=True):
            assert s == pytest.approx(t, abs=1e-5)
        # And LangGraph's store finds what ironloop wrote.
        with LangGraphStore.from_conn_string(url, index=index) as theirs:  # type: ignore[arg-type]
            assert theirs.search(("docs",), query=vec(4), limit=1)[0].key in {"new", "d4"}
            assert theirs.get(("docs",), "new") is not None


def test_an_index_setting_not_supported_says_what_is() -> None:
    index = {"dims": DIMS, "embed": embed}
    with pytest.raises(ValueError, match="kind='diskann' is not supported"):
        PostgresStore(pgvector_url(), index={**index, "ann_index_config": {"kind": "diskann"}})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="'lists' is not a setting of kind='hnsw'"):
        PostgresStore(
            pgvector_url(), index={**index, "ann_index_config": {"kind": "hnsw", "lists": 4}}
        )  # type: ignore[typeddict-item]
    # LangGraph's HNSW settings without a kind: the default builds no index, so it says
    # how to ask for one.
    with pytest.raises(ValueError, match="no index is built and search is exact; add kind='hnsw'"):
        PostgresStore(pgvector_url(), index={**index, "ann_index_config": {"m": 16}})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="ef_construction=0: expected a positive integer"):
        PostgresStore(
            pgvector_url(),
            index={**index, "ann_index_config": {"kind": "hnsw", "ef_construction": 0}},
        )  # type: ignore[typeddict-item]


def test_halfvec_is_the_column_where_pgvector_has_it_else_vector() -> None:
    """``vector_type="halfvec"`` needs pgvector >= 0.7; on an older one the column is
    ``vector`` (32-bit floats keep all a half float would) and the store works."""
    with database(pgvector_url()) as url:
        has_halfvec = bool(
            sql(
                url,
                "SELECT 1 FROM pg_available_extension_versions WHERE name = 'vector' "
                "AND string_to_array(version, '.')::int[] >= '{0,7}'",
            )
        )
        ann = {"vector_type": "halfvec"}
        index = {"dims": DIMS, "embed": embed, "fields": ["title"], "ann_index_config": ann}
        with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
            store.put(("n",), "a", {"title": vec(1)})
            store.put(("n",), "b", {"title": vec(2)})
            assert [h.key for h in store.search(("n",), query=vec(2))] == ["b", "a"]
        column = sql(
            url,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'store_vectors'::regclass AND attname = 'embedding'",
        )
        assert column == [(f"{'halfvec' if has_halfvec else 'vector'}({DIMS})",)]
