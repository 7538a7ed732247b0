"""ironloop: LangGraph's programming model on a Rust engine.

Example:
    >>> from ironloop import tool, ToolNode
    >>> from ironloop.messages import AIMessage
    >>> @tool
    ... def shout(text: str) -> str:
    ...     "Upper-cases text."
    ...     return text.upper()
    >>> call = {"name": "shout", "args": {"text": "hi"}, "id": "1"}
    >>> ai = AIMessage(content="", tool_calls=[call])
    >>> ToolNode([shout]).invoke({"messages": [ai]})["messages"][0].content
    'HI'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ironloop import _wiring  # noqa: F401  (hands the Rust glue its Python helpers)
from ironloop import tools as tools  # `ironloop.tools.workspace(...)` after `import ironloop`
from ironloop._activities import register_activity, unregister_activity
from ironloop._agent import create_react_agent
from ironloop._constants import END, START
from ironloop._injection import InjectedState, InjectedStore, InjectedToolCallId
from ironloop._ironloop import MemorySaver, PostgresSaver, SqliteSaver, ToolContext, __version__
from ironloop._meta_fields import register_delegate, unregister_delegate, with_call_fields
from ironloop._tool import Tool, compose_schema, tool
from ironloop._usage import UsageMetadataCallback, get_usage_metadata_callback
from ironloop.graph import (
    CompiledStateGraph,
    MessagesState,
    StateGraph,
    add_messages,
    get_stream_writer,
    interrupt,
)
from ironloop.models import init_model
from ironloop.prebuilt import ToolNode, tools_condition
from ironloop.runtime import Runtime, get_runtime
from ironloop.store import InMemoryStore
from ironloop.types import Command, Interrupt, Send, StateSnapshot

if TYPE_CHECKING:
    from ironloop._create_agent import create_agent


def __getattr__(name: str) -> Any:
    # `create_agent` loads the middleware machinery, and with it asyncio: only when
    # asked for, so that `import ironloop` and a run of sync nodes never import asyncio.
    if name == "create_agent":
        from ironloop._create_agent import create_agent

        return create_agent
    raise AttributeError(f"module 'ironloop' has no attribute {name!r}")


__all__ = [
    "END",
    "START",
    "Command",
    "InMemoryStore",
    "CompiledStateGraph",
    "Interrupt",
    "MemorySaver",
    "PostgresSaver",
    "MessagesState",
    "Runtime",
    "Send",
    "UsageMetadataCallback",
    "SqliteSaver",
    "StateGraph",
    "StateSnapshot",
    "add_messages",
    "compose_schema",
    "create_agent",
    "create_react_agent",
    "get_runtime",
    "get_usage_metadata_callback",
    "get_stream_writer",
    "init_model",
    "interrupt",
    "register_activity",
    "register_delegate",
    "unregister_activity",
    "unregister_delegate",
    "with_call_fields",
    "InjectedState",
    "InjectedStore",
    "InjectedToolCallId",
    "Tool",
    "ToolContext",
    "ToolNode",
    "__version__",
    "tool",
    "tools_condition",
]
