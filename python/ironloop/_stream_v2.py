"""LangGraph's ``version="v2"`` shapes, made from the v1 stream: every chunk is a dict
``{"type": mode, "ns": namespace, "data": payload}`` (``values`` chunks also carry
``"interrupts"``), and ``invoke`` returns a ``GraphOutput``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from ironloop._constants import INTERRUPT
from ironloop.types import GraphOutput

__all__ = ["as_output", "parts", "aparts"]


class _Parts:
    """Turns v1 items (``(mode, data)``, or ``(ns, mode, data)`` with subgraphs) into
    v2 parts. A v1 ``values`` chunk's ``"__interrupt__"`` key moves to the part's
    ``"interrupts"``."""

    def __init__(self, subgraphs: bool) -> None:
        self.subgraphs = subgraphs

    def __call__(self, item: Any) -> dict[str, Any]:
        if self.subgraphs:
            ns, mode, data = item
        else:
            (mode, data), ns = item, ()
        if mode != "values":
            return {"type": mode, "ns": ns, "data": data}
        if isinstance(data, dict) and INTERRUPT in data:
            state = {k: v for k, v in data.items() if k != INTERRUPT}
            return {"type": mode, "ns": ns, "data": state, "interrupts": tuple(data[INTERRUPT])}
        return {"type": mode, "ns": ns, "data": data, "interrupts": ()}


def parts(items: Iterator[Any], subgraphs: bool) -> Iterator[dict[str, Any]]:
    """The v2 parts of a v1 multi-mode stream."""
    part = _Parts(subgraphs)
    for item in items:
        yield part(item)


async def aparts(items: AsyncIterator[Any], subgraphs: bool) -> AsyncIterator[dict[str, Any]]:
    """``parts`` for ``astream``."""
    part = _Parts(subgraphs)
    async for item in items:
        yield part(item)


def as_output(result: Any, usage: dict[str, dict[str, Any]] | None = None) -> GraphOutput[Any]:
    """A v1 ``invoke`` result (the output, with ``"__interrupt__"`` when paused) as v2's
    ``GraphOutput``, with the run's token usage."""
    usage = usage or {}
    if isinstance(result, dict) and INTERRUPT in result:
        rest = {k: v for k, v in result.items() if k != INTERRUPT}
        return GraphOutput(rest or None, tuple(result[INTERRUPT]), usage)
    return GraphOutput(result, usage_metadata=usage)
