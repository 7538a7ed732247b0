"""``TimeoutPolicy``: how long one attempt of a node may take, as LangGraph 1.2's
(``add_node(..., timeout=)``, ``set_node_defaults(timeout=)``, ``@task(timeout=)``,
``@entrypoint(timeout=)``). The engine enforces it where it runs the node's task."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

__all__ = ["TimeoutPolicy", "refuse_sync", "timed_task"]


def _seconds(value: float | timedelta | None, field: str) -> float | None:
    """``value`` in seconds (a number or a ``timedelta``), checked to be positive."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(f"{field} must be a number of seconds or a timedelta, got {value!r}")
    if seconds <= 0:
        raise ValueError(f"{field} must be greater than 0, got {value!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """Limits on one attempt of a node (each retry gets its own).

    ``run_timeout``: seconds the attempt may take in all. ``idle_timeout``: seconds it
    may go without progress; with ``refresh_on="auto"`` what it streams (``custom``
    writes, ``messages`` chunks) and ``runtime.heartbeat()`` count as progress, with
    ``"heartbeat"`` only the heartbeats do. Exceeding either fails the attempt with
    ``NodeTimeoutError``. Only async nodes can be stopped, so a sync function node with
    a timeout is refused at ``compile``.

    Example:
        >>> TimeoutPolicy.coerce(2)
        TimeoutPolicy(run_timeout=2.0, idle_timeout=None, refresh_on='auto')
    """

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """``value`` as a policy in seconds: a number or ``timedelta`` is a
        ``run_timeout``; ``None`` (or a policy without limits) is no policy."""
        if value is None:
            return None
        if not isinstance(value, TimeoutPolicy):
            value = cls(run_timeout=value)
        if value.refresh_on not in ("auto", "heartbeat"):
            raise ValueError(f"refresh_on must be 'auto' or 'heartbeat', got {value.refresh_on!r}")
        run = _seconds(value.run_timeout, "run_timeout")
        idle = _seconds(value.idle_timeout, "idle_timeout")
        if run is None and idle is None:
            return None
        if all(v is None or type(v) is float for v in (value.run_timeout, value.idle_timeout)):
            return value  # already in seconds: the same object, as LangGraph's
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=value.refresh_on)

    def _engine(self) -> tuple[float | None, float | None, bool]:
        """What the engine takes: ``(run_timeout, idle_timeout, heartbeat_only)``, of a
        coerced policy."""
        run, idle = self.run_timeout, self.idle_timeout
        assert not isinstance(run, timedelta) and not isinstance(idle, timedelta)
        return run, idle, self.refresh_on == "heartbeat"


def refuse_sync(fn: Any, what: str) -> None:
    """A timeout on a sync function is refused, as LangGraph: it could not be stopped."""
    import inspect

    if not inspect.iscoroutinefunction(fn):
        raise ValueError(
            f"{what}: a timeout is only supported for async nodes and tasks; make the "
            "function `async def`, or drop its timeout"
        )


class _CallProgress:
    """When an ``@task`` call under an idle timeout last showed progress (a
    ``runtime.heartbeat()`` inside it), on the event loop's clock."""

    __slots__ = ("last",)

    def __init__(self, now: float) -> None:
        self.last = now

    def touch(self) -> None:
        import asyncio

        try:
            self.last = asyncio.get_running_loop().time()
        except RuntimeError:  # a heartbeat from a thread the call started
            import time

            self.last = max(self.last, time.monotonic())


def timed_task(
    fn: Callable[..., Awaitable[Any]], policy: TimeoutPolicy, name: str
) -> Callable[..., Awaitable[Any]]:
    """``fn`` (an ``@task``'s async body) failed with ``NodeTimeoutError`` when one call
    outlives ``policy``; the call's coroutine is cancelled. A ``@task`` call runs in
    Python, inside its caller's node, so it is timed here rather than by the engine
    (which times the node itself)."""
    import asyncio
    import functools

    from ironloop._runtime import call_progress
    from ironloop.errors import NodeTimeoutError

    run, idle, _ = policy._engine()

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        start = loop.time()
        progress = _CallProgress(start)
        token = call_progress.set(progress)
        try:
            work = asyncio.ensure_future(fn(*args, **kwargs))  # runs with `progress` set
        finally:
            call_progress.reset(token)
        try:
            while True:
                deadlines = [d for d in (run and start + run, idle and progress.last + idle) if d]
                wait = max(0.0, min(deadlines) - loop.time())
                done, _ = await asyncio.wait({work}, timeout=wait)
                if done:
                    return work.result()
                now = loop.time()
                kind: Literal["idle", "run"]
                if run and now >= start + run:
                    kind = "run"
                elif idle and now >= progress.last + idle:
                    kind = "idle"
                else:
                    continue  # a heartbeat came meanwhile
                raise NodeTimeoutError(
                    name, now - start, kind=kind, run_timeout=run, idle_timeout=idle
                )
        finally:
            work.cancel()  # a timeout, or the caller cancelled: the call stops too

    return call
