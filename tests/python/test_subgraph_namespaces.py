"""Subgraphs keep their own checkpoints under the parent's thread (LangGraph's
``checkpoint_ns``: ``node:task_id``, ``|`` between levels), in the parent's saver:
resuming an ``interrupt()`` inside a subgraph continues the subgraph where it paused
(the nodes before it do not run again), also two levels down, for a graph invoked
inside a node's function, after a crash, and with ``ainvoke``. ``get_state`` shows the
subgraph's namespace (its state with ``subgraphs=True``); ``delete_thread`` removes it.

Expected values: the same programs under LangGraph 1.2 (run side by side)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import Command, MemorySaver, StateGraph, StateSnapshot, interrupt
from ironloop.graph import START
from ironloop.types import Interrupt


class S(TypedDict):
    log: Annotated[list, operator.add]


def cfg(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


class Ran:
    """Records which nodes ran, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def rec(self, name: str) -> Any:
        def node(s: S) -> dict[str, Any]:
            self.names.append(name)
            return {"log": [name]}

        return node

    def ask(self, name: str) -> Any:
        def node(s: S) -> dict[str, Any]:
            self.names.append(name)
            answer = interrupt(name + "?")
            return {"log": [f"{name}:{answer}"]}

        return node


def line(*nodes: tuple[str, Any], checkpointer: Any = None) -> Any:
    """START -> nodes[0] -> nodes[1] -> ..."""
    b = StateGraph(S)
    prev = START
    for name, fn in nodes:
        b.add_node(name, fn)
        b.add_edge(prev, name)
        prev = name
    return b.compile(checkpointer=checkpointer)


def test_resume_continues_the_subgraph_where_it_paused(saver: Any) -> None:
    ran = Ran()
    sub = line(("one", ran.rec("one")), ("two", ran.ask("two")))
    app = line(("pre", ran.rec("pre")), ("sub", sub), checkpointer=saver)
    out = app.invoke({"log": []}, cfg())
    assert out["log"] == ["pre"]
    assert [i.value for i in out["__interrupt__"]] == ["two?"]

    snap = app.get_state(cfg())
    assert snap.next == ("sub",)
    (task,) = snap.tasks
    ns = task.state["configurable"]["checkpoint_ns"]
    assert task.state == {"configurable": {"thread_id": "t1", "checkpoint_ns": ns}}
    assert ns == f"sub:{task.id}"

    deep = app.get_state(cfg(), subgraphs=True).tasks[0].state
    assert isinstance(deep, StateSnapshot)
    assert deep.values == {"log": ["pre", "one"]}
    assert deep.next == ("two",)
    assert deep.config["configurable"]["checkpoint_ns"] == ns
    assert (deep.metadata["step"], deep.metadata["source"]) == (1, "loop")
    assert [t.name for t in deep.tasks] == ["two"]
    assert [i.value for i in deep.tasks[0].interrupts] == ["two?"]
    # The subgraph's history is its own: input, START, one, (two pending).
    history = list(app.get_state_history(deep.config))
    assert [h.metadata["step"] for h in history] == [1, 0, -1]

    out = app.invoke(Command(resume="yes"), cfg())
    # As LangGraph: the subgraph returns its whole state, added to the parent's.
    assert out == {"log": ["pre", "pre", "one", "two:yes"]}
    assert ran.names == ["pre", "one", "two", "two"]
    after = app.get_state(cfg(), subgraphs=True)
    assert (after.next, after.tasks) == ((), ())


def test_two_levels_and_two_pauses() -> None:
    ran = Ran()
    inner = line(("i1", ran.rec("i1")), ("i2", ran.ask("i2")))
    mid = line(("m1", ran.rec("m1")), ("inner", inner), ("m2", ran.ask("m2")))
    app = line(("t1", ran.rec("t1")), ("mid", mid), checkpointer=MemorySaver())

    out = app.invoke({"log": []}, cfg())
    assert (out["log"], [i.value for i in out["__interrupt__"]]) == (["t1"], ["i2?"])
    mid_state = app.get_state(cfg(), subgraphs=True).tasks[0].state
    assert mid_state.next == ("inner",)
    inner_state = mid_state.tasks[0].state
    assert inner_state.next == ("i2",)
    top_task = app.get_state(cfg()).tasks[0]
    mid_ns = f"mid:{top_task.id}"
    inner_ns = inner_state.config["configurable"]["checkpoint_ns"]
    assert inner_ns == f"{mid_ns}|inner:{mid_state.tasks[0].id}"

    out = app.invoke(Command(resume="a"), cfg())
    assert (out["log"], [i.value for i in out["__interrupt__"]]) == (["t1"], ["m2?"])
    out = app.invoke(Command(resume="b"), cfg())
    assert out == {"log": ["t1", "t1", "m1", "t1", "m1", "i1", "i2:a", "m2:b"]}
    assert ran.names == ["t1", "m1", "i1", "i2", "i2", "m2", "m2"]


def test_a_graph_invoked_inside_a_node_continues_too() -> None:
    ran = Ran()
    sub = line(("s1", ran.rec("s1")), ("s2", ran.ask("s2")))

    def caller(s: S) -> dict[str, Any]:
        ran.names.append("caller")
        return {"log": sub.invoke({"log": []})["log"]}

    app = line(("caller", caller), checkpointer=MemorySaver())
    out = app.invoke({"log": []}, cfg())
    assert out["log"] == []
    assert [i.value for i in out["__interrupt__"]] == ["s2?"]
    assert app.invoke(Command(resume="x"), cfg()) == {"log": ["s1", "s2:x"]}
    assert ran.names == ["caller", "s1", "s2", "caller", "s2"]


def test_a_crash_inside_a_subgraph_resumes_it_from_its_checkpoint(saver: Any) -> None:
    ran = Ran()
    fails = [RuntimeError("boom")]

    def flaky(s: S) -> dict[str, Any]:
        ran.names.append("flaky")
        if fails:
            raise fails.pop()
        return {"log": ["flaky"]}

    sub = line(("c1", ran.rec("c1")), ("flaky", flaky))
    app = line(("sub", sub), checkpointer=saver)
    with pytest.raises(RuntimeError, match="boom"):
        app.invoke({"log": []}, cfg())
    assert app.invoke(None, cfg()) == {"log": ["c1", "flaky"]}
    assert ran.names == ["c1", "flaky", "flaky"]


def test_ainvoke_continues_the_subgraph() -> None:
    ran = Ran()

    async def two(s: S) -> dict[str, Any]:
        ran.names.append("two")
        return {"log": ["two:" + interrupt("two?")]}

    sub = line(("one", ran.rec("one")), ("two", two))
    app = line(("sub", sub), checkpointer=MemorySaver())

    async def main() -> Any:
        first = await app.ainvoke({"log": []}, cfg())
        assert first["__interrupt__"] == [Interrupt("two?", first["__interrupt__"][0].id)]
        return await app.ainvoke(Command(resume="ok"), cfg())

    assert asyncio.run(main()) == {"log": ["one", "two:ok"]}
    assert ran.names == ["one", "two", "two"]


def test_stream_shows_the_subgraph_namespace() -> None:
    ran = Ran()
    sub = line(("one", ran.rec("one")), ("two", ran.ask("two")))
    app = line(("pre", ran.rec("pre")), ("sub", sub), checkpointer=MemorySaver())
    chunks = list(app.stream({"log": []}, cfg(), subgraphs=True))
    ns = chunks[1][0]
    assert ns[0].startswith("sub:")
    assert [(c[0], list(c[1])) for c in chunks] == [
        ((), ["pre"]),
        (ns, ["one"]),
        (ns, ["__interrupt__"]),
        ((), ["__interrupt__"]),
    ]
    assert app.get_state(cfg()).tasks[0].state["configurable"]["checkpoint_ns"] == ns[0]
    resumed = list(app.stream(Command(resume="ok"), cfg(), subgraphs=True))
    assert resumed == [
        (ns, {"two": {"log": ["two:ok"]}}),
        ((), {"sub": {"log": ["pre", "one", "two:ok"]}}),
    ]
    assert ran.names == ["pre", "one", "two", "two"]


def test_delete_thread_removes_the_subgraphs_checkpoints(saver: Any) -> None:
    ran = Ran()
    sub = line(("one", ran.rec("one")), ("two", ran.ask("two")))
    app = line(("sub", sub), checkpointer=saver)
    app.invoke({"log": []}, cfg())
    sub_cfg = app.get_state(cfg()).tasks[0].state
    assert app.get_state(cfg(), subgraphs=True).tasks[0].state.values == {"log": ["one"]}
    saver.delete_thread("t1")
    assert app.get_state(cfg()).values == {}
    assert list(app.get_state_history(cfg())) == []
    # The subgraph's namespace, read where the parent keeps it: gone too.
    assert app._core.get_state(sub_cfg, saver).values == {}


def test_a_subgraph_with_a_saver_of_its_own_keeps_its_checkpoints_in_the_parents(
    saver: Any,
) -> None:
    # As LangGraph: inside a run that keeps checkpoints, the run's checkpointer wins
    # over the one the subgraph was compiled with (the same one, or another).
    for own in (saver, MemorySaver()):
        ran = Ran()
        sub = line(("one", ran.rec("one")), ("two", ran.ask("two")), checkpointer=own)
        app = line(("pre", ran.rec("pre")), ("sub", sub), checkpointer=saver)
        thread = f"own-{id(own)}"
        out = app.invoke({"log": []}, cfg(thread))
        assert [i.value for i in out["__interrupt__"]] == ["two?"]
        deep = app.get_state(cfg(thread), subgraphs=True).tasks[0].state
        assert isinstance(deep, StateSnapshot)
        assert deep.next == ("two",)
        assert deep.config["configurable"]["checkpoint_ns"].startswith("sub:")
        out = app.invoke(Command(resume="yes"), cfg(thread))
        assert out == {"log": ["pre", "pre", "one", "two:yes"]}
        assert ran.names == ["pre", "one", "two", "two"]  # "one" did not run again
        if own is not saver:  # nothing went to the subgraph's own saver
            assert sub.get_state(cfg(thread)).values == {}


def test_a_graph_with_a_saver_of_its_own_given_a_thread_inside_a_node_uses_it() -> None:
    own = MemorySaver()
    ran = Ran()
    child = line(("one", ran.rec("one")), checkpointer=own)

    def node(s: S) -> dict[str, Any]:
        return {"log": child.invoke({"log": []}, cfg("child"))["log"]}

    app = line(("node", node), checkpointer=MemorySaver())
    assert app.invoke({"log": []}, cfg("parent")) == {"log": ["one"]}
    assert child.get_state(cfg("child")).values == {"log": ["one"]}
