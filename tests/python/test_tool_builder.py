"""Tools built step by step (agentsm's style): ``Tool(name, description).param(...)
.param_opt(...).call(fn)``, with JSON Schema type names, checked like every tool."""

from __future__ import annotations

from typing import Any

import pytest
from agent_support import call, turn

from ironloop import Tool, create_agent
from ironloop.messages import HumanMessage, ToolMessage
from ironloop.models import ScriptedChatModel


def _search() -> Tool:
    return (
        Tool("search", "Search the web.")
        .param("query", "string", "The query")
        .param_opt("limit", "integer", "Max results")
        .call(lambda query, limit=3: f"{limit} results for {query}")
    )


def test_the_builder_writes_the_schema() -> None:
    t = _search()
    assert t.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The query"},
            "limit": {"type": "integer", "description": "Max results"},
        },
        "required": ["query"],
    }
    assert t.to_openai()["function"]["description"] == "Search the web."


def test_a_built_tool_runs_in_an_agent_with_its_arguments_checked() -> None:
    model = ScriptedChatModel(
        [
            turn(
                call("search", "c1", query="rust"),
                call("search", "c2", query="go", limit=1),
                call("search", "c3", limit="many"),
            ),
            "done",
        ]
    )
    out = create_agent(model, tools=[_search()]).invoke({"messages": [HumanMessage("find")]})
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["c1"].content == "3 results for rust"
    assert results["c2"].content == "1 results for go"
    # A missing required argument and a wrong type: an error result, the tool unrun.
    assert results["c3"].status == "error"
    assert "query" in str(results["c3"].content)


async def test_a_built_tool_takes_an_async_function() -> None:
    async def fetch(url: str) -> str:
        return f"<{url}>"

    t = Tool("fetch", "Fetch a page.").param("url", "string").call(fetch)
    assert await t.ainvoke({"url": "x"}) == "<x>"


def test_mistakes_in_building_are_named() -> None:
    with pytest.raises(ValueError, match="use a JSON Schema type: string, integer"):
        Tool("t", "d").param("n", "int")
    with pytest.raises(ValueError, match="declared twice"):
        Tool("t", "d").param("n", "string").param_opt("n", "string")
    unfinished = Tool("t", "d").param("n", "string")
    with pytest.raises(TypeError, match=r"finish it with \.call\(fn\)"):
        create_agent(ScriptedChatModel(["x"]), tools=[unfinished])
    bad: Any = 3
    with pytest.raises(TypeError, match="call\\(\\) takes a function"):
        Tool("t", "d").call(bad)
