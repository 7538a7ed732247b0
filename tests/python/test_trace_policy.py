"""``TracePolicy``: what the callback runs of an agent's middleware hooks record —
the middleware's own policy, else ``configure_trace_policy``'s default; the hook
itself still gets and returns the real values."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from ironloop import create_agent
from ironloop.middleware import (
    AgentMiddleware,
    AutoModeMiddleware,
    ModelRouterMiddleware,
    ToolErrorMiddleware,
    TracePolicy,
    configure_trace_policy,
    omit_payload,
)
from ironloop.models import ScriptedChatModel


class Recorder(BaseCallbackHandler):
    """The inputs and outputs of the chain runs, by run name."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.inputs: dict[str, Any] = {}
        self.outputs: dict[str, Any] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, **kw: Any) -> None:
        self.names[run_id] = kw.get("name") or ""
        self.inputs[self.names[run_id]] = inputs

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kw: Any) -> None:
        self.outputs[self.names[run_id]] = outputs


class Seen(AgentMiddleware):
    def __init__(self) -> None:
        self.messages: list[Any] = []

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.messages = list(state["messages"])
        return None


class Private(Seen):
    trace_policy = TracePolicy(process_inputs=omit_payload, process_outputs=lambda _: "hidden")


def _traced(middleware: AgentMiddleware) -> Recorder:
    recorder = Recorder()
    agent = create_agent(ScriptedChatModel(["done"]), [], middleware=[middleware])
    agent.invoke({"messages": [("user", "my secret")]}, {"callbacks": [recorder]})
    return recorder


@pytest.fixture(autouse=True)
def _no_default() -> Any:
    yield
    configure_trace_policy(None)


def test_hook_run_records_its_input_without_a_policy() -> None:
    recorder = _traced(Seen())
    assert "my secret" in repr(recorder.inputs["Seen.before_model"])


def test_middleware_policy_omits_the_payload_but_the_hook_sees_it() -> None:
    middleware = Private()
    recorder = _traced(middleware)
    assert recorder.inputs["Private.before_model"] == {}
    assert recorder.outputs["Private.before_model"] == "hidden"
    assert middleware.messages[0].content == "my secret"  # the hook got the real state


def test_configured_default_applies_unless_the_middleware_has_its_own() -> None:
    configure_trace_policy(TracePolicy(process_inputs=lambda _: {"redacted": True}))
    assert _traced(Seen()).inputs["Seen.before_model"] == {"redacted": True}
    assert _traced(Private()).inputs["Private.before_model"] == {}


def test_builtins_omit_their_inputs_as_langchains() -> None:
    for cls in (ToolErrorMiddleware, AutoModeMiddleware, ModelRouterMiddleware):
        policy = cls.trace_policy
        assert policy is not None and policy.process_inputs is omit_payload, cls
    assert omit_payload({"request": {"foo": "bar"}}) == {}
