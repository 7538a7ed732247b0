"""A langchain-core message handed to Python (a scripted or ironloop model's answer, a
tool's result) and handed back is read as it is then: every change made to such an
object before it comes back — an assignment, an in-place edit of its tool calls or
metadata — reaches what the engine keeps (the checkpoint, the Rust routing, the tool
that runs the call). What any shortcut for reading back an unchanged object (issue 37
item 5: the answer a node returns is read again, ~8 k instructions) must keep."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core import messages as lc

from ironloop import SqliteSaver, ToolNode, tool
from ironloop.graph import END, START, MessagesState, StateGraph
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import tools_condition


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _call(a: int = 1, b: int = 2) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "add", "args": {"a": a, "b": b}, "id": "c1"}]}


def _agent(
    model: ScriptedChatModel,
    edit: Callable[[Any], None],
    saver: Any = None,
    tools: Sequence[Any] = (add,),
) -> Any:
    """A model node that edits the model's answer before returning it, a Rust
    ``tools_condition`` after it and a ``ToolNode`` of ``tools``."""

    def chat(state: MessagesState) -> dict[str, Any]:
        answer = model.invoke(state["messages"])
        edit(answer)
        return {"messages": [answer]}

    b = StateGraph(MessagesState)
    b.add_node("chat", chat)
    b.add_node("tools", ToolNode(list(tools)))
    b.add_edge(START, "chat")
    b.add_conditional_edges("chat", tools_condition, ["tools", END])
    b.add_edge("tools", "chat")
    return b.compile(checkpointer=saver)


def _stored(db: Path) -> list[Any]:
    """The thread's messages as a new saver reads them from the file (what was
    encoded from the engine's own messages, not the objects Python holds)."""
    saver = SqliteSaver(str(db))
    try:
        graph = _agent(ScriptedChatModel([]), lambda m: None, saver)
        return list(graph.get_state({"configurable": {"thread_id": "t"}}).values["messages"])
    finally:
        saver.close()


def _drive(graph: Any, how: str) -> None:
    """Run the agent once by ``invoke``, ``stream``, ``ainvoke`` or ``astream``."""
    inputs, cfg = {"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}}
    if how == "invoke":
        graph.invoke(inputs, cfg)
    elif how == "stream":
        list(graph.stream(inputs, cfg, stream_mode=["updates", "messages"]))
    elif how == "ainvoke":
        asyncio.run(graph.ainvoke(inputs, cfg))
    else:

        async def drain() -> None:
            async for _ in graph.astream(inputs, cfg, stream_mode=["updates", "messages"]):
                pass

        asyncio.run(drain())


def _run(
    tmp_path: Path, script: list[Any], edit: Callable[[Any], None], how: str = "invoke"
) -> list[Any]:
    db = tmp_path / "c.db"
    saver = SqliteSaver(str(db))
    try:
        _drive(_agent(ScriptedChatModel(script), edit, saver), how)
    finally:
        saver.close()
    return _stored(db)


def test_an_unchanged_answer_is_kept_as_it_was_made(tmp_path: Path) -> None:
    made: list[Any] = []
    stored = _run(tmp_path, [_call(), "done"], made.append)
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"]
    assert [m.id for m in stored[1::2]] == [m.id for m in made]
    assert stored[1].tool_calls == made[0].tool_calls
    assert stored[2].content == "3"
    assert stored[3].content == "done"


def test_an_assigned_field_reaches_the_checkpoint(tmp_path: Path) -> None:
    def edit(m: Any) -> None:
        if not m.tool_calls:
            m.content = "edited"

    stored = _run(tmp_path, [_call(), "done"], edit)
    assert stored[-1].content == "edited"


def test_an_in_place_edit_of_a_calls_arguments_reaches_the_tool(tmp_path: Path) -> None:
    def edit(m: Any) -> None:
        if m.tool_calls:
            m.tool_calls[0]["args"]["a"] = 40

    stored = _run(tmp_path, [_call(), "done"], edit)
    assert stored[1].tool_calls[0]["args"] == {"a": 40, "b": 2}
    assert stored[2].content == "42"


@pytest.mark.parametrize("how", ["invoke", "stream", "ainvoke", "astream"])
def test_edits_reach_the_checkpoint_and_the_tool_on_every_path(tmp_path: Path, how: str) -> None:
    # The check for an unchanged object is on the object, whatever drove the run.
    def edit(m: Any) -> None:
        if m.tool_calls:
            m.tool_calls[0]["args"]["b"] = 5
            m.additional_kwargs["path"] = how
        else:
            m.content = f"edited by {how}"

    stored = _run(tmp_path, [_call(), "done"], edit, how)
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"]
    assert stored[1].tool_calls[0]["args"] == {"a": 1, "b": 5}
    assert stored[1].additional_kwargs == {"path": how}
    assert (stored[2].content, stored[3].content) == ("6", f"edited by {how}")


def test_calls_removed_in_place_end_the_loop(tmp_path: Path) -> None:
    # The Rust router reads the calls from the engine's message: none left, no tools.
    stored = _run(tmp_path, [_call(), "never asked"], lambda m: m.tool_calls.clear())
    assert [m.type for m in stored] == ["human", "ai"]
    assert stored[1].tool_calls == []


def test_in_place_metadata_reaches_the_checkpoint(tmp_path: Path) -> None:
    def edit(m: Any) -> None:
        m.additional_kwargs["note"] = {"seen": True}
        m.response_metadata["model_name"] = "scripted"

    stored = _run(tmp_path, [_call(), "done"], edit)
    for m in stored[1::2]:
        assert m.additional_kwargs == {"note": {"seen": True}}
        assert m.response_metadata["model_name"] == "scripted"


def _wrapped_tools(saver: Any) -> Any:
    def wrap(request: Any, execute: Any) -> Any:
        result = execute(request)
        assert isinstance(result, lc.ToolMessage)
        result.content = f"{result.content}!"
        result.additional_kwargs["edited"] = True
        return result

    b = StateGraph(MessagesState)
    b.add_node("tools", ToolNode([add], wrap_tool_call=wrap))
    b.add_edge(START, "tools")
    return b.compile(checkpointer=saver)


def test_a_tool_result_edited_by_a_wrapper_reaches_the_checkpoint(tmp_path: Path) -> None:
    db, cfg = str(tmp_path / "w.db"), {"configurable": {"thread_id": "w"}}
    ai = lc.AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 2}, "id": "c9"}])
    saver = SqliteSaver(db)
    try:
        _wrapped_tools(saver).invoke({"messages": [ai]}, cfg)
    finally:
        saver.close()
    saver = SqliteSaver(db)
    try:
        tm = _wrapped_tools(saver).get_state(cfg).values["messages"][-1]
    finally:
        saver.close()
    assert (tm.content, tm.additional_kwargs, tm.tool_call_id) == ("4!", {"edited": True}, "c9")


def test_an_unchanged_answer_is_the_very_object_the_state_holds() -> None:
    made: list[Any] = []
    graph = _agent(ScriptedChatModel([_call(), "done"]), made.append)
    out = graph.invoke({"messages": [("user", "go")]})
    assert out["messages"][1] is made[0]
    assert out["messages"][1].tool_calls[0]["args"] == {"a": 1, "b": 2}


def test_a_wrapped_tools_result_handed_back_unchanged_gets_its_id() -> None:
    from ironloop import create_agent
    from ironloop.middleware import wrap_tool_call

    seen: list[tuple[Any, Any]] = []

    @wrap_tool_call
    def keep(request: Any, handler: Any) -> Any:
        result = handler(request)
        seen.append((result, result.id))
        return result

    script = [_call(), _call(5, 6), "done"]
    out = create_agent(ScriptedChatModel(script), [add], middleware=[keep]).invoke(
        {"messages": [("user", "go")]}
    )
    msgs = out["messages"]
    assert [m.type for m in msgs] == ["human", "ai", "tool", "ai", "tool", "ai"]
    # As LangGraph's ToolNode: no id until the graph's add_messages gives it one, on
    # the very object the hook returned.
    assert [i for _, i in seen] == [None, None]
    assert msgs[2] is seen[0][0] and msgs[4] is seen[1][0]
    assert all(isinstance(m.id, str) and m.id for m in msgs)
    assert len({m.id for m in msgs}) == len(msgs)
    assert [msgs[2].content, msgs[4].content] == ["3", "11"]


def test_a_wrapped_tools_result_edited_in_place_by_a_hook_reaches_the_checkpoint(
    tmp_path: Path,
) -> None:
    from ironloop import create_agent
    from ironloop.middleware import wrap_tool_call

    @wrap_tool_call
    def edit(request: Any, handler: Any) -> Any:
        result = handler(request)
        result.response_metadata["checked"] = True
        return result

    db, cfg = str(tmp_path / "a.db"), {"configurable": {"thread_id": "a"}}

    def agent(saver: Any, script: list[Any]) -> Any:
        return create_agent(ScriptedChatModel(script), [add], middleware=[edit], checkpointer=saver)

    saver = SqliteSaver(db)
    try:
        agent(saver, [_call(), "done"]).invoke({"messages": [("user", "go")]}, cfg)
    finally:
        saver.close()
    saver = SqliteSaver(db)
    try:
        tm = agent(saver, []).get_state(cfg).values["messages"][2]
    finally:
        saver.close()
    assert (tm.content, tm.response_metadata) == ("3", {"checked": True})


class Sid(str):
    """An id of a str subclass (LangGraph's tests use such placeholders)."""


@pytest.mark.parametrize(
    ("new", "kind"),
    [(True, bool), (1.0, float), (Sid("1"), Sid)],
    ids=["bool", "float", "str-subclass"],
)
def test_an_edit_to_an_equal_value_of_another_type_is_read_again(new: Any, kind: type) -> None:
    """``1 == True == 1.0`` in Python; the engine keeps the type the tool is given."""
    got: list[Any] = []

    @tool
    def echo(a: Any) -> str:
        """Echo the argument's type."""
        got.append(a)
        return type(a).__name__

    script = [
        {"content": "", "tool_calls": [{"name": "echo", "args": {"a": 1}, "id": "c1"}]},
        "done",
    ]

    def edit(m: Any) -> None:
        if m.tool_calls:
            m.tool_calls[0]["args"]["a"] = new

    out = _agent(ScriptedChatModel(script), edit, tools=[echo]).invoke(
        {"messages": [("user", "go")]}
    )
    want = "str" if kind is Sid else kind.__name__
    assert [type(g) for g in got] == [str if kind is Sid else kind]
    assert out["messages"][2].content == want


def test_an_answer_changed_and_changed_back_is_kept() -> None:
    made: list[Any] = []

    def edit(m: Any) -> None:
        made.append(m)
        old = m.content
        m.content = "changed"
        m.content = old

    out = _agent(ScriptedChatModel(["done"]), edit).invoke({"messages": [("user", "go")]})
    assert out["messages"][-1] is made[0]
    assert out["messages"][-1].content == "done"
