"""Prebuilt pieces of agent graphs: ``ToolNode``, ``tools_condition`` and
``create_react_agent`` (as in ``langgraph.prebuilt``). The rules run in Rust
(``src/prebuilt/``); ``tools_condition`` is the Rust function itself, so a graph that
routes with it never calls into Python to route.
"""

from __future__ import annotations

from ironloop._agent import create_react_agent
from ironloop._ironloop import tools_condition
from ironloop._toolnode import ToolNode

__all__ = ["ToolNode", "create_react_agent", "tools_condition"]
