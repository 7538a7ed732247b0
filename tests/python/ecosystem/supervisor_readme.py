"""langgraph-supervisor's README example (a supervisor handing work to a research agent
and a math agent made with ``create_react_agent``), its models scripted; prints the
transcript as JSON. tests/python/test_ecosystem.py runs it under LangGraph and under
ironloop (its ``langgraph`` imports answered by ironloop) and compares."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.messages import AIMessage
from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor

sys.path.insert(0, str(Path(__file__).parent))
from fake_model import ScriptedToolModel


def call(name: str, args: dict, id: str) -> dict:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def web_search(query: str) -> str:
    """Search the web for information."""
    return "Meta: 67,317 employees; Apple: 164,000; Amazon: 1,551,000."


supervisor_model = ScriptedToolModel(
    replies=[
        AIMessage("", tool_calls=[call("transfer_to_research_expert", {}, "s1")]),
        AIMessage("", tool_calls=[call("transfer_to_math_expert", {}, "s2")]),
        AIMessage("The combined headcount is 1,782,317."),
    ]
)
research_model = ScriptedToolModel(
    replies=[
        AIMessage("", tool_calls=[call("web_search", {"query": "FAANG headcount"}, "r1")]),
        AIMessage("Meta 67,317, Apple 164,000, Amazon 1,551,000."),
    ]
)
math_model = ScriptedToolModel(
    replies=[
        AIMessage("", tool_calls=[call("add", {"a": 67317, "b": 164000}, "m1")]),
        AIMessage("", tool_calls=[call("add", {"a": 231317, "b": 1551000}, "m2")]),
        AIMessage("1,782,317"),
    ]
)

math_agent = create_react_agent(
    model=math_model, tools=[add], name="math_expert", prompt="You are a math expert."
)
research_agent = create_react_agent(
    model=research_model,
    tools=[web_search],
    name="research_expert",
    prompt="You are a world class researcher with access to web search.",
)
workflow = create_supervisor(
    [research_agent, math_agent],
    model=supervisor_model,
    prompt="You are a team supervisor managing a research expert and a math expert.",
)
app = workflow.compile()
result = app.invoke(
    {"messages": [{"role": "user", "content": "what's the combined headcount of FAANG?"}]}
)
print(
    json.dumps(
        {
            "transcript": [
                [
                    type(m).__name__,
                    getattr(m, "name", None),
                    m.content,
                    len(getattr(m, "tool_calls", [])),
                ]
                for m in result["messages"]
            ],
            "supervisor_saw": supervisor_model.seen,
            "math_saw": math_model.seen,
        }
    )
)
