"""The graphs a project serves: loaded once, recompiled onto the server's checkpointer
and store, and described for the assistants endpoints (drawing, JSON Schemas)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID, uuid5

from ironloop._constants import END, START
from ironloop._shapes import recompiled
from ironloop.graph import CompiledStateGraph, StateGraph

from .project import Project, ProjectError

log = logging.getLogger("ironloop.serve")

#: LangGraph's namespace for the assistant made for each graph: the same graph id gets
#: the same assistant id as under ``langgraph dev``.
NAMESPACE_GRAPH = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


#: Assistant ids by graph id, as made (bounded: a request may name any graph).
_assistant_ids: dict[str, str] = {}


def assistant_id_for(graph_id: str) -> str:
    """The id of the assistant LangGraph makes for ``graph_id`` (kept: every run's
    assistant is looked up through it, and a name-based UUID is a SHA-1 and a
    ``UUID`` made each time)."""
    found = _assistant_ids.get(graph_id)
    if found is None:
        if len(_assistant_ids) >= 1024:
            _assistant_ids.clear()
        found = _assistant_ids[graph_id] = str(uuid5(NAMESPACE_GRAPH, graph_id))
    return found


class ServedGraph:
    """One graph of ``langgraph.json``: its builder and the graph compiled once onto the
    server's checkpointer and store (a run's breakpoints are passed with the run)."""

    def __init__(
        self,
        graph_id: str,
        graph: CompiledStateGraph[Any, Any, Any, Any] | StateGraph[Any, Any, Any, Any],
        name: str,
        description: str | None,
        checkpointer: Any,
        store: Any,
    ) -> None:
        self.graph_id = graph_id
        self.description = description
        if isinstance(graph, CompiledStateGraph):
            self.default = recompiled(graph, checkpointer, store, name)
        else:
            self.default = graph.compile(checkpointer=checkpointer, store=store, name=name)

    @property
    def builder(self) -> StateGraph[Any, Any, Any, Any]:
        """The graph's builder: the compiled graph's own (it is kept once)."""
        return self.default.builder

    @property
    def name(self) -> str:
        """The graph's name: the compiled graph's own."""
        return self.default.name

    def breakpoints(
        self, interrupt_before: Sequence[str] | None, interrupt_after: Sequence[str] | None
    ) -> dict[str, list[str]]:
        """A run's ``interrupt_before`` / ``interrupt_after`` as the run-time arguments of
        ``astream`` (``"*"``: every node; none given: nothing), each name checked to be a
        node of this graph. The graph is compiled once: breakpoints are per run."""
        given = {"interrupt_before": interrupt_before, "interrupt_after": interrupt_after}
        out: dict[str, list[str]] = {}
        for key, names in given.items():
            if not names:
                continue
            for node in names:
                if node != "*" and node not in self.builder.nodes:
                    from .errors import invalid

                    raise invalid(
                        f"{key} names {node!r}, which is not a node of graph "
                        f"{self.graph_id!r} (nodes: {', '.join(self.builder.nodes)})"
                    )
            out[key] = list(self.builder.nodes) if list(names) == ["*"] else list(names)
        return out

    def drawing(self, xray: bool = False) -> dict[str, Any]:
        """The graph as LangGraph's server draws it: ``{"nodes": [...], "edges": [...]}``."""
        b = self.builder
        nodes: list[dict[str, Any]] = [{"id": START, "type": "runnable", "data": {"name": START}}]
        for name in b.nodes:
            node: dict[str, Any] = {"id": name, "type": "runnable", "data": {"name": name}}
            if b.node_metadata.get(name):
                node["metadata"] = b.node_metadata[name]
            nodes.append(node)
        nodes.append({"id": END})
        edges: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()

        def add(src: str, dst: str, conditional: bool, label: str | None = None) -> None:
            if (src, dst) in seen:
                return
            seen.add((src, dst))
            edge: dict[str, Any] = {"source": src, "target": dst}
            if conditional:
                edge["conditional"] = True
            if label is not None and label != dst:
                edge["data"] = label
            edges.append(edge)

        for a, c in b.edges:
            add(a, c, False)
        for srcs, c in b.joins:
            for a in srcs:
                add(a, c, False)
        for br in b.branches:
            if br.path_map:
                for key, target in br.path_map.items():
                    add(br.source, target, True, str(key))
            elif br.ends:
                for target in br.ends:
                    add(br.source, target, True)
        sources = {e["source"] for e in edges}
        for name in b.nodes:
            if name not in sources:
                add(name, END, False)
        return {"nodes": nodes, "edges": edges}

    def schemas(self) -> dict[str, Any]:
        b = self.builder
        return {
            "graph_id": self.graph_id,
            "input_schema": _schema(b.input_schema),
            "output_schema": _schema(b.output_schema),
            "state_schema": _schema(b.state_schema),
            "config_schema": {},
            "context_schema": _schema(b.context_schema),
        }


def _schema(tp: Any) -> dict[str, Any] | None:
    if tp is None:
        return None
    from ironloop._schema import type_schema

    try:
        schema, _ = type_schema(tp)
    except Exception:  # a schema JSON Schema cannot describe: LangGraph answers null too
        return None
    schema.setdefault("title", getattr(tp, "__name__", None))
    return schema


def load_graphs(project: Project, checkpointer: Any, store: Any) -> dict[str, ServedGraph]:
    """Imports every graph ``langgraph.json`` names and compiles it onto ``checkpointer``."""
    served: dict[str, ServedGraph] = {}
    for graph_id, spec in project.graphs.items():
        obj = project.import_object(spec, f"graph {graph_id!r}")
        if not isinstance(obj, (CompiledStateGraph, StateGraph)) and callable(obj):
            params = inspect.signature(obj).parameters
            obj = obj({"configurable": {}}) if params else obj()
            if inspect.isawaitable(obj):
                raise ProjectError(f"graph {graph_id!r}: an async graph factory is not supported")
        if isinstance(obj, CompiledStateGraph):
            name = obj.name
        elif isinstance(obj, StateGraph):
            name = graph_id
        else:
            kind = type(obj).__module__ + "." + type(obj).__qualname__
            hint = (
                " (a LangGraph graph: import StateGraph and friends from ironloop instead)"
                if kind.startswith("langgraph")
                else ""
            )
            raise ProjectError(
                f"graph {graph_id!r}: {spec} is a {kind}, not an ironloop graph{hint}"
            )
        if name == "LangGraph":
            name = graph_id
        served[graph_id] = ServedGraph(
            graph_id, obj, name, project.descriptions.get(graph_id), checkpointer, store
        )
        log.info("serving graph %r from %s", graph_id, spec)
    return served
