"""W13: a store of 100,000 items with 384-dimension vectors, side by side.

For each store — ironloop's ``InMemoryStore``, ``SqliteStore`` and ``PostgresStore``
(when ``IRONLOOP_TEST_POSTGRES_URL`` names a server: exact search in Rust; and when
``IRONLOOP_TEST_PGVECTOR_URL`` names one with pgvector: the vectors in its
``store_vectors``, ranked exactly in Rust, or by an HNSW index),
LangGraph's ``InMemoryStore`` (ranking with numpy) — in a process of its own:

* ``put`` throughput: the items written in batches of 1,000 ``PutOp``s (each store's
  ``batch``), the embedding function a lookup of precomputed vectors, so the figure is
  the store's own cost;
* ``search(query, limit=10)`` p50 / p99 over the queries (each query's vector looked
  up the same way), every answer checked against the exact top 10 (numpy, float64):
  a store that returns another set fails the run, but for ``ironloop-pgvector-hnsw``,
  the pgvector store with the HNSW index LangGraph builds by default (``kind="hnsw"``,
  opt-in here: approximate), whose recall of it is reported;
* resident memory per item: the growth of the process's RSS while filling (and the
  first search, which loads what a store loads lazily), over the item count, beside the vector's own bytes (384 × 4) plus the item's JSON.

The floor is a numpy matrix product over the same vectors (``V @ q`` on a float32
matrix, then ``argpartition`` for the top 10). LangGraph's side runs with
``--langgraph-python`` (a virtualenv with langgraph and numpy; default: this one).
``--vectors clustered`` replaces W13's random vectors (no neighbourhoods: the worst
case for an approximate index) with clustered ones shaped like text embeddings.

    python benches/python/store_bench.py [--items 100000] [--queries 200]
        [--vectors random|clustered]
        [--langgraph-python ~/.cache/ironloop-bench-venv/bin/python] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DIMS = 384
BATCH = 1000


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def load(data: str, items: int, queries: int) -> tuple[Any, Any]:
    import numpy as np

    raw = np.fromfile(data, dtype=np.float32)
    vecs = raw[: items * DIMS].reshape(items, DIMS)
    qs = raw[items * DIMS :].reshape(queries, DIMS)
    return vecs, qs


def exact_top(vecs: Any, q: Any, k: int = 10) -> list[int]:
    import numpy as np

    v = vecs.astype(np.float64)
    sims = (v @ q.astype(np.float64)) / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
    return [int(i) for i in np.argsort(-sims)[:k]]


def run_store(impl: str, data: str, items: int, queries: int, pg: str | None) -> dict[str, Any]:
    """One store in this process: fill it, time its searches, report."""
    import numpy as np

    vecs, qs = load(data, items, queries)
    rows = {f"item {i}": vecs[i] for i in range(items)}
    rows.update({f"q{j}": qs[j] for j in range(queries)})

    def embed(texts: list[str]) -> list[Any]:
        # New float32 arrays, as an embedding model returns them (a store that keeps
        # the arrays it is given holds these, not the benchmark's own).
        return [rows[t].copy() for t in texts]

    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    tmp = tempfile.mkdtemp(prefix="w13-")
    if impl == "langgraph-memory":
        from langgraph.store.base import PutOp
        from langgraph.store.memory import InMemoryStore as LGMemory

        store: Any = LGMemory(index=index)  # type: ignore[arg-type]
    else:
        from ironloop.store import InMemoryStore, PostgresStore, PutOp, SqliteStore  # type: ignore[assignment]

        if impl == "ironloop-memory":
            store = InMemoryStore(index=index)  # type: ignore[arg-type]
        elif impl == "ironloop-sqlite":
            store = SqliteStore(str(Path(tmp) / "w13.db"), index=index)  # type: ignore[arg-type]
        elif impl == "ironloop-pgvector-hnsw":
            hnsw = {**index, "ann_index_config": {"kind": "hnsw"}}
            store = PostgresStore(pg, index=hnsw)  # type: ignore[arg-type]
        else:
            store = PostgresStore(pg, index=index)  # type: ignore[arg-type]
    json_bytes = len(json.dumps({"text": "item 99999", "i": 99999}))
    before = rss_bytes()
    t0 = time.perf_counter()
    for start in range(0, items, BATCH):
        store.batch(
            [
                PutOp(("w13", "docs"), f"k{i}", {"text": f"item {i}", "i": i})
                for i in range(start, min(start + BATCH, items))
            ]
        )
    put_s = time.perf_counter() - t0
    # One untimed search loads what a store loads lazily (its vector copy), counted in
    # the memory figure.
    store.search(("w13",), query="q0", limit=10)
    grown = rss_bytes() - before
    times = []
    # An HNSW index ranks approximately: its recall of the exact top 10 is reported;
    # every other store's answer must be the exact one.
    approximate = impl == "ironloop-pgvector-hnsw"
    hits = checked = 0
    for j in range(queries):
        t = time.perf_counter()
        found = store.search(("w13",), query=f"q{j}", limit=10)
        times.append(time.perf_counter() - t)
        got = sorted(int(it.key[1:]) for it in found)
        if j < 20:  # the exact answer, for the first queries (float64, outside the timing)
            want = sorted(exact_top(vecs, qs[j]))
            hits += len(set(got) & set(want))
            checked += len(want)
            if got != want and not approximate:
                raise SystemExit(f"{impl}: query {j} returned {got}, the exact top 10 is {want}")
    times.sort()
    if hasattr(store, "close"):
        store.close()
    shutil.rmtree(tmp, ignore_errors=True)  # the SQLite file: ~450 MB at 100,000 items
    del np
    return {
        "impl": impl,
        "items": items,
        "put_per_s": items / put_s,
        "search_p50_ms": statistics.median(times) * 1e3,
        "search_p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))] * 1e3,
        "rss_per_item": grown / items,
        "recall": hits / checked if checked else None,
        "vector_plus_json": DIMS * 4 + json_bytes,
    }


def run_floor(data: str, items: int, queries: int) -> dict[str, Any]:
    import numpy as np

    vecs, qs = load(data, items, queries)
    times = []
    for j in range(queries):
        t = time.perf_counter()
        sims = vecs @ qs[j]
        top = np.argpartition(-sims, 10)[:10]
        top = top[np.argsort(-sims[top])]
        times.append(time.perf_counter() - t)
    times.sort()
    return {
        "impl": "floor (numpy V @ q)",
        "items": items,
        "search_p50_ms": statistics.median(times) * 1e3,
        "search_p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))] * 1e3,
    }


def child(args: argparse.Namespace) -> None:
    if args.impl == "floor":
        out = run_floor(args.data, args.items, args.queries)
    else:
        out = run_store(
            args.impl,
            args.data,
            args.items,
            args.queries,
            os.environ.get("IRONLOOP_TEST_POSTGRES_URL"),
        )
    print("W13RESULT " + json.dumps(out))


def clustered(rng: Any, n: int) -> Any:
    """Vectors shaped like text embeddings: a direction all share (embeddings are
    anisotropic), one of 200 topic centres, a 24-dimension spread within the topic,
    and a little noise; mean cosine of two random ones ~0.2, of a query's ten nearest
    ~0.7."""
    import numpy as np

    topics, latent = 200, 24
    shared = rng.standard_normal(DIMS)
    shared /= np.linalg.norm(shared)
    centres = rng.standard_normal((topics, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    bases = rng.standard_normal((topics, latent, DIMS))
    out = np.empty((n, DIMS), dtype=np.float32)
    for start in range(0, n, 10_000):
        m = min(10_000, n - start)
        t = rng.integers(0, topics, m)
        spread = np.einsum("nl,nld->nd", rng.standard_normal((m, latent)), bases[t])
        spread /= np.linalg.norm(spread, axis=1, keepdims=True)
        noise = 0.15 * rng.standard_normal((m, DIMS)) / 4
        out[start : start + m] = 0.8 * shared + centres[t] + spread + noise
    return out


def pg_dsn(url: str) -> tuple[str, Any]:
    """A fresh schema on the server for the PostgreSQL row, and its cleanup."""
    import psycopg

    schema = f"w13_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}", drop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--langgraph-python", default=sys.executable)
    ap.add_argument(
        "--only",
        help="comma-separated: ironloop-memory, ironloop-sqlite, ironloop-postgres, "
        "ironloop-pgvector, ironloop-pgvector-hnsw, langgraph-memory, floor",
    )
    ap.add_argument("--vectors", choices=["random", "clustered"], default="random")
    ap.add_argument("--json")
    ap.add_argument("--impl", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.impl:
        child(args)
        return
    import numpy as np

    rng = np.random.default_rng(13)
    with tempfile.TemporaryDirectory(prefix="w13-") as tmp:
        data = str(Path(tmp) / "vectors.f32")
        if args.vectors == "clustered":
            clustered(rng, args.items + args.queries).tofile(data)
        else:
            rng.standard_normal((args.items + args.queries) * DIMS, dtype=np.float32).tofile(data)
        impls = ["ironloop-memory", "ironloop-sqlite", "langgraph-memory", "floor"]
        servers = {
            "ironloop-postgres": os.environ.get("IRONLOOP_TEST_POSTGRES_URL"),
            "ironloop-pgvector": os.environ.get("IRONLOOP_TEST_PGVECTOR_URL"),
            "ironloop-pgvector-hnsw": os.environ.get("IRONLOOP_TEST_PGVECTOR_URL"),
        }
        drop = None
        impls[2:2] = [impl for impl, url in servers.items() if url]
        if args.only:
            impls = [i for i in impls if i in args.only.split(",")]
        results = []
        for impl in impls:
            py = args.langgraph_python if impl == "langgraph-memory" else sys.executable
            # One BLAS thread: the machine's 2 cores are shared, and numpy's threads
            # only fight each other there (the floor and LangGraph's ranking use it).
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
            url = servers.get(impl)
            if url:
                # The child's server, in a schema of its own (the PostgresStore rows).
                env["IRONLOOP_TEST_POSTGRES_URL"], drop = pg_dsn(url)
            cmd = [
                py,
                __file__,
                "--impl",
                impl,
                "--data",
                data,
                "--items",
                str(args.items),
                "--queries",
                str(args.queries),
            ]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if drop:
                drop()
                drop = None
            line = [ln for ln in out.stdout.splitlines() if ln.startswith("W13RESULT ")]
            if out.returncode != 0 or not line:
                raise SystemExit(f"{impl} failed:\n{out.stdout}\n{out.stderr}")
            results.append(json.loads(line[0].split(" ", 1)[1]))
            print(f"  measured {impl}", file=sys.stderr)
    lg = next((r for r in results if r["impl"] == "langgraph-memory"), None)
    print(
        f"\nW13: {args.items:,} {args.vectors} items x {DIMS} dims, search(limit=10) over {args.queries} queries; "
        f"load {os.getloadavg()[0]:.1f}, {platform.python_version()}"
    )
    print(
        f"{'store':24} {'put/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'vs LG p50':>9} {'B/item':>8} {'budget':>8} {'recall':>7}"
    )
    for r in results:
        ratio = f"{lg['search_p50_ms'] / r['search_p50_ms']:.1f}x" if lg else "-"
        put = f"{r['put_per_s']:,.0f}" if "put_per_s" in r else "-"
        per = f"{r['rss_per_item']:,.0f}" if "rss_per_item" in r else "-"
        budget = (
            f"{1.2 * DIMS * 4 + r['vector_plus_json'] - DIMS * 4:,.0f}"
            if "vector_plus_json" in r
            else "-"
        )
        recall = f"{r['recall']:.3f}" if r.get("recall") is not None else "-"
        print(
            f"{r['impl']:24} {put:>10} {r['search_p50_ms']:8.2f} {r['search_p99_ms']:8.2f} {ratio:>9} {per:>8} {budget:>8} {recall:>7}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
