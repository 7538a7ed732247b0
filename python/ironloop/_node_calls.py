"""What a node's function calls while the graph runs it: ``interrupt``,
``push_message`` and ``get_stream_writer`` (public through ``ironloop.graph``)."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ironloop._interrupt import asked, validated
from ironloop._ironloop import _coerce_message
from ironloop._runtime import answers_var, scratch_lock, task_var, writer_of

if TYPE_CHECKING:
    from ironloop.messages import BaseMessage

#: Inside a subgraph run by a graph without checkpoints: the scratchpad of the outermost
#: graph's task, which holds that task's resume values.
_outer_task: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "ironloop_outer_task", default=None
)


def interrupt(value: Any, *, response_schema: Any = None) -> Any:
    """Pauses the run and surfaces ``value`` to the caller as ``__interrupt__``.

    Resuming with ``graph.invoke(Command(resume=x), config)`` runs the node again from
    its start; this call then returns ``x`` (the k-th call returns the k-th resume
    value). Needs a checkpointer.

    ``response_schema`` (as LangGraph 1.2): what the answer must match, shown to the
    caller as JSON Schema in ``Interrupt.response_schema``. A pydantic model,
    ``TypedDict`` or dataclass validates the answer, which this call returns converted
    (a mismatch raises pydantic's ``ValidationError``); a dict is a JSON Schema shown
    as it is, the answer returned unchecked.

    Example:
        >>> def approve(state):
        ...     answer = interrupt({"question": "ship it?"})
        ...     return {"approved": answer == "yes"}
    """
    scratch = task_var.get(None)
    if scratch is None:
        raise RuntimeError(
            "interrupt() can only be called inside a graph node (or a tool a graph runs)"
        )
    question, adapter = asked(value, response_schema)
    # In a subgraph, the pause and the resume values belong to the parent's task.
    with scratch_lock:
        answer = (_outer_task.get() or scratch).interrupt(question)
    for taken in answers_var.get():  # the @task calls this runs in (ironloop.func)
        taken[0] += 1
    return validated(adapter, answer)


def push_message(message: Any, *, state_key: str | None = "messages") -> BaseMessage:
    """Sends ``message`` to the ``messages`` stream now and, unless ``state_key`` is
    ``None``, writes it to that state key with the node's own update (as LangGraph's
    ``langgraph.graph.message.push_message``). Returns the message. The message needs
    an id: a message object (ironloop's or LangChain's) with one, or a dict with one.

    Example:
        >>> from ironloop.messages import AIMessage
        >>> def node(state):
        ...     push_message(AIMessage("working on it", id="progress-1"))
        ...     return {}
    """
    scratch = task_var.get(None)
    if scratch is None:
        raise RuntimeError("Called get_config outside of a runnable context")
    given_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    if given_id is None:
        raise ValueError("Message ID is required")
    msg = _coerce_message(message)
    if scratch.streams_messages:
        scratch.write_message(msg)
    if state_key:
        scratch.push(state_key, msg)
    return msg  # type: ignore[no-any-return]


def get_stream_writer() -> Callable[[Any], None]:
    """A function that sends a payload to the ``custom`` stream of the running graph
    (a no-op outside a graph run).

    Example:
        >>> def node(state):
        ...     get_stream_writer()({"progress": 0.5})
        ...     return {}
    """
    return writer_of(task_var.get(None))


def _task_writer(payload: Any) -> None:
    get_stream_writer()(payload)
