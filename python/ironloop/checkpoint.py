"""Checkpoint savers under one base type, as LangGraph's ``BaseCheckpointSaver``.

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
from typing import Any, Generic, TypeVar

from ironloop._ironloop import MemorySaver, PostgresSaver, SqliteSaver

__all__ = ["BaseCheckpointSaver", "InMemorySaver", "MemorySaver", "PostgresSaver", "SqliteSaver"]


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


for _saver in (MemorySaver, SqliteSaver, PostgresSaver):
    BaseCheckpointSaver.register(_saver)
del _saver

#: LangGraph's name for the in-process saver.
InMemorySaver = MemorySaver
