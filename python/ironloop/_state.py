"""State schemas read as channels, as LangGraph 1.x reads them (pure Python; runs
while a graph is built). Not public API.

A schema with annotations (a TypedDict, dataclass, pydantic model or any annotated
class) gives one channel per field. Any other schema (``Annotated[list,
operator.add]``, ``int``, ``list``) is the *root* channel: the state is that one bare
value, which nodes receive and return.

A field ``Annotated[T, ..., reducer]`` whose last metadata item is a function of two
values combines writes with it and starts at ``T()`` when ``T`` (``list`` for
``list[int]``, ``list`` for ``Sequence``) can be made without arguments, so a list
field that nothing wrote reads ``[]`` and an int ``0``; otherwise it starts empty and
takes its first write as it is. Other fields keep the last value written and are
absent until written.

A graph's channels are those of its state schema, then of its input and output
schemas, then of the input schemas of its nodes and routing functions (a node whose
first parameter is annotated with another class sees only that class's keys, and may
be sent keys no other schema declares: node-private channels).
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from ironloop._ironloop import _ROOT
from ironloop.errors import InvalidUpdateError
from ironloop.managed import is_managed_value

__all__ = ["ROOT", "as_update", "input_schema_of", "node_factory", "schema_channels"]

#: The root channel's name, as the core spells it (``reserved::ROOT``).
ROOT = _ROOT


def _qualifiers(with_extensions: bool) -> tuple[Any, ...]:
    """``Required`` / ``NotRequired`` / ``ReadOnly`` of ``typing`` and, when asked,
    ``typing_extensions`` (they differ on older Pythons)."""
    mods: list[Any] = [typing]
    if with_extensions:
        mods.append(sys.modules["typing_extensions"])
    names = ("Required", "NotRequired", "ReadOnly")
    found = (getattr(m, n, None) for m in mods for n in names)
    return tuple(f for f in found if f is not None)


_QUALIFIERS = {False: _qualifiers(False)}


def _required() -> tuple[Any, ...]:
    """The qualifiers to strip. ``typing_extensions``' count only once it is imported
    (an annotation can only use them then), so that ``import ironloop`` does not
    import it (BENCHMARKS.md, S1: it is ~2 MiB of a bare import's peak)."""
    with_extensions = "typing_extensions" in sys.modules
    found = _QUALIFIERS.get(with_extensions)
    if found is None:
        found = _QUALIFIERS[with_extensions] = _qualifiers(with_extensions)
    return found


# Abstract collection types stand for their concrete counterparts.
_CONCRETE: dict[Any, type] = {
    cabc.Sequence: list,
    cabc.MutableSequence: list,
    cabc.Set: set,
    cabc.MutableSet: set,
    cabc.Mapping: dict,
    cabc.MutableMapping: dict,
}

Channel = dict[str, Any]


def _strip_required(tp: Any) -> Any:
    while get_origin(tp) in _required():
        tp = get_args(tp)[0]
    return tp


def _bare_type(tp: Any) -> Any:
    """``list`` for ``Annotated[list[int], ...]``: LangGraph's ``_strip_extras``."""
    while hasattr(tp, "__origin__"):
        tp = get_args(tp)[0] if tp.__origin__ in _required() else tp.__origin__
    return _CONCRETE.get(tp, tp)


def _initial(tp: Any) -> Callable[[], Any] | None:
    """What makes a reducer channel's starting value, if its type can be made."""
    typ = _bare_type(tp)
    try:
        typ()
    except Exception:
        return None
    return typ  # type: ignore[no-any-return]


def _reducer(name: str, tp: Any) -> Callable[..., Any] | None:
    """The reducer of a field: the last metadata item of ``Annotated``, if callable."""
    if get_origin(tp) is not Annotated:
        return None
    last = tp.__metadata__[-1]
    if not callable(last):
        return None
    try:
        params = inspect.signature(last).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): trust it
        return last  # type: ignore[no-any-return]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if sum(p.kind in positional for p in params) != 2:
        raise ValueError(
            f"Invalid reducer signature. Expected (a, b) -> c. Got {inspect.signature(last)} "
            f"(state key {name!r})"
        )
    return last  # type: ignore[no-any-return]


def _channel(name: str, tp: Any) -> Channel:
    tp = _strip_required(tp)
    reducer = _reducer(name, tp)
    return {
        "name": name,
        "reducer": reducer,
        "initial": _initial(tp) if reducer is not None else None,
    }


def managed_keys(schema: Any) -> dict[str, Any]:
    """The keys of a schema that are managed values (``RemainingSteps``, ...), with
    their managers: filled for each node, never channels."""
    if not hasattr(schema, "__annotations__"):
        return {}
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception:
        return {}
    found = {n: is_managed_value(_strip_required(h)) for n, h in hints.items()}
    return {n: m for n, m in found.items() if m is not None}


def schema_channels(schema: Any) -> dict[str, Channel]:
    """The channels a schema declares, by name, in its field order: one per field, or
    the root channel for a schema without annotations."""
    if not hasattr(schema, "__annotations__"):
        return {ROOT: _channel(ROOT, schema)}
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception as e:
        raise TypeError(f"cannot read the state schema {schema!r}: {e}") from e
    out: dict[str, Channel] = {}
    for name, hint in hints.items():
        if name == "__slots__" or is_managed_value(_strip_required(hint)) is not None:
            continue
        if name.startswith("__"):
            raise ValueError(f"state key {name!r} is reserved (keys may not start with '__')")
        out[name] = _channel(name, hint)
    return out


def _same_reducer(a: Any, b: Any) -> bool:
    """LangGraph's rule: the same function, or any pair involving a lambda."""
    if a is b:
        return True
    return "<lambda>" in (getattr(a, "__name__", None), getattr(b, "__name__", None))


def merge_channels(into: dict[str, Channel], new: dict[str, Channel]) -> None:
    """Adds a schema's channels to the graph's. A key already declared keeps its
    channel when the newcomer keeps the last value; a different reducer is an error."""
    for name, ch in new.items():
        have = into.get(name)
        if have is None:
            into[name] = ch
        elif ch["reducer"] is not None and not (
            have["reducer"] is not None and _same_reducer(have["reducer"], ch["reducer"])
        ):
            raise ValueError(f"Channel '{name}' already exists with a different type")


def input_schema_of(func: Any) -> type | None:
    """The input schema a node or routing function declares: the annotation of its
    first parameter, when that is a class with annotations (LangGraph's inference)."""
    try:
        call = getattr(func, "__call__", None)  # noqa: B004
        if not (inspect.isfunction(func) or inspect.ismethod(func) or inspect.ismethod(call)):
            return None
        hints = get_type_hints(call) or get_type_hints(func)
        if not hints:
            return None
        first = next(iter(inspect.signature(func).parameters))
        hint = hints.get(first)
        if isinstance(hint, type) and get_type_hints(hint):
            return hint
    except Exception:  # an unresolvable hint means "no schema", as in LangGraph
        return None
    return None


def node_factory(schema: Any, keys: list[str]) -> Callable[[dict[str, Any]], Any] | None:
    """What turns the state dict a node reads into its input: the schema class itself
    for a dataclass or pydantic model (``schema(**state)``), else nothing."""
    if keys == [ROOT] or not isinstance(schema, type):
        return None
    if dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields"):

        def make(d: dict[str, Any]) -> Any:
            return schema(**d)

        return make
    return None


def _annotated_keys(t: type) -> list[str]:
    fields = getattr(t, "model_fields", None)
    if isinstance(fields, dict):  # pydantic: the fields, not BaseModel's own names
        return list(fields)
    if dataclasses.is_dataclass(t):
        return [f.name for f in dataclasses.fields(t)]
    keys: list[str] = []
    for base in reversed(t.__mro__):
        keys.extend(k for k in _own_annotations(base) if k not in keys)
    return keys


_MISSING = object()


def as_update(obj: Any, node: str) -> dict[str, Any]:
    """A node's update that is not a dict, as one (LangGraph's rule): a dataclass or
    pydantic object writes each of its fields, except a ``None`` left at a ``None``
    default (for pydantic, one the caller did not set); a mapping its items."""
    if isinstance(obj, cabc.Mapping):
        return dict(obj)
    t = type(obj)
    if dataclasses.is_dataclass(obj) or hasattr(t, "model_fields") or _has_annotations(t):
        fields = getattr(t, "model_fields", None)
        if isinstance(fields, dict):
            keep = obj.model_fields_set
            defaults = {k: f.default for k, f in fields.items()}
        else:
            keep, defaults = None, {}
        out: dict[str, Any] = {}
        for k in _annotated_keys(t):
            value = getattr(obj, k, _MISSING)
            if value is _MISSING:
                continue
            if (
                value is not None
                or defaults.get(k, _MISSING) is not None
                or (keep is not None and k in keep)
            ):
                out[k] = value
        return out
    raise InvalidUpdateError(
        f"node {node!r} returned {t.__name__} {obj!r}: a node must return a dict of "
        "state updates, a Command, or None"
    )


def _own_annotations(cls: type) -> dict[str, Any]:
    """A class's own annotations, not its bases' (``inspect.get_annotations`` is 3.10+)."""
    ann = cls.__dict__.get("__annotations__")  # noqa: RUF063
    if ann is None:  # 3.14+ makes them on demand
        try:
            ann = getattr(cls, "__annotations__", None)
        except Exception:
            ann = None
    return ann if isinstance(ann, dict) else {}


def _has_annotations(t: type) -> bool:
    return any(_own_annotations(base) for base in t.__mro__ if base is not object)
