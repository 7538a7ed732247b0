"""``ironloop.checkpoint``: the savers under LangGraph's base-class name."""

from __future__ import annotations

import pytest

from ironloop import MemorySaver, SqliteSaver
from ironloop.checkpoint import BaseCheckpointSaver, InMemorySaver


def test_every_saver_is_a_base_checkpoint_saver(tmp_path: object) -> None:
    assert isinstance(MemorySaver(), BaseCheckpointSaver)
    with SqliteSaver(str(tmp_path) + "/c.db") as saver:  # type: ignore[operator]
        assert isinstance(saver, BaseCheckpointSaver)
    assert not isinstance(object(), BaseCheckpointSaver)
    assert not isinstance({}, BaseCheckpointSaver)


def test_in_memory_saver_is_langgraphs_name_for_memory_saver() -> None:
    assert InMemorySaver is MemorySaver


def test_base_checkpoint_saver_is_not_instantiable_as_a_saver() -> None:
    # A type to check against: compile() takes ironloop's savers only.
    from ironloop.graph import StateGraph

    class Mine(BaseCheckpointSaver):
        pass

    g = StateGraph(dict)
    g.add_node("a", lambda s: {})
    g.add_edge("__start__", "a")
    with pytest.raises((TypeError, ValueError)):
        g.compile(checkpointer=Mine())


def test_compile_refuses_what_is_not_a_checkpointer() -> None:
    from ironloop.graph import StateGraph

    g = StateGraph(dict)
    g.add_node("a", lambda s: {})
    g.set_entry_point("a")

    class NotACheckpointer:
        pass

    with pytest.raises(TypeError, match="Invalid checkpointer provided: NotACheckpointer"):
        g.compile(checkpointer=NotACheckpointer())
