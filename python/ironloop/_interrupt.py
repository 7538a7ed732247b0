"""``interrupt(value, response_schema=)``: the schema a resume value must match, as
LangGraph 1.2 has it. Not public API.

The question and its schema travel as one value (``asked``): the engine saves, streams
and resumes it like any interrupt value, and every ``Interrupt`` the caller sees is made
by ``make_interrupt``, which splits them again. The schema is stored as JSON Schema (a
pydantic model, ``TypedDict`` or dataclass is turned into one), so a checkpoint never
names a Python type for it.
"""

from __future__ import annotations

from typing import Any

from ironloop.errors import mark_invalid_resume
from ironloop.types import Interrupt

#: The key of the one-key dict that carries a question with its response schema.
ASKED = "__ironloop_asked__"


def asked(value: Any, response_schema: Any) -> tuple[Any, Any]:
    """The interrupt value to pause with, and the pydantic ``TypeAdapter`` that
    validates the answer (``None``: the answer is taken as it is, as LangGraph does for
    no schema or a raw JSON Schema dict)."""
    if response_schema is None:
        return value, None
    if isinstance(response_schema, dict):
        return {ASKED: {"value": value, "response_schema": response_schema}}, None
    try:
        from pydantic import TypeAdapter
    except ImportError as e:  # pragma: no cover - pydantic comes with langchain-core
        raise ImportError(
            "interrupt(response_schema=<a class>) needs pydantic: pip install pydantic, "
            "or pass the JSON Schema as a dict"
        ) from e
    adapter = TypeAdapter(response_schema)
    return {ASKED: {"value": value, "response_schema": adapter.json_schema()}}, adapter


def validated(adapter: Any, answer: Any) -> Any:
    """``answer`` checked (and converted) by ``adapter``; a mismatch raises pydantic's
    ``ValidationError``, marked as an invalid resume (``is_invalid_resume``)."""
    if adapter is None:
        return answer
    from pydantic import ValidationError

    try:
        return adapter.validate_python(answer)
    except ValidationError as e:
        mark_invalid_resume(e)
        raise


def make_interrupt(value: Any, id: str) -> Interrupt:
    """The ``Interrupt`` the caller sees for an interrupt value saved or streamed by the
    engine (the Rust glue calls this)."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(ASKED), dict):
        inner = value[ASKED]
        return Interrupt(inner.get("value"), id, response_schema=inner.get("response_schema"))
    return Interrupt(value, id)
