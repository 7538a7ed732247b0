"""A v2 stream part as a protocol event."""

from __future__ import annotations

import time
from typing import Any

from ironloop.stream._types import ProtocolEvent

__all__ = ["convert_to_protocol_event"]


def convert_to_protocol_event(part: Any) -> ProtocolEvent:
    """``{"type", "ns", "data"[, "interrupts"]}`` (a ``stream(..., version="v2")``
    part) as ``{"type": "event", "method": type, "params": {namespace, timestamp,
    data[, interrupts]}}``."""
    params: dict[str, Any] = {
        "namespace": list(part["ns"]),
        "timestamp": int(time.time() * 1000),
        "data": part["data"],
    }
    if "interrupts" in part:
        params["interrupts"] = part["interrupts"]
    return {"type": "event", "method": part["type"], "params": params}  # type: ignore[typeddict-item]
