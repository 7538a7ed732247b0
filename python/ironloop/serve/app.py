"""The ASGI application: LangGraph's Agent Server API on Starlette, the project's
custom ``http.app`` mounted under it."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

from . import assistant_routes, crons, run_routes, store_routes, thread_routes, ui
from .assistants import Assistants
from .auth import Authenticator, AuthMiddleware
from .bodies import MAX_BODY_BYTES
from .db import Records, now
from .errors import ApiError, on_api_error, on_http_exception, on_unexpected
from .execution import Runner
from .graphs import load_graphs
from .project import Project, ProjectError
from .routing import Handler, HotPaths
from .serde import JSONResponse
from .ttl import sweep_threads

log = logging.getLogger("ironloop.serve")


@dataclass
class ServeOptions:
    """How ``ironloop serve`` was asked to run (see ``ironloop serve --help``)."""

    data_dir: Path | None = None
    postgres: str | None = None
    max_running: int = 32
    max_body_bytes: int = MAX_BODY_BYTES
    drain_seconds: float = 10.0
    api_key: str | None = None
    #: PostgreSQL: the schema of the server's tables (and the checkpoints, when given).
    postgres_schema: str | None = None
    #: PostgreSQL: how long a server's hold on a run lives unrenewed (a dead server's
    #: runs are taken over after it).
    run_lease_seconds: float = 10.0


def open_storage(project: Project, options: ServeOptions) -> tuple[Any, Records, Any]:
    """The checkpointer, the server's records and the store."""
    from ironloop import SqliteSaver

    data = options.data_dir or project.root / ".ironloop"
    data.mkdir(parents=True, exist_ok=True)
    records: Records
    if options.postgres:
        from ironloop import PostgresSaver

        from .cluster import worker_name
        from .pg import PgRecords

        checkpointer: Any = PostgresSaver(options.postgres, schema=options.postgres_schema)
        checkpointer.setup()
        try:
            records = PgRecords(options.postgres, options.postgres_schema or "ironloop_serve",
                                worker_name(), options.run_lease_seconds)  # fmt: skip
        except (ValueError, ConnectionError) as e:
            raise ProjectError(str(e)) from None
    else:
        checkpointer = SqliteSaver(str(data / "checkpoints.db"))
        try:
            records = Records(data / "server.db")
        except sqlite3.OperationalError as e:  # held by another server (``Records``)
            raise ProjectError(f"{data / 'server.db'}: {e}: is another ironloop serve "
                               "using this data folder? Give each server its own "
                               "--data-dir, or --postgres to share runs") from None  # fmt: skip
    from ironloop import store as store_module

    store_options = project.store_options()
    if options.postgres:
        # One store for every server on the database, as the threads.
        store: Any = store_module.PostgresStore(options.postgres, **store_options)
        store.setup()
        return checkpointer, records, store
    sqlite_store = getattr(store_module, "SqliteStore", None)
    if sqlite_store is not None:
        store = sqlite_store(str(data / "store.db"), **store_options)
        setup = getattr(store, "setup", None)
        if callable(setup) and not inspect.iscoroutinefunction(setup):
            setup()
    else:
        store = store_module.InMemoryStore(**store_options)
    return checkpointer, records, store


#: The youngest generation's collection threshold in a server process (CPython's is
#: 700 allocations). A server holds every in-flight request's and run's objects
#: alive at once, and each young collection walks all of them: at 700, a run paid for
#: a dozen walks of the whole in-flight set. Cycles are still collected, later.
SERVER_GC_THRESHOLD = 20_000


def tune_gc() -> None:
    """The server process's garbage collector, once its project is loaded: what was
    imported and built so far (modules, the graphs) is moved out of the collector's
    reach (``gc.freeze``: never garbage, but walked by every full collection), and
    young collections are made rarer (``SERVER_GC_THRESHOLD``)."""
    import gc

    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(SERVER_GC_THRESHOLD, older, oldest)


#: The routes every run takes (a thread made; a run started, streamed, waited for,
#: joined). No route listed before one of these in ``create_app`` takes its method and
#: path, so each path here goes to the handler Starlette's routing would give it.
HOT_ROUTES: dict[str, dict[str, Handler]] = {
    "POST": {
        "/threads": thread_routes.create,
        "/threads/{tid}/runs": run_routes.create,
        "/threads/{tid}/runs/stream": run_routes.stream,
        "/threads/{tid}/runs/wait": run_routes.wait,
    },
    "GET": {"/threads/{tid}/runs/{rid}/join": run_routes.join},
}


class ServeApp(Starlette):
    """Starlette, with ``HOT_ROUTES`` answered without its layers: the handler is called
    and its response sent here, its errors answered by the app's own exception
    handlers, as Starlette's middleware and routing would (a run's requests went
    through ~10 nested ASGI calls, each wrapping ``send``). Only without user middleware
    (CORS, auth), which every request must pass: then everything is Starlette's."""

    hot: HotPaths | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot = self.hot
        if hot is not None and scope["type"] == "http" and not scope.get("root_path"):
            found = hot.find(scope["method"], scope["path"])
            if found is not None:
                scope["app"] = self
                scope["path_params"] = found[1]
                await self._answer(found[0], Request(scope, receive, send), send)
                return
        await super().__call__(scope, receive, send)

    async def _answer(self, handler: Handler, request: Request, send: Send) -> None:
        """``handler``'s response, or its error's as the app's exception handlers give
        it; an unexpected error is raised again once answered (the server logs it), as
        Starlette's ``ServerErrorMiddleware`` does."""
        try:
            response = await handler(request)
        except Exception as exc:
            on_error = next(
                (self.exception_handlers[c] for c in type(exc).__mro__
                 if c in self.exception_handlers), None,
            )  # fmt: skip
            if on_error is None:
                raise
            answer = await on_error(request, exc)
            await answer(request.scope, request.receive, send)
            if not isinstance(exc, (ApiError, HTTPException)):
                raise
            return
        await response(request.scope, request.receive, send)


async def ok(_request: Request) -> Response:
    return JSONResponse({"ok": True})


async def info(_request: Request) -> Response:
    from importlib.metadata import version

    return JSONResponse(
        {
            "version": version("ironloop"),
            "server": "ironloop",
            "flags": {"assistants": True, "crons": True, "langsmith": False},
        }
    )


def create_app(project: Project, options: ServeOptions | None = None) -> ServeApp:
    """The server for ``project``: graphs imported, storage opened, runs left unfinished
    by an earlier process resumed when the app starts."""
    options = options or ServeOptions()
    project.prepare()
    checkpointer, records, store = open_storage(project, options)
    graphs = load_graphs(project, checkpointer, store)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.runner = Runner(records, options.max_running)
        app.state.background = set()
        if options.postgres:
            from .cluster import Cluster

            app.state.cluster = Cluster(app, records, options.postgres)  # type: ignore[arg-type]
            await app.state.cluster.start()
        resumed = run_routes.resume_unfinished(app)
        if resumed:
            log.info("resumed %d run(s) left unfinished by the last server", resumed)
        loop = asyncio.get_running_loop()
        app.state.background.add(loop.create_task(crons.scheduler(app)))
        ttl = project.checkpointer_ttl()
        if ttl is not None:
            app.state.background.add(loop.create_task(sweep_threads(app, ttl)))
        try:
            yield
        finally:
            if app.state.cluster is not None:
                app.state.cluster.stop_claiming()
            await app.state.runner.shutdown(options.drain_seconds)
            if app.state.cluster is not None:
                await app.state.cluster.close()
            background = list(app.state.background)
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            records.close()

    # Starlette tries routes in order, a regex each: the ones every run takes first
    # (a thread made, a run started, joined; no two routes take the same method and
    # path, so the order changes nothing else).
    routes: list[BaseRoute] = [
        thread_routes.create_route,
        *run_routes.routes,
        *[r for r in thread_routes.routes if r is not thread_routes.create_route],
        Route("/ok", ok, methods=["GET"]),
        Route("/info", info, methods=["GET"]),
        *assistant_routes.routes,
        *store_routes.routes,
        *crons.routes,
        *ui.routes(),
    ]
    custom = project.http.get("app")
    if custom:
        user_app = project.import_object(custom, '"http.app"')
        handlers = getattr(user_app, "exception_handlers", None)
        if isinstance(handlers, dict) and not {404, 405, HTTPException} & set(handlers):
            # Paths neither app has get the API's JSON 404, not Starlette's plain text.
            user_app.add_exception_handler(HTTPException, on_http_exception)
        routes.append(Mount("", app=user_app))
    auth_config = project.raw.get("auth") or {}
    auth = None
    if auth_config.get("path"):
        try:
            auth = Authenticator(project.import_object(auth_config["path"], '"auth.path"'))
        except TypeError as e:
            raise ProjectError(str(e)) from None
    middleware = []
    cors = project.http.get("cors")
    if cors:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=cors.get("allow_origins", []),
                allow_methods=cors.get("allow_methods", ["GET", "POST", "PUT", "PATCH", "DELETE"]),
                allow_headers=cors.get("allow_headers", []),
                allow_credentials=cors.get("allow_credentials", False),
                expose_headers=cors.get("expose_headers", []),
                max_age=cors.get("max_age", 600),
            )
        )
    if options.api_key is not None or auth is not None:
        middleware.append(Middleware(AuthMiddleware, api_key=options.api_key, auth=auth))
    app = ServeApp(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            ApiError: on_api_error,
            HTTPException: on_http_exception,
            Exception: on_unexpected,
        },
    )
    if not middleware:
        app.hot = HotPaths(HOT_ROUTES)
    app.state.graphs = graphs
    # One process writes SQLite records: what runs read of their assistant stays in memory.
    app.state.assistants = Assistants(records, graphs, cached=not options.postgres)
    app.state.records = records
    app.state.cluster = None
    app.state.crons = crons.Crons(records)
    app.state.checkpointer = checkpointer
    app.state.store = store
    app.state.max_body_bytes = options.max_body_bytes
    app.state.auth = auth
    app.state.started_at = now()
    return app
