"""JSON for the wire and the server's records: graph values (messages, interrupts,
pydantic models, dataclasses) as LangGraph's server writes them.

Encoded and decoded by orjson when it is installed (the ``serve`` extra installs it:
a run's bodies, records and final values are encoded and decoded several times, and
the standard library's encoder was 6-9 % of a background run's instructions in the
server), by the standard library otherwise and for what orjson refuses (integers
beyond 64 bits, lone surrogates, ``NaN`` text, nesting deeper than 254): the same
values either way, but that a float NaN or infinity is written ``null``, as LangGraph's
server (orjson too) writes it, rather than the standard library's ``NaN``, which is
not JSON."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from enum import Enum
from typing import Any
from uuid import UUID

from starlette.responses import JSONResponse as _StarletteJSON

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - the serve extra installs it
    _orjson = None  # type: ignore[assignment]

#: Keys that are not strings written as their JSON text (as ``json.dumps`` does).
_ORJSON_OPTIONS = 0 if _orjson is None else _orjson.OPT_NON_STR_KEYS


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
        return loads(self)


def dumps(value: Any) -> str:
    """``value`` as compact JSON text; what JSON cannot hold is converted as above. A
    ``RawJSON`` value is its own text (only as the whole value: inside another it
    would be a string)."""
    if type(value) is RawJSON:
        return value
    if _orjson is not None:
        try:
            return _orjson.dumps(value, default=_default, option=_ORJSON_OPTIONS).decode()
        except TypeError:  # orjson.JSONEncodeError: refused, see the module's doc
            pass
    return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """The JSON value ``text`` holds (a ``ValueError`` if it is not JSON, with the
    standard library's message)."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except ValueError:  # orjson.JSONDecodeError: maybe JSON orjson refuses
            pass
    return json.loads(text)


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dicts, lists, strings, numbers)."""
    return loads(dumps(value))


class JSONResponse(_StarletteJSON):
    """Starlette's ``JSONResponse``, its body encoded by ``dumps``."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode()
