"""``ModelFallbackMiddleware`` (LangChain 1.x's): other models to try when the model
call fails.

An outer middleware may have put one provider's prompt-cache settings in the request
(Anthropic ``cache_control`` markers, Fireworks' session-affinity header, the
``prompt_cache_key`` setting) before the fallback loop runs; a fallback model of
another provider would reject them, and the outer middleware never runs again to take
them out. So each fallback attempt gets a request without the settings its model does
not accept (``_sanitize_request_for_fallback``), as LangChain 1.5 does; the request the
middleware was given is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any

from ironloop.errors import GraphInterrupt, ParentCommand
from ironloop.middleware._model_type import model_type
from ironloop.middleware.types import AgentMiddleware, ModelRequest

__all__ = ["ModelFallbackMiddleware"]

#: LangChain ``_llm_type`` values of models speaking Anthropic's API (direct, Bedrock,
#: Vertex), which accept ``cache_control`` markers.
_ANTHROPIC_TYPES = frozenset(
    {"anthropic-chat", "anthropic-bedrock-chat", "anthropic-chat-vertexai"}
)
_FIREWORKS_TYPE = "fireworks-chat"
#: The model types that accept ``prompt_cache_key``.
_CACHE_KEY_TYPES = frozenset({_FIREWORKS_TYPE, "openai-chat", "azure-openai-chat"})
_AFFINITY_HEADER = "x-session-affinity"


def _supports_anthropic_cache_control(model: Any) -> bool:
    """Whether ``model`` accepts Anthropic ``cache_control`` markers."""
    return model_type(model) in _ANTHROPIC_TYPES


def _without_key(payload: dict[str, Any], key: str) -> tuple[dict[str, Any], bool]:
    """``payload`` without ``key`` (the same dict when it has none), and whether it had it."""
    if key not in payload:
        return payload, False
    return {k: v for k, v in payload.items() if k != key}, True


def _clean_block(block: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A content block without ``cache_control``, at its top and in its ``extras`` /
    ``metadata``."""
    out, changed = _without_key(block, "cache_control")
    for nested in ("extras", "metadata"):
        inner = out.get(nested)
        if isinstance(inner, dict):
            cleaned, inner_changed = _without_key(inner, "cache_control")
            if inner_changed:
                out = {**out, nested: cleaned}
                changed = True
    return out, changed


def _clean_message(message: Any) -> Any:
    """``message`` without cache markers in its content blocks (itself when it has none)."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        return message
    blocks = []
    changed = False
    for block in content:
        if isinstance(block, dict):
            block, block_changed = _clean_block(block)
            changed = changed or block_changed
        blocks.append(block)
    return message.model_copy(update={"content": blocks}) if changed else message


def _clean_tool(tool: Any) -> Any:
    """A tool (a dict, or an object with ``extras``) without cache markers; emptied
    ``extras`` become ``None``."""
    if isinstance(tool, dict):
        out, changed = _without_key(tool, "cache_control")
        extras = out.get("extras")
        if isinstance(extras, dict):
            cleaned, extras_changed = _without_key(extras, "cache_control")
            if extras_changed:
                return {**out, "extras": cleaned or None}
        return out if changed else tool
    extras = getattr(tool, "extras", None)
    if not isinstance(extras, dict) or "cache_control" not in extras:
        return tool
    cleaned, _ = _without_key(extras, "cache_control")
    return tool.model_copy(update={"extras": cleaned or None})


def _without_affinity(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without Fireworks' session-affinity header (any case)."""
    headers = settings.get("extra_headers")
    if not isinstance(headers, Mapping):
        return settings
    kept = {
        k: v
        for k, v in headers.items()
        if not (isinstance(k, str) and k.lower() == _AFFINITY_HEADER)
    }
    if len(kept) == len(headers):
        return settings
    out = {k: v for k, v in settings.items() if k != "extra_headers"}
    if kept:
        out["extra_headers"] = kept
    return out


def _changed_list(items: list[Any], clean: Callable[[Any], Any]) -> list[Any] | None:
    """``items`` cleaned one by one, or ``None`` when none changed."""
    cleaned = [clean(item) for item in items]
    return cleaned if any(a is not b for a, b in zip(cleaned, items, strict=True)) else None


def _sanitize_request_for_fallback(
    request: ModelRequest, fallback_model: Any = None
) -> ModelRequest:
    """``request`` without the provider cache settings ``fallback_model`` does not
    accept; ``request`` itself when there are none. Fields that need no change keep
    their objects."""
    kind = model_type(fallback_model)
    anthropic = kind in _ANTHROPIC_TYPES
    settings = request.model_settings
    if not anthropic:
        settings, _ = _without_key(settings, "cache_control")
    if kind != _FIREWORKS_TYPE:
        settings = _without_affinity(settings)
    if kind not in _CACHE_KEY_TYPES:
        settings, _ = _without_key(settings, "prompt_cache_key")
    overrides: dict[str, Any] = {}
    if settings is not request.model_settings:
        overrides["model_settings"] = settings
    if not anthropic:
        if request.system_message is not None:
            system = _clean_message(request.system_message)
            if system is not request.system_message:
                overrides["system_message"] = system
        messages = _changed_list(list(request.messages), _clean_message)
        if messages is not None:
            overrides["messages"] = messages
        tools = _changed_list(list(request.tools), _clean_tool)
        if tools is not None:
            overrides["tools"] = tools
    return request.override(**overrides) if overrides else request


class ModelFallbackMiddleware(AgentMiddleware):
    """When the model call raises, tries ``first_model``, then each of
    ``additional_models``, in order (models or ``"provider:model"`` strings); the first
    answer wins. When every one fails, the last failure is raised, with the earlier ones
    chained. Each fallback attempt's request is stripped of the prompt-cache settings
    its model's provider does not accept (see the module's docstring).

    Example:
        >>> ModelFallbackMiddleware("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5").models
        ['openai:gpt-4o-mini', 'anthropic:claude-sonnet-4-5']
    """

    def __init__(self, first_model: Any, *additional_models: Any) -> None:
        self.models = [first_model, *additional_models]

    def _attempts(self, request: ModelRequest) -> Generator[ModelRequest, Exception, None]:
        """The requests to try in turn (the given one, then one per fallback model);
        the caller sends each failure back in. When none is left, the last failure is
        raised, the earlier ones chained."""
        last = yield request
        for model in self.models:
            # Outside the handler's ``try``: a failing sanitizer is a bug to show, not
            # a model failure to fall back from.
            failure = yield _sanitize_request_for_fallback(request, model).override(model=model)
            failure.__context__ = last
            last = failure
        raise last

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        attempts = self._attempts(request)
        attempt = next(attempts)
        while True:
            try:
                return handler(attempt)
            except (GraphInterrupt, ParentCommand):
                raise
            except Exception as e:
                attempt = attempts.send(e)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        attempts = self._attempts(request)
        attempt = next(attempts)
        while True:
            try:
                return await handler(attempt)
            except (GraphInterrupt, ParentCommand):
                raise
            except Exception as e:
                attempt = attempts.send(e)
