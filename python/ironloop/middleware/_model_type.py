"""Which provider's API a model speaks, for the middleware whose behaviour depends on
it (the fallback's cache-setting clean-up, the summary's token estimate)."""

from __future__ import annotations

from typing import Any

#: ironloop's own providers (``_provider`` of its models, the prefix of a model string)
#: as the LangChain model type they speak.
_IRONLOOP_TYPES = {"anthropic": "anthropic-chat", "openai": "openai-chat"}


def model_type(model: Any) -> str | None:
    """The kind of API ``model`` speaks, in LangChain's ``_llm_type`` terms: a LangChain
    model's own, an ironloop model's provider's, or a ``"provider:model"`` string's;
    ``None`` when unknown."""
    if isinstance(model, str):
        return _IRONLOOP_TYPES.get(model.partition(":")[0])
    llm_type = getattr(model, "_llm_type", None)
    if isinstance(llm_type, str):
        return llm_type
    provider = getattr(model, "_provider", None)
    return _IRONLOOP_TYPES.get(provider) if isinstance(provider, str) else None
