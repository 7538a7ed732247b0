"""The types a compiled graph restores from its checkpoints. Not public API.

A checkpoint stores an enum, dataclass or pydantic model as its data and the name of
its type (``module:qualname``). Loading restores the type only if the graph allows
it: the types its state schemas name (fields of TypedDicts, dataclasses and pydantic
models, through ``list[X]``, ``Optional[X]``, unions and ``Annotated[X, ...]``), and
those passed as ``compile(..., serde_allowlist=[...])`` — classes, or ``(module,
qualname)`` pairs as LangGraph's ``allowed_msgpack_modules`` spells them. Anything else
loads as its plain data with a ``CheckpointTypeWarning``; nothing is ever imported.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Iterable
from typing import Any, get_args, get_origin, get_type_hints

import typing_extensions

__all__ = ["SerdeAllowlist", "allowlist"]

#: What ``serde_allowlist=`` takes: classes, or ``(module, qualname)`` pairs.
SerdeAllowlist = Iterable[type | tuple[str, str]]


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _typed(tp: type) -> bool:
    """Whether the checkpoint encoder stores instances of ``tp`` with its name."""
    return (
        issubclass(tp, enum.Enum) or dataclasses.is_dataclass(tp) or hasattr(tp, "model_validate")
    )


def _hints(tp: type) -> list[Any]:
    """The annotations of a class's fields (pydantic's as it resolved them)."""
    fields = getattr(tp, "model_fields", None)
    if isinstance(fields, dict):
        return [getattr(f, "annotation", None) for f in fields.values()]
    try:
        return list(get_type_hints(tp, include_extras=True).values())
    except Exception:  # unresolvable names: nothing to learn from them
        return []


def schema_types(schemas: Iterable[Any]) -> list[type]:
    """The enums, dataclasses and pydantic models ``schemas`` name, at any depth."""
    seen: set[int] = set()
    out: list[type] = []

    def visit(tp: Any) -> None:
        if id(tp) in seen:
            return
        seen.add(id(tp))
        origin = get_origin(tp)
        if origin is typing.Literal:
            return
        if origin is not None:
            args = get_args(tp)
            # ``Annotated[X, meta...]``: only ``X`` is a type.
            for a in args[:1] if origin is typing.Annotated else args:
                visit(a)
            visit(origin)
            return
        if not isinstance(tp, type):
            return
        if _typed(tp):
            out.append(tp)
        if issubclass(tp, enum.Enum):
            return
        if (
            dataclasses.is_dataclass(tp)
            or hasattr(tp, "model_fields")
            or typing_extensions.is_typeddict(tp)
        ):
            for hint in _hints(tp):
                visit(hint)

    for s in schemas:
        visit(s)
    return out


def allowlist(schemas: Iterable[Any], extra: SerdeAllowlist | None) -> dict[str, type | None]:
    """``{"module:qualname": class}`` for the graph's core: the schemas' types and
    ``extra``'s (a pair maps to ``None``: the core finds its class among the modules
    already imported, never imports one)."""
    out: dict[str, type | None] = {_path(t): t for t in schema_types(schemas)}
    for item in extra or ():
        if isinstance(item, type):
            out[_path(item)] = item
        elif (
            isinstance(item, (tuple, list))
            and len(item) == 2
            and all(isinstance(p, str) and p for p in item)
        ):
            out.setdefault(f"{item[0]}:{item[1]}", None)
        else:
            raise TypeError(
                "serde_allowlist takes classes or (module, qualname) pairs of str, such as "
                f"MyModel or ('my_app.models', 'MyModel'); got {item!r}"
            )
    return out
