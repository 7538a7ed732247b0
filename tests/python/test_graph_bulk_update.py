"""Writing a thread's state as LangGraph 1.2 does: ``bulk_update_state`` (supersteps of
updates, one checkpoint each), ``update_state`` as ``__input__`` / ``__copy__``, and
stateful subgraphs (``compile(checkpointer=True)``) that keep one history per node.
Each expected value is what LangGraph 1.2.24 gives for the same program."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, MemorySaver, StateGraph
from ironloop.errors import InvalidUpdateError
from ironloop.types import Command, Send, StateUpdate


class FooState(TypedDict):
    foo: str


class TaskState(TypedDict):
    foo: str
    tasks: Annotated[list[int], operator.add]


def _agent_tool(saver: Any) -> Any:
    return (
        StateGraph(FooState)
        .add_node("agent", lambda s: {"foo": "agent"})
        .add_node("tool", lambda s: {"foo": "tool"})
        .add_edge(START, "agent")
        .add_edge("agent", "tool")
        .compile(checkpointer=saver)
    )


def _history(graph: Any, thread: str) -> list[dict[str, Any]]:
    cfg = {"configurable": {"thread_id": thread}}
    return [
        {"values": s.values, "next": s.next, "step": s.metadata["step"]}
        for s in graph.get_state_history(cfg)
    ]


def test_bulk_updates_as_input_rebuild_the_history_a_run_makes(saver: Any) -> None:
    graph = _agent_tool(saver)
    graph.invoke({"foo": "input"}, {"configurable": {"thread_id": "run"}})
    turn = [
        [StateUpdate({"foo": "input"}, "__input__")],
        [StateUpdate({"foo": "input"}, "__start__")],
        [StateUpdate({"foo": "agent"}, "agent")],
        [StateUpdate({"foo": "tool"}, "tool")],
    ]
    graph.bulk_update_state({"configurable": {"thread_id": "bulk"}}, turn)

    assert _history(graph, "bulk") == _history(graph, "run")
    assert _history(graph, "bulk")[-1] == {"values": {}, "next": ("__start__",), "step": -1}


def test_input_checkpoint_runs_its_input_when_resumed(saver: Any) -> None:
    graph = _agent_tool(saver)
    cfg = {"configurable": {"thread_id": "1"}}
    saved = graph.update_state(cfg, {"foo": "hello"}, as_node="__input__")
    snap = graph.get_state(saved)
    assert (snap.next, snap.metadata["source"]) == (("__start__",), "input")

    assert graph.invoke(None, cfg) == {"foo": "tool"}
    assert [h["step"] for h in _history(graph, "1")] == [2, 1, 0, -1]


def test_a_superstep_of_several_updates_is_one_checkpoint_through_the_reducers() -> None:
    def fan_out(state: TaskState) -> Command[Any]:
        return Command(goto=[Send("task", {"index": i}) for i in range(3)], update={"foo": "map"})

    graph = (
        StateGraph(TaskState)
        .add_node("map", fan_out)
        .add_node("task", lambda s: {"tasks": [s["index"]]})
        .add_edge(START, "map")
        .compile(checkpointer=MemorySaver())
    )
    cfg = {"configurable": {"thread_id": "1"}}
    graph.bulk_update_state(
        cfg,
        [
            [
                StateUpdate(
                    Command(
                        goto=[Send("task", {"index": i}) for i in range(3)], update={"foo": "map"}
                    ),
                    "map",
                )
            ],
        ],
    )
    # The update's Command routes as the node's would: three `task` tasks are next.
    assert graph.get_state(cfg).next == ("task", "task", "task")

    graph.bulk_update_state(cfg, [[StateUpdate({"tasks": [i]}, "task") for i in range(3)]])
    snap = graph.get_state(cfg)
    assert snap.values == {"foo": "map", "tasks": [0, 1, 2]}
    assert snap.next == ()
    assert len(list(graph.get_state_history(cfg))) == 2


def test_bulk_update_refusals_say_what_to_change() -> None:
    graph = _agent_tool(MemorySaver())
    cfg = {"configurable": {"thread_id": "1"}}
    with pytest.raises(ValueError, match="No supersteps provided"):
        graph.bulk_update_state(cfg, [])
    with pytest.raises(ValueError, match="No updates provided"):
        graph.bulk_update_state(cfg, [[], []])
    with pytest.raises(InvalidUpdateError, match="needs as_node on each"):
        graph.bulk_update_state(cfg, [[StateUpdate({"foo": "a"}), StateUpdate({"foo": "b"})]])
    with pytest.raises(InvalidUpdateError, match="must be the only update"):
        graph.bulk_update_state(
            cfg, [[StateUpdate(None, "__end__"), StateUpdate(None, "__copy__")]]
        )
    with pytest.raises(InvalidUpdateError, match="needs a checkpoint to copy"):
        graph.update_state(cfg, None, as_node="__copy__")
    # A divergence: LangGraph applies the update to that one task of the node.
    with pytest.raises(InvalidUpdateError, match="leave task_id out"):
        graph.bulk_update_state(cfg, [[StateUpdate({"foo": "a"}, "agent", "some-task")]])
    assert list(graph.get_state_history(cfg)) == []


def test_copy_forks_beside_the_checkpoint_and_runs_its_tasks_again(saver: Any) -> None:
    calls: list[str] = []

    def tool(state: FooState) -> dict[str, str]:
        calls.append(state["foo"])
        return {"foo": "tool"}

    graph = (
        StateGraph(FooState)
        .add_node("agent", lambda s: {"foo": "agent"})
        .add_node("tool", tool)
        .add_edge(START, "agent")
        .add_edge("agent", "tool")
        .compile(checkpointer=saver)
    )
    cfg = {"configurable": {"thread_id": "1"}}
    graph.invoke({"foo": "input"}, cfg)
    before_tool = next(s for s in graph.get_state_history(cfg) if s.next == ("tool",))

    copy_cfg = graph.update_state(before_tool.config, None, as_node="__copy__")
    copy = graph.get_state(copy_cfg)
    assert copy.metadata["source"] == "fork"
    assert copy.metadata["step"] == before_tool.metadata["step"] + 1
    assert (copy.values, copy.next) == (before_tool.values, before_tool.next)
    # A sibling: same parent as the copied checkpoint.
    assert copy.parent_config == before_tool.parent_config

    assert graph.invoke(None, copy_cfg) == {"foo": "tool"}
    assert calls == ["agent", "agent"]


def test_async_forms_match() -> None:
    graph = _agent_tool(MemorySaver())
    cfg = {"configurable": {"thread_id": "1"}}

    async def main() -> Any:
        await graph.abulk_update_state(cfg, [[StateUpdate({"foo": "x"}, "agent")]])
        return await graph.aupdate_state(cfg, {"foo": "y"}, "tool")

    out = asyncio.run(main())
    assert graph.get_state(out).values == {"foo": "y"}


class InnerState(TypedDict):
    my_key: Annotated[str, operator.add]
    my_other_key: str


class OuterState(TypedDict):
    my_key: str


def _looping_parent(inner_checkpointer: Any, saver: Any) -> Any:
    inner = (
        StateGraph(InnerState)
        .add_node("inner_1", lambda s: {"my_key": " got here", "my_other_key": s["my_key"]})
        .add_node("inner_2", lambda s: {"my_key": " and there"})
        .add_edge(START, "inner_1")
        .add_edge("inner_1", "inner_2")
        .add_edge("inner_2", END)
    )
    return (
        StateGraph(OuterState)
        .add_node("inner", inner.compile(checkpointer=inner_checkpointer))
        .add_edge(START, "inner")
        .add_conditional_edges(
            "inner", lambda s: "inner" if s["my_key"].count("there") < 2 else END
        )
        .compile(checkpointer=saver)
    )


def test_stateful_subgraph_continues_its_own_history_between_calls(saver: Any) -> None:
    app = _looping_parent(True, saver)
    cfg = {"configurable": {"thread_id": "2"}}
    chunks = list(app.stream({"my_key": ""}, cfg, subgraphs=True))
    assert chunks == [
        (("inner",), {"inner_1": {"my_key": " got here", "my_other_key": ""}}),
        (("inner",), {"inner_2": {"my_key": " and there"}}),
        ((), {"inner": {"my_key": " got here and there"}}),
        (
            ("inner",),
            {
                "inner_1": {
                    "my_key": " got here",
                    "my_other_key": " got here and there got here and there",
                }
            },
        ),
        (("inner",), {"inner_2": {"my_key": " and there"}}),
        ((), {"inner": {"my_key": " got here and there got here and there got here and there"}}),
    ]
    assert len(list(app.get_state_history(cfg))) == 4


def test_subgraph_without_checkpointer_starts_afresh_each_call() -> None:
    app = _looping_parent(None, MemorySaver())
    out = app.invoke({"my_key": ""}, {"configurable": {"thread_id": "1"}})
    # The second call sees only the parent's value, not the subgraph's last state.
    assert out == {"my_key": " got here and there got here and there"}
    ns = [
        c[0]
        for c in app.stream({"my_key": ""}, {"configurable": {"thread_id": "2"}}, subgraphs=True)
    ]
    assert all(n == () or n[0].startswith("inner:") for n in ns)


def test_a_subgraphs_nodes_see_the_parents_config_and_their_own_thread() -> None:
    seen: dict[str, Any] = {}

    def sub_node(state: FooState, config: Any) -> FooState:
        seen.update(config["configurable"])
        seen["recursion_limit"] = config.get("recursion_limit")
        return {"foo": "done"}

    sub = StateGraph(FooState).add_node("inner", sub_node).add_edge(START, "inner").compile()
    app = (
        StateGraph(FooState)
        .add_node("outer", sub)
        .add_edge(START, "outer")
        .compile(checkpointer=MemorySaver())
    )
    cfg = {"configurable": {"thread_id": "1", "user_id": "u1"}, "recursion_limit": 7}
    assert app.invoke({"foo": "x"}, cfg) == {"foo": "done"}
    assert seen["thread_id"] == "1"
    assert seen["user_id"] == "u1"
    assert seen["recursion_limit"] == 7
    # The subgraph's own namespace, below its parent's node.
    assert seen["checkpoint_ns"].startswith("outer:")


def test_an_update_of_a_thread_without_checkpoints_is_step_0() -> None:
    # LangGraph's: the step after the input's -1, as if the thread had one.
    graph = (
        StateGraph(FooState)
        .add_node("a", lambda s: {"foo": s["foo"] + "a"})
        .add_edge(START, "a")
        .compile(checkpointer=MemorySaver())
    )
    cfg = {"configurable": {"thread_id": "fresh"}}
    graph.update_state(cfg, {"foo": "x"}, as_node="__start__")
    assert _history(graph, "fresh") == [{"values": {"foo": "x"}, "next": ("a",), "step": 0}]
