"""The graph of test_conflicts.py and its worker processes: ask (interrupt) -> done."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from ironloop import END, START, StateGraph, interrupt


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def build(saver: Any, inside_ask: Callable[[], None] = lambda: None) -> Any:
    def ask(s: S) -> dict[str, Any]:
        answer = interrupt("go?")
        inside_ask()
        return {"log": [f"ask:{answer}"]}

    def done(s: S) -> dict[str, Any]:
        return {"log": ["done"]}

    g = StateGraph(S)
    g.add_node("ask", ask).add_node("done", done)
    g.add_edge(START, "ask").add_edge("ask", "done").add_edge("done", END)
    return g.compile(checkpointer=saver)
