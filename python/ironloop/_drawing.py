"""``get_graph()``: a compiled graph's wiring drawn as LangGraph draws it (Mermaid)."""

from __future__ import annotations

import typing
from typing import Any

from ironloop._constants import END, START
from ironloop._toolnode import ToolNode

if typing.TYPE_CHECKING:
    from ironloop.graph import StateGraph


def _node_label(name: str, action: Any, metadata: dict[str, Any] | None) -> str:
    """A node's Mermaid label as langchain-core draws LangGraph's: its metadata (and a
    tool node's tools, ``__tools``) under its name."""
    shown = dict(metadata or {})
    tools = getattr(action, "tools_by_name", None) if isinstance(action, ToolNode) else None
    if tools:
        shown["__tools"] = list(tools)
    lines = []
    for key, value in shown.items():
        scalar = (str, int, float, bool)
        if isinstance(value, scalar):
            text = str(value)
        elif isinstance(value, (list, tuple, set)) and all(isinstance(v, scalar) for v in value):
            items = [str(v) for v in value]
            text = ", ".join(sorted(items) if isinstance(value, set) else items)
        else:
            continue
        lines.append(f"{key} = {text}")
    if not lines:
        return name
    return f"{name}<hr/><small><em>" + "\n".join(lines) + "</em></small>"


class _DrawableGraph:
    def __init__(self, builder: StateGraph[Any, Any, Any, Any]) -> None:
        self.builder = builder

    @property
    def nodes(self) -> list[str]:
        return [START, *self.builder.nodes, END]

    def draw_mermaid(self) -> str:
        """The graph as Mermaid flowchart text (solid edges; dotted for conditional)."""
        b = self.builder
        lines = ["---", "config:", "  flowchart:", "    curve: linear", "---", "graph TD;"]
        lines.append(f"\t{START}([<p>{START}</p>]):::first")
        for n, action in b.nodes.items():
            lines.append(f"\t{n}({_node_label(n, action, b.node_metadata.get(n))})")
        lines.append(f"\t{END}([<p>{END}</p>]):::last")
        # LangGraph's order: the edges sorted by (source, target), then the plain
        # edges into END; a node that leads nowhere gets one (the run ends there).
        edges: set[tuple[str, str, bool, str]] = set()
        for a, c in b.edges:
            edges.add((a, c, False, ""))
        for srcs, c in b.joins:
            edges.update((a, c, False, "") for a in srcs)
        for br in b.branches:
            if br.path_map:
                edges.update(
                    (br.source, t, True, "" if key == t else str(key))
                    for key, t in br.path_map.items()
                )
            elif br.ends:  # a router that declares no targets is not drawn, as there
                edges.update((br.source, t, True, "") for t in br.ends)
        into_end = {e for e in edges if e[1] == END and not e[2]}
        sources = {e[0] for e in edges}
        for t in {e[1] for e in edges} - sources - {END}:
            into_end.add((t, END, False, ""))
        for a, c, conditional, label in [*sorted(edges - into_end), *sorted(into_end)]:
            if not conditional:
                lines.append(f"\t{a} --> {c};")
            elif label:
                lines.append(f"\t{a} -. &nbsp;{label}&nbsp; .-> {c};")
            else:
                lines.append(f"\t{a} -.-> {c};")
        lines.append("\tclassDef default fill:#f2f0ff,line-height:1.2")
        lines.append("\tclassDef first fill-opacity:0")
        lines.append("\tclassDef last fill:#bfb6fc")
        return "\n".join(lines) + "\n"
