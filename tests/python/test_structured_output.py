"""create_agent's response_format strategies (LangChain 1.x's ToolStrategy,
ProviderStrategy and the bare schema), with scripted models and with the HTTP models
against loopback servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Union

import pytest
from pydantic import BaseModel
from test_models_http import Loopback, an_message, anthropic, oa_completion, openai

from ironloop import SqliteSaver, create_agent, tool
from ironloop.agents.structured_output import (
    MultipleStructuredOutputsError,
    ProviderStrategy,
    StructuredOutputValidationError,
    ToolStrategy,
)
from ironloop.models import ScriptedChatModel


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: int


class Forecast(TypedDict):
    city: str
    days: int


@dataclass
class Alert:
    level: str


@tool
def look(city: str) -> str:
    """Looks the weather up."""
    return f"{city}: sunny, 21"


def call(name: str, args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": name, "args": args, "id": cid}]}


def offered(model: ScriptedChatModel) -> list[list[str]]:
    return [[t["function"]["name"] for t in (tools or ())] for _, tools in model.calls]


@pytest.fixture
def server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


# --- ToolStrategy ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_tool_strategy_answers_a_bad_call_and_takes_the_next(mode: str) -> None:
    model = ScriptedChatModel(
        [
            call("look", {"city": "Paris"}, "c1"),
            call("Weather", {"city": "Paris", "celsius": "hot"}, "c2"),
            call("Weather", {"city": "Paris", "celsius": 21}, "c3"),
        ]
    )
    agent = create_agent(model, [look], response_format=ToolStrategy(Weather))
    inp = {"messages": [("user", "weather in Paris?")]}
    out = agent.invoke(inp) if mode == "invoke" else asyncio.run(agent.ainvoke(inp))
    assert out["structured_response"] == Weather(city="Paris", celsius=21)
    types = [m.type for m in out["messages"]]
    assert types == ["human", "ai", "tool", "ai", "tool", "ai", "tool"]
    error, done = out["messages"][4], out["messages"][6]
    assert error.tool_call_id == "c2"
    assert error.content.startswith("Error: Failed to parse structured output for tool 'Weather'")
    assert "celsius" in error.content and error.content.endswith("Please fix your mistakes.")
    assert done.content == "Returning structured response: city='Paris' celsius=21"
    # The output tool is offered beside the agent's tools at every call.
    assert offered(model) == [["look", "Weather"]] * 3


def test_tool_strategy_without_handling_raises() -> None:
    model = ScriptedChatModel([call("Weather", {"city": "Paris"}, "c1")])
    agent = create_agent(model, [], response_format=ToolStrategy(Weather, handle_errors=False))
    with pytest.raises(StructuredOutputValidationError, match="'Weather'") as info:
        agent.invoke({"messages": [("user", "x")]})
    assert info.value.ai_message.tool_calls[0]["id"] == "c1"


@pytest.mark.parametrize(
    ("handle", "expected"),
    [
        ("Try again.", "Try again."),
        (lambda e: f"custom: {type(e).__name__}", "custom: StructuredOutputValidationError"),
        (StructuredOutputValidationError, "Error: Failed to parse"),
    ],
)
def test_tool_strategy_handle_errors_forms(handle: Any, expected: str) -> None:
    model = ScriptedChatModel(
        [
            call("Forecast", {"city": "Oslo"}, "c1"),
            call("Forecast", {"city": "Oslo", "days": 3}, "c2"),
        ]
    )
    fmt = ToolStrategy(Forecast, handle_errors=handle, tool_message_content="Got it.")
    out = create_agent(model, [], response_format=fmt).invoke({"messages": [("user", "x")]})
    assert out["structured_response"] == {"city": "Oslo", "days": 3}
    assert out["messages"][2].content.startswith(expected)
    assert out["messages"][-1].content == "Got it."


def test_tool_strategy_handle_errors_other_type_raises() -> None:
    model = ScriptedChatModel([call("Forecast", {"city": "Oslo"}, "c1")])
    fmt = ToolStrategy(Forecast, handle_errors=KeyError)
    with pytest.raises(StructuredOutputValidationError):
        create_agent(model, [], response_format=fmt).invoke({"messages": [("user", "x")]})


def test_union_offers_one_tool_per_member_and_refuses_two_answers() -> None:
    two = {
        "content": "",
        "tool_calls": [
            {"name": "Weather", "args": {"city": "Rome", "celsius": 30}, "id": "a"},
            {"name": "Alert", "args": {"level": "red"}, "id": "b"},
        ],
    }
    model = ScriptedChatModel([two, call("Alert", {"level": "red"}, "c")])
    agent = create_agent(model, [], response_format=ToolStrategy(Union[Weather, Alert]))  # noqa: UP007
    out = agent.invoke({"messages": [("user", "x")]})
    assert out["structured_response"] == Alert(level="red")
    assert offered(model) == [["Weather", "Alert"]] * 2
    replies = out["messages"][2:4]
    assert [r.tool_call_id for r in replies] == ["a", "b"]
    assert "multiple structured responses (Weather, Alert)" in replies[0].content
    with pytest.raises(MultipleStructuredOutputsError):
        create_agent(
            ScriptedChatModel([two]),
            [],
            response_format=ToolStrategy(Union[Weather, Alert], handle_errors=False),  # noqa: UP007
        ).invoke({"messages": [("user", "x")]})


def test_output_call_beside_a_tool_call_runs_the_tool_then_ends() -> None:
    both = {
        "content": "",
        "tool_calls": [
            {"name": "look", "args": {"city": "Oslo"}, "id": "t"},
            {"name": "Weather", "args": {"city": "Oslo", "celsius": 4}, "id": "w"},
        ],
    }
    model = ScriptedChatModel([both])
    out = create_agent(model, [look], response_format=Weather).invoke({"messages": [("user", "x")]})
    assert out["structured_response"] == Weather(city="Oslo", celsius=4)
    assert len(model.calls) == 1
    assert {m.tool_call_id: m.content for m in out["messages"] if m.type == "tool"} == {
        "w": "Returning structured response: city='Oslo' celsius=4",
        "t": "Oslo: sunny, 21",
    }


def test_a_new_turn_clears_the_last_structured_response(tmp_path: Path) -> None:
    """The loop ends on a fresh structured response only: the one a thread's last
    turn left is cleared by the next model call (checkpointed in a real file)."""
    model = ScriptedChatModel(
        [
            call("Forecast", {"city": "Oslo", "days": 1}, "c1"),
            call("look", {"city": "Rome"}, "c2"),
            call("Forecast", {"city": "Rome", "days": 2}, "c3"),
        ]
    )
    with SqliteSaver.from_conn_string(str(tmp_path / "t.db")) as saver:
        agent = create_agent(model, [look], response_format=Forecast, checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t"}}
        assert agent.invoke({"messages": [("user", "a")]}, cfg)["structured_response"] == {
            "city": "Oslo",
            "days": 1,
        }
        out = agent.invoke({"messages": [("user", "b")]}, cfg)
    assert out["structured_response"] == {"city": "Rome", "days": 2}
    assert len(model.calls) == 3


def test_json_schema_dict_and_dataclass() -> None:
    schema = {
        "title": "Pick",
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    model = ScriptedChatModel([call("Pick", {"n": 7}, "c")])
    out = create_agent(model, [], response_format=schema).invoke({"messages": [("user", "x")]})
    assert out["structured_response"] == {"n": 7}
    model = ScriptedChatModel([call("Alert", {"level": "amber"}, "c")])
    out = create_agent(model, [], response_format=ToolStrategy(Alert)).invoke(
        {"messages": [("user", "x")]}
    )
    assert out["structured_response"] == Alert(level="amber")


def test_unsupported_schema_is_refused() -> None:
    with pytest.raises(ValueError, match="Unsupported schema type"):
        create_agent(ScriptedChatModel([]), [], response_format=ToolStrategy(int))


# --- ProviderStrategy and the bare schema over HTTP --------------------------------------


def test_bare_schema_with_an_openai_model_uses_its_native_output(server: Loopback) -> None:
    server.json(oa_completion(None, [("call_1", "look", '{"city": "Paris"}')]))
    server.json(oa_completion('{"city": "Paris", "celsius": 21}'))
    out = create_agent(openai(server), [look], response_format=Weather).invoke(
        {"messages": [("user", "weather in Paris?")]}
    )
    assert out["structured_response"] == Weather(city="Paris", celsius=21)
    for req in server.requests:
        body = req["body"]
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == "Weather"
        assert [t["function"]["name"] for t in body["tools"]] == ["look"]
        assert "tool_choice" not in body


def test_provider_strategy_strict_and_a_bad_answer(server: Loopback) -> None:
    server.json(oa_completion('{"city": "Paris"}'))
    agent = create_agent(openai(server), [], response_format=ProviderStrategy(Weather, strict=True))
    with pytest.raises(StructuredOutputValidationError, match="celsius"):
        agent.invoke({"messages": [("user", "x")]})
    assert server.requests[0]["body"]["response_format"]["json_schema"]["strict"] is True


def test_bare_schema_with_a_local_openai_server_uses_a_tool(server: Loopback) -> None:
    """A model name LangChain does not know to have native output: ToolStrategy."""
    from ironloop.models import OpenAIChat

    model = OpenAIChat("llama3.2", base_url=server.url + "/v1", api_key="k")
    server.json(oa_completion(None, [("c1", "Weather", json.dumps({"city": "X", "celsius": 1}))]))
    out = create_agent(model, [], response_format=Weather).invoke({"messages": [("user", "x")]})
    assert out["structured_response"] == Weather(city="X", celsius=1)
    body = server.requests[0]["body"]
    assert body["tool_choice"] == "required" and "response_format" not in body
    assert [t["function"]["name"] for t in body["tools"]] == ["Weather"]


def test_anthropic_bare_schema_uses_a_tool_and_provider_strategy_is_refused(
    server: Loopback,
) -> None:
    server.json(
        an_message(
            [
                {
                    "type": "tool_use",
                    "id": "tu",
                    "name": "Weather",
                    "input": {"city": "R", "celsius": 9},
                }
            ],
            stop="tool_use",
        )
    )
    out = create_agent(anthropic(server), [look], response_format=Weather).invoke(
        {"messages": [("user", "x")]}
    )
    assert out["structured_response"] == Weather(city="R", celsius=9)
    body = server.requests[0]["body"]
    assert body["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in body["tools"]] == ["look", "Weather"]
    agent = create_agent(anthropic(server), [], response_format=ProviderStrategy(Weather))
    with pytest.raises(ValueError, match="ToolStrategy"):
        agent.invoke({"messages": [("user", "x")]})
    assert len(server.requests) == 1


def test_langchain_model_tool_and_provider_strategies() -> None:
    import langchain_core.messages as lc
    from test_langchain import calls, fake

    model = fake(calls(("Weather", {"city": "Paris", "celsius": 21}, "s1")))
    out = create_agent(model, [look], response_format=ToolStrategy(Weather)).invoke(
        {"messages": [("user", "x")]}
    )
    assert out["structured_response"] == Weather(city="Paris", celsius=21)
    (_, kw), *_ = model.received
    assert [t["function"]["name"] for t in kw["tools"]] == ["look", "Weather"]

    model = fake(lc.AIMessage('{"city": "Oslo", "celsius": 3}', id="r"))
    out = create_agent(model, [look], response_format=ProviderStrategy(Weather)).invoke(
        {"messages": [("user", "x")]}
    )
    assert out["structured_response"] == Weather(city="Oslo", celsius=3)
    (_, kw), *_ = model.received
    assert kw["response_format"]["json_schema"]["name"] == "Weather"
