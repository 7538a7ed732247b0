"""A ``messages`` chunk's metadata shows the ``configurable`` keys LangGraph 1.2
propagates (thread, checkpoint, task, run, assistant and graph ids), and no other."""

from __future__ import annotations

from typing import Any

from ironloop import START, StateGraph
from ironloop.graph import MessagesState
from ironloop.messages import HumanMessage


def test_configurable_ids_reach_the_messages_metadata_and_nothing_else() -> None:
    def node(state: Any) -> dict[str, Any]:
        return {"messages": HumanMessage(content="hello")}

    graph = StateGraph(MessagesState).add_node("node", node).add_edge(START, "node").compile()
    given = {
        "thread_id": "th-1",
        "checkpoint_id": "ck-1",
        "checkpoint_ns": "ns-1",
        "task_id": "task-1",
        "run_id": "run-1",
        "assistant_id": "asst-1",
        "graph_id": "graph-1",
        "some_api_key": "secret",
        "custom_setting": {"nested": True},
        "model": "m",
    }
    config = {"configurable": given, "metadata": {"graph_id": "mine"}}
    ((_, metadata),) = list(graph.stream({"messages": []}, config, stream_mode="messages"))
    shown = {k: metadata.get(k) for k in given}
    assert shown == {
        **{k: v for k, v in given.items() if k not in ("some_api_key", "custom_setting", "model")},
        "graph_id": "mine",  # the run's own metadata wins
        "some_api_key": None,
        "custom_setting": None,
        "model": None,
    }
