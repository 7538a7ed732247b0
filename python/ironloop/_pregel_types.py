"""LangGraph's deprecated ``langgraph.pregel.types`` module: the names it re-exports
from ``langgraph.types``, here from ``ironloop.types``. Importing it warns as
LangGraph's does (``LangGraphDeprecatedSinceV10``), so code that still imports the old
path ports and is told where the names live now."""

from __future__ import annotations

from warnings import warn

from ironloop._retry import default_retry_on
from ironloop.types import CachePolicy, PregelTask, RetryPolicy, StateSnapshot, StateUpdate
from ironloop.warnings import LangGraphDeprecatedSinceV10

__all__ = [
    "CachePolicy",
    "PregelTask",
    "RetryPolicy",
    "StateSnapshot",
    "StateUpdate",
    "default_retry_on",
]

warn(
    "Importing from langgraph.pregel.types is deprecated. "
    "Please use 'from langgraph.types import ...' instead.",
    LangGraphDeprecatedSinceV10,
    stacklevel=2,
)
