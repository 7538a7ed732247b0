"""Cold load of a long chat thread, per saver: what another worker process pays.

One graph runs a ``MessagesState`` chat (a node echoing each user message) to turn 10
and then to turn N; at each, 5 graphs compiled afresh on new saver objects each time
one ``get_state`` and 5 more each time one ``invoke`` of a new turn (medians). Run it
with two builds to compare them (ironloop only; LangGraph's turns are in
``threads.py``, W9).

    python benches/python/cold_load.py [N] [--savers memory,sqlite,postgres]

PostgreSQL rows run when ``IRONLOOP_TEST_POSTGRES_URL`` names a server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from typing import Any

import ironloop
from ironloop.messages import AIMessage, HumanMessage

PG = os.environ.get("IRONLOOP_TEST_POSTGRES_URL", "")
CFG = {"configurable": {"thread_id": "chat"}, "recursion_limit": 100}


def chat(cp: Any) -> Any:
    def echo(s: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"echo: {s['messages'][-1].content}")]}

    g = ironloop.StateGraph(ironloop.MessagesState)
    g.add_node("echo", echo)
    g.add_edge(ironloop.START, "echo")
    g.add_edge("echo", ironloop.END)
    return g.compile(checkpointer=cp)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("turns", type=int, nargs="?", default=3000)
    p.add_argument("--savers", default="memory,sqlite,postgres")
    args = p.parse_args()
    tmp = tempfile.mkdtemp()
    memory = ironloop.MemorySaver()
    schema = f"cold_{uuid.uuid4().hex[:8]}"

    def saver(kind: str) -> Any:
        if kind == "memory":
            return memory
        if kind == "sqlite":
            return ironloop.SqliteSaver(os.path.join(tmp, "chat.db"))
        s = ironloop.PostgresSaver(PG, schema=schema)
        s.setup()
        return s

    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for kind in args.savers.split(","):
        if kind == "postgres" and not PG:
            continue
        app = chat(saver(kind))
        turn = 0
        for target in (10, args.turns):
            while turn < target:
                turn += 1
                app.invoke({"messages": [HumanMessage(content=f"m {turn} " + "x" * 80)]}, CFG)
            loads, invokes = [], []
            for _ in range(5):
                g = chat(saver(kind))
                t0 = time.perf_counter()
                st = g.get_state(CFG)
                loads.append(time.perf_counter() - t0)
                assert len(st.values["messages"]) == 2 * turn
            for _ in range(5):
                g = chat(saver(kind))
                t0 = time.perf_counter()
                g.invoke({"messages": [HumanMessage(content="probe")]}, CFG)
                invokes.append(time.perf_counter() - t0)
            turn += 5
            app = chat(saver(kind))
            print(
                f"{kind} turn {target}: cold get_state {statistics.median(loads) * 1e3:.2f} ms, "
                f"cold invoke {statistics.median(invokes) * 1e3:.2f} ms "
                f"(load {os.getloadavg()[0]:.1f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
