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
    with pytest.raises(TypeError, match="_output"):
        Tool.from_schema(
            {"name": "x", "parameters": {"type": "object", "properties": {"_output": "str"}}}
        )


def test_compose_schema_accepts_valid_calls_and_rejects_invalid_ones():
    schema = compose_schema([add, Tool.from_schema(RECALL)])
    ok = {"calls": [{"_tool": "add", "a": 1, "b": 2}], "output": None}
    assert _json_schema_errors(schema, ok) == []
    assert _json_schema_errors(schema, {"calls": [], "output": "done"}) == []
    bad_args = {"calls": [{"_tool": "add", "a": "x", "b": 2}], "output": None}
    assert _json_schema_errors(schema, bad_args)
    unknown = {"calls": [{"_tool": "nope"}], "output": None}
    assert _json_schema_errors(schema, unknown)
    assert _json_schema_errors(schema, {"calls": []}), "output is required"


def test_agent_driven_through_structured_output():
    model = ScriptedChatModel(
        [
            json.dumps(
                {
                    "calls": [
                        {"_tool": "add", "a": 2, "b": 3},
                        {"_tool": "recall", "topic": "sky", "_output": "blue"},
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
            json.dumps({"calls": [{"_tool": "add", "a": 2, "b": 3}], "output": None}),
            json.dumps({"calls": [], "output": {"total": 5}}),
        ]
    )
    agent = create_react_agent(model, [add], tool_calling="schema", response_format=Answer)
    out = agent.invoke({"messages": [("user", "2+3?")]})
    assert out["structured_response"] == {"total": 5}


def test_schema_agent_rejects_an_answer_that_breaks_the_schema():
    model = ScriptedChatModel([json.dumps({"calls": [{"_tool": "add", "a": "two"}]})])
    agent = create_react_agent(model, [add], tool_calling="schema")
    with pytest.raises(ModelError, match="schema"):
        agent.invoke({"messages": [("user", "2+3?")]})


def test_tool_calling_must_be_known():
    with pytest.raises(ValueError, match="tool_calling"):
        create_react_agent(ScriptedChatModel(["x"]), [add], tool_calling="xml")


def test_the_guides_example_runs(capsys):
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "docs" / "tools.md").read_text()
    section = readme[readme.index("## Schema-only tools") :]
    start = section.index("```python") + len("```python")
    code = section[start : section.index("```", start)]
    exec(compile(code, "docs/tools.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "5, and the sky is blue"


# --- an answer with both calls and an output (issue 15, item 3) ---


def test_an_answer_with_calls_and_an_output_runs_the_calls_then_ends_with_the_output():
    class Answer(TypedDict):
        total: int

    model = ScriptedChatModel(
        [json.dumps({"calls": [{"_tool": "add", "a": 2, "b": 3}], "output": {"total": 5}})]
    )
    agent = create_react_agent(model, [add], tool_calling="schema", response_format=Answer)
    out = agent.invoke({"messages": [("user", "2+3?")]})
    msgs = out["messages"]
    assert [m.type for m in msgs] == ["human", "ai", "tool", "ai"]
    assert msgs[1].tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert msgs[2].content == "5", "the call ran"
    assert json.loads(msgs[3].content) == {"total": 5}
    assert out["structured_response"] == {"total": 5}, "the output was not dropped"
    assert len(model.calls) == 1, "the model is not asked again once it gave its output"


async def test_calls_and_an_output_in_one_answer_async_and_checkpointed():
    from ironloop import MemorySaver

    model = ScriptedChatModel(
        [json.dumps({"calls": [{"_tool": "add", "a": 1, "b": 1}], "output": "two"})]
    )
    agent = create_react_agent(model, [add], tool_calling="schema", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    out = await agent.ainvoke({"messages": [("user", "1+1?")]}, cfg)
    assert [m.content for m in out["messages"][2:]] == ["2", "two"]
    saved = agent.get_state(cfg).values["messages"]
    assert json.loads(saved[1].content) == "two", "kept with the calls, in the state"


# --- typed _output, the _tool discriminator and activities (issue 15, item 2) ---

SENTIMENT = {  # the spec's own example shape
    "type": "object",
    "description": "Analyzes text sentiment",
    "properties": {
        "_tool": {"type": "string", "const": "sentimentAnalysis"},
        "text": {"type": "string", "description": "Text to analyze"},
        "_output": {
            "type": "object",
            "properties": {"sentiment": {"type": "string"}, "confidence": {"type": "number"}},
            "required": ["sentiment", "confidence"],
        },
    },
    "required": ["text"],
}


def test_spec_shaped_latent_tool_validates_its_output():
    t = Tool.from_schema(SENTIMENT)
    assert t.name == "sentimentAnalysis"
    assert t.description == "Analyzes text sentiment"
    assert "_tool" not in t.parameters["properties"]
    assert t.output_schema == SENTIMENT["properties"]["_output"]
    good = {"sentiment": "positive", "confidence": 0.99}
    ai = AIMessage(
        content="",
        tool_calls=[
            {"name": t.name, "args": {"text": "best!", "_output": good}, "id": "c1"},
            {"name": t.name, "args": {"text": "meh", "_output": {"sentiment": 1}}, "id": "c2"},
        ],
    )
    out = ToolNode([t]).invoke({"messages": [ai]})["messages"]
    assert [m.status for m in out] == ["success", "error"]
    assert json.loads(out[0].content) == good
    assert "_output" in out[1].content and "confidence" in out[1].content


def test_composed_schema_uses_the_tool_discriminator_and_keeps_defs_reachable():
    move = Tool(
        "move",
        "Moves.",
        func=lambda p: "ok",
        parameters={
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/Point"}},
            "required": ["p"],
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        },
    )
    schema = compose_schema([move, Tool.from_schema(SENTIMENT)])
    assert (
        _json_schema_errors(schema, {"calls": [{"_tool": "move", "p": {"x": 1}}], "output": None})
        == []
    )
    assert _json_schema_errors(
        schema, {"calls": [{"_tool": "move", "p": {"x": "a"}}], "output": None}
    )
    latent_ok = {
        "_tool": "sentimentAnalysis",
        "text": "t",
        "_output": {"sentiment": "s", "confidence": 1},
    }
    assert _json_schema_errors(schema, {"calls": [latent_ok], "output": None}) == []
    with pytest.raises(ValueError, match="_tool"):
        compose_schema(
            [
                Tool(
                    "x",
                    "d",
                    func=lambda _tool: 1,
                    parameters={"type": "object", "properties": {"_tool": {"type": "string"}}},
                )
            ]
        )


def test_activity_runs_a_schema_explicitly_and_its_result_is_checked():
    from ironloop import register_activity, unregister_activity

    register_activity("sentiment_v1", lambda text: {"sentiment": "positive", "confidence": 1.0})
    try:
        t = Tool.from_schema({**SENTIMENT, "_activity": "sentiment_v1"})
        assert "_output" not in t.parameters["properties"], "the activity produces it"
        call = {"name": t.name, "args": {"text": "great"}, "id": "c1"}
        node = ToolNode([t])
        [m] = node.invoke({"messages": [AIMessage(content="", tool_calls=[call])]})["messages"]
        assert json.loads(m.content)["sentiment"] == "positive"
        # Swapped implementation, same schema; this one breaks the declared _output.
        register_activity("sentiment_v1", lambda text: {"sentiment": 3})
        [m] = node.invoke({"messages": [AIMessage(content="", tool_calls=[call])]})["messages"]
        assert m.status == "error"
        assert "does not match its _output schema" in m.content
    finally:
        unregister_activity("sentiment_v1")
    with pytest.raises(LookupError, match="register_activity"):
        Tool.from_schema({**SENTIMENT, "_activity": "sentiment_v1"})


@pytest.mark.parametrize("module", ["ironloop._tool", "ironloop._activities"])
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
    assert result.attempted > 0
