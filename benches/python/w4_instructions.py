"""W4 by instruction count: the cost of one engine step of a Python node, counted by
callgrind where wall-clock time is too noisy to show a few per cent.

W4's counter graph (``graph.py``: Python nodes ``a`` -> ``b`` -> ``a`` ..., each doing
``count += 1``, a Python router after each, no checkpointer) runs ``STEPS`` steps per
invoke, ``2 + N`` times. Run it under callgrind for N = 0 and 10: the difference
between the two counts divided by the steps between them (``10 * STEPS``) is the cost
of one step, without start-up, imports and the two warm-up invokes.

    for n in 0 10; do
      PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.$n.out \\
        python benches/python/w4_instructions.py $n
    done
    # per step: (I(10) - I(0)) / (10 * STEPS)

Every invoke's result is checked (the final count).
"""

from __future__ import annotations

import sys

from graph import counter_graph, load_ironloop

STEPS = 200


def main(n: int) -> None:
    graph = counter_graph(load_ironloop(), STEPS, None)
    for _ in range(2 + n):
        out = graph.invoke({"count": 0}, {"recursion_limit": STEPS + 10})
        if out.get("count") != STEPS:
            raise SystemExit(f"count {out.get('count')!r}, expected {STEPS}")
    print("ok", n)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
