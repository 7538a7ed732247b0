"""Send carrying control values, and pauses with nothing to answer, as LangGraph 1.2.

- A ``Send`` whose argument holds a ``Command`` (itself routing with a ``Send``), an
  ``Interrupt`` or an ``Overwrite`` is checkpointed with its step and comes back as
  those objects, in any graph, with no ``serde_allowlist`` and no warning.
- A ``Command(update=..., goto=...)`` given to a thread paused before its tasks (a
  static breakpoint, an ``interrupt()``) continues them: the update is applied first,
  the gotos run in the same step, and the breakpoint does not stop them again.
- A subgraph that stops at one of its static breakpoints pauses its task in the parent
  (its siblings finish and are kept); resuming continues the subgraph.
- ``stream_mode="messages"`` shows the messages of a node that returns a list of
  ``Command``s; ``get_state().tasks`` carry LangGraph's task paths; ``Command``'s
  repr shows only the fields that are set.

Each expectation is what the same program gives under LangGraph 1.2.24.
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, TypedDict

import pytest
from graph_support import thread_config

from ironloop import START, MemorySaver, MessagesState, StateGraph
from ironloop._ironloop import _checkpoint_decode, _checkpoint_encode
from ironloop.messages import HumanMessage
from ironloop.types import Command, Interrupt, Overwrite, Send, interrupt


class S(TypedDict):
    x: Annotated[list, operator.add]


def test_control_values_round_trip_through_the_codec_without_an_allowlist() -> None:
    value = Send(
        "work",
        {
            "cmd": Command(update={"k": "v"}, goto=[Send("ask", 1), "b"], resume=None),
            "pause": Interrupt("why?", id="i1"),
            "items": Overwrite(["only"]),
        },
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = _checkpoint_decode(_checkpoint_encode(value))
    assert type(back) is Send and back == value
    assert type(back.arg["cmd"].goto[0]) is Send
    assert back.arg["pause"] == Interrupt("why?", id="i1")
    assert back.arg["items"] == Overwrite(["only"])


def test_a_send_whose_arg_is_a_command_is_checkpointed_and_resumed(saver: Any) -> None:
    seen: list[Any] = []

    def work(arg: Any) -> dict[str, Any]:
        seen.append(arg)
        return {"x": [repr(arg)]}

    def ask(arg: Any) -> dict[str, Any]:
        return {"x": [f"ask {arg} {interrupt(f'ok {arg}?')}"]}

    g = StateGraph(S)
    g.add_node("start", lambda s: {"x": ["s"]})
    g.add_node("work", work)
    g.add_node("ask", ask)
    g.add_edge(START, "start")
    g.add_conditional_edges(
        "start", lambda s: [Send("work", Command(goto=Send("ask", 1), update={"k": "v"}))]
    )
    g.add_conditional_edges("work", lambda s: [Send("ask", 2)])
    app = g.compile(checkpointer=saver, interrupt_before=["work"])
    config = thread_config("send-command")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert app.invoke({"x": []}, config) == {"x": ["s"]}
        state = app.get_state(config)
        assert state.next == ("work",)
        assert state.tasks[0].path == ("__pregel_push", 0, False)
        shown = "Command(update={'k': 'v'}, goto=Send(node='ask', arg=1))"
        out = app.invoke(None, config)
    assert out["x"] == ["s", shown]
    assert [i.value for i in out["__interrupt__"]] == ["ok 2?"]
    # The node got the Command back as it was sent, its goto a Send again.
    assert seen == [Command(update={"k": "v"}, goto=Send("ask", 1))]
    assert type(seen[0].goto) is Send
    assert app.invoke(Command(resume="yes"), config) == {"x": ["s", shown, "ask 2 yes"]}
    assert len(seen) == 1


def _abc(**kw: Any) -> Any:
    g = StateGraph(S)
    for n in "abc":
        g.add_node(n, lambda s, n=n: {"x": [n]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=MemorySaver(), **kw)


def test_a_command_at_a_static_breakpoint_continues_with_its_update_and_gotos() -> None:
    app = _abc(interrupt_before=["b"])
    config = thread_config("goto-at-breakpoint")
    assert app.invoke({"x": ["in"]}, config) == {"x": ["in", "a"]}
    out = app.invoke(Command(goto="c", update={"x": ["u"]}), config)
    assert out == {"x": ["in", "a", "u", "b", "c"]}
    assert app.get_state(config).next == ()


def test_a_command_update_at_a_static_breakpoint_runs_the_paused_task() -> None:
    app = _abc(interrupt_before=["a"])
    config = thread_config("update-at-breakpoint")
    app.invoke({"x": ["in"]}, config)
    assert app.invoke(Command(update={"x": ["u"]}), config) == {"x": ["in", "u", "a", "b"]}


def test_a_command_update_at_an_interrupt_asks_again() -> None:
    def ask(s: S) -> dict[str, Any]:
        return {"x": [interrupt("q?")]}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile(checkpointer=MemorySaver())
    config = thread_config("update-at-interrupt")
    app.invoke({"x": []}, config)
    out = app.invoke(Command(update={"x": ["u"]}), config)
    assert out["x"] == ["u"] and [i.value for i in out["__interrupt__"]] == ["q?"]
    assert app.get_state(config).next == ("ask",)
    assert app.invoke(Command(resume="ans"), config) == {"x": ["u", "ans"]}


def test_a_command_goto_naming_no_node_is_refused() -> None:
    app = _abc(interrupt_before=["b"])
    config = thread_config("goto-unknown")
    app.invoke({"x": []}, config)
    with pytest.raises(Exception, match="names no node"):
        app.invoke(Command(goto="nowhere"), config)


def _nested(**inner_kw: Any) -> Any:
    inner = StateGraph(S)
    inner.add_node("i1", lambda s: {"x": ["i1"]})
    inner.add_node("i2", lambda s: {"x": ["i2"]})
    inner.add_edge(START, "i1")
    inner.add_edge("i1", "i2")
    calls: list[str] = []

    def side(s: S) -> dict[str, Any]:
        calls.append("side")
        return {"x": ["side"]}

    outer = StateGraph(S)
    outer.add_node("inner", inner.compile(**inner_kw))
    outer.add_node("side", side)
    outer.add_node("last", lambda s: {"x": ["last"]})
    outer.add_edge(START, "inner")
    outer.add_edge(START, "side")
    outer.add_edge(["inner", "side"], "last")
    return outer.compile(checkpointer=MemorySaver()), calls


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_subgraph_static_breakpoint_pauses_its_task_beside_parallel_ones(how: str) -> None:
    import asyncio

    app, calls = _nested(interrupt_before=["i2"])
    config = thread_config(f"nested-{how}")

    def call(inp: Any) -> Any:
        if how == "invoke":
            return app.invoke(inp, config)
        return asyncio.run(app.ainvoke(inp, config))

    # The sibling finished: its writes show, and are kept for the resume.
    assert call({"x": []}) == {"x": ["side"]}
    state = app.get_state(config)
    assert state.next == ("inner",) and state.interrupts == ()
    assert call(None) == {"x": ["i1", "i2", "side", "last"]}
    assert calls == ["side"]


def test_a_subgraph_pause_after_a_node_streams_an_empty_interrupt() -> None:
    inner = StateGraph(S)
    inner.add_node("i1", lambda s: {"x": ["i1"]})
    inner.add_node("i2", lambda s: {"x": ["i2"]})
    inner.add_edge(START, "i1")
    inner.add_edge("i1", "i2")
    outer = StateGraph(S)
    outer.add_node("inner", inner.compile(interrupt_after=["i1"]))
    outer.add_node("o", lambda s: {"x": ["o"]})
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "o")
    app = outer.compile(checkpointer=MemorySaver())
    config = thread_config("nested-after")
    assert list(app.stream({"x": []}, config)) == [{"__interrupt__": ()}]
    state = app.get_state(config)
    assert state.next == ("inner",) and [t.interrupts for t in state.tasks] == [()]
    assert app.invoke(None, config) == {"x": ["i1", "i2", "o"]}
    # Only the root shows the pause, once; the subgraph shows what it did.
    chunks = app.stream({"x": []}, thread_config("nested-after-ns"), subgraphs=True)
    shown = [(ns[0].split(":")[0] if ns else "", c) for ns, c in chunks]
    assert shown == [("inner", {"i1": {"x": ["i1"]}}), ("", {"__interrupt__": ()})]


def test_messages_of_a_list_of_commands_are_streamed() -> None:
    def last(state: Any) -> list[Command]:
        return [Command(update={"messages": HumanMessage(content="baz", id="m2")})]

    g = StateGraph(MessagesState)
    g.add_node("first", lambda s: Command(update={"messages": HumanMessage("bar", id="m1")}))
    g.add_node("last", last)
    g.add_edge(START, "first")
    g.add_edge("first", "last")
    app = g.compile()
    got = [(m.content, meta["langgraph_node"]) for m, meta in app.stream(
        {"messages": []}, stream_mode="messages"
    )]  # fmt: skip
    assert got == [("bar", "first"), ("baz", "last")]


def test_pulled_tasks_carry_langgraphs_path() -> None:
    app = _abc(interrupt_before=["b"])
    config = thread_config("paths")
    app.invoke({"x": []}, config)
    assert [t.path for t in app.get_state(config).tasks] == [("__pregel_pull", "b")]


def test_command_repr_shows_the_fields_that_are_set() -> None:
    assert repr(Command(goto=Send("n", 3))) == "Command(goto=Send(node='n', arg=3))"
    assert repr(Command()) == "Command()"
    assert repr(Command(update={"a": 1}, resume=0)) == "Command(update={'a': 1})"
