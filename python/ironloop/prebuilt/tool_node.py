"""Where LangGraph keeps ``ToolNode`` and its helpers (``langgraph.prebuilt.tool_node``),
for imports ported from it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ironloop._injection import InjectedState, InjectedStore
from ironloop._ironloop import tools_condition
from ironloop._tool_call import ToolCallRequest
from ironloop._toolnode import AsyncToolCallWrapper, ToolCallWrapper, ToolNode
from ironloop.errors import ToolInvalidArgsError

#: LangGraph's name for the error a ``ToolNode`` with ``handle_tool_errors=False``
#: raises for a call whose arguments do not fit the tool's schema.
ToolInvocationError = ToolInvalidArgsError

#: The text of an error ``ToolMessage`` (``error`` is what went wrong), as LangGraph's.
TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."


#: What a ``Send`` to a ``ToolNode`` may carry (LangGraph's): one tool call and the
#: state its tools see (``create_react_agent(version="v2")`` sends one per call). The
#: functional form keeps the key ``__type`` unmangled.
ToolCallWithContext = TypedDict(
    "ToolCallWithContext",
    {"__type": Literal["tool_call_with_context"], "tool_call": dict[str, Any], "state": Any},
)


if TYPE_CHECKING:
    from ironloop._tool_call import ToolRuntime

__all__ = [
    "TOOL_CALL_ERROR_TEMPLATE",
    "AsyncToolCallWrapper",
    "InjectedState",
    "InjectedStore",
    "ToolCallRequest",
    "ToolCallWithContext",
    "ToolCallWrapper",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "tools_condition",
]


def __getattr__(name: str) -> Any:
    # ``ToolRuntime`` derives from langchain-core's injected-argument marker when
    # langchain-core is installed: imported on first use.
    if name == "ToolRuntime":
        from ironloop._tool_call import ToolRuntime

        return ToolRuntime
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
