"""JSON for checkpoints: what ``json`` cannot write on its own. Not public API."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ironloop._ironloop import BaseMessage

_MSG = "__ironloop_message__"


def encode(obj: Any) -> Any:
    """A JSON-compatible form of ``obj``; ``TypeError`` when there is none."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, BaseMessage):
        return {_MSG: obj.model_dump()}
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"dict keys must be str to be checkpointed, got {type(k).__name__}")
            out[k] = encode(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return encode(obj.value)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return encode(dataclasses.asdict(obj))
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return encode(dump(mode="json"))
    raise TypeError(f"{type(obj).__module__}.{type(obj).__qualname__} is not JSON-serialisable")


def decode(obj: Any) -> Any:
    """Reverses ``encode`` for messages; everything else stays plain JSON values."""
    if isinstance(obj, dict):
        if len(obj) == 1 and _MSG in obj:
            from ironloop._ironloop import _message_from_dict

            return _message_from_dict(obj[_MSG])
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj
