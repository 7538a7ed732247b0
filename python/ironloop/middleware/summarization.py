"""``SummarizationMiddleware`` (LangChain 1.x's): compacts a long conversation into a
summary before the model call, in the checkpointed state itself."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ironloop.graph import REMOVE_ALL_MESSAGES
from ironloop.messages import HumanMessage, RemoveMessage
from ironloop.middleware.types import AgentMiddleware

__all__ = ["SummarizationMiddleware", "count_tokens_approximately"]

DEFAULT_SUMMARY_PROMPT = """<role>
Context Extraction Assistant
</role>

<primary_objective>
Extract the most relevant context from the conversation below, so that the
conversation can continue from your summary in place of these messages.
</primary_objective>

<messages>
{messages}
</messages>

Respond ONLY with the extracted context."""

SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"

ContextSize = tuple[Literal["messages", "tokens"], int] | tuple[Literal["fraction"], float]


def count_tokens_approximately(messages: Sequence[Any]) -> int:
    """About four characters a token, plus a few tokens a message (LangChain's
    estimate): enough to decide when to compact."""
    total = 0
    for m in messages:
        total += 3 + len(m.text) // 4
        for c in getattr(m, "tool_calls", None) or ():
            total += len(json.dumps(c.get("args", {}), default=str)) // 4 + len(c["name"]) // 4
    return total


def _size(value: Any, what: str) -> ContextSize:
    ok = isinstance(value, tuple) and len(value) == 2 and not isinstance(value[1], bool)
    if ok and value[0] in ("messages", "tokens"):
        ok = isinstance(value[1], int) and value[1] >= 0
    elif ok and value[0] == "fraction":
        ok = isinstance(value[1], (int, float)) and 0 < value[1] <= 1
    else:
        ok = False
    if not ok:
        raise ValueError(
            f"{what} must be ('messages', n) or ('tokens', n) with n >= 0, or "
            f"('fraction', f) with 0 < f <= 1; got {value!r}"
        )
    return value  # type: ignore[no-any-return]


def _max_input_tokens(model: Any) -> int | None:
    """The model's ``profile["max_input_tokens"]`` (LangChain's model profiles), if it
    has one."""
    profile = getattr(model, "profile", None)
    limit = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


class SummarizationMiddleware(AgentMiddleware):
    """Before a model call, when the conversation reached ``trigger`` (``("tokens",
    N)``, ``("messages", N)`` or ``("fraction", f)`` of the model's input window, read
    from its ``profile["max_input_tokens"]``; or a list of those: any one triggers), the older
    messages are summarized by ``model`` and replaced, in the state, by one human
    message holding the summary; the newest ``keep`` (``("messages", K)`` or
    ``("tokens", N)``) stay as they are. The cut never separates an AI message's tool
    calls from their ``ToolMessage`` s (it moves earlier instead). The replacement is a
    ``RemoveMessage`` of everything plus the summary and the kept messages, so the
    checkpointed thread stays bounded however long it runs.

    Example:
        >>> from ironloop.models import ScriptedChatModel
        >>> s = SummarizationMiddleware(ScriptedChatModel(["..."]), trigger=("messages", 50))
        >>> s.keep
        ('messages', 20)
    """

    def __init__(
        self,
        model: Any,
        *,
        trigger: ContextSize | list[ContextSize] | None = None,
        keep: ContextSize = ("messages", 20),
        token_counter: Callable[[Sequence[Any]], int] = count_tokens_approximately,
        summary_prompt: str = DEFAULT_SUMMARY_PROMPT,
        trim_tokens_to_summarize: int | None = 4000,
    ) -> None:
        if trigger is None:
            raise ValueError(
                "SummarizationMiddleware needs trigger=('tokens', N) or ('messages', N)"
            )
        triggers = trigger if isinstance(trigger, list) else [trigger]
        self.trigger = [_size(t, "trigger") for t in triggers]
        self.keep = _size(keep, "keep")
        # ("fraction", f) is a share of the model's input window, as in LangChain: read
        # once from its profile (a model without one is refused here, not mid-run).
        limit = _max_input_tokens(model)
        if limit is None and any(k == "fraction" for k, _ in [*self.trigger, self.keep]):
            raise ValueError(
                "('fraction', f) needs the model's maximum input tokens, and this model "
                "has no profile={'max_input_tokens': N}: give it one, or use "
                "('tokens', N) instead"
            )
        self._trigger = [self._absolute(t, limit) for t in self.trigger]
        self._keep = self._absolute(self.keep, limit)
        if "{messages}" not in summary_prompt:
            raise ValueError("summary_prompt must contain '{messages}'")
        self.model = model
        self.token_counter = token_counter
        self.summary_prompt = summary_prompt
        self.trim_tokens_to_summarize = trim_tokens_to_summarize

    @staticmethod
    def _absolute(size: ContextSize, limit: int | None) -> tuple[str, int]:
        """``size`` in messages or tokens (a fraction of ``limit`` as tokens)."""
        kind, n = size
        if kind == "fraction":
            assert limit is not None
            return "tokens", max(int(limit * n), 1)
        return kind, int(n)

    def _triggered(self, messages: Sequence[Any]) -> bool:
        tokens: int | None = None
        for kind, n in self._trigger:
            if kind == "messages" and len(messages) >= n:
                return True
            if kind == "tokens":
                tokens = self.token_counter(messages) if tokens is None else tokens
                if tokens >= n:
                    return True
        return False

    def _cutoff(self, messages: Sequence[Any]) -> int:
        """Where the kept messages start: ``keep`` from the end, moved earlier past
        ToolMessages so an AI message stays with its tool results."""
        kind, n = self._keep
        if kind == "messages":
            cut = max(len(messages) - n, 0)
        else:
            cut = len(messages)
            while cut > 0 and self.token_counter(messages[cut - 1 :]) <= n:
                cut -= 1
        while 0 < cut < len(messages) and messages[cut].type == "tool":
            cut -= 1
        return cut

    def _plan(self, state: Any) -> tuple[list[Any], list[Any]] | None:
        messages = list(state["messages"])
        if not self._triggered(messages):
            return None
        cut = self._cutoff(messages)
        if cut <= 0:
            return None
        return messages[:cut], messages[cut:]

    def _prompt(self, old: list[Any]) -> list[Any]:
        if self.trim_tokens_to_summarize is not None:
            while len(old) > 1 and self.token_counter(old) > self.trim_tokens_to_summarize:
                old = old[1:]  # the newest of the old messages matter most
        lines = []
        for m in old:
            line = f"{m.type}: {m.text}"
            calls = getattr(m, "tool_calls", None)
            if calls:
                line += (
                    " [tool calls: "
                    + json.dumps(
                        [{"name": c["name"], "args": c["args"]} for c in calls], default=str
                    )
                    + "]"
                )
            lines.append(line)
        return [HumanMessage(content=self.summary_prompt.format(messages="\n".join(lines)))]

    @staticmethod
    def _update(summary: Any, kept: list[Any]) -> dict[str, Any]:
        text = summary.text if hasattr(summary, "text") else str(summary)
        return {
            "messages": [
                RemoveMessage(id=REMOVE_ALL_MESSAGES),
                HumanMessage(content=SUMMARY_PREFIX + text),
                *kept,
            ]
        }

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        plan = self._plan(state)
        if plan is None:
            return None
        from ironloop._create_agent import init_model

        summary = init_model(self.model).invoke(self._prompt(plan[0]))
        return self._update(summary, plan[1])

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        plan = self._plan(state)
        if plan is None:
            return None
        from ironloop._create_agent import init_model

        model = init_model(self.model)
        prompt = self._prompt(plan[0])
        summary = await model.ainvoke(prompt) if hasattr(model, "ainvoke") else model.invoke(prompt)
        return self._update(summary, plan[1])
