"""JSON Schema for Python annotations (TypedDict, dataclass, pydantic model, Enum,
unions, containers), with shared ``$defs`` for types used twice or recursively."""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime
import enum
import inspect
import pathlib
import typing
import uuid
from typing import Any

from ironloop._schema_types import (
    _ARRAYS,
    _MAPPINGS,
    _NONE_TYPE,
    _SETS,
    _class_doc,
    _is_dataclass_type,
    _is_pydantic_model,
    _is_typeddict,
    _is_union,
    _json_default,
    _pydantic_attr,
    _resolved_hints,
    _Schema,
    _special,
    _strip_qualifier,
    _type_name,
    _typeddict_required_keys,
    _Unsupported,
)

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
        hints = _resolved_hints(tp, _unresolved)
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


def _unresolved(tp: type, cause: Exception) -> Exception:
    return _Unsupported(f"the annotations of {tp.__qualname__} cannot be resolved: {cause}")
