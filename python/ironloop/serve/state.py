"""A thread's state as LangGraph's server shows it: ``StateSnapshot`` to JSON."""

from __future__ import annotations

from typing import Any

from .serde import to_jsonable


def _checkpoint(config: Any) -> dict[str, Any] | None:
    if not config:
        return None
    c = config.get("configurable", {})
    if not c.get("checkpoint_id"):
        return None
    return {
        "checkpoint_id": c["checkpoint_id"],
        "thread_id": c.get("thread_id"),
        "checkpoint_ns": c.get("checkpoint_ns", ""),
    }


def _interrupts(items: Any) -> list[dict[str, Any]]:
    return [{"value": to_jsonable(i.value), "id": getattr(i, "id", None)} for i in items or ()]


def snapshot_json(snap: Any) -> dict[str, Any]:
    """``snap`` (a ``StateSnapshot``) as the ``/state`` and ``/history`` endpoints return it."""
    checkpoint = _checkpoint(snap.config)
    parent = _checkpoint(snap.parent_config)
    tasks = []
    for t in snap.tasks or ():
        state = t.state
        if state is not None and hasattr(state, "values"):
            state = snapshot_json(state)
        elif isinstance(state, dict):
            state = {"configurable": state.get("configurable", {})}
        tasks.append(
            {
                "id": t.id,
                "name": t.name,
                "path": list(getattr(t, "path", ()) or ()),
                "error": None
                if t.error is None
                else f"{type(t.error).__name__}: {t.error}"
                if isinstance(t.error, BaseException)
                else t.error,
                "interrupts": _interrupts(t.interrupts),
                "checkpoint": None,
                "state": to_jsonable(state),
                "result": to_jsonable(getattr(t, "result", None)),
            }
        )
    values = snap.values if checkpoint is not None else {}
    return {
        "values": to_jsonable(values if values is not None else {}),
        "next": list(snap.next or ()),
        "tasks": tasks,
        "metadata": to_jsonable(snap.metadata) if checkpoint else None,
        "created_at": snap.created_at if checkpoint else None,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": _interrupts(getattr(snap, "interrupts", ())),
        "checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }


def thread_interrupts(snap_json: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``{task_id: [interrupt, ...]}`` of the tasks paused on ``interrupt()``."""
    return {t["id"]: t["interrupts"] for t in snap_json["tasks"] if t["interrupts"]}
