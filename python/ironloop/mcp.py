"""Tools from MCP servers (the Model Context Protocol): ``McpToolset.stdio(...)`` /
``McpToolset.http(...)`` open one session with a server and give its tools.

This is the public path; the code is the MCP tool source, ``ironloop.sources.mcp``
(see ``ironloop.sources`` for why the two).
"""

from __future__ import annotations

from ironloop.sources.mcp import (
    MAX_MESSAGE_BYTES,
    McpOptions,
    McpToolset,
    NativeTool,
    prompt_messages,
)

__all__ = ["MAX_MESSAGE_BYTES", "McpOptions", "McpToolset", "NativeTool", "prompt_messages"]
