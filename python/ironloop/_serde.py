"""JSON for checkpoints: what ``json`` cannot write on its own. Not public API.

Values keep their type across a checkpoint: messages, dataclasses, pydantic models,
enums, tuples and sets are written with a type tag and rebuilt on load. Anything else
that JSON cannot hold is refused (the caller turns that into a ``CheckpointError``
naming the channel), never silently changed.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from typing import Any

from ironloop._ironloop import _message_to_dict
from ironloop.messages import MESSAGE_TYPES

_MSG = "__ironloop_message__"
_TYPE = "__ironloop_type__"
_PLAIN = (str, int, float, bool, type(None))


def _type_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode(obj: Any) -> Any:
    """A JSON-compatible form of ``obj``; ``TypeError`` when there is none."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is list:
        return [encode(v) for v in obj]
    if t is dict:
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"dict keys must be str to be checkpointed, got {type(k).__name__}")
            out[k] = encode(v)
        return out
    if isinstance(obj, MESSAGE_TYPES):
        return {_MSG: _message_to_dict(obj)}
    if t is tuple:
        return {_TYPE: "tuple", "items": [encode(v) for v in obj]}
    if t in (set, frozenset):
        return {_TYPE: t.__name__, "items": [encode(v) for v in obj]}
    if isinstance(obj, enum.Enum):
        return {_TYPE: _type_path(t), "value": encode(obj.value)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {_TYPE: _type_path(t), "value": fields}
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and hasattr(t, "model_validate"):
        return {_TYPE: _type_path(t), "value": dump(mode="json")}
    if isinstance(obj, dict):
        return encode(dict(obj))
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    raise TypeError(f"{t.__module__}.{t.__qualname__} is not JSON-serialisable")


def _load_type(path: str) -> type:
    module, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise TypeError(f"cannot restore a checkpointed {path}: {e}") from e
    ok = isinstance(obj, type) and (
        dataclasses.is_dataclass(obj)
        or issubclass(obj, enum.Enum)
        or hasattr(obj, "model_validate")
    )
    if not ok:
        raise TypeError(f"refusing to restore {path}: not a dataclass, enum or pydantic model")
    return obj


def decode(obj: Any) -> Any:
    """Reverses ``encode``."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is list:
        return [decode(v) for v in obj]
    if t is dict:
        if len(obj) == 1 and _MSG in obj:
            from ironloop._ironloop import _message_from_dict

            return _message_from_dict(obj[_MSG])
        tag = obj.get(_TYPE)
        if isinstance(tag, str):
            if tag == "tuple":
                return tuple(decode(v) for v in obj["items"])
            if tag in ("set", "frozenset"):
                return (set if tag == "set" else frozenset)(decode(v) for v in obj["items"])
            cls: Any = _load_type(tag)
            value = decode(obj["value"])
            if issubclass(cls, enum.Enum):
                return cls(value)
            if dataclasses.is_dataclass(cls):
                return cls(**value)  # type: ignore[operator]
            return cls.model_validate(value)
        return {k: decode(v) for k, v in obj.items()}
    return obj
