"""Chat models. ``ScriptedChatModel`` replays a script, for tests and offline demos.

Any object with ``invoke(messages, tools=None, tool_choice=None)`` (and optionally
``ainvoke``) works as a model: it receives ironloop messages and tools as OpenAI-format
dicts, and returns an ``AIMessage`` or a ``{"role": "assistant", ...}`` dict.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Callable, Union

from ironloop._ironloop import AIMessage, BaseMessage, _coerce_message, _coerce_messages
from ironloop.errors import ModelError

__all__ = ["ScriptedChatModel"]

Response = Union[AIMessage, str, dict, Callable[[list[BaseMessage]], Any]]


def _to_ai(response: Any) -> AIMessage:
    if isinstance(response, AIMessage):
        # A fresh id: the same scripted message may be replayed more than once.
        return response.model_copy(update={"id": None})  # type: ignore[no-any-return]
    if isinstance(response, str):
        return AIMessage(content=response)
    if isinstance(response, dict):
        d = dict(response)
        d.setdefault("role", "assistant")
        msg = _coerce_message(d)
        if not isinstance(msg, AIMessage):
            raise ModelError(f"a scripted response must be an assistant message, got {d['role']!r}")
        return msg
    raise ModelError(
        f"a scripted response must be an AIMessage, a str or a dict, got {type(response).__name__}"
    )


class ScriptedChatModel:
    """Replays ``responses`` in order, one per call; raises ``ModelError`` when the
    script runs out. A response may be an ``AIMessage``, a string (a final answer), a
    dict (``{"content": ..., "tool_calls": [...]}``), or a function of the messages
    that returns one of those. ``responses`` may also be a single such function, called
    for every turn.

    Each call is recorded in ``.calls`` as ``(messages, tools)``.

    Example:
        >>> from ironloop.models import ScriptedChatModel
        >>> m = ScriptedChatModel([
        ...     {"content": "", "tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}}]},
        ...     "The sum is 3.",
        ... ])
        >>> m.invoke([("user", "1+2?")]).tool_calls[0]["name"]
        'add'
        >>> m.invoke([]).content
        'The sum is 3.'
    """

    def __init__(self, responses: Sequence[Response] | Callable[[list[BaseMessage]], Any]):
        if callable(responses):
            self._fn: Callable[[list[BaseMessage]], Any] | None = responses
            self._script: list[Response] = []
        else:
            self._fn = None
            self._script = list(responses)
        self._next = 0
        self._lock = threading.Lock()
        self.calls: list[tuple[list[BaseMessage], list[dict[str, Any]] | None]] = []

    def invoke(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AIMessage:
        msgs: list[BaseMessage] = _coerce_messages(messages)
        with self._lock:
            self.calls.append((msgs, tools))
            if self._fn is not None:
                response: Any = self._fn
            else:
                if self._next >= len(self._script):
                    raise ModelError(
                        f"ScriptedChatModel ran out of responses after {len(self._script)} "
                        "call(s): add more responses to the script"
                    )
                response = self._script[self._next]
                self._next += 1
        if callable(response) and not isinstance(response, (AIMessage, dict, str)):
            response = response(msgs)
        return _to_ai(response)

    async def ainvoke(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AIMessage:
        return self.invoke(messages, tools, tool_choice, **kwargs)

    def stream(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Iterator[AIMessage]:
        """Yields the next response in chunks: its text word by word (all chunks share
        the response's id), then its tool calls in a last chunk."""
        full = self.invoke(messages, tools, tool_choice, **kwargs)
        words = re.findall(r"\S+\s*", full.text) or [""]
        for i, w in enumerate(words):
            last = i == len(words) - 1
            yield AIMessage(
                content=w,
                tool_calls=[dict(c) for c in full.tool_calls] if last else None,
                id=full.id,
            )

    async def astream(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessage]:
        for chunk in self.stream(messages, tools, tool_choice, **kwargs):
            yield chunk

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script) - self._next
