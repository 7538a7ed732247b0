"""Authentication and owner scoping, as LangGraph's server does them: a project's
``"auth": {"path": "./auth.py:auth"}`` names a ``langgraph_sdk.Auth`` object whose
``@auth.authenticate`` handler identifies the caller and whose ``@auth.on`` handlers
allow, refuse or scope each action (returning metadata filters); or a plain API key
(``--api-key`` / ``IRONLOOP_API_KEY``) that every request must carry in ``x-api-key``."""

from __future__ import annotations

import hmac
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import ApiError
from .serde import JSONResponse
from .ui import is_public

#: Paths open to anyone (health checks; the web UI's page and files, :mod:`.ui`).
OPEN_PATHS = ("/ok",)


class ServedUser:
    """The authenticated caller, as ``ctx.user`` in ``@auth.on`` handlers."""

    def __init__(self, identity: str, permissions: Sequence[str], data: Mapping[str, Any]) -> None:
        self.identity = identity
        self.permissions = list(permissions)
        self.display_name = str(data.get("display_name", identity))
        self.is_authenticated = True
        self._data = {**data, "identity": identity, "permissions": self.permissions}

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __iter__(self) -> Any:
        return iter(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def dict(self) -> dict[str, Any]:
        return dict(self._data)


def _user(result: Any) -> ServedUser:
    if isinstance(result, str):
        return ServedUser(result, [], {})
    if isinstance(result, Mapping) and "identity" in result:
        return ServedUser(str(result["identity"]), result.get("permissions") or [], result)
    identity = getattr(result, "identity", None)
    if identity is not None:
        return ServedUser(str(identity), getattr(result, "permissions", None) or [], {})
    raise TypeError(
        "the authenticate handler must return a string, a dict with 'identity', or an "
        f"object with .identity; it returned {type(result).__name__}"
    )


class Authenticator:
    """The project's ``Auth`` object, called per request and per action."""

    def __init__(self, auth: Any) -> None:
        if not hasattr(auth, "_authenticate_handler") or not hasattr(auth, "_handlers"):
            raise TypeError(
                f'"auth.path" must name a langgraph_sdk.Auth object, not {type(auth).__name__}'
            )
        self.auth = auth
        from langgraph_sdk import Auth

        self._http_exception = Auth.exceptions.HTTPException
        self._context = Auth.types.AuthContext

    async def authenticate(self, scope: Scope) -> ServedUser | None:
        handler = self.auth._authenticate_handler
        if handler is None:
            return None
        request = Request(scope)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        offered: dict[str, Callable[[], Any]] = {
            "request": lambda: request,
            "authorization": lambda: headers.get("authorization"),
            "headers": lambda: {k.encode(): v.encode() for k, v in headers.items()},
            "path": lambda: scope["path"],
            "method": lambda: scope["method"],
            "query_params": lambda: QueryParams(scope.get("query_string", b"")),
            "path_params": lambda: scope.get("path_params", {}),
            "scopes": lambda: [],
            "scope": lambda: scope,
        }
        params = inspect.signature(handler).parameters
        kwargs = {name: offered[name]() for name in params if name in offered}
        result = await self._call(handler, kwargs, 401, "authentication failed")
        return _user(result)

    async def _call(self, fn: Any, kwargs: dict[str, Any], status: int, what: str) -> Any:
        try:
            result = fn(**kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result
        except self._http_exception as e:
            raise ApiError(e.status_code, str(e.detail or what)) from None
        except AssertionError as e:
            raise ApiError(403, str(e) or "Forbidden") from None
        except ApiError:
            raise
        except Exception as e:
            raise ApiError(status, f"{what}: {type(e).__name__}") from e

    def _handler(self, resource: str, action: str) -> Any:
        handlers = self.auth._handlers
        for key in ((resource, action), (resource, "*"), ("*", action), ("*", "*")):
            if handlers.get(key):
                return handlers[key][-1]
        return self.auth._global_handlers[-1] if self.auth._global_handlers else None

    async def authorize(
        self, user: ServedUser | None, resource: str, action: str, value: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Runs the ``@auth.on`` handler for ``resource`` / ``action``: ``None`` (allowed,
        unscoped), a filter dict (allowed where metadata matches), or a 403."""
        handler = self._handler(resource, action)
        if handler is None or user is None:
            return None
        ctx = self._context(
            resource=resource,  # type: ignore[arg-type]
            action=action,  # type: ignore[arg-type]
            user=user,
            permissions=user.permissions,
        )
        result = await self._call(handler, {"ctx": ctx, "value": value}, 500, "auth handler failed")
        if result in (None, True):
            return None
        if result is False:
            raise ApiError(403, "Forbidden")
        if not isinstance(result, dict):
            raise ApiError(500, "auth handler returned neither a filter dict, None nor a bool")
        return result


def matches(metadata: Mapping[str, Any] | None, filters: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter rules: a value, ``{"$eq": v}`` or ``{"$contains": v}`` per key."""
    if not filters:
        return True
    metadata = metadata or {}
    for key, want in filters.items():
        have = metadata.get(key)
        if isinstance(want, dict) and "$eq" in want:
            ok = have == want["$eq"]
        elif isinstance(want, dict) and "$contains" in want:
            ok = isinstance(have, list) and want["$contains"] in have
        else:
            ok = have == want
        if not ok:
            return False
    return True


async def authorize(
    request: Request, resource: str, action: str, value: dict[str, Any]
) -> dict[str, Any] | None:
    """The filters the project's auth sets for this request's action (``None``: none)."""
    auth: Authenticator | None = request.app.state.auth
    if auth is None:
        return None
    return await auth.authorize(request.scope.get("ironloop.user"), resource, action, value)


class AuthMiddleware:
    """Checks every request but ``/ok`` and the web UI's files: the API key, then the
    project's authenticate handler (its user kept in the scope for ``authorize``)."""

    def __init__(self, app: ASGIApp, api_key: str | None, auth: Authenticator | None) -> None:
        self.app, self.api_key, self.auth = app, api_key, auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")  # a lifespan scope has none
        if (
            scope["type"] != "http"
            or path in OPEN_PATHS
            or is_public(path)
            or scope["method"] == "OPTIONS"
        ):
            await self.app(scope, receive, send)
            return
        try:
            if self.api_key is not None:
                given = dict(scope["headers"]).get(b"x-api-key", b"").decode("latin-1")
                if not hmac.compare_digest(given.encode(), self.api_key.encode()):
                    raise ApiError(401, "missing or wrong API key (header x-api-key)")
            if self.auth is not None:
                scope["ironloop.user"] = await self.auth.authenticate(scope)
        except ApiError as e:
            response = JSONResponse({"detail": e.detail}, status_code=e.status)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
