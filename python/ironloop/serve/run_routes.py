"""``/threads/{id}/runs`` and ``/runs``: background runs, ``wait``, ``stream`` (SSE),
join, join_stream, cancel, list, get, delete; stateless runs on a temporary thread."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from ironloop._constants import INTERRUPT
from ironloop._ironloop import _DURABILITIES

from .assistants import Assistants
from .auth import authorize, matches
from .bodies import choice, field, json_body, json_list, query_int, str_list, uuid_param
from .errors import ApiError, conflict, invalid, not_found
from .execution import MULTITASK, STREAM_MODES, ActiveRun, RunSpec, has_saved_step
from .routing import route_table
from .serde import JSONResponse, RawJSON, dumps
from .thread_routes import load_thread

log = logging.getLogger("ironloop.serve")
DURABILITY = _DURABILITIES
#: The body fields a run record keeps (its ``kwargs``), enough to start it again.
RAW_KEYS = (
    "assistant_id",
    "input",
    "command",
    "config",
    "context",
    "metadata",
    "stream_mode",
    "stream_subgraphs",
    "interrupt_before",
    "interrupt_after",
    "multitask_strategy",
    "durability",
    "checkpoint_id",
    "webhook",
)


def parse_spec(assistants: Assistants, body: dict[str, Any]) -> RunSpec:
    """The run ``body`` asks for, on its assistant's graph with the assistant's config
    and context under the run's own (as LangGraph merges them)."""
    assistant_id = field(body, "assistant_id", str)
    if assistant_id is None:
        raise invalid("'assistant_id' is required (an assistant id or a graph id)")
    graph, assistant = assistants.resolve(assistant_id)
    modes = str_list(body, "stream_mode") or ["values"]
    for mode in modes:
        if mode not in STREAM_MODES:
            raise invalid(f"stream_mode {mode!r} is not one of {', '.join(STREAM_MODES)}")
    command = field(body, "command", dict)
    if command is not None:
        unknown = set(command) - {"resume", "update", "goto"}
        if unknown:
            raise invalid(f"'command' takes resume, update and goto; got {sorted(unknown)}")
        if body.get("input") is not None:
            raise invalid("give 'input' or 'command', not both")
    config = field(body, "config", dict, {})
    if not isinstance(config.get("configurable", {}), dict):
        raise invalid("'config.configurable' must be an object")
    if assistant["config"]:
        config = {
            **assistant["config"],
            **config,
            "configurable": {
                **assistant["config"].get("configurable", {}),
                **config.get("configurable", {}),
            },
        }
    context = body.get("context")
    if assistant["context"] and (context is None or isinstance(context, dict)):
        context = {**assistant["context"], **(context or {})}
    checkpoint = field(body, "checkpoint", dict) or {}
    checkpoint_id = field(body, "checkpoint_id", str) or checkpoint.get("checkpoint_id")
    spec = RunSpec(
        graph=graph,
        assistant_id=assistant["assistant_id"],
        input=body.get("input"),
        command=command,
        config=config,
        context=context,
        metadata=field(body, "metadata", dict, {}),
        stream_modes=modes,
        subgraphs=bool(field(body, "stream_subgraphs", bool, False)),
        resumable=bool(field(body, "stream_resumable", bool, False)),
        interrupt_before=_breakpoints(body, "interrupt_before"),
        interrupt_after=_breakpoints(body, "interrupt_after"),
        multitask_strategy=choice(body, "multitask_strategy", MULTITASK, "reject"),
        durability=choice(body, "durability", DURABILITY, None),
        checkpoint_id=checkpoint_id,
        on_disconnect=choice(body, "on_disconnect", ("cancel", "continue"), "continue"),
        webhook=_webhook(body),
        raw={k: body[k] for k in RAW_KEYS if body.get(k) is not None},
    )  # fmt: skip
    spec.graph.breakpoints(spec.interrupt_before, spec.interrupt_after)  # names checked now
    return spec


def _webhook(body: dict[str, Any]) -> str | None:
    """The URL the run's result is POSTed to when it ends (an absolute http(s) URL)."""
    url = field(body, "webhook", str)
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid(f"'webhook' must be an absolute http or https URL, got {url[:80]!r}")
    return url


def _breakpoints(body: dict[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value == "*":
        return ["*"]
    return str_list(body, name)


async def _start(
    request: Request, thread_id: str | None, body: dict[str, Any] | None = None
) -> tuple[ActiveRun, bool]:
    """Checks the body (the request's, unless given), makes the thread if asked, and
    starts the run. Returns it and whether its thread is temporary (a stateless run)."""
    if body is None:
        body = await json_body(request, optional=False)
    thread_id, spec, temporary = await _prepare(request, thread_id, body)
    run = request.app.state.runner.start(thread_id, spec, str(uuid.uuid4()))
    return run, temporary


async def _prepare(
    request: Request, thread_id: str | None, body: dict[str, Any]
) -> tuple[str, RunSpec, bool]:
    """Checks the body and makes the thread if asked: the thread, the run's spec and
    whether the thread is temporary (a stateless run)."""
    spec = parse_spec(request.app.state.assistants, body)
    records = request.app.state.records
    runner = request.app.state.runner
    temporary = thread_id is None
    thread_id = str(uuid.uuid4()) if thread_id is None else uuid_param(thread_id, "thread")
    value: dict[str, Any] = {"thread_id": thread_id, "assistant_id": spec.assistant_id,
             "metadata": spec.metadata, "multitask_strategy": spec.multitask_strategy,
             "kwargs": spec.raw}  # fmt: skip
    filters = await authorize(request, "threads", "create_run", value)
    spec.metadata = value["metadata"]
    # A thread made for the run carries the caller's filters, so it stays theirs.
    owned = {k: v for k, v in (filters or {}).items() if not isinstance(v, dict)}
    if temporary:
        on_completion = choice(body, "on_completion", ("delete", "keep"), "delete")
        temporary = on_completion == "delete"
        if temporary:  # kept with the run: whichever server runs it drops the thread
            spec.raw["on_completion"] = "delete"
        thread = records.create_thread(thread_id, owned)
    else:
        if_not_exists = choice(body, "if_not_exists", ("create", "reject"), "reject")
        thread = records.get_thread(thread_id, raw_values=True)
        if thread is not None and not matches(thread["metadata"], filters):
            raise not_found(f"Thread with ID {thread_id}")
        if thread is None:
            if if_not_exists == "reject":
                raise not_found(f"Thread with ID {thread_id}")
            thread = records.create_thread(thread_id, owned)
    thread = thread or records.get_thread(thread_id)  # made meanwhile by another request
    busy = runner.on_thread(thread_id) or (
        request.app.state.cluster is not None and records.has_unfinished(thread_id)
    )
    if spec.multitask_strategy == "reject" and busy:
        raise conflict(
            "Thread is already running a task. Wait for it to finish or choose a different "
            "multitask strategy (enqueue, interrupt, rollback)."
        )
    if thread["metadata"].get("graph_id") not in (None, spec.graph.graph_id):
        raise conflict(
            f"thread {thread_id} belongs to graph {thread['metadata']['graph_id']!r}, "
            f"not {spec.graph.graph_id!r}"
        )
    # Written with the thread's "busy" when the run starts (one statement).
    spec.thread_metadata = {**thread["metadata"], "graph_id": spec.graph.graph_id,
                            "assistant_id": spec.assistant_id}  # fmt: skip
    return thread_id, spec, temporary


def _cleanup(request: Request, run: ActiveRun) -> None:
    drop_when_done(request.app, run)


def drop_when_done(app: Any, run: ActiveRun) -> None:
    """A stateless run's thread goes once the run ends (on the server that runs it)."""

    async def drop() -> None:
        await run.done.wait()
        if run.record["status"] in ("pending", "running"):
            return  # stopped with its server: the next one runs it, then drops it
        app.state.records.delete_thread(run.thread_id)
        await asyncio.to_thread(app.state.checkpointer.delete_thread, run.thread_id)

    task = asyncio.get_running_loop().create_task(drop())
    app.state.background.add(task)
    task.add_done_callback(app.state.background.discard)


def _paths(run: ActiveRun) -> tuple[str, str]:
    base = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return base, base + "/stream"


async def create(request: Request) -> Response:
    cluster = request.app.state.cluster
    if cluster is not None:
        # Several servers: the run is queued, for whichever server has room (a
        # stateless one too: the server that runs it drops its thread after).
        body = await json_body(request, optional=False)
        thread_id, spec, _ = await _prepare(request, request.path_params.get("tid"), body)
        record = cluster.enqueue(thread_id, spec, str(uuid.uuid4()))
        base = f"/threads/{thread_id}/runs/{record['run_id']}"
        return JSONResponse(record, headers={"Content-Location": base})
    run, temporary = await _start(request, request.path_params.get("tid"))
    if temporary:
        _cleanup(request, run)
    base, _ = _paths(run)
    return JSONResponse(run.record, headers={"Content-Location": base})


async def final_output(
    request: Request, thread_id: str, run: ActiveRun | None, thread: dict[str, Any] | None = None
) -> Any:
    """What ``wait`` and ``join`` answer: the thread's values, with ``__interrupt__``
    when paused, or ``{"__error__": ...}`` when the run failed. ``thread``: its record
    as read after the run ended (or the columns the run's end wrote), if the caller
    has it."""
    if run is not None and run.error is not None:
        return {"__error__": run.error}
    if thread is None:
        thread = request.app.state.records.get_thread(thread_id, raw_values=True)
    if thread is None:
        return None
    if thread.get("error") and run is None:
        return {"__error__": thread["error"]}
    values = thread["values"]
    interrupts = [i for group in thread["interrupts"].values() for i in group]
    if interrupts and type(values) is RawJSON:
        values = values.value()
    if interrupts and isinstance(values, dict):
        values = {**values, INTERRUPT: interrupts}
    return values  # RawJSON mostly: ``dumps`` answers it as it is


async def wait(request: Request) -> Response:
    run, temporary = await _start(request, request.path_params.get("tid"))
    await asyncio.shield(run.done.wait())
    out = await final_output(request, run.thread_id, run, run.settled)
    if temporary:
        request.app.state.records.delete_thread(run.thread_id)
        await asyncio.to_thread(request.app.state.checkpointer.delete_thread, run.thread_id)
    base, _ = _paths(run)
    return Response(dumps(out), media_type="application/json",
                    headers={"Location": base + "/join"})  # fmt: skip


def _sse(request: Request, run: ActiveRun, events: AsyncIterator[tuple[str, str, str]],
         *, cancel_on_disconnect: bool) -> Response:  # fmt: skip
    async def on_disconnect() -> None:
        if cancel_on_disconnect and not run.done.is_set():
            await request.app.state.runner.cancel(run, "interrupt")

    return _sse_response(*_paths(run), events, run.spec.resumable, on_disconnect)


def _sse_response(base: str, stream: str, events: AsyncIterator[tuple[str, str, str]],
                  resumable: bool, on_disconnect: Callable[[], Awaitable[None]]) -> Response:  # fmt: skip
    """``events`` as Server-Sent Events; ``on_disconnect()`` runs if the client leaves."""

    async def frames() -> AsyncIterator[ServerSentEvent]:
        try:
            async for seq, event, data in events:
                yield ServerSentEvent(data=data, event=event, id=seq if resumable else None)
        except asyncio.CancelledError:
            await on_disconnect()
            raise

    return EventSourceResponse(
        frames(),
        headers={"Location": stream, "Content-Location": base, "Cache-Control": "no-store",
                 "X-Accel-Buffering": "no"},
        ping=15,
        sep="\n",
    )  # fmt: skip


async def stream(request: Request) -> Response:
    run, temporary = await _start(request, request.path_params.get("tid"))
    if temporary:
        _cleanup(request, run)
    # Subscribed before the run's task first runs: no event is missed.
    return _sse(request, run, run.events(), cancel_on_disconnect=run.spec.on_disconnect == "cancel")


async def _run_or_404(request: Request, action: str = "read") -> tuple[str, str, ActiveRun | None]:
    thread, rid, active = await _thread_and_run(request, action)
    return thread["thread_id"], rid, active


async def _thread_and_run(
    request: Request, action: str = "read"
) -> tuple[dict[str, Any], str, ActiveRun | None]:
    """The path's thread (its record as read now, its values ``RawJSON``), run id and
    the run if active here; 404 when either is unknown (or not the caller's)."""
    rid = uuid_param(request.path_params["rid"], "run")
    thread = await load_thread(
        request, request.path_params["tid"], action, raw_values=True, run_id=rid
    )
    # In the turn the thread was read: a run not active now had ended by then.
    active = request.app.state.runner.active.get(rid)
    if not thread.pop("has_run") and active is None:
        raise not_found(f"Run with ID {rid}")
    return thread, rid, active


async def get(request: Request) -> Response:
    tid, rid, active = await _run_or_404(request)
    if active is not None:
        return JSONResponse(active.record)
    return JSONResponse(request.app.state.records.get_run(tid, rid))


async def delete(request: Request) -> Response:
    _tid, rid, active = await _run_or_404(request, "delete")
    if active is not None:
        raise conflict(f"Run {rid} is still {active.record['status']}; cancel it first")
    request.app.state.records.delete_run(rid)
    return Response(status_code=204)


async def join(request: Request) -> Response:
    thread, rid, active = await _thread_and_run(request)
    tid = thread["thread_id"]
    cluster = request.app.state.cluster
    settled: dict[str, Any] | None = None
    if active is not None:
        await asyncio.shield(active.done.wait())
        settled = active.settled  # what its end wrote (else the thread is read)
    elif cluster is not None:
        await cluster.wait_done(rid)  # held by another server, or queued
    else:
        settled = thread  # the run had ended when the thread was read: it is settled
    out = await final_output(request, tid, active, settled)
    return Response(dumps(out), media_type="application/json")


async def join_stream(request: Request) -> Response:
    tid, rid, active = await _run_or_404(request)
    cluster = request.app.state.cluster
    if active is None:
        run_record = request.app.state.records.get_run(tid, rid)
        if run_record["status"] in ("pending", "running") and cluster is not None:
            base = f"/threads/{tid}/runs/{rid}"
            return _sse_response(base, base + "/stream", cluster.events(rid), False, _keep_running)
        if run_record["status"] in ("pending", "running"):
            raise ApiError(409, f"Run {rid} is not running in this server process")
        return EventSourceResponse(
            _nothing(), headers={"Location": f"/threads/{tid}/runs/{rid}/stream"}
        )
    last = request.headers.get("last-event-id")
    cancel = request.query_params.get("cancel_on_disconnect", "false").lower() in ("true", "1")
    return _sse(request, active, active.events(after=last), cancel_on_disconnect=cancel)


async def _keep_running() -> None:
    """A client leaving a stream of another server's run leaves the run be."""


async def _nothing() -> AsyncIterator[ServerSentEvent]:
    return
    yield  # an async generator that yields nothing


async def cancel(request: Request) -> Response:
    tid, rid, active = await _run_or_404(request, "update")
    action = request.query_params.get("action", "interrupt")
    if action not in ("interrupt", "rollback"):
        raise invalid(f"query parameter 'action' must be interrupt or rollback, got {action!r}")
    wait_for = request.query_params.get("wait", "false").lower() in ("true", "1")
    cluster = request.app.state.cluster
    if active is None:
        record = request.app.state.records.get_run(tid, rid)
        if record["status"] in ("pending", "running") and cluster is not None:
            cluster.cancel(tid, rid, action)  # whichever server holds it stops it
            if wait_for:
                await cluster.wait_done(rid)
        elif record["status"] in ("pending", "running"):
            raise ApiError(409, f"Run {rid} is not running in this server process")
        return JSONResponse({})
    await request.app.state.runner.cancel(active, action)
    if wait_for:
        await asyncio.shield(active.done.wait())
    return JSONResponse({})


async def list_runs(request: Request) -> Response:
    thread = await load_thread(request, request.path_params["tid"])
    limit = query_int(request, "limit", 10, low=1)
    offset = query_int(request, "offset", 0, high=1_000_000)
    status = request.query_params.get("status")
    runs = request.app.state.records.list_runs(thread["thread_id"], limit, offset, status)
    active = request.app.state.runner.active
    return JSONResponse([active[r["run_id"]].record if r["run_id"] in active else r for r in runs])


def start_cron_run(app: Any, cron: dict[str, Any], record: dict[str, Any], spec: RunSpec) -> None:
    """A cron's run: on its thread, or on a new thread (kept or deleted after)."""
    records = app.state.records
    thread_id = cron["thread_id"]
    if thread_id is None or records.get_thread(thread_id) is None:
        thread_id = str(uuid.uuid4())
        records.create_thread(thread_id, dict(record.get("owner") or {}))
    thread = records.get_thread(thread_id)
    records.update_thread(thread_id, metadata={**thread["metadata"],
                                               "graph_id": spec.graph.graph_id,
                                               "assistant_id": spec.assistant_id})  # fmt: skip
    run = app.state.runner.start(thread_id, spec, str(uuid.uuid4()))
    if cron["thread_id"] is None and record.get("on_run_completed") == "delete":

        async def drop() -> None:
            await run.done.wait()
            records.delete_thread(run.thread_id)
            await asyncio.to_thread(app.state.checkpointer.delete_thread, run.thread_id)

        task = asyncio.get_running_loop().create_task(drop())
        app.state.background.add(task)
        task.add_done_callback(app.state.background.discard)


def resume_unfinished(app: Any) -> int:
    """Starts again the runs an earlier server left pending or running: one that saved
    a step continues from its last saved step (input ``None``), another from its input
    (a run is recorded running before its first step)."""
    records = app.state.records
    count = 0
    if app.state.cluster is not None:
        return 0  # several servers: runs are claimed from the queue (``cluster``)
    for record in records.unfinished_runs():
        body = dict(record["kwargs"])
        body["multitask_strategy"] = "enqueue"
        try:
            spec = parse_spec(app.state.assistants, body)
        except ApiError as e:
            log.warning("run %s cannot be resumed: %s", record["run_id"], e.detail)
            records.set_run_status(record["run_id"], "error")
            continue
        if has_saved_step(spec.graph, record["thread_id"], record["run_id"]):
            spec.input, spec.command = None, None
        run = app.state.runner.start(
            record["thread_id"], spec, record["run_id"], created_at=record["created_at"]
        )
        if record["kwargs"].get("on_completion") == "delete":
            drop_when_done(app, run)  # a stateless run's thread
        count += 1
    return count


async def batch(request: Request) -> Response:
    """Stateless background runs, one per body of the array: every body is checked
    before any run starts (a mistake names the run by its index)."""
    bodies = await json_list(request)
    if not bodies:
        raise invalid("the batch is empty: give a JSON array of runs")
    for i, body in enumerate(bodies):
        try:
            if not isinstance(body, dict):
                raise invalid(f"a run must be a JSON object, got {type(body).__name__}")
            if body.get("thread_id") is not None:
                raise invalid("a batch's runs are stateless: 'thread_id' is not taken")
            parse_spec(request.app.state.assistants, body)
        except ApiError as e:
            raise ApiError(e.status, f"run {i} of the batch: {e.detail}") from None
    records = []
    for body in bodies:
        run, temporary = await _start(request, None, body)
        if temporary:
            _cleanup(request, run)
        records.append(run.record)
    return JSONResponse(records)


routes = route_table(
    {
        "/threads/{tid}/runs": {"POST": create, "GET": list_runs},
        "/threads/{tid}/runs/{rid}/join": {"GET": join},
        "/threads/{tid}/runs/wait": {"POST": wait},
        "/threads/{tid}/runs/stream": {"POST": stream},
        "/threads/{tid}/runs/{rid}": {"GET": get, "DELETE": delete},
        "/threads/{tid}/runs/{rid}/stream": {"GET": join_stream},
        "/threads/{tid}/runs/{rid}/cancel": {"POST": cancel},
        "/runs": {"POST": create},
        "/runs/wait": {"POST": wait},
        "/runs/stream": {"POST": stream},
        "/runs/batch": {"POST": batch},
    }
)
