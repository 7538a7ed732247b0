"""``/assistants``: one assistant per graph of ``langgraph.json`` (its id derived from
the graph id as LangGraph derives it); search, get, count, graph, schemas, subgraphs."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .auth import authorize, matches
from .bodies import body_int, field, json_body
from .errors import ApiError, invalid
from .graphs import ServedGraph, assistant_id_for


def assistant_json(request: Request, graph: ServedGraph) -> dict[str, Any]:
    created = request.app.state.started_at
    return {
        "assistant_id": assistant_id_for(graph.graph_id),
        "graph_id": graph.graph_id,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "name": graph.graph_id,
        "created_at": created,
        "updated_at": created,
        "version": 1,
        "description": graph.description,
    }


async def visible(request: Request, action: str) -> ServedGraph:
    """The assistant of the path, if the project's auth lets the caller see it."""
    aid = request.path_params["aid"]
    filters = await authorize(request, "assistants", action, {"assistant_id": aid})
    graph = resolve(request.app.state.graphs, aid)
    if not matches({"created_by": "system"}, filters):
        raise ApiError(404, f"Assistant {aid!r} not found")
    return graph


def resolve(graphs: dict[str, ServedGraph], assistant_id: str) -> ServedGraph:
    """The graph an assistant id (or a graph id, as LangGraph accepts) names."""
    if assistant_id in graphs:
        return graphs[assistant_id]
    for graph in graphs.values():
        if assistant_id_for(graph.graph_id) == assistant_id:
            return graph
    raise ApiError(
        404 if len(assistant_id) == 36 else 422,
        f"Invalid assistant: {assistant_id!r}. Must be either an assistant UUID or one of "
        f"the registered graphs: {', '.join(graphs)}",
    )


async def search(request: Request) -> Response:
    body = await json_body(request)
    graph_id = field(body, "graph_id", str)
    name = field(body, "name", str)
    metadata = field(body, "metadata", dict, {})
    limit = body_int(body, "limit", 10, low=1)
    offset = body_int(body, "offset", 0, high=1_000_000)
    filters = await authorize(request, "assistants", "search", {"graph_id": graph_id,
                                                               "metadata": metadata})  # fmt: skip
    if not matches({"created_by": "system"}, filters):
        return JSONResponse([])
    found = [
        assistant_json(request, g)
        for g in request.app.state.graphs.values()
        if (graph_id is None or g.graph_id == graph_id)
        and (name is None or name in g.graph_id)
        and all({"created_by": "system"}.get(k) == v for k, v in metadata.items())
    ]
    return JSONResponse(found[offset : offset + limit])


async def count(request: Request) -> Response:
    body = await json_body(request)
    graph_id = field(body, "graph_id", str)
    graphs = request.app.state.graphs.values()
    return JSONResponse(sum(1 for g in graphs if graph_id is None or g.graph_id == graph_id))


async def get(request: Request) -> Response:
    return JSONResponse(assistant_json(request, await visible(request, "read")))


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
    for name, node in served.builder.nodes.items():
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
    return JSONResponse([assistant_json(request, await visible(request, "read"))])


routes = [
    Route("/assistants/search", search, methods=["POST"]),
    Route("/assistants/count", count, methods=["POST"]),
    Route("/assistants/{aid}", get, methods=["GET"]),
    Route("/assistants/{aid}/graph", graph, methods=["GET"]),
    Route("/assistants/{aid}/schemas", schemas, methods=["GET"]),
    Route("/assistants/{aid}/subgraphs", subgraphs, methods=["GET"]),
    Route("/assistants/{aid}/subgraphs/{namespace}", subgraphs, methods=["GET"]),
    Route("/assistants/{aid}/versions", versions, methods=["POST"]),
]
