"""``/store``: LangGraph's long-term memory over HTTP — put, get, delete, search and
list namespaces — on the store the served graphs are compiled with."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .auth import authorize
from .bodies import body_int, field, json_body
from .errors import invalid, not_found
from .routing import route_table
from .serde import JSONResponse, to_jsonable


def _namespace(value: Any, name: str = "namespace") -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(".") if value else []
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise invalid(f"{name!r} must be a list of non-empty strings")
    if any("." in p for p in value):
        raise invalid(f"{name!r}: a namespace label cannot contain '.'")
    return tuple(value)


async def _scoped(request: Request, action: str, value: dict[str, Any]) -> tuple[str, ...]:
    """The namespace after the project's auth handler saw it (it may prefix the
    caller's id, LangGraph's way of keeping items per user)."""
    await authorize(request, "store", action, value)
    return _namespace(list(value["namespace"]))


def _item(item: Any, score: bool = False) -> dict[str, Any]:
    out = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": to_jsonable(item.value),
        "created_at": to_jsonable(item.created_at),
        "updated_at": to_jsonable(item.updated_at),
    }
    if score:
        out["score"] = getattr(item, "score", None)
    return out


async def put(request: Request) -> Response:
    body = await json_body(request, optional=False)
    namespace = _namespace(body.get("namespace"))
    if not namespace:
        raise invalid("'namespace' must not be empty")
    key = field(body, "key", str)
    if not key:
        raise invalid("'key' is required (a string)")
    value = field(body, "value", dict)
    if value is None:
        raise invalid("'value' is required (an object)")
    namespace = await _scoped(request, "put", {"namespace": namespace, "key": key, "value": value})
    await asyncio.to_thread(request.app.state.store.put, namespace, key, value)
    return Response(status_code=204)


async def get(request: Request) -> Response:
    namespace = _namespace(request.query_params.get("namespace", ""))
    key = request.query_params.get("key")
    if not key:
        raise invalid("query parameter 'key' is required")
    namespace = await _scoped(request, "get", {"namespace": namespace, "key": key})
    item = await asyncio.to_thread(request.app.state.store.get, namespace, key)
    if item is None:
        raise not_found(f"Item {key!r} in namespace {list(namespace)}")
    return JSONResponse(_item(item))


async def delete(request: Request) -> Response:
    body = await json_body(request, optional=False)
    namespace = _namespace(body.get("namespace"))
    key = field(body, "key", str)
    if not key:
        raise invalid("'key' is required (a string)")
    namespace = await _scoped(request, "delete", {"namespace": namespace, "key": key})
    await asyncio.to_thread(request.app.state.store.delete, namespace, key)
    return Response(status_code=204)


async def search(request: Request) -> Response:
    body = await json_body(request)
    prefix = _namespace(body.get("namespace_prefix") or [], "namespace_prefix")
    kwargs = {
        "filter": field(body, "filter", dict),
        "limit": body_int(body, "limit", 10, low=1),
        "offset": body_int(body, "offset", 0, high=1_000_000),
        "query": field(body, "query", str),
    }
    prefix = await _scoped(request, "search", {"namespace": prefix, **kwargs})
    items = await asyncio.to_thread(request.app.state.store.search, prefix, **kwargs)
    return JSONResponse({"items": [_item(i, score=True) for i in items]})


async def namespaces(request: Request) -> Response:
    body = await json_body(request)
    prefix = _namespace(body.get("prefix") or [], "prefix")
    suffix = _namespace(body.get("suffix") or [], "suffix")
    max_depth = field(body, "max_depth", int)
    limit = body_int(body, "limit", 100, low=1)
    offset = body_int(body, "offset", 0, high=1_000_000)
    found = await asyncio.to_thread(request.app.state.store.list_namespaces, prefix=prefix or None)
    out: list[list[str]] = []
    for ns in found:
        if suffix and tuple(ns[-len(suffix) :]) != suffix:
            continue
        ns = list(ns[:max_depth] if max_depth else ns)
        if ns not in out:
            out.append(ns)
    return JSONResponse({"namespaces": out[offset : offset + limit]})


routes = route_table(
    {
        "/store/items": {"PUT": put, "GET": get, "DELETE": delete},
        "/store/items/search": {"POST": search},
        "/store/namespaces": {"POST": namespaces},
    }
)
