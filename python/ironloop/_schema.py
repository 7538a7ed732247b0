"""Build a tool's JSON Schema, description, injected parameters and argument converters
from a Python callable (pure Python; runs once, at decoration time).

``function_spec(func)`` returns a :class:`FunctionSpec`. ``converters`` is the only part on
the call path: it holds an entry only for parameters whose JSON value must be turned into
another Python type (pydantic model, dataclass, Enum, tuple, ...), so plain-JSON tools
pay nothing.
"""

from __future__ import annotations

import builtins
import collections.abc as cabc
import contextlib
import dataclasses
import datetime
import enum
import functools
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

__all__ = ["FunctionSpec", "function_spec", "type_schema"]

_INJECT_KINDS = frozenset({"state", "store", "tool_call_id", "context", "runtime"})
_NONE_TYPE: type = type(None)
_UnionType = getattr(types, "UnionType", None)  # ``X | Y`` (3.10+)

_Converter = Callable[[Any], Any]
_Schema = dict[str, Any]


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


# --------------------------------------------------------------------------- schema


_SIMPLE: dict[Any, _Schema] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    _NONE_TYPE: {"type": "null"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    pathlib.Path: {"type": "string", "format": "path"},
}

_ARRAYS = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)


def _enum_schema(values: list[Any]) -> _Schema:
    schema: _Schema = {}
    kinds = {type(v) for v in values}
    if kinds == {str}:
        schema["type"] = "string"
    elif kinds == {int}:
        schema["type"] = "integer"
    elif kinds <= {int, float} and kinds:
        schema["type"] = "number"
    elif kinds == {bool}:
        schema["type"] = "boolean"
    elif kinds == {_NONE_TYPE}:
        schema["type"] = "null"
    schema["enum"] = values
    return schema


class _SchemaBuilder:
    """Builds JSON Schema for annotations, collecting shared ``$defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, _Schema] = {}
        self._def_of: dict[Any, str] = {}  # recursive dataclass/TypedDict -> def name
        self._building: list[Any] = []

    # -- $defs bookkeeping
    def _new_def_name(self, base: str) -> str:
        name, n = base, 1
        while name in self.defs:
            n += 1
            name = f"{base}{n}"
        self.defs[name] = {}  # placeholder, filled by the caller
        return name

    def _merge_foreign(self, schema: _Schema) -> _Schema:
        """Adopt a schema carrying its own ``$defs`` (pydantic), renaming on clashes."""
        schema = dict(schema)
        local = schema.pop("$defs", None) or {}
        rename: dict[str, str] = {}
        for name, body in local.items():
            if name in self.defs and self.defs[name] == body:
                continue
            if name in self.defs:
                rename[name] = self._new_def_name(name)
        if rename:
            mapping = {f"#/$defs/{a}": f"#/$defs/{b}" for a, b in rename.items()}

            def rewrite(node: Any) -> Any:
                if isinstance(node, dict):
                    return {
                        k: (mapping.get(v, v) if k == "$ref" and isinstance(v, str) else rewrite(v))
                        for k, v in node.items()
                    }
                if isinstance(node, list):
                    return [rewrite(x) for x in node]
                return node

            local = {k: rewrite(v) for k, v in local.items()}
            schema = rewrite(schema)
        for name, body in local.items():
            self.defs[rename.get(name, name)] = body
        return schema

    # -- main entry
    def schema(self, tp: Any) -> _Schema:
        if tp is Any or tp is object or tp is inspect.Parameter.empty:
            return {}
        if tp is None:
            return {"type": "null"}
        simple = _SIMPLE.get(tp) if isinstance(tp, type) else None
        if simple is not None:
            return dict(simple)
        if isinstance(tp, (str, typing.ForwardRef)):
            raise _Unsupported(
                f"the forward reference {_type_name(tp)} could not be resolved; "
                "import the name at module level"
            )
        if isinstance(tp, typing.TypeVar):
            return {}
        supertype = getattr(tp, "__supertype__", None)  # typing.NewType
        if supertype is not None:
            return self.schema(supertype)

        origin = typing.get_origin(tp)
        if origin is not None:
            return self._generic(tp, origin, typing.get_args(tp))

        if isinstance(tp, type):
            if issubclass(tp, enum.Enum):
                return _enum_schema([m.value for m in tp])
            if _is_pydantic_model(tp):
                model: Any = tp
                return self._merge_foreign(model.model_json_schema())
            if _is_typeddict(tp) or _is_dataclass_type(tp):
                return self._structured(tp)
            if tp in _ARRAYS:
                return {"type": "array"}
            if tp is tuple:
                return {"type": "array"}
            if tp in _SETS:
                return {"type": "array", "uniqueItems": True}
            if tp in _MAPPINGS:
                return {"type": "object"}
            if tp is bytes or tp is bytearray:
                raise _Unsupported("bytes cannot be carried in JSON; take a str instead")
        raise _Unsupported(
            f"{_type_name(tp)} is not a JSON type, Enum, TypedDict, dataclass or pydantic model"
        )

    def _generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> _Schema:
        if origin is typing.Annotated:
            return self._annotated(tp)
        if _is_union(origin):
            members = [a for a in args if a is not _NONE_TYPE]
            any_of: list[_Schema] = []
            for a in members:
                s = self.schema(a)
                # flatten nested anyOf coming from e.g. Annotated[Optional[...], ...]
                any_of.extend(s["anyOf"] if list(s) == ["anyOf"] else [s])
            if len(members) != len(args):
                any_of.append({"type": "null"})
            return {"anyOf": any_of}
        if origin in _special("Literal"):
            return _enum_schema([a.value if isinstance(a, enum.Enum) else a for a in args])
        if origin in _ARRAYS:
            return {"type": "array", "items": self.schema(args[0])} if args else {"type": "array"}
        if origin in _SETS:
            out: _Schema = {"type": "array", "uniqueItems": True}
            if args:
                out["items"] = self.schema(args[0])
            return out
        if origin is tuple:
            if not args:
                return {"type": "array"}
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.schema(args[0])}
            if args == ((),):  # Tuple[()]
                return {"type": "array", "maxItems": 0}
            return {
                "type": "array",
                "prefixItems": [self.schema(a) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        if origin in _MAPPINGS:
            if not args:
                return {"type": "object"}
            key, value = args
            if key not in (str, Any) and not (
                typing.get_origin(key) in _special("Literal")
                and all(isinstance(k, str) for k in typing.get_args(key))
            ):
                raise _Unsupported(f"JSON object keys are strings, not {_type_name(key)}")
            out = {"type": "object"}
            value_schema = self.schema(value)
            if value_schema:
                out["additionalProperties"] = value_schema
            return out
        if origin is cabc.Callable:
            raise _Unsupported("a callable cannot be passed as JSON")
        if origin is type:
            raise _Unsupported("a class cannot be passed as JSON")
        if _is_pydantic_model(origin):  # parametrised generic pydantic model
            return self._merge_foreign(tp.model_json_schema())
        if _is_dataclass_type(origin) or _is_typeddict(origin):
            return self._structured(origin)
        raise _Unsupported(
            f"{_type_name(tp)} is not a JSON type, Enum, TypedDict, dataclass or pydantic model"
        )

    def _annotated(self, tp: Any) -> _Schema:
        base = typing.get_args(tp)[0]
        metas = tp.__metadata__
        description = None
        constraints = []
        for meta in metas:
            if isinstance(meta, str):
                description = meta
            elif type(meta).__module__.split(".")[0] in ("pydantic", "annotated_types"):
                constraints.append(meta)
        adapter = _pydantic_attr("pydantic", "TypeAdapter")
        if constraints and adapter is not None:
            try:
                schema = self._merge_foreign(
                    adapter(typing.Annotated[(base, *constraints)]).json_schema()
                )
            except Exception:
                schema = self.schema(base)
            else:
                schema.pop("title", None)
                if "default" in schema and not _json_default(schema["default"])[0]:
                    del schema["default"]
        else:
            schema = self.schema(base)
        if description is not None:
            schema = {**schema, "description": description}
        return schema

    def _structured(self, tp: type) -> _Schema:
        """A dataclass or TypedDict: inline object schema, or ``$ref`` when recursive."""
        name = self._def_of.get(tp)
        if name is not None:
            return {"$ref": f"#/$defs/{name}"}
        if tp in self._building:
            name = self._def_of[tp] = self._new_def_name(tp.__name__)
            return {"$ref": f"#/$defs/{name}"}
        self._building.append(tp)
        try:
            schema = self._object_body(tp)
        finally:
            self._building.pop()
        name = self._def_of.get(tp)
        if name is None:
            return schema
        self.defs[name] = schema
        return {"$ref": f"#/$defs/{name}"}

    def _object_body(self, tp: type) -> _Schema:
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception as exc:
            raise _Unsupported(
                f"the annotations of {tp.__qualname__} cannot be resolved: {exc}"
            ) from exc
        properties: dict[str, _Schema] = {}
        required: list[str] = []
        if _is_typeddict(tp):
            req_keys = _typeddict_required_keys(tp, hints)
            for key, ftp in hints.items():
                properties[key] = self.schema(_strip_qualifier(ftp))
                if key in req_keys:
                    required.append(key)
        else:
            for f in dataclasses.fields(tp):
                if not f.init:
                    continue
                fs = self.schema(hints.get(f.name, Any))
                if f.default is not dataclasses.MISSING:
                    ok, value = _json_default(f.default)
                    if ok:
                        fs = {**fs, "default": value}
                elif f.default_factory is dataclasses.MISSING:
                    required.append(f.name)
                properties[f.name] = fs
        schema: _Schema = {"type": "object", "properties": properties, "required": required}
        doc = _class_doc(tp)
        if doc:
            schema["description"] = doc
        return schema


# --------------------------------------------------------------------------- converters


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


# --------------------------------------------------------------------------- callables


def _target(func: Any) -> tuple[Any, str, str | None]:
    """``(object to read type hints from, default name, docstring)`` for a callable."""
    inner = func
    while isinstance(inner, functools.partial):
        inner = inner.func
    if inspect.isfunction(inner) or inspect.ismethod(inner) or inspect.isbuiltin(inner):
        return inner, inner.__name__, inspect.getdoc(inner)
    if isinstance(inner, type):
        return inner.__dict__.get("__init__", inner), inner.__name__, _class_doc(inner)
    call = type(inner).__call__
    doc = inspect.getdoc(call) if call.__doc__ else None
    if doc is None:
        doc = _class_doc(type(inner))
    name = getattr(inner, "__name__", None)
    if not isinstance(name, str):
        name = type(inner).__name__
    return call, name, doc


def _is_async(func: Any) -> bool:
    inner = func
    while isinstance(inner, functools.partial):
        inner = inner.func
    if inspect.iscoroutinefunction(inner):
        return True
    if inspect.isfunction(inner) or inspect.ismethod(inner) or isinstance(inner, type):
        return False
    return inspect.iscoroutinefunction(type(inner).__call__)


class _LenientNames(dict):  # type: ignore[type-arg]
    """Eval namespace: globals and builtins first, unknown names become ``Any``."""

    def __init__(self, globalns: dict[str, Any]) -> None:
        super().__init__()
        self._globalns = globalns

    def __missing__(self, key: str) -> Any:
        if key in self._globalns:
            return self._globalns[key]
        return getattr(builtins, key, Any)


class _AnnotationsOnly:
    """A function's annotations and globals without its defaults, for
    ``typing.get_type_hints`` (see ``_parameter_hints``)."""

    def __init__(self, annotations: dict[str, Any], globalns: dict[str, Any]) -> None:
        self.__annotations__ = annotations
        self.__globals__ = globalns


def _parameter_hints(target: Any) -> dict[str, Any]:
    """``typing.get_type_hints(target, include_extras=True)``, as on 3.11+.

    Before 3.11, ``get_type_hints`` wraps the hint of a parameter whose default is
    ``None`` in ``Optional[...]``, so ``b: Annotated[Optional[str], "a name"] = None``
    came back as ``Optional[Annotated[...]]`` (the description lost, ``anyOf`` nested
    twice). The annotations are read there from an object that has no defaults.
    """
    if sys.version_info >= (3, 11):
        return typing.get_type_hints(target, include_extras=True)
    annotations = getattr(target, "__annotations__", None)
    if not isinstance(annotations, dict):
        return typing.get_type_hints(target, include_extras=True)
    globalns = getattr(inspect.unwrap(target), "__globals__", {})
    return typing.get_type_hints(_AnnotationsOnly(dict(annotations), globalns), include_extras=True)


def _resolve_hints(target: Any, params: list[inspect.Parameter], fname: str) -> dict[str, Any]:
    """Type hints per parameter name (``inspect.Parameter.empty`` when unannotated)."""
    try:
        hints = _parameter_hints(target) if target else {}
    except Exception:
        hints = None
    out: dict[str, Any] = {}
    globalns = getattr(inspect.unwrap(target), "__globals__", {}) if target else {}
    for p in params:
        if hints is not None and p.name in hints:
            out[p.name] = hints[p.name]
            continue
        ann = p.annotation
        if isinstance(ann, typing.ForwardRef):
            ann = ann.__forward_arg__
        if isinstance(ann, str):
            try:
                ann = eval(ann, dict(globalns))
            except Exception as exc:
                # An injected parameter may name a type that is only imported for type
                # checking; it needs no schema, so accept it if it is injected.
                try:
                    lenient = eval(ann, {}, _LenientNames(globalns))
                except Exception:
                    lenient = None
                if lenient is not None and _injection(lenient) is not None:
                    ann = lenient
                else:
                    raise TypeError(
                        f"tool function {fname!r}: the annotation {p.annotation!r} of "
                        f"parameter {p.name!r} cannot be resolved ({exc}); import the "
                        "names it uses at module level"
                    ) from None
        out[p.name] = ann
    return out


def _parse_doc(doc: str | None) -> tuple[str, dict[str, str]]:
    if not doc:
        return "", {}
    import docstring_parser

    try:
        parsed = docstring_parser.parse(doc)
    except Exception:
        return doc.strip(), {}
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    args = {
        p.arg_name.lstrip("*"): p.description.strip()
        for p in parsed.params
        if p.arg_name and p.description
    }
    return "\n\n".join(parts).strip(), args


def function_spec(
    func: Any,
    *,
    name: str | None = None,
    description: str | None = None,
    parse_docstring: bool = True,
) -> FunctionSpec:
    """Describe ``func`` as a tool: JSON Schema of its parameters, description, injected
    parameters, argument converters and whether it is a coroutine function.

    Raises ``TypeError`` (naming the function and parameter) when ``func`` is not callable
    or a parameter cannot be described in JSON Schema.
    """
    if not callable(func):
        raise TypeError(
            f"function_spec() expects a function or other callable to turn into a tool, "
            f"got {type(func).__name__} {func!r}; decorate a def or async def function"
        )
    target, default_name, doc = _target(func)
    fname = name or default_name
    try:
        sig = inspect.signature(func)
    except ValueError as exc:
        text = str(exc)
        if "duplicate parameter name" in text:
            dup = text.split("duplicate parameter name:", 1)[-1].strip()
            raise TypeError(
                f"tool function {fname!r}: parameter {dup} appears more than once in its "
                "signature; give every parameter a unique name"
            ) from None
        raise TypeError(
            f"tool function {fname!r}: its signature cannot be read ({text}); pass a "
            "plain def function or set __signature__"
        ) from None
    except TypeError as exc:
        raise TypeError(
            f"tool function {fname!r}: its signature cannot be read ({exc}); pass a "
            "plain def function"
        ) from None

    params = list(sig.parameters.values())
    seen: set[str] = set()
    for p in params:
        if p.name in seen:
            raise TypeError(
                f"tool function {fname!r}: parameter {p.name!r} appears more than once in "
                "its signature; give every parameter a unique name"
            )
        seen.add(p.name)
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(
                f"tool function {fname!r}: parameter '*{p.name}' is not supported; a tool "
                f"takes named arguments only, so replace *{p.name} with explicit "
                "parameters (or one list parameter)"
            )
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise TypeError(
                f"tool function {fname!r}: parameter '**{p.name}' is not supported; a tool "
                f"needs a fixed set of arguments, so replace **{p.name} with explicit "
                "parameters (or one dict parameter)"
            )

    hints = _resolve_hints(target, params, fname)
    if parse_docstring:
        tool_description, arg_docs = _parse_doc(doc)
    else:
        tool_description, arg_docs = (doc or "").strip(), {}
    if description is not None:
        tool_description = description

    builder = _SchemaBuilder()
    conv_builder = _ConverterBuilder()
    properties: dict[str, _Schema] = {}
    required: list[str] = []
    injected: dict[str, tuple[str, str | None]] = {}
    converters: dict[str, _Converter] = {}
    for p in params:
        tp = hints[p.name]
        inj = _injection(tp)
        if inj is not None and inj[0] == "runtime":
            # The engine hands the tool a ToolContext; the ToolRuntime is made from it.
            injected[p.name] = ("context", None)
            converters[p.name] = _tool_runtime
            continue
        if inj is not None:
            injected[p.name] = inj
            continue
        try:
            schema = builder.schema(tp)
        except _Unsupported as exc:
            raise TypeError(
                f"tool function {fname!r}: parameter {p.name!r} has the unsupported "
                f"annotation {_type_name(tp)} ({exc}). Use str, int, float, bool, None, "
                "list, tuple, dict, Optional/Union, Literal, an Enum, TypedDict, dataclass "
                "or pydantic model, or mark it Annotated[..., InjectedState / "
                "InjectedStore / InjectedToolCallId]"
            ) from None
        has_annotated_description = typing.get_origin(tp) is typing.Annotated and any(
            isinstance(m, str) for m in tp.__metadata__
        )
        if p.name in arg_docs and not has_annotated_description:
            schema = {**schema, "description": arg_docs[p.name]}
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        else:
            ok, value = _json_default(p.default)
            if ok:
                schema = {**schema, "default": value}
        properties[p.name] = schema
        conv = conv_builder.converter(tp)
        if conv is not None:
            converters[p.name] = conv

    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
    }
    if builder.defs:
        parameters["$defs"] = builder.defs
    return FunctionSpec(
        name=fname,
        description=tool_description,
        parameters=parameters,
        injected=injected,
        converters=converters,
        is_async=_is_async(func),
    )


def type_schema(tp: Any) -> tuple[dict[str, Any], Callable[[Any], Any] | None]:
    """The JSON Schema of a type (TypedDict, dataclass, pydantic model, …) and the
    converter that turns a matching JSON value into it (``None`` when JSON is enough).
    A dict is taken as a JSON Schema already."""
    if isinstance(tp, dict):
        return tp, None
    builder = _SchemaBuilder()
    try:
        schema = builder.schema(tp)
    except _Unsupported as exc:
        raise TypeError(f"cannot make a JSON Schema from {_type_name(tp)}: {exc}") from None
    if builder.defs:
        schema = {**schema, "$defs": builder.defs}
    return schema, _ConverterBuilder().converter(tp)
