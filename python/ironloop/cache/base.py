"""The cache interface LangGraph's graphs use: values by ``(namespace, key)``, each
with a time to live; sync and async forms."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["BaseCache", "FullKey", "Namespace"]

ValueT = TypeVar("ValueT")
#: Where a cached value belongs (a node's or task's results).
Namespace = tuple[str, ...]
#: A value's full key: its namespace and its key in it.
FullKey = tuple[Namespace, str]


class BaseCache(ABC, Generic[ValueT]):
    """A cache of node and task results. Subclasses store values by :data:`FullKey`
    with a time to live in seconds (``None``: until cleared). The async methods run the
    sync ones unless a subclass does better."""

    def __init__(self, *, serde: Any = None) -> None:
        self.serde = serde

    @abstractmethod
    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """The values cached for ``keys`` (missing and expired keys are absent)."""

    @abstractmethod
    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Caches each value with its time to live."""

    @abstractmethod
    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drops the values of ``namespaces`` (all values when ``None``)."""

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        return self.get(keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        self.set(pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        self.clear(namespaces)
