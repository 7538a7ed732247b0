"""W3 by instruction count: the cost of one quick sync tool call through ``ToolNode``,
counted by callgrind where wall-clock time is too noisy (used to weigh an ``abi3``
wheel against the per-version one, docs/decisions.md).

W3's ``ToolNode`` (1,000 calls of sync ``add(a, b)`` in one ``AIMessage``) is invoked
``2 + N`` times. Run it under callgrind for N = 0, 10 and 20: the difference between
two counts divided by the calls between them (10,000 per 10 invokes) is the cost of
one call, without start-up, imports and the two warm-up invokes.

    for n in 0 10 20; do
      PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.$n.out \\
        python benches/python/w3_instructions.py $n
    done
    # per call: (I(10) - I(0)) / 10000, (I(20) - I(0)) / 20000, (I(20) - I(10)) / 10000

Every invoke's result is checked (one ToolMessage per call, in call order).
"""

from __future__ import annotations

import sys

from ironloop import ToolNode, tool
from ironloop.messages import AIMessage

CALLS = 1_000


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def main(n: int) -> None:
    node = ToolNode([add])
    calls = [{"name": "add", "args": {"a": i, "b": 1}, "id": f"call_{i}"} for i in range(CALLS)]
    ai = AIMessage(content="", tool_calls=calls)
    for _ in range(2 + n):
        out = node.invoke({"messages": [ai]})["messages"]
        if [m.tool_call_id for m in out] != [c["id"] for c in calls]:
            raise SystemExit("the ToolMessages do not answer the calls in call order")
        if [m.content for m in out] != [str(i + 1) for i in range(CALLS)]:
            raise SystemExit("unexpected tool results")
    print("ok", n)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
