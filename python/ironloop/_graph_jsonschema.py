"""The JSON Schemas of a graph's input, output and context as LangGraph's
``get_input_jsonschema()`` / ``get_output_jsonschema()`` / ``get_context_jsonschema()``
give them: pydantic's schema of the type; a dataclass is described as the pydantic
model LangGraph makes of it (titled ``LangGraphInput`` / ``LangGraphOutput``), where a
field that may be ``None`` is optional."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import typing_extensions


def _pydantic() -> Any:
    try:
        import pydantic
    except ImportError as e:
        raise ImportError(
            "the JSON Schema of a graph's input, output or context is pydantic's, and "
            "pydantic is not installed: pip install pydantic"
        ) from e
    return pydantic


def _may_be_none(tp: Any) -> bool:
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return type(None) in typing.get_args(tp)
    return tp is None or tp is type(None)


def _dataclass_model(cls: type, title: str) -> Any:
    """The pydantic model LangGraph describes a dataclass state with: each field with
    its default (a ``default_factory`` kept as such; ``...`` stays required), else
    ``None`` when its type allows it, else required."""
    pydantic = _pydantic()
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = hints.get(f.name, Any)
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (tp, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (tp, pydantic.Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (tp, None if _may_be_none(tp) else ...)
    return pydantic.create_model(title, **fields)


def _pydantic_typeddict(tp: Any) -> Any:
    """A ``typing.TypedDict`` as a ``typing_extensions`` one with the same keys, which
    pydantic requires before Python 3.12."""
    hints = typing.get_type_hints(tp, include_extras=True)
    fields = {}
    for key, hint in hints.items():
        while typing.get_origin(hint) in (
            typing_extensions.Required,
            typing_extensions.NotRequired,
        ):
            hint = typing.get_args(hint)[0]
        wrap = (
            typing_extensions.Required
            if key in tp.__required_keys__
            else typing_extensions.NotRequired
        )
        fields[key] = wrap[hint]
    return typing_extensions.TypedDict(tp.__name__, fields)  # type: ignore[operator]


def jsonschema(tp: Any, title: str | None) -> dict[str, Any]:
    """``tp``'s JSON Schema (pydantic's); a dataclass is titled ``title``, another type
    keeps its own title unless it has none."""
    pydantic = _pydantic()
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) and title is not None:
        return dict(_dataclass_model(tp, title).model_json_schema())
    if typing_extensions.is_typeddict(tp) and type(tp).__module__ == "typing":
        tp = _pydantic_typeddict(tp)
    schema: dict[str, Any] = pydantic.TypeAdapter(tp).json_schema()
    if title is not None:
        schema.setdefault("title", title)
    return schema
