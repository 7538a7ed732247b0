"""W5 and W10 by instruction count (BENCHMARKS.md, issues 15, 37 and 41): where
wall-clock time is too noisy to show a few per cent, count the instructions a round
executes.

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

``--agent bare`` counts ``create_agent`` without middleware instead, ``--agent noop``
W10's agent (``create_agent`` with the three no-op middleware of ``middleware.py``):
W10's ratio by instructions is noop's round ÷ w5's. ``--no-langchain`` blocks
``langchain_core`` (ironloop's own message classes; issue 37 compares the two).

Every invoke's result is checked (message count, final answer).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import _harness as h

ROUNDS = 50


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


def agent_factory(kind: str) -> Callable[[], Any]:
    """A new agent of ``kind`` per call (a new scripted model), the tools and
    middleware made once (so every invoke reuses the compiled shape, as an app does)."""
    from ironloop import create_agent, create_react_agent, tool
    from ironloop.models import ScriptedChatModel

    tools = [tool(add)]
    if kind == "w5":
        return lambda: create_react_agent(ScriptedChatModel(script()), tools)
    if kind == "bare":
        return lambda: create_agent(ScriptedChatModel(script()), tools)
    from middleware import ironloop_middleware

    mws = ironloop_middleware()
    return lambda: create_agent(ScriptedChatModel(script()), tools, middleware=mws)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, nargs="?", default=0, help="invokes after the 2 warm-up")
    parser.add_argument("--agent", choices=("w5", "bare", "noop"), default="w5")
    parser.add_argument("--no-langchain", action="store_true")
    args = parser.parse_args(argv)
    if args.no_langchain:
        h.block_langchain()
    from ironloop.messages import HumanMessage

    make = agent_factory(args.agent)
    for _ in range(2 + args.n):
        out = make().invoke(
            {"messages": [HumanMessage(content="count up")]}, {"recursion_limit": 1000}
        )
        if len(out["messages"]) != 2 * ROUNDS + 2:
            raise SystemExit(f"expected {2 * ROUNDS + 2} messages, got {len(out['messages'])}")
        if out["messages"][-1].content != f"done after {ROUNDS} rounds":
            raise SystemExit(f"unexpected answer {out['messages'][-1].content!r}")
    print("ok", args.agent, args.n, "without langchain-core" if args.no_langchain else "")


if __name__ == "__main__":
    main()
