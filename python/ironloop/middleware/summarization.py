"""``SummarizationMiddleware`` (LangChain 1.x's): compacts a long conversation into a
summary before the model call, in the checkpointed state itself."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ironloop.graph import REMOVE_ALL_MESSAGES
from ironloop.messages import HumanMessage, RemoveMessage
from ironloop.middleware._model_type import model_type
from ironloop.middleware.types import AgentMiddleware, run_sync
from ironloop.models import init_model

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


def count_tokens_approximately(
    messages: Sequence[Any],
    *,
    chars_per_token: float = 4.0,
    use_usage_metadata_scaling: bool = False,
) -> int:
    """About ``chars_per_token`` characters a token, plus a few tokens a message
    (LangChain's estimate): enough to decide when to compact.

    ``use_usage_metadata_scaling``: calibrate the estimate with what the provider
    reported. When every AI message names the same ``model_provider`` (in its
    ``response_metadata``), the count is scaled by the last reported
    ``usage_metadata["total_tokens"]`` over the estimate up to that message, by a
    factor kept between 1 and 1.25 (as langchain-core's counter)."""
    total = 0
    providers: set[Any] = set()
    reported: tuple[int, int] | None = None  # (reported total, estimate up to it)
    for m in messages:
        total += 3 + math.ceil(len(m.text) / chars_per_token)
        for c in getattr(m, "tool_calls", None) or ():
            size = len(json.dumps(c.get("args", {}), default=str)) + len(c["name"])
            total += math.ceil(size / chars_per_token)
        if use_usage_metadata_scaling and m.type == "ai":
            providers.add((getattr(m, "response_metadata", None) or {}).get("model_provider"))
            usage = getattr(m, "usage_metadata", None) or {}
            if isinstance(usage.get("total_tokens"), int):
                reported = (usage["total_tokens"], total)
    if len(messages) > 1 and reported and reported[1] > 0 and len(providers) == 1:
        if None not in providers:
            total = math.ceil(total * min(1.25, max(1.0, reported[0] / reported[1])))
    return total


#: Characters a token for Claude models (LangChain's figure, measured against
#: Anthropic's token-counting API): their tokens are shorter than OpenAI's.
_ANTHROPIC_CHARS_PER_TOKEN = 3.3


def _default_counter(model: Any) -> Callable[..., int]:
    """The approximate counter tuned to ``model``'s provider and calibrated by the
    provider's reported usage, as LangChain's."""
    if (model_type(model) or "").startswith("anthropic-chat"):
        return functools.partial(
            count_tokens_approximately,
            use_usage_metadata_scaling=True,
            chars_per_token=_ANTHROPIC_CHARS_PER_TOKEN,
        )
    return functools.partial(count_tokens_approximately, use_usage_metadata_scaling=True)


#: ``{"tokens": N, "messages": M}``: every threshold met (AND); a list of triggers is
#: met when any one is (OR).
TriggerClause = dict[str, float]

_METRICS = ("messages", "tokens", "fraction")


def _size(value: Any, what: str) -> ContextSize:
    """A checked ``(kind, n)``, with LangChain's messages for a bad one."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise ValueError(
            f"{what} must be ('messages', n), ('tokens', n) or ('fraction', f); got {value!r}"
        )
    kind, n = value
    if kind not in _METRICS:
        raise ValueError(f"Unsupported context size type {kind} for {what}.")
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise ValueError(f"{kind} {what} value must be numeric, got {n!r}")
    if kind == "fraction" and not 0 < n <= 1:
        raise ValueError(f"Fractional {what} values must be between 0 and 1, got {n}.")
    if kind != "fraction" and n <= 0:
        raise ValueError(f"{what} thresholds must be greater than 0, got {n}.")
    return value  # type: ignore[no-any-return]


def _clause(value: Any) -> TriggerClause:
    """One trigger (a ``(kind, n)`` tuple or a ``{kind: n}`` dict) as a clause (a copy),
    checked with LangChain's messages."""
    if isinstance(value, tuple):
        kind, n = _size(value, "trigger")
        return {kind: n}
    if not isinstance(value, dict):
        raise TypeError(f"Unsupported trigger item type: {type(value)}")
    if not value:
        raise ValueError(
            "trigger clause must specify at least one of 'tokens', 'messages', 'fraction'"
        )
    for kind, n in value.items():
        if kind not in _METRICS:
            raise ValueError(f"Unsupported trigger metric: {kind!r}")
        if isinstance(n, bool):  # an int, but never a threshold
            raise ValueError(f"{kind} trigger value must be numeric, got {n!r}")
        if kind == "fraction" and not isinstance(n, (int, float)):
            raise ValueError(f"Fraction trigger values must be numeric, got {n!r}")
        if kind != "fraction" and not isinstance(n, int):
            raise ValueError(f"{kind} trigger values must be integers, got {n!r}")
        _size((kind, n), "trigger")
    return dict(value)


def _copied(trigger: Any) -> Any:
    """``trigger`` as given, its lists and dicts copied: the caller changing them later
    does not change the middleware."""
    if isinstance(trigger, list):
        return [_copied(t) for t in trigger]
    return dict(trigger) if isinstance(trigger, dict) else trigger


def _clauses(trigger: Any) -> list[TriggerClause]:
    if trigger is None:
        return []
    if isinstance(trigger, (tuple, dict)):
        return [_clause(trigger)]
    if isinstance(trigger, list):
        return [_clause(t) for t in trigger]
    raise TypeError(f"Unsupported trigger type: {type(trigger)}")


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
        trigger: ContextSize | TriggerClause | list[ContextSize | TriggerClause] | None = None,
        keep: ContextSize = ("messages", 20),
        token_counter: Callable[[Sequence[Any]], int] = count_tokens_approximately,
        summary_prompt: str = DEFAULT_SUMMARY_PROMPT,
        trim_tokens_to_summarize: int | None = 4000,
        summarizer: Any = None,
        **deprecated: Any,
    ) -> None:
        super().__init__()
        unknown = set(deprecated) - {"max_tokens_before_summary", "messages_to_keep"}
        if unknown:
            raise TypeError(
                f"SummarizationMiddleware() got unexpected keyword arguments {sorted(unknown)}"
            )
        if "max_tokens_before_summary" in deprecated:
            warnings.warn(
                "max_tokens_before_summary is deprecated. Use trigger=('tokens', value) instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            if trigger is None and deprecated["max_tokens_before_summary"] is not None:
                trigger = ("tokens", deprecated["max_tokens_before_summary"])
        if "messages_to_keep" in deprecated:
            warnings.warn(
                "messages_to_keep is deprecated. Use keep=('messages', value) instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            if keep == ("messages", 20):
                keep = ("messages", deprecated["messages_to_keep"])
        self.model = init_model(model) if isinstance(model, str) else model
        # trigger=None never summarizes (LangChain's default); a dict is one clause of
        # thresholds all met, a list any one of its items.
        self.trigger = _copied(trigger)
        self._clauses = _clauses(self.trigger)
        self.keep = _size(keep, "keep")
        # ("fraction", f) is a share of the model's input window, as in LangChain, read
        # from its profile at each check (``_get_profile_limits``); a model without one
        # is refused here, not mid-run.
        fractions = any("fraction" in c for c in self._clauses) or self.keep[0] == "fraction"
        if fractions and self._get_profile_limits() is None:
            raise ValueError(
                "Model profile information is required to use fractional token limits, and "
                "is unavailable for the specified model: give it profile={'max_input_tokens': "
                "N}, or use ('tokens', N) instead"
            )
        if summarizer is None and "{messages}" not in summary_prompt:
            raise ValueError("summary_prompt must contain '{messages}'")
        # Who writes the summary: a model (the prompt's answer) or a function / runnable
        # given the messages (its result is the summary).
        if isinstance(summarizer, str):
            summarizer = init_model(summarizer)
        self.summarizer = summarizer
        # Whether to summarize is judged on the whole conversation, calibrated by the
        # reported usage; where to cut and what to trim on parts of it, where that
        # usage (of the whole) does not apply.
        self._partial_token_counter: Callable[..., int] = token_counter
        if token_counter is count_tokens_approximately:
            token_counter = _default_counter(self.model)
            self._partial_token_counter = functools.partial(
                token_counter, use_usage_metadata_scaling=False
            )
        self.token_counter = token_counter
        self.summary_prompt = summary_prompt
        self.trim_tokens_to_summarize = trim_tokens_to_summarize

    def _get_profile_limits(self) -> int | None:
        """The model's input window in tokens (its profile's ``max_input_tokens``), or
        ``None`` when it has no profile: what a ``("fraction", f)`` is a share of."""
        return _max_input_tokens(self.model)

    @staticmethod
    def _absolute(size: ContextSize | tuple[str, float], limit: int | None) -> tuple[str, int]:
        """``size`` in messages or tokens (a fraction of ``limit`` as tokens; of no
        window, no size: ``("tokens", -1)``)."""
        kind, n = size
        if kind == "fraction":
            return "tokens", -1 if limit is None else max(int(limit * n), 1)
        return kind, int(n)

    def _triggered(self, messages: Sequence[Any]) -> bool:
        tokens: list[int] = []
        limit: list[int | None] = []

        def met(kind: str, n: float) -> bool:
            if kind == "messages":
                return len(messages) >= n
            if kind == "fraction":
                if not limit:
                    limit.append(self._get_profile_limits())
                kind, n = self._absolute((kind, n), limit[0])
                if n < 0:  # no window known now: this clause cannot be met
                    return False
            if not tokens:
                tokens.append(self.token_counter(messages))
            return tokens[0] >= n

        return any(all(met(k, n) for k, n in clause.items()) for clause in self._clauses)

    def _cutoff(self, messages: Sequence[Any]) -> int:
        """Where the kept messages start: ``keep`` from the end, moved earlier past
        ToolMessages so an AI message stays with its tool results."""
        kind, n = self._absolute(self.keep, self._get_profile_limits())
        if n < 0:
            return 0  # no window known now: nothing is summarized
        if kind == "messages":
            cut = max(len(messages) - n, 0)
        else:
            cut = len(messages)
            while cut > 0 and self._partial_token_counter(messages[cut - 1 :]) <= n:
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

    def _trimmed(self, old: list[Any]) -> list[Any]:
        if self.trim_tokens_to_summarize is not None:
            while len(old) > 1 and self._partial_token_counter(old) > self.trim_tokens_to_summarize:
                old = old[1:]  # the newest of the old messages matter most
        return old

    def _prompt(self, old: list[Any]) -> list[Any]:
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

    def _writer(self, old: list[Any]) -> tuple[Any, Any]:
        """Who writes the summary of ``old`` and what it is given: the summary model
        (``summarizer`` when it is a chat model, else ``model``) the prompt, or a
        ``summarizer`` function / runnable the messages themselves."""
        old = self._trimmed(old)
        s = self.summarizer
        if s is None or _is_chat_model(s):
            return init_model(self.model if s is None else s), self._prompt(old)
        return s, old

    def _update(self, summary: Any, kept: list[Any]) -> dict[str, Any]:
        if hasattr(summary, "text"):  # a model's answer
            text = summary.text.strip()
        elif isinstance(summary, str):
            text = summary.strip()
        else:
            raise TypeError(
                f"`summarizer` must return a str, got {type(summary).__name__} (from "
                f"{self.summarizer!r})"
            )
        return {
            "messages": [
                RemoveMessage(id=REMOVE_ALL_MESSAGES),
                HumanMessage(
                    content=SUMMARY_PREFIX + text, additional_kwargs={"lc_source": "summarization"}
                ),
                *kept,
            ]
        }

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        plan = self._plan(state)
        if plan is None:
            return None
        writer, given = self._writer(plan[0])
        if hasattr(writer, "invoke"):
            summary = writer.invoke(given, **_own_call(writer))
        elif inspect.iscoroutinefunction(writer):
            summary = run_sync(writer(given))
        else:
            summary = writer(given)
        return self._update(summary, plan[1])

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        plan = self._plan(state)
        if plan is None:
            return None
        writer, given = self._writer(plan[0])
        if hasattr(writer, "ainvoke"):
            summary = await writer.ainvoke(given, **_own_call(writer))
        elif hasattr(writer, "invoke"):
            summary = await asyncio.to_thread(writer.invoke, given, **_own_call(writer))
        elif inspect.iscoroutinefunction(writer):
            summary = await writer(given)
        else:
            summary = await asyncio.to_thread(writer, given)
        return self._update(summary, plan[1])


def _own_call(writer: Any) -> dict[str, Any]:
    """A LangChain runnable's summary call is the middleware's own: tagged internal and
    ``nostream``, so its tokens stay off the ``messages`` stream (ironloop's models
    are not streamed from inside a hook)."""
    if type(writer).__module__.startswith("ironloop."):
        return {}
    try:
        from langchain_core.runnables import Runnable
    except ImportError:
        return {}
    if not isinstance(writer, Runnable):
        return {}
    from ironloop.middleware.internal_call_transformer import internal_call_config

    return {"config": internal_call_config("summarization")}


def _is_chat_model(obj: Any) -> bool:
    """Whether a ``summarizer`` is a chat model (prompted) rather than a function or
    runnable (given the messages): ironloop's models and langchain-core's."""
    if type(obj).__module__.startswith("ironloop."):
        return True
    try:
        from langchain_core.language_models import BaseChatModel
    except ImportError:
        return False
    return isinstance(obj, BaseChatModel)
