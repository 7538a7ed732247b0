"""The web UI ``ironloop serve`` serves at ``/``: static files (``static/``) that drive
the server's own Agent Server API from the browser, and each assistant's graph drawn
as SVG on the server (a layered layout of what ``/assistants/{id}/graph`` returns), so
the page needs nothing from the network."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ironloop._constants import END, START

STATIC = Path(__file__).parent / "static"
#: Where the page's own files are served; they hold no data, so they need no API key.
STATIC_PREFIX = "/ui/static/"


def is_public(path: str) -> bool:
    """Whether ``path`` is the page or one of its files (open without authentication:
    everything the page shows it reads from the API, with the user's credentials)."""
    return path == "/" or path.startswith(STATIC_PREFIX)


# ---------------------------------------------------------------------------- layout

NODE_HEIGHT = 34
LAYER_GAP = 70
NODE_GAP = 28
MARGIN = 16
CHAR_WIDTH = 7.6  # the page's 13px sans-serif, a little generous
DUMMY_WIDTH = 12


@dataclass
class _Box:
    id: str
    label: str
    width: float
    layer: int = 0
    x: float = 0.0  # centre
    y: float = 0.0  # top
    dummy: bool = False


@dataclass
class _Edge:
    source: str
    target: str
    conditional: bool
    label: str | None
    reversed: bool = False
    chain: list[str] = field(default_factory=list)  # boxes the edge passes through, in order


def _label(node: dict[str, Any]) -> str:
    if node["id"] == START:
        return "start"
    if node["id"] == END:
        return "end"
    data = node.get("data")
    name = data.get("name") if isinstance(data, dict) else None
    return str(name or node["id"])


def _back_edges(ids: list[str], edges: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges that close a cycle, found by a depth-first walk from START (then from any
    node not reached): reversing them leaves a DAG to layer."""
    out: dict[str, list[str]] = {i: [] for i in ids}
    for a, b in edges:
        out[a].append(b)
    state: dict[str, int] = {}  # 1 on the walk's stack, 2 done
    back: set[tuple[str, str]] = set()
    for root in [START, *ids]:
        if root in state or root not in out:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, i = stack[-1]
            if i < len(out[node]):
                stack[-1] = (node, i + 1)
                nxt = out[node][i]
                if state.get(nxt) == 1 or nxt == START or node == END:
                    back.add((node, nxt))
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                stack.pop()
    return back


def layout(drawing: dict[str, Any]) -> tuple[dict[str, _Box], list[_Edge], float, float]:
    """Sugiyama-style: cycles broken, nodes layered by their longest path from START
    (END last), long edges split through invisible boxes, each layer ordered by the
    mean position of its neighbours above and below, then centred."""
    boxes: dict[str, _Box] = {}
    for node in drawing.get("nodes", []):
        text = _label(node)
        boxes[node["id"]] = _Box(node["id"], text, max(56.0, len(text) * CHAR_WIDTH + 24))
    edges: list[_Edge] = []
    for e in drawing.get("edges", []):
        if e["source"] in boxes and e["target"] in boxes and e["source"] != e["target"]:
            data = e.get("data")
            edges.append(_Edge(e["source"], e["target"], bool(e.get("conditional")),
                               str(data) if data is not None else None))  # fmt: skip
    ids = list(boxes)
    back = _back_edges(ids, [(e.source, e.target) for e in edges])
    for e in edges:
        e.reversed = (e.source, e.target) in back
    down = [(e.target, e.source) if e.reversed else (e.source, e.target) for e in edges]
    # Longest path layering over the DAG (a few passes settle it: the graphs are small).
    layer = dict.fromkeys(ids, 0)
    for _ in range(len(ids)):
        changed = False
        for a, b in down:
            if layer[b] < layer[a] + 1:
                layer[b] = layer[a] + 1
                changed = True
        if not changed:
            break
    if END in layer:
        layer[END] = max([layer[i] for i in ids if i != END] + [-1]) + 1
    for i, box in boxes.items():
        box.layer = layer[i]
    # Edges over several layers pass through one dummy box per layer in between.
    for n, (e, (a, b)) in enumerate(zip(edges, down, strict=True)):
        chain = [a]
        for k in range(layer[a] + 1, layer[b]):
            dummy = f"\0{n}:{k}"
            boxes[dummy] = _Box(dummy, "", DUMMY_WIDTH, k, dummy=True)
            chain.append(dummy)
        chain.append(b)
        e.chain = chain if not e.reversed else chain[::-1]
    links = [
        (d[i], d[i + 1])
        for e in edges
        for d in [e.chain[::-1] if e.reversed else e.chain]
        for i in range(len(d) - 1)
    ]
    depth = max((b.layer for b in boxes.values()), default=0)
    rows: list[list[str]] = [[] for _ in range(depth + 1)]
    for i, box in boxes.items():
        rows[box.layer].append(i)
    ups: dict[str, list[str]] = {i: [] for i in boxes}
    downs: dict[str, list[str]] = {i: [] for i in boxes}
    for a, b in links:
        downs[a].append(b)
        ups[b].append(a)

    def order(row: list[str], neighbours: dict[str, list[str]]) -> None:
        where = {i: n for r in rows for n, i in enumerate(r)}
        keyed = {
            i: (sum(where[j] for j in neighbours[i]) / len(neighbours[i]))
            if neighbours[i]
            else where[i]
            for i in row
        }
        row.sort(key=lambda i: keyed[i])

    for _ in range(4):
        for row in rows[1:]:
            order(row, ups)
        for row in rows[-2::-1]:
            order(row, downs)
    widths = [sum(boxes[i].width for i in row) + NODE_GAP * max(len(row) - 1, 0) for row in rows]
    total = max(widths, default=0.0) + 2 * MARGIN
    for k, row in enumerate(rows):
        x = (total - widths[k]) / 2
        for i in row:
            box = boxes[i]
            box.x = x + box.width / 2
            box.y = MARGIN + k * (NODE_HEIGHT + LAYER_GAP)
            x += box.width + NODE_GAP
    height = MARGIN * 2 + (depth + 1) * NODE_HEIGHT + depth * LAYER_GAP
    return boxes, edges, total, height


def _path(points: list[tuple[float, float]]) -> str:
    """A smooth vertical curve through ``points`` (one cubic segment between each pair)."""
    (x0, y0), rest = points[0], points[1:]
    d = f"M{x0:.1f},{y0:.1f}"
    px, py = x0, y0
    for x, y in rest:
        mid = (py + y) / 2
        d += f" C{px:.1f},{mid:.1f} {x:.1f},{mid:.1f} {x:.1f},{y:.1f}"
        px, py = x, y
    return d


def graph_svg(drawing: dict[str, Any], title: str) -> str:
    """``drawing`` (``{"nodes": [...], "edges": [...]}``, as the graph endpoint returns
    it) as a standalone SVG image: rounded boxes, solid edges, dashed conditional ones
    with their branch labels, START and END as pills. Each node's ``<g>`` carries
    ``data-node`` (its id), for the page to highlight the nodes a thread waits on."""
    boxes, edges, width, height = layout(drawing)
    esc = html.escape
    nodes = [b for b in boxes.values() if not b.dummy]
    summary = "; ".join(
        f"{boxes[e.source].label} to {boxes[e.target].label}"
        + (f" ({e.label})" if e.label else "")
        + (" if chosen" if e.conditional and not e.label else "")
        for e in edges
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'aria-labelledby="graph-title graph-desc">',
        f'<title id="graph-title">{esc(title)}</title>',
        f'<desc id="graph-desc">Nodes: {esc(", ".join(b.label for b in nodes))}. '
        f"Edges: {esc(summary)}.</desc>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'class="arrow"/></marker></defs>',
    ]
    pairs = {(e.source, e.target) for e in edges}
    for e in edges:
        chain = [boxes[i] for i in e.chain]
        # An edge back up runs beside the edge down between the same two nodes.
        shift = 14.0 if e.reversed else -14.0 if (e.target, e.source) in pairs else 0.0
        points: list[tuple[float, float]] = []
        for n, b in enumerate(chain):
            going_down = n + 1 < len(chain) and chain[n + 1].layer > b.layer
            coming_down = n > 0 and chain[n - 1].layer < b.layer
            if b.dummy:
                points.append((b.x, b.y + NODE_HEIGHT / 2))
            elif n == 0:
                points.append((b.x + shift, b.y + NODE_HEIGHT if going_down else b.y))
            else:
                points.append((b.x + shift, b.y if coming_down else b.y + NODE_HEIGHT))
        kind = "edge conditional" if e.conditional else "edge"
        out.append(
            f'<path class="{kind}" data-source="{esc(e.source)}" data-target="{esc(e.target)}" '
            f'd="{_path(points)}" marker-end="url(#arrow)"/>'
        )
        if e.label:
            mx = (points[0][0] + points[1][0]) / 2
            my = (points[0][1] + points[1][1]) / 2
            w = len(e.label) * CHAR_WIDTH * 0.85 + 8
            out.append(
                f'<g class="edge-label"><rect x="{mx - w / 2:.1f}" y="{my - 9:.1f}" '
                f'width="{w:.1f}" height="18" rx="4"/><text x="{mx:.1f}" y="{my + 4:.1f}">'
                f"{esc(e.label)}</text></g>"
            )
    for b in nodes:
        kind = "node terminal" if b.id in (START, END) else "node"
        rx = NODE_HEIGHT / 2 if b.id in (START, END) else 6
        out.append(
            f'<g class="{kind}" data-node="{esc(b.id)}"><rect x="{b.x - b.width / 2:.1f}" '
            f'y="{b.y:.1f}" width="{b.width:.1f}" height="{NODE_HEIGHT}" rx="{rx:.0f}"/>'
            f'<text x="{b.x:.1f}" y="{b.y + NODE_HEIGHT / 2 + 4.5:.1f}">{esc(b.label)}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out)


# ---------------------------------------------------------------------------- routes


async def page(_request: Request) -> Response:
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")


async def graph_image(request: Request) -> Response:
    """``GET /ui/assistants/{aid}/graph.svg``: what ``/assistants/{aid}/graph`` returns,
    drawn (the same visibility rules: the project's auth applies)."""
    from .assistant_routes import visible

    served = await visible(request, "read")
    xray = request.query_params.get("xray", "false").lower() not in ("false", "0", "")
    svg = graph_svg(served.drawing(xray), f"Graph of assistant {served.graph_id}")
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-cache"})


def routes() -> list[BaseRoute]:
    """The UI's routes, mounted by :func:`ironloop.serve.app.create_app` before a
    project's own ``http.app`` (whose routes the page's paths shadow)."""
    return [
        Route("/", page, methods=["GET"]),
        Route("/ui/assistants/{aid}/graph.svg", graph_image, methods=["GET"]),
        Mount(STATIC_PREFIX.rstrip("/"), app=StaticFiles(directory=STATIC), name="ui-static"),
    ]
