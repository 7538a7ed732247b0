"""Quickstart: tools decorated with @tool, run by a ToolNode whose dispatch is Rust.

Offline, no model needed: the AI message below is what a model would send. Run with
`pip install . && python examples/quickstart.py`.
"""

from __future__ import annotations

import asyncio
import time

from ironloop import ToolContext, ToolNode, tool
from ironloop.messages import AIMessage


@tool
def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(timeout=2.0)
def fetch_report(region: str, ctx: ToolContext) -> dict[str, object]:
    """Builds a (slow) sales report for a region.

    Args:
        region: The region's name, e.g. "north".
    """
    for pct in (25, 50, 75, 100):
        time.sleep(0.05)  # a blocking call: runs on ironloop's I/O thread pool
        ctx.progress({"region": region, "done": pct})
    return {"region": region, "sales": len(region) * 1000}


@tool
async def lookup_weather(city: str) -> str:
    """Looks up the weather in a city.

    Args:
        city: The city's name.
    """
    await asyncio.sleep(0.1)  # an async call: runs concurrently on the event loop
    return f"sunny in {city}"


def main() -> None:
    node = ToolNode([add, fetch_report, lookup_weather])
    print("tools the model sees:")
    for t in (add, fetch_report, lookup_weather):
        print(" ", t.to_openai()["function"])

    ai = AIMessage(
        content="",
        tool_calls=[
            {"name": "fetch_report", "args": {"region": "north"}, "id": "call_1"},
            {"name": "fetch_report", "args": {"region": "south"}, "id": "call_2"},
            {"name": "lookup_weather", "args": {"city": "Lisbon"}, "id": "call_3"},
            {"name": "add", "args": {"a": 2, "b": 40}, "id": "call_4"},
            {"name": "add", "args": {"a": "two"}, "id": "call_5"},  # bad args
            {"name": "translate", "args": {"text": "hi"}, "id": "call_6"},  # unknown tool
        ],
    )
    print(f"\nAI message with {len(ai.tool_calls)} tool calls; running them in parallel...")
    start = time.perf_counter()
    result = node.invoke({"messages": [ai]}, on_progress=lambda p: print("  progress:", p))
    elapsed = time.perf_counter() - start
    print(f"\n{len(result['messages'])} results in call order, {elapsed * 1000:.0f} ms:")
    for m in result["messages"]:
        print(f"  [{m.status}] {m.tool_call_id} {m.name}: {m.content}")


if __name__ == "__main__":
    main()
