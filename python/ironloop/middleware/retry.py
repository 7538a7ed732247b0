"""``ToolRetryMiddleware`` and ``ModelRetryMiddleware`` (LangChain 1.x's): retry a
failing tool or model call with exponential backoff."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ironloop.errors import GraphInterrupt, ParentCommand
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware.types import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest

__all__ = ["ModelRetryMiddleware", "ToolRetryMiddleware"]

RetryOn = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


class _Backoff:
    """The retry policy both middleware share."""

    def __init__(
        self,
        max_retries: int,
        retry_on: RetryOn,
        backoff_factor: float,
        initial_delay: float,
        max_delay: float,
        jitter: bool,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if initial_delay < 0 or max_delay < 0 or backoff_factor < 0:
            raise ValueError("initial_delay, max_delay and backoff_factor must be >= 0")
        if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
            retry_on = (retry_on,)
        self.max_retries = max_retries
        self.retry_on = retry_on
        self.backoff_factor = backoff_factor
        self.initial_delay = initial_delay
        self.max_delay = max_delay
        self.jitter = jitter

    def should_retry(self, e: BaseException) -> bool:
        retry_on: Any = self.retry_on
        if isinstance(retry_on, tuple):
            return isinstance(e, retry_on)
        return bool(retry_on(e))

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (0-based)."""
        d = self.initial_delay * (self.backoff_factor**attempt if self.backoff_factor else 1)
        d = min(d, self.max_delay)
        if self.jitter and d > 0:
            d *= random.uniform(0.75, 1.25)
        return d

    def run(self, call: Callable[[], Any]) -> Any:
        for attempt in range(self.max_retries + 1):
            try:
                return call()
            except (GraphInterrupt, ParentCommand):
                raise  # control flow of the graph, not a failure
            except Exception as e:
                if attempt == self.max_retries or not self.should_retry(e):
                    raise
                time.sleep(self.delay(attempt))
        raise AssertionError("unreachable")

    async def arun(self, call: Callable[[], Any]) -> Any:
        for attempt in range(self.max_retries + 1):
            try:
                return await call()
            except (GraphInterrupt, ParentCommand):
                raise
            except Exception as e:
                if attempt == self.max_retries or not self.should_retry(e):
                    raise
                await asyncio.sleep(self.delay(attempt))
        raise AssertionError("unreachable")


class ToolRetryMiddleware(AgentMiddleware):
    """Retries a tool call whose tool raised, up to ``max_retries`` more times, waiting
    ``initial_delay * backoff_factor**n`` seconds (at most ``max_delay``, ±25% with
    ``jitter``) between attempts. ``retry_on``: exception types, or a predicate.
    ``tools``: names of the tools to retry (default: all). When the last attempt fails,
    ``on_failure="continue"`` (default) answers the model with an error
    ``ToolMessage``, ``"error"`` re-raises, a function ``exc -> str`` makes the
    message's text (``"return_message"`` and ``"raise"``, LangChain's older names, are
    taken too).

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
        tools: Sequence[str] | None = None,
        retry_on: RetryOn = (Exception,),
        on_failure: Literal["continue", "error", "return_message", "raise"]
        | Callable[[Exception], str] = "continue",
        backoff_factor: float = 2.0,
        initial_delay: float = 1.0,
        max_delay: float = 60.0,
        jitter: bool = True,
    ) -> None:
        self._policy = _Backoff(
            max_retries, retry_on, backoff_factor, initial_delay, max_delay, jitter
        )
        aliases = {"return_message": "continue", "raise": "error"}
        if not callable(on_failure):
            on_failure = aliases.get(on_failure, on_failure)  # type: ignore[assignment]
            if on_failure not in ("continue", "error"):
                raise ValueError(
                    f"on_failure must be 'continue', 'error' or a function, got {on_failure!r}"
                )
        self.max_retries = max_retries
        self.tool_names = None if tools is None else set(tools)
        self.on_failure = on_failure

    def _applies(self, request: ToolCallRequest) -> bool:
        return self.tool_names is None or request.tool_call["name"] in self.tool_names

    def _failed(self, request: ToolCallRequest, e: Exception) -> ToolMessage:
        if self.on_failure == "error":
            raise e
        call = request.tool_call
        if callable(self.on_failure):
            text = self.on_failure(e)
        else:
            attempts = self.max_retries + 1
            text = (
                f"Tool '{call['name']}' failed after {attempts} attempt"
                f"{'s' if attempts != 1 else ''} with {type(e).__name__}: {e}. "
                "Please try again."
            )
        return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        if not self._applies(request):
            return handler(request)
        try:
            return self._policy.run(lambda: handler(request))
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return self._failed(request, e)

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        if not self._applies(request):
            return await handler(request)
        try:
            return await self._policy.arun(lambda: handler(request))
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return self._failed(request, e)


class ModelRetryMiddleware(AgentMiddleware):
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
        retry_on: RetryOn = (Exception,),
        on_failure: Literal["continue", "error"] | Callable[[Exception], str] = "continue",
        backoff_factor: float = 2.0,
        initial_delay: float = 1.0,
        max_delay: float = 60.0,
        jitter: bool = True,
    ) -> None:
        self._policy = _Backoff(
            max_retries, retry_on, backoff_factor, initial_delay, max_delay, jitter
        )
        if not callable(on_failure) and on_failure not in ("continue", "error"):
            raise ValueError(
                f"on_failure must be 'continue', 'error' or a function, got {on_failure!r}"
            )
        self.max_retries = max_retries
        self.on_failure = on_failure

    def _failed(self, e: Exception) -> ModelResponse:
        if self.on_failure == "error":
            raise e
        if callable(self.on_failure):
            text = self.on_failure(e)
        else:
            attempts = self.max_retries + 1
            text = (
                f"Model call failed after {attempts} attempt{'s' if attempts != 1 else ''} "
                f"with {type(e).__name__}: {e}"
            )
        return ModelResponse(result=[AIMessage(content=text)])

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return self._policy.run(lambda: handler(request))
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return self._failed(e)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return await self._policy.arun(lambda: handler(request))
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as e:
            return self._failed(e)
