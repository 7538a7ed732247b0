"""Crons: runs started on a schedule (a cron expression, read by ``croniter``; a sixth
field is seconds), on a thread or each on a fresh thread, kept in the server's records
so they outlive a restart. ``/runs/crons`` and ``/threads/{id}/runs/crons``."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import datetime, timezone
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .auth import authorize, matches
from .bodies import body_int, choice, field, json_body, uuid_param
from .db import Records, now
from .errors import invalid, not_found
from .graphs import assistant_id_for
from .routing import route_table
from .serde import JSONResponse

log = logging.getLogger("ironloop.serve")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS crons (
    cron_id TEXT PRIMARY KEY,
    thread_id TEXT,
    body TEXT NOT NULL,
    next_run_date TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""


def _next(schedule: str, tz: str | None, after: datetime | None = None) -> str:
    from croniter import croniter  # type: ignore[import-untyped]

    start = after or datetime.now(timezone.utc)
    if tz:
        from zoneinfo import ZoneInfo

        start = start.astimezone(ZoneInfo(tz))
    return croniter(schedule, start).get_next(datetime).astimezone(timezone.utc).isoformat()


class Crons:
    """The crons table, beside the threads and runs."""

    def __init__(self, records: Records) -> None:
        self.records = records
        records._script(_SCHEMA)

    @staticmethod
    def _json(row: Any) -> dict[str, Any]:
        body = json.loads(row["body"])
        return {
            "cron_id": row["cron_id"],
            "assistant_id": body["payload"].get("assistant_id")
            or assistant_id_for(body["graph_id"]),
            "thread_id": row["thread_id"],
            "user_id": body.get("user_id", ""),
            "end_time": body.get("end_time"),
            "schedule": body["schedule"],
            "timezone": body.get("timezone"),
            "payload": body["payload"],
            "next_run_date": row["next_run_date"],
            "metadata": body.get("metadata", {}),
            "on_run_completed": body.get("on_run_completed"),
            "enabled": bool(row["enabled"]),
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
        }

    def add(self, thread_id: str | None, body: dict[str, Any]) -> dict[str, Any]:
        cron_id, t = str(uuid.uuid4()), now()
        nxt = _next(body["schedule"], body.get("timezone"))
        self.records._exec(
            "INSERT INTO crons VALUES (?,?,?,?,?,?,?)",
            (cron_id, thread_id, json.dumps(body), nxt, int(body.get("enabled", True)), t, t),
        )
        got = self.get(cron_id)
        assert got is not None
        return got

    def get(self, cron_id: str) -> dict[str, Any] | None:
        rows = self.records._exec("SELECT * FROM crons WHERE cron_id = ?", (cron_id,))
        return self._json(rows[0]) if rows else None

    def all(self) -> list[dict[str, Any]]:
        rows = self.records._exec("SELECT * FROM crons ORDER BY created_at DESC")
        return [self._json(r) for r in rows]

    def due(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        rows = self.records._exec(
            "SELECT * FROM crons WHERE enabled = 1 AND next_run_date <= ?", (now(),)
        )
        return [(self._json(r), json.loads(r["body"])) for r in rows]

    def update(self, cron_id: str, body: dict[str, Any], next_run_date: str | None) -> None:
        sets = "body = ?, enabled = ?, updated_at = ?" + (
            ", next_run_date = ?" if next_run_date else ""
        )
        args: list[Any] = [json.dumps(body), int(body.get("enabled", True)), now()]
        if next_run_date:
            args.append(next_run_date)
        self.records._exec(f"UPDATE crons SET {sets} WHERE cron_id = ?", (*args, cron_id))

    def delete(self, cron_id: str) -> bool:
        return self.records._count("DELETE FROM crons WHERE cron_id = ?", (cron_id,)) > 0

    def advance(self, cron_id: str, due: str, next_run_date: str) -> bool:
        """Moves a due cron's date on; ``False`` when another server did it first (so
        each firing starts one run, however many servers share the records)."""
        return (
            self.records._count(
                "UPDATE crons SET next_run_date = ?, updated_at = ? WHERE cron_id = ?"
                " AND next_run_date = ?",
                (next_run_date, now(), cron_id, due),
            )
            == 1
        )


def _check_schedule(schedule: Any, tz: Any) -> None:
    from croniter import croniter  # type: ignore[import-untyped]

    if not isinstance(schedule, str) or not croniter.is_valid(schedule):
        raise invalid(f"'schedule' must be a cron expression, got {json.dumps(schedule)[:60]}")
    if tz is not None:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(tz)
        except Exception:
            raise invalid(f"'timezone' {tz!r} is not a known time zone") from None


async def create(request: Request) -> Response:
    from .run_routes import RAW_KEYS, parse_spec

    body = await json_body(request, optional=False)
    tid = request.path_params.get("tid")
    if tid is not None:
        from .thread_routes import load_thread

        tid = (await load_thread(request, tid, "create_run"))["thread_id"]
    spec = parse_spec(request.app.state.assistants, body)  # the run's options checked now
    _check_schedule(body.get("schedule"), body.get("timezone"))
    value = {"thread_id": tid, "metadata": field(body, "metadata", dict, {}),
             "schedule": body["schedule"]}  # fmt: skip
    filters = await authorize(request, "crons", "create", value)
    payload = {k: body[k] for k in RAW_KEYS if body.get(k) is not None}
    payload["assistant_id"] = spec.assistant_id
    record = {
        "graph_id": spec.graph.graph_id,
        "schedule": body["schedule"],
        "timezone": field(body, "timezone", str),
        "end_time": field(body, "end_time", str),
        "metadata": value["metadata"],
        "payload": payload,
        "enabled": field(body, "enabled", bool, True),
        "on_run_completed": None if tid else choice(
            body, "on_run_completed", ("delete", "keep"), "delete"),
        "owner": {k: v for k, v in (filters or {}).items() if not isinstance(v, dict)},
    }  # fmt: skip
    return JSONResponse(request.app.state.crons.add(tid, record))


async def search(request: Request) -> Response:
    body = await json_body(request)
    assistant = field(body, "assistant_id", str)
    thread_id = field(body, "thread_id", str)
    limit = body_int(body, "limit", 10, low=1)
    offset = body_int(body, "offset", 0, high=1_000_000)
    filters = await authorize(request, "crons", "search", dict(body))
    found = [
        c for c in request.app.state.crons.all()
        if (assistant is None or c["assistant_id"] in (assistant, assistant_id_for(assistant)))
        and (thread_id is None or c["thread_id"] == thread_id)
        and matches(c["metadata"], filters)
    ]  # fmt: skip
    if request.url.path.endswith("/count"):
        return JSONResponse(len(found))
    return JSONResponse(found[offset : offset + limit])


async def _cron(request: Request, action: str) -> dict[str, Any]:
    cron_id = uuid_param(request.path_params["cid"], "cron")
    filters = await authorize(request, "crons", action, {"cron_id": cron_id})
    cron = request.app.state.crons.get(cron_id)
    if cron is None or not matches(cron["metadata"], filters):
        raise not_found(f"Cron with ID {cron_id}")
    return dict(cron)


async def delete(request: Request) -> Response:
    cron = await _cron(request, "delete")
    request.app.state.crons.delete(cron["cron_id"])
    return Response(status_code=204)


async def update(request: Request) -> Response:
    cron = await _cron(request, "update")
    body = await json_body(request)
    rows = request.app.state.records._exec("SELECT body FROM crons WHERE cron_id = ?",
                                           (cron["cron_id"],))  # fmt: skip
    record = json.loads(rows[0]["body"])
    for key in ("schedule", "timezone", "end_time", "enabled", "metadata", "on_run_completed"):
        if key in body and body[key] is not None:
            record[key] = body[key]
    for key in ("input", "config", "context", "stream_mode", "interrupt_before",
                "interrupt_after", "durability"):  # fmt: skip
        if body.get(key) is not None:
            record["payload"][key] = body[key]
    _check_schedule(record["schedule"], record.get("timezone"))
    nxt = _next(record["schedule"], record.get("timezone")) if "schedule" in body else None
    request.app.state.crons.update(cron["cron_id"], record, nxt)
    return JSONResponse(request.app.state.crons.get(cron["cron_id"]))


async def scheduler(app: Any, period: float = 0.5) -> None:
    """Starts each due cron's run, then moves its next date on (a cron past its
    ``end_time`` is disabled). Runs until cancelled."""
    from .run_routes import parse_spec, start_cron_run

    crons: Crons = app.state.crons
    while True:
        for cron, record in crons.due():
            end = record.get("end_time")
            if end and datetime.fromisoformat(end) <= datetime.now(timezone.utc):
                record["enabled"] = False
                crons.update(cron["cron_id"], record, None)
                continue
            nxt = _next(record["schedule"], record.get("timezone"))
            if not crons.advance(cron["cron_id"], cron["next_run_date"], nxt):
                continue
            try:
                spec = parse_spec(app.state.assistants, {**record["payload"],
                                                     "multitask_strategy": "enqueue"})  # fmt: skip
                spec.config = {**spec.config, "configurable": {
                    **spec.config.get("configurable", {}), "cron_id": cron["cron_id"]}}  # fmt: skip
                start_cron_run(app, cron, record, spec)
            except Exception as e:
                log.warning("cron %s could not start its run: %s", cron["cron_id"], e)
        await asyncio.sleep(period)


routes = route_table(
    {
        "/runs/crons": {"POST": create},
        "/threads/{tid}/runs/crons": {"POST": create},
        "/runs/crons/search": {"POST": search},
        "/runs/crons/count": {"POST": search},
        "/runs/crons/{cid}": {"DELETE": delete, "PATCH": update},
    }
)
