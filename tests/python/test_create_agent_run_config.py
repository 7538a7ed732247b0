"""``create_agent``'s runs start from LangChain's config (``recursion_limit`` 9,999,
``ls_integration`` metadata, ``lc_agent_name`` for a named agent), under the caller's
own; ``create_react_agent``'s do not."""

from __future__ import annotations

from typing import Any

import pytest
from agent_support import call, turn

from ironloop import create_agent, create_react_agent, tool
from ironloop.errors import GraphRecursionError
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import ToolRuntime

SEEN: list[dict[str, Any]] = []


@tool
def look(x: int, runtime: ToolRuntime) -> str:
    """Looks at the run's config."""
    SEEN.append(dict(runtime.config))
    return str(x)


def model() -> ScriptedChatModel:
    return ScriptedChatModel([turn(call("look", "c1", x=5)), "done"])


def test_a_run_starts_from_langchains_config() -> None:
    SEEN.clear()
    create_agent(model(), [look]).invoke({"messages": [("user", "hi")]})
    (config,) = SEEN
    assert config["recursion_limit"] == 9_999
    assert config["metadata"]["ls_integration"] == "langchain_create_agent"
    assert "lc_agent_name" not in config["metadata"]


def test_the_callers_config_wins_and_its_metadata_is_merged() -> None:
    SEEN.clear()
    agent = create_agent(model(), [look], name="scout")
    agent.invoke({"messages": [("user", "hi")]}, {"recursion_limit": 7, "metadata": {"mine": 1}})
    (config,) = SEEN
    assert config["recursion_limit"] == 7
    assert config["metadata"] == {
        "ls_integration": "langchain_create_agent",
        "lc_agent_name": "scout",
        "mine": 1,
    }


def test_the_recursion_limit_bounds_the_loop() -> None:
    looping = ScriptedChatModel(lambda messages: turn(call("look", f"c{len(messages)}", x=1)))
    agent = create_agent(looping, [look])
    with pytest.raises(GraphRecursionError):
        agent.invoke({"messages": [("user", "hi")]}, {"recursion_limit": 5})


def test_create_react_agent_keeps_langgraphs_config() -> None:
    SEEN.clear()
    create_react_agent(model(), [look]).invoke({"messages": [("user", "hi")]})
    (config,) = SEEN
    assert "recursion_limit" not in config
    assert "ls_integration" not in (config.get("metadata") or {})
