"""Call meta-fields (issue 15, item 1): _reasoningForCall, _outputPath, _instance and
_delegate, per agent (call_fields=) and per tool (with_call_fields)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ironloop import (
    MemorySaver,
    Tool,
    ToolNode,
    create_react_agent,
    register_delegate,
    tool,
    unregister_delegate,
    with_call_fields,
)
from ironloop.messages import AIMessage
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import AgentState

SEEN: list[dict[str, Any]] = []


@tool
def summarize(text: str) -> str:
    """Summarizes a text."""
    SEEN.append({"text": text})
    return text[:5]


class NotesState(AgentState):
    notes: dict


def calls(*cs: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": "",
        "tool_calls": [{"name": c.pop("name"), "args": c, "id": f"c{i}"} for i, c in enumerate(cs)],
    }


def test_reasoning_is_offered_kept_on_the_call_and_never_passed_to_the_tool():
    SEEN.clear()
    model = ScriptedChatModel(
        [calls({"name": "summarize", "text": "hello world", "_reasoningForCall": "too long"}), "ok"]
    )
    agent = create_react_agent(model, [summarize], call_fields=["_reasoningForCall"])
    out = agent.invoke({"messages": [("user", "shorten")]})
    offered = model.calls[0][1][0]["function"]["parameters"]["properties"]
    assert "_reasoningForCall" in offered
    assert SEEN == [{"text": "hello world"}], "the tool got its own arguments only"
    assert out["messages"][1].tool_calls[0]["args"]["_reasoningForCall"] == "too long"
    assert out["messages"][2].content == "hello"
    assert out["messages"][2].response_metadata == {"_reasoningForCall": "too long"}


def test_reasoning_reaches_the_tool_message_checkpoints_debug_and_tool_events():
    SEEN.clear()
    why = "the text is long"
    model = ScriptedChatModel(
        [
            calls(
                {"name": "summarize", "text": "hello world", "_reasoningForCall": why},
                {"name": "summarize", "text": "no reason"},
                {"name": "summarize", "text": "into notes", "_reasoningForCall": why}
                | {"_outputPath": "notes/s"},
            ),
            "ok",
        ]
    )
    agent = create_react_agent(
        model,
        [summarize],
        state_schema=NotesState,
        checkpointer=MemorySaver(),
        call_fields=["_reasoningForCall", "_outputPath"],
    )
    cfg = {"configurable": {"thread_id": "r"}}
    events = list(
        agent.stream(
            {"messages": [("user", "x")], "notes": {}}, cfg, stream_mode=["debug", "tools"]
        )
    )
    assert sorted(d["text"] for d in SEEN) == ["hello world", "into notes", "no reason"]
    # The tool messages, as the checkpoint keeps them: the plain result, one without a
    # reason, and the _outputPath result (a Command's message) all as the call said.
    state = agent.get_state(cfg).values
    tools = [m for m in state["messages"] if m.type == "tool"]
    assert [m.response_metadata for m in tools] == [
        {"_reasoningForCall": why},
        {},
        {"_reasoningForCall": why},
    ]
    assert state["notes"] == {"s": "into "}
    # Tool events show it with the call's arguments.
    starts = {
        d["tool_call_id"]: d
        for mode, d in events
        if mode == "tools" and d["event"] == "tool-started"
    }
    assert [starts[c]["input"].get("_reasoningForCall") for c in ("c0", "c1", "c2")] == [
        why,
        None,
        why,
    ]
    # The debug stream's task result for the tools node carries the messages with it.
    results = [
        d["payload"]
        for mode, d in events
        if mode == "debug" and d["type"] == "task_result" and d["payload"]["name"] == "tools"
    ]
    written = [m for p in results for m in p["result"].get("messages", [])]
    # (one task per call, finishing in any order)
    by_call = {m.tool_call_id: m for m in written}
    assert sorted(by_call) == ["c0", "c1", "c2"]
    assert [by_call[c].response_metadata.get("_reasoningForCall") for c in sorted(by_call)] == [
        why,
        None,
        why,
    ]


def test_reasoning_must_be_a_string():
    t = with_call_fields(summarize, ["_reasoningForCall"])
    ai = AIMessage(
        "",
        tool_calls=[
            {"name": "summarize", "args": {"text": "x", "_reasoningForCall": 3}, "id": "c"}
        ],
    )
    [m] = ToolNode([t]).invoke({"messages": [ai]})["messages"]
    assert m.status == "error" and "_reasoningForCall" in m.content
    assert m.response_metadata == {}, "only a string is a reason"


def test_output_path_writes_the_result_into_the_state_and_checkpoints_it():
    model = ScriptedChatModel(
        [
            calls(
                {"name": "summarize", "text": "hello world", "_outputPath": "notes/summary"},
                {"name": "summarize", "text": "goodbye", "_outputPath": "nowhere/x"},
                {"name": "summarize", "text": "again", "_outputPath": "messages"},
            ),
            "done",
        ]
    )
    agent = create_react_agent(
        model,
        [summarize],
        state_schema=NotesState,
        checkpointer=MemorySaver(),
        call_fields=["_outputPath"],
    )
    cfg = {"configurable": {"thread_id": "n"}}
    out = agent.invoke({"messages": [("user", "x")], "notes": {"kept": 1}}, cfg)
    assert out["notes"] == {"kept": 1, "summary": "hello"}
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert [m.status for m in tool_msgs] == ["success", "error", "error"]
    assert tool_msgs[0].content == "hello"
    assert "'nowhere/x'" in tool_msgs[1].content and "no key 'nowhere'" in tool_msgs[1].content
    assert "'messages'" in tool_msgs[2].content
    assert agent.get_state(cfg).values["notes"]["summary"] == "hello"


def test_instance_picks_the_instance_and_an_unknown_one_is_an_error_result():
    def reader(root: str) -> Any:
        return lambda path: f"{root}:{path}"

    base = Tool(
        "read",
        "Reads a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        func=reader("default"),
    )
    t = with_call_fields(
        base, ["_instance"], instances={"ws1": reader("one"), "ws2": reader("two")}
    )
    assert t.parameters["properties"]["_instance"]["enum"] == ["ws1", "ws2"]
    assert "_instance" in t.parameters["required"]
    ai = AIMessage(
        "",
        tool_calls=[
            {"name": "read", "args": {"path": "a", "_instance": "ws2"}, "id": "c1"},
            {"name": "read", "args": {"path": "a", "_instance": "ws9"}, "id": "c2"},
        ],
    )
    out = ToolNode([t]).invoke({"messages": [ai]})["messages"]
    assert [m.status for m in out] == ["success", "error"]
    assert out[0].content == "two:a"
    assert "ws9" in out[1].content
    with pytest.raises(ValueError, match="instances"):
        with_call_fields(base, ["_instance"])


SENTIMENT = {
    "name": "sentiment",
    "description": "The sentiment of a text.",
    "parameters": {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "_output": {
                "type": "object",
                "properties": {"label": {"type": "string"}},
                "required": ["label"],
            },
        },
        "required": ["text"],
    },
}


def test_delegate_function_gets_schema_and_args_and_its_result_is_checked():
    got: list[Any] = []

    def good(schema: dict[str, Any], args: dict[str, Any]) -> Any:
        got.append((schema["name"], args))
        return {"label": "positive"}

    t = with_call_fields(
        Tool.from_schema(SENTIMENT),
        ["_delegate"],
        delegates={"good": good, "bad": lambda schema, args: {"label": 1}},
    )
    assert "_output" not in t.parameters["required"], "the delegate produces it"
    ai = AIMessage(
        "",
        tool_calls=[
            {"name": "sentiment", "args": {"text": "yay", "_delegate": "good"}, "id": "c1"},
            {"name": "sentiment", "args": {"text": "yay", "_delegate": "bad"}, "id": "c2"},
            {"name": "sentiment", "args": {"text": "x", "_output": {"label": "n"}}, "id": "c3"},
        ],
    )
    out = ToolNode([t]).invoke({"messages": [ai]})["messages"]
    assert [m.status for m in out] == ["success", "error", "success"]
    assert json.loads(out[0].content) == {"label": "positive"}
    assert got == [("sentiment", {"text": "yay"})]
    assert "_output schema" in out[1].content
    assert json.loads(out[2].content) == {"label": "n"}, "latent when not delegated"


def test_delegate_sub_agent_registered_by_name():
    sub_model = ScriptedChatModel([json.dumps({"label": "negative"})])
    sub = create_react_agent(sub_model, [], name="critic")
    register_delegate("critic", sub)
    try:
        model = ScriptedChatModel(
            [calls({"name": "sentiment", "text": "meh", "_delegate": "critic"}), "negative"]
        )
        agent = create_react_agent(model, [Tool.from_schema(SENTIMENT)], call_fields=["_delegate"])
        out = agent.invoke({"messages": [("user", "mood?")]})
    finally:
        unregister_delegate("critic")
    assert json.loads(out["messages"][2].content) == {"label": "negative"}
    asked = sub_model.calls[0][0][-1].text
    assert "'sentiment'" in asked and '"meh"' in asked and "label" in asked


def test_create_agent_takes_call_fields():
    from ironloop import create_agent

    SEEN.clear()
    model = ScriptedChatModel(
        [calls({"name": "summarize", "text": "abcdefgh", "_reasoningForCall": "r"}), "ok"]
    )
    agent = create_agent(model, [summarize], call_fields=["_reasoningForCall"])
    out = agent.invoke({"messages": [("user", "x")]})
    assert SEEN == [{"text": "abcdefgh"}]
    assert out["messages"][2].content == "abcde"
    assert out["messages"][2].response_metadata == {"_reasoningForCall": "r"}


def test_unknown_fields_and_instance_at_agent_level_are_refused():
    with pytest.raises(ValueError, match="unknown call field"):
        with_call_fields(summarize, ["_why"])
    with pytest.raises(ValueError, match="with_call_fields"):
        create_react_agent(ScriptedChatModel(["x"]), [summarize], call_fields=["_instance"])
    with pytest.raises(ValueError, match="delegate"):
        with_call_fields(summarize, ["_delegate"])


def test_the_guides_meta_field_snippets_run():
    from pathlib import Path

    from ironloop import unregister_activity

    readme = (Path(__file__).parents[2] / "docs" / "tools.md").read_text()
    start = readme.index("### Typed outputs, activities and call meta-fields")
    end = readme.find("\n## ", start)
    section = readme[start : end if end != -1 else len(readme)]
    blocks = section.split("```python")[1:]
    assert len(blocks) == 5, "one for activities, one per meta-field"
    ns: dict[str, Any] = {}
    try:
        for block in blocks:
            exec(compile(block[: block.index("```")], "docs/tools.md", "exec"), ns)
    finally:
        unregister_activity("double")
        unregister_delegate("doubler")


def test_the_example_runs():
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "schema_agent.py"
    out = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert '-> {"label": "mixed", "confidence": 0.7}' in out, "the critic sub-agent ran"
    assert "notes: {'summary': 'Good battery, fragile screen.'}" in out
    assert "because 'I am unsure; ask the critic.'" in out
    assert out.strip().endswith("answer: Mixed: good battery, fragile screen.")
