"""``InMemoryStore``: LangGraph's in-process store, with its engine in Rust."""

from __future__ import annotations

from ironloop._ironloop import _StoreCore
from ironloop.store._core import RustStore
from ironloop.store.base import IndexConfig, TTLConfig

__all__ = ["InMemoryStore"]


class InMemoryStore(RustStore):
    """Items kept in this process (lost when it ends), searchable by namespace,
    filter and — with ``index=`` — by meaning, ranked by exact cosine similarity.

    ``ttl=`` (an ironloop addition; LangGraph's in-memory store has none) takes the
    same settings as the persistent stores.

    Example:
        >>> store = InMemoryStore()
        >>> store.put(("users", "1"), "prefs", {"theme": "dark"})
        >>> store.get(("users", "1"), "prefs").value
        {'theme': 'dark'}
        >>> [i.key for i in store.search(("users",))]
        ['prefs']
    """

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> None:
        super().__init__(_StoreCore.memory(index["dims"] if index else None), index=index, ttl=ttl)
