"""LangChain 1.5 behaviours of the agent middleware and tools: the fallback's clean-up of
provider cache settings, ``Tool.invoke`` with a tool call, the check of tools a
``wrap_model_call`` hook adds, and the summary middleware's trigger handling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest

from ironloop import InjectedToolCallId, Tool, create_agent, tool
from ironloop.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ironloop.middleware import (
    AgentMiddleware,
    ModelFallbackMiddleware,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
)
from ironloop.models import AnthropicChat, OpenAIChat, ScriptedChatModel
from ironloop.types import Command

MARK = {"type": "ephemeral"}


def _marked_request() -> ModelRequest:
    """A request an Anthropic caching middleware has marked everywhere, plus an OpenAI
    cache key and a Fireworks affinity header."""
    return ModelRequest(
        model="anthropic:claude-sonnet-4-5",
        system_message=SystemMessage(
            content=[{"type": "text", "text": "p", "cache_control": MARK}]
        ),
        messages=[
            HumanMessage(
                content=[
                    {"type": "text", "text": "q", "metadata": {"src": "u", "cache_control": MARK}}
                ]
            )
        ],
        tools=[
            {
                "name": "t",
                "input_schema": {},
                "cache_control": MARK,
                "extras": {"cache_control": MARK},
            }
        ],
        model_settings={
            "temperature": 0.1,
            "cache_control": MARK,
            "prompt_cache_key": "thread-1",
            "extra_headers": {"X-Session-Affinity": "thread-1", "X-Request-ID": "r1"},
        },
    )


def _attempts(fallback: Any) -> list[ModelRequest]:
    """The requests a fallback middleware sends when the first call fails."""
    seen: list[ModelRequest] = []

    def handler(req: ModelRequest) -> ModelResponse:
        seen.append(req)
        if len(seen) == 1:
            raise RuntimeError("primary down")
        return ModelResponse(result=[AIMessage(content="ok")])

    ModelFallbackMiddleware(fallback).wrap_model_call(_marked_request(), handler)
    return seen


def test_fallback_to_another_provider_drops_its_cache_settings() -> None:
    first, second = _attempts("openai:gpt-4o-mini")
    assert "cache_control" in first.model_settings  # the first try is untouched
    assert second.model == "openai:gpt-4o-mini"
    # OpenAI takes the cache key, not Anthropic's markers nor Fireworks' header.
    assert second.model_settings == {
        "temperature": 0.1,
        "prompt_cache_key": "thread-1",
        "extra_headers": {"X-Request-ID": "r1"},
    }
    assert second.system_message is not None
    assert second.system_message.content == [{"type": "text", "text": "p"}]
    assert second.messages[0].content == [{"type": "text", "text": "q", "metadata": {"src": "u"}}]
    assert second.tools == [{"name": "t", "input_schema": {}, "extras": None}]


def test_fallback_to_anthropic_keeps_its_markers() -> None:
    _, second = _attempts("anthropic:claude-haiku-4-5")
    assert second.model_settings["cache_control"] == MARK
    assert "prompt_cache_key" not in second.model_settings
    assert second.system_message is not None
    assert second.system_message.content[0]["cache_control"] == MARK
    assert second.tools[0]["cache_control"] == MARK


@tool
def plan(items: list[str], call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Keeps a plan."""
    return Command(
        update={"plan": items, "messages": [ToolMessage(content="ok", tool_call_id=call_id)]}
    )


@tool
def add(a: int, b: int) -> dict[str, int]:
    """Adds."""
    return {"sum": a + b}


def test_tool_invoke_takes_arguments_or_a_tool_call() -> None:
    assert add.invoke({"a": 1, "b": 2}) == {"sum": 3}
    answer = add.invoke({"type": "tool_call", "name": "add", "args": {"a": 1, "b": 2}, "id": "c1"})
    assert isinstance(answer, ToolMessage)
    assert (answer.content, answer.tool_call_id, answer.name) == ('{"sum": 3}', "c1", "add")
    # A Command is the tool's answer as it is, the call's id injected.
    out = plan.invoke({"type": "tool_call", "name": "plan", "args": {"items": ["x"]}, "id": "c2"})
    assert isinstance(out, Command)
    assert out.update["messages"][0].tool_call_id == "c2"


def test_tool_invoke_checks_the_arguments() -> None:
    with pytest.raises(ValueError, match=r"^1 validation error for add\n"):
        add.invoke({"a": 1, "b": "two"})
    with pytest.raises(TypeError, match="injected"):
        plan.invoke({"items": ["x"]})  # no tool call: nothing to take the call id from


async def test_tool_ainvoke() -> None:
    answer = await add.ainvoke(
        {"type": "tool_call", "name": "add", "args": {"a": 2, "b": 2}, "id": "c"}
    )
    assert answer.content == '{"sum": 4}'


def test_a_tool_added_by_a_model_hook_that_nothing_runs_is_refused() -> None:
    extra = Tool(
        "extra", "Not given to the agent.", func=lambda: "x", parameters={"type": "object"}
    )

    class AddsATool(AgentMiddleware):
        def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
            return handler(request.override(tools=[*request.tools, extra]))

    agent = create_agent(ScriptedChatModel(["hi"]), tools=[add], middleware=[AddsATool()])
    with pytest.raises(
        ValueError, match=r"(?s)Unknown tools: \['extra'\].*Registered tools: \['add'\]"
    ):
        agent.invoke({"messages": [HumanMessage(content="go")]})


class _Profiled(ScriptedChatModel):
    """A model with LangChain's profile: a 100-token input window."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.profile: dict[str, Any] | None = {"max_input_tokens": 100}


def test_summary_counts_anthropic_tokens_shorter() -> None:
    text = [HumanMessage(content="a" * 12)]
    openai = SummarizationMiddleware(
        OpenAIChat("gpt-4o-mini", api_key="k"), trigger=("messages", 5)
    )
    anthropic = SummarizationMiddleware(
        AnthropicChat("claude-haiku-4-5", api_key="k"), trigger=("messages", 5)
    )
    assert (openai.token_counter(text), anthropic.token_counter(text)) == (6, 7)


def test_summary_trigger_is_a_copy_and_checked_as_langchain_does() -> None:
    clause: dict[str, Any] = {"tokens": 1000}
    trigger: list[Any] = [clause]
    m = SummarizationMiddleware(ScriptedChatModel([]), trigger=trigger)
    clause["messages"] = 1
    trigger.append(("messages", 1))
    assert m.trigger == [{"tokens": 1000}]
    for bad, message in [
        ({"messages": True}, "messages trigger value must be numeric"),
        ({"fraction": "x"}, "Fraction trigger values must be numeric"),
        ({"tokens": 10.5}, "tokens trigger values must be integers"),
        ({"size": 1}, "Unsupported trigger metric"),
    ]:
        with pytest.raises(ValueError, match=message):
            SummarizationMiddleware(ScriptedChatModel([]), trigger=bad)


def test_summary_fraction_is_read_from_the_profile_at_each_check() -> None:
    model = _Profiled(["summary"])
    m = SummarizationMiddleware(
        model, trigger=[("fraction", 0.5), ("messages", 4)], keep=("messages", 1)
    )
    messages = [HumanMessage(content="x" * 400)]
    assert m._triggered(messages)  # ~103 tokens: over half the window
    model.profile = None  # the window is no longer known: the fraction cannot be met
    assert not m._triggered(messages)
    assert m._triggered(messages * 4)  # the message count still triggers


def _turn(total_tokens: int, provider: str | None = "openai") -> list[Any]:
    meta = {"model_provider": provider} if provider else {}
    usage = {"input_tokens": 0, "output_tokens": total_tokens, "total_tokens": total_tokens}
    return [
        HumanMessage(content="x" * 40),
        AIMessage(content="y" * 40, response_metadata=meta, usage_metadata=usage),
    ]


def test_token_estimate_is_calibrated_by_reported_usage() -> None:
    from ironloop.middleware.summarization import count_tokens_approximately as count

    assert count(_turn(100)) == 26  # 2 x (3 + 40 / 4): no scaling unless asked
    # The provider reported more than the estimate: scaled up, by at most 1.25.
    assert count(_turn(100), use_usage_metadata_scaling=True) == 33
    assert count(_turn(29), use_usage_metadata_scaling=True) == 29
    # Less than the estimate, or no provider named: the estimate stands.
    assert count(_turn(10), use_usage_metadata_scaling=True) == 26
    assert count(_turn(100, provider=None), use_usage_metadata_scaling=True) == 26


def test_summary_triggers_on_the_calibrated_count_and_cuts_on_the_plain_one() -> None:
    m = SummarizationMiddleware(
        ScriptedChatModel(["s"]), trigger=("tokens", 30), keep=("tokens", 13)
    )
    assert m._triggered(_turn(100))  # 33 calibrated
    assert not m._triggered(_turn(10))  # 26
    assert m._partial_token_counter(_turn(100)) == 26


def test_a_langchain_model_is_bound_with_output_tools_as_tool_objects() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage as LCAIMessage
    from langchain_core.tools import BaseTool
    from pydantic import BaseModel

    from ironloop.agents.structured_output import ToolStrategy

    class Weather(BaseModel):
        """The weather."""

        temperature: int

    bound: list[list[str]] = []

    class Recording(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            bound.append([t.name for t in tools if isinstance(t, BaseTool)])
            return self

    call = {"name": "Weather", "args": {"temperature": 20}, "id": "w1"}
    model = Recording(messages=iter([LCAIMessage(content="", tool_calls=[call])]))
    agent = create_agent(model, tools=[], response_format=ToolStrategy(Weather))
    out = agent.invoke({"messages": [HumanMessage(content="weather?")]})
    assert out["structured_response"] == Weather(temperature=20)
    assert bound == [["Weather"]]
