"""Prebuilt pieces of agent graphs, as in ``langgraph.prebuilt``: ``ToolNode``,
``tools_condition``, ``create_react_agent`` and its state schemas ``AgentState`` /
``AgentStatePydantic`` (also in ``ironloop.prebuilt.chat_agent_executor``, where
LangGraph keeps them), and the injection markers. The rules run in Rust
(``src/prebuilt/``); ``tools_condition`` is the Rust function itself, so a graph that
routes with it never calls into Python to route.

Example:
    >>> from ironloop.prebuilt import AgentState
    >>> class State(AgentState):
    ...     topic: str
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ironloop._agent import AgentState, create_react_agent
from ironloop._injection import InjectedState, InjectedStore
from ironloop._ironloop import tools_condition
from ironloop._toolnode import ToolNode
from ironloop.stream._tool_calls import ToolCallStream, ToolCallTransformer

if TYPE_CHECKING:
    from ironloop._tool_call import ToolRuntime
    from ironloop.prebuilt._pydantic import AgentStatePydantic
    from ironloop.prebuilt._validation import ValidationNode

__all__ = [
    "AgentState",
    "AgentStatePydantic",
    "InjectedState",
    "InjectedStore",
    "ToolCallStream",
    "ToolCallTransformer",
    "ToolNode",
    "ToolRuntime",
    "ValidationNode",
    "create_react_agent",
    "tools_condition",
]


def __getattr__(name: str) -> Any:
    # The pydantic schemas are imported on first use: pydantic is needed only then.
    if name in ("AgentStatePydantic",):
        from ironloop.prebuilt import _pydantic

        return getattr(_pydantic, name)
    if name == "ValidationNode":
        from ironloop.prebuilt._validation import ValidationNode

        return ValidationNode
    if name == "ToolRuntime":  # langchain-core's marker as a base: made on first use
        from ironloop._tool_call import runtime_class

        return runtime_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
