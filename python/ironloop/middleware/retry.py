"""``ToolRetryMiddleware`` and ``ModelRetryMiddleware`` (LangChain 1.x's): retry a
failing tool or model call with exponential backoff."""

from __future__ import annotations

import asyncio
import random
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ironloop import _ironloop
from ironloop.errors import GraphInterrupt, ParentCommand
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware.types import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
    propagate,
)

__all__ = ["ModelRetryMiddleware", "ToolRetryMiddleware"]

RetryOn = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


class _Backoff:
    """The retry loop both middleware share; the waits and the checks of the numbers
    are the core's (``_ironloop._Backoff``, as for node ``RetryPolicy`` s and model
    calls), with LangChain's ±25% jitter."""

    def __init__(
        self,
        max_retries: int,
        retry_on: RetryOn,
        backoff_factor: float,
        initial_delay: float,
        max_delay: float,
        jitter: bool,
    ) -> None:
        self.schedule = _ironloop._Backoff(
            initial_delay, backoff_factor, max_delay, max_retries, "quarter" if jitter else "none"
        )
        if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
            retry_on = (retry_on,)
        self.max_retries = max_retries
        self.retry_on = retry_on

    def should_retry(self, e: BaseException) -> bool:
        retry_on: Any = self.retry_on
        if isinstance(retry_on, tuple):
            return isinstance(e, retry_on)
        return bool(retry_on(e))

    def _after(self, e: Exception, attempt: int) -> float:
        """The wait before the next attempt after ``e``; raises ``e`` itself when it is
        not retryable (at once, unseen by ``on_failure``, as LangChain), and
        :class:`_Exhausted` when it was the last attempt."""
        if not self.should_retry(e):
            raise propagate(e)
        wait = self.schedule.wait(attempt, random.random())
        if wait is None:
            raise _Exhausted(e, attempt + 1) from e
        return wait

    def run(self, call: Callable[[], Any]) -> Any:
        for attempt in range(self.max_retries + 1):
            try:
                return call()
            except (GraphInterrupt, ParentCommand):
                raise  # control flow of the graph, not a failure
            except Exception as e:
                time.sleep(self._after(e, attempt))
        raise AssertionError("unreachable")

    async def arun(self, call: Callable[[], Any]) -> Any:
        for attempt in range(self.max_retries + 1):
            try:
                return await call()
            except (GraphInterrupt, ParentCommand):
                raise
            except Exception as e:
                await asyncio.sleep(self._after(e, attempt))
        raise AssertionError("unreachable")


class _Exhausted(Exception):
    """Every attempt failed; ``error`` is the last failure."""

    def __init__(self, error: Exception, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


def default_retry_on(exc: BaseException) -> bool:
    """LangChain's default: every ``Exception``, except a model error that says it is
    not retryable (``is_retryable = False``: bad credentials, refusals, ...)."""
    if not isinstance(exc, Exception):
        return False
    return bool(getattr(exc, "is_retryable", True))


class _Retrying(AgentMiddleware):
    """What both retry middleware keep, as LangChain's do (its attributes; the policy
    reads its own copy), checked once."""

    max_retries: int
    on_failure: Any
    retry_on: RetryOn
    backoff_factor: float
    initial_delay: float
    max_delay: float
    jitter: bool

    def _configure(
        self,
        max_retries: int,
        retry_on: RetryOn,
        on_failure: Any,
        backoff: tuple[float, float, float],
        jitter: bool,
    ) -> None:
        """``backoff``: ``(backoff_factor, initial_delay, max_delay)``."""
        if not callable(on_failure) and on_failure not in ("continue", "error"):
            raise ValueError(
                f"on_failure must be 'continue', 'error' or a function, got {on_failure!r}"
            )
        factor, initial, most = backoff
        self._policy = _Backoff(max_retries, retry_on, factor, initial, most, jitter)
        self.max_retries, self.on_failure, self.tools = max_retries, on_failure, []
        self.retry_on, self.jitter = retry_on, jitter
        self.backoff_factor, self.initial_delay, self.max_delay = backoff

    def _failure_text(self, exhausted: _Exhausted, what: str, tail: str = "") -> str:
        """The text of the answer when every attempt failed (``on_failure`` is not
        ``"error"``): the function's, or LangChain's sentence about ``what``."""
        e, attempts = exhausted.error, exhausted.attempts
        if callable(self.on_failure):
            text: str = self.on_failure(e)
            return text
        plural = "s" if attempts != 1 else ""
        return f"{what} failed after {attempts} attempt{plural} with {type(e).__name__}: {e}{tail}"


class ToolRetryMiddleware(_Retrying):
    """Retries a tool call whose tool raised, up to ``max_retries`` more times, waiting
    ``initial_delay * backoff_factor**n`` seconds (at most ``max_delay``, ±25% with
    ``jitter``) between attempts. ``retry_on``: exception types, or a predicate
    (default: every exception but a model error marked not retryable); an exception it
    excludes is re-raised at once and ends the run. ``tools``: the tools (or names) to
    retry (default: all). When the last attempt fails, ``on_failure="continue"``
    (default) answers the model with an error ``ToolMessage``, ``"error"`` re-raises
    (the run ends), a function ``exc -> str`` makes the message's text
    (``"return_message"`` and ``"raise"``, LangChain's older names, are taken too, with
    a ``DeprecationWarning``).

    Invalid arguments, unknown and denied tools, and timeouts are answered by the tools
    node itself (the model should change the call, not repeat it); only exceptions
    raised by tools are retried.

    Example:
        >>> ToolRetryMiddleware(max_retries=3, initial_delay=0.0).max_retries
        3
    """

    def __init__(
        self,
        *,
        max_retries: int = 2,
        tools: Sequence[Any] | None = None,
        retry_on: RetryOn = default_retry_on,
        on_failure: Literal["continue", "error", "return_message", "raise"]
        | Callable[[Exception], str] = "continue",
        backoff_factor: float = 2.0,
        initial_delay: float = 1.0,
        max_delay: float = 60.0,
        jitter: bool = True,
    ) -> None:
        aliases = {"return_message": "continue", "raise": "error"}
        if not callable(on_failure) and on_failure in aliases:
            warnings.warn(
                f"on_failure={on_failure!r} is deprecated and will be removed in a future "
                f"version. Use on_failure={aliases[on_failure]!r} instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            on_failure = aliases[on_failure]  # type: ignore[assignment]
        backoff = (backoff_factor, initial_delay, max_delay)
        self._configure(max_retries, retry_on, on_failure, backoff, jitter)
        self.tool_names = (
            None if tools is None else {t if isinstance(t, str) else t.name for t in tools}
        )

    def _applies(self, request: ToolCallRequest) -> bool:
        name = request.tool.name if request.tool is not None else request.tool_call["name"]
        return self.tool_names is None or name in self.tool_names

    def _failed(self, request: ToolCallRequest, exhausted: _Exhausted) -> ToolMessage:
        if self.on_failure == "error":
            raise propagate(exhausted.error)
        call = request.tool_call
        text = self._failure_text(exhausted, f"Tool '{call['name']}'", ". Please try again.")
        return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        if not self._applies(request):
            return handler(request)
        try:
            return self._policy.run(lambda: handler(request))
        except _Exhausted as e:
            return self._failed(request, e)

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        if not self._applies(request):
            return await handler(request)
        try:
            return await self._policy.arun(lambda: handler(request))
        except _Exhausted as e:
            return self._failed(request, e)


class ModelRetryMiddleware(_Retrying):
    """Retries a failing model call, up to ``max_retries`` more times with the same
    backoff as :class:`ToolRetryMiddleware`. When the last attempt fails,
    ``on_failure="continue"`` (default) answers with an AI message saying so (the run
    ends normally), ``"error"`` re-raises, a function ``exc -> str`` makes the text.

    Example:
        >>> ModelRetryMiddleware(max_retries=1).max_retries
        1
    """

    def __init__(
        self,
        *,
        max_retries: int = 2,
        retry_on: RetryOn = default_retry_on,
        on_failure: Literal["continue", "error"] | Callable[[Exception], str] = "continue",
        backoff_factor: float = 2.0,
        initial_delay: float = 1.0,
        max_delay: float = 60.0,
        jitter: bool = True,
    ) -> None:
        backoff = (backoff_factor, initial_delay, max_delay)
        self._configure(max_retries, retry_on, on_failure, backoff, jitter)

    def _failed(self, exhausted: _Exhausted) -> ModelResponse:
        if self.on_failure == "error":
            raise exhausted.error
        text = self._failure_text(exhausted, "Model call")
        return ModelResponse(result=[AIMessage(content=text)])

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return self._policy.run(lambda: handler(request))
        except _Exhausted as e:
            return self._failed(e)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return await self._policy.arun(lambda: handler(request))
        except _Exhausted as e:
            return self._failed(e)
