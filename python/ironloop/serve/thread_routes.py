"""``/threads``: create, get, update, delete, search, count, copy; a thread's state
(get, update, at a checkpoint) and history."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import authorize, matches
from .bodies import body_int, choice, field, json_body, query_int, str_list, uuid_param
from .errors import conflict, invalid, not_found
from .graphs import ServedGraph, assistant_id_for
from .serde import JSONResponse
from .state import snapshot_json

SORT_KEYS = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")


async def load_thread(
    request: Request,
    thread_id: str,
    action: str = "read",
    value: dict[str, Any] | None = None,
    *,
    raw_values: bool = False,
    run_id: str | None = None,
) -> dict[str, Any]:
    """The thread, if it exists and the project's auth lets this caller ``action`` it
    (a thread outside the caller's filters is not found, as under LangGraph); with
    ``raw_values``, its values as stored, with ``run_id`` whether it has that run
    (``Records.get_thread``)."""
    tid = uuid_param(thread_id, "thread")
    filters = await authorize(request, "threads", action, {"thread_id": tid, **(value or {})})
    thread = request.app.state.records.get_thread(tid, raw_values=raw_values, run_id=run_id)
    if thread is None or not matches(thread["metadata"], filters):
        raise not_found(f"Thread with ID {tid}")
    return dict(thread)


def graph_of(request: Request, thread: dict[str, Any], *, required: bool) -> ServedGraph | None:
    """The graph whose checkpoints the thread holds (``metadata.graph_id``, set by its
    first run; a project of one graph needs none)."""
    graphs = request.app.state.graphs
    graph_id = thread["metadata"].get("graph_id")
    if graph_id in graphs:
        return graphs[graph_id]  # type: ignore[no-any-return]
    if len(graphs) == 1:
        return next(iter(graphs.values()))  # type: ignore[no-any-return]
    if required:
        raise conflict(
            f"thread {thread['thread_id']} has no graph yet (no run); run it first or set "
            '"graph_id" in its metadata'
        )
    return None


async def create(request: Request) -> Response:
    body = await json_body(request)
    records = request.app.state.records
    tid = field(body, "thread_id", str)
    tid = uuid_param(tid, "thread") if tid else str(uuid.uuid4())
    metadata = field(body, "metadata", dict, {})
    if_exists = choice(body, "if_exists", ("raise", "do_nothing"), "raise")
    graph_id = field(body, "graph_id", str)
    if graph_id is not None:
        graph = request.app.state.assistants.resolve(graph_id)[0]
        metadata = {**metadata, "graph_id": graph.graph_id}
    value = {"thread_id": tid, "metadata": metadata, "if_exists": if_exists}
    filters = await authorize(request, "threads", "create", value)
    thread = records.create_thread(tid, value["metadata"])
    if thread is None:
        existing = records.get_thread(tid)
        if if_exists == "do_nothing" and matches(existing["metadata"], filters):
            return JSONResponse(existing)
        raise conflict(f"Thread with ID {tid} already exists")
    return JSONResponse(thread)


async def get(request: Request) -> Response:
    return JSONResponse(await load_thread(request, request.path_params["tid"]))


async def patch(request: Request) -> Response:
    body = await json_body(request)
    metadata = field(body, "metadata", dict, {})
    thread = await load_thread(
        request, request.path_params["tid"], "update", {"metadata": metadata}
    )
    records = request.app.state.records
    records.update_thread(thread["thread_id"], metadata={**thread["metadata"], **metadata})
    return JSONResponse(records.get_thread(thread["thread_id"]))


async def delete(request: Request) -> Response:
    thread = await load_thread(request, request.path_params["tid"], "delete")
    await drop_thread(request.app, thread["thread_id"])
    return Response(status_code=204)


async def drop_thread(app: Any, tid: str) -> None:
    """The thread, its runs (cancelled first) and its checkpoints, gone."""
    runner = app.state.runner
    for run in runner.on_thread(tid):
        await runner.cancel(run, "interrupt")
    app.state.records.delete_thread(tid)
    await asyncio.to_thread(app.state.checkpointer.delete_thread, tid)


def _search_args(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": field(body, "metadata", dict),
        "values": field(body, "values", dict),
        "status": choice(body, "status", ("idle", "busy", "interrupted", "error"), None),
        "ids": str_list(body, "ids"),
    }


async def search(request: Request) -> Response:
    body = await json_body(request)
    limit = body_int(body, "limit", 10, low=1)
    offset = body_int(body, "offset", 0, high=1_000_000)
    sort_by = choice(body, "sort_by", SORT_KEYS, "created_at")
    order = choice(body, "sort_order", ("asc", "desc"), "desc")
    args = _search_args(body)
    filters = await authorize(request, "threads", "search", {**args, "limit": limit})
    found = [
        t
        for t in request.app.state.records.search_threads(
            **args, sort_by=sort_by, descending=order == "desc"
        )
        if matches(t["metadata"], filters)
    ]
    select = str_list(body, "select")
    page = found[offset : offset + limit]
    if select:
        page = [{k: t.get(k) for k in select} for t in page]
    return JSONResponse(page)


async def count(request: Request) -> Response:
    body = await json_body(request)
    args = _search_args(body)
    filters = await authorize(request, "threads", "search", dict(args))
    found = request.app.state.records.search_threads(**args)
    return JSONResponse(sum(1 for t in found if matches(t["metadata"], filters)))


async def copy(request: Request) -> Response:
    """A new thread holding the source's whole history (every checkpoint, its
    subgraphs' and pending writes included: the saver's ``copy_thread``), its metadata
    and values."""
    thread = await load_thread(request, request.path_params["tid"])
    records = request.app.state.records
    new_id = str(uuid.uuid4())
    value = {"thread_id": new_id, "metadata": dict(thread["metadata"]), "if_exists": "raise"}
    await authorize(request, "threads", "create", value)
    records.create_thread(new_id, value["metadata"])
    await asyncio.to_thread(request.app.state.checkpointer.copy_thread, thread["thread_id"], new_id)
    if thread.get("values") is not None:
        records.update_thread(new_id, values=thread["values"])
    return JSONResponse(records.get_thread(new_id))


async def _state(request: Request, checkpoint: dict[str, Any] | None) -> Response:
    thread = await load_thread(request, request.path_params["tid"])
    graph = graph_of(request, thread, required=False)
    if graph is None:
        return JSONResponse(snapshot_json_empty())
    configurable = {"thread_id": thread["thread_id"], **(checkpoint or {})}
    subgraphs = request.query_params.get("subgraphs", "false").lower() in ("true", "1")
    snap = await asyncio.to_thread(
        graph.default.get_state, {"configurable": configurable}, subgraphs=subgraphs
    )
    return JSONResponse(snapshot_json(snap))


def snapshot_json_empty() -> dict[str, Any]:
    return {
        "values": {}, "next": [], "tasks": [], "metadata": None, "created_at": None,
        "checkpoint": None, "parent_checkpoint": None, "interrupts": [],
        "checkpoint_id": None, "parent_checkpoint_id": None,
    }  # fmt: skip


async def get_state(request: Request) -> Response:
    return await _state(request, None)


async def get_state_at(request: Request) -> Response:
    return await _state(request, {"checkpoint_id": request.path_params["checkpoint_id"]})


async def post_state_checkpoint(request: Request) -> Response:
    body = await json_body(request)
    checkpoint = field(body, "checkpoint", dict, {})
    return await _state(request, {k: v for k, v in checkpoint.items() if k != "thread_id"})


async def update_state(request: Request) -> Response:
    thread = await load_thread(request, request.path_params["tid"], "update")
    body = await json_body(request)
    if "values" not in body:
        raise invalid("'values' is required (the update to apply; null for none)")
    as_node = field(body, "as_node", str)
    graph = graph_of(request, thread, required=True)
    assert graph is not None
    if as_node is not None and as_node not in graph.builder.nodes:
        raise invalid(f"as_node {as_node!r} is not a node of graph {graph.graph_id!r}")
    configurable: dict[str, Any] = {"thread_id": thread["thread_id"]}
    checkpoint = field(body, "checkpoint", dict) or {}
    checkpoint_id = field(body, "checkpoint_id", str) or checkpoint.get("checkpoint_id")
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    if request.app.state.runner.on_thread(thread["thread_id"]):
        raise conflict("Thread is busy with a run; update its state when the run ends")
    try:
        config = await asyncio.to_thread(
            graph.default.update_state, {"configurable": configurable}, body["values"], as_node
        )
    except (ValueError, TypeError, KeyError) as e:
        raise invalid(f"the update does not fit the graph's state: {e}") from None
    snap = await asyncio.to_thread(
        graph.default.get_state, {"configurable": {"thread_id": thread["thread_id"]}}
    )
    state = snapshot_json(snap)
    metadata = {
        **thread["metadata"],
        "graph_id": graph.graph_id,
        "assistant_id": assistant_id_for(graph.graph_id),
    }
    request.app.state.records.update_thread(
        thread["thread_id"], values=state["values"], metadata=metadata,
        status="interrupted" if state["next"] else "idle",
    )  # fmt: skip
    c = config["configurable"]
    point = {"thread_id": c["thread_id"], "checkpoint_ns": c.get("checkpoint_ns", ""),
             "checkpoint_id": c["checkpoint_id"]}  # fmt: skip
    return JSONResponse({"checkpoint": point, "configurable": point,
                         "checkpoint_id": c["checkpoint_id"]})  # fmt: skip


async def history(request: Request) -> Response:
    thread = await load_thread(request, request.path_params["tid"])
    if request.method == "GET":
        body: dict[str, Any] = {"limit": query_int(request, "limit", 10, low=1)}
        if request.query_params.get("before"):
            body["before"] = {"configurable": {"checkpoint_id": request.query_params["before"]}}
    else:
        body = await json_body(request)
    limit = body_int(body, "limit", 10, low=1)
    before = field(body, "before", (dict, str))
    if isinstance(before, str):
        before = {"configurable": {"checkpoint_id": before}}
    elif before is not None and "configurable" not in before:
        before = {"configurable": before}
    filt = field(body, "metadata", dict)
    checkpoint = field(body, "checkpoint", dict) or {}
    graph = graph_of(request, thread, required=False)
    if graph is None:
        return JSONResponse([])
    configurable = {"thread_id": thread["thread_id"]}
    configurable.update({k: v for k, v in checkpoint.items() if k != "thread_id"})

    def read() -> list[dict[str, Any]]:
        return [
            snapshot_json(s)
            for s in graph.default.get_state_history(
                {"configurable": configurable}, filter=filt, before=before, limit=limit
            )
        ]

    return JSONResponse(await asyncio.to_thread(read))


#: Every run's first request (``app`` tries it before the others).
create_route = Route("/threads", create, methods=["POST"])
routes = [
    create_route,
    Route("/threads/search", search, methods=["POST"]),
    Route("/threads/count", count, methods=["POST"]),
    Route("/threads/{tid}", get, methods=["GET"]),
    Route("/threads/{tid}", patch, methods=["PATCH"]),
    Route("/threads/{tid}", delete, methods=["DELETE"]),
    Route("/threads/{tid}/copy", copy, methods=["POST"]),
    Route("/threads/{tid}/state", get_state, methods=["GET"]),
    Route("/threads/{tid}/state", update_state, methods=["POST"]),
    Route("/threads/{tid}/state/checkpoint", post_state_checkpoint, methods=["POST"]),
    Route("/threads/{tid}/state/{checkpoint_id}", get_state_at, methods=["GET"]),
    Route("/threads/{tid}/history", history, methods=["GET", "POST"]),
]
