"""Managed values (``RemainingSteps``, ``IsLastStep``) and ``with_config``, as LangGraph's."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from ironloop import END, START, MemorySaver, StateGraph
from ironloop.managed import IsLastStep, RemainingSteps


class State(TypedDict):
    seen: Annotated[list[tuple[int, bool]], operator.add]
    remaining_steps: RemainingSteps
    is_last_step: IsLastStep


def looping_graph() -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"seen": [(state["remaining_steps"], state["is_last_step"])]}

    def again(state: State) -> str:
        return END if len(state["seen"]) >= 3 else "node"

    g = StateGraph(State)
    g.add_node("node", node).add_edge(START, "node").add_conditional_edges("node", again)
    return g.compile()


def test_remaining_steps_count_down_to_the_recursion_limit() -> None:
    out = looping_graph().invoke({"seen": []}, {"recursion_limit": 10})
    assert out["seen"] == [(9, False), (8, False), (7, False)]


def test_is_last_step_on_the_step_the_limit_allows_last() -> None:
    out = looping_graph().invoke({"seen": []}, {"recursion_limit": 4})
    assert out["seen"] == [(3, False), (2, False), (1, True)]


def test_managed_keys_are_not_state() -> None:
    out = looping_graph().invoke({"seen": [], "remaining_steps": 100}, {"recursion_limit": 10})
    assert "remaining_steps" not in out
    assert out["seen"][0] == (9, False)  # the input's value is ignored


def test_with_config_binds_a_config_to_every_call() -> None:
    class S(TypedDict):
        n: int

    g = StateGraph(S).add_node("inc", lambda s: {"n": s["n"] + 1})
    graph = g.add_edge(START, "inc").add_edge("inc", END).compile(checkpointer=MemorySaver())
    bound = graph.with_config({"configurable": {"thread_id": "bound"}})
    assert bound.invoke({"n": 1}) == {"n": 2}
    assert bound.get_state().values == {"n": 2}
    assert graph.get_state({"configurable": {"thread_id": "bound"}}).values == {"n": 2}
