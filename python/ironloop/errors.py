"""Exceptions raised by ironloop.

Tool failures are data for the model (error ``ToolMessage``s); these exceptions are
for the programmer: misuse of the API, or tool errors re-raised when
``handle_tool_errors=False``.
"""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "CheckpointSerializationError",
    "GraphInterrupt",
    "GraphRecursionError",
    "InvalidUpdateError",
    "IronloopError",
    "ModelError",
    "ToolBlockedError",
    "ToolCancelledError",
    "ToolError",
    "ToolExecutionError",
    "ToolInvalidArgsError",
    "ToolNotFoundError",
    "ToolTimeoutError",
]


class IronloopError(Exception):
    """Base class of ironloop's own exceptions."""


class ToolError(IronloopError):
    """A tool call failed (raised only when a ``ToolNode`` is told not to handle errors)."""


class ToolInvalidArgsError(ToolError, ValueError):
    """The arguments were not a JSON object or did not match the tool's schema."""


class ToolNotFoundError(ToolError, LookupError):
    """No tool of that name is registered."""


class ToolExecutionError(ToolError):
    """The tool raised or failed."""


class ToolTimeoutError(ToolError, TimeoutError):
    """The call ran past its time limit."""


class ToolCancelledError(ToolError):
    """The run was cancelled while the call was in flight."""


class ToolBlockedError(ToolError, PermissionError):
    """A deny list or a before hook kept the call from running."""


class GraphRecursionError(IronloopError, RecursionError):
    """A graph run took more super-steps than its ``recursion_limit``."""


class InvalidUpdateError(IronloopError, ValueError):
    """A node wrote a channel in a way its reducer does not allow."""


class CheckpointError(IronloopError):
    """A checkpoint could not be written or read."""


class ModelError(IronloopError):
    """A model call failed or returned something unusable.

    Errors from providers carry ``status_code`` (the HTTP status, when there was one),
    ``provider``, ``kind`` and ``retryable``; they are ``None`` / ``False`` otherwise.
    """

    status_code: int | None = None
    provider: str | None = None
    kind: str | None = None
    retryable: bool = False


class CheckpointSerializationError(CheckpointError, TypeError):
    """A state value cannot be serialised into a checkpoint; the message names the
    channel and the value's type."""


class GraphInterrupt(IronloopError):  # LangGraph's name, hence no -Error suffix
    """Raised inside a node by ``interrupt(value)`` to pause the run. Not an error:
    the runtime catches it; do not catch it in your node."""

    def __init__(self, value: object) -> None:
        super().__init__(value)
        self.value = value
