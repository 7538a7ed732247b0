"""How an entrypoint streams: the modes its inner graph is streamed with (moved out of
``func.py`` whole, to keep that module readable)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ironloop._constants import INTERRUPT
from ironloop.types import GraphOutput

_DROP = object()


def entry_value(state: Any) -> Any:
    """What the entrypoint returned, from its inner graph's state (or the state)."""
    return state.get("value") if isinstance(state, dict) else state


def entry_result(out: Any) -> Any:
    """A run's result (or ``values`` chunk) of the inner graph as the entrypoint's: what
    it returned, with the interrupts it paused on."""
    if isinstance(out, GraphOutput):  # version="v2"
        return dataclasses.replace(out, value=entry_value(out.value))
    if isinstance(out, dict) and INTERRUPT in out:
        value = out.get("value")
        shown = dict(value) if isinstance(value, dict) else {}
        shown[INTERRUPT] = out[INTERRUPT]
        return shown
    return entry_value(out)


def _entry_chunk(name: str, mode: str, chunk: Any) -> Any:
    if mode == "values":
        return entry_result(chunk)
    if mode == "updates" and isinstance(chunk, dict) and name in chunk:
        return {**chunk, name: entry_value(chunk[name])}
    if mode in DEBUG_MODES:
        return debug_chunk(name, mode, chunk)
    return chunk


def entry_item(name: str, item: Any, stream_mode: Any) -> Any:
    """A stream item of the inner graph of the entrypoint ``name`` as the entrypoint's
    (asked for with ``stream_mode``: one mode, several, ``version="v2"`` parts)."""
    if isinstance(item, dict) and "type" in item and "data" in item:  # version="v2"
        return {**item, "data": _entry_chunk(name, item["type"], item["data"])}
    if isinstance(stream_mode, str) or stream_mode is None:
        mode = stream_mode or "updates"
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], tuple):
            return (item[0], _entry_chunk(name, mode, item[1]))
        return _entry_chunk(name, mode, item)
    if isinstance(item, tuple) and len(item) == 3:
        ns, mode, chunk = item
        return (ns, mode, _entry_chunk(name, mode, chunk))
    if isinstance(item, tuple) and len(item) == 2:
        mode, chunk = item
        return (mode, _entry_chunk(name, mode, chunk))
    return item


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


#: The stream modes whose items show tasks and checkpoints (``debug``, and its two
#: views).
DEBUG_MODES = ("debug", "tasks", "checkpoints")


def debug_chunk(name: str, mode: str, chunk: Any) -> Any:
    """A ``debug`` / ``tasks`` / ``checkpoints`` item of the entrypoint ``name``'s inner
    graph as LangGraph shows an entrypoint's: its task's input is the entrypoint's
    input, triggered by ``__start__``; its result is ``{"__end__": returned}``; a
    checkpoint's values are what the entrypoint returned (``None`` before it did). The
    inner graph's state keys (``input``, ``value``, ``save``) do not show."""
    if mode == "debug" and isinstance(chunk, dict) and "payload" in chunk:
        kind = "checkpoint" if chunk.get("type") == "checkpoint" else "task"
        return {**chunk, "payload": _payload(name, kind, chunk["payload"])}
    if mode == "tasks":
        return _payload(name, "task", chunk)
    if mode == "checkpoints":
        return _payload(name, "checkpoint", chunk)
    return chunk


def _payload(name: str, kind: str, p: Any) -> Any:
    if not isinstance(p, dict):
        return p
    if kind == "checkpoint":
        ns = ((p.get("config") or {}).get("configurable") or {}).get("checkpoint_ns")
        values = p.get("values")
        if ns or not isinstance(values, dict):  # a subgraph's: not the entrypoint's
            return p
        return {**p, "values": values.get("value")}
    if p.get("name") != name:  # a `@task` call's, shown as it is
        return p
    if "input" in p:
        given = p["input"]
        shown = given.get("input") if isinstance(given, dict) else given
        return {**p, "input": shown, "triggers": ("__start__",)}
    result = p.get("result")
    if isinstance(result, dict) and "value" in result:
        return {**p, "result": {"__end__": result["value"]}}
    return p
