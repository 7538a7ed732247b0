"""ironloop.store: LangGraph's store API on the three backends (in memory, SQLite,
PostgreSQL), semantic search ranked by exact cosine, TTLs, the Rust embeddings
client against a loopback server, and the errors a user gets for bad input.

The PostgreSQL cases run on the tests' server (``IRONLOOP_TEST_POSTGRES_URL``), each
in a schema of its own.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_support import admin, postgres_url, temp_schema
from test_models_http import Loopback

from ironloop.errors import ModelError, StoreError
from ironloop.store import (
    GetOp,
    InMemoryStore,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    OpenAIEmbeddings,
    PostgresStore,
    PutOp,
    SearchItem,
    SearchOp,
    SqliteStore,
)

VOCAB = ["cat", "dog", "fish", "red", "blue", "green", "tea", "coffee"]
DIMS = len(VOCAB)


def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic: one dimension per word of ``VOCAB`` (counts), 0.01 elsewhere."""
    out = []
    for t in texts:
        words = t.lower().replace('"', " ").replace(",", " ").split()
        out.append([words.count(w) + 0.01 for w in VOCAB])
    return out


def cosine(a: list[float], b: list[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / (na * nb)


def pg_dsn(schema: str) -> str:
    with admin() as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    url = postgres_url()
    opt = f"options=-csearch_path%3D{schema}"
    return f"{url}{'&' if '?' in url else '?'}{opt}"


def make(kind: str, tmp_path: Path, schema: str, **kw: Any) -> Any:
    if kind == "memory":
        return InMemoryStore(**kw)
    if kind == "sqlite":
        return SqliteStore(str(tmp_path / "store.db"), **kw)
    return PostgresStore(pg_dsn(schema), **kw)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_store(kind: str, tmp_path: Path) -> Iterator[Any]:
    """A factory: ``new_store(index=..., ttl=...)``; every store it made is closed."""
    made: list[Any] = []
    with temp_schema() as schema:
        n = 0

        def factory(**kw: Any) -> Any:
            nonlocal n
            n += 1
            store = make(kind, tmp_path, f"{schema}_{n}" if kind == "postgres" else "", **kw)
            made.append(store)
            return store

        yield factory
        for s in made:
            s.close()
        if kind == "postgres":
            with admin() as c:
                for i in range(1, n + 1):
                    c.execute(f'DROP SCHEMA IF EXISTS "{schema}_{i}" CASCADE')


# --------------------------------------------------------------------------- basic API


def test_put_get_delete_and_item_shape(new_store: Any) -> None:
    store = new_store()
    store.put(("users", "1"), "prefs", {"theme": "dark", "n": 1})
    item = store.get(("users", "1"), "prefs")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (
        ("users", "1"),
        "prefs",
        {"theme": "dark", "n": 1},
    )
    assert item.created_at.tzinfo is not None and item.created_at == item.updated_at
    first = item.created_at
    time.sleep(0.01)
    store.put(("users", "1"), "prefs", {"theme": "light"})
    again = store.get(("users", "1"), "prefs")
    assert again.value == {"theme": "light"}
    assert again.created_at == first and again.updated_at > first
    assert item.dict()["namespace"] == ["users", "1"]
    store.delete(("users", "1"), "prefs")
    assert store.get(("users", "1"), "prefs") is None
    store.delete(("users", "1"), "never-there")


def test_search_prefix_filter_operators_and_pages(new_store: Any) -> None:
    store = new_store()
    for i in range(12):
        store.put(
            ("docs", "a" if i % 2 else "b"),
            f"k{i}",
            {"i": i, "tag": "odd" if i % 2 else "even", "meta": {"v": i % 3}},
        )
    store.put(("docsx",), "other", {"i": 100})
    assert len(store.search(("docs",), limit=100)) == 12
    assert {i.key for i in store.search(("docs", "a"), limit=100)} == {
        f"k{i}" for i in range(1, 12, 2)
    }
    assert store.search((), limit=100, filter={"i": 100})[0].key == "other"
    got = store.search(("docs",), filter={"i": {"$gte": 3, "$lt": 6}}, limit=100)
    assert sorted(i.value["i"] for i in got) == [3, 4, 5]
    got = store.search(("docs",), filter={"tag": "even", "meta": {"v": 0}}, limit=100)
    assert sorted(i.value["i"] for i in got) == [0, 6]
    got = store.search(("docs",), filter={"tag": {"$ne": "even"}}, limit=100)
    assert len(got) == 6
    pages = [store.search(("docs",), limit=5, offset=o) for o in (0, 5, 10)]
    assert [len(p) for p in pages] == [5, 5, 2]
    keys = [i.key for p in pages for i in p]
    assert sorted(keys) == sorted(f"k{i}" for i in range(12))
    assert all(isinstance(i, SearchItem) and i.score is None for i in pages[0])
    with pytest.raises(ValueError, match=r"\$gte"):
        store.search(("docs",), filter={"i": {"$regex": "x"}})


def test_list_namespaces_prefix_suffix_depth_and_pages(new_store: Any) -> None:
    store = new_store()
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "d")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "x"),
        ("z", "b", "d"),
    ]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x")]
    assert store.list_namespaces(suffix=("d",)) == [("a", "b", "d"), ("z", "b", "d")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("z", "b", "d"),
    ]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x")]


def test_batch_runs_ops_in_order(new_store: Any) -> None:
    store = new_store()
    out = store.batch(
        [
            PutOp(("t",), "a", {"x": 1}),
            GetOp(("t",), "a"),
            SearchOp(("t",), filter={"x": 1}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("t",)),)),
            PutOp(("t",), "a", None),
            GetOp(("t",), "a"),
        ]
    )
    assert out[0] is None and out[1].value == {"x": 1}
    assert [i.key for i in out[2]] == ["a"] and out[3] == [("t",)]
    assert out[4] is None and out[5] is None


def test_async_forms(new_store: Any) -> None:
    store = new_store()

    async def main() -> None:
        await store.aput(("a",), "k", {"v": 1})
        assert (await store.aget(("a",), "k")).value == {"v": 1}
        assert [i.key for i in await store.asearch(("a",))] == ["k"]
        assert await store.alist_namespaces() == [("a",)]
        res = await store.abatch([GetOp(("a",), "k"), PutOp(("a",), "j", {"v": 2})])
        assert res[0].value == {"v": 1} and res[1] is None
        await store.adelete(("a",), "k")
        assert await store.aget(("a",), "k") is None

    asyncio.run(main())


def test_bad_input_is_refused_with_what_to_do(new_store: Any) -> None:
    store = new_store()
    with pytest.raises(InvalidNamespaceError, match="periods"):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError, match="empty"):
        store.put(("a", ""), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError, match="empty"):
        store.put((), "k", {"v": 1})
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        store.put(("a",), "k", {"when": object()})
    with pytest.raises(TypeError, match="dicts"):
        store.put(("a",), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    assert store.search(("a",)) == []


# --------------------------------------------------------------------------- vectors


DOCS = {
    "d1": "cat cat dog",
    "d2": "red blue green",
    "d3": "tea coffee tea",
    "d4": "dog fish",
    "d5": "coffee",
    "d6": "cat red",
}


def test_semantic_search_ranks_by_exact_cosine(new_store: Any) -> None:
    store = new_store(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    for k, t in DOCS.items():
        store.put(("docs",), k, {"text": t, "n": int(k[1])})
    store.put(("docs",), "plain", {"text": "cat cat cat"}, index=False)
    q = "cat dog"
    want = sorted(DOCS, key=lambda k: -cosine(embed([q])[0], embed([DOCS[k]])[0]))
    got = store.search(("docs",), query=q, limit=len(DOCS))
    assert [i.key for i in got] == want
    for item in got:
        assert item.score == pytest.approx(
            cosine(embed([q])[0], embed([DOCS[item.key]])[0]), abs=1e-5
        )
    page = store.search(("docs",), query=q, limit=2, offset=2)
    assert [i.key for i in page] == want[2:4]
    # The unindexed item comes after the ranked ones, without a score.
    everything = store.search(("docs",), query=q, limit=20)
    assert everything[-1].key == "plain" and everything[-1].score is None
    filtered = store.search(("docs",), query=q, filter={"n": {"$gt": 3}}, limit=10)
    assert [i.key for i in filtered] == [k for k in want if int(k[1]) > 3]


def test_per_put_index_fields_and_list_paths(new_store: Any) -> None:
    store = new_store(index={"dims": DIMS, "embed": embed})
    store.put(("n",), "a", {"title": "coffee", "body": "cat"}, index=["title"])
    store.put(("n",), "b", {"parts": [{"t": "fish"}, {"t": "tea"}]}, index=["parts[*].t"])
    assert store.search(("n",), query="coffee", limit=1)[0].key == "a"
    # Each list element is its own vector: the best one matches.
    best = store.search(("n",), query="tea", limit=2)
    assert best[0].key == "b" and best[0].score == pytest.approx(
        cosine(embed(["tea"])[0], embed(["tea"])[0]), abs=1e-5
    )


def test_async_embed_function_and_langchain_embeddings(tmp_path: Path) -> None:
    lc = pytest.importorskip("langchain_core.embeddings")

    class Emb(lc.Embeddings):  # type: ignore[misc, name-defined]
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0]

    async def aembed(texts: list[str]) -> list[list[float]]:
        return embed(texts)

    async def main() -> None:
        for e in (Emb(), aembed):
            store = SqliteStore(str(tmp_path / f"{id(e)}.db"), index={"dims": DIMS, "embed": e})
            await store.aput(("a",), "x", {"text": "tea"})
            await store.aput(("a",), "y", {"text": "dog"})
            assert [i.key for i in await store.asearch(("a",), query="dog")] == ["y", "x"]
            store.close()

    asyncio.run(main())
    store = InMemoryStore(index={"dims": DIMS, "embed": aembed})
    with pytest.raises(ValueError, match="async"):
        store.put(("a",), "x", {"text": "tea"})


def test_wrong_dims_and_failing_embed_store_nothing(new_store: Any) -> None:
    store = new_store(index={"dims": DIMS + 1, "embed": embed})
    with pytest.raises(ValueError, match=r"has 8 dimensions.*dims=9"):
        store.put(("a",), "k", {"text": "cat"})
    assert store.get(("a",), "k") is None

    def broken(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedding service down")

    store = new_store(index={"dims": DIMS, "embed": broken})
    with pytest.raises(ConnectionError):
        store.batch(
            [PutOp(("a",), "one", {"v": 1}, index=False), PutOp(("a",), "two", {"text": "cat"})]
        )
    assert store.get(("a",), "one") is None and store.get(("a",), "two") is None


def test_embed_results_of_other_shapes(tmp_path: Path) -> None:
    from array import array

    def as_arrays(texts: list[str]) -> list[Any]:
        return [array("d", v) for v in embed(texts)]

    store = InMemoryStore(index={"dims": DIMS, "embed": as_arrays})
    store.put(("a",), "x", {"text": "tea"})
    store.put(("a",), "y", {"text": "dog"})
    assert [i.key for i in store.search(("a",), query="dog")] == ["y", "x"]

    bad = InMemoryStore(index={"dims": DIMS, "embed": lambda texts: [["x"] * DIMS for _ in texts]})
    with pytest.raises(TypeError, match="sequence of numbers"):
        bad.put(("a",), "x", {"text": "tea"})
    short = InMemoryStore(index={"dims": DIMS, "embed": lambda texts: embed(texts)[:-1]})
    with pytest.raises(ValueError, match="1 texts"):
        short.put(("a",), "x", {"text": "tea"})
    assert short.get(("a",), "x") is None


# --------------------------------------------------------------------------- TTL


def test_expired_items_are_never_returned_and_are_swept(new_store: Any) -> None:
    store = new_store(ttl={"default_ttl": 0.5 / 60, "refresh_on_read": False})
    store.put(("t",), "short", {"v": 1})
    store.put(("t",), "forever", {"v": 2}, ttl=None)
    store.put(("t",), "long", {"v": 3}, ttl=10)
    assert store.get(("t",), "short") is not None
    time.sleep(0.7)
    assert store.get(("t",), "short") is None
    assert {i.key for i in store.search(("t",))} == {"forever", "long"}
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0


def test_reads_refresh_the_ttl(new_store: Any) -> None:
    store = new_store(ttl={"default_ttl": 0.6 / 60, "refresh_on_read": True})
    store.put(("t",), "k", {"v": 1})
    for _ in range(4):
        time.sleep(0.3)
        assert store.get(("t",), "k") is not None
    time.sleep(0.3)
    assert store.get(("t",), "k", refresh_ttl=False) is not None
    time.sleep(0.4)
    assert store.search(("t",), refresh_ttl=False) == []


def test_background_sweep_deletes_expired_rows(tmp_path: Path) -> None:
    path = tmp_path / "ttl.db"
    store = SqliteStore(
        str(path), ttl={"default_ttl": 0.3 / 60, "sweep_interval_minutes": 0.2 / 60}
    )
    store.put(("t",), "k", {"v": 1})
    deadline = time.time() + 5
    rows = 1
    while time.time() < deadline and rows:
        time.sleep(0.2)
        with sqlite3.connect(path) as c:
            rows = c.execute("SELECT count(*) FROM ironloop_store").fetchone()[0]
    assert rows == 0
    assert store.stop_ttl_sweeper() is True
    store.close()


# --------------------------------------------------------------------------- persistence


def test_sqlite_store_keeps_items_and_vectors_across_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "mem.db")
    with SqliteStore.from_conn_string(path, index={"dims": DIMS, "embed": embed}) as store:
        store.setup()
        store.put(("u",), "a", {"text": "coffee tea"})
        store.put(("u",), "b", {"text": "cat"})
    # LangGraph's constructor form: a sqlite3 connection to the same file.
    store = SqliteStore(sqlite3.connect(path), index={"dims": DIMS, "embed": embed})
    assert [i.key for i in store.search(("u",), query="tea")] == ["a", "b"]
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get(("u",), "a")


def test_sqlite_search_sees_writes_of_another_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    one = SqliteStore(path, index={"dims": DIMS, "embed": embed})
    two = SqliteStore(path, index={"dims": DIMS, "embed": embed})
    one.put(("s",), "a", {"text": "cat"})
    assert [i.key for i in two.search(("s",), query="cat")] == ["a"]
    one.put(("s",), "b", {"text": "cat cat"})
    one.delete(("s",), "a")
    assert [i.key for i in two.search(("s",), query="cat")] == ["b"]
    one.close()
    two.close()


def test_postgres_stores_share_items_and_vectors() -> None:
    with temp_schema() as schema:
        dsn = pg_dsn(schema)
        one = PostgresStore(dsn, index={"dims": DIMS, "embed": embed})
        two = PostgresStore(dsn, index={"dims": DIMS, "embed": embed})
        one.put(("s",), "a", {"text": "cat"})
        assert [i.key for i in two.search(("s",), query="cat")] == ["a"]
        two.put(("s",), "b", {"text": "cat cat dog"})
        one.delete(("s",), "a")
        assert [i.key for i in one.search(("s",), query="cat")] == ["b"]
        assert [i.key for i in two.search(("s",), query="cat")] == ["b"]
        one.close()
        two.close()


# --------------------------------------------------------------------------- OpenAI embeddings


@pytest.fixture
def server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


def _reply(texts: list[str]) -> dict[str, Any]:
    vecs = embed(texts)
    # Out of order on purpose: the client orders by `index`.
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vecs)][::-1]
    return {"object": "list", "data": data, "model": "m"}


def test_openai_embeddings_batches_retries_and_hides_the_key(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-store-secret-123456")
    by_name = InMemoryStore(index={"dims": DIMS, "embed": "openai:nomic-embed"})
    assert isinstance(by_name.embeddings, OpenAIEmbeddings)
    assert by_name.embeddings.model == "nomic-embed"
    emb = OpenAIEmbeddings("nomic-embed", batch_size=2, max_retries=2)
    store = InMemoryStore(index={"dims": DIMS, "embed": emb, "fields": ["text"]})
    texts = ["cat", "dog", "tea"]
    server.json({"error": {"message": "overloaded"}}, status=503)
    server.json(_reply(texts[:2])).json(_reply(texts[2:]))
    store.batch([PutOp(("e",), t, {"text": t}) for t in texts])
    posts = server.requests
    assert [r["path"] for r in posts] == ["/v1/embeddings"] * 3
    assert [r["body"]["input"] for r in posts] == [["cat", "dog"], ["cat", "dog"], ["tea"]]
    assert posts[0]["body"]["model"] == "nomic-embed"
    assert posts[0]["headers"]["authorization"] == "Bearer sk-store-secret-123456"
    server.json(_reply(["dog"]))
    assert store.search(("e",), query="dog", limit=1)[0].key == "dog"
    # A failing endpoint: the put fails, with the status, never the key; nothing stored.
    server.json({"error": {"message": "bad key sk-store-secret-123456"}}, status=401)
    with pytest.raises(ModelError) as e:
        store.put(("e",), "new", {"text": "fish"})
    assert "401" in str(e.value) and "sk-store-secret" not in str(e.value)
    assert store.get(("e",), "new") is None
