"""Where LangGraph keeps ``ToolNode`` and its helpers (``langgraph.prebuilt.tool_node``),
for imports ported from it."""

from __future__ import annotations

from ironloop._injection import InjectedState, InjectedStore
from ironloop._ironloop import tools_condition
from ironloop._toolnode import ToolNode

__all__ = ["InjectedState", "InjectedStore", "ToolNode", "tools_condition"]
