"""An offline ReAct agent with durable memory.

A scripted "model" (no network, no API key) decides what to do from the conversation,
real Python tools do the work, and a SqliteSaver file keeps the thread: run it twice
and the second run continues the same conversation from its checkpoint.

    pip install . && python examples/agent.py          # first turn
    python examples/agent.py                           # continues the thread
    python examples/agent.py --reset                   # start over

Set IRONLOOP_MODEL to use a real model instead (its own thread in the same file):

    IRONLOOP_MODEL=openai:gpt-4o-mini python examples/agent.py            # OPENAI_API_KEY
    IRONLOOP_MODEL=anthropic:claude-sonnet-4-5 python examples/agent.py   # ANTHROPIC_API_KEY
    IRONLOOP_MODEL=openai:llama3.2@http://localhost:11434/v1 python examples/agent.py
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from ironloop import SqliteSaver, create_react_agent, init_model, tool
from ironloop.errors import ModelError
from ironloop.messages import AIMessage, BaseMessage
from ironloop.models import ScriptedChatModel

DB = Path(__file__).with_name("agent_memory.db")
QUESTIONS = [
    "What is 12 + 30? Also, what's the weather in Lisbon?",
    "Now multiply the sum by 3.",
    "Thanks! Summarise what we did.",
]


@tool
def add(a: float, b: float) -> float:
    """Adds two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiplies two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a * b


@tool
def weather(city: str) -> dict[str, object]:
    """Looks up the weather in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "sky": "sunny", "celsius": 21}


def decide(messages: list[BaseMessage]) -> AIMessage | str:
    """The offline stand-in for a model: reads the conversation, picks tools."""
    last = messages[-1]
    if last.type == "tool":
        results = [m for m in messages[-3:] if m.type == "tool"]
        return "Done: " + "; ".join(f"{m.name} -> {m.content}" for m in results)
    question = last.text
    numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", question)]
    calls = []
    if "+" in question and len(numbers) >= 2:
        calls.append({"name": "add", "args": {"a": numbers[0], "b": numbers[1]}})
    if "weather" in question.lower():
        calls.append({"name": "weather", "args": {"city": "Lisbon"}})
    if "multiply" in question.lower():
        sums = [m for m in messages if m.type == "tool" and m.name == "add"]
        previous = float(sums[-1].text) if sums else 0.0
        calls.append(
            {"name": "multiply", "args": {"a": previous, "b": numbers[0] if numbers else 1}}
        )
    if calls:
        return AIMessage(content="", tool_calls=calls)
    used = sorted({str(m.name) for m in messages if m.type == "tool"})
    return f"We used {', '.join(used)} over {sum(m.type == 'human' for m in messages)} questions."


def make_model(spec: str) -> Any:
    """The model for ``IRONLOOP_MODEL``: ``openai:<model>[@<base_url>]`` or
    ``anthropic:<model>[@<base_url>]``; unset or empty, the offline scripted model."""
    if not spec:
        return ScriptedChatModel(decide)
    try:
        return init_model(spec)
    except ValueError as e:
        raise SystemExit(f"IRONLOOP_MODEL: {e}") from None
    except ModelError as e:
        raise SystemExit(f"IRONLOOP_MODEL={spec}: {e}") from None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reset", action="store_true", help="delete the saved thread")
    args = parser.parse_args()
    if args.reset:
        for suffix in ("", "-wal", "-shm"):
            Path(str(DB) + suffix).unlink(missing_ok=True)

    spec = os.environ.get("IRONLOOP_MODEL", "").strip()
    model = make_model(spec)
    thread = f"demo-{spec.partition('@')[0]}" if spec else "demo"
    with SqliteSaver(DB) as saver:
        agent = create_react_agent(
            model,
            [add, multiply, weather],
            prompt="You are a helpful assistant. Use tools for arithmetic and weather.",
            checkpointer=saver,
        )
        config = {"configurable": {"thread_id": thread}}
        before = agent.get_state(config).values.get("messages", [])
        turn = sum(m.type == "human" for m in before)
        if turn >= len(QUESTIONS):
            print(f"The thread in {DB.name} is complete; run with --reset to start over.")
            return
        print(f"Thread {thread!r} has {len(before)} messages saved in {DB.name}; turn {turn + 1}.")
        try:
            result = agent.invoke({"messages": [("user", QUESTIONS[turn])]}, config)
        except ModelError as e:
            sys.exit(f"The model failed: {e}")
        for m in result["messages"][len(before) :]:
            if m.type == "ai" and m.tool_calls:
                calls = ", ".join(f"{c['name']}({c['args']})" for c in m.tool_calls)
                print(f"  ai    -> calls {calls}")
            else:
                print(f"  {m.type:<5} {m.name or ''} {m.content}".rstrip())


if __name__ == "__main__":
    main()
