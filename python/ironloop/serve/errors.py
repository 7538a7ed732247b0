"""Errors a client caused, answered as ``{"detail": ...}`` with a 4xx status, as
LangGraph's server answers them; anything else is a 500 whose body names no internals
(the traceback goes to the server's log)."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .serde import JSONResponse

log = logging.getLogger("ironloop.serve")


class ApiError(Exception):
    """A request the server refuses: ``status`` and a ``detail`` naming the problem."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def not_found(what: str) -> ApiError:
    return ApiError(404, f"{what} not found")


def invalid(detail: str) -> ApiError:
    return ApiError(422, detail)


def conflict(detail: str) -> ApiError:
    return ApiError(409, detail)


async def on_api_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status)


async def on_http_exception(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse(
        {"detail": f"internal server error ({type(exc).__name__}); see the server log"},
        status_code=500,
    )
