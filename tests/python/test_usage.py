"""A run's token usage totalled: ``invoke(..., version="v2").usage_metadata`` and
``ironloop.get_usage_metadata_callback()``, against loopback OpenAI and Anthropic
servers; parallel sub-agents included, concurrent ``ainvoke`` runs kept apart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_models_http import Loopback, an_message, oa_completion

import ironloop
from ironloop import create_react_agent, tool
from ironloop.models import AnthropicChat, OpenAIChat

# The canned answers' usage (see test_models_http): every OpenAI completion reports
# 1117 prompt / 46 completion tokens, every Anthropic message 2095 in / 503 out.
OA = {"input_tokens": 1117, "output_tokens": 46, "total_tokens": 1163}
AN = {"input_tokens": 2095, "output_tokens": 503, "total_tokens": 2598}


def times(usage: dict[str, int], n: int) -> dict[str, int]:
    return {k: v * n for k, v in usage.items()}


def counts(total: dict[str, Any]) -> dict[str, int]:
    return {k: total[k] for k in ("input_tokens", "output_tokens", "total_tokens")}


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


def tool_call(call_id: str, name: str, **args: Any) -> tuple[str, str, str]:
    return (call_id, name, json.dumps(args))


def research_agent_tool(an_server: Loopback) -> Any:
    sub = create_react_agent(
        AnthropicChat("claude-sonnet-4-5", base_url=an_server.url, api_key="sk-ant-test"),
        tools=[],
    )

    @tool
    def research(topic: str) -> str:
        """Asks the research sub-agent about a topic."""
        out = sub.invoke({"messages": [("user", topic)]})
        return str(out["messages"][-1].content)

    return research


def main_agent(oa_server: Loopback, an_server: Loopback) -> Any:
    return create_react_agent(
        OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key="sk-test"),
        tools=[research_agent_tool(an_server)],
    )


def queue_parallel_subagent_run(oa_server: Loopback, an_server: Loopback) -> None:
    oa_server.json(
        oa_completion(
            tool_calls=[
                tool_call("call_a", "research", topic="tides"),
                tool_call("call_b", "research", topic="winds"),
            ]
        )
    )
    oa_server.json(oa_completion("Both done."))
    for _ in range(2):
        an_server.json(an_message([{"type": "text", "text": "Found it."}]), delay=0.05)


def test_v2_result_totals_the_run_and_its_parallel_subagents(
    oa_server: Loopback, an_server: Loopback
) -> None:
    queue_parallel_subagent_run(oa_server, an_server)
    out = main_agent(oa_server, an_server).invoke(
        {"messages": [("user", "tides and winds?")]}, version="v2"
    )
    assert out.value["messages"][-1].content == "Both done."
    assert len(an_server.requests) == 2
    assert set(out.usage_metadata) == {"gpt-4o-mini", "claude-sonnet-4-5"}
    assert counts(out.usage_metadata["gpt-4o-mini"]) == times(OA, 2)
    assert counts(out.usage_metadata["claude-sonnet-4-5"]) == times(AN, 2)
    # The messages' own usage is untouched, and the totals are their sum.
    ai = [m for m in out.value["messages"] if m.type == "ai"]
    assert [m.usage_metadata["input_tokens"] for m in ai] == [1117, 1117]


def test_callback_totals_every_run_inside_it(oa_server: Loopback, an_server: Loopback) -> None:
    agent = main_agent(oa_server, an_server)
    with ironloop.get_usage_metadata_callback() as cb:
        queue_parallel_subagent_run(oa_server, an_server)
        agent.invoke({"messages": [("user", "first")]})
        queue_parallel_subagent_run(oa_server, an_server)
        agent.invoke({"messages": [("user", "second")]})
    assert counts(cb.usage_metadata["gpt-4o-mini"]) == times(OA, 4)
    assert counts(cb.usage_metadata["claude-sonnet-4-5"]) == times(AN, 4)
    # Outside the block nothing more is counted.
    queue_parallel_subagent_run(oa_server, an_server)
    agent.invoke({"messages": [("user", "third")]})
    assert counts(cb.usage_metadata["gpt-4o-mini"]) == times(OA, 4)


def test_v1_result_is_unchanged(oa_server: Loopback, an_server: Loopback) -> None:
    queue_parallel_subagent_run(oa_server, an_server)
    out = main_agent(oa_server, an_server).invoke({"messages": [("user", "hi")]})
    assert isinstance(out, dict) and set(out) == {"messages"}


async def test_concurrent_ainvoke_runs_are_totalled_apart(
    oa_server: Loopback, an_server: Loopback
) -> None:
    # Run A: the model answers at once (one Anthropic call). Run B: two sub-agents
    # in parallel (two OpenAI calls and two Anthropic calls). Both at once on one loop.
    direct = create_react_agent(
        AnthropicChat("claude-haiku-4-5", base_url=an_server.url, api_key="sk-ant-test"),
        tools=[],
    )
    queue_parallel_subagent_run(oa_server, an_server)
    an_server.json(an_message([{"type": "text", "text": "Direct."}]), delay=0.1)
    with ironloop.get_usage_metadata_callback() as outer:
        a, b = await asyncio.gather(
            direct.ainvoke({"messages": [("user", "a")]}, version="v2"),
            main_agent(oa_server, an_server).ainvoke({"messages": [("user", "b")]}, version="v2"),
        )
    assert set(a.usage_metadata) == {"claude-haiku-4-5"}
    assert counts(a.usage_metadata["claude-haiku-4-5"]) == AN
    assert set(b.usage_metadata) == {"gpt-4o-mini", "claude-sonnet-4-5"}
    assert counts(b.usage_metadata["gpt-4o-mini"]) == times(OA, 2)
    assert counts(b.usage_metadata["claude-sonnet-4-5"]) == times(AN, 2)
    assert counts(outer.usage_metadata["claude-haiku-4-5"]) == AN
    assert counts(outer.usage_metadata["claude-sonnet-4-5"]) == times(AN, 2)


def test_model_calls_outside_graphs_and_streams_are_counted(oa_server: Loopback) -> None:
    from test_models_http import oa_text_stream

    model = OpenAIChat("gpt-4o-mini", base_url=oa_server.url + "/v1", api_key="sk-test")
    oa_server.json(oa_completion("one"))
    oa_server.sse(oa_text_stream("t", "wo"))
    with ironloop.get_usage_metadata_callback() as cb:
        model.invoke("hi")
        chunks = list(model.stream("hi"))
    streamed = next(c.usage_metadata for c in reversed(chunks) if c.usage_metadata)
    total = cb.usage_metadata["gpt-4o-mini"]
    assert total["input_tokens"] == OA["input_tokens"] + streamed["input_tokens"]
    assert total["output_tokens"] == OA["output_tokens"] + streamed["output_tokens"]
