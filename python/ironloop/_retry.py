"""Retrying a node that fails: ``add_node(..., retry_policy=RetryPolicy(...))``, as
LangGraph runs it (``langgraph.pregel._retry.run_with_retry``).

A failed attempt whose exception a policy retries (the first policy that matches) is
run again after ``initial_interval * backoff_factor ** (failures - 1)`` seconds (at
most ``max_interval``, plus up to a second of jitter), until ``max_attempts`` attempts
have been made; then the last exception is raised. ``interrupt()`` and
``Command(graph=Command.PARENT)`` are control flow and never retried.

The waits are the core's (``_ironloop._Backoff``, the schedule model calls and the
retry middleware use too); this module holds the loop, which calls Python.
"""

from __future__ import annotations

import functools
import inspect
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from ironloop._ironloop import _Backoff
from ironloop._runtime import attempt_var, logger, task_var
from ironloop.errors import GraphInterrupt, ParentCommand

#: Exceptions that say the call itself is wrong: another attempt fails the same way.
_NOT_RETRIED: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    SyntaxError,
    RuntimeError,
    ReferenceError,
    StopIteration,
    StopAsyncIteration,
    OSError,
)


def default_retry_on(exc: Exception) -> bool:
    """LangGraph's default: connection errors and HTTP 5xx answers (httpx, requests)
    are retried, programming errors (``ValueError``, ``KeyError``, ...) and other
    ``OSError`` s are not, anything else is."""
    if isinstance(exc, ConnectionError):
        return True
    status = _http_status(exc)
    if status is not None:
        return 500 <= status < 600
    return not isinstance(exc, _NOT_RETRIED)


def _http_status(exc: Exception) -> int | None:
    """The status of an ``httpx.HTTPStatusError`` / ``requests.HTTPError`` (by name:
    neither library is a dependency); ``None`` for other exceptions."""
    names = {f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__}
    if not names & {"httpx.HTTPStatusError", "requests.exceptions.HTTPError"}:
        return None
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else 500


def _retries(policy: Any, exc: Exception) -> bool:
    retry_on = policy.retry_on
    if isinstance(retry_on, Sequence):
        return isinstance(exc, tuple(retry_on))
    if isinstance(retry_on, type) and issubclass(retry_on, Exception):
        return isinstance(exc, retry_on)
    if callable(retry_on):
        return bool(retry_on(exc))
    raise TypeError(
        "retry_on must be an Exception class, a list or tuple of Exception classes, "
        f"or a callable; got {retry_on!r}"
    )


def _schedule(policy: Any) -> _Backoff:
    """A ``RetryPolicy``'s waits as the core's schedule: ``max_attempts`` counts the
    first attempt, the schedule counts retries. Made when the node is wrapped, so a
    negative interval is refused there, not when the node first fails."""
    return _Backoff(
        policy.initial_interval,
        policy.backoff_factor,
        policy.max_interval,
        max(0, int(policy.max_attempts) - 1),
        "up_to_one_second" if policy.jitter else "none",
        ("initial_interval", "backoff_factor", "max_interval", "max_attempts"),
    )


def _pause(
    policies: Sequence[Any],
    schedules: Sequence[_Backoff],
    exc: Exception,
    failures: int,
    node: str,
) -> float | None:
    """Seconds to wait before the next attempt, or ``None`` to raise ``exc``."""
    if isinstance(exc, (GraphInterrupt, ParentCommand)):
        return None
    found = next((i for i, p in enumerate(policies) if _retries(p, exc)), None)
    if found is None:
        return None
    policy, schedule = policies[found], schedules[found]
    # LangGraph draws the jitter with `random.uniform(0, 1)` (its tests fix it there).
    pause = schedule.wait(failures - 1, random.uniform(0, 1) if policy.jitter else 0.0)
    if pause is None:
        return None
    logger.info(
        "Retrying task %s after %.2f seconds (attempt %d) after %s %s",
        node,
        pause,
        failures,
        type(exc).__name__,
        exc,
        exc_info=exc,
    )
    return pause


def _restart() -> None:
    """Before another attempt: the node's ``interrupt()`` calls start over."""
    scratch = task_var.get(None)
    if scratch is not None:
        scratch.restart_interrupts()


def _this_attempt(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A node's keyword arguments for this attempt: its ``runtime`` (given once, before
    the first) made again, so that ``runtime.execution_info.node_attempt`` counts."""
    if "runtime" not in kwargs:
        return kwargs
    from ironloop.runtime import get_runtime

    return {**kwargs, "runtime": get_runtime()}


class _Attempts:
    """One call's attempts, as ``with attempts:`` around each: the attempt's number
    (``runtime.execution_info.node_attempt``) set while it runs; a failure that a
    policy retries is swallowed, its wait left in ``pause``; any other goes on."""

    def __init__(self, policies: Sequence[Any], schedules: Sequence[_Backoff], node: str) -> None:
        self.policies, self.schedules, self.node = policies, schedules, node
        self.failures, self.first, self.pause = 0, time.time(), 0.0

    def __enter__(self) -> None:
        self.token = attempt_var.set((self.failures + 1, self.first))

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        attempt_var.reset(self.token)
        if not isinstance(exc, Exception):
            return False
        self.failures += 1
        pause = _pause(self.policies, self.schedules, exc, self.failures, self.node)
        if pause is None:
            return False
        self.pause = pause
        return True


def with_retry(fn: Callable[..., Any], policies: Sequence[Any], node: str) -> Callable[..., Any]:
    """``fn`` (a node function, sync or async) run again as ``policies`` say when it
    fails; its signature is kept (the engine reads what parameters it asks for)."""
    schedules = [_schedule(p) for p in policies]
    # inspect, not asyncio: a graph of sync nodes never imports asyncio.
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    ):

        @functools.wraps(fn)
        async def aretried(*args: Any, **kwargs: Any) -> Any:
            attempts = _Attempts(policies, schedules, node)
            while True:
                with attempts:
                    return await fn(*args, **_this_attempt(kwargs))
                import asyncio  # an async node runs on a loop: asyncio is loaded

                await asyncio.sleep(attempts.pause)
                _restart()

        return aretried

    @functools.wraps(fn)
    def retried(*args: Any, **kwargs: Any) -> Any:
        attempts = _Attempts(policies, schedules, node)
        while True:
            with attempts:
                return fn(*args, **_this_attempt(kwargs))
            time.sleep(attempts.pause)
            _restart()

    return retried
