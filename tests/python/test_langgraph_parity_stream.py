"""Streams and checkpoint history as LangGraph 1.2 shows them (issue: LangGraph parity).

Each expectation below is what the same program prints under LangGraph 1.2 (run in the
benchmark environment); interrupt ids differ (LangGraph hashes, ironloop task ids) and
are not compared.
"""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from graph_support import thread_config

from ironloop import END, START, Command, Interrupt, MemorySaver, StateGraph, interrupt
from ironloop.types import Send


class S(TypedDict):
    x: Annotated[list, operator.add]


def _ask_graph() -> Any:
    """a -> b (interrupts) -> c (a Command without goto)."""

    def b(s: S) -> dict[str, Any]:
        return {"x": [interrupt("q?")]}

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", b)
    g.add_node("c", lambda s: Command(update={"x": ["c"]}, goto=END))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    return g.compile(checkpointer=MemorySaver())


def _values(chunk: dict[str, Any]) -> dict[str, Any]:
    """A chunk with its interrupts as their values (ids differ from LangGraph's)."""
    out = dict(chunk)
    if "__interrupt__" in out:
        its = out["__interrupt__"]
        assert isinstance(its, tuple), f"__interrupt__ should be a tuple, got {type(its)}"
        assert all(isinstance(i, Interrupt) for i in its)
        out["__interrupt__"] = tuple(i.value for i in its)
    return out


def test_updates_is_the_default_and_interrupts_are_tuples() -> None:
    app = _ask_graph()
    cfg = thread_config("default")
    assert [_values(c) for c in app.stream({"x": []}, cfg)] == [
        {"a": {"x": ["a"]}},
        {"__interrupt__": ("q?",)},
    ]
    # Resuming: the interrupted node's update, then the Command's update (not the Command).
    assert list(app.stream(Command(resume="r"), cfg)) == [
        {"b": {"x": ["r"]}},
        {"c": {"x": ["c"]}},
    ]


def test_values_mode_shows_the_interrupt_and_restarts_from_the_resumed_state() -> None:
    app = _ask_graph()
    cfg = thread_config("values")
    assert [_values(c) for c in app.stream({"x": []}, cfg, stream_mode="values")] == [
        {"x": []},
        {"x": ["a"]},
        {"x": ["a"], "__interrupt__": ("q?",)},
    ]
    assert list(app.stream(Command(resume="r"), cfg, stream_mode="values")) == [
        {"x": ["a"]},
        {"x": ["a", "r"]},
        {"x": ["a", "r", "c"]},
    ]


def test_several_modes_interleave_as_langgraph() -> None:
    app = _ask_graph()
    chunks = list(app.stream({"x": []}, thread_config("multi"), stream_mode=["updates", "values"]))
    assert [(m, _values(c)) for m, c in chunks] == [
        ("values", {"x": []}),
        ("updates", {"a": {"x": ["a"]}}),
        ("values", {"x": ["a"]}),
        ("updates", {"__interrupt__": ("q?",)}),
        ("values", {"x": ["a"], "__interrupt__": ("q?",)}),
    ]


def test_an_update_is_streamed_when_its_node_finishes_not_at_the_end_of_the_step() -> None:
    seen_fast = threading.Event()

    def slow(s: S) -> dict[str, Any]:
        # Finishes only once the consumer has received the fast node's update.
        assert seen_fast.wait(10), "the fast node's update was held until the step ended"
        return {"x": ["slow"]}

    g = StateGraph(S)
    g.add_node("fast", lambda s: {"x": ["fast"]})
    g.add_node("slow", slow)
    g.add_edge(START, "fast")
    g.add_edge(START, "slow")
    chunks = []
    for chunk in g.compile().stream({"x": []}):
        chunks.append(chunk)
        if "fast" in chunk:
            seen_fast.set()
    assert chunks == [{"fast": {"x": ["fast"]}}, {"slow": {"x": ["slow"]}}]


def test_a_command_without_update_streams_none_and_pairs_become_a_dict() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: Command(goto="b"))
    g.add_node("b", lambda s: Command(update=[("x", ["b"])]))
    g.add_edge(START, "a")
    app = g.compile()
    assert list(app.stream({"x": []})) == [{"a": None}, {"b": {"x": ["b"]}}]
    # A step that wrote no state key has no values chunk.
    assert list(app.stream({"x": []}, stream_mode="values")) == [{"x": []}, {"x": ["b"]}]


def _two_questions() -> Any:
    def ask(name: str) -> Any:
        return lambda s: {"x": [interrupt(f"{name}?")]}

    g = StateGraph(S)
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_node("c", ask("c"))
    g.add_node("d", ask("d"))
    g.add_edge(START, "b")
    g.add_edge("b", "c")
    g.add_edge("b", "d")
    return g.compile(checkpointer=MemorySaver())


def test_parallel_interrupts_resumed_one_at_a_time_by_id() -> None:
    app = _two_questions()
    cfg = thread_config("two")
    first = [_values(c) for c in app.stream({"x": []}, cfg)]
    assert first[0] == {"b": {"x": ["b"]}}
    assert sorted(first[1:], key=str) == [{"__interrupt__": ("c?",)}, {"__interrupt__": ("d?",)}]
    ids = {i.value: i.id for i in app.get_state(cfg).interrupts}
    # c's update and d's pause are streamed as each task ends, in completion order (as
    # LangGraph's loop emits them when a task's writes are put): either may come first.
    second = [_values(c) for c in app.stream(Command(resume={ids["c?"]: "C"}), cfg)]
    assert sorted(second, key=str) == [{"__interrupt__": ("d?",)}, {"c": {"x": ["C"]}}]
    # c's answer is kept: it is not asked again, and its saved update is replayed.
    assert list(app.stream(Command(resume={ids["d?"]: "D"}), cfg)) == [
        {"c": {"x": ["C"]}, "__metadata__": {"cached": True}},
        {"d": {"x": ["D"]}},
    ]
    assert app.get_state(cfg).values == {"x": ["b", "C", "D"]}
    assert app.get_state(cfg).next == ()


def test_invoke_lists_interrupts_but_not_static_breakpoints() -> None:
    app = _two_questions()
    out = app.invoke({"x": []}, thread_config("inv"))
    assert isinstance(out["__interrupt__"], list)
    assert sorted(i.value for i in out["__interrupt__"]) == ["c?", "d?"]

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    bp = g.compile(checkpointer=MemorySaver(), interrupt_before=["b"])
    assert bp.invoke({"x": []}, thread_config("bp1")) == {"x": ["a"]}
    assert list(bp.stream({"x": []}, thread_config("bp2"))) == [
        {"a": {"x": ["a"]}},
        {"__interrupt__": ()},
    ]
    assert list(bp.stream({"x": []}, thread_config("bp3"), stream_mode="values")) == [
        {"x": []},
        {"x": ["a"]},
    ]


def test_history_starts_with_an_input_checkpoint_at_step_minus_one() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_edge(START, "a")
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config("hist")
    app.invoke({"x": ["in"]}, cfg)
    app.invoke({"x": ["in2"]}, cfg)
    history = list(app.get_state_history(cfg))
    assert [(s.metadata["step"], s.metadata["source"], s.next) for s in history] == [
        (4, "loop", ()),
        (3, "loop", ("a",)),
        (2, "input", ("__start__",)),
        (1, "loop", ()),
        (0, "loop", ("a",)),
        (-1, "input", ("__start__",)),
    ]
    assert [s.values["x"] for s in history[:5]] == [
        ["in", "a", "in2", "a"],
        ["in", "a", "in2"],
        ["in", "a"],
        ["in", "a"],
        ["in"],
    ]
    assert all(s.metadata["parents"] == {} for s in history)
    assert [t.name for t in history[-1].tasks] == ["__start__"]
    # Replaying from the first input checkpoint runs its input again.
    assert app.invoke(None, history[-1].config) == {"x": ["in", "a"]}


def test_recursion_limit_counts_the_input_step_as_langgraph() -> None:
    g = StateGraph(S)
    for n in "abc":
        g.add_node(n, lambda s, n=n: {"x": [n]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile()
    from ironloop.errors import GraphRecursionError

    for limit in (1, 2, 3):
        try:
            app.invoke({"x": []}, {"recursion_limit": limit})
        except GraphRecursionError:
            continue
        raise AssertionError(f"recursion_limit={limit} should stop a 3-node chain")
    assert app.invoke({"x": []}, {"recursion_limit": 4}) == {"x": ["a", "b", "c"]}


def _sub_ask_graph() -> Any:
    """sub (a subgraph whose node writes to the custom stream) -> b (interrupts)."""
    from ironloop.graph import get_stream_writer

    def a(s: S) -> dict[str, Any]:
        get_stream_writer()({"progress": 1})
        return {"x": ["a"]}

    sb = StateGraph(S)
    sb.add_node("a", a)
    sb.add_edge(START, "a")
    g = StateGraph(S)
    g.add_node("sub", sb.compile())
    g.add_node("b", lambda s: {"x": ["b:" + interrupt("q")]})
    g.add_edge(START, "sub")
    g.add_edge("sub", "b")
    return g.compile(checkpointer=MemorySaver())


def _ints(part: dict[str, Any]) -> dict[str, Any]:
    """A v2 part with interrupts as their values (ids differ from LangGraph's)."""
    out = dict(part)
    if "interrupts" in out:
        out["interrupts"] = [i.value for i in out["interrupts"]]
    data = out["data"]
    if isinstance(data, dict) and "__interrupt__" in data:
        out["data"] = {**data, "__interrupt__": [i.value for i in data["__interrupt__"]]}
    return out


def test_version_v2_stream_parts() -> None:
    app = _sub_ask_graph()
    parts = [
        _ints(p)
        for p in app.stream(
            {"x": []},
            thread_config("v2"),
            stream_mode=["values", "custom", "updates"],
            subgraphs=True,
            version="v2",
        )
    ]
    ns = parts[1]["ns"]
    assert ns[0].startswith("sub:")
    assert parts == [
        {"type": "values", "ns": (), "data": {"x": []}, "interrupts": []},
        {"type": "values", "ns": ns, "data": {"x": []}, "interrupts": []},
        {"type": "custom", "ns": ns, "data": {"progress": 1}},
        {"type": "updates", "ns": ns, "data": {"a": {"x": ["a"]}}},
        {"type": "values", "ns": ns, "data": {"x": ["a"]}, "interrupts": []},
        {"type": "updates", "ns": (), "data": {"sub": {"x": ["a"]}}},
        {"type": "values", "ns": (), "data": {"x": ["a"]}, "interrupts": []},
        {"type": "updates", "ns": (), "data": {"__interrupt__": ["q"]}},
        {"type": "values", "ns": (), "data": {"x": ["a"]}, "interrupts": ["q"]},
    ]
    # One mode, the default updates, without subgraphs: still parts, ns ().
    resumed = list(app.stream(Command(resume="y"), thread_config("v2"), version="v2"))
    assert resumed == [{"type": "updates", "ns": (), "data": {"b": {"x": ["b:y"]}}}]


def test_version_v2_invoke_returns_graph_output() -> None:
    import asyncio
    import warnings

    from ironloop.types import GraphOutput

    app = _sub_ask_graph()
    out = app.invoke({"x": []}, thread_config("o1"), version="v2")
    assert isinstance(out, GraphOutput)
    assert out.value == {"x": ["a"]}
    assert [i.value for i in out.interrupts] == ["q"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert out["x"] == ["a"] and "__interrupt__" in out
    assert all(issubclass(x.category, DeprecationWarning) for x in w) and len(w) == 2
    done = app.invoke(Command(resume="z"), thread_config("o1"), version="v2")
    assert done == GraphOutput({"x": ["a", "b:z"]})
    got = asyncio.run(app.ainvoke({"x": []}, thread_config("o2"), version="v2"))
    assert (got.value, len(got.interrupts)) == ({"x": ["a"]}, 1)


def test_invoke_with_another_stream_mode_returns_the_chunks() -> None:
    import asyncio

    app = _sub_ask_graph()
    chunks = app.invoke({"x": []}, thread_config("m1"), stream_mode="updates")
    assert [list(c) for c in chunks] == [["sub"], ["__interrupt__"]]
    parts = asyncio.run(
        app.ainvoke({"x": []}, thread_config("m2"), stream_mode=["updates"], version="v2")
    )
    assert [p["type"] for p in parts] == ["updates", "updates"]
    assert parts[0]["data"] == {"sub": {"x": ["a"]}}


def _one_node() -> StateGraph:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a", "b"]})
    g.add_edge(START, "a")
    return g


def test_debug_reports_checkpoints_only_when_they_are_saved() -> None:
    # LangGraph: no checkpointer, no checkpoint events; with one, step -1 is "input".
    plain = [e["type"] for e in _one_node().compile().stream({"x": []}, stream_mode="debug")]
    assert plain == ["task", "task_result"]
    app = _one_node().compile(checkpointer=MemorySaver())
    events = list(app.stream({"x": ["in"]}, thread_config("d"), stream_mode="debug"))
    checkpoints = [e for e in events if e["type"] == "checkpoint"]
    assert [(e["step"], e["payload"]["metadata"]["source"]) for e in checkpoints] == [
        (-1, "input"),
        (0, "loop"),
        (1, "loop"),
    ]


def test_a_task_event_carries_its_input_and_its_result_as_a_dict() -> None:
    task, result = (
        e["payload"] for e in _one_node().compile().stream({"x": ["in"]}, stream_mode="debug")
    )
    assert task["name"] == "a" and task["input"] == {"x": ["in"]}
    assert result["result"] == {"x": ["a", "b"]} and result["error"] is None


def test_a_channel_written_twice_in_a_task_result_lists_its_writes() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: [Command(update={"x": ["1"]}), Command(update={"x": ["2"]})])
    g.add_edge(START, "a")
    events = list(g.compile().stream({"x": []}, stream_mode="debug"))
    assert events[-1]["payload"]["result"] == {"x": {"$writes": [["1"], ["2"]]}}


def test_tasks_and_checkpoints_modes_are_the_debug_payloads() -> None:
    app = _one_node().compile(checkpointer=MemorySaver())
    tasks = list(app.stream({"x": []}, thread_config("t"), stream_mode="tasks"))
    assert [sorted(t) for t in tasks] == [
        ["id", "input", "name", "triggers"],
        ["error", "id", "interrupts", "name", "result"],
    ]
    assert tasks[0]["triggers"] == ("branch:to:a",)
    checkpoints = list(app.stream({"x": []}, thread_config("c"), stream_mode="checkpoints"))
    assert [c["metadata"]["step"] for c in checkpoints] == [-1, 0, 1]
    # As LangGraph 1.2: each next task with its id, name, interrupts and state.
    first = checkpoints[1]["tasks"][0]
    assert sorted(first) == ["id", "interrupts", "name", "state"]
    assert first["name"] == "a" and first["interrupts"] == () and first["state"] is None
    assert first["id"].endswith(":a")
    assert checkpoints[-1]["values"] == {"x": ["a", "b"]}
    both = list(app.stream({"x": []}, thread_config("b"), stream_mode=["debug", "tasks"]))
    assert [m for m, _ in both].count("tasks") == 2
    assert [m for m, _ in both].count("debug") == 5


async def test_astream_takes_the_tasks_mode() -> None:
    app = _one_node().compile()
    chunks = [c async for c in app.astream({"x": []}, stream_mode=["tasks", "updates"])]
    assert [m for m, _ in chunks] == ["tasks", "updates", "tasks"]


def test_an_unknown_stream_mode_names_the_modes() -> None:
    with pytest.raises(ValueError, match="debug, tools, tasks or checkpoints"):
        list(_one_node().compile().stream({"x": []}, stream_mode="everything"))


def test_messages_mode_shows_the_new_messages_nodes_return() -> None:
    # LangGraph: each message a node returns that its input did not hold, once.
    from ironloop.graph import MessagesState
    from ironloop.messages import AIMessage, HumanMessage

    def writes(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("written", id="w-1")]}

    def whole(state: MessagesState) -> dict[str, Any]:
        return {"messages": [*state["messages"], AIMessage("added", id="w-2")]}

    def by_command(state: MessagesState) -> Command:
        return Command(update={"messages": [AIMessage("by command", id="w-3")]})

    def nothing_new(state: MessagesState) -> dict[str, Any]:
        return {"messages": state["messages"][:1]}

    g = StateGraph(MessagesState).add_sequence([writes, whole, by_command, nothing_new])
    app = g.add_edge(START, "writes").compile()
    items = list(app.stream({"messages": [HumanMessage("hi", id="h-1")]}, stream_mode="messages"))
    assert [
        (m.content, m.id, meta["langgraph_node"], meta["langgraph_step"]) for m, meta in items
    ] == [
        ("written", "w-1", "writes", 1),
        ("added", "w-2", "whole", 2),
        ("by command", "w-3", "by_command", 3),
    ]
    # Not asked for, nothing is looked for.
    assert [
        m for m, _ in app.stream({"messages": []}, stream_mode=["updates"]) if m == "messages"
    ] == []


class Plain(TypedDict):
    items: list[Any]


def test_messages_mode_looks_for_given_messages_in_any_channel() -> None:
    # A channel without a messages reducer holds Python objects: a message it held
    # when the node ran is not shown again, a new one is, once.
    from ironloop.messages import AIMessage, HumanMessage

    def grows(state: Plain) -> dict[str, Any]:
        return {"items": [*state["items"], AIMessage("new", id="n-1")]}

    def again(state: Plain) -> dict[str, Any]:
        return {"items": state["items"]}

    app = StateGraph(Plain).add_sequence([grows, again]).add_edge(START, "grows").compile()
    given = HumanMessage("hi", id="h-1")
    items = list(app.stream({"items": [given, "not a message"]}, stream_mode="messages"))
    assert [(m.content, m.id, meta["langgraph_node"]) for m, meta in items] == [
        ("new", "n-1", "grows")
    ]


def test_a_sends_task_is_triggered_by_a_push() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]}).add_node("b", lambda s: {"x": ["b"]})
    g.add_edge(START, "a").add_conditional_edges("a", lambda s: [Send("b", {"x": ["s"]})], ["b"])
    tasks = [t for t in g.compile().stream({"x": []}, stream_mode="tasks") if "input" in t]
    assert [(t["name"], t["triggers"]) for t in tasks] == [
        ("a", ("branch:to:a",)),
        ("b", ("__pregel_push",)),
    ]


def test_messages_metadata_has_langgraphs_keys_for_pull_and_push_tasks() -> None:
    """Checked against LangGraph 1.2: messages nodes write without streaming come once
    each, with langgraph_step / node / triggers / path / checkpoint_ns, the config's
    metadata and thread_id. A Send's task is a push task there."""
    from ironloop import MemorySaver, ToolNode, tool
    from ironloop.graph import MessagesState
    from ironloop.messages import AIMessage

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    def model(state: Any) -> Any:
        if state["messages"][-1].type == "human":
            calls = [
                {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"},
                {"name": "add", "args": {"a": 2, "b": 2}, "id": "c2"},
            ]
            return {"messages": [AIMessage("", id="ai1", tool_calls=calls)]}
        return {"messages": [AIMessage("three", id="ai2")]}

    def route(state: Any) -> Any:
        calls = state["messages"][-1].tool_calls
        return [Send("tools", c) for c in calls] if calls else END

    g = StateGraph(MessagesState)
    g.add_node("model", model).add_node("tools", ToolNode([add]))
    g.add_edge(START, "model").add_conditional_edges("model", route, ["tools", END])
    g.add_edge("tools", "model")
    app = g.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t", "user": "bob"}, "metadata": {"extra": 1}}
    items = list(app.stream({"messages": [("user", "hi")]}, config, stream_mode="messages"))
    assert (items[0][0].type, items[0][0].text) == ("ai", "")
    assert sorted(m.text for m, _ in items if m.type == "tool") == ["3", "4"]
    assert [m.text for m, _ in items][-1] == "three"
    for msg, meta in items:
        node = "tools" if msg.type == "tool" else "model"
        assert set(meta) == {
            "extra",
            "thread_id",
            "langgraph_step",
            "langgraph_node",
            "langgraph_triggers",
            "langgraph_path",
            "langgraph_checkpoint_ns",
            "ls_integration",
        }, meta
        assert meta["extra"] == 1 and meta["thread_id"] == "t"
        assert meta["langgraph_node"] == node
        assert meta["langgraph_checkpoint_ns"].startswith(f"{node}:")
        if node == "model":
            assert meta["langgraph_triggers"] == ("branch:to:model",)
            assert meta["langgraph_path"] == ("__pregel_pull", "model")
        else:
            assert meta["langgraph_triggers"] == ("__pregel_push",)
            assert meta["langgraph_path"][0] == "__pregel_push"
            assert meta["langgraph_path"][1] in (0, 1) and meta["langgraph_path"][2] is False
    assert [meta["langgraph_step"] for _, meta in items] == [1, 2, 2, 3]
