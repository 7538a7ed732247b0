"""Long-term memory: LangGraph's stores (``InMemoryStore``, ``SqliteStore``,
``PostgresStore``) with their engine in Rust.

A store keeps JSON objects under a namespace (a tuple of labels) and a key, shared
by every thread of a graph; tools reach it through ``InjectedStore`` or
``runtime.store``. With ``index={"dims", "embed", "fields"}`` a search ranks items
by the meaning of a query (exact cosine similarity); with ``ttl=`` items expire.
"""

# ruff: noqa: F405 (``__all__`` names what ``store.base``'s star import brings)

from typing import TYPE_CHECKING, Any

# The interface is re-exported whole (its names are listed in ``__all__`` below).
from ironloop.store.base import *  # noqa: F403
from ironloop.store.embed import (
    AEmbeddingsFunc,
    EmbeddingsFunc,
    OpenAIEmbeddings,
)
from ironloop.store.memory import InMemoryStore

if TYPE_CHECKING:
    from ironloop.store.batch import AsyncBatchedBaseStore
    from ironloop.store.postgres import AsyncPostgresStore, PostgresStore
    from ironloop.store.sqlite import AsyncSqliteStore, SqliteStore

#: Imported on first use: ``import ironloop`` stays free of ``sqlite3`` and ``asyncio``.
_LAZY = {
    "AsyncBatchedBaseStore": "ironloop.store.batch",
    "SqliteStore": "ironloop.store.sqlite",
    "AsyncSqliteStore": "ironloop.store.sqlite",
    "PostgresStore": "ironloop.store.postgres",
    "AsyncPostgresStore": "ironloop.store.postgres",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ironloop.store' has no attribute {name!r}")


__all__ = [
    "NOT_PROVIDED",
    "AEmbeddingsFunc",
    "AsyncBatchedBaseStore",
    "AsyncPostgresStore",
    "AsyncSqliteStore",
    "BaseStore",
    "EmbeddingsFunc",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "OpenAIEmbeddings",
    "PostgresStore",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "SqliteStore",
    "TTLConfig",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
    "validate_op_namespace",
]
