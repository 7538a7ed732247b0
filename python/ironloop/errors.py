"""Exceptions raised by ironloop, and the warning a checkpoint load can give
(``CheckpointTypeWarning``).

Tool failures are data for the model (error ``ToolMessage``s); these exceptions are
for the programmer: misuse of the API, or tool errors re-raised when
``handle_tool_errors=False``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from ironloop.warnings import LangGraphDeprecatedSinceV10

__all__ = [
    "GraphBubbleUp",
    "GraphDrained",
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointIntegrityError",
    "CheckpointNotFoundError",
    "CheckpointSerializationError",
    "CheckpointStorageError",
    "CheckpointTypeWarning",
    "GraphInterrupt",
    "GraphRecursionError",
    "InvalidArgumentError",
    "InvalidUpdateError",
    "IronloopError",
    "McpConnectionError",
    "McpError",
    "McpSessionError",
    "NodeError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "NodeCancelledError",
    "ModelError",
    "OpenApiError",
    "OpenApiFetchError",
    "OpenApiFileError",
    "OpenApiFileNotFoundError",
    "OpenApiSpecError",
    "ParentCommand",
    "RunRolledBackError",
    "StoreError",
    "ThreadBusyError",
    "ToolBlockedError",
    "ToolCancelledError",
    "ToolError",
    "ToolExecutionError",
    "ToolInvalidArgsError",
    "ToolNotFoundError",
    "ToolSourceError",
    "ToolTimeoutError",
    "UnknownInterruptError",
    "WorkspaceConfigError",
    "WorkspaceError",
    "WorkspaceFileError",
    "WorkspaceNotFoundError",
]


class IronloopError(Exception):
    """Base class of ironloop's own exceptions."""


class InvalidArgumentError(IronloopError, ValueError):
    """An argument is out of range, e.g. a ``timeout`` that is not a positive number
    of seconds."""


class ToolError(IronloopError):
    """A tool call failed (raised only when a ``ToolNode`` is told not to handle errors)."""


class ToolInvalidArgsError(ToolError, ValueError):
    """The arguments were not a JSON object or did not match the tool's schema.

    Also LangGraph's ``ToolInvocationError``: raised by a tool node for a call, its
    text is what the model reads (``Error invoking tool '<name>' with kwargs {...}
    with error: ...``) and it carries LangChain's fields: ``tool_name``,
    ``tool_kwargs`` (the call's arguments, as the model wrote them — a dict unless
    they were not a JSON object; injected ones are never there) and ``filtered_errors`` (pydantic's ``ErrorDetails`` shape: ``type``,
    ``loc``, ``msg``, ``input``, from the JSON Schema check). They are ``None`` on an
    error not made for one call. ``source`` is always ``None``: LangChain's is the
    pydantic ``ValidationError``, and ironloop checks arguments by JSON Schema.
    """

    tool_name: str | None = None
    tool_kwargs: Any = None
    filtered_errors: list[dict[str, Any]] | None = None
    source: BaseException | None = None

    @property
    def message(self) -> str:
        """The error's text (LangChain's ``ToolInvocationError.message``)."""
        return str(self)


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
    """A checkpoint could not be written or read. The subclasses say why.

    ``thread_id`` names the thread when the error is about one (a conflict, a missing
    checkpoint); ``checkpoint_id`` the checkpoint that was not found.
    """

    thread_id: str | None = None
    checkpoint_id: str | None = None


class ModelError(IronloopError):
    """A model call failed or returned something unusable.

    Errors from providers carry ``status_code`` (the HTTP status, when there was one),
    ``provider``, ``kind`` and ``retryable``; they are ``None`` / ``False`` otherwise.
    """

    status_code: int | None = None
    provider: str | None = None
    kind: str | None = None
    retryable: bool = False


class ToolSourceError(IronloopError):
    """A source of tools (an OpenAPI spec, an MCP server, a workspace directory)
    could not be opened. Each error is also the built-in exception it used to be, so
    ``except ValueError`` / ``except ConnectionError`` / ``except OSError`` code keeps
    working."""


class OpenApiError(ToolSourceError):
    """An OpenAPI spec could not be read, fetched or made into tools."""


class OpenApiSpecError(OpenApiError, ValueError):
    """The spec is not valid JSON / YAML, not OpenAPI 3.x, has a ``$ref`` that cannot
    be resolved, or gives no usable base URL; or an option (``base_url``, a header) is
    invalid."""


class OpenApiFetchError(OpenApiError, ConnectionError):
    """``from_url`` could not fetch the spec (or got a status outside 2xx)."""


class OpenApiFileError(OpenApiError, OSError):
    """``from_file`` could not read the spec file."""


class OpenApiFileNotFoundError(OpenApiFileError, FileNotFoundError):
    """``from_file``'s path does not exist."""


class McpError(ToolSourceError):
    """An MCP server could not be reached, or its session failed."""


class McpConnectionError(McpError, ConnectionError):
    """The server could not be started or reached, or the handshake failed."""


class McpSessionError(McpError, RuntimeError):
    """The open session failed: the server answered with an error, exited, or broke
    the protocol."""


class WorkspaceError(ToolSourceError):
    """The workspace tools could not be made for a root directory."""


class WorkspaceConfigError(WorkspaceError, ValueError):
    """The root is not a directory, or an option is out of range."""


class WorkspaceNotFoundError(WorkspaceError, FileNotFoundError):
    """The root does not exist."""


class WorkspaceFileError(WorkspaceError, OSError):
    """The root could not be resolved (permissions, a symlink loop...)."""


class StoreError(IronloopError):
    """A long-term store (``ironloop.store``) failed: its database could not be
    opened, read or written, the connection dropped, or the store was closed. A bad
    argument (namespace, value, vector size) raises ``ValueError`` instead."""


class CheckpointSerializationError(CheckpointError, TypeError):
    """A state value cannot be serialised into a checkpoint (the message names the
    channel and the value's type), or a stored checkpoint cannot be read back."""


class CheckpointTypeWarning(UserWarning):
    """A checkpointed value of a type the graph does not allow (an enum, dataclass or
    pydantic model that its state schema does not name and ``compile(...,
    serde_allowlist=[...])`` does not list) was loaded as its plain data instead of
    as that type. Nothing a checkpoint names is imported: allow the type to have it
    restored, or filter this warning (``warnings.filterwarnings("ignore",
    category=CheckpointTypeWarning)``) to keep the plain data quietly."""


class CheckpointStorageError(CheckpointError):
    """The store failed: the database connection dropped or was refused, the disk
    failed, a lock was held too long, the schema is from another version, or the saver
    was closed. Once the store is back, ``invoke(None, config)`` continues the thread
    from its last saved step."""


class CheckpointIntegrityError(CheckpointError):
    """A stored checkpoint fails the check of the saver's key (``key=`` or
    ``IRONLOOP_CHECKPOINT_KEY``): it was changed after it was written, written with
    another key, or written without one (open the saver with ``accept_unkeyed=True``
    to read records written before the key was set). The message says which."""


class CheckpointConflictError(CheckpointError):
    """Another writer got to the thread first (``.thread_id`` names it): a second run
    advancing a thread that a run is advancing, or a checkpoint id already stored with
    other content."""


class ThreadBusyError(CheckpointConflictError):
    """A run on the thread (``.thread_id``) is in progress in this process and the new
    run's ``config["multitask_strategy"]`` is ``"reject"`` (the default). Pass
    ``"enqueue"``, ``"interrupt"`` or ``"rollback"`` to run it anyway; see
    ``docs/decisions.md``."""


class RunRolledBackError(IronloopError):
    """Raised to the caller of a run that a newer run on the same thread
    (``.thread_id``) replaced with ``config={"multitask_strategy": "rollback"}``: the
    run was stopped and the thread continues from where it started."""

    thread_id: str | None = None


class UnknownInterruptError(IronloopError, ValueError, RuntimeError):
    """A ``Command(resume=...)`` that does not match the pending interrupts, refused
    before anything is written (LangGraph's name and attributes). ``reason`` is
    ``"not_pending"`` (the ids in ``interrupt_ids`` are unknown or answered already) or
    ``"ambiguous"`` (one value while several interrupts are pending); ``pending_ids``
    are the interrupts that can still be answered, by id. Also a ``ValueError``, and a
    ``RuntimeError``: what LangGraph's default (not strict) resume raises for one value
    while several interrupts are pending, which a program written for it catches.

    A single value with no interrupt pending resumes a pause at ``interrupt_before`` /
    ``interrupt_after``."""

    def __init__(
        self,
        message: str,
        *,
        reason: str = "not_pending",
        interrupt_ids: Sequence[str] = (),
        pending_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.interrupt_ids = tuple(interrupt_ids)
        self.pending_ids = tuple(pending_ids)


class CheckpointNotFoundError(CheckpointError, LookupError, ValueError):
    """No checkpoint with that id in the thread (``.thread_id``, ``.checkpoint_id``).
    Also a ``ValueError``: the id came from the caller's config."""


class GraphBubbleUp(IronloopError):
    """The base of what a node raises to tell the engine something, not to fail
    (``GraphInterrupt``, ``ParentCommand``), as LangGraph's: a tool node re-raises it
    whatever its ``handle_tool_errors``."""


class GraphInterrupt(GraphBubbleUp):  # LangGraph's name, hence no -Error suffix
    """Raised inside a node by ``interrupt(value)`` to pause the run. Not an error:
    the runtime catches it; do not catch it in your node."""

    #: Set when a graph nested in the node stopped at one of its static breakpoints
    #: (``interrupt_before`` / ``interrupt_after``): the node's task pauses with nothing
    #: to answer, and resuming continues the nested graph, as in LangGraph.
    breakpoint: bool = False
    #: Set (by the engine) when a graph nested in the node paused on ``interrupt()``
    #: calls: each question's ``(id, value)``. The node's task pauses on every one of
    #: them, each answered by its own id, as LangGraph shows a subgraph's parallel
    #: questions; ``value`` is the first one's.
    _nested: tuple[tuple[str, object], ...] = ()

    def __init__(self, value: object = ()) -> None:  # LangGraph's may be raised bare
        super().__init__(value)
        self.value = value


class NodeInterrupt(GraphInterrupt):
    """LangGraph's deprecated way to pause from a node: ``raise NodeInterrupt(value)``
    pauses the run as ``interrupt(value)`` does (resuming runs the node again from its
    start). Use ``ironloop.types.interrupt`` instead."""

    def __init__(self, value: object = None, id: str | None = None) -> None:
        warnings.warn(
            "NodeInterrupt is deprecated. Please use `langgraph.types.interrupt` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        super().__init__(value)


class ParentCommand(GraphBubbleUp):
    """Raised by a node of a subgraph that returned ``Command(graph=Command.PARENT)``:
    the parent graph's node that runs the subgraph takes the command as its own result.
    Not an error: do not catch it."""

    def __init__(self, command: object) -> None:
        super().__init__(command)
        self.command = command


#: Set on the ``ValidationError`` of a resume value that does not fit its schema.
_INVALID_RESUME = "_langgraph_invalid_resume"


def mark_invalid_resume(error: BaseException) -> None:
    """Marks ``error`` as a resume value's failure to fit ``interrupt(response_schema=)``."""
    setattr(error, _INVALID_RESUME, True)


def is_invalid_resume(error: BaseException) -> bool:
    """Whether ``error`` is the ``ValidationError`` of a resume value that did not fit
    its ``interrupt(..., response_schema=)``: a tools node never hands it to the model
    (the run fails; the interrupt can be answered again)."""
    return getattr(error, _INVALID_RESUME, False) is True


class GraphDrained(GraphBubbleUp):  # LangGraph's name
    """The run stopped between two steps because its ``RunControl.request_drain()``
    was called (e.g. on SIGTERM). The step under way finished and was saved: run the
    graph again with ``None`` as input and the same thread to continue it."""

    def __init__(self, reason: str = "shutdown") -> None:
        self.reason = reason
        super().__init__(f"Graph drained: {reason}")


class NodeCancelledError(IronloopError):
    """A node's own code raised ``asyncio.CancelledError`` (LangGraph's name and
    ``node`` attribute): the run fails as for any other exception of the node, instead
    of taking it for the run being torn down. The ``CancelledError`` is its
    ``__cause__``; to stop a run, cancel the task awaiting it (or use
    ``RunControl.request_drain()``) rather than raising ``CancelledError`` in a node."""

    def __init__(self, node: str, message: str | None = None) -> None:
        super().__init__(message or f"Node {node!r} raised asyncio.CancelledError")
        self.node = node


class NodeTimeoutError(IronloopError):
    """An attempt of a node outlived its ``timeout`` (LangGraph's name and attributes):
    ``kind`` says which limit fired (``"run"``: ``run_timeout`` seconds in all, or
    ``"idle"``: ``idle_timeout`` seconds without progress), ``timeout`` is that limit.
    Not a ``TimeoutError`` (an ``OSError``), so the default ``RetryPolicy`` retries it.
    Raise the limit in ``add_node(..., timeout=TimeoutPolicy(...))``, or have the node
    call ``runtime.heartbeat()`` while it works."""

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: Literal["idle", "run"],
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        limit = idle_timeout if kind == "idle" else run_timeout
        if kind not in ("idle", "run") or limit is None:
            raise ValueError(f"{kind}_timeout is required when kind={kind!r}")
        how = " without making progress" if kind == "idle" else ""
        super().__init__(
            f"Node '{node}' exceeded its {kind} timeout of {limit:.3f}s{how} "
            f"(elapsed: {elapsed:.3f}s)."
        )
        self.node = node
        self.elapsed = elapsed
        self.kind = kind
        self.timeout: float = limit
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout


@dataclasses.dataclass(frozen=True, slots=True)
class NodeError:
    """What a node's error handler (``add_node(..., error_handler=fn)``) is told of
    the failure it handles, given to a parameter of its function annotated with this
    class: the ``node`` that failed and the ``error`` it raised."""

    node: str
    error: BaseException
