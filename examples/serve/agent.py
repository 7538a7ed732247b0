"""The agent `ironloop serve` serves in this example: a tool-calling agent whose model
is scripted (offline, deterministic), so the project runs with no API key.

Swap `EchoWeatherModel()` for `OpenAIChat("gpt-4o-mini")` (or any chat model) for a
real one."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

from ironloop import create_react_agent, tool
from ironloop.messages import AIMessage, AIMessageChunk


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return f"It is sunny and 21°C in {city}."


class EchoWeatherModel:
    """Asks for the weather when the user names a city ("weather in Paris"), then
    answers with the tool's result; otherwise echoes the user."""

    def invoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> AIMessage:
        return self._answer(messages, tools)

    def stream(
        self, messages: list[Any], tools: Any = None, tool_choice: Any = None
    ) -> Iterator[Any]:
        """The answer word by word (``stream_mode="messages-tuple"`` shows the tokens)."""
        answer = self._answer(messages, tools)
        if answer.tool_calls:
            yield answer
            return
        for i, word in enumerate(str(answer.content).split(" ")):
            yield AIMessageChunk(content=word if i == 0 else " " + word)

    def _answer(self, messages: list[Any], tools: Any) -> AIMessage:
        last = messages[-1]
        if getattr(last, "type", "") == "tool":
            return AIMessage(content=f"Here is what I found: {last.content}")
        text = str(getattr(last, "content", ""))
        match = re.search(r"weather in ([A-Za-z ]+)", text)
        if match and tools:
            call = {"name": "get_weather", "args": {"city": match[1].strip()},
                    "id": f"call_{uuid.uuid4().hex[:8]}"}  # fmt: skip
            return AIMessage(content="", tool_calls=[call])
        return AIMessage(content=f"You said: {text}")


graph = create_react_agent(EchoWeatherModel(), [get_weather])
