"""A cache in a SQLite file, shared by the processes that open it."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ironloop._ironloop import _checkpoint_decode, _checkpoint_encode
from ironloop.cache.base import BaseCache, FullKey, Namespace

__all__ = ["SqliteCache"]

_SEP = "\x1f"  # joins a namespace's parts into one column


class SqliteCache(BaseCache[Any]):
    """Node and task results in a SQLite database, as LangGraph's ``SqliteCache``
    (``SqliteCache(path="cache.db")``; ``":memory:"`` for this process only). Values
    are stored as checkpoint JSON: types come back only as a checkpoint restores them
    (plain data otherwise), nothing in the file is imported or unpickled.

    Example:
        >>> cache = SqliteCache(path=":memory:")
        >>> cache.set({(("ns",), "k"): ({"a": 1}, 60)})
        >>> cache.get([(("ns",), "k")])
        {(('ns',), 'k'): {'a': 1}}
    """

    def __init__(self, *, path: str, serde: Any = None) -> None:
        super().__init__(serde=serde)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            if path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS cache (ns TEXT NOT NULL, key TEXT NOT NULL, "
                "expiry REAL, value BLOB NOT NULL, PRIMARY KEY (ns, key))"
            )

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        if not keys:
            return {}
        now = time.time()
        out: dict[FullKey, Any] = {}
        with self._lock:
            for ns, key in keys:
                row = self._conn.execute(
                    "SELECT expiry, value FROM cache WHERE ns = ? AND key = ?",
                    (_SEP.join(ns), key),
                ).fetchone()
                if row is None:
                    continue
                expiry, value = row
                if expiry is not None and expiry <= now:
                    self._conn.execute(
                        "DELETE FROM cache WHERE ns = ? AND key = ?", (_SEP.join(ns), key)
                    )
                    continue
                out[(ns, key)] = _checkpoint_decode(value)
        return out

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        now = time.time()
        rows = [
            (_SEP.join(ns), key, now + ttl if ttl is not None else None, _checkpoint_encode(v))
            for (ns, key), (v, ttl) in pairs.items()
        ]
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO cache (ns, key, expiry, value) VALUES (?, ?, ?, ?)", rows
            )

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._conn.execute("DELETE FROM cache")
            else:
                self._conn.executemany(
                    "DELETE FROM cache WHERE ns = ?", [(_SEP.join(ns),) for ns in namespaces]
                )

    def close(self) -> None:
        self._conn.close()
