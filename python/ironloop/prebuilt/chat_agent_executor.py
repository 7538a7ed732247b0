"""Where LangGraph keeps ``create_react_agent`` and its state schemas
(``langgraph.prebuilt.chat_agent_executor``), for imports ported from it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ironloop._agent import AgentState, AgentStateWithStructuredResponse, create_react_agent

if TYPE_CHECKING:
    from ironloop.prebuilt._pydantic import (
        AgentStatePydantic,
        AgentStateWithStructuredResponsePydantic,
    )

__all__ = [
    "AgentState",
    "AgentStatePydantic",
    "AgentStateWithStructuredResponse",
    "AgentStateWithStructuredResponsePydantic",
    "create_react_agent",
]


def __getattr__(name: str) -> Any:
    # The pydantic schemas are imported on first use: pydantic is needed only then.
    if name in ("AgentStatePydantic", "AgentStateWithStructuredResponsePydantic"):
        from ironloop.prebuilt import _pydantic

        return getattr(_pydantic, name)
    if name == "_should_bind_tools":
        # LangGraph's private helper, which langgraph-supervisor imports to learn whether
        # a LangChain model still needs its tools bound (langchain-core needed).
        from ironloop._langchain import should_bind_tools

        return should_bind_tools
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
