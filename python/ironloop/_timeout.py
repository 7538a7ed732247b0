"""``TimeoutPolicy``: how long one attempt of a node may take, as LangGraph 1.2's
(``add_node(..., timeout=)``, ``set_node_defaults(timeout=)``, ``@task(timeout=)``,
``@entrypoint(timeout=)``). The engine enforces it where it runs the node's task."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

__all__ = ["TimeoutPolicy"]


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
