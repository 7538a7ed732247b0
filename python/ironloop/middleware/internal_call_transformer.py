"""Marking a model call a middleware makes for itself (a tool selection, an emulated
tool result) as internal, with LangChain 1.5's metadata key, so tracing and stream
consumers can tell it from the agent's own calls. Such calls are also tagged
``nostream`` (``TAG_NOSTREAM``), which keeps them out of ironloop's ``messages`` stream;
``InternalCallTransformer`` (LangChain's name, for ``transformers = (...)`` on a
middleware class) keeps out of ``run.messages`` any marked call that reached it."""

from __future__ import annotations

import secrets
from typing import Any, ClassVar

from ironloop._constants import TAG_NOSTREAM
from ironloop.stream._types import ProtocolEvent, StreamTransformer

__all__ = [
    "INTERNAL_CALL_METADATA_KEY",
    "InternalCallTransformer",
    "internal_call_config",
    "internal_call_metadata",
]

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


class InternalCallTransformer(StreamTransformer):
    """Drops a marked internal call's ``messages`` events from the run's log and
    ``run.messages`` (it runs before the built-in transformers: a streamed call's
    ``message-start`` is shown to them as a tool's, which they skip, and a whole
    message is emptied)."""

    before_builtins: ClassVar[bool] = True
    required_stream_modes: ClassVar[tuple[str, ...]] = ("messages",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._scope_list = list(scope)

    def init(self) -> dict[str, Any]:
        return {}

    def process(self, event: ProtocolEvent) -> bool:
        params = event["params"]
        if event["method"] != "messages" or params["namespace"] != self._scope_list:
            return True
        payload, metadata = params["data"]
        if not metadata or metadata.get(INTERNAL_CALL_METADATA_KEY) != _TOKEN:
            return True
        if isinstance(payload, dict) and payload.get("event") == "message-start":
            payload["role"] = "tool"
        elif not isinstance(payload, dict):
            params["data"] = (None, metadata)
        return False
