"""A cache in this process's memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ironloop.cache.base import BaseCache, FullKey, Namespace

__all__ = ["InMemoryCache"]


class InMemoryCache(BaseCache[Any]):
    """Node and task results kept in a dict, as LangGraph's ``InMemoryCache``
    (``compile(cache=InMemoryCache())``). Safe to share between threads.

    Example:
        >>> cache = InMemoryCache()
        >>> cache.set({(("ns",), "k"): ("v", None)})
        >>> cache.get([(("ns",), "k")])
        {(('ns',), 'k'): 'v'}
    """

    def __init__(self, *, serde: Any = None) -> None:
        super().__init__(serde=serde)
        self._data: dict[Namespace, dict[str, tuple[Any, float | None]]] = {}
        self._lock = threading.RLock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        now = time.time()
        out: dict[FullKey, Any] = {}
        with self._lock:
            for ns, key in keys:
                entry = self._data.get(ns, {}).get(key)
                if entry is None:
                    continue
                value, expires = entry
                if expires is not None and expires <= now:
                    del self._data[ns][key]
                    continue
                out[(ns, key)] = value
        return out

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        now = time.time()
        with self._lock:
            for (ns, key), (value, ttl) in pairs.items():
                expires = now + ttl if ttl is not None else None
                self._data.setdefault(ns, {})[key] = (value, expires)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._data.clear()
            else:
                for ns in namespaces:
                    self._data.pop(tuple(ns), None)
