"""What the tool-schema builder knows about Python types: which typing construct an
annotation is, a TypedDict's required keys, injection markers, defaults as JSON, and
the ``FunctionSpec`` it produces (shared by ``_schema``, ``_schema_json`` and
``_schema_convert``)."""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime
import enum
import inspect
import json
import pathlib
import sys
import types
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_INJECT_KINDS = frozenset({"state", "store", "tool_call_id", "context", "runtime"})
_NONE_TYPE: type = type(None)
_UnionType = getattr(types, "UnionType", None)  # ``X | Y`` (3.10+)

_Converter = Callable[[Any], Any]
_Schema = dict[str, Any]

#: The container types an annotation may name, by the JSON shape they take.
_ARRAYS = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)


@dataclass(frozen=True)
class FunctionSpec:
    """Everything the runtime needs to know about a tool function."""

    name: str
    description: str
    parameters: dict[str, Any]
    injected: dict[str, tuple[str, str | None]]
    converters: dict[str, Callable[[Any], Any]]
    is_async: bool


class _Unsupported(Exception):
    """Raised inside the schema builder; turned into a TypeError naming the parameter."""


# --------------------------------------------------------------------------- helpers


def _resolved_hints(tp: Any, fail: Callable[[Any, Exception], Exception]) -> dict[str, Any]:
    """A class's annotations resolved (``include_extras``: markers kept). One that
    does not resolve (a name imported only for type checkers) raises ``fail(tp,
    cause)`` from the cause: the caller's own error, saying what it wanted and why."""
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception as e:
        raise fail(tp, e) from e


def _special(name: str) -> tuple[Any, ...]:
    """``typing.<name>`` and ``typing_extensions.<name>`` (they differ on old Pythons)."""
    found = [getattr(typing, name, None)]
    te = sys.modules.get("typing_extensions")
    if te is not None:
        found.append(getattr(te, name, None))
    return tuple(f for f in found if f is not None)


def _is_union(origin: Any) -> bool:
    return origin is typing.Union or (_UnionType is not None and origin is _UnionType)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _pydantic_attr(module: str, attr: str) -> Any:
    """An attribute of an already-imported pydantic module (never imports pydantic)."""
    mod = sys.modules.get(module)
    return getattr(mod, attr, None) if mod is not None else None


def _is_pydantic_model(tp: Any) -> bool:
    base = _pydantic_attr("pydantic", "BaseModel")
    return base is not None and isinstance(tp, type) and issubclass(tp, base)


def _is_typeddict(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__total__")
        and hasattr(tp, "__required_keys__")
    )


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _strip_qualifier(tp: Any) -> Any:
    """Unwrap ``Required[X]`` / ``NotRequired[X]`` / ``ReadOnly[X]`` (TypedDict fields)."""
    while True:
        origin = typing.get_origin(tp)
        if origin is not None and origin in _special("Required") + _special(
            "NotRequired"
        ) + _special("ReadOnly"):
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _typeddict_required_keys(tp: type, hints: dict[str, Any]) -> frozenset[str]:
    """The keys a TypedDict requires: ``__required_keys__``, corrected by each field's
    own ``Required[...]`` / ``NotRequired[...]``.

    3.10's ``typing.TypedDict`` does not know PEP 655 (3.11), so its
    ``__required_keys__`` follows ``total=`` only, even for fields marked with
    ``typing_extensions.Required`` / ``NotRequired``; the marks are still in the
    hints (``include_extras=True``). On 3.11+ the correction changes nothing.
    """
    required = set(getattr(tp, "__required_keys__", frozenset()))
    for key, ftp in hints.items():
        while True:
            origin = typing.get_origin(ftp)
            if origin is None:
                break
            if origin in _special("Required"):
                required.add(key)
            elif origin in _special("NotRequired"):
                required.discard(key)
            elif origin not in _special("ReadOnly"):
                break
            ftp = typing.get_args(ftp)[0]
    return frozenset(required)


def _json_default(value: Any) -> tuple[bool, Any]:
    """``(ok, json_value)`` for a default value."""

    def enc(o: Any) -> Any:
        if isinstance(o, enum.Enum):
            return o.value
        if isinstance(o, (datetime.date, datetime.time)):
            return o.isoformat()
        if isinstance(o, (uuid.UUID, pathlib.PurePath)):
            return str(o)
        dump = getattr(o, "model_dump", None)
        if callable(dump) and _is_pydantic_model(type(o)):
            return dump(mode="json")
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        raise TypeError

    try:
        return True, json.loads(json.dumps(value, default=enc, allow_nan=False))
    except (TypeError, ValueError):
        return False, None


def _class_doc(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    if not doc:
        return None
    doc = inspect.cleandoc(doc)
    # dataclasses invent ``Name(field: type, ...)`` when there is no docstring.
    if _is_dataclass_type(cls) and doc.startswith(cls.__name__ + "("):
        return None
    return doc


def _inject_marker(meta: Any) -> tuple[str, str | None] | None:
    kind = getattr(meta, "__ironloop_inject__", None)
    if isinstance(kind, str) and kind in _INJECT_KINDS:
        field = getattr(meta, "field", None) if not isinstance(meta, type) else None
        return kind, field if isinstance(field, str) else None
    return None


def _injection(tp: Any) -> tuple[str, str | None] | None:
    """The injection a parameter annotation asks for, if any."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        for meta in tp.__metadata__:
            found = _inject_marker(meta)
            if found is not None:
                return found
        return _injection(typing.get_args(tp)[0])
    if _is_union(origin):
        args = [a for a in typing.get_args(tp) if a is not _NONE_TYPE]
        return _injection(args[0]) if len(args) == 1 else None
    if isinstance(origin, type) and hasattr(origin, "__ironloop_inject__"):
        return _inject_marker(origin)  # ``ToolRuntime[Ctx, State]``
    return _inject_marker(tp)


def _tool_runtime(ctx: Any) -> Any:
    """A ``ToolRuntime`` parameter's value, from the ``ToolContext`` the engine gives."""
    from ironloop._tool_call import from_context

    return from_context(ctx)
