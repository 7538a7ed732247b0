"""``PIIMiddleware`` (LangChain 1.5's): finds personal data — email addresses, credit
card numbers (Luhn-checked), IP and MAC addresses, URLs, or any type a regex or a
function detects — in the last user message before the model sees it, in the tool
results of the last turn, and in the model's answer, and blocks, redacts, masks or
hashes it. The built-in detectors run in Rust (``src/pii.rs``). With
``apply_to_output`` or ``apply_to_tool_results`` it also redacts what a
``stream_events(version="v3")`` consumer sees as it streams (``_pii_stream``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from ironloop.messages import AIMessage, HumanMessage, ToolMessage
from ironloop.middleware._pii_stream import PIIStreamTransformer
from ironloop.middleware._redaction import (
    PIIDetectionError,
    PIIMatch,
    RedactionRule,
    RedactionStrategy,
    ResolvedRedactionRule,
    apply_strategy,
    detect_credit_card,
    detect_email,
    detect_ip,
    detect_mac_address,
    detect_url,
)
from ironloop.middleware.types import AgentMiddleware, hook_config

__all__ = [
    "PIIDetectionError",
    "PIIMatch",
    "PIIMiddleware",
    "detect_credit_card",
    "detect_email",
    "detect_ip",
    "detect_mac_address",
    "detect_url",
]

Content = str | list[Any]

#: LangChain 1.5's name of the stream transformer.
_PIIStreamTransformer = PIIStreamTransformer


class PIIMiddleware(AgentMiddleware):
    """Handles one type of personal data in the conversation.

    ``pii_type`` is a built-in type (``"email"``, ``"credit_card"``, ``"ip"``,
    ``"mac_address"``, ``"url"``) or any name given with a ``detector`` (a regex, or a
    function returning ``PIIMatch`` dicts). ``strategy`` says what happens to a match:
    ``"block"`` raises ``PIIDetectionError``, ``"redact"`` writes
    ``[REDACTED_EMAIL]``, ``"mask"`` keeps the end (``****-****-****-0366``),
    ``"hash"`` writes ``<email_hash:1a2b3c4d>``. ``apply_to_input`` checks the last
    user message before each model call; ``apply_to_tool_results`` the tool results
    since the last AI message; ``apply_to_output`` the model's answer. Use one
    instance per type; several compose. Only text is rewritten: a content block list
    keeps its other blocks. With ``apply_to_output`` or ``apply_to_tool_results``,
    ``transformers`` holds a stream transformer that applies the rule to every streamed
    surface of a ``stream_events(version="v3")`` run (model deltas, tool events, state
    snapshots) before a consumer sees it; under ``"block"`` the stream fails with
    ``PIIDetectionError`` before any of the value is shown.

    Example:
        >>> m = PIIMiddleware("email", strategy="redact")
        >>> m.name
        'PIIMiddleware[email]'
        >>> from ironloop.messages import HumanMessage
        >>> out = m.before_model({"messages": [HumanMessage("mail me: a@b.io")]}, None)
        >>> out["messages"][0].content
        'mail me: [REDACTED_EMAIL]'
    """

    def __init__(
        self,
        pii_type: Literal["email", "credit_card", "ip", "mac_address", "url"] | str,
        *,
        strategy: RedactionStrategy = "redact",
        detector: Callable[[str], list[PIIMatch]] | str | None = None,
        apply_to_input: bool = True,
        apply_to_output: bool = False,
        apply_to_tool_results: bool = False,
    ) -> None:
        super().__init__()
        if strategy not in ("block", "redact", "mask", "hash"):
            raise ValueError(
                f"PIIMiddleware strategy must be 'block', 'redact', 'mask' or 'hash', "
                f"got {strategy!r}"
            )
        self.apply_to_input = apply_to_input
        self.apply_to_output = apply_to_output
        self.apply_to_tool_results = apply_to_tool_results
        self._rule: ResolvedRedactionRule = RedactionRule(
            pii_type=pii_type, strategy=strategy, detector=detector
        ).resolve()
        self.pii_type = self._rule.pii_type
        self.strategy = self._rule.strategy
        self.detector = self._rule.detector
        if apply_to_output or apply_to_tool_results:
            self.transformers = (partial(PIIStreamTransformer, rule=self._rule),)

    @property
    def name(self) -> str:
        return f"{type(self).__name__}[{self.pii_type}]"

    def _process(self, content: Content) -> tuple[Content, bool]:
        """``content`` with the rule applied to its text (a string, or the ``text`` of
        each block), and whether anything changed."""
        if isinstance(content, str):
            matches = self.detector(content)
            return (
                (apply_strategy(content, matches, self.strategy), True)
                if matches
                else (
                    content,
                    False,
                )
            )
        blocks: list[Any] = []
        changed = False
        for block in content:
            text = block if isinstance(block, str) else block.get("text")
            if isinstance(text, str) and (matches := self.detector(text)):
                redacted = apply_strategy(text, matches, self.strategy)
                block = redacted if isinstance(block, str) else {**block, "text": redacted}
                changed = True
            blocks.append(block)
        return (blocks, True) if changed else (content, False)

    def _rewrite(self, messages: list[Any], index: int) -> bool:
        msg = messages[index]
        if not msg.content:
            return False
        content, changed = self._process(msg.content)
        if changed:
            messages[index] = msg.model_copy(update={"content": content})
        return changed

    @staticmethod
    def _last(messages: list[Any], cls: type) -> int | None:
        return next(
            (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], cls)), None
        )

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Checks the last user message (``apply_to_input``) and the tool results after
        the last AI message (``apply_to_tool_results``)."""
        if not (self.apply_to_input or self.apply_to_tool_results) or not state["messages"]:
            return None
        messages = list(state["messages"])
        changed = False
        if self.apply_to_input:
            user = self._last(messages, HumanMessage)
            if user is not None:
                changed |= self._rewrite(messages, user)
        if self.apply_to_tool_results:
            ai = self._last(messages, AIMessage)
            if ai is not None:
                for i in range(ai + 1, len(messages)):
                    if isinstance(messages[i], ToolMessage):
                        changed |= self._rewrite(messages, i)
        return {"messages": messages} if changed else None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Checks the model's last answer (``apply_to_output``)."""
        if not self.apply_to_output or not state["messages"]:
            return None
        messages = list(state["messages"])
        ai = self._last(messages, AIMessage)
        if ai is None or not self._rewrite(messages, ai):
            return None
        return {"messages": messages}

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)
