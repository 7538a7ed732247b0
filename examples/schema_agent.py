"""Schema as interface: an agent driven by a model without native tool calling.

The model answers with one JSON object, ``{"calls": [...], "output": ...}``
(``tool_calling="schema"``). Its tools are schemas: ``sentiment`` is *latent* (the
model writes the result itself in ``_output``, checked against the declared schema),
and every call may carry the meta-fields the agent opts into:

- ``_reasoningForCall``: why the model made the call (kept on the call, never
  passed to the tool);
- ``_outputPath``: also store the result in the state (``notes/summary``);
- ``_delegate``: let a named sub-agent, ``critic``, run the call instead.

Offline: the models are scripted. Run: ``python examples/schema_agent.py``.
"""

from __future__ import annotations

import json

from ironloop import Tool, create_react_agent, register_delegate
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import AgentState

REVIEW = "The battery lasts two days, but the screen scratches far too easily."


class State(AgentState):
    notes: dict


sentiment = Tool.from_schema(  # the spec's shape: a JSON Schema named by `_tool`
    {
        "type": "object",
        "description": "The sentiment of a text.",
        "properties": {
            "_tool": {"const": "sentiment"},
            "text": {"type": "string"},
            "_output": {
                "type": "object",
                "properties": {
                    "label": {"enum": ["positive", "negative", "mixed"]},
                    "confidence": {"type": "number"},
                },
                "required": ["label", "confidence"],
            },
        },
        "required": ["text"],
    }
)
summarize = Tool.from_schema(
    {
        "name": "summarize",
        "description": "A one-line summary of a text.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "_output": {"type": "string"}},
            "required": ["text"],
        },
    }
)

# A sub-agent that reviews sentiment a second time; it is a delegate by name.
critic = create_react_agent(
    ScriptedChatModel([json.dumps({"label": "mixed", "confidence": 0.7})]), [], name="critic"
)
register_delegate("critic", critic)

model = ScriptedChatModel(  # stands in for a model that can only answer in JSON
    [
        json.dumps(
            {
                "calls": [
                    {
                        "_tool": "sentiment",
                        "text": REVIEW,
                        "_output": {"label": "negative", "confidence": 0.6},
                        "_reasoningForCall": "The user asked how the reviewer feels.",
                    },
                    {
                        "_tool": "sentiment",
                        "text": REVIEW,
                        "_delegate": "critic",
                        "_reasoningForCall": "I am unsure; ask the critic.",
                    },
                    {
                        "_tool": "summarize",
                        "text": REVIEW,
                        "_output": "Good battery, fragile screen.",
                        "_outputPath": "notes/summary",
                        "_reasoningForCall": "Keep a summary for later turns.",
                    },
                ],
                "output": None,
            }
        ),
        json.dumps({"calls": [], "output": "Mixed: good battery, fragile screen."}),
    ]
)

agent = create_react_agent(
    model,
    [sentiment, summarize],
    state_schema=State,
    tool_calling="schema",
    call_fields=["_reasoningForCall", "_outputPath", "_delegate"],
)
out = agent.invoke({"messages": [("user", f"How does this reviewer feel? {REVIEW}")]})

for call, result in zip(out["messages"][1].tool_calls, out["messages"][2:5], strict=False):
    why = call["args"]["_reasoningForCall"]
    print(f"{call['name']:<10} because {why!r}\n{'':<10} -> {result.content}")
print("notes:", out["notes"])
print("answer:", out["messages"][-1].content)
