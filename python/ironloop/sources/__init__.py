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
is imported here, so importing one source does not load the others. Their size
limits (``max_output_bytes``, ``max_message_bytes``, ``max_spec_bytes``...) are
checked once, by the core's glue (``size_limit`` in ``src/bindings/args.rs``); their
string mappings (headers, environments) by :func:`_str_pairs` here.
"""

from __future__ import annotations

from collections.abc import Mapping


def _str_pairs(name: str, value: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """``value`` (a mapping of str to str, or None for none) as the pairs the native
    constructors take; else a ``TypeError`` naming ``name``. A bad value is named by
    its type only: headers and environments may hold credentials."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of str to str, got {type(value).__name__}")
    out = []
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"{name} must map str to str, got {k!r}: {type(v).__name__}")
        out.append((k, v))
    return out
