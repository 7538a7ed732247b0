"""Marking a model call a middleware makes for itself (a tool selection, an emulated
tool result) as internal, with LangChain 1.5's metadata key, so tracing and stream
consumers can tell it from the agent's own calls. Such calls are also tagged
``nostream`` (``TAG_NOSTREAM``), which keeps them out of ironloop's ``messages`` stream."""

from __future__ import annotations

import secrets
from typing import Any

from ironloop._constants import TAG_NOSTREAM

__all__ = ["INTERNAL_CALL_METADATA_KEY", "internal_call_config", "internal_call_metadata"]

INTERNAL_CALL_METADATA_KEY = "lc_internal_call"

#: A process-local token: user metadata cannot pass a real call off as internal.
_TOKEN = secrets.token_hex(16)


def internal_call_metadata() -> dict[str, Any]:
    """The metadata to merge into an internal call's ``config["metadata"]``."""
    return {INTERNAL_CALL_METADATA_KEY: _TOKEN}


def internal_call_config(source: str) -> dict[str, Any]:
    """The config of a middleware's own model call: ``lc_source`` names the
    middleware, the call is internal and not streamed as the agent's answer."""
    return {"metadata": {"lc_source": source, **internal_call_metadata()}, "tags": [TAG_NOSTREAM]}
