"""The half every ironloop store shares: LangGraph ops in, the Rust engine's
operation tuples out (values as JSON text, vectors embedded here first), and the
engine's result tuples back as ``Item`` / ``SearchItem``. Not public API.

A batch embeds everything it needs first (the puts' texts in one call, each search
query once) and only then hands the batch to the engine, which checks every value
and vector before it writes: a failing embedding model, a vector of the wrong size
or a value that is not JSON fails the batch and stores nothing.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ironloop._closing import ClosingContext
from ironloop.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    _validate_labels,
    _validate_namespace,
)
from ironloop.store.embed import ensure_embeddings, get_text_at_path, tokenize_path

_UTC = timezone.utc


def _encode(namespace: tuple[str, ...], key: str, value: Any) -> str:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"the value of {key!r} in {namespace!r} is a {type(value).__name__}; store "
            "values are dicts (of JSON values)"
        )
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"the value of {key!r} in {namespace!r} is not JSON-serialisable ({e}); store "
            "dicts of str, int, float, bool, None, lists and dicts"
        ) from None


def _item(t: tuple[Any, ...], search: bool) -> Item:
    ns, key, text, created, updated, score = t
    created_at = datetime.fromtimestamp(created, _UTC)
    updated_at = datetime.fromtimestamp(updated, _UTC)
    if search:
        return SearchItem(ns, key, json.loads(text), created_at, updated_at, score)
    return Item(
        value=json.loads(text),
        key=key,
        namespace=ns,
        created_at=created_at,
        updated_at=updated_at,
    )


_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def _check_filter_key(key: str) -> None:
    if not isinstance(key, str) or not _FILTER_KEY.match(key):
        raise ValueError(
            f"Invalid filter key: {key!r}. Filter keys are field names or dotted paths "
            "of letters, digits, '_', '-' and '.'"
        )


def _finite(obj: Any) -> Any:
    """``obj`` with each non-finite float as ``{"__float__": "inf" | "-inf" | "nan"}``,
    the form the engine's filters read (JSON has no infinities)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__float__": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _f32(vec: Any) -> bytes:
    """A vector as float32 bytes, converted in C: a numpy array through its own
    ``astype``, a list or another sequence through ``array('f')``."""
    if getattr(vec, "dtype", None) is not None and hasattr(vec, "astype"):
        return bytes(vec.astype("float32", copy=False).tobytes())
    try:
        return array("f", vec).tobytes()
    except TypeError:
        raise TypeError(
            f"an embedding must be a sequence of numbers, got {type(vec).__name__}"
        ) from None


class _Plan:
    """A batch being prepared: the engine's tuples, and the texts still to embed."""

    def __init__(self) -> None:
        self.tuples: list[list[Any]] = []
        # (tuple index, field name) per text of `texts`.
        self.targets: list[tuple[int, str]] = []
        self.texts: list[str] = []
        # tuple index per query of `queries`.
        self.query_at: list[tuple[int, str]] = []
        self.kinds: list[str] = []


class RustStore(ClosingContext, BaseStore):
    """A ``BaseStore`` whose engine is ``ironloop._ironloop._StoreCore``."""

    supports_ttl = True
    #: LangGraph's SQL stores refuse filter keys outside ``[A-Za-z0-9_.-]``.
    _strict_filter_keys = False
    #: The ``distance_type`` values the engine ranks by (PostgreSQL's store has more).
    _distances: tuple[str, ...] = ("cosine",)

    def __init__(
        self, core: Any, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> None:
        self._core = core
        self.index_config: dict[str, Any] | None = None
        self.embeddings: Any = None
        self._fields: list[tuple[str, str | list[str]]] = []
        if index:
            if "dims" not in index:
                raise ValueError("index needs 'dims': the size of the embedding vectors")
            distance = dict(index).get("distance_type") or "cosine"
            if distance not in self._distances:
                raise ValueError(
                    f"distance_type={distance!r} is not supported by {type(self).__name__}"
                    f": pass one of {', '.join(map(repr, self._distances))} (or leave it "
                    "out: cosine similarity)"
                )
            self.index_config = dict(index)
            self.embeddings = ensure_embeddings(index.get("embed"), dims=index["dims"])
            # LangGraph's SQLite store spells it `text_fields`.
            config: dict[str, Any] = dict(index)
            fields: list[str] = config.get("fields") or config.get("text_fields") or ["$"]
            self._fields = [(f, f if f == "$" else tokenize_path(f)) for f in fields]
        self.ttl_config = dict(ttl) if ttl else None  # type: ignore[assignment]
        if self.ttl_config and self.ttl_config.get("sweep_interval_minutes"):
            self._start_sweeper(self.ttl_config["sweep_interval_minutes"])

    # -- planning -------------------------------------------------------------

    def _plan(self, ops: Iterable[Op]) -> _Plan:
        plan = _Plan()
        for op in ops:
            n = len(plan.tuples)
            if isinstance(op, GetOp):
                _validate_labels(op.namespace)
                plan.tuples.append(["get", op.namespace, str(op.key), self._refresh(op)])
                plan.kinds.append("get")
            elif isinstance(op, PutOp):
                self._plan_put(plan, op, n)
            elif isinstance(op, SearchOp):
                _validate_labels(op.namespace_prefix)
                filt = None
                if op.filter:
                    if self._strict_filter_keys:
                        for k in op.filter:
                            _check_filter_key(k)
                    filt = json.dumps(_finite(dict(op.filter)), ensure_ascii=False)
                plan.tuples.append(
                    [
                        "search",
                        tuple(op.namespace_prefix),
                        filt,
                        max(int(op.limit), 0),
                        max(int(op.offset), 0),
                        None,
                        self._refresh(op),
                    ]
                )
                plan.kinds.append("search")
                if op.query and self.embeddings is not None:
                    plan.query_at.append((n, op.query))
            elif isinstance(op, ListNamespacesOp):
                conditions = []
                for c in op.match_conditions or ():
                    _validate_labels(c.path)
                    conditions.append((c.match_type, tuple(c.path)))
                plan.tuples.append(
                    ["list", conditions, op.max_depth, max(op.limit, 0), max(op.offset, 0)]
                )
                plan.kinds.append("list")
            else:
                raise TypeError(f"unknown store operation: {type(op).__name__}")
        return plan

    def _plan_put(self, plan: _Plan, op: PutOp, n: int) -> None:
        # A batch may write under the root "langgraph" (only `put` reserves it).
        _validate_labels(op.namespace)
        if not op.namespace:
            _validate_namespace(op.namespace)
        key = str(op.key)
        plan.kinds.append("put")
        if op.value is None:
            plan.tuples.append(["put", op.namespace, key, None, [], None])
            return
        text = _encode(op.namespace, key, op.value)
        ttl = op.ttl
        plan.tuples.append(["put", op.namespace, key, text, [], ttl])
        if self.embeddings is None or op.index is False:
            return
        fields = self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
        value = dict(op.value)
        for name, path in fields:
            texts = get_text_at_path(value, path)
            if len(texts) == 1:
                plan.targets.append((n, name))
                plan.texts.append(texts[0])
            else:
                for i, t in enumerate(texts):
                    plan.targets.append((n, f"{name}.{i}"))
                    plan.texts.append(t)

    def _refresh(self, op: GetOp | SearchOp) -> bool:
        """Whether a read restarts TTLs: the op asks (its default follows the store's
        ``refresh_on_read``) and the store's ``ttl`` turns reads refreshing on, as in
        LangGraph's SQLite and PostgreSQL stores."""
        return bool(op.refresh_ttl) and bool((self.ttl_config or {}).get("refresh_on_read"))

    def _attach(self, plan: _Plan, vectors: Sequence[Any], queries: dict[str, Any]) -> None:
        if len(vectors) != len(plan.texts):
            raise ValueError(
                f"the embedding model returned {len(vectors)} vectors for "
                f"{len(plan.texts)} texts; it must return one per text"
            )
        for (n, field), vec in zip(plan.targets, vectors, strict=True):
            plan.tuples[n][4].append((field, _f32(vec)))
        for n, q in plan.query_at:
            plan.tuples[n][5] = _f32(queries[q])

    def _results(self, plan: _Plan, raw: list[Any]) -> list[Result]:
        out: list[Result] = []
        for kind, r in zip(plan.kinds, raw, strict=False):
            if kind == "get":
                out.append(None if r is None else _item(r, False))
            elif kind == "search":
                out.append([_item(t, True) for t in r])  # type: ignore[misc]
            elif kind == "list":
                out.append(r)
            else:
                out.append(None)
        return out

    # -- the two entry points -------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        if plan.texts or plan.query_at:
            vectors = self.embeddings.embed_documents(plan.texts) if plan.texts else []
            queries = {q: self.embeddings.embed_query(q) for _, q in plan.query_at}
            self._attach(plan, vectors, queries)
        return self._results(plan, self._core.batch([tuple(t) for t in plan.tuples]))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        import asyncio  # not at import: `import ironloop` stays free of asyncio

        plan = self._plan(ops)
        if plan.texts or plan.query_at:
            vectors = await self.embeddings.aembed_documents(plan.texts) if plan.texts else []
            wanted = list({q for _, q in plan.query_at})
            found = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in wanted))
            self._attach(plan, vectors, dict(zip(wanted, found, strict=False)))
        return self._results(plan, await self._core.abatch([tuple(t) for t in plan.tuples]))

    # -- TTL --------------------------------------------------------------------

    def _start_sweeper(self, minutes: float | None) -> None:
        minutes = minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        self._core.start_sweeper(float(minutes) * 60.0)

    def sweep_ttl(self) -> int:
        """Deletes the expired items now; returns how many. (Expired items are never
        returned anyway; this frees their space.)"""
        return self._core.sweep()

    async def asweep_ttl(self) -> int:
        return await self._core.asweep()

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Any:
        """Deletes expired items every ``sweep_interval_minutes`` (default: the
        store's ``ttl["sweep_interval_minutes"]``, else 5) in the background, on
        ironloop's runtime (no thread of its own). Returns a finished future, as
        LangGraph's returns a future of its sweeper thread."""
        import concurrent.futures

        self._start_sweeper(sweep_interval_minutes)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        done.set_result(None)
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the background sweep; returns whether one was running."""
        return self._core.stop_sweeper()

    # -- life -------------------------------------------------------------------

    def setup(self) -> None:
        """Creates the store's tables (idempotent; the store also does it when it
        opens)."""
        self._core.setup()

    async def asetup(self) -> None:
        await self._core.asetup()

    def close(self) -> None:
        """Stops the sweeper and closes the database; later calls raise
        ``StoreError``."""
        self._core.close()


class AsyncRustStore(RustStore):
    """What LangGraph's async stores (``AsyncSqliteStore``, ``AsyncPostgresStore``) change:
    ``setup()`` and the TTL sweeper's methods are coroutines, and the sync methods
    refuse to block the event loop they are called on (``asyncio.InvalidStateError``,
    as LangGraph's); from another thread they work."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        import asyncio  # not at import: `import ironloop` stays free of asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return super().batch(ops)
        name = type(self).__name__
        raise asyncio.InvalidStateError(
            f"synchronous calls to {name} would block the event loop: use the a… methods "
            f"(aget, aput, asearch, abatch…) here, or {name.removeprefix('Async')}"
        )

    async def setup(self) -> None:  # type: ignore[override]
        await self.asetup()

    async def start_ttl_sweeper(  # type: ignore[override]
        self, sweep_interval_minutes: float | None = None
    ) -> None:
        self._start_sweeper(sweep_interval_minutes)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        return self._core.stop_sweeper()

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await self.asweep_ttl()
