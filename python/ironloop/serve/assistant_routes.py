"""``/assistants``: create, get, update (a new version), delete, search, count, versions,
set the latest version; a graph's drawing, schemas and subgraphs (see :mod:`.assistants`)."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .assistants import SORT_KEYS
from .auth import authorize, matches
from .bodies import body_int, choice, field, json_body, str_list, uuid_param
from .db import _contains
from .errors import ApiError, invalid
from .graphs import ServedGraph
from .routing import route_table
from .serde import JSONResponse


async def visible(request: Request, action: str) -> ServedGraph:
    """The graph of the path's assistant, if the project's auth lets the caller see it."""
    return (await _assistant(request, action))[0]


async def _assistant(request: Request, action: str) -> tuple[ServedGraph, dict[str, Any]]:
    aid = request.path_params["aid"]
    filters = await authorize(request, "assistants", action, {"assistant_id": aid})
    graph, assistant = request.app.state.assistants.resolve(aid)
    if not matches(assistant["metadata"], filters):
        raise ApiError(404, f"Assistant {aid!r} not found")
    return graph, assistant


def _object(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    return field(body, name, dict)  # type: ignore[no-any-return]


async def create(request: Request) -> Response:
    body = await json_body(request, optional=False)
    graph_id = field(body, "graph_id", str)
    if graph_id is None:
        raise invalid("'graph_id' is required (a graph of langgraph.json)")
    aid = field(body, "assistant_id", str)
    aid = uuid_param(aid, "assistant") if aid else str(uuid.uuid4())
    if_exists = choice(body, "if_exists", ("raise", "do_nothing"), "raise")
    value = {"assistant_id": aid, "graph_id": graph_id, "config": _object(body, "config") or {},
             "context": _object(body, "context") or {},
             "metadata": _object(body, "metadata") or {}, "if_exists": if_exists,
             "name": field(body, "name", str) or "Untitled",
             "description": field(body, "description", str)}  # fmt: skip
    _check_config(value["config"])
    filters = await authorize(request, "assistants", "create", value)
    assistants = request.app.state.assistants
    made = assistants.put(
        aid, graph_id, config=value["config"], context=value["context"],
        metadata=value["metadata"], name=value["name"], description=value["description"],
        if_exists=if_exists,
    )  # fmt: skip
    if not matches(made["metadata"], filters):  # an existing one the caller may not see
        raise ApiError(409, f"Assistant with ID {aid} already exists")
    return JSONResponse(made)


def _check_config(config: dict[str, Any]) -> None:
    if not isinstance(config.get("configurable", {}), dict):
        raise invalid("'config.configurable' must be an object")


async def update(request: Request) -> Response:
    body = await json_body(request)
    changes = {"graph_id": field(body, "graph_id", str), "config": _object(body, "config"),
               "context": _object(body, "context"), "metadata": _object(body, "metadata"),
               "name": field(body, "name", str),
               "description": field(body, "description", str)}  # fmt: skip
    _check_config(changes["config"] or {})
    _graph, assistant = await _assistant(request, "update")
    return JSONResponse(request.app.state.assistants.update(assistant, changes))


async def delete(request: Request) -> Response:
    _graph, assistant = await _assistant(request, "delete")
    aid = assistant["assistant_id"]
    request.app.state.assistants.delete(aid)
    if request.query_params.get("delete_threads", "false").lower() in ("true", "1"):
        from .thread_routes import drop_thread

        for thread in request.app.state.records.search_threads(metadata={"assistant_id": aid}):
            await drop_thread(request.app, thread["thread_id"])
    return Response(status_code=204)


def _found(request: Request, body: dict[str, Any], filters: dict[str, Any] | None,
           ) -> list[dict[str, Any]]:  # fmt: skip
    graph_id = field(body, "graph_id", str)
    name = field(body, "name", str)
    metadata = field(body, "metadata", dict, {})
    sort_by = choice(body, "sort_by", SORT_KEYS, "created_at")
    order = choice(body, "sort_order", ("asc", "desc"), "desc")
    return [
        a for a in request.app.state.assistants.all(sort_by, order == "desc")
        if (graph_id is None or a["graph_id"] == graph_id)
        and (name is None or name.lower() in a["name"].lower())
        and _contains(a["metadata"], metadata) and matches(a["metadata"], filters)
    ]  # fmt: skip


async def search(request: Request) -> Response:
    body = await json_body(request)
    limit = body_int(body, "limit", 10, low=1)
    offset = body_int(body, "offset", 0, high=1_000_000)
    filters = await authorize(request, "assistants", "search", {
        "graph_id": field(body, "graph_id", str), "metadata": field(body, "metadata", dict, {}),
    })  # fmt: skip
    found = _found(request, body, filters)
    page = found[offset : offset + limit]
    select = str_list(body, "select")
    if select:
        page = [{k: a.get(k) for k in select} for a in page]
    headers = {"X-Pagination-Next": str(offset + limit)} if len(found) > offset + limit else {}
    return JSONResponse(page, headers=headers)


async def count(request: Request) -> Response:
    body = await json_body(request)
    filters = await authorize(request, "assistants", "search", {
        "graph_id": field(body, "graph_id", str), "metadata": field(body, "metadata", dict, {}),
    })  # fmt: skip
    return JSONResponse(len(_found(request, body, filters)))


async def get(request: Request) -> Response:
    return JSONResponse((await _assistant(request, "read"))[1])


async def graph(request: Request) -> Response:
    served = await visible(request, "read")
    xray = request.query_params.get("xray", "false").lower() not in ("false", "0", "")
    return JSONResponse(served.drawing(xray))


async def schemas(request: Request) -> Response:
    return JSONResponse((await visible(request, "read")).schemas())


async def subgraphs(request: Request) -> Response:
    served = await visible(request, "read")
    from ironloop.graph import CompiledStateGraph

    out = {}
    for name, node in served.builder.actions.items():
        if isinstance(node, CompiledStateGraph):
            sub = ServedGraph(name, node.builder, name, None, None, None)
            out[name] = sub.schemas()
    namespace = request.path_params.get("namespace")
    if namespace is not None:
        if namespace not in out:
            raise invalid(f"graph {served.graph_id!r} has no subgraph {namespace!r}")
        out = {namespace: out[namespace]}
    return JSONResponse(out)


async def versions(request: Request) -> Response:
    body = await json_body(request)
    limit = body_int(body, "limit", 10, low=1)
    offset = body_int(body, "offset", 0, high=1_000_000)
    metadata = field(body, "metadata", dict, {})
    _graph, assistant = await _assistant(request, "read")
    found = [v for v in request.app.state.assistants.versions(assistant["assistant_id"])
             if _contains(v["metadata"], metadata)]  # fmt: skip
    return JSONResponse(found[offset : offset + limit])


async def set_latest(request: Request) -> Response:
    body = await json_body(request, optional=False)
    version = field(body, "version", int)
    if version is None:
        raise invalid("'version' is required (the version to make the latest)")
    _graph, assistant = await _assistant(request, "update")
    return JSONResponse(request.app.state.assistants.set_latest(assistant["assistant_id"], version))


routes = route_table(
    {
        "/assistants": {"POST": create},
        "/assistants/search": {"POST": search},
        "/assistants/count": {"POST": count},
        "/assistants/{aid}": {"GET": get, "PATCH": update, "DELETE": delete},
        "/assistants/{aid}/latest": {"POST": set_latest},
        "/assistants/{aid}/graph": {"GET": graph},
        "/assistants/{aid}/schemas": {"GET": schemas},
        "/assistants/{aid}/subgraphs": {"GET": subgraphs},
        "/assistants/{aid}/subgraphs/{namespace}": {"GET": subgraphs},
        "/assistants/{aid}/versions": {"POST": versions},
    }
)
