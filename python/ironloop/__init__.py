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

import importlib
from typing import TYPE_CHECKING, Any

from ironloop import _wiring  # noqa: F401  (hands the Rust glue its Python helpers)

if TYPE_CHECKING:
    from ironloop import tools as tools
    from ironloop._activities import register_activity, unregister_activity
    from ironloop._agent import create_react_agent
    from ironloop._constants import END, START
    from ironloop._create_agent import create_agent
    from ironloop._injection import InjectedState, InjectedStore, InjectedToolCallId
    from ironloop._ironloop import (
        MemorySaver,
        PostgresSaver,
        SqliteSaver,
        ToolContext,
        __version__,
    )
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

#: Where each public name lives. ``import ironloop`` loads none of these modules: a
#: name's module is imported when the name is first read (``from ironloop import
#: StateGraph`` or ``ironloop.StateGraph``), so a process pays for the graph, agent,
#: model and store machinery it uses, not for all of it (BENCHMARKS.md, S1: peak RSS
#: and wall of a bare import). Type checkers read the imports above instead.
_LAZY: dict[str, str] = {
    "register_activity": "ironloop._activities",
    "unregister_activity": "ironloop._activities",
    "create_react_agent": "ironloop._agent",
    "END": "ironloop._constants",
    "START": "ironloop._constants",
    # `create_agent` loads the middleware machinery, and with it asyncio.
    "create_agent": "ironloop._create_agent",
    "InjectedState": "ironloop._injection",
    "InjectedStore": "ironloop._injection",
    "InjectedToolCallId": "ironloop._injection",
    "MemorySaver": "ironloop._ironloop",
    "PostgresSaver": "ironloop._ironloop",
    "SqliteSaver": "ironloop._ironloop",
    "ToolContext": "ironloop._ironloop",
    "__version__": "ironloop._ironloop",
    "register_delegate": "ironloop._meta_fields",
    "unregister_delegate": "ironloop._meta_fields",
    "with_call_fields": "ironloop._meta_fields",
    "Tool": "ironloop._tool",
    "compose_schema": "ironloop._tool",
    "tool": "ironloop._tool",
    "UsageMetadataCallback": "ironloop._usage",
    "get_usage_metadata_callback": "ironloop._usage",
    "CompiledStateGraph": "ironloop.graph",
    "MessagesState": "ironloop.graph",
    "StateGraph": "ironloop.graph",
    "add_messages": "ironloop.graph",
    "get_stream_writer": "ironloop.graph",
    "interrupt": "ironloop.graph",
    "init_model": "ironloop.models",
    "ToolNode": "ironloop.prebuilt",
    "tools_condition": "ironloop.prebuilt",
    "Runtime": "ironloop.runtime",
    "get_runtime": "ironloop.runtime",
    "InMemoryStore": "ironloop.store",
    "Command": "ironloop.types",
    "Interrupt": "ironloop.types",
    "Send": "ironloop.types",
    "StateSnapshot": "ironloop.types",
}

#: The public subpackages and modules, also reachable as attributes after a bare
#: ``import ironloop`` (``ironloop.tools.workspace(...)``), imported on first read.
_SUBMODULES = frozenset(
    {
        "agents",
        "cache",
        "checkpoint",
        "errors",
        "func",
        "graph",
        "managed",
        "mcp",
        "messages",
        "middleware",
        "models",
        "openapi",
        "prebuilt",
        "runtime",
        "serve",
        "sources",
        "store",
        "stream",
        "tools",
        "types",
        "warnings",
    }
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})


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
