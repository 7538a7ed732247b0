"""The built-in workspace tools: ``workspace(root)`` gives an agent a directory to
work in (``read_file``, ``write_file``, ``edit_file``, ``list_files``, ``search`` and,
when asked for, ``bash``), as Rust tools.

This is the public path; the code is the workspace tool source,
``ironloop.sources.workspace`` (see ``ironloop.sources`` for why the two). The
``@tool`` abstraction itself is ``ironloop.tool`` / ``ironloop.Tool``.
"""

from __future__ import annotations

from ironloop.sources.workspace import NativeTool, workspace

__all__ = ["NativeTool", "workspace"]
