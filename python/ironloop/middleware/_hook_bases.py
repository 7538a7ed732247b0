"""Base classes of middleware that write a hook's two forms once: the model hook of
the middleware that only change the request (``RequestRewriter``), the tool-call hook
of those that take some calls and let the others through (``ToolCallSelector``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from ironloop.middleware.types import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest

__all__ = ["RequestRewriter", "ToolCallSelector"]

T = TypeVar("T")


class RequestRewriter(AgentMiddleware):
    """A middleware whose ``wrap_model_call`` and ``awrap_model_call`` hand the model
    call ``_rewrite(request)``: the change is written once, for both lanes."""

    def _rewrite(self, request: ModelRequest) -> ModelRequest:
        """The request the model is called with."""
        raise NotImplementedError

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> Any:
        return handler(self._rewrite(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        return await handler(self._rewrite(request))


class ToolCallSelector(AgentMiddleware, Generic[T]):
    """A middleware that handles some tool calls: ``_select(request)`` says which
    (``None``: the call runs untouched) and what it found, which ``_handle`` /
    ``_ahandle`` get with the call."""

    def _select(self, request: ToolCallRequest) -> T | None:
        raise NotImplementedError

    def _handle(self, request: ToolCallRequest, handler: Callable[[Any], Any], found: T) -> Any:
        raise NotImplementedError

    async def _ahandle(
        self, request: ToolCallRequest, handler: Callable[[Any], Awaitable[Any]], found: T
    ) -> Any:
        raise NotImplementedError

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[Any], Any]) -> Any:
        found = self._select(request)
        return handler(request) if found is None else self._handle(request, handler, found)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        found = self._select(request)
        if found is None:
            return await handler(request)
        return await self._ahandle(request, handler, found)
