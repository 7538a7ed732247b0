"""A step's tasks and their results in the state history as LangGraph 1.2.24 shows them
(issue 40, LangGraph's ``test_send_dedupe_on_resume``): ``Send`` tasks first, in the
order they were sent (from edge-triggered tasks by node name, then from ``Send`` tasks),
then the tasks of edges in the graph's order of nodes; a graph whose state is one value
(``StateGraph(Annotated[list, add])``) shows each task's write bare, ``None`` for a task
that wrote nothing; and a run under ``durability="exit"`` that continued a paused step
keeps the results of the step's tasks that had finished before the pause.

Each expected value is what the same program gives under LangGraph 1.2.24.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import START, MemorySaver, SqliteSaver, StateGraph
from ironloop.types import Command, Send, interrupt

PUSH, PULL = "__pregel_push", "__pregel_pull"


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "memory":
        return MemorySaver()
    return SqliteSaver(str(tmp_path / "cp.db"))


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _node(name: str, sends: tuple[str, ...] = ()) -> Any:
    """Logs its name (and a `Send`'s argument); sends to `sends`."""

    def run(state: Any) -> Any:
        update = {"log": [name if "log" in state else f"{name}{state['from']}"]}
        if sends:
            return Command(update=update, goto=[Send(s, {"from": name}) for s in sends])
        return update

    return run


def _sends_and_edges(saver: Any) -> Any:
    """`START` sends to `w` and routes to `b` and `a`; each of those three sends on (`w`
    to `x`, `a` to `z`, `b` to `y`), and `x`, `y`, `z` lead to `c`. Nodes are added in
    an order that is not their names'."""

    def fan(state: Log) -> list[Any]:
        return [Send("w", {"from": "start"}), "b", "a"]

    builder = StateGraph(Log)
    builder.add_node("w", _node("w", ("x",)))
    builder.add_node("b", _node("b", ("y",)))
    builder.add_node("a", _node("a", ("z",)))
    for name in ("x", "y", "z", "c"):
        builder.add_node(name, _node(name))
    builder.add_conditional_edges(START, fan)
    for name in ("x", "y", "z"):
        builder.add_edge(name, "c")
    return builder.compile(checkpointer=saver)


def test_sends_come_first_as_sent_then_edges_in_node_order(saver: Any) -> None:
    graph = _sends_and_edges(saver)
    config = {"configurable": {"thread_id": "1"}}

    out = graph.invoke({"log": []}, config)

    # Writes apply edge tasks by name, then sent tasks: so are the next Sends ordered.
    assert out == {"log": ["a", "b", "wstart", "za", "yb", "xw", "c"]}
    steps = {
        s.metadata["step"]: (s.next, [(t.name, t.path) for t in s.tasks])
        for s in graph.get_state_history(config)
    }
    assert steps[0] == (
        ("w", "b", "a"),
        [("w", (PUSH, 0, False)), ("b", (PULL, "b")), ("a", (PULL, "a"))],
    )
    assert steps[1] == (
        ("z", "y", "x"),
        [("z", (PUSH, 0, False)), ("y", (PUSH, 1, False)), ("x", (PUSH, 2, False))],
    )
    assert steps[2] == (("c",), [("c", (PULL, "c"))])


def _one_value(saver: Any) -> Any:
    """A state that is one list: `one` leads to `two` (asks a question), `three` and
    `four` (writes nothing)."""

    def two(state: list[str]) -> list[str]:
        interrupt("q")
        return ["two"]

    builder = StateGraph(Annotated[list, operator.add])
    builder.add_node("one", lambda state: ["one"])
    builder.add_node("two", two)
    builder.add_node("three", lambda state: ["three"])
    builder.add_node("four", lambda state: None)
    builder.add_edge(START, "one")
    for name in ("two", "three", "four"):
        builder.add_edge("one", name)
    return builder.compile(checkpointer=saver)


def _results(snapshot: Any) -> list[tuple[str, Any]]:
    return [(t.name, t.result) for t in snapshot.tasks]


def test_a_state_of_one_value_shows_each_tasks_write_bare(saver: Any) -> None:
    graph = _one_value(saver)
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke(["in"], config)

    paused = [("two", None), ("three", ["three"]), ("four", None)]
    assert _results(graph.get_state(config)) == paused
    assert [_results(s) for s in reversed(list(graph.get_state_history(config)))] == [
        [("__start__", ["in"])],
        [("one", ["one"])],
        paused,
    ]

    graph.invoke(Command(resume="a"), config)
    history = list(graph.get_state_history(config))
    assert history[0].values == ["in", "one", "three", "two"]
    assert _results(history[1]) == [("two", ["two"]), ("three", ["three"]), ("four", None)]


def test_an_exit_run_that_continued_a_pause_keeps_what_finished_before_it(saver: Any) -> None:
    graph = _one_value(saver)
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke(["in"], config, durability="exit")
    graph.invoke(Command(resume="a"), config, durability="exit")

    history = list(graph.get_state_history(config))
    assert [(s.metadata["step"], s.values) for s in history] == [
        (2, ["in", "one", "three", "two"]),
        (1, ["in", "one"]),
    ]
    # `three` had finished when the step paused; `two` ran again in the run that saved
    # only its last checkpoint: LangGraph has no record of its writes.
    paused = history[1]
    assert [(t.name, t.result, [i.value for i in t.interrupts]) for t in paused.tasks] == [
        ("two", None, ["q"]),
        ("three", ["three"], []),
        ("four", None, []),
    ]
    assert history[0].parent_config == paused.config
