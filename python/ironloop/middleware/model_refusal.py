"""``ModelRefusalMiddleware`` (LangChain 1.5's): a model's explicit refusal (a
``refusal`` content block) raised as ``ModelRefusalError`` instead of being taken as
the final answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ironloop._structured_output import StructuredOutputValidationError
from ironloop.errors import ModelError
from ironloop.middleware.types import AgentMiddleware, ModelRequest, ModelResponse

__all__ = ["ModelRefusalError", "ModelRefusalMiddleware"]

try:  # With langchain-core installed, its class: what LangChain code catches.
    from langchain_core.exceptions import ModelRefusalError
except ImportError:  # pragma: no cover - exercised without langchain-core

    class ModelRefusalError(ModelError):  # type: ignore[no-redef]
        """The model declined to produce the requested output; ``raw_message`` is
        its answer. Retrying the same request is unlikely to help."""

        def __init__(
            self,
            message: str = "Model refused to produce the requested output",
            *,
            raw_message: Any = None,
        ) -> None:
            self.raw_message = raw_message
            super().__init__(message)


def _refusal(message: Any) -> dict[str, Any] | None:
    """The message's first ``refusal`` block (standard content blocks when the
    message has them, else its list content), or ``None``."""
    blocks = getattr(message, "content_blocks", None)
    if blocks is None:
        content = getattr(message, "content", None)
        blocks = content if isinstance(content, list) else []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "refusal":
            return block
    return None


def _raise_if_refused(message: Any) -> None:
    block = _refusal(message)
    if block is None:
        return
    text = "Model refused to produce the requested output"
    category = (block.get("extras") or {}).get("category")
    if category:
        text += f" (category={category!r})"
    if block.get("refusal"):
        text += f": {block['refusal']}"
    raise ModelRefusalError(text, raw_message=message)


def _checked(response: ModelResponse) -> ModelResponse:
    for message in response.result:
        _raise_if_refused(message)
    return response


class ModelRefusalMiddleware(AgentMiddleware):
    """Raises ``ModelRefusalError`` when the model's answer holds a refusal block
    (also when structured output failed because the model refused). List it after
    ``ModelFallbackMiddleware`` so that the fallback model is tried on a refusal.
    Streamed text may already have been sent when the refusal is seen; refusals are
    not guessed from text, nor retried.

    Example:
        >>> ModelRefusalMiddleware().name
        'ModelRefusalMiddleware'
    """

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[Any], Any]) -> Any:
        try:
            response = handler(request)
        except StructuredOutputValidationError as e:
            _raise_if_refused(e.ai_message)
            raise
        return _checked(response)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        try:
            response = await handler(request)
        except StructuredOutputValidationError as e:
            _raise_if_refused(e.ai_message)
            raise
        return _checked(response)
