"""Interrupt ids, resumes and recovery as LangGraph 1.2.24 has them (issue 40): an
interrupt's id is the xxh3-128 digest of its task's checkpoint namespace, a task's
second question has an id of its own, strict resume can be turned off with LangGraph's
config key, a failed task's error is in the state and the history, the history shows
what each step's tasks wrote and the questions they asked, and a run that stops in an
error handler resumes with the handler.

Each expectation is what the same program gives under LangGraph 1.2.24.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from xxhash import xxh3_128_hexdigest

from ironloop import END, START, Command, MemorySaver, StateGraph, interrupt
from ironloop._constants import CONFIG_KEY_STRICT_RESUME
from ironloop.errors import NodeError, UnknownInterruptError

#: LangGraph's own words for one value while several questions wait.
MANY_PENDING = (
    "When there are multiple pending interrupts, you must specify the interrupt id when resuming"
)


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _ask_twice() -> Any:
    def ask(state: Log) -> Log:
        first = interrupt("first?")
        second = interrupt("second?")
        return {"log": [f"{first},{second}"]}

    g = StateGraph(Log).add_node("ask", ask).add_edge(START, "ask")
    return g.compile(checkpointer=MemorySaver())


def _two_at_once() -> Any:
    g = StateGraph(Log)
    g.add_node("a", lambda s: {"log": [f"a:{interrupt('a?')}"]})
    g.add_node("b", lambda s: {"log": [f"b:{interrupt('b?')}"]})
    g.add_edge(START, "a").add_edge(START, "b")
    return g.compile(checkpointer=MemorySaver())


def _ids(app: Any, config: dict[str, Any]) -> dict[str, str]:
    return {i.value: i.id for i in app.get_state(config).interrupts}


def test_an_interrupt_id_is_the_digest_of_its_task_namespace() -> None:
    app = _ask_twice()
    config = {"configurable": {"thread_id": "t"}}
    paused = app.invoke({"log": []}, config)
    state = app.get_state(config)
    (card,) = state.interrupts
    (task,) = state.tasks
    assert card.id == xxh3_128_hexdigest(f"ask:{task.id}".encode())
    # The result, the state and the task show the same id.
    assert paused["__interrupt__"][0].id == card.id
    assert task.interrupts[0].id == card.id

    app.invoke(Command(resume={card.id: "1"}), config)
    (second,) = app.get_state(config).interrupts
    # The task's second question: its namespace and how many answers it has.
    assert second.id == xxh3_128_hexdigest(f"ask:{task.id}|1".encode())
    assert app.invoke(Command(resume={second.id: "2"}), config)["log"] == ["1,2"]


def test_an_answered_question_id_is_refused_for_the_next_question() -> None:
    app = _ask_twice()
    config = {"configurable": {"thread_id": "t", CONFIG_KEY_STRICT_RESUME: True}}
    app.invoke({"log": []}, config)
    (card,) = app.get_state(config).interrupts
    app.invoke(Command(resume={card.id: "yes"}), config)
    (second,) = app.get_state(config).interrupts

    with pytest.raises(UnknownInterruptError) as refused:
        app.invoke(Command(resume={card.id: "yes"}), config)
    assert (refused.value.reason, refused.value.pending_ids) == ("not_pending", (second.id,))
    assert app.invoke(Command(resume={second.id: "no"}), config)["log"] == ["yes,no"]


def test_one_value_for_several_questions_is_also_a_runtime_error() -> None:
    # LangGraph's default resume raises RuntimeError there: a program written for it
    # catches ironloop's refusal too. (ironloop's default is strict resume, LangGraph's
    # opt-in: a deliberate divergence, see docs/decisions.md.)
    app = _two_at_once()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    with pytest.raises(RuntimeError, match=MANY_PENDING) as refused:
        app.invoke(Command(resume="yes"), config)
    assert isinstance(refused.value, UnknownInterruptError)
    assert refused.value.reason == "ambiguous"


def test_without_strict_resume_unknown_ids_are_ignored() -> None:
    app = _two_at_once()
    config = {"configurable": {"thread_id": "t", CONFIG_KEY_STRICT_RESUME: False}}
    app.invoke({"log": []}, config)
    ids = _ids(app, config)

    app.invoke(Command(resume={"0" * 32: "x"}), config)
    assert _ids(app, config) == ids
    with pytest.raises(RuntimeError, match=MANY_PENDING) as refused:
        app.invoke(Command(resume="yes"), config)
    assert not isinstance(refused.value, UnknownInterruptError)
    # Known ids are answered, unknown ones beside them ignored.
    out = app.invoke(Command(resume={ids["a?"]: "1", ids["b?"]: "2", "f" * 32: "3"}), config)
    assert sorted(out["log"]) == ["a:1", "b:2"]


def test_strict_resume_is_the_default_and_refuses_unknown_ids() -> None:
    # ironloop's default (LangGraph's opt-in; see docs/decisions.md).
    app = _two_at_once()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    with pytest.raises(UnknownInterruptError, match="0" * 32):
        app.invoke(Command(resume={"0" * 32: "x"}), config)


class Steps(TypedDict):
    steps: Annotated[list[str], operator.add]
    attempt: int


def test_a_failed_task_shows_its_error_in_the_state() -> None:
    def node1(state: Steps) -> dict[str, Any]:
        if state["attempt"] == 1:
            raise RuntimeError("Simulated failure")
        return {"steps": ["node1"]}

    g = StateGraph(Steps).add_node("node1", node1).add_node("node2", lambda s: {"steps": ["n2"]})
    app = g.add_edge(START, "node1").add_edge("node1", "node2").compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError):
        app.invoke({"steps": ["start"], "attempt": 1}, config)

    state = app.get_state(config)
    assert state.next == ("node1",)
    # As LangGraph: the exception's repr, saved with the step.
    assert state.tasks[0].error == "RuntimeError('Simulated failure')"

    # A new input runs on; the failed step's record keeps its error.
    out = app.invoke({"steps": [], "attempt": 2}, config)
    assert out == {"steps": ["start", "node1", "n2"], "attempt": 2}
    errors = [t.error for s in app.get_state_history(config) for t in s.tasks if t.error]
    assert errors == ["RuntimeError('Simulated failure')"]


class Num(TypedDict):
    num: int
    text: str


def test_the_history_shows_what_each_steps_tasks_wrote() -> None:
    g = StateGraph(Num).add_node("double", lambda s: {"num": s["num"] * 2, "text": s["text"] * 2})
    app = g.add_edge(START, "double").add_edge("double", END).compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"num": 1, "text": "one"}, config)

    results = {t.name: t.result for s in app.get_state_history(config) for t in s.tasks}
    assert results == {
        "__start__": {"num": 1, "text": "one"},
        "double": {"num": 2, "text": "oneone"},
    }


def test_the_history_shows_the_questions_asked_in_a_step() -> None:
    app = _two_at_once()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    ids = _ids(app, config)
    app.invoke(Command(resume={ids["a?"]: "1", ids["b?"]: "2"}), config)

    asked = [sorted(i.value for i in s.interrupts) for s in app.get_state_history(config)]
    assert [a for a in asked if a] == [["a?", "b?"]]


class Foo(TypedDict):
    foo: str


def test_a_run_that_stops_in_an_error_handler_resumes_with_the_handler() -> None:
    calls = {"node": 0, "handler": 0}
    errors: list[NodeError] = []
    handler_fails = [True]

    def failing(state: Foo) -> Foo:
        calls["node"] += 1
        raise RuntimeError("boom")

    def handler(state: Foo, error: NodeError) -> Foo:
        calls["handler"] += 1
        errors.append(error)
        if handler_fails[0]:
            raise RuntimeError("handler crash")
        return {"foo": "recovered"}

    g = StateGraph(Foo).set_node_defaults(error_handler=handler).add_node("fail", failing)
    app = g.add_edge(START, "fail").compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="handler crash"):
        app.invoke({"foo": ""}, config)

    handler_fails[0] = False
    assert app.invoke(None, config)["foo"] == "recovered"
    assert calls == {"node": 1, "handler": 2}
    # The failure comes back from the checkpoint as text.
    assert errors[1].node == "fail" and "boom" in str(errors[1].error)


def test_a_refused_answer_lets_the_other_answered_task_finish_first() -> None:
    # As LangGraph: a resume value an `interrupt(response_schema=)` refuses fails the
    # run only once the step's other tasks finish. A task answered by the same resume
    # is not cut off after its side effect (it would run it again on the next resume).
    from pydantic import BaseModel, ValidationError

    class Decision(BaseModel):
        approved: bool

    sent: list[str] = []

    async def send(state: Log) -> Log:
        interrupt("send?", response_schema=Decision)
        sent.append("email")
        await asyncio.sleep(0.05)  # waiting on the reply to a request already sent
        return {"log": ["sent"]}

    async def check(state: Log) -> Log:
        interrupt("check?", response_schema=Decision)
        return {"log": ["checked"]}

    app = (
        StateGraph(Log)
        .add_node("send", send)
        .add_node("check", check)
        .add_edge(START, "send")
        .add_edge(START, "check")
        .compile(MemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}

    async def main() -> Any:
        await app.ainvoke({"log": []}, config)
        ids = {i.value: i.id for i in (await app.aget_state(config)).interrupts}
        with pytest.raises(ValidationError, match="approved"):
            await app.ainvoke(
                Command(
                    resume={ids["send?"]: {"approved": True}, ids["check?"]: {"approved": "nope"}}
                ),
                config,
            )
        assert [i.value for i in (await app.aget_state(config)).interrupts] == ["check?"]
        return await app.ainvoke(Command(resume={ids["check?"]: {"approved": True}}), config)

    out = asyncio.run(main())
    assert (sorted(out["log"]), sent) == (["checked", "sent"], ["email"])
