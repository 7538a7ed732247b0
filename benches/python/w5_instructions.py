"""W5 by instruction count (BENCHMARKS.md, issue 15 item 5): where wall-clock time
is too noisy to show a few per cent, count the instructions a W5 round executes.

W5's agent (``create_react_agent``, a scripted model, one ``add`` call per round, no
checkpointer) is invoked for 50 rounds, ``2 + N`` times. Run it under callgrind for
N = 0, 10 and 20: the difference between two counts, divided by the rounds between
them (500 per 10 invokes), is the cost of one round, without start-up, imports and
the first two (warm-up) invokes.

    for n in 0 10 20; do
      PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.$n.out \\
        python benches/python/w5_instructions.py $n
    done
    # per round: (I(10) - I(0)) / 500, (I(20) - I(0)) / 1000, (I(20) - I(10)) / 500
    callgrind_annotate --inclusive=yes cg.20.out   # where they go

Every invoke's result is checked (message count, final answer).
"""

from __future__ import annotations

import sys
from typing import Any

from ironloop import create_react_agent, tool
from ironloop.messages import HumanMessage
from ironloop.models import ScriptedChatModel

ROUNDS = 50


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def script() -> list[Any]:
    calls = [
        {
            "content": "",
            "tool_calls": [{"name": "add", "args": {"a": k, "b": 1}, "id": f"call_{k}"}],
        }
        for k in range(ROUNDS)
    ]
    return [*calls, f"done after {ROUNDS} rounds"]


def main(n: int) -> None:
    for _ in range(2 + n):
        agent = create_react_agent(ScriptedChatModel(script()), [add])
        out = agent.invoke(
            {"messages": [HumanMessage(content="count up")]}, {"recursion_limit": 1000}
        )
        if len(out["messages"]) != 2 * ROUNDS + 2:
            raise SystemExit(f"expected {2 * ROUNDS + 2} messages, got {len(out['messages'])}")
        if out["messages"][-1].content != f"done after {ROUNDS} rounds":
            raise SystemExit(f"unexpected answer {out['messages'][-1].content!r}")
    print("ok", n)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
