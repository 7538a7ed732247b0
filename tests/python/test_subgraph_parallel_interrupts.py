"""Questions a subgraph asks from parallel tasks reach the parent as separate
interrupts, as LangGraph 1.2.24 shows them (each expectation checked against it): each
with the subgraph task's own id, answered by id (one at a time or together, at any
depth), one value for several refused; a lone question keeps its subgraph id and takes
a plain value. ``saver`` is conftest's (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from xxhash import xxh3_128_hexdigest

from ironloop import START, Command, MemorySaver, StateGraph, interrupt


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _parallel() -> Any:
    """A subgraph whose nodes ``a`` and ``b`` start together and both ask."""
    child = StateGraph(State)
    child.add_node("a", lambda s: {"log": [f"a:{interrupt('A')}"]})
    child.add_node("b", lambda s: {"log": [f"b:{interrupt('B')}"]})
    child.add_edge(START, "a").add_edge(START, "b")
    return child.compile()


def _wrapped(inner: Any, name: str) -> StateGraph:
    builder = StateGraph(State)
    builder.add_node(name, inner)
    builder.add_edge(START, name)
    return builder


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _by_value(interrupts: Any) -> dict[str, str]:
    return {i.value: i.id for i in interrupts}


def test_each_question_shows_with_its_subgraph_tasks_id(saver: Any) -> None:
    graph = _wrapped(_parallel(), "child").compile(checkpointer=saver)
    config = _config()
    result = graph.invoke({"log": []}, config)
    assert sorted(i.value for i in result["__interrupt__"]) == ["A", "B"]
    snapshot = graph.get_state(config, subgraphs=True)
    assert _by_value(snapshot.interrupts) == _by_value(result["__interrupt__"])
    # The parent's task shows both; each id is the one the subgraph's task asked with
    # (LangGraph's: the digest of that task's namespace).
    (task,) = snapshot.tasks
    assert sorted(i.value for i in task.interrupts) == ["A", "B"]
    inner = task.state
    ns = inner.config["configurable"]["checkpoint_ns"]
    for t in inner.tasks:
        (asked,) = t.interrupts
        assert asked.id == xxh3_128_hexdigest(f"{ns}|{t.name}:{t.id}".encode())
        assert _by_value(snapshot.interrupts)[asked.value] == asked.id


def test_one_value_for_both_is_refused_and_each_is_answered_by_id(saver: Any) -> None:
    graph = _wrapped(_parallel(), "child").compile(checkpointer=saver)
    config = _config()
    graph.invoke({"log": []}, config)
    ids = _by_value(graph.get_state(config).interrupts)
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        graph.invoke(Command(resume="ambiguous"), config)
    # One answer: the other question stays, with the same id.
    result = graph.invoke(Command(resume={ids["A"]: "x"}), config)
    assert [(i.value, i.id) for i in result["__interrupt__"]] == [("B", ids["B"])]
    assert [(i.value, i.id) for i in graph.get_state(config).interrupts] == [("B", ids["B"])]
    # The lone question left takes a plain value too.
    result = graph.invoke(Command(resume="y"), config)
    assert sorted(result["log"]) == ["a:x", "b:y"]
    assert graph.get_state(config).next == ()


def test_both_answered_at_once_and_streamed_as_one_chunk() -> None:
    graph = _wrapped(_parallel(), "child").compile(checkpointer=MemorySaver())
    config = _config()
    chunks = list(graph.stream({"log": []}, config, stream_mode="updates"))
    # As LangGraph: the task's questions in one `__interrupt__` chunk.
    assert len(chunks) == 1
    assert sorted(i.value for i in chunks[0]["__interrupt__"]) == ["A", "B"]
    answers = {i.id: i.value.lower() for i in chunks[0]["__interrupt__"]}
    chunks = list(graph.stream(Command(resume=answers), config, stream_mode="updates"))
    assert sorted(chunks[-1]["child"]["log"]) == ["a:a", "b:b"]


def test_questions_two_levels_down_are_answered_from_the_root() -> None:
    mid = _wrapped(_parallel(), "inner").compile()
    graph = _wrapped(mid, "mid").compile(checkpointer=MemorySaver())
    config = _config()
    graph.invoke({"log": []}, config)
    snapshot = graph.get_state(config, subgraphs=True)
    ids = _by_value(snapshot.interrupts)
    inner = snapshot.tasks[0].state.tasks[0].state
    assert {t.interrupts[0].value: t.interrupts[0].id for t in inner.tasks} == ids
    result = graph.invoke(Command(resume={ids["A"]: "x"}), config)
    assert [i.id for i in result["__interrupt__"]] == [ids["B"]]
    result = graph.invoke(Command(resume={ids["B"]: "y"}), config)
    assert sorted(result["log"]) == ["a:x", "b:y"]


async def test_async_runs_answer_each_by_id() -> None:
    graph = _wrapped(_parallel(), "child").compile(checkpointer=MemorySaver())
    config = _config()
    result = await graph.ainvoke({"log": []}, config)
    ids = _by_value(result["__interrupt__"])
    result = await graph.ainvoke(Command(resume={ids["B"]: "y"}), config)
    assert [i.value for i in result["__interrupt__"]] == ["A"]
    result = await graph.ainvoke(Command(resume={ids["A"]: "x"}), config)
    assert sorted(result["log"]) == ["a:x", "b:y"]


def test_a_lone_question_keeps_its_subgraph_id_and_takes_a_plain_value() -> None:
    child = StateGraph(State)
    child.add_node("a", lambda s: {"log": [f"a:{interrupt('A')}"]})
    child.add_edge(START, "a")
    graph = _wrapped(child.compile(), "child").compile(checkpointer=MemorySaver())
    config = _config()
    result = graph.invoke({"log": []}, config)
    inner = graph.get_state(config, subgraphs=True).tasks[0].state
    assert [i.id for i in result["__interrupt__"]] == [inner.tasks[0].interrupts[0].id]
    assert graph.invoke(Command(resume="ok"), config) == {"log": ["a:ok"]}


def test_a_subgraph_updated_asks_again_by_new_ids_and_its_replay_reasks_both() -> None:
    # A stateful subgraph (`checkpointer=True`) updated while paused asks again, with
    # its new tasks' ids: those are what the parent answers. Replaying its checkpoint
    # asks both again, the one answered since included.
    class Value(TypedDict, total=False):
        value: Annotated[list[str], operator.add]

    sub = StateGraph(Value)
    sub.add_node("a", lambda s: {"value": [f"a:{interrupt('a')}"]})
    sub.add_node("b", lambda s: {"value": [f"b:{interrupt('b')}"]})
    sub.add_edge(START, "a").add_edge(START, "b")
    builder = StateGraph(Value).add_node("sub", sub.compile(checkpointer=True))
    graph = builder.add_edge(START, "sub").compile(checkpointer=MemorySaver())
    config = _config()

    def head() -> Any:
        return graph.get_state(config, subgraphs=True).tasks[0].state.config

    first = _by_value(graph.invoke({"value": []}, config)["__interrupt__"])
    graph.update_state(head(), {"value": ["u"]}, as_node="__start__")
    again = _by_value(graph.invoke(None, config)["__interrupt__"])
    assert sorted(again) == ["a", "b"] and set(again.values()).isdisjoint(first.values())
    assert _by_value(graph.get_state(config).interrupts) == again
    result = graph.invoke(Command(resume={again["a"]: "yes"}), config)
    assert [(i.value, i.id) for i in result["__interrupt__"]] == [("b", again["b"])]
    result = graph.invoke(None, head())
    assert sorted(i.value for i in result["__interrupt__"]) == ["a", "b"]
