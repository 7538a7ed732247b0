"""How an entrypoint streams: the modes its inner graph is streamed with (moved out of
``func.py`` whole, to keep that module readable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_DROP = object()


def _with_custom(mode: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The modes to stream an entrypoint with, and what makes their items the ones
    asked for. ``custom`` is always streamed: it makes the engine stream from inside
    the running task (a sync ``stream()`` otherwise gets a task's items when it
    returns), and the tasks' updates are made there; its items are dropped unless
    asked for."""
    modes = [mode] if isinstance(mode, str) else list(mode)
    if "custom" in modes:
        return mode, lambda item: item
    single = isinstance(mode, str)

    def keep(item: Any) -> Any:
        if isinstance(item, dict):  # a version="v2" part
            return _DROP if item.get("type") == "custom" else item
        if isinstance(item, tuple) and len(item) == 3:  # subgraphs=True
            ns, m, chunk = item
            if m == "custom":
                return _DROP
            return (ns, chunk) if single else item
        m, chunk = item
        if m == "custom":
            return _DROP
        return chunk if single else item

    return [*modes, "custom"], keep
