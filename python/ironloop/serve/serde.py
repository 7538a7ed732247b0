"""JSON for the wire: graph values (messages, interrupts, pydantic models, dataclasses)
as LangGraph's server writes them, and Server-Sent Events frames."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from enum import Enum
from typing import Any
from uuid import UUID


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseException):  # a failed task's `error` (tasks / debug modes)
        return f"{type(obj).__name__}: {obj}"
    dump = getattr(obj, "model_dump", None)
    if callable(dump):  # pydantic models, langchain-core messages
        return dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, (datetime,)):
        return obj.isoformat()
    if isinstance(obj, (UUID,)):
        return str(obj)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    asdict = getattr(obj, "_asdict", None)  # named tuples (StateSnapshot, PregelTask)
    if callable(asdict):
        return asdict()
    to_dict = getattr(obj, "to_dict", None) or getattr(obj, "dict", None)
    if callable(to_dict):
        return to_dict()
    if hasattr(obj, "value") and hasattr(obj, "id"):  # Interrupt
        return {"value": obj.value, "id": obj.id}
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return repr(obj)


class RawJSON(str):
    """Text that is JSON already (a thread's values as a run's end encoded them, or as
    stored): stored and answered as it is, not decoded and encoded again on the way."""

    __slots__ = ()

    def value(self) -> Any:
        """The JSON value the text holds."""
        return json.loads(self)


def dumps(value: Any) -> str:
    """``value`` as compact JSON text; what JSON cannot hold is converted as above. A
    ``RawJSON`` value is its own text (only as the whole value: inside another it
    would be a string)."""
    if type(value) is RawJSON:
        return value
    return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dicts, lists, strings, numbers)."""
    return json.loads(dumps(value))
