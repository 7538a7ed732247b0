"""W1 against its floor by instruction count and CPU time (BENCHMARKS.md, issue 13
item 3): where wall-clock time is too noisy to show the gap, count what each side
executes.

``SIDE`` is ``ironloop`` (W1: one ``ToolNode.ainvoke`` of an AI message with 1,000
calls of ``async def wait(ms)``, ``asyncio.sleep``) or ``floor`` (``asyncio.gather`` of
the same 1,000 coroutines); each runs ``2 + N`` times in one ``asyncio.run``. Under
callgrind for N = 0 and 10, the difference between the two counts divided by 10 is the
cost of one run without start-up, imports and the two warm-up runs:

    for side in floor ironloop; do for n in 0 10; do
      PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.$side.$n.out \\
        python benches/python/w1_instructions.py $side $n
    done; done
    # per run: (I(side, 10) - I(side, 0)) / 10; W1 / floor is the ratio of the two
    callgrind_annotate --inclusive=yes cg.ironloop.10.out   # where they go

With ``--cpu R`` instead of N it times both sides alternately in this process, ``R``
runs each after two warm-ups, and prints the medians of process CPU time
(``time.process_time()``, all threads) and wall time per run, and their ratios.

Every run's result is checked (one result per call, in call order, the right value).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from ironloop import ToolNode, tool
from ironloop.messages import AIMessage

N_CALLS = 1_000
WAIT_MS = 10


async def wait(ms: int) -> int:
    """Wait ms milliseconds (asyncio.sleep) and return ms."""
    await asyncio.sleep(ms / 1000)
    return ms


CALLS = [
    {"name": "wait", "args": {"ms": WAIT_MS}, "id": f"call_{i}", "type": "tool_call"}
    for i in range(N_CALLS)
]
NODE = ToolNode([tool(wait)])
AI = AIMessage(content="", tool_calls=CALLS)


async def ironloop_once() -> None:
    out = await NODE.ainvoke({"messages": [AI]})
    msgs = out["messages"]
    if len(msgs) != N_CALLS:
        raise SystemExit(f"{len(msgs)} messages for {N_CALLS} calls")
    for msg, call in zip(msgs, CALLS, strict=True):
        if msg.tool_call_id != call["id"] or msg.content != str(WAIT_MS):
            raise SystemExit(f"wrong message {msg!r} for {call['id']}")


async def floor_once() -> None:
    out = await asyncio.gather(*(wait(WAIT_MS) for _ in range(N_CALLS)))
    if out != [WAIT_MS] * N_CALLS:
        raise SystemExit("the floor's gather returned wrong results")


SIDES = {"ironloop": ironloop_once, "floor": floor_once}


async def count(side: str, n: int) -> None:
    once = SIDES[side]
    for _ in range(2 + n):
        await once()
    print("ok", side, n)


async def cpu(runs: int) -> None:
    times: dict[str, list[tuple[float, float]]] = {s: [] for s in SIDES}
    for once in SIDES.values():
        for _ in range(2):
            await once()
    for _ in range(runs):
        for side, once in SIDES.items():
            c0, w0 = time.process_time(), time.perf_counter()
            await once()
            c1, w1 = time.process_time(), time.perf_counter()
            times[side].append((c1 - c0, w1 - w0))
    med = {s: [statistics.median(t[k] for t in v) * 1e3 for k in (0, 1)] for s, v in times.items()}
    for side, (c, w) in med.items():
        lo, hi = (min(t[0] for t in times[side]) * 1e3, max(t[0] for t in times[side]) * 1e3)
        print(f"{side:9} CPU {c:6.1f} ms ({lo:.1f}–{hi:.1f})  wall {w:6.1f} ms")
    ratio_cpu = med["ironloop"][0] / med["floor"][0]
    ratio_wall = med["ironloop"][1] / med["floor"][1]
    print(f"W1 / floor: CPU {ratio_cpu:.2f}×  wall {ratio_wall:.2f}×")


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "--cpu":
        asyncio.run(cpu(int(argv[1])))
    elif len(argv) == 2 and argv[0] in SIDES:
        asyncio.run(count(argv[0], int(argv[1])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
