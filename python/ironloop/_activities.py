"""Activities: the functions that execute schema-only tools explicitly (the Agent/Tool
spec's *explicit execution*). A schema names its function with ``_activity``; the
function is registered apart with ``register_activity(name, fn)``, so a schema and
its implementation can be swapped independently."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from ironloop._ironloop import _json_schema_errors

__all__ = ["register_activity", "unregister_activity"]

_lock = threading.Lock()
_activities: dict[str, Callable[..., Any]] = {}


def register_activity(name: str, fn: Callable[..., Any]) -> None:
    """Registers ``fn`` (sync or async, called with the tool's arguments as keywords)
    as the activity ``name``, replacing any earlier one: tools whose schema says
    ``"_activity": name`` run it from their next call on.

    Example:
        >>> from ironloop import Tool, register_activity
        >>> register_activity("double", lambda n: 2 * n)
        >>> t = Tool.from_schema({"name": "twice", "description": "Doubles.",
        ...     "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
        ...     "_activity": "double"})
        >>> import asyncio
        >>> asyncio.run(t.func(n=4))
        8
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an activity name must be a non-empty string, got {name!r}")
    if not callable(fn):
        raise TypeError(f"activity {name!r}: fn must be callable, got {type(fn).__name__}")
    with _lock:
        _activities[name] = fn


def unregister_activity(name: str) -> bool:
    """Removes the activity ``name``; whether it was registered."""
    with _lock:
        return _activities.pop(name, None) is not None


def _lookup(tool: str, name: str) -> Callable[..., Any]:
    with _lock:
        fn = _activities.get(name)
        known = sorted(_activities)
    if fn is None:
        raise LookupError(
            f"tool {tool!r} names the activity {name!r}, which is not registered "
            f"(registered: {', '.join(known) or 'none'}); call "
            f"ironloop.register_activity({name!r}, fn) first"
        )
    return fn


def check_output(tool: str, output_schema: dict[str, Any] | None, result: Any) -> Any:
    """``result`` when it matches the tool's declared ``_output``; else a ``ValueError``
    saying how it does not (the model sees it as an error result)."""
    if output_schema is not None:
        errors = _json_schema_errors(output_schema, result)
        if errors:
            raise ValueError(
                f"tool {tool!r} returned a result that does not match its _output schema: "
                + "; ".join(errors)
            )
    return result


def activity_runner(
    tool: str, activity: Any, output_schema: dict[str, Any] | None
) -> Callable[..., Any]:
    """The function of a tool whose schema names ``activity``: runs the registered
    function (looked up at each call) and checks its result against ``_output``."""
    if not isinstance(activity, str) or not activity:
        raise ValueError(
            f"Tool.from_schema({tool!r}): '_activity' must name a registered activity, "
            f"got {activity!r}"
        )
    _lookup(tool, activity)  # fail now, not at the first call

    async def run(**kwargs: Any) -> Any:
        result = _lookup(tool, activity)(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return check_output(tool, output_schema, result)

    return run
