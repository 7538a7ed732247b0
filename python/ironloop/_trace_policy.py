"""``TracePolicy`` (LangGraph 1.2's): what a node's callback run records of its input
and output, for a node whose payload is too large or too private to send to a tracer
(LangChain 1.5's ``ToolErrorMiddleware``, ``AutoModeMiddleware`` and
``ModelRouterMiddleware`` omit theirs). It changes only what the node's own run
records, never what the node is given or returns.

A function node carries its policy as an attribute (``traced_as``), read by
``ironloop._callbacks.node_call`` when a run has callbacks: a run without them pays
nothing. An agent's middleware hooks take the middleware's ``trace_policy``, else the
process-wide default of ``configure_trace_policy``, resolved at each call (so the
default applies to agents built before it was set)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TracePolicy",
    "configure_trace_policy",
    "middleware_policy",
    "omit_payload",
    "recorded",
    "traced_as",
]


@dataclass(frozen=True)
class TracePolicy:
    """How a node's run is traced: ``process_inputs`` / ``process_outputs`` turn the
    node's input / output into what its run records (``None``: recorded as it is).
    Not a redaction of secrets: runs the node starts record their own payloads."""

    process_inputs: Callable[[Any], Any] | None = None
    process_outputs: Callable[[Any], Any] | None = None


def omit_payload(_value: Any) -> dict[str, Any]:
    """A ``TracePolicy`` processor recording an empty payload: the run and its timing
    stay, the value is dropped."""
    return {}


_default: TracePolicy | None = None


def configure_trace_policy(policy: TracePolicy | None) -> None:
    """Sets the process-wide policy of agent middleware hooks (``None`` clears it). A
    middleware's own ``trace_policy`` replaces it whole."""
    global _default
    _default = policy


def middleware_policy(own: Callable[[], TracePolicy | None]) -> Callable[[], TracePolicy | None]:
    """The policy of a middleware's hook node: the middleware's own (``own()``, read at
    each call), else the process-wide default."""

    def effective() -> TracePolicy | None:
        policy = own()
        return policy if policy is not None else _default

    return effective


#: The attribute a node function carries its policy (or a function giving it) under.
_ATTR = "_ironloop_trace_policy"


def traced_as(fn: Callable[..., Any], policy: TracePolicy | Callable[[], TracePolicy | None]) -> None:  # fmt: skip
    """Makes ``fn``'s callback run record what ``policy`` says."""
    fn.__dict__[_ATTR] = policy


def recorded(fn: Callable[..., Any], field: str, value: Any) -> Any:
    """What ``fn``'s run records of ``value`` (its input for ``field=
    "process_inputs"``, its output for ``"process_outputs"``)."""
    policy = getattr(fn, _ATTR, None)
    if policy is None:
        return value
    if not isinstance(policy, TracePolicy):
        policy = policy()
        if policy is None:
            return value
    process = getattr(policy, field)
    return value if process is None else process(value)
