"""``LLMToolEmulator`` (LangChain 1.5's): a model writes what chosen tools would
return, instead of running them — for testing an agent against tools that are slow,
costly or not written yet."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from ironloop.messages import HumanMessage, ToolMessage
from ironloop.middleware._hook_bases import ToolCallSelector
from ironloop.middleware.internal_call_transformer import internal_call_config
from ironloop.middleware.types import ToolCallRequest
from ironloop.models import init_model

__all__ = ["LLMToolEmulator"]

_DEFAULT_EMULATOR_MODEL = "anthropic:claude-sonnet-4-5-20250929"


class LLMToolEmulator(ToolCallSelector[list[Any]]):
    """Answers calls of the chosen tools with a model's made-up result.

    ``tools`` (names or tool objects) are the tools emulated: all of them when
    ``None``, none when empty; the others run. ``model`` (a model or
    ``"provider:model"``) writes each result from the tool's name, description and
    arguments; leaving it out uses LangChain's default
    (``anthropic:claude-sonnet-4-5-20250929``), which is deprecated: pass a model.

    Example:
        >>> from ironloop.models import ScriptedChatModel
        >>> LLMToolEmulator(tools=["get_weather"], model=ScriptedChatModel(["sunny"])).tools_to_emulate
        {'get_weather'}
    """

    def __init__(self, *, tools: list[Any] | None = None, model: Any = None) -> None:
        super().__init__()
        self.emulate_all = tools is None
        self.tools_to_emulate: set[str] = {t if isinstance(t, str) else t.name for t in tools or ()}
        if model is None:
            warnings.warn(
                f"LLMToolEmulator's default model ({_DEFAULT_EMULATOR_MODEL!r}) is "
                "deprecated and will be removed in a future release. Pass `model` "
                "explicitly instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            model = _DEFAULT_EMULATOR_MODEL
        self.model = init_model(model, temperature=1) if isinstance(model, str) else model

    def _select(self, request: ToolCallRequest) -> list[Any] | None:
        """The emulation prompt, or ``None`` when this call runs the real tool."""
        call = request.tool_call
        if not (self.emulate_all or call["name"] in self.tools_to_emulate):
            return None
        description = request.tool.description if request.tool else "No description available"
        return [
            HumanMessage(
                "You are emulating a tool call for testing purposes.\n\n"
                f"Tool: {call['name']}\nDescription: {description}\n"
                f"Arguments: {call['args']}\n\n"
                "Generate a realistic response that this tool would return given these "
                "arguments.\nReturn ONLY the tool's output, no explanation or preamble. "
                "Introduce variation into your responses."
            )
        ]

    @staticmethod
    def _message(response: Any, request: ToolCallRequest) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(content=response.content, tool_call_id=call["id"], name=call["name"])

    def _handle(
        self, request: ToolCallRequest, handler: Callable[[Any], Any], prompt: list[Any]
    ) -> Any:
        return self._message(
            self.model.invoke(prompt, config=internal_call_config("tool_emulation")), request
        )

    async def _ahandle(
        self, request: ToolCallRequest, handler: Callable[[Any], Awaitable[Any]], prompt: list[Any]
    ) -> Any:
        return self._message(
            await self.model.ainvoke(prompt, config=internal_call_config("tool_emulation")), request
        )
