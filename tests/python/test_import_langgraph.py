"""``ironloop.checkpoint.import_langgraph``: a thread LangGraph 1.2.24 itself wrote to
its SQLite or PostgreSQL tables (langgraph-checkpoint-sqlite / -postgres, pinned in
requirements-dev.txt) —
messages, a subgraph, an ``interrupt()`` inside it — continues on ironloop's port of
the same graph as it would have on LangGraph."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest


def _build(lg: bool) -> tuple[Any, Any, Any]:
    """The same graph in LangGraph (``lg``) or ironloop: greet, then a subgraph that
    asks a name with ``interrupt()``, then bye. Returns (builder, Command, END)."""
    if lg:
        from langgraph.graph import END, START, StateGraph
        from langgraph.graph.message import add_messages
        from langgraph.types import Command, interrupt
    else:
        from ironloop.graph import END, START, StateGraph, add_messages
        from ironloop.types import Command, interrupt

    # Built eagerly (not a class body): the reducer is a local name.
    S = TypedDict("S", {"messages": Annotated[list[Any], add_messages], "name": str})  # noqa: UP013

    def ask(s: Any) -> dict[str, Any]:
        name = interrupt("name?")
        return {"name": name, "messages": [("ai", f"hi {name}")]}

    sub = StateGraph(S)
    sub.add_node("prep", lambda s: {"messages": [("ai", "in sub")]})
    sub.add_node("ask", ask)
    sub.add_edge(START, "prep")
    sub.add_edge("prep", "ask")
    sub.add_edge("ask", END)
    g = StateGraph(S)
    g.add_node("greet", lambda s: {"messages": [("ai", "who are you?")]})
    g.add_node("inner", sub.compile())
    g.add_node("bye", lambda s: {"messages": [("ai", "bye " + s["name"])]})
    g.add_edge(START, "greet")
    g.add_edge("greet", "inner")
    g.add_edge("inner", "bye")
    g.add_edge("bye", END)
    return g, Command, END


def _texts(state: dict[str, Any]) -> list[str]:
    return [m.content for m in state["messages"]]


@pytest.fixture(params=["sqlite", "postgres"])
def langgraph_source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """LangGraph's own tables (its SQLite file, or its PostgreSQL tables in a schema of
    their own): thread "paused" stopped at the subgraph's interrupt, thread "done"
    finished. Yields what opens LangGraph's saver on them."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver as LangGraphSqliteSaver

            path = tmp_path / "langgraph.db"

            def open_source() -> Any:
                conn = stack.enter_context(sqlite3.connect(path, check_same_thread=False))
                return LangGraphSqliteSaver(conn)
        else:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver as LangGraphPostgresSaver
            from pg_support import admin, postgres_url, temp_schema
            from psycopg.rows import dict_row

            schema = stack.enter_context(temp_schema())
            with admin() as c:
                c.execute(f"CREATE SCHEMA {schema}")

            def open_source() -> Any:
                conn = stack.enter_context(
                    psycopg.connect(
                        postgres_url(),
                        autocommit=True,
                        prepare_threshold=0,
                        row_factory=dict_row,
                        options=f"-c search_path={schema}",
                    )
                )
                return LangGraphPostgresSaver(conn)

            open_source().setup()
        builder, command, _ = _build(lg=True)
        app = builder.compile(checkpointer=open_source())
        paused = {"configurable": {"thread_id": "paused"}}
        app.invoke({"messages": [("user", "hi")], "name": ""}, paused)
        done = {"configurable": {"thread_id": "done"}}
        app.invoke({"messages": [("user", "hello")], "name": ""}, done)
        app.invoke(command(resume="ann"), done)
        yield open_source


def test_a_paused_langgraph_thread_continues_on_ironloop(
    langgraph_source: Callable[[], Any], tmp_path: Path
) -> None:
    from ironloop import SqliteSaver
    from ironloop.checkpoint import import_langgraph

    builder, command, _ = _build(lg=False)
    app = builder.compile(checkpointer=SqliteSaver(str(tmp_path / "ironloop.db")))
    source = langgraph_source()
    assert sorted(import_langgraph(source, app)) == ["done", "paused"]

    paused = {"configurable": {"thread_id": "paused"}}
    state = app.get_state(paused)
    assert state.next == ("inner",)
    assert [i.value for i in state.interrupts] == ["name?"]
    assert _texts(state.values) == ["hi", "who are you?"]
    # The messages keep LangGraph's ids.
    lg_messages = source.get_tuple(paused).checkpoint["channel_values"]["messages"]
    assert [m.id for m in state.values["messages"]] == [m.id for m in lg_messages]
    out = app.invoke(command(resume="bob"), paused)
    assert _texts(out) == ["hi", "who are you?", "in sub", "hi bob", "bye bob"]
    assert out["name"] == "bob"

    done = app.get_state({"configurable": {"thread_id": "done"}})
    assert done.next == ()
    assert _texts(done.values) == ["hello", "who are you?", "in sub", "hi ann", "bye ann"]


def test_what_langgraph_would_do_from_the_same_tables(
    langgraph_source: Callable[[], Any],
) -> None:
    # The yardstick: LangGraph resuming its own thread ends where ironloop's does.
    builder, command, _ = _build(lg=True)
    app = builder.compile(checkpointer=langgraph_source())
    out = app.invoke(command(resume="bob"), {"configurable": {"thread_id": "paused"}})
    assert _texts(out) == ["hi", "who are you?", "in sub", "hi bob", "bye bob"]


def test_import_refuses_a_thread_ironloop_already_has(
    langgraph_source: Callable[[], Any],
) -> None:
    from ironloop import MemorySaver
    from ironloop.checkpoint import import_langgraph

    builder, _, _ = _build(lg=False)
    app = builder.compile(checkpointer=MemorySaver())
    import_langgraph(langgraph_source(), app, thread_ids=["done"])
    with pytest.raises(ValueError, match="thread 'done' already has checkpoints"):
        import_langgraph(langgraph_source(), app, thread_ids=["done"])
    with pytest.raises(ValueError, match="needs a graph compiled with a checkpointer"):
        import_langgraph(langgraph_source(), builder.compile())
