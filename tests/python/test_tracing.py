"""OpenTelemetry spans (run, step, model call, tool call) read back with the SDK's
``InMemorySpanExporter``: GenAI attributes, and parents across parallel tool calls and
the sub-agents those tools run, against loopback OpenAI and Anthropic servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_models_http import Loopback, an_message, oa_completion

from ironloop import _tracing, create_react_agent, tool
from ironloop.models import AnthropicChat, OpenAIChat

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """ironloop's tracer from a provider of the test's own (the global provider stays
    the no-op one, so other tests run untraced)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(_tracing, "_tracer", provider.get_tracer("ironloop"))
    yield exporter
    provider.shutdown()


@pytest.fixture
def oa_server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


@pytest.fixture
def an_server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def parent_of(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next(s for s in spans if s.context.span_id == span.parent.span_id)


def call(call_id: str, name: str, **args: Any) -> tuple[str, str, str]:
    return (call_id, name, json.dumps(args))


def agents(oa_server: Loopback, an_server: Loopback) -> Any:
    sub = create_react_agent(
        AnthropicChat("claude-sonnet-4-5", base_url=an_server.url, api_key=ANTHROPIC_KEY),
        tools=[],
        name="researcher",
    )

    @tool
    def research(topic: str) -> str:
        """Asks the research sub-agent."""
        return str(sub.invoke({"messages": [("user", topic)]})["messages"][-1].content)

    @tool
    def broken(x: int) -> str:
        """Always fails."""
        raise ValueError("broken on purpose")

    return create_react_agent(
        OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY),
        tools=[research, broken],
        name="planner",
    )


def test_spans_and_parents_across_parallel_tool_calls_and_subagents(
    spans: InMemorySpanExporter, oa_server: Loopback, an_server: Loopback
) -> None:
    oa_server.json(
        oa_completion(
            tool_calls=[
                call("call_a", "research", topic="tides"),
                call("call_b", "research", topic="winds"),
                call("call_c", "broken", x=1),
            ]
        )
    )
    oa_server.json(oa_completion("Done."))
    for _ in range(2):
        an_server.json(an_message([{"type": "text", "text": "Found."}]), delay=0.05)

    out = agents(oa_server, an_server).invoke({"messages": [("user", "go")]})
    assert out["messages"][-1].content == "Done."
    got = spans.get_finished_spans()

    # One root: the planner's run.
    roots = [s for s in got if s.parent is None]
    assert [s.name for s in roots] == ["invoke_agent planner"]
    root = roots[0]
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "planner"

    # Its steps are its children; each model call sits in a step.
    steps = [s for s in by_name(got, "step ") if parent_of(s, got) is root]
    assert len(steps) >= 3
    chats = by_name(got, "chat gpt-4o-mini")
    assert len(chats) == 2
    for c in chats:
        assert parent_of(c, got) in steps
        assert c.attributes["gen_ai.operation.name"] == "chat"
        assert c.attributes["gen_ai.provider.name"] == "openai"
        assert c.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert c.attributes["gen_ai.usage.input_tokens"] == 1117
        assert c.attributes["gen_ai.usage.output_tokens"] == 46

    # The three parallel tool calls: one span each, all under the same tools step.
    tools = by_name(got, "execute_tool ")
    assert sorted(t.attributes["gen_ai.tool.call.id"] for t in tools) == [
        "call_a",
        "call_b",
        "call_c",
    ]
    tool_step = parent_of(tools[0], got)
    assert tool_step in steps and all(parent_of(t, got) is tool_step for t in tools)
    broken = next(t for t in tools if t.attributes["gen_ai.tool.name"] == "broken")
    assert broken.attributes["error.type"] == "ValueError"
    assert broken.attributes["gen_ai.operation.name"] == "execute_tool"

    # Each research call's sub-agent run is a child of that very tool call's span,
    # with its own steps and its Anthropic call below them.
    subs = by_name(got, "invoke_agent researcher")
    assert len(subs) == 2
    research = {
        t.context.span_id: t for t in tools if t.attributes["gen_ai.tool.name"] == "research"
    }
    assert {parent_of(s, got).context.span_id for s in subs} == set(research)  # type: ignore[union-attr]
    for sub in subs:
        sub_steps = [s for s in by_name(got, "step ") if parent_of(s, got) is sub]
        assert sub_steps
        chat = [c for c in by_name(got, "chat claude") if parent_of(c, got) in sub_steps]
        assert len(chat) == 1
        assert chat[0].attributes["gen_ai.provider.name"] == "anthropic"
        assert chat[0].attributes["gen_ai.usage.input_tokens"] == 2095
        assert chat[0].attributes["gen_ai.usage.output_tokens"] == 503

    # No span carries the keys, the prompt or the tool arguments.
    text = json.dumps([dict(s.attributes or {}) for s in got])
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, "tides", "winds"):
        assert secret not in text


async def test_async_run_and_async_tools_keep_their_parents(
    spans: InMemorySpanExporter, oa_server: Loopback, an_server: Loopback
) -> None:
    sub = create_react_agent(
        AnthropicChat("claude-sonnet-4-5", base_url=an_server.url, api_key=ANTHROPIC_KEY),
        tools=[],
        name="researcher",
    )

    @tool
    async def research(topic: str) -> str:
        """Asks the research sub-agent."""
        out = await sub.ainvoke({"messages": [("user", topic)]})
        return str(out["messages"][-1].content)

    agent = create_react_agent(
        OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY),
        tools=[research],
        name="planner",
    )
    oa_server.json(
        oa_completion(
            tool_calls=[
                call("call_a", "research", topic="a"),
                call("call_b", "research", topic="b"),
            ]
        )
    )
    oa_server.json(oa_completion("Done."))
    for _ in range(2):
        an_server.json(an_message([{"type": "text", "text": "Found."}]), delay=0.05)
    await agent.ainvoke({"messages": [("user", "go")]})
    got = spans.get_finished_spans()
    assert [s.name for s in got if s.parent is None] == ["invoke_agent planner"]
    tools = by_name(got, "execute_tool research")
    assert len(tools) == 2
    subs = by_name(got, "invoke_agent researcher")
    assert {parent_of(s, got).context.span_id for s in subs} == {  # type: ignore[union-attr]
        t.context.span_id for t in tools
    }


def test_a_failing_run_and_a_failing_model_call_carry_error_type(
    spans: InMemorySpanExporter, oa_server: Loopback
) -> None:
    agent = create_react_agent(
        OpenAIChat(
            "gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY, max_retries=0
        ),
        tools=[],
    )
    oa_server.json({"error": {"message": "bad request"}}, status=400)
    with pytest.raises(Exception) as raised:
        agent.invoke({"messages": [("user", "go")]})
    got = spans.get_finished_spans()
    kind = type(raised.value).__qualname__
    (chat,) = by_name(got, "chat ")
    assert chat.attributes["error.type"] == kind
    (run,) = by_name(got, "invoke_agent ")
    assert run.attributes["error.type"] == kind
    failed_steps = [s for s in by_name(got, "step ") if "error.type" in (s.attributes or {})]
    assert [s.attributes["error.type"] for s in failed_steps] == [kind]


def test_stream_run_span_ends_with_the_stream(
    spans: InMemorySpanExporter, oa_server: Loopback
) -> None:
    agent = create_react_agent(
        OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY),
        tools=[],
    )
    oa_server.json(oa_completion("hi"))
    chunks = list(agent.stream({"messages": [("user", "go")]}))
    assert chunks
    got = spans.get_finished_spans()
    (run,) = by_name(got, "invoke_agent ")
    (chat,) = by_name(got, "chat ")
    assert parent_of(parent_of(chat, got), got) is run  # type: ignore[arg-type]
    assert "error.type" not in (run.attributes or {})


def test_runs_that_do_not_record_hand_the_engine_no_tracer(
    monkeypatch: pytest.MonkeyPatch, oa_server: Loopback
) -> None:
    # A provider whose sampler records nothing: the run's span is not recording, so
    # the Rust side gets no tracer and the steps call nothing.
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    provider = TracerProvider(sampler=ALWAYS_OFF)
    monkeypatch.setattr(_tracing, "_tracer", provider.get_tracer("ironloop"))
    seen: list[int] = []

    class Spy(_tracing.RunTrace):
        def step_start(self, step: int, nodes: list[str]) -> None:
            seen.append(step)
            super().step_start(step, nodes)

    monkeypatch.setattr(_tracing, "RunTrace", Spy)
    agent = create_react_agent(
        OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY),
        tools=[],
    )
    oa_server.json(oa_completion("hi"))
    agent.invoke({"messages": [("user", "go")]})
    assert seen == []


def test_no_provider_set_means_no_span_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    # opentelemetry-api installed (as here) but no provider: no tracer, no run trace.
    monkeypatch.setattr(_tracing, "_tracer", None)
    assert _tracing.tracer() is None
    assert _tracing.start_run("g") is None


_PROVIDER_LATER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ironloop import START, StateGraph, _tracing

g = StateGraph(dict)
g.add_node("n", lambda s: {"x": 1})
g.add_edge(START, "n")
app = g.compile()
app.invoke({"x": 0})
assert _tracing.tracer() is None
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # after runs without one
app.invoke({"x": 0})
print(sorted({s.name.split()[0] for s in exporter.get_finished_spans()}))
"""

_PROVIDER_FROM_ENV = """
from ironloop import START, StateGraph, _tracing

g = StateGraph(dict)
g.add_node("n", lambda s: {"x": 1})
g.add_edge(START, "n")
g.compile().invoke({"x": 0})
print(type(_tracing.tracer()).__module__)
"""


def _python(code: str, **env: str) -> str:
    """``code``'s output, run by a new interpreter (the global provider is set once a
    process) in this environment without ``OTEL_PYTHON_TRACER_PROVIDER``, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if k != "OTEL_PYTHON_TRACER_PROVIDER"}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_provider_set_by_code_after_untraced_runs_traces_the_next_run() -> None:
    # Untraced runs do not read the environment each time; a provider set later by code
    # is still seen by the next run: its run span and its step's.
    assert _python(_PROVIDER_LATER) == "['invoke_agent', 'step']"


def test_a_provider_the_environment_names_traces_the_first_run() -> None:
    # OpenTelemetry's start-up configuration: the SDK's provider by its entry point.
    got = _python(_PROVIDER_FROM_ENV, OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider")
    assert got.startswith("opentelemetry.sdk.trace"), got


def test_the_step_hooks_are_called_when_recording(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch, oa_server: Loopback
) -> None:
    # The counterpart of the test above: the same spy sees the steps when recording.
    seen: list[int] = []

    class Spy(_tracing.RunTrace):
        def step_start(self, step: int, nodes: list[str]) -> None:
            seen.append(step)
            super().step_start(step, nodes)

    monkeypatch.setattr(_tracing, "RunTrace", Spy)
    agent = create_react_agent(
        OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY),
        tools=[],
    )
    oa_server.json(oa_completion("hi"))
    agent.invoke({"messages": [("user", "go")]})
    assert seen == [0, 1]
