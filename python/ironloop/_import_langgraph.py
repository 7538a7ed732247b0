"""Moving threads from LangGraph's checkpoint tables to an ironloop saver.

``import_langgraph(source, graph)`` reads each thread's latest checkpoint through
LangGraph's own saver (``source``: the ``SqliteSaver`` / ``PostgresSaver`` of
``langgraph-checkpoint-sqlite`` / ``-postgres`` over the tables LangGraph wrote; their
blobs are LangGraph's serializer's, so LangGraph's code reads them) and starts the
thread on ``graph`` (the ironloop port of the same graph, compiled with the saver to
fill): the state's values, then the nodes LangGraph would run next. A thread paused
at an ``interrupt()`` is run up to it again, so it is pending as it was: resuming it
with ``Command(resume=...)`` continues on ironloop. What is carried: the latest state
(messages included) and where the thread stands, not its history (the engine's
records are deltas of its own steps). A node paused inside a subgraph is started
again from the subgraph's entry with the parent's state (as a resume re-runs the
interrupted node from its start, the subgraph's nodes before its ``interrupt()`` run
again).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ironloop.types import StateUpdate

START = "__start__"
END = "__end__"


def _thread_ids(source: Any) -> list[str]:
    seen: dict[str, None] = {}
    for tup in source.list(None):
        conf = tup.config["configurable"]
        if not conf.get("checkpoint_ns"):
            seen.setdefault(conf["thread_id"], None)
    return list(seen)


def _next_nodes(checkpoint: dict[str, Any], nodes: Iterable[str]) -> list[str]:
    """The nodes LangGraph runs next from ``checkpoint``: those whose trigger channel
    (``branch:to:<node>``) holds a value (a consumed one is emptied, its version still
    bumped) of a version the node has not seen."""
    values = checkpoint.get("channel_values") or {}
    versions = checkpoint.get("channel_versions") or {}
    seen = checkpoint.get("versions_seen") or {}
    found = []
    for node in nodes:
        channel = f"branch:to:{node}"
        had = (seen.get(node) or {}).get(channel)
        if channel in values and (had is None or versions.get(channel, had) > had):
            found.append(node)
    return found


def _predecessors(graph: Any, targets: list[str]) -> list[str]:
    """One node per target whose edge leads to it (``START`` for an entry node)."""
    edges: list[tuple[str, str]] = list(graph.builder.edges)
    found: dict[str, None] = {}
    for target in targets:
        source = next((s for s, d in edges if d == target), None)
        if source is None:
            raise ValueError(
                f"import_langgraph: LangGraph's thread runs {target!r} next, and no edge of "
                "the ironloop graph leads to it: add the edge (the port of the graph must "
                "have LangGraph's edges), or import the thread by update_state yourself"
            )
        found.setdefault(source, None)
    return list(found)


def import_langgraph(
    source: Any, graph: Any, *, thread_ids: Iterable[str] | None = None
) -> list[str]:
    """Copies LangGraph threads (every one ``source`` holds, or ``thread_ids``) into
    ``graph``'s checkpointer: each starts on ironloop with its LangGraph state and
    continues from where it stood. Returns the ids imported. A thread that already has
    checkpoints in ironloop is refused (delete it first)."""
    if graph.checkpointer in (None, False, True):
        raise ValueError(
            "import_langgraph needs a graph compiled with a checkpointer "
            "(compile(checkpointer=SqliteSaver(...))): the threads are saved there"
        )
    ids = list(thread_ids) if thread_ids is not None else _thread_ids(source)
    channels = set(graph.builder.channels)
    nodes = list(graph.builder.nodes)
    for tid in ids:
        config = {"configurable": {"thread_id": tid}}
        if graph.checkpointer.get_tuple(config) is not None:
            raise ValueError(
                f"import_langgraph: thread {tid!r} already has checkpoints in the target "
                "saver; delete_thread it first, or leave it out of thread_ids"
            )
        tup = source.get_tuple({"configurable": {"thread_id": tid, "checkpoint_ns": ""}})
        if tup is None:
            raise ValueError(f"import_langgraph: LangGraph's saver has no thread {tid!r}")
        values = {k: v for k, v in tup.checkpoint["channel_values"].items() if k in channels}
        pending = _next_nodes(tup.checkpoint, nodes)
        sources = _predecessors(graph, pending) if pending else [_last_node(graph)]
        first, *rest = sources
        graph.bulk_update_state(
            config,
            [[StateUpdate(values, first, None), *(StateUpdate(None, s, None) for s in rest)]],
        )
        if any(w[1] == "__interrupt__" for w in tup.pending_writes or []):
            # Paused at an interrupt(): run up to it again, so that it is pending.
            graph.invoke(None, config)
    return ids


def _last_node(graph: Any) -> str:
    """A node whose edge ends the graph: a finished thread is saved as its output."""
    edges: list[tuple[str, str]] = list(graph.builder.edges)
    return next((s for s, d in edges if d == END and s != START), START)
