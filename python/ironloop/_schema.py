"""Build a tool's JSON Schema, description, injected parameters and argument converters
from a Python callable (pure Python; runs once, at decoration time).

``function_spec(func)`` returns a :class:`FunctionSpec`. ``converters`` is the only part on
the call path: it holds an entry only for parameters whose JSON value must be turned into
another Python type (pydantic model, dataclass, Enum, tuple, ...), so plain-JSON tools
pay nothing.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

from ironloop._schema_convert import _ConverterBuilder
from ironloop._schema_json import _SchemaBuilder
from ironloop._schema_types import (
    FunctionSpec,
    _class_doc,
    _Converter,
    _injection,
    _json_default,
    _Schema,
    _special,  # noqa: F401  (imported from here by _create_agent)
    _tool_runtime,
    _type_name,
    _Unsupported,
)

__all__ = ["FunctionSpec", "function_spec", "type_schema"]


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
