"""What each task of a step wrote, in the state history, as LangGraph 1.2.24 shows it
(issue 40): the tasks of a node that ran several times in one step (``Send``) each
with their own writes, also after a fork of the thread (``update_state(...,
"__copy__")`` with updates made as those tasks' node); a channel a task wrote several
times as ``{"$writes": [...]}``; supersteps of ``bulk_update_state`` that start from
an empty input; and ``Command(goto=...)`` given to a paused step, whose added tasks
stay in the step when it pauses again.

Each expected value is what the same program gives under LangGraph 1.2.24.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, MemorySaver, SqliteSaver, StateGraph
from ironloop.errors import InvalidUpdateError
from ironloop.types import Command, Send, StateUpdate, interrupt


def _join(a: str, b: str) -> str:
    return " > ".join([a, b]) if a else b


class Name(TypedDict):
    name: Annotated[str, _join]


def _fan_out(saver: Any) -> Any:
    """`one` sends to `two` besides its edge to it: the step after `one` runs `two`
    twice."""

    def one(state: Name) -> Command:
        return Command(goto=[Send("two", {})], update={"name": "one"})

    def two(state: Name) -> Name:
        return {"name": "two"}

    def three(state: Name) -> Name:
        return {"name": "three"}

    return (
        StateGraph(Name)
        .add_node("one", one)
        .add_node("two", two)
        .add_node("three", three)
        .add_edge(START, "one")
        .add_edge("one", "two")
        .add_edge("two", "three")
        .compile(checkpointer=saver)
    )


def _steps(graph: Any, config: dict[str, Any]) -> list[tuple[Any, list[Any]]]:
    """The thread's history, oldest first: each checkpoint's values and its tasks'
    (name, result)."""
    return [
        (s.values, [(t.name, t.result) for t in s.tasks])
        for s in reversed(list(graph.get_state_history(config)))
    ]


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "memory":
        return MemorySaver()
    return SqliteSaver(str(tmp_path / "cp.db"))


def test_each_task_of_a_node_sent_twice_shows_its_own_writes(saver: Any) -> None:
    graph = _fan_out(saver)
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"name": "start"}, config)

    assert _steps(graph, config) == [
        ({"name": ""}, [("__start__", {"name": "start"})]),
        ({"name": "start"}, [("one", {"name": "one"})]),
        ({"name": "start > one"}, [("two", {"name": "two"}), ("two", {"name": "two"})]),
        ({"name": "start > one > two > two"}, [("three", {"name": "three"})]),
        ({"name": "start > one > two > two > three"}, []),
    ]


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def test_sent_tasks_that_wrote_differently_keep_their_own_writes(saver: Any) -> None:
    def fan(state: Log) -> list[Send]:
        return [Send("work", {"n": n}) for n in (1, 2, 3)]

    def work(arg: dict[str, int]) -> Log:
        return {"log": [f"w{n}" for n in range(arg["n"])]}

    graph = (
        StateGraph(Log)
        .add_node("work", work)
        .add_conditional_edges(START, fan)
        .add_edge("work", END)
        .compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"log": []}, config)

    sent = next(s for s in graph.get_state_history(config) if s.next == ("work",) * 3)
    assert [t.result for t in sent.tasks] == [
        {"log": ["w0"]},
        {"log": ["w0", "w1"]},
        {"log": ["w0", "w1", "w2"]},
    ]


def test_a_fork_with_two_updates_as_the_sent_node_gives_each_task_one(saver: Any) -> None:
    graph = _fan_out(saver)
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"name": "start"}, config)
    at_two = list(graph.get_state_history(config))[2]
    assert at_two.values == {"name": "start > one"}

    forked = graph.update_state(
        at_two.config,
        [StateUpdate({"name": "2a"}, "two"), StateUpdate({"name": "2b"}, "two")],
        "__copy__",
    )
    graph.invoke(None, forked)

    history = list(graph.get_state_history(config))
    fork = next(s for s in history if s.metadata["source"] == "fork")
    assert [(t.name, t.result) for t in fork.tasks] == [
        ("two", {"name": "2a"}),
        ("two", {"name": "2b"}),
    ]
    assert history[0].values == {"name": "start > one > 2a > 2b > three"}


def test_a_channel_written_twice_by_one_task_shows_every_write(saver: Any) -> None:
    class Foo(TypedDict):
        foo: Annotated[str, lambda a, b: ", ".join(x for x in [a, b] if x)]

    def one(_: Foo) -> Command:
        return Command(update=[("foo", "one.0"), ("foo", "one.1")])

    graph = (
        StateGraph(Foo)
        .add_node("one", one)
        .add_edge(START, "one")
        .add_edge("one", END)
        .compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"foo": "input"}, config)

    assert _steps(graph, config)[1] == (
        {"foo": "input"},
        [("one", {"foo": {"$writes": ["one.0", "one.1"]}})],
    )


class Doubled(TypedDict):
    num: int
    text: str


def _doubler() -> Any:
    def double(state: Doubled) -> Doubled:
        return {"num": state["num"] * 2, "text": state["text"] * 2}

    return (
        StateGraph(Doubled)
        .add_node("double", double)
        .add_edge(START, "double")
        .add_edge("double", END)
        .compile(checkpointer=MemorySaver())
    )


def test_supersteps_from_an_empty_input_show_what_each_task_wrote() -> None:
    graph = _doubler()
    config = {"configurable": {"thread_id": "bulk"}}
    graph.bulk_update_state(
        config,
        [
            [StateUpdate({}, "__input__")],
            [StateUpdate({"num": 1, "text": "one"}, "__start__")],
            [StateUpdate({"num": 2, "text": "oneone"}, "double")],
        ],
    )

    assert _steps(graph, config) == [
        ({}, [("__start__", {"num": 1, "text": "one"})]),
        ({"num": 1, "text": "one"}, [("double", {"num": 2, "text": "oneone"})]),
        ({"num": 2, "text": "oneone"}, []),
    ]


def test_an_empty_input_runs_the_graph_on_the_state_as_it_is() -> None:
    graph = _doubler()
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"num": 1, "text": "a"}, config)
    graph.update_state(config, {}, as_node="__input__")
    assert graph.invoke(None, config) == {"num": 4, "text": "aaaa"}


def test_no_input_at_all_is_refused_with_what_to_pass() -> None:
    graph = _doubler()
    config = {"configurable": {"thread_id": "1"}}
    with pytest.raises(InvalidUpdateError, match=r"values=None.*\{\} for none"):
        graph.update_state(config, None, as_node="__input__")


def test_gotos_added_to_a_paused_step_stay_when_it_pauses_again(saver: Any) -> None:
    runs: list[str] = []

    def ask(state: Log) -> Log:
        runs.append("ask")
        return {"log": [f"ask:{interrupt('q')}"]}

    def extra(state: Log) -> Log:
        runs.append("extra")
        return {"log": ["extra"]}

    graph = (
        StateGraph(Log)
        .add_node("ask", ask)
        .add_node("extra", extra)
        .add_edge(START, "ask")
        .compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"log": []}, config)

    # The goto's task runs while `ask` pauses again on its unanswered question.
    paused = graph.invoke(Command(goto="extra"), config)
    assert paused["log"] == ["extra"]
    assert [i.value for i in paused["__interrupt__"]] == ["q"]
    assert graph.get_state(config).next == ("ask",)

    # Answering the question completes the step with what `extra` wrote, which does
    # not run again.
    assert graph.invoke(Command(resume="yes"), config) == {"log": ["ask:yes", "extra"]}
    # The second invoke ran `ask` and `extra` side by side (either may start first);
    # the third ran `ask` alone.
    assert runs[0] == "ask" and sorted(runs[1:3]) == ["ask", "extra"] and runs[3:] == ["ask"]
