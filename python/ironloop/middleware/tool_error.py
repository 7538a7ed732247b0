"""``ToolErrorMiddleware`` (LangChain 1.5's): hands chosen tool failures back to the
model as error ``ToolMessage``s, and lets every other one propagate."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ironloop.errors import GraphInterrupt, ParentCommand
from ironloop.messages import ToolMessage
from ironloop.middleware._hook_bases import ToolCallSelector
from ironloop.middleware.types import ToolCallRequest, propagate
from ironloop.types import TracePolicy, omit_payload

__all__ = ["ToolErrorMiddleware"]

#: ``on_error(exc, request)``: content for the model, or ``None`` to re-raise.
OnError = Callable[[Exception, ToolCallRequest], Any]
AOnError = Callable[[Exception, ToolCallRequest], Awaitable[Any]]


class ToolErrorMiddleware(ToolCallSelector[str]):
    """Turns an exception a tool raised into ``ToolMessage(status="error")`` when
    ``on_error(exc, request)`` returns content for it (a str or content blocks); when
    it returns ``None`` the exception propagates and ends the run. Interrupts and parent commands always
    propagate, unseen. ``aon_error`` is used on the async path (else ``on_error``);
    with only ``aon_error``, a sync run's tool failure is a ``RuntimeError``.
    ``tools`` (tools or names) limits it to those tools. It does not retry: put a
    ``ToolRetryMiddleware(on_failure="error")`` inside it for that.

    Example:
        >>> m = ToolErrorMiddleware(lambda exc, req: f"{type(exc).__name__}: try again")
        >>> m.name
        'ToolErrorMiddleware'
    """

    #: Its hook's trace omits its input (the failed call's request), as LangChain's.
    trace_policy = TracePolicy(process_inputs=omit_payload)

    def __init__(
        self,
        on_error: OnError | None = None,
        *,
        aon_error: AOnError | None = None,
        tools: Sequence[Any] | None = None,
    ) -> None:
        super().__init__()
        if on_error is None and aon_error is None:
            raise ValueError("ToolErrorMiddleware requires `on_error` and/or `aon_error`.")
        self.on_error = on_error
        self.aon_error = aon_error
        self._tool_filter: list[str] | None = (
            None if tools is None else [t if isinstance(t, str) else t.name for t in tools]
        )
        self.tools = []

    def _select(self, request: ToolCallRequest) -> str | None:
        """The tool's name when this middleware handles its failures, else ``None``."""
        name: str = request.tool.name if request.tool is not None else request.tool_call["name"]
        if self._tool_filter is not None and name not in self._tool_filter:
            return None
        return name

    @staticmethod
    def _answer(content: Any, request: ToolCallRequest, name: str) -> ToolMessage | None:
        if content is None:
            return None
        return ToolMessage(
            content=content, tool_call_id=request.tool_call["id"], name=name, status="error"
        )

    def _handle(self, request: ToolCallRequest, handler: Callable[[Any], Any], name: str) -> Any:
        try:
            return handler(request)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as exc:
            if self.on_error is None:
                raise RuntimeError(
                    "ToolErrorMiddleware has no sync `on_error`; run async "
                    "(ainvoke/astream) or provide `on_error`."
                ) from exc
            answer = self._answer(self.on_error(exc, request), request, name)
            if answer is None:
                propagate(exc)
                raise
            return answer

    async def _ahandle(
        self, request: ToolCallRequest, handler: Callable[[Any], Awaitable[Any]], name: str
    ) -> Any:
        try:
            return await handler(request)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as exc:
            if self.aon_error is not None:
                content = await self.aon_error(exc, request)
            else:
                assert self.on_error is not None  # __init__ requires one of the two
                content = self.on_error(exc, request)
            answer = self._answer(content, request, name)
            if answer is None:
                propagate(exc)
                raise
            return answer
