"""LangGraph's ``version="v2"`` shapes, made from the v1 stream: every chunk is a dict
``{"type": mode, "ns": namespace, "data": payload}`` (``values`` chunks also carry
``"interrupts"``), and ``invoke`` returns a ``GraphOutput``. As LangGraph 1.2's, v2
gives a pydantic or dataclass state as its class: the run's own ``values`` and
``GraphOutput.value`` as the output schema, the ``values`` of ``checkpoints`` /
``debug`` checkpoints as the state schema."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ironloop._constants import INTERRUPT
from ironloop.types import GraphOutput

__all__ = ["as_output", "parts", "aparts", "schema_mapper"]

#: Makes a state dict an instance of its schema (``None``: the dict is kept).
Mapper = Callable[[dict[str, Any]], Any] | None


def schema_mapper(schema: Any) -> Mapper:
    """``schema(**state)`` for a pydantic model or a dataclass, else ``None``."""
    if not isinstance(schema, type):
        return None
    if dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields"):
        return lambda state: schema(**state)
    return None


def _checkpoint_values(payload: Any, mapper: Mapper) -> Any:
    """A ``checkpoints`` payload or a ``debug`` checkpoint event with its
    ``values`` as the state schema (not the first checkpoint's: its channels are not
    all written yet)."""
    if mapper is None or not isinstance(payload, dict):
        return payload
    if payload.get("type") == "checkpoint" and isinstance(payload.get("payload"), dict):
        return {**payload, "payload": _checkpoint_values(payload["payload"], mapper)}
    values = payload.get("values")
    if isinstance(values, dict) and "__start__" not in (payload.get("next") or ()):
        return {**payload, "values": mapper(values)}
    return payload


class _Parts:
    """Turns v1 items (``(mode, data)``, or ``(ns, mode, data)`` with subgraphs) into
    v2 parts. A v1 ``values`` chunk's ``"__interrupt__"`` key moves to the part's
    ``"interrupts"``."""

    def __init__(self, subgraphs: bool, output: Mapper = None, state: Mapper = None) -> None:
        self.subgraphs = subgraphs
        #: The graph's own schemas (a subgraph's chunks keep their dicts).
        self.output, self.state = output, state

    def __call__(self, item: Any) -> dict[str, Any]:
        if self.subgraphs:
            ns, mode, data = item
        else:
            (mode, data), ns = item, ()
        if mode in ("checkpoints", "debug") and not ns:
            data = _checkpoint_values(data, self.state)
        if mode != "values":
            return {"type": mode, "ns": ns, "data": data}
        interrupts: tuple[Any, ...] = ()
        if isinstance(data, dict) and INTERRUPT in data:
            interrupts = tuple(data[INTERRUPT])
            data = {k: v for k, v in data.items() if k != INTERRUPT}
        if self.output is not None and isinstance(data, dict) and not ns:
            data = self.output(data)
        return {"type": mode, "ns": ns, "data": data, "interrupts": interrupts}


def parts(
    items: Iterator[Any], subgraphs: bool, output: Mapper = None, state: Mapper = None
) -> Iterator[dict[str, Any]]:
    """The v2 parts of a v1 multi-mode stream (``output`` / ``state``: the graph's
    ``schema_mapper``s)."""
    part = _Parts(subgraphs, output, state)
    for item in items:
        yield part(item)


async def aparts(
    items: AsyncIterator[Any], subgraphs: bool, output: Mapper = None, state: Mapper = None
) -> AsyncIterator[dict[str, Any]]:
    """``parts`` for ``astream``."""
    part = _Parts(subgraphs, output, state)
    async for item in items:
        yield part(item)


def as_output(
    result: Any, usage: dict[str, dict[str, Any]] | None = None, output: Mapper = None
) -> GraphOutput[Any]:
    """A v1 ``invoke`` result (the output, with ``"__interrupt__"`` when paused) as v2's
    ``GraphOutput``, with the run's token usage; a finished run's value as the output
    schema (``output``: its ``schema_mapper``)."""
    usage = usage or {}
    if isinstance(result, dict) and INTERRUPT in result:
        rest = {k: v for k, v in result.items() if k != INTERRUPT}
        return GraphOutput(rest or None, tuple(result[INTERRUPT]), usage)
    if output is not None and isinstance(result, dict):
        result = output(result)
    return GraphOutput(result, usage_metadata=usage)
