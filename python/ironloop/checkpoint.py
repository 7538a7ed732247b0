"""Checkpoint savers under one base type, as LangGraph's ``BaseCheckpointSaver``, with
its API: ``get_tuple``, ``list``, ``put``, ``put_writes``, ``delete_thread``,
``copy_thread``, ``prune``, ``delete_for_runs`` (and their ``a…`` forms) show and take
LangGraph's ``CheckpointTuple`` shapes over ironloop's own storage (``_saver_api``);
``sweep(ttl=...)`` deletes threads idle longer than a time to live.

``MemorySaver``, ``SqliteSaver`` and ``PostgresSaver`` are ironloop's savers (written in
Rust); ``BaseCheckpointSaver`` is the type they share, so code that annotates or checks
a checkpointer with LangGraph's base class ports by changing its import::

    >>> from ironloop import MemorySaver
    >>> from ironloop.checkpoint import BaseCheckpointSaver
    >>> isinstance(MemorySaver(), BaseCheckpointSaver)
    True
"""

from __future__ import annotations

from abc import ABC
from typing import Any, Generic, TypedDict, TypeVar

from ironloop._import_langgraph import import_langgraph
from ironloop._ironloop import MemorySaver, PostgresSaver, SqliteSaver
from ironloop._saver_api import CheckpointTuple, attach

__all__ = [
    "BaseCheckpointSaver",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "InMemorySaver",
    "MemorySaver",
    "PostgresSaver",
    "SqliteSaver",
    "import_langgraph",
]


class Checkpoint(TypedDict, total=False):
    """A checkpoint as LangGraph's saver API shows it (``get``, ``get_tuple``,
    ``list``) and takes it (``put``)."""

    v: int
    id: str
    ts: str
    channel_values: dict[str, Any]
    channel_versions: dict[str, Any]
    versions_seen: dict[str, dict[str, Any]]
    updated_channels: list[str] | None


class CheckpointMetadata(TypedDict, total=False):
    """A checkpoint's metadata: ``source`` (``input``, ``loop``, ``update``, ``fork``),
    ``step``, ``parents`` and the run's own keys (``run_id``, ``config["metadata"]``)."""

    source: str
    step: int
    parents: dict[str, str]
    run_id: str


#: The version type of LangGraph's ``BaseCheckpointSaver[V]`` (annotations only).
V = TypeVar("V", int, float, str)


class BaseCheckpointSaver(ABC, Generic[V]):
    """The type every ironloop saver is an instance of (``isinstance`` and annotations,
    ``BaseCheckpointSaver[str]`` included).

    Not a class to subclass: a checkpointer given to ``compile`` is one of ironloop's
    savers (or a Python subclass of one), whose storage runs in Rust.
    """

    def get_next_version(self, current: int | None, channel: Any = None) -> int:
        """LangGraph's default channel version after ``current``: 1, then 2, 3, ...
        (kept for code written against LangGraph's saver API; ironloop's savers
        version checkpoints themselves)."""
        if isinstance(current, str):
            raise NotImplementedError("string versions need a saver that makes them")
        return 1 if current is None else current + 1


#: LangGraph's saver methods. ironloop's engine reads and writes checkpoints in Rust, so
#: a subclass that overrides one of them would be silently bypassed: refused instead.
_SAVER_METHODS = (
    "get",
    "get_tuple",
    "list",
    "put",
    "put_writes",
    "delete_thread",
)


def check_saver(checkpointer: Any) -> None:
    """Refuses, at ``compile``, what is not a checkpointer (LangGraph's "Invalid
    checkpointer provided"), and a subclass of an ironloop saver that overrides one of
    LangGraph's saver methods (or their ``a…`` forms): ironloop's engine never calls
    them, so the override would not do what its author meant."""
    cls = type(checkpointer)
    base = next(
        (b for b in (MemorySaver, SqliteSaver, PostgresSaver) if isinstance(checkpointer, b)), None
    )
    if base is None and checkpointer is not None and not isinstance(checkpointer, bool):
        raise TypeError(
            f"Invalid checkpointer provided: {cls.__name__}. Pass one of ironloop's savers "
            "(MemorySaver, SqliteSaver, PostgresSaver), True (a subgraph keeps its own "
            "history in its parent's saver), False or None."
        )
    if base is None or cls is base:
        return
    names = [*_SAVER_METHODS, *(f"a{m}" for m in _SAVER_METHODS)]
    overridden = sorted(
        {n for k in cls.__mro__ if k not in base.__mro__ for n in names if n in vars(k)}
    )
    if overridden:
        raise TypeError(
            f"{cls.__name__} overrides {', '.join(overridden)} of {base.__name__}: ironloop's "
            "engine saves and loads checkpoints in Rust and would not call the override. "
            f"Pass a {base.__name__} (subclassing it to add methods of your own is fine)."
        )


for _saver in (MemorySaver, SqliteSaver, PostgresSaver):
    BaseCheckpointSaver.register(_saver)
del _saver
attach(MemorySaver, SqliteSaver, PostgresSaver)

#: LangGraph's name for the in-process saver.
InMemorySaver = MemorySaver
