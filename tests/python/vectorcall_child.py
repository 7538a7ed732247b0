"""Child program for ``test_vectorcall_fallback.py``: tool calls and graph runs whose
results it prints as JSON, with whether tool calls went through the fallback that
CPython 3.10 takes (``IRONLOOP_TEST_VECTORCALL_FALLBACK=1`` forces it on 3.11+).

Usage::

    python vectorcall_child.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from graph_support import LogS, chain

from ironloop import InjectedState, InjectedToolCallId, ToolNode, create_react_agent, tool
from ironloop._ironloop import _vectorcall_fallback
from ironloop.messages import AIMessage, HumanMessage
from ironloop.models import ScriptedChatModel


@tool
def power(base: int, exponent: int = 2, *, label: str = "p") -> str:
    """A positional-or-keyword parameter with a default, and a keyword-only one."""
    return f"{label}={base**exponent}"


@tool
def echo(text: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
    """An argument from the model and one ironloop injects."""
    return f"{text} ({call_id})"


@tool
def peek(key: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Reads the graph's state (injected)."""
    return f"{key}: {len(state['messages'])} messages"


@tool
def wide(a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int, i: int) -> int:
    """Nine arguments: more than the keyword fast call takes."""
    return a + b + c + d + e + f + g + h + i


@tool
def fails(n: int) -> str:
    """Raises: the error must come back as the call's result."""
    raise ValueError(f"no {n}")


@tool
async def later(n: int) -> str:
    """An async tool (not a vectorcall: the path must not change)."""
    await asyncio.sleep(0)
    return f"later {n}"


TOOLS = [power, echo, peek, wide, fails, later]
CALLS: list[dict[str, Any]] = [
    {"name": "power", "args": {"base": 3}, "id": "c1"},
    {"name": "power", "args": {"base": 2, "exponent": 5, "label": "two"}, "id": "c2"},
    {"name": "echo", "args": {"text": "hi"}, "id": "c3"},
    {"name": "peek", "args": {"key": "k"}, "id": "c4"},
    {"name": "wide", "args": dict.fromkeys("abcdefghi", 2), "id": "c5"},
    {"name": "fails", "args": {"n": 7}, "id": "c6"},
    {"name": "later", "args": {"n": 8}, "id": "c7"},
    {"name": "power", "args": {"base": "x"}, "id": "c8"},  # refused by the schema
]


def shown(messages: list[Any]) -> list[list[Any]]:
    """What the runs are compared on (ids left out: fresh ones are random)."""
    out: list[list[Any]] = []
    for m in messages:
        call_id = getattr(m, "tool_call_id", None)
        out.append([m.type, m.text, getattr(m, "status", None), call_id])
    return out


def toolnode_runs() -> dict[str, Any]:
    ask = {"messages": [HumanMessage("go"), AIMessage(content="", tool_calls=CALLS)]}
    one = {"messages": [AIMessage(content="", tool_calls=CALLS[:1])]}
    node = ToolNode(TOOLS, handle_tool_errors=True)
    return {
        "invoke": shown(node.invoke(ask)["messages"]),
        "invoke_one": shown(node.invoke(one)["messages"]),
        "ainvoke": shown(asyncio.run(node.ainvoke(ask))["messages"]),
    }


def agent_run() -> list[list[Any]]:
    model = ScriptedChatModel(
        [
            {"content": "", "tool_calls": CALLS[:4]},
            {"content": "", "tool_calls": CALLS[4:6]},
            "done",
        ]
    )
    agent = create_react_agent(model, TOOLS)
    return shown(agent.invoke({"messages": [HumanMessage("go")]})["messages"])


def graph_run() -> list[str]:
    def step(name: str) -> Any:
        return lambda s: {"log": [f"{name} after {len(s['log'])}"]}

    return (
        chain(step("first"), step("second"), schema=LogS)
        .compile()
        .invoke({"log": ["start"]})["log"]
    )


def main() -> None:
    results = {
        "toolnode": toolnode_runs(),
        "agent": agent_run(),
        "graph": graph_run(),
        "fallback": _vectorcall_fallback(),
    }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
