"""Filling managed values (``ironloop.managed``) into a node's state. Not public API."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from ironloop._runtime import task_var


def _filled(state: Any, managed: dict[str, Any]) -> Any:
    scratch = task_var.get(None)
    if scratch is None or not isinstance(state, dict):
        return state
    return {**state, **{key: m.get(scratch) for key, m in managed.items()}}


def with_managed(fn: Callable[..., Any], managed: dict[str, Any]) -> Callable[..., Any]:
    """Node ``fn`` given its state with the managed values of this step (its
    signature kept: the engine reads which arguments it takes from it)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def arun(state: Any, *args: Any, **kw: Any) -> Any:
            return await fn(_filled(state, managed), *args, **kw)

        return arun

    @functools.wraps(fn)
    def run(state: Any, *args: Any, **kw: Any) -> Any:
        return fn(_filled(state, managed), *args, **kw)

    return run
