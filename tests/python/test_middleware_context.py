"""``ContextEditingMiddleware`` (``ClearToolUsesEdit``) and ``ModelRefusalMiddleware``."""

from __future__ import annotations

from typing import Any

import pytest
from agent_support import MODES, call, echo, run, turn

from ironloop import create_agent
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelFallbackMiddleware,
    ModelRefusalError,
    ModelRefusalMiddleware,
)
from ironloop.models import ScriptedChatModel


class Recorder:
    """A model that answers from a script and keeps the messages of each call."""

    def __init__(self, script: list[Any]) -> None:
        self.inner = ScriptedChatModel(script)
        self.calls: list[list[Any]] = []

    def invoke(self, messages: list[Any], **kw: Any) -> Any:
        self.calls.append(list(messages))
        return self.inner.invoke(messages, **kw)


@pytest.mark.parametrize("mode", MODES)
def test_old_tool_results_are_cleared_for_the_model_not_in_the_state(mode: str) -> None:
    model = Recorder(
        [
            turn(call("echo", "a", text="x" * 400)),
            turn(call("echo", "b", text="y" * 400)),
            turn(call("echo", "c", text="z" * 400)),
            "done",
        ]
    )
    edit = ClearToolUsesEdit(trigger=100, keep=1, clear_tool_inputs=True, placeholder="[gone]")
    agent = create_agent(model, [echo], middleware=[ContextEditingMiddleware(edits=[edit])])
    out = run(agent, {"messages": [("user", "go")]}, mode=mode)
    last_call = model.calls[-1]
    results = [m for m in last_call if isinstance(m, ToolMessage)]
    assert [m.content for m in results] == ["[gone]", "[gone]", "z" * 400]
    assert results[0].response_metadata["context_editing"]["cleared"] is True
    first_ai = next(m for m in last_call if isinstance(m, AIMessage))
    assert first_ai.tool_calls[0]["args"] == {}
    # The checkpointed conversation keeps every result whole.
    kept = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert kept == ["x" * 400, "y" * 400, "z" * 400]


def test_below_the_trigger_nothing_is_cleared_and_excluded_tools_never_are() -> None:
    model = Recorder([turn(call("echo", "a", text="x" * 400)), "done"])
    agent = create_agent(
        model,
        [echo],
        middleware=[
            ContextEditingMiddleware(
                edits=[ClearToolUsesEdit(trigger=10, keep=0, exclude_tools=["echo"])]
            )
        ],
    )
    agent.invoke({"messages": [("user", "go")]})
    assert [m.content for m in model.calls[-1] if isinstance(m, ToolMessage)] == ["x" * 400]
    with pytest.raises(ValueError, match="token_count_method"):
        ContextEditingMiddleware(token_count_method="exact")  # type: ignore[arg-type]


def refusal(text: str) -> AIMessage:
    return AIMessage(content=[{"type": "refusal", "refusal": text}])


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_refusal_is_raised_and_a_fallback_listed_before_catches_it(mode: str) -> None:
    agent = create_agent(
        ScriptedChatModel([refusal("no way")]), [], middleware=[ModelRefusalMiddleware()]
    )
    with pytest.raises(ModelRefusalError, match="refused to produce the requested output: no way"):
        run(agent, {"messages": [("user", "x")]}, mode=mode)
    # Without the middleware the refusal is the answer.
    plain = create_agent(ScriptedChatModel([refusal("no way")]), [])
    assert (
        plain.invoke({"messages": [("user", "x")]})["messages"][-1].content[0]["type"] == "refusal"
    )
    fallback = ScriptedChatModel(["fine"])
    agent = create_agent(
        ScriptedChatModel([refusal("no")]),
        [],
        middleware=[ModelFallbackMiddleware(fallback), ModelRefusalMiddleware()],
    )
    assert run(agent, {"messages": [("user", "x")]}, mode=mode)["messages"][-1].text == "fine"
