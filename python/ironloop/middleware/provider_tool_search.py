"""``ProviderToolSearchMiddleware`` (LangChain 1.5's): chosen tools are sent marked
``defer_loading`` next to the provider's own tool-search tool, so the provider loads a
deferred tool's full schema only when the model looks for it — a small request when an
agent has many tools. Anthropic and OpenAI have server-side tool search."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ironloop.middleware._hook_bases import RequestRewriter
from ironloop.middleware.types import ModelRequest

__all__ = ["ProviderToolSearchMiddleware"]

#: The provider's tool-search tool, by normalised provider name: the only providers
#: supported. Version-stamped by the providers (re-check their docs when updating).
_SERVER_TOOL_SEARCH_TOOLS: dict[str, dict[str, str]] = {
    "anthropic": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "openai": {"type": "tool_search"},
}

#: Model-name prefixes -> provider, for a model that only says its bare name (what
#: LangChain's ``init_chat_model`` infers from a name).
_NAME_PREFIXES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "o1", "o3", "o4", "chatgpt", "text-davinci"), "openai"),
    (("claude",), "anthropic"),
    (("command",), "cohere"),
    (("accounts/fireworks",), "fireworks"),
    (("gemini",), "google_vertexai"),
    (("amazon.", "anthropic.", "meta."), "bedrock"),
    (("mistral",), "mistralai"),
    (("deepseek",), "deepseek"),
    (("grok",), "xai"),
    (("sonar",), "perplexity"),
)


def _attempt_infer_model_provider(model_name: str) -> str | None:
    name = model_name.lower()
    return next((p for prefixes, p in _NAME_PREFIXES if name.startswith(prefixes)), None)


def _normalize_provider(provider: str) -> str:
    return provider.replace("-", "_").lower()


def _provider_from_model_name(model_name: str) -> str | None:
    provider, _, rest = model_name.partition(":")
    if rest:
        return _normalize_provider(provider)
    inferred = _attempt_infer_model_provider(model_name)
    return _normalize_provider(inferred) if inferred else None


def _provider_from_params(params: Mapping[str, Any]) -> str | None:
    provider = params.get("model_provider")
    if isinstance(provider, str):
        return _normalize_provider(provider)
    name = params.get("model")
    return _provider_from_model_name(name) if isinstance(name, str) else None


def _get_model_provider(model: Any, runtime: Any) -> str | None:
    """The model's provider, from what a LangChain chat model exposes (a configurable
    model's parameters, its tracing ``ls_provider``), ironloop's models' own provider,
    or the class name; ``None`` when nothing says."""
    default = getattr(model, "_default_config", None)
    params_of = getattr(model, "_model_params", None)
    if callable(params_of):
        config = getattr(runtime, "config", None)
        params = params_of(config if isinstance(config, Mapping) else None)
        if isinstance(params, dict):
            merged = {**default, **params} if isinstance(default, dict) else params
            if provider := _provider_from_params(merged):
                return provider
    if isinstance(default, dict) and (provider := _provider_from_params(default)):
        return provider
    own = getattr(type(model), "_provider", None)  # ironloop's HTTP models
    if isinstance(own, str):
        return own
    ls_params = getattr(model, "_get_ls_params", None)
    if callable(ls_params):
        ls = ls_params()
        if isinstance(ls, dict) and isinstance(ls.get("ls_provider"), str):
            return _normalize_provider(ls["ls_provider"])
    return {
        "ChatAnthropic": "anthropic",
        "AnthropicChat": "anthropic",
        "ChatOpenAI": "openai",
        "OpenAIChat": "openai",
    }.get(type(model).__name__)


def _extras(tool: Any) -> dict[str, Any] | None:
    """A LangChain tool's ``extras`` (``{}`` when unset); ``None`` for what cannot be
    deferred (provider tool dicts, ironloop tools)."""
    if isinstance(tool, dict) or not hasattr(tool, "model_copy"):
        return None
    extras = getattr(tool, "extras", None)
    return extras if isinstance(extras, dict) else {}


class ProviderToolSearchMiddleware(RequestRewriter):
    """Defers ``searchable_tools`` (tools or names) — and any LangChain tool already
    marked ``extras={"defer_loading": True}`` — behind the provider's tool search.

    Naming a tool the model is not offered is a ``ValueError``; so is deferring a tool
    when the model's provider cannot be told or has no server-side tool search. With
    nothing deferred the request passes unchanged, whatever the model. Deferral is a
    mark on LangChain tools that LangChain's Anthropic and OpenAI chat models send;
    ironloop's own ``AnthropicChat`` / ``OpenAIChat`` do not send it yet, and are
    refused with a message saying so.

    Example:
        >>> ProviderToolSearchMiddleware(searchable_tools=["lookup_order"]).searchable_tool_names
        {'lookup_order'}
    """

    def __init__(self, *, searchable_tools: list[Any] | None = None) -> None:
        super().__init__()
        self.searchable_tool_names: set[str] = {
            t if isinstance(t, str) else t.name for t in searchable_tools or ()
        }

    def _deferred(self, tool: Any) -> bool:
        extras = _extras(tool)
        if extras is None:
            return False
        return extras.get("defer_loading") is True or tool.name in self.searchable_tool_names

    def _rewrite(self, request: ModelRequest) -> ModelRequest:
        tools = list(request.tools or ())
        if self.searchable_tool_names:
            offered = {t.name for t in tools if not isinstance(t, dict)}
            unknown = sorted(self.searchable_tool_names - offered)
            if unknown:
                raise ValueError(
                    "ProviderToolSearchMiddleware: searchable_tools references tool(s) not "
                    f"bound to the model: {', '.join(unknown)}"
                )
        if not any(self._deferred(t) for t in tools):
            return request
        supported = ", ".join(sorted(_SERVER_TOOL_SEARCH_TOOLS))
        provider = _get_model_provider(request.model, getattr(request, "runtime", None))
        if provider is None:
            raise ValueError(
                "ProviderToolSearchMiddleware could not determine the provider for model "
                f"{type(request.model).__name__!r}; server-side tool search supports: "
                f"{supported}"
            )
        if provider not in _SERVER_TOOL_SEARCH_TOOLS:
            raise ValueError(
                "ProviderToolSearchMiddleware requires a provider with server-side tool "
                f"search, but got {provider!r}; supported providers: {supported}"
            )
        if isinstance(getattr(type(request.model), "_provider", None), str):
            raise ValueError(
                f"ProviderToolSearchMiddleware: ironloop's {type(request.model).__name__} "
                "does not send deferred tools yet; use LangChain's ChatAnthropic / "
                "ChatOpenAI for provider tool search, or leave the tools undeferred"
            )
        bound = [
            t.model_copy(update={"extras": {**(_extras(t) or {}), "defer_loading": True}})
            if self._deferred(t)
            else t
            for t in tools
        ]
        return request.override(tools=[*bound, dict(_SERVER_TOOL_SEARCH_TOOLS[provider])])
