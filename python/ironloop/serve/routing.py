"""The API's route tables: each module lists its paths once, with the handler of each
method, rather than a ``Route(...)`` line per path and method."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Handler = Callable[[Request], Awaitable[Response]]


def route_table(table: dict[str, dict[str, Handler]]) -> list[Route]:
    """A route per path and handler, in the table's order (Starlette tries routes in
    order: the hot ones are listed first). A handler named for several methods of one
    path (``{"GET": h, "POST": h}``) is one route taking them all."""
    out: list[Route] = []
    for path, by_method in table.items():
        handlers: dict[Handler, list[str]] = {}
        for method, handler in by_method.items():
            handlers.setdefault(handler, []).append(method)
        out.extend(Route(path, h, methods=methods) for h, methods in handlers.items())
    return out
