"""Schema-only tools: latent tools (Tool.from_schema), compose_schema, and an agent
driven through structured output (tool_calling="schema")."""

from __future__ import annotations

import json
from typing import TypedDict

import pytest

from ironloop import Tool, ToolNode, compose_schema, create_react_agent, tool
from ironloop._ironloop import _json_schema_errors
from ironloop.errors import ModelError
from ironloop.messages import AIMessage
from ironloop.models import ScriptedChatModel

RECALL = {
    "type": "function",
    "function": {
        "name": "recall",
        "description": "Recalls a fact about a topic.",
        "parameters": {
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
    },
}


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def test_latent_tool_result_is_what_the_model_wrote_in_output():
    recall = Tool.from_schema(RECALL)
    assert recall.name == "recall"
    assert recall.parameters["required"] == ["topic", "_output"]
    ai = AIMessage(
        content="",
        tool_calls=[
            {"name": "recall", "args": {"topic": "sky", "_output": "blue"}, "id": "c1"},
            {"name": "recall", "args": {"topic": "sea"}, "id": "c2"},
        ],
    )
    out = ToolNode([recall]).invoke({"messages": [ai]})["messages"]
    assert [m.status for m in out] == ["success", "error"]
    assert out[0].content == "blue"
    assert "_output" in out[1].content, "a latent call without its result names what is missing"


@pytest.mark.parametrize(
    "schema",
    [
        RECALL,
        RECALL["function"],
        {"name": "recall", "description": "d", "input_schema": RECALL["function"]["parameters"]},
    ],
)
def test_from_schema_accepts_openai_plain_and_anthropic_shapes(schema):
    t = Tool.from_schema(schema)
    assert t.name == "recall"
    assert t.parameters["properties"]["topic"] == {"type": "string"}


def test_from_schema_rejects_bad_input():
    with pytest.raises(ValueError, match="name"):
        Tool.from_schema({"parameters": {"type": "object"}})
    with pytest.raises(TypeError, match="object"):
        Tool.from_schema({"name": "x", "parameters": {"type": "array"}})
    with pytest.raises(ValueError, match="_output"):
        Tool.from_schema(
            {"name": "x", "parameters": {"type": "object", "properties": {"_output": {}}}}
        )


def test_compose_schema_accepts_valid_calls_and_rejects_invalid_ones():
    schema = compose_schema([add, Tool.from_schema(RECALL)])
    ok = {"calls": [{"name": "add", "args": {"a": 1, "b": 2}}], "output": None}
    assert _json_schema_errors(schema, ok) == []
    assert _json_schema_errors(schema, {"calls": [], "output": "done"}) == []
    bad_args = {"calls": [{"name": "add", "args": {"a": "x", "b": 2}}], "output": None}
    assert _json_schema_errors(schema, bad_args)
    unknown = {"calls": [{"name": "nope", "args": {}}], "output": None}
    assert _json_schema_errors(schema, unknown)
    assert _json_schema_errors(schema, {"calls": []}), "output is required"


def test_agent_driven_through_structured_output():
    model = ScriptedChatModel(
        [
            json.dumps(
                {
                    "calls": [
                        {"name": "add", "args": {"a": 2, "b": 3}},
                        {"name": "recall", "args": {"topic": "sky", "_output": "blue"}},
                    ],
                    "output": None,
                }
            ),
            json.dumps({"calls": [], "output": "5, and the sky is blue"}),
        ]
    )
    agent = create_react_agent(model, [add, Tool.from_schema(RECALL)], tool_calling="schema")
    out = agent.invoke({"messages": [("user", "2+3? sky?")]})
    msgs = out["messages"]
    assert [m.type for m in msgs] == ["human", "ai", "tool", "tool", "ai"]
    assert [m.content for m in msgs[2:4]] == ["5", "blue"]
    assert msgs[-1].content == "5, and the sky is blue"
    # The model was asked for the composed schema, with no native tools.
    _messages, tools = model.calls[0]
    assert tools is None


def test_schema_agent_with_a_structured_final_answer():
    class Answer(TypedDict):
        total: int

    model = ScriptedChatModel(
        [
            json.dumps({"calls": [{"name": "add", "args": {"a": 2, "b": 3}}], "output": None}),
            json.dumps({"calls": [], "output": {"total": 5}}),
        ]
    )
    agent = create_react_agent(model, [add], tool_calling="schema", response_format=Answer)
    out = agent.invoke({"messages": [("user", "2+3?")]})
    assert out["structured_response"] == {"total": 5}


def test_schema_agent_rejects_an_answer_that_breaks_the_schema():
    model = ScriptedChatModel([json.dumps({"calls": [{"name": "add", "args": {"a": "two"}}]})])
    agent = create_react_agent(model, [add], tool_calling="schema")
    with pytest.raises(ModelError, match="schema"):
        agent.invoke({"messages": [("user", "2+3?")]})


def test_tool_calling_must_be_known():
    with pytest.raises(ValueError, match="tool_calling"):
        create_react_agent(ScriptedChatModel(["x"]), [add], tool_calling="xml")


def test_the_readme_example_runs(capsys):
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme[readme.index("## Schema-only tools") :]
    start = section.index("```python") + len("```python")
    code = section[start : section.index("```", start)]
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "5, and the sky is blue"
