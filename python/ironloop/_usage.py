"""Token usage totalled over model calls: ``get_usage_metadata_callback()`` (as
langchain-core's) and the per-run total that ``invoke(..., version="v2")`` returns in
``GraphOutput.usage_metadata``.

Totals live in a ``contextvars`` variable holding the collectors in force. A run's
nodes and tools run in copies of the caller's context, so a model call anywhere in the
run (a node, a tool, a sub-agent run by a tool, in parallel or not) adds to the
collectors of the run that contains it, and to no other run's: two ``ainvoke`` on one
loop are two tasks with two contexts. With no collector in force a model call pays one
``ContextVar.get``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["UsageMetadataCallback", "add_usage", "get_usage_metadata_callback"]

_collectors: ContextVar[tuple[UsageMetadataCallback, ...]] = ContextVar(
    "ironloop_usage_collectors", default=()
)


def add_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The sum of two ``usage_metadata`` dicts, field by field (nested token details
    included), as langchain-core's ``add_usage``."""
    out: dict[str, Any] = dict(left or {})
    for key, value in (right or {}).items():
        if isinstance(value, dict):
            out[key] = add_usage(out.get(key), value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = out.get(key, 0) + value
    return out


class UsageMetadataCallback:
    """The token usage of the model calls made while it is in force, by model name:
    ``usage_metadata`` maps a model name to its summed ``usage_metadata``
    (``input_tokens``, ``output_tokens``, ``total_tokens`` and the token details).
    Thread-safe: parallel tool calls and sub-agents add to it at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage_metadata: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        return str(self.usage_metadata)

    def add(self, model: str, usage: dict[str, Any]) -> None:
        """Adds one call's usage to ``model``'s total."""
        with self._lock:
            self.usage_metadata[model] = add_usage(self.usage_metadata.get(model), usage)


@contextmanager
def get_usage_metadata_callback() -> Iterator[UsageMetadataCallback]:
    """Totals the token usage of every model call made inside the ``with`` block, by
    model name: ironloop's models and LangChain chat models an agent calls, in nodes,
    tools and sub-agents, sync or async. Runs started elsewhere (another asyncio task
    or thread that did not start inside the block) are not counted.

    Example:
        >>> with ironloop.get_usage_metadata_callback() as cb:
        ...     agent.invoke({"messages": [("user", "hi")]})
        >>> cb.usage_metadata
        {'gpt-4o-mini': {'input_tokens': 12, 'output_tokens': 3, 'total_tokens': 15}}
    """
    cb = UsageMetadataCallback()
    token = _collectors.set((*_collectors.get(), cb))
    try:
        yield cb
    finally:
        _collectors.reset(token)


def record(model: str, message: Any) -> None:
    """Adds a model's answer's ``usage_metadata`` to the collectors in force."""
    collectors = _collectors.get()
    if not collectors:
        return
    usage = getattr(message, "usage_metadata", None)
    if not usage:
        return
    for cb in collectors:
        cb.add(model, dict(usage))


def model_name_of(model: Any, message: Any = None) -> str:
    """The name a call's usage is filed under: the model the caller asked for, or
    the one the provider's answer names."""
    for attr in ("model_name", "model"):
        name = getattr(model, attr, None)
        if isinstance(name, str) and name:
            return name
    meta = getattr(message, "response_metadata", None) or {}
    name = meta.get("model_name") or meta.get("model")
    return name if isinstance(name, str) and name else type(model).__name__
