"""``create_agent(response_format=...)``'s strategies, as LangChain 1.x's
``langchain.agents.structured_output``: ``ToolStrategy`` (an artificial tool call),
``ProviderStrategy`` (the provider's native JSON-schema output), ``AutoStrategy`` (what
a bare schema becomes) and the errors a wrong structured output raises."""

from ironloop._structured_output import (
    AutoStrategy,
    MultipleStructuredOutputsError,
    ProviderStrategy,
    ResponseFormat,
    StructuredOutputError,
    StructuredOutputValidationError,
    ToolStrategy,
)

__all__ = [
    "AutoStrategy",
    "MultipleStructuredOutputsError",
    "ProviderStrategy",
    "ResponseFormat",
    "StructuredOutputError",
    "StructuredOutputValidationError",
    "ToolStrategy",
]
