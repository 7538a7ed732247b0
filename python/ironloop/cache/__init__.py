"""Caches for node and task results (``CachePolicy``), as LangGraph's
``langgraph.cache``: :class:`~ironloop.cache.memory.InMemoryCache` and
:class:`~ironloop.cache.sqlite.SqliteCache`, both :class:`~ironloop.cache.base.BaseCache`."""

from ironloop.cache.base import BaseCache, FullKey, Namespace

__all__ = ["BaseCache", "FullKey", "Namespace"]
