"""``ContextEditingMiddleware`` and ``ClearToolUsesEdit`` (LangChain 1.5's): once the
conversation passes a token count, older tool results sent to the model are replaced
by a placeholder. The edit is made on the model call's copy of the messages; the
checkpointed state keeps them whole."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol

from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware._hook_bases import RequestRewriter
from ironloop.middleware.summarization import count_tokens_approximately
from ironloop.middleware.types import ModelRequest

__all__ = ["ClearToolUsesEdit", "ContextEdit", "ContextEditingMiddleware"]

DEFAULT_TOOL_PLACEHOLDER = "[cleared]"

TokenCounter = Callable[[Sequence[Any]], int]


class ContextEdit(Protocol):
    """An edit of the messages a model call is about to get (in place)."""

    def apply(self, messages: list[Any], *, count_tokens: TokenCounter) -> None: ...


def _copied(message: Any, **changes: Any) -> Any:
    """``message`` with ``changes`` (langchain-core's ``model_copy`` when it has it)."""
    if hasattr(message, "model_copy"):
        return message.model_copy(update=changes)
    fields = {k: getattr(message, k) for k in ("content", "id", "name") if hasattr(message, k)}
    if isinstance(message, ToolMessage):
        fields.update(tool_call_id=message.tool_call_id, status=message.status)
    else:
        fields["tool_calls"] = message.tool_calls
    fields.update({k: v for k, v in changes.items() if k in ("content", "tool_calls")})
    return type(message)(**fields)


@dataclasses.dataclass
class ClearToolUsesEdit:
    """When the messages count more than ``trigger`` tokens, replaces the content of
    tool results by ``placeholder``, oldest first, keeping the newest ``keep`` ones
    and those of ``exclude_tools``; stops once ``clear_at_least`` tokens were freed
    (``0``: clears all it may). ``clear_tool_inputs`` also empties the arguments of
    the calls whose results were cleared. A cleared message is marked in its
    ``response_metadata["context_editing"]``."""

    trigger: int = 100_000
    clear_at_least: int = 0
    keep: int = 3
    clear_tool_inputs: bool = False
    exclude_tools: Sequence[str] = ()
    placeholder: str = DEFAULT_TOOL_PLACEHOLDER

    def apply(self, messages: list[Any], *, count_tokens: TokenCounter) -> None:
        tokens = count_tokens(messages)
        if tokens <= self.trigger:
            return
        results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
        results = results[: max(len(results) - self.keep, 0)]
        excluded = set(self.exclude_tools)
        for i in results:
            message = messages[i]
            meta = dict(getattr(message, "response_metadata", None) or {})
            if meta.get("context_editing", {}).get("cleared"):
                continue
            ai = next((m for m in reversed(messages[:i]) if isinstance(m, AIMessage)), None)
            call = None
            if ai is not None:
                call = next((c for c in ai.tool_calls if c.get("id") == message.tool_call_id), None)
            if call is None or (message.name or call["name"]) in excluded:
                continue
            meta["context_editing"] = {"cleared": True, "strategy": "clear_tool_uses"}
            messages[i] = _copied(
                message, content=self.placeholder, artifact=None, response_metadata=meta
            )
            if self.clear_tool_inputs:
                messages[messages.index(ai)] = self._without_inputs(ai, message.tool_call_id)
            if self.clear_at_least > 0 and tokens - count_tokens(messages) >= self.clear_at_least:
                break

    @staticmethod
    def _without_inputs(message: Any, call_id: str) -> Any:
        calls = [
            {**c, "args": {}} if c.get("id") == call_id else dict(c) for c in message.tool_calls
        ]
        meta = dict(getattr(message, "response_metadata", None) or {})
        entry = dict(meta.get("context_editing", {}))
        entry["cleared_tool_inputs"] = sorted({*entry.get("cleared_tool_inputs", []), call_id})
        meta["context_editing"] = entry
        return _copied(message, tool_calls=calls, response_metadata=meta)


class ContextEditingMiddleware(RequestRewriter):
    """Applies ``edits`` (default: one ``ClearToolUsesEdit()``) to a copy of the
    messages of every model call. Tokens are counted by ``token_counter`` if given,
    else approximately (``token_count_method="approximate"``) or by the model's own
    ``get_num_tokens_from_messages`` (``"model"``, LangChain models).

    Example:
        >>> m = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1000, keep=1)])
        >>> m.edits[0].keep
        1
    """

    def __init__(
        self,
        *,
        edits: Iterable[ContextEdit] | None = None,
        token_count_method: Literal["approximate", "model"] = "approximate",
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__()
        if token_count_method not in ("approximate", "model"):
            raise ValueError(
                f"token_count_method must be 'approximate' or 'model'; got {token_count_method!r}"
            )
        self.edits = list(edits or (ClearToolUsesEdit(),))
        self.token_count_method = token_count_method
        self.token_counter = token_counter

    def _counter(self, request: ModelRequest) -> TokenCounter:
        if self.token_counter is not None:
            return self.token_counter
        if self.token_count_method == "approximate":
            return count_tokens_approximately
        system = [request.system_message] if request.system_message is not None else []
        model = request.model
        if not hasattr(model, "get_num_tokens_from_messages"):
            raise TypeError(
                f"token_count_method='model' needs a model that counts tokens "
                f"(get_num_tokens_from_messages); {type(model).__name__} does not: use "
                "'approximate' or give token_counter="
            )
        return lambda messages: model.get_num_tokens_from_messages(
            [*system, *messages], request.tools
        )

    def _rewrite(self, request: ModelRequest) -> ModelRequest:
        if not request.messages:
            return request
        count = self._counter(request)
        messages = copy.deepcopy(list(request.messages))
        for edit in self.edits:
            edit.apply(messages, count_tokens=count)
        return request.override(messages=messages)
