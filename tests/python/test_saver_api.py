"""LangGraph's saver API on ironloop's savers over what the engine wrote: a graph's
run read back with ``get_tuple`` / ``list`` (reducers applied), pending writes as
``(task_id, channel, value)``, ``copy_thread`` keeping a history that runs on,
``prune``, ``delete_for_runs`` and the ``sweep`` TTL. The shapes of records put through
the API are LangGraph's conformance suite's (test_checkpoint_conformance.py)."""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest

from ironloop.checkpoint import CheckpointTuple
from ironloop.graph import END, START, StateGraph
from ironloop.types import Command, interrupt


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _graph(saver: Any, *, ask: bool = False) -> Any:
    def first(s: State) -> dict[str, Any]:
        return {"items": ["first"]}

    def second(s: State) -> dict[str, Any]:
        answer = interrupt("name?") if ask else "second"
        return {"items": [answer]}

    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    return g.compile(checkpointer=saver)


def _cfg(tid: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def test_engine_checkpoints_read_as_langgraph_tuples(saver: Any) -> None:
    graph = _graph(saver)
    graph.invoke({"items": ["a"]}, {**_cfg("t"), "metadata": {"who": "me"}})
    latest = saver.get_tuple(_cfg("t"))
    assert isinstance(latest, CheckpointTuple)
    # The reducer's sum, not the last write.
    assert latest.checkpoint["channel_values"]["items"] == ["a", "first", "second"]
    assert latest.config["configurable"]["checkpoint_id"] == latest.checkpoint["id"]
    assert latest.metadata["who"] == "me" and latest.metadata["source"] == "loop"
    history = list(saver.list(_cfg("t")))
    assert history[0].config == latest.config
    assert [t.checkpoint["channel_values"].get("items") for t in history] == [
        ["a", "first", "second"],
        ["a", "first"],
        ["a"],
        [],  # the run's input checkpoint: before its input is applied
    ]
    # Each names its parent; the first has none.
    assert [t.parent_config["configurable"]["checkpoint_id"] for t in history[:-1]] == [
        t.checkpoint["id"] for t in history[1:]
    ]
    assert history[-1].parent_config is None
    assert list(saver.list(_cfg("t"), limit=2)) == history[:2]
    assert list(saver.list(_cfg("t"), before=history[1].config)) == history[2:]
    assert list(saver.list(_cfg("t"), filter={"source": "input"})) == [history[-1]]
    assert saver.get(_cfg("t")) == latest.checkpoint
    assert saver.get_tuple(_cfg("nobody")) is None


def test_pending_interrupt_shows_as_a_pending_write(saver: Any) -> None:
    graph = _graph(saver, ask=True)
    graph.invoke({"items": []}, _cfg("t"))
    paused = saver.get_tuple(_cfg("t"))
    assert [w[1] for w in paused.pending_writes] == ["__interrupt__"]
    assert graph.get_state(_cfg("t")).next == ("second",)


def test_copy_thread_copies_the_history_and_runs_on(saver: Any) -> None:
    graph = _graph(saver, ask=True)
    graph.invoke({"items": ["a"]}, _cfg("src"))
    saver.copy_thread("src", "dst")
    src = [t.checkpoint for t in saver.list(_cfg("src"))]
    dst = [t.checkpoint for t in saver.list(_cfg("dst"))]
    assert dst == src and len(dst) == 3
    # The interrupt pending on the latest checkpoint came along: the copy resumes.
    assert [w[1] for w in saver.get_tuple(_cfg("dst")).pending_writes] == ["__interrupt__"]
    assert graph.invoke(Command(resume="bob"), _cfg("dst")) == {"items": ["a", "first", "bob"]}
    assert graph.get_state(_cfg("src")).next == ("second",)


def test_prune_keeps_the_latest_and_delete_for_runs_drops_a_run(saver: Any) -> None:
    graph = _graph(saver)
    graph.invoke({"items": ["a"]}, {**_cfg("kept"), "metadata": {"run_id": "run-1"}})
    graph.invoke({"items": ["a"]}, _cfg("pruned"))
    saver.prune(["pruned"])
    assert len(list(saver.list(_cfg("pruned")))) == 1
    assert graph.get_state(_cfg("pruned")).values == {"items": ["a", "first", "second"]}
    # A run's id in its config's metadata is in its checkpoints' (as LangGraph's
    # server puts it there).
    assert saver.get_tuple(_cfg("kept")).metadata["run_id"] == "run-1"
    saver.delete_for_runs(["run-1"])
    assert list(saver.list(_cfg("kept"))) == []
    saver.prune(["pruned"], strategy="delete")
    assert saver.get_tuple(_cfg("pruned")) is None
    with pytest.raises(ValueError, match="strategy must be 'keep_latest' or 'delete'"):
        saver.prune(["x"], strategy="all")


def test_sweep_deletes_threads_idle_past_the_ttl(saver: Any) -> None:
    graph = _graph(saver)
    graph.invoke({"items": ["a"]}, _cfg("old"))
    time.sleep(1.2)
    graph.invoke({"items": ["a"]}, _cfg("new"))
    assert saver.sweep(ttl=1.0) == ["old"]
    assert saver.get_tuple(_cfg("old")) is None
    assert saver.get_tuple(_cfg("new")) is not None
    with pytest.raises(ValueError, match="ttl must be a positive number of seconds"):
        saver.sweep(ttl=0)


def test_async_forms_answer_as_the_sync_ones(saver: Any) -> None:
    graph = _graph(saver)
    graph.invoke({"items": ["a"]}, _cfg("t"))

    async def read() -> tuple[Any, list[Any]]:
        return await saver.aget_tuple(_cfg("t")), [t async for t in saver.alist(_cfg("t"))]

    latest, history = asyncio.run(read())
    assert latest == saver.get_tuple(_cfg("t"))
    assert history == list(saver.list(_cfg("t")))


def test_a_config_without_thread_id_is_refused_saying_what_to_pass(saver: Any) -> None:
    with pytest.raises(
        ValueError, match=r"get_tuple needs config\['configurable'\]\['thread_id'\]"
    ):
        saver.get_tuple({"configurable": {}})


def test_without_the_graph_each_channel_shows_its_last_write(tmp_path: Any) -> None:
    # Another process (no graph compiled with this saver object) reads the file: the
    # deltas cannot go through the graph's reducers, so a channel shows its last write.
    from ironloop import SqliteSaver

    path = str(tmp_path / "c.db")
    with SqliteSaver(path) as writer:
        _graph(writer).invoke({"items": ["a"]}, _cfg("t"))
    with SqliteSaver(path) as reader:
        latest = reader.get_tuple(_cfg("t"))
        assert latest.checkpoint["channel_values"]["items"] == ["second"]
        assert len(list(reader.list(_cfg("t")))) == 4
