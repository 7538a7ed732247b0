"""``InMemoryStore``: LangGraph's long-term memory store (``put / get / search /
delete``), shared across threads and injected into tools with ``InjectedStore``."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["InMemoryStore", "Item"]


@dataclass
class Item:
    """A stored value with its place and times."""

    value: dict[str, Any]
    key: str
    namespace: tuple[str, ...]
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    updated_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "key": self.key,
            "namespace": list(self.namespace),
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


def _ns(namespace: Any) -> tuple[str, ...]:
    if isinstance(namespace, str):
        namespace = (namespace,)
    ns = tuple(namespace)
    if not all(isinstance(p, str) and p for p in ns):
        raise ValueError(f"a namespace is a tuple of non-empty strings, got {namespace!r}")
    return ns


class InMemoryStore:
    """Key-value memory by namespace (a tuple of strings), kept in this process.

    Example:
        >>> store = InMemoryStore()
        >>> store.put(("users", "1"), "prefs", {"theme": "dark"})
        >>> store.get(("users", "1"), "prefs").value
        {'theme': 'dark'}
        >>> [i.key for i in store.search(("users",))]
        ['prefs']
    """

    def __init__(self) -> None:
        self._data: dict[tuple[str, ...], dict[str, Item]] = {}
        self._lock = threading.Lock()

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None) -> None:
        """Stores ``value`` (a dict) under ``key``; ``None`` deletes it."""
        ns = _ns(namespace)
        if value is None:
            self.delete(ns, key)
            return
        if not isinstance(value, dict):
            raise TypeError(f"store values are dicts, got {type(value).__name__}")
        with self._lock:
            items = self._data.setdefault(ns, {})
            old = items.get(key)
            now = datetime.now(timezone.utc)
            items[key] = Item(dict(value), key, ns, old.created_at if old else now, now)

    def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        with self._lock:
            return self._data.get(_ns(namespace), {}).get(key)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        with self._lock:
            self._data.get(_ns(namespace), {}).pop(key, None)

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Item]:
        """Items under the prefix whose values match ``filter`` (equality per key);
        ``query`` keeps items whose values contain it as text."""
        prefix = tuple(namespace_prefix)
        with self._lock:
            found = [
                it
                for ns, items in self._data.items()
                if ns[: len(prefix)] == prefix
                for it in items.values()
            ]
        if filter:
            found = [i for i in found if all(i.value.get(k) == v for k, v in filter.items())]
        if query:
            q = query.lower()
            found = [i for i in found if q in str(i.value).lower()]
        found.sort(key=lambda i: i.updated_at, reverse=True)
        return found[offset : offset + limit]

    def list_namespaces(self, *, prefix: tuple[str, ...] | None = None) -> list[tuple[str, ...]]:
        with self._lock:
            return sorted(
                ns
                for ns in self._data
                if self._data[ns] and (not prefix or ns[: len(prefix)] == prefix)
            )
