"""The API's route tables: each module lists its paths once, with the handler of each
method, rather than a ``Route(...)`` line per path and method."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Handler = Callable[[Request], Awaitable[Response]]
_HotPath = tuple[tuple[str | None, ...], tuple[str, ...], Handler]


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


class HotPaths:
    """The routes every run takes, found by splitting the path on ``/`` and one dict
    lookup instead of Starlette trying each route's regex in turn: ``{"POST":
    {"/threads/{tid}/runs": handler}}``. A ``{name}`` segment is a non-empty path
    parameter, as Starlette's ``{name}`` matches it. The caller keeps every path this
    finds answered by the same handler Starlette would give it (no other route of
    the method takes the path before it)."""

    def __init__(self, table: dict[str, dict[str, Handler]]) -> None:
        #: (method, segment count) -> [(segments, parameter names, handler)]: literal
        #: segments as text, a parameter's as ``None``.
        self._by_shape: dict[tuple[str, int], list[_HotPath]] = {}
        for method, paths in table.items():
            for path, handler in paths.items():
                parts = path.split("/")
                literal = tuple(None if p.startswith("{") else p for p in parts)
                names = tuple(p[1:-1] for p in parts if p.startswith("{"))
                self._by_shape.setdefault((method, len(parts)), []).append(
                    (literal, names, handler)
                )

    def find(self, method: str, path: str) -> tuple[Handler, dict[str, str]] | None:
        """The handler of ``method`` on ``path`` and its path parameters, if hot."""
        parts = path.split("/")
        for literal, names, handler in self._by_shape.get((method, len(parts)), ()):
            params = []
            for want, have in zip(literal, parts, strict=True):
                if want is None:
                    if not have:
                        break
                    params.append(have)
                elif want != have:
                    break
            else:
                return handler, dict(zip(names, params, strict=True))
        return None
