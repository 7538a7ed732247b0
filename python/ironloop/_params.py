"""One parameter list for twin entry points.

A sync method and its async twin (``invoke`` / ``ainvoke``, ``stream`` / ``astream``)
take the same parameters. Written out on each, the list is kept in step by hand; here it
is written once, on the method that reads it, and each entry point is marked as taking
it: type checkers check calls against it and ``inspect.signature`` / ``help()`` show it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from typing_extensions import ParamSpec

P = ParamSpec("P")
R = TypeVar("R")


def params_of(reader: Callable[P, Any]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Marks an entry point written ``(self, *args, **kwargs)`` that hands its
    arguments to ``reader`` as taking ``reader``'s parameters; it keeps its own return
    annotation. ``reader`` takes the entry point's first parameter too: a method of
    the same class (``self``), or for a classmethod entry point a classmethod or a
    function whose first parameter is the class. A call with arguments ``reader``
    does not take raises ``TypeError`` when the entry point hands them on (for an
    ``async def`` one, when it is awaited)."""
    shown = inspect.signature(getattr(reader, "__func__", reader))  # a classmethod's function

    def mark(entry: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(entry).return_annotation
        entry.__signature__ = shown.replace(return_annotation=returns)  # type: ignore[attr-defined]
        return entry

    return mark
