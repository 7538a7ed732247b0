"""``PIIMiddleware``'s stream transformer: what a ``stream_events(version="v3")``
consumer sees of an agent run is redacted as it streams (model deltas, tool events,
state snapshots), values split across deltas included; ``"block"`` fails the stream
before any of the value is shown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from ironloop import create_agent, tool
from ironloop.middleware import PIIMiddleware
from ironloop.middleware._pii_stream import PIIStreamTransformer
from ironloop.middleware._redaction import PIIDetectionError, RedactionRule
from ironloop.models import ScriptedChatModel

EMAIL = "alice@example.com"


def _delta(text: str, index: int = 0, run: str = "r") -> dict[str, Any]:
    payload = {"event": "content-block-delta", "index": index, "delta": {"type": "text-delta", "text": text}}  # fmt: skip
    return {"type": "event", "method": "messages", "params": {"namespace": [], "timestamp": 0, "data": (payload, {"run_id": run})}}  # fmt: skip


def _finish(text: str, index: int = 0, run: str = "r") -> dict[str, Any]:
    payload = {"event": "content-block-finish", "index": index, "content": {"type": "text", "text": text}}  # fmt: skip
    return {"type": "event", "method": "messages", "params": {"namespace": [], "timestamp": 0, "data": (payload, {"run_id": run})}}  # fmt: skip


def _transformer(strategy: str = "redact", lookback: int = 128) -> PIIStreamTransformer:
    rule = RedactionRule(pii_type="email", strategy=strategy).resolve()  # type: ignore[arg-type]
    return PIIStreamTransformer(rule=rule, lookback=lookback)


def test_transformer_installed_only_for_output_or_tool_results() -> None:
    assert PIIMiddleware("email").transformers == ()
    assert len(PIIMiddleware("email", apply_to_output=True).transformers) == 1
    assert len(PIIMiddleware("email", apply_to_tool_results=True).transformers) == 1


def test_value_split_across_deltas_never_shown() -> None:
    t = _transformer(lookback=24)  # longer than the address
    events = [_delta("write to ali"), _delta("ce@exam"), _delta("ple.com today, thanks a lot"), _finish(f"write to {EMAIL} today, thanks a lot")]  # fmt: skip
    for e in events:
        t.process(e)
    shown = "".join(e["params"]["data"][0]["delta"]["text"] for e in events[:-1])
    assert "ali" not in shown  # the held tail covered the address until it was whole
    assert shown == "write to [REDACTED_EM"  # the rest waits for the block's end
    assert events[-1]["params"]["data"][0]["content"]["text"] == "write to [REDACTED_EMAIL] today, thanks a lot"  # fmt: skip


def test_buffers_are_per_model_run() -> None:
    t = _transformer(lookback=64)
    a1, b1, a2 = _delta("mail alice", run="a"), _delta("mail bob", run="b"), _delta("@example.com now", run="a")  # fmt: skip
    for e in (a1, b1, a2):
        t.process(e)
    t.process(_finish(f"mail {EMAIL} now", run="a"))
    assert ("b", 0) in t._buffers and ("a", 0) not in t._buffers


def test_block_raises_when_the_value_completes() -> None:
    t = _transformer("block")
    first = _delta("reach me at alice")
    t.process(first)
    assert first["params"]["data"][0]["delta"]["text"] == ""  # held back
    with pytest.raises(PIIDetectionError):
        t.process(_delta("@example.com"))


def test_agent_stream_redacts_messages_tool_events_and_values() -> None:
    @tool
    def lookup(user: str) -> str:
        """Looks a user up."""
        return f"{user}: {EMAIL}"

    def agent() -> Any:
        call = {"name": "lookup", "args": {"user": EMAIL}}
        model = ScriptedChatModel([{"content": "", "tool_calls": [call]}, f"found {EMAIL}"])
        pii = PIIMiddleware("email", apply_to_output=True, apply_to_tool_results=True)
        return create_agent(model, [lookup], middleware=[pii])

    run = agent().stream_events({"messages": [HumanMessage("who?")]}, version="v3")
    events = list(run)
    assert EMAIL not in repr(events)
    assert "[REDACTED_EMAIL]" in repr(events)
    methods = {e["method"] for e in events}
    assert {"messages", "tools", "values"} <= methods
    # The state keeps what the hooks made of it; the tool saw the real argument.
    out = agent().invoke({"messages": [HumanMessage("who?")]})
    assert out["messages"][1].tool_calls[0]["args"] == {"user": EMAIL}


def test_block_strategy_fails_every_projection_without_showing_the_value() -> None:
    def agent() -> Any:
        model = GenericFakeChatModel(messages=iter([AIMessage(f"Write to {EMAIL}.")]))
        pii = PIIMiddleware("email", strategy="block", apply_to_output=True)
        return create_agent(model, [], middleware=[pii])

    async def main() -> str:
        shown = ""
        run = await agent().astream_events({"messages": [HumanMessage("hi")]}, version="v3")
        async for msg in run.messages:
            async for piece in msg.text:
                shown += piece
        return shown

    shown = ""
    with pytest.raises(PIIDetectionError):
        shown = asyncio.run(main())
    assert "alice" not in shown

    run = agent().stream_events({"messages": [HumanMessage("hi")]}, version="v3")
    with pytest.raises(PIIDetectionError):
        list(run.values)


def _values(messages: list[Any]) -> dict[str, Any]:
    state = {"messages": messages}
    return {"type": "event", "method": "values", "params": {"namespace": [], "timestamp": 0, "data": state}}  # fmt: skip


def test_a_snapshot_checks_only_messages_new_or_changed_since_the_last() -> None:
    from ironloop.middleware._redaction import ResolvedRedactionRule, resolve_detector

    checked: list[str] = []
    email = resolve_detector("email", None)

    def counting(text: str) -> Any:
        checked.append(text)
        return email(text)

    t = PIIStreamTransformer(rule=ResolvedRedactionRule("email", "redact", counting))
    first = HumanMessage(f"mail {EMAIL}", id="m1")
    reply = AIMessage("sure", id="m2")
    shown = []
    for snapshot in ([first], [first, reply], [first, reply], [first.model_copy(), reply]):
        event = _values(snapshot)
        t.process(event)
        shown.append([m.content for m in event["params"]["data"]["messages"]])
    # Each message was checked once, however many snapshots repeated it (an equal
    # copy under the same id counts as unchanged).
    assert checked == [f"mail {EMAIL}", "sure"]
    assert shown[-1] == ["mail [REDACTED_EMAIL]", "sure"]
    assert all(s[0] == "mail [REDACTED_EMAIL]" for s in shown)
    # A message changed under the same id is checked again; the state keeps its own.
    edited = HumanMessage(f"now {EMAIL}", id="m1")
    event = _values([edited, reply])
    t.process(event)
    assert event["params"]["data"]["messages"][0].content == "now [REDACTED_EMAIL]"
    assert checked[-1] == f"now {EMAIL}" and edited.content == f"now {EMAIL}"
    # A message with nothing to redact stays the snapshot's own object.
    assert event["params"]["data"]["messages"][1] is reply
