"""``ModelFallbackMiddleware`` (LangChain 1.x's): other models to try when the model
call fails."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ironloop.errors import GraphInterrupt, ParentCommand
from ironloop.middleware.types import AgentMiddleware, ModelRequest

__all__ = ["ModelFallbackMiddleware"]


class ModelFallbackMiddleware(AgentMiddleware):
    """When the model call raises, tries ``first_model``, then each of
    ``additional_models``, in order (models or ``"provider:model"`` strings); the first
    answer wins. When every one fails, the last failure is raised, with the earlier ones
    chained.

    Example:
        >>> ModelFallbackMiddleware("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5").models
        ['openai:gpt-4o-mini', 'anthropic:claude-sonnet-4-5']
    """

    def __init__(self, first_model: Any, *additional_models: Any) -> None:
        self.models = [first_model, *additional_models]

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return handler(request)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as first:
            last: Exception = first
        for model in self.models:
            try:
                return handler(request.override(model=model))
            except (GraphInterrupt, ParentCommand):
                raise
            except Exception as e:
                e.__context__ = last
                last = e
        raise last

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return await handler(request)
        except (GraphInterrupt, ParentCommand):
            raise
        except Exception as first:
            last: Exception = first
        for model in self.models:
            try:
                return await handler(request.override(model=model))
            except (GraphInterrupt, ParentCommand):
                raise
            except Exception as e:
                e.__context__ = last
                last = e
        raise last
