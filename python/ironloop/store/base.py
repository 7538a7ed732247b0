"""LangGraph's store interface: ``BaseStore``, the items it returns, the operations
a batch holds, and the rules every store applies to namespaces.

A store keeps JSON objects under a namespace (a tuple of labels) and a key. Every
method is a batch of one operation (``GetOp``, ``PutOp``, ``SearchOp``,
``ListNamespacesOp``); a store implements ``batch`` and ``abatch``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypedDict

from ironloop._params import params_of
from ironloop.store.embed import (
    AEmbeddingsFunc,
    EmbeddingsFunc,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
    "validate_op_namespace",
]


class NotProvided:
    """The "argument not given" marker (``NOT_PROVIDED``): ``ttl=None`` means "never
    expires", an omitted ``ttl`` means "the store's default"."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_PROVIDED = NotProvided()


def _as_datetime(value: datetime | str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


class Item:
    """A stored value with its place (``namespace``, ``key``) and times.

    Two items are equal when all five fields are; an item hashes by its place.
    """

    __slots__ = ("created_at", "key", "namespace", "updated_at", "value")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime | str,
        updated_at: datetime | str,
    ) -> None:
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = _as_datetime(created_at)
        self.updated_at = _as_datetime(updated_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return False
        return (self.value, self.key, self.namespace, self.created_at, self.updated_at) == (
            other.value,
            other.key,
            other.namespace,
            other.created_at,
            other.updated_at,
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def dict(self) -> dict[str, Any]:
        """The item as JSON-ready data (times as ISO 8601 text)."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.dict().items())
        return f"{type(self).__name__}({fields})"


class SearchItem(Item):
    """An item found by ``search``; ``score`` is its cosine similarity to the query
    (``None`` without a query, or for an item that has no vectors)."""

    __slots__ = ("score",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | str,
        updated_at: datetime | str,
        score: float | None = None,
    ) -> None:
        super().__init__(
            value=value,
            key=key,
            namespace=namespace,
            created_at=created_at,
            updated_at=updated_at,
        )
        self.score = score

    def dict(self) -> dict[str, Any]:
        out = super().dict()
        out["score"] = self.score
        return out


class GetOp(NamedTuple):
    """Read the item at ``namespace`` / ``key``."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


class SearchOp(NamedTuple):
    """Items under ``namespace_prefix`` that pass ``filter``, ranked by similarity to
    ``query`` when the store has an index, paged by ``limit`` / ``offset``.

    ``filter`` holds ``{"field": value}`` (equality) or ``{"field": {"$op": value}}``
    with ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``.
    """

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True


NamespacePath = tuple[str | Literal["*"], ...]
"""A namespace pattern; ``"*"`` matches any one label."""

NamespaceMatchType = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    """Namespaces starting (``"prefix"``) or ending (``"suffix"``) with ``path``."""

    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """The namespaces matching every condition, cut to ``max_depth`` labels, sorted
    and paged."""

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """Store ``value`` at ``namespace`` / ``key`` (``None`` deletes the item).

    ``index``: ``None`` embeds the store's configured fields, ``False`` none, a list
    of paths (``"title"``, ``"sections[*].text"``) those. ``ttl``: minutes until the
    item expires after its last write (or read, when reads refresh); ``None`` never.
    """

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]
    ttl: float | None = None


Op = GetOp | SearchOp | PutOp | ListNamespacesOp
Result = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None


class InvalidNamespaceError(ValueError):
    """A namespace is empty, has an empty label, a label with ``.`` or NUL, a label
    that is not text, or starts with the reserved ``"langgraph"``."""


class TTLConfig(TypedDict, total=False):
    """A store's expiry settings (all in minutes)."""

    refresh_on_read: bool
    """Reads (``get`` / ``search``) restart an item's TTL (unless a read passes
    ``refresh_ttl=False``). Without it reads refresh nothing, as in LangGraph's SQLite
    store."""
    default_ttl: float | None
    """The TTL of an item put without ``ttl=``. Default ``None``: never expires."""
    sweep_interval_minutes: int | float | None
    """How often expired items are deleted in the background. Expired items are
    never returned either way; the sweep frees their space."""


class IndexConfig(TypedDict, total=False):
    """A store's semantic-search settings."""

    dims: int
    """The size of the embedding vectors (e.g. 1536 for text-embedding-3-small)."""
    embed: Any
    """A function ``list[str] -> list[list[float]]`` (sync or async), a LangChain
    ``Embeddings`` object, or ``"openai:<model>"`` (ironloop's own client of an
    OpenAI-compatible ``/embeddings`` endpoint)."""
    fields: list[str] | None
    """The paths of the text to embed; default ``["$"]`` (the whole value)."""


def _validate_labels(namespace: tuple[str, ...]) -> None:
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace!r}: labels must be "
                f"strings, not {type(label).__name__}"
            )
        if not label:
            raise InvalidNamespaceError(
                f"namespace labels cannot be empty strings, got {namespace!r}"
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace!r}: labels cannot "
                "contain periods ('.'); use another separator or split it into labels"
            )
        if "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace!r}: labels cannot "
                "contain NUL bytes ('\\x00')"
            )


def _validate_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace:
        raise InvalidNamespaceError(
            "a namespace cannot be empty: give at least one label, e.g. ('users',)"
        )
    _validate_labels(namespace)
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'the root label of a namespace cannot be "langgraph" (reserved), got {namespace!r}'
        )


def validate_op_namespace(op: Op) -> None:
    """Raises ``InvalidNamespaceError`` for an op whose namespace labels are invalid
    (an empty search prefix and ``"*"`` in listing patterns are valid)."""
    if isinstance(op, (GetOp, PutOp)):
        _validate_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _validate_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _validate_labels(condition.path)


def _refresh(ttl_config: TTLConfig | None, refresh_ttl: bool | None) -> bool:
    if refresh_ttl is not None:
        return refresh_ttl
    return (ttl_config or {}).get("refresh_on_read", True)


def _ttl(ttl_config: TTLConfig | None, ttl: float | NotProvided | None) -> float | None:
    if isinstance(ttl, NotProvided):
        return (ttl_config or {}).get("default_ttl")
    return ttl


class BaseStore(ABC):
    """A key-value store with namespaces, optional semantic search and TTLs.

    Subclasses implement ``batch`` and ``abatch``; every other method is one
    operation through them, so the sync and async forms cannot differ.
    """

    supports_ttl: bool = False
    ttl_config: TTLConfig | None = None

    __slots__ = ("__weakref__",)

    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs ``ops`` in order; one result per op."""

    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Like ``batch``, awaited."""

    # The one-operation forms: each builds its op once, for both entry points, and
    # runs it through `_run_one` / `_arun_one` (which a batching store overrides).

    def _run_one(self, op: Op) -> Any:
        return self.batch([op])[0]

    async def _arun_one(self, op: Op) -> Any:
        return (await self.abatch([op]))[0]

    def _get_op(self, namespace: tuple[str, ...], key: str, refresh_ttl: bool | None) -> GetOp:
        _validate_labels(namespace)
        return GetOp(tuple(namespace), str(key), _refresh(self.ttl_config, refresh_ttl))

    def _search_op(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> SearchOp:
        _validate_labels(namespace_prefix)
        return SearchOp(
            tuple(namespace_prefix),
            filter,
            limit,
            offset,
            query,
            _refresh(self.ttl_config, refresh_ttl),
        )

    def _put_op(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> PutOp:
        _validate_namespace(namespace)
        if ttl not in (NOT_PROVIDED, None) and not self.supports_ttl:
            raise NotImplementedError(
                f"TTL is not supported by {type(self).__name__}: use a store that "
                "supports it or pass ttl=None"
            )
        return PutOp(tuple(namespace), str(key), value, index, _ttl(self.ttl_config, ttl))

    def _delete_op(self, namespace: tuple[str, ...], key: str) -> PutOp:
        _validate_labels(namespace)
        return PutOp(tuple(namespace), str(key), None)

    def _list_op(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> ListNamespacesOp:
        _validate_labels(prefix or ())
        _validate_labels(suffix or ())
        conditions = []
        if prefix:
            conditions.append(MatchCondition("prefix", tuple(prefix)))
        if suffix:
            conditions.append(MatchCondition("suffix", tuple(suffix)))
        return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace`` / ``key``, or ``None``."""
        return self._run_one(self._get_op(namespace, key, refresh_ttl))  # type: ignore[no-any-return]

    @params_of(_search_op)
    def search(self, *args: Any, **kwargs: Any) -> list[SearchItem]:
        """Items under ``namespace_prefix``: filtered, ranked by ``query`` when the
        store has an index, paged."""
        return self._run_one(self._search_op(*args, **kwargs))  # type: ignore[no-any-return]

    @params_of(_put_op)
    def put(self, *args: Any, **kwargs: Any) -> None:
        """Stores ``value`` (a dict of JSON values), replacing what was there."""
        self._run_one(self._put_op(*args, **kwargs))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Deletes the item (nothing happens if there is none)."""
        self._run_one(self._delete_op(namespace, key))

    @params_of(_list_op)
    def list_namespaces(self, *args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
        """The namespaces holding items, sorted; ``"*"`` in a pattern matches any
        label; ``max_depth`` cuts them (then each appears once)."""
        return self._run_one(self._list_op(*args, **kwargs))  # type: ignore[no-any-return]

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        return await self._arun_one(self._get_op(namespace, key, refresh_ttl))  # type: ignore[no-any-return]

    @params_of(_search_op)
    async def asearch(self, *args: Any, **kwargs: Any) -> list[SearchItem]:
        return await self._arun_one(self._search_op(*args, **kwargs))  # type: ignore[no-any-return]

    @params_of(_put_op)
    async def aput(self, *args: Any, **kwargs: Any) -> None:
        await self._arun_one(self._put_op(*args, **kwargs))

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        await self._arun_one(self._delete_op(namespace, key))

    @params_of(_list_op)
    async def alist_namespaces(self, *args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
        return await self._arun_one(self._list_op(*args, **kwargs))  # type: ignore[no-any-return]


__all__ += ["AEmbeddingsFunc", "EmbeddingsFunc"]
