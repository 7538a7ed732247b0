"""``get_graph()``: a compiled graph's wiring as langchain-core's drawable ``Graph``, as
LangGraph returns it, so ``draw_mermaid()``, ``draw_ascii()``, ``to_json()`` and code
that reads ``get_graph().nodes[name].data`` (langgraph-swarm finds an agent's
``ToolNode`` so) work unchanged."""

from __future__ import annotations

import typing
from typing import Any, NamedTuple

from ironloop._constants import END, START

if typing.TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph

    from ironloop._compiled import CompiledStateGraph
    from ironloop.graph import StateGraph


class Edge(NamedTuple):
    """One drawn edge: ``label`` is the router's (or ``destinations=``') key when it is
    not the target's name."""

    source: str
    target: str
    conditional: bool
    label: str | None


def wiring_edges(builder: StateGraph[Any, Any, Any, Any]) -> list[Edge]:
    """The edges LangGraph 1.2 draws for this wiring, in its order: plain edges, joins,
    routers with declared targets and ``add_node(destinations=)`` (or a
    ``Command[Literal[...]]`` return annotation), sorted; then an edge into END from
    each node that leads nowhere (the run ends there). A router that declares no
    targets is not drawn: LangGraph runs the wiring to find targets, and finds none."""
    edges: set[Edge] = set()
    for a, c in builder.edges:
        edges.add(Edge(a, c, False, None))
    for srcs, c in builder.joins:
        edges.update(Edge(a, c, False, None) for a in srcs)
    for br in builder.branches:
        if br.path_map:
            edges.update(
                Edge(br.source, t, True, None if key == t else str(key))
                for key, t in br.path_map.items()
            )
        elif br.ends:
            edges.update(Edge(br.source, t, True, None) for t in br.ends)
    for name, ends in builder.node_ends.items():
        edges.update(
            Edge(name, t, True, None if label in (None, t) else label) for t, label in ends.items()
        )
    into_end = {e for e in edges if e.target == END and not e.conditional}
    sources = {e.source for e in edges}
    for t in {e.target for e in edges} - sources - {END}:
        into_end.add(Edge(t, END, False, None))
    return [*sorted(edges - into_end), *sorted(into_end)]


def _node_metadata(graph: CompiledStateGraph[Any, Any, Any, Any], name: str) -> dict[str, Any]:
    """What LangGraph shows under a node's name: its ``metadata=``, its breakpoints
    (``__interrupt``) and a tool node's tools (``__tools``)."""
    shown = dict(graph.builder.node_metadata.get(name) or {})
    before, after = (
        name in nodes or "*" in nodes
        for nodes in (graph.interrupt_before_nodes, graph.interrupt_after_nodes)
    )
    if before or after:
        shown["__interrupt"] = ",".join(w for w, on in (("before", before), ("after", after)) if on)
    tools = getattr(graph.builder.actions[name], "tools_by_name", None)
    if isinstance(tools, typing.Mapping) and tools:
        shown["__tools"] = list(tools)
    return shown


def _graph_class() -> type[Graph]:
    try:
        from ironloop._drawn_graph import DrawnGraph
    except ImportError as e:
        raise ImportError(
            "get_graph() returns langchain-core's drawable Graph, as LangGraph's does, and "
            "langchain-core is not installed: pip install langchain-core"
        ) from e
    return DrawnGraph


def draw(graph: CompiledStateGraph[Any, Any, Any, Any], xray: int | bool) -> Graph:
    """``graph`` as langchain-core's ``Graph``: one node per graph node (its ``data`` the
    node's function, ``ToolNode`` or compiled subgraph), START, END when reached, and
    :func:`wiring_edges`. With ``xray`` (``True``, or how many levels deep), each
    subgraph node is replaced by the subgraph's own nodes, prefixed ``name:``, as
    LangGraph expands it."""
    from ironloop._compiled import CompiledStateGraph

    out = _graph_class()()
    b = graph.builder
    out.add_node(None, START)
    for name, spec in b.nodes.items():
        out.add_node(spec.runnable, name, metadata=_node_metadata(graph, name) or None)
    for e in wiring_edges(b):
        if e.target == END and END not in out.nodes:
            out.add_node(None, END)
        out.add_edge(out.nodes[e.source], out.nodes[e.target], e.label, e.conditional)
    if not xray:
        return out
    deeper = xray if isinstance(xray, bool) or xray <= 0 else xray - 1
    for name, action in b.actions.items():
        if isinstance(action, CompiledStateGraph):
            _expand(out, name, draw(action, deeper))
    return out


def _expand(out: Graph, name: str, sub: Graph) -> None:
    """Replaces node ``name`` of ``out`` by the nodes of ``sub`` (without its START and
    END), reconnecting ``name``'s edges to ``sub``'s first and last nodes."""
    if len(sub.nodes) <= 1 or not sub.first_node() or not sub.last_node():
        return
    sub.trim_first_node()
    sub.trim_last_node()
    out.nodes.pop(name)
    first, last = out.extend(sub, prefix=name)
    for i, edge in enumerate(out.edges):
        if edge.source == name and last is not None:
            edge = edge.copy(source=last.id)
        if edge.target == name and first is not None:
            edge = edge.copy(target=first.id)
        out.edges[i] = edge
