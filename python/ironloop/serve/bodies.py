"""Reading request bodies and parameters: every mistake a 422 (or 413) naming the field."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, TypeVar

from starlette.requests import Request

from .errors import ApiError, invalid
from .serde import loads

T = TypeVar("T")

#: Request bodies larger than this are refused with a 413 (``--max-body-mb``).
MAX_BODY_BYTES = 16 * 1024 * 1024


async def json_body(request: Request, *, optional: bool = True) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body when ``optional``)."""
    body = await _json(request, optional)
    if body is None and optional:
        return {}
    if not isinstance(body, dict):
        raise invalid(f"the request body must be a JSON object, got {type(body).__name__}")
    return body


async def json_list(request: Request) -> list[Any]:
    """The request's JSON array."""
    body = await _json(request, False)
    if not isinstance(body, list):
        raise invalid(f"the request body must be a JSON array, got {type(body).__name__}")
    return body


async def _json(request: Request, optional: bool) -> Any:
    limit = request.app.state.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body over the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body over the limit of {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        if optional:
            return None
        raise invalid("a JSON body is required")
    try:
        return loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise invalid(f"Invalid JSON in request body: {e}") from None


def field(
    body: dict[str, Any], name: str, kind: type[T] | tuple[type, ...], default: Any = None
) -> Any:
    """``body[name]`` if it is of ``kind`` (``None`` / absent gives ``default``)."""
    value = body.get(name)
    if value is None:
        return default
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        kinds = (kind,) if isinstance(kind, type) else kind
        names = " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
        raise invalid(f"{name!r} must be {_article(names)}, got {json.dumps(value)[:80]}")
    return value


def choice(body: dict[str, Any], name: str, allowed: tuple[str, ...], default: str | None) -> Any:
    value = field(body, name, str, default)
    if value is not None and value not in allowed:
        raise invalid(f"{name!r} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def str_list(body: dict[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid(f"{name!r} must be a string or a list of strings")
    return value


def query_int(
    request: Request, name: str, default: int, *, low: int = 0, high: int = 10_000
) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(f"query parameter {name!r} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise invalid(f"query parameter {name!r} must be between {low} and {high}")
    return value


def body_int(
    body: dict[str, Any], name: str, default: int, *, low: int = 0, high: int = 10_000
) -> int:
    value = field(body, name, int, default)
    if not low <= value <= high:
        raise invalid(f"{name!r} must be between {low} and {high}")
    return int(value)


#: A UUID as ``str(uuid.UUID(...))`` writes it (what clients send back, mostly).
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def uuid_param(value: str, what: str) -> str:
    """``value`` as a UUID's canonical text (a 422 if it is none); one already written
    so is taken as it is, without making a ``UUID`` (2-3 ids a run's requests)."""
    if _CANONICAL_UUID.fullmatch(value):
        return value
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise invalid(f"Invalid {what} ID: must be a UUID, got {value[:60]!r}") from None


_JSON_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    bool: "boolean",
    float: "number",
}


def _article(names: str) -> str:
    return ("an " if names[0] in "aeiou" else "a ") + names
