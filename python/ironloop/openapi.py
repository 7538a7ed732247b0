"""Tools from an OpenAPI description of an HTTP API: ``OpenApiToolset.from_file``,
``.from_str`` and ``.from_url`` make one tool per operation.

This is the public path; the code is the OpenAPI tool source,
``ironloop.sources.openapi`` (see ``ironloop.sources`` for why the two).
"""

from __future__ import annotations

from ironloop.sources.openapi import Credential, NativeTool, OpenApiOptions, OpenApiToolset

__all__ = ["Credential", "NativeTool", "OpenApiOptions", "OpenApiToolset"]
