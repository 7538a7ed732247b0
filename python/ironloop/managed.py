"""Managed values: state keys the engine fills for each node instead of a channel, as
LangGraph's ``langgraph.managed``. Annotate a state key ``RemainingSteps`` to read how
many steps the run may still take before ``recursion_limit`` stops it, or
``IsLastStep`` to know this is the last one (``remaining_steps == 1``).

Example:
    >>> from typing import TypedDict
    >>> from ironloop import StateGraph, START, END
    >>> class S(TypedDict):
    ...     seen: int
    ...     remaining_steps: RemainingSteps
    >>> g = StateGraph(S).add_node("n", lambda s: {"seen": s["remaining_steps"]})
    >>> g.add_edge(START, "n").add_edge("n", END).compile().invoke(
    ...     {"seen": 0}, {"recursion_limit": 10})
    {'seen': 9}
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

__all__ = ["IsLastStep", "ManagedValue", "RemainingSteps", "is_managed_value"]


class ManagedValue:
    """A managed value's kind: ``get(scratch)`` gives its value for a running task."""

    @staticmethod
    def get(scratch: Any) -> Any:
        raise NotImplementedError


class RemainingStepsManager(ManagedValue):
    @staticmethod
    def get(scratch: Any) -> int:
        return int(scratch.remaining_steps)


class IsLastStepManager(ManagedValue):
    @staticmethod
    def get(scratch: Any) -> bool:
        return bool(scratch.remaining_steps == 1)


RemainingSteps = Annotated[int, RemainingStepsManager]
IsLastStep = Annotated[bool, IsLastStepManager]


def is_managed_value(hint: Any) -> type[ManagedValue] | None:
    """The manager of a state key's annotation, if it is a managed value."""
    if get_origin(hint) is not Annotated:
        return None
    for meta in get_args(hint)[1:]:
        if isinstance(meta, type) and issubclass(meta, ManagedValue):
            return meta
    return None
