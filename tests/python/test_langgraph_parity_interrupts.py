"""Interrupts, the state of a step under way and LangGraph's deprecated spellings, as
LangGraph 1.2 has them (issue 40, LangGraph's own test suite).

Each expectation is what the same program gives under LangGraph 1.2.24.
"""

from __future__ import annotations

import dataclasses
import operator
import warnings
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, Command, MemorySaver, StateGraph, interrupt
from ironloop.checkpoint import BaseCheckpointSaver
from ironloop.errors import is_invalid_resume
from ironloop.types import GraphOutput, Interrupt, RetryPolicy
from ironloop.warnings import (
    LangGraphDeprecatedSinceV05,
    LangGraphDeprecatedSinceV10,
    LangGraphDeprecatedSinceV11,
    LangGraphDeprecationWarning,
)


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _two_questions(calls: Counter[str]) -> Any:
    """`a` and `b` run in one step, and each asks a question."""

    def a(state: Log) -> Log:
        calls["a"] += 1
        return {"log": [f"a:{interrupt('A')}"]}

    def b(state: Log) -> Log:
        calls["b"] += 1
        return {"log": [f"b:{interrupt('B')}"]}

    g = StateGraph(Log).add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    return g.compile(checkpointer=MemorySaver())


def _by_value(snapshot: Any, value: str) -> Interrupt:
    return next(i for i in snapshot.interrupts if i.value == value)


def test_the_current_state_shows_a_finished_task_and_only_the_open_question() -> None:
    calls: Counter[str] = Counter()
    app = _two_questions(calls)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    asked = app.get_state(config)
    app.invoke(Command(resume={_by_value(asked, "A").id: "yes"}), config)

    now = app.get_state(config)
    assert [i.value for i in now.interrupts] == ["B"]
    assert now.next == ("b",)
    # The output of `a` is part of the current state already.
    assert now.values == {"log": ["a:yes"]}
    a_task = next(t for t in now.tasks if t.name == "a")
    assert a_task.interrupts == () and a_task.result == {"log": ["a:yes"]}

    # By its id, the same checkpoint is the record of its step: every question asked.
    record = app.get_state(now.config)
    assert sorted(i.value for i in record.interrupts) == ["A", "B"]
    assert sorted(record.next) == ["a", "b"]
    assert record.values == {"log": []}

    # A paused task runs again when the step continues (and asks again, unanswered);
    # a finished one does not.
    assert calls == {"a": 2, "b": 2}
    out = app.invoke(Command(resume={_by_value(now, "B").id: "ok"}), now.config)
    assert sorted(out["log"]) == ["a:yes", "b:ok"]
    assert calls == {"a": 2, "b": 3}
    # Resuming at the thread's latest checkpoint by its id continued the thread.
    assert app.get_state(config).next == ()
    assert len(list(app.get_state_history(config))) == 3


@dataclasses.dataclass
class Decision:
    approved: bool


def test_interrupt_response_schema_is_shown_and_validates_the_answer() -> None:
    class S(TypedDict):
        answer: Any

    def ask(state: S) -> S:
        return {"answer": interrupt({"q": "ship?"}, response_schema=Decision)}

    app = StateGraph(S).add_node("ask", ask).add_edge(START, "ask").compile(MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    [pending] = app.invoke({"answer": None}, config)["__interrupt__"]
    assert pending.value == {"q": "ship?"}
    assert pending.response_schema == {
        "properties": {"approved": {"title": "Approved", "type": "boolean"}},
        "required": ["approved"],
        "title": "Decision",
        "type": "object",
    }
    assert app.get_state(config).tasks[0].interrupts == (pending,)
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="approved") as e:
        app.invoke(Command(resume={"approved": "perhaps"}), config)
    assert is_invalid_resume(e.value)


def test_a_raw_json_schema_is_shown_and_the_answer_taken_as_it_is() -> None:
    class S(TypedDict):
        answer: Any

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    app = (
        StateGraph(S)
        .add_node("ask", lambda s: {"answer": interrupt("ok?", response_schema=schema)})
        .add_edge(START, "ask")
        .compile(MemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    [pending] = app.invoke({"answer": None}, config)["__interrupt__"]
    assert (pending.value, pending.response_schema) == ("ok?", schema)
    assert app.invoke(Command(resume={"ok": 1, "x": 2}), config) == {"answer": {"ok": 1, "x": 2}}


def test_langgraph_deprecated_spellings_warn_with_its_classes() -> None:
    class S(TypedDict):
        x: int

    with pytest.warns(LangGraphDeprecatedSinceV05, match="Please use `input_schema`"):
        g = StateGraph(S, input=S)
    with pytest.warns(LangGraphDeprecatedSinceV10, match="Please use `context_schema`"):
        assert StateGraph(S, config_schema=dict).context_schema is dict
    with pytest.warns(LangGraphDeprecatedSinceV05, match="Please use `retry_policy`"):
        g.add_node("a", lambda s: {"x": s["x"] + 1}, retry=RetryPolicy(max_attempts=1))
    assert g.add_edge(START, "a").compile().invoke({"x": 1}) == {"x": 2}
    with pytest.warns(LangGraphDeprecatedSinceV10, match="Use `id` instead"):
        assert Interrupt("q", "i-1").interrupt_id == "i-1"
    with pytest.warns(LangGraphDeprecatedSinceV11, match=r"result\[key\]"):
        assert GraphOutput({"x": 1})["x"] == 1
    w = LangGraphDeprecatedSinceV11("`thing` is deprecated.")
    assert isinstance(w, (LangGraphDeprecationWarning, DeprecationWarning))
    assert str(w) == "`thing` is deprecated. Deprecated in LangGraph V1.1 to be removed in V3.0."
    with pytest.raises(TypeError, match="unexpected keyword"):
        StateGraph(S, outputs=S)


def test_a_config_parameter_typed_otherwise_warns_as_in_langgraph() -> None:
    class S(TypedDict):
        x: int

    g = StateGraph(S)
    with pytest.warns(UserWarning, match="should be typed as 'RunnableConfig'"):

        def node(state: S, config: dict) -> S:
            return state

        g.add_node(node)
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        def untyped(state: S, config) -> S:  # type: ignore[no-untyped-def]
            return state

        g.add_node(untyped)


def test_a_saver_subclass_may_add_methods_but_not_override_the_savers() -> None:
    class Tagged(MemorySaver):
        def tag(self) -> str:
            return "mine"

    class Faulty(MemorySaver):
        def put(self, *args: Any) -> Any:
            raise ValueError("never called")

    class S(TypedDict):
        x: int

    g = StateGraph(S).add_node("a", lambda s: s).add_edge(START, "a")
    app = g.compile(checkpointer=Tagged())
    assert app.invoke({"x": 1}, {"configurable": {"thread_id": "t"}}) == {"x": 1}
    with pytest.raises(TypeError, match="Faulty overrides put of MemorySaver"):
        g.compile(checkpointer=Faulty())
    assert BaseCheckpointSaver.get_next_version(Tagged(), None, None) == 1
    assert BaseCheckpointSaver.get_next_version(Tagged(), 4, None) == 5


def test_a_resume_that_matches_no_pending_interrupt_is_refused_before_any_write() -> None:
    from ironloop.errors import UnknownInterruptError

    calls: Counter[str] = Counter()
    app = _two_questions(calls)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    pending = {i.value: i.id for i in app.get_state(config).interrupts}

    with pytest.raises(UnknownInterruptError, match="multiple pending interrupts") as e:
        app.invoke(Command(resume="yes"), config)
    assert (e.value.reason, e.value.pending_ids) == ("ambiguous", tuple(sorted(pending.values())))
    assert isinstance(e.value, ValueError)

    app.invoke(Command(resume={pending["A"]: "yes"}), config)
    with pytest.raises(UnknownInterruptError, match="answered already") as e:
        app.invoke(Command(resume={pending["A"]: "again"}), config)
    assert (e.value.reason, e.value.interrupt_ids, e.value.pending_ids) == (
        "not_pending",
        (pending["A"],),
        (pending["B"],),
    )
    # Nothing was written: the open question is answered as before.
    out = app.invoke(Command(resume="no"), config)
    assert sorted(out["log"]) == ["a:yes", "b:no"]


def test_an_unknown_interrupt_id_is_refused_in_langgraphs_words() -> None:
    from ironloop.errors import UnknownInterruptError

    calls: Counter[str] = Counter()
    app = _two_questions(calls)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    pending = sorted(i.id for i in app.get_state(config).interrupts)
    unknown = "f" * 32
    with pytest.raises(
        UnknownInterruptError, match=f"^Unknown or already-consumed interrupt: {unknown}"
    ) as e:
        app.invoke(Command(resume={unknown: "yes"}), config)
    # It also says what to do: which interrupts are still pending.
    assert all(i in str(e.value) for i in pending)


def _ask_three_times(saver: Any) -> Any:
    """`a` asks three questions in a row and logs its answers and the log it saw."""

    def a(state: Log) -> Log:
        answers = [interrupt(str(q)) for q in range(1, 4)]
        return {"log": ["a:" + "".join(answers), "saw:" + ",".join(state["log"])]}

    return StateGraph(Log).add_node("a", a).add_edge(START, "a").compile(checkpointer=saver)


@pytest.mark.parametrize("fresh", [False, True], ids=["same-app", "fresh-app"])
@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_resume_with_update_applies_the_update_once_before_the_task(
    durability: str, fresh: bool
) -> None:
    saver = MemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    app = _ask_three_times(saver)
    app.invoke({"log": []}, config, durability=durability)
    for i in range(1, 4):
        # A fresh compile: no state the previous run kept in memory helps.
        app = _ask_three_times(saver) if fresh else app
        out = app.invoke(
            Command(resume=str(i), update={"log": [f"u{i}"]}), config, durability=durability
        )
        if i < 3:
            # Paused again: the result shows the updates so far, as LangGraph's.
            assert out["log"] == [f"u{j}" for j in range(1, i + 1)]
    # Each update once, and all of them in the state the resumed task ran on.
    assert out["log"] == ["u1", "u2", "u3", "a:123", "saw:u1,u2,u3"]
    assert app.get_state(config).values["log"] == out["log"]


@pytest.mark.parametrize(
    ("resume", "reason", "named"),
    [
        # LangGraph's strict resume: an empty map names no interrupt.
        ({}, "empty_map", ()),
        # An id in LangGraph's form (32 hex digits) is an id, unknown here: refused,
        # not taken as the one answer to both questions.
        ({"0" * 32: "yes"}, "not_pending", ("0" * 32,)),
    ],
)
def test_a_resume_map_naming_no_pending_interrupt_is_refused(
    resume: dict[str, Any], reason: str, named: tuple[str, ...]
) -> None:
    from ironloop.errors import UnknownInterruptError

    calls: Counter[str] = Counter()
    app = _two_questions(calls)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    pending = tuple(sorted(i.id for i in app.get_state(config).interrupts))
    with pytest.raises(UnknownInterruptError) as e:
        app.invoke(Command(resume=resume), config)
    assert (e.value.reason, e.value.interrupt_ids, e.value.pending_ids) == (
        reason,
        named,
        pending,
    )
    # Nothing was written: both questions are still open.
    assert tuple(sorted(i.id for i in app.get_state(config).interrupts)) == pending


class _Child(TypedDict):
    prompt: str
    answers: Annotated[list[str], operator.add]


class _Parent(TypedDict):
    prompts: list[str]
    answers: Annotated[list[str], operator.add]


@pytest.mark.parametrize("pick", [0, -1])
def test_each_answer_reaches_one_question_of_a_nested_graph(pick: int) -> None:
    """Two subgraph tasks (sent), each with two parallel questions, answered one at a
    time by id: every answer is taken by exactly one question. A paused task that runs
    again without a new answer must not hand its old answer to the next question (as
    LangGraph's test_parallel_interrupts_double)."""
    from ironloop.types import Send

    def ask(tag: str) -> Any:
        def node(state: _Child) -> dict[str, Any]:
            return {"answers": [f"{tag}{state['prompt']}={interrupt(state['prompt'])}"]}

        return node

    child = StateGraph(_Child)
    child.add_node("h", ask("h"))
    child.add_node("d", ask("d"))
    child.add_edge(START, "h")
    child.add_edge(START, "d")
    parent = StateGraph(_Parent)
    parent.add_node("child", child.compile())
    parent.add_conditional_edges(
        START, lambda s: [Send("child", {"prompt": p, "answers": []}) for p in s["prompts"]]
    )
    parent.add_edge("child", END)
    graph = parent.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": f"nested-{pick}"}}
    given: list[str] = []
    run_input: Any = {"prompts": ["a", "b"], "answers": []}
    for n in range(1, 10):
        pending = [
            i
            for chunk in graph.stream(run_input, config, stream_mode="updates")
            for i in chunk.get("__interrupt__", ())
        ]
        if not pending:
            break
        given.append(f"R{n}")
        run_input = Command(resume={pending[pick].id: f"R{n}"})
    answers = graph.get_state(config).values["answers"]
    assert len(given) == 4
    assert sorted(a.split("=")[1] for a in answers) == given
