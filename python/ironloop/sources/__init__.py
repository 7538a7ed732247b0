"""Tool sources: places tools come from, each mirroring one in the crate's
``src/sources/``.

* ``sources.workspace`` — the file system under one root (``workspace(root)``);
* ``sources.mcp`` — an MCP server (``McpToolset``);
* ``sources.openapi`` — an OpenAPI spec of an HTTP API (``OpenApiToolset``).

Each makes ``NativeTool`` objects: Rust tools that go into ``ToolNode`` and
``create_react_agent`` like ``@tool`` functions (the abstraction, ``ironloop._tool``).

The public import paths are the short ones: ``ironloop.tools`` (the workspace
tools), ``ironloop.mcp`` and ``ironloop.openapi`` re-export what is here. The code
lives in this package so that the layout says what each module is, the way the Rust
crate does; the short paths stay because user code and the README use them. Nothing
is imported here, so importing one source does not load the others; what they
share (a limit's check) is defined here.
"""

from __future__ import annotations

from ironloop.errors import InvalidArgumentError


def _max_bytes(value: int, name: str = "max_output_bytes") -> int:
    """`value` as a size limit: an int >= 1, else ``InvalidArgumentError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
    return value
