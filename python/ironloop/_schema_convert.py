"""Converters that turn a tool argument's JSON value into the Python type its
annotation names (pydantic model, dataclass, Enum, tuple, dates, ...); ``None`` where
the JSON value already is that type, so plain-JSON tools pay nothing."""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import dataclasses
import datetime
import enum
import pathlib
import typing
import uuid
from typing import Any

from ironloop._schema_types import (
    _ARRAYS,
    _MAPPINGS,
    _NONE_TYPE,
    _SETS,
    _Converter,
    _is_dataclass_type,
    _is_pydantic_model,
    _is_typeddict,
    _is_union,
    _strip_qualifier,
)


def _convert_enum(cls: type[enum.Enum]) -> _Converter:
    def convert(v: Any) -> Any:
        return v if isinstance(v, cls) else cls(v)

    return convert


def _convert_simple(cls: type, parse: _Converter) -> _Converter:
    def convert(v: Any) -> Any:
        return v if isinstance(v, cls) or v is None else parse(v)

    return convert


_SIMPLE_CONVERTERS: dict[Any, _Converter] = {
    datetime.datetime: _convert_simple(datetime.datetime, datetime.datetime.fromisoformat),
    datetime.date: _convert_simple(datetime.date, datetime.date.fromisoformat),
    datetime.time: _convert_simple(datetime.time, datetime.time.fromisoformat),
    uuid.UUID: _convert_simple(uuid.UUID, uuid.UUID),
    pathlib.Path: _convert_simple(pathlib.Path, pathlib.Path),
}


class _ConverterBuilder:
    """Returns ``None`` for types whose JSON value is already the right Python value."""

    def __init__(self) -> None:
        self._cache: dict[Any, _Converter | None] = {}

    def converter(self, tp: Any) -> _Converter | None:
        simple = _SIMPLE_CONVERTERS.get(tp) if isinstance(tp, type) else None
        if simple is not None:
            return simple
        supertype = getattr(tp, "__supertype__", None)
        if supertype is not None:
            return self.converter(supertype)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self.converter(args[0])
        if _is_union(origin):
            return self._union(args)
        if origin is not None and (origin in _ARRAYS or origin in _SETS or origin is tuple):
            return self._collection(origin, args)
        if origin in _MAPPINGS and args:
            inner = self.converter(args[1])
            if inner is None:
                return None
            return lambda v: {k: inner(x) for k, x in v.items()}
        if tp is tuple:
            return tuple
        if tp is set:
            return set
        if tp is frozenset:
            return frozenset
        if not isinstance(tp, type):
            return None
        if issubclass(tp, enum.Enum):
            return _convert_enum(tp)
        if _is_pydantic_model(tp):
            validate: _Converter = getattr(tp, "model_validate")  # noqa: B009
            return validate
        if _is_dataclass_type(tp) or _is_typeddict(tp):
            return self._structured(tp)
        return None

    def _union(self, args: tuple[Any, ...]) -> _Converter | None:
        members = [a for a in args if a is not _NONE_TYPE]
        convs = [c for c in (self.converter(a) for a in members) if c is not None]
        if not convs:
            return None
        if len(members) == 1:
            only = convs[0]
            return lambda v: None if v is None else only(v)

        def convert(v: Any) -> Any:
            if v is None:
                return None
            for c in convs:
                with contextlib.suppress(Exception):  # not this member: try the next one
                    return c(v)
            return v

        return convert

    def _collection(self, origin: Any, args: tuple[Any, ...]) -> _Converter | None:
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if args == ((),):
                return tuple
            convs = [self.converter(a) for a in args]
            if all(c is None for c in convs):
                return tuple
            return lambda v: tuple(x if c is None else c(x) for c, x in zip(convs, v, strict=False))
        inner = self.converter(args[0]) if args else None
        make: Any = list
        if origin is tuple:
            make = tuple
        elif origin in (set, cabc.Set, cabc.MutableSet):
            make = set
        elif origin is frozenset:
            make = frozenset
        if inner is None:
            return None if make is list else make
        if make is list:
            return lambda v: [inner(x) for x in v]
        return lambda v: make(inner(x) for x in v)

    def _structured(self, tp: type) -> _Converter | None:
        if tp in self._cache:
            return self._cache[tp]
        is_td = _is_typeddict(tp)
        cell: list[_Converter] = []
        # While building, a self-reference goes through ``cell`` (dataclasses always
        # convert; a TypedDict referring to itself is treated as needing nothing more).
        self._cache[tp] = None if is_td else (lambda v: cell[0](v))
        hints = typing.get_type_hints(tp, include_extras=True)
        if is_td:
            fields = {k: self.converter(_strip_qualifier(t)) for k, t in hints.items()}
        else:
            fields = {
                f.name: self.converter(hints.get(f.name, Any))
                for f in dataclasses.fields(tp)
                if f.init
            }
        needed = {k: c for k, c in fields.items() if c is not None}
        if is_td:
            if not needed:
                self._cache[tp] = None
                return None

            def convert_td(v: Any) -> Any:
                return {k: (needed[k](x) if k in needed else x) for k, x in v.items()}

            self._cache[tp] = convert_td
            return convert_td

        def convert_dc(v: Any) -> Any:
            if isinstance(v, tp):
                return v
            if not isinstance(v, cabc.Mapping):
                raise TypeError(
                    f"expected a JSON object for {tp.__qualname__}, got {type(v).__name__}"
                )
            return tp(**{k: (needed[k](x) if k in needed else x) for k, x in v.items()})

        cell.append(convert_dc)
        self._cache[tp] = convert_dc
        return convert_dc
